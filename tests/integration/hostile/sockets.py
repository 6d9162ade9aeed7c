import socket
for name, fam, typ, proto in [("vsock", 40, socket.SOCK_STREAM, 0),
                              ("packet", 17, socket.SOCK_RAW, 0),
                              ("netlink_audit", 16, socket.SOCK_RAW, 9),
                              ("key", 15, socket.SOCK_RAW, 2),
                              ("alg", 38, socket.SOCK_SEQPACKET, 0),
                              ("bluetooth", 31, socket.SOCK_RAW, 0),
                              ("raw_inet", socket.AF_INET, socket.SOCK_RAW, 1)]:
    try:
        socket.socket(fam, typ, proto)
        print(name, "CREATED")
    except OSError as e:
        print(name, e.errno)
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
print("unix ok")
