# Reads one byte of a large stdin, then blocks on a FIFO no one writes.
import os
import sys

sys.stdin.buffer.read(1)
os.mkfifo("/tmp/p")
print("blocking", flush=True)
os.open("/tmp/p", os.O_RDONLY)
print("UNBLOCKED")
