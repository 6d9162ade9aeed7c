import socket, sys
port = int(sys.argv[1])
print("ifaces", sorted(n for _, n in socket.if_nameindex()))
s = socket.socket()
s.settimeout(2)
try:
    s.connect(("127.0.0.1", port))
    print("CONNECTED")
except OSError as e:
    print("connect", e.errno)
a = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    a.connect("\0" + sys.argv[2])
    print("ABSTRACT CONNECTED")
except OSError as e:
    print("abstract", e.errno)
