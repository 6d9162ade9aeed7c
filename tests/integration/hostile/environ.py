import os
print("ENV", sorted(os.environ))
for p in ["/proc/1/environ", "/proc/%d/environ" % os.getppid()]:
    try:
        data = open(p, "rb").read()
        print("READ", p, b"AIRLOCK_HOST_SECRET" in data)
    except OSError as e:
        print("errno", p, e.errno)
