import os, sys
pid = int(sys.argv[1])
try:
    os.kill(pid, 9)
    print("KILLED")
except OSError as e:
    print("errno", e.errno)
print("pids", sorted(int(p) for p in os.listdir("/proc") if p.isdigit()))
