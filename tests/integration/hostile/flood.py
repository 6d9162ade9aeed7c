# Interleaved stdout/stderr floods of long lines, alternating chunks.
import os
a, b = b"a" * 65536, b"b" * 65536
for _ in range(40):
    os.write(1, a)
    os.write(2, b)
os.write(1, b"\n")
