import fcntl, termios, os, ctypes
for fd in (0, 1, 2):
    try:
        fcntl.ioctl(fd, termios.TIOCSTI, b"x")
        print(fd, "INJECTED")
    except OSError as e:
        print(fd, e.errno)
