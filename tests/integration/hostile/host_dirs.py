import os
for p in ["/root/.ssh", "/home", "/var/lib", "/var/cache/airlock", "/etc/ssh", "/etc/machine-id", "/run"]:
    try:
        os.stat(p)
        print("VISIBLE", p)
    except OSError as e:
        print("errno", p, e.errno)
# /root exists only when a toolchain lives under it (a pyenv prefix)
try:
    print("root:", sorted(os.listdir("/root")))
except OSError as e:
    print("errno /root", e.errno)
