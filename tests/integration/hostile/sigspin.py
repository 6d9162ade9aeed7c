# Spins inside the SIGTERM handler, past the deadline.
import signal
import time


def spin(*_):
    while True:
        pass


signal.signal(signal.SIGTERM, spin)
print("ready", flush=True)
while True:
    time.sleep(1)
