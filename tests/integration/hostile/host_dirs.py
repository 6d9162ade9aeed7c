import os
for p in ["/root/.ssh", "/home", "/var/lib", "/var/cache/airlock", "/etc/ssh", "/etc/machine-id", "/run"]:
    try:
        os.stat(p)
        print("VISIBLE", p)
    except OSError as e:
        print("errno", p, e.errno)
print("root:", sorted(os.listdir("/root")))
