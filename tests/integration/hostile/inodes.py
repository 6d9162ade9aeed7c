# Inode exhaustion of /tmp: empty files until the filesystem says no.
import os

n = 0
try:
    while n < 200000:
        os.close(os.open("/tmp/f%d" % n, os.O_CREAT | os.O_WRONLY, 0o600))
        n += 1
except OSError as e:
    print("stopped", n, e.errno)
else:
    print("unbounded", n)
