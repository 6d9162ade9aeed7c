# Threads bomb: start threads until the pids limit refuses one.
import threading

stop = threading.Event()
n = 0
try:
    while n < 5000:
        threading.Thread(target=stop.wait, daemon=True).start()
        n += 1
except RuntimeError as e:
    print("stopped", n, type(e).__name__)
else:
    print("unbounded", n)
stop.set()
