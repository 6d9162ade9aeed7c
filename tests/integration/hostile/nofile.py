import os
n = 0
try:
    while n < 100000:
        os.open("/dev/null", os.O_RDONLY)
        n += 1
except OSError as e:
    print("stopped", n, e.errno)
