import ctypes
libc = ctypes.CDLL(None, use_errno=True)
print("before", flush=True)
libc.syscall(ctypes.c_long(0x40000000 | 39))
print("AFTER")
