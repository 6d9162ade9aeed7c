#!/usr/bin/python3
"""CPU of the API path per run, by process role and phase (issue 21).

usage: bench/api_cpu.py AIRLOCK RUNS CLIENTS OUT [airlock options...]

Starts `AIRLOCK --state-dir TMP serve` (TMP under $STATE_BASE, default
/var/tmp), posts 40 warm-up runs of sh `true`, then attaches to the daemon
(children inherited) and posts RUNS more from CLIENTS threads, a new
connection per request.  OUT decides what is attached:

  X.data    perf record -F 4000 -g   (then: bench/api_phases.py X.data RUNS;
            $PERF_FREQ sets another rate: a VM whose sampling costs
            much slows the runs less at 500)
  X.faults  perf record of every page fault, with call chains
            (perf report --sort comm,dso, or perf script)
  X.stat    perf stat: task-clock, fdatasync, fsync, clone3, execve counts,
            ext4 inodes allocated and freed
  X.sys     perf record of every system call's entry (then: perf script
            -F comm,trace; bench/api_syscalls.py X.sys RUNS counts them
            by process role and call; $PERF_CALLERS records the
            callers too, for perf report)
  X.strace  strace -f -c (system calls by count)
  -         nothing (runs/s only)

Idle supervisors started before the attach serve the first runs, so use
RUNS of a few hundred.  The daemon gets a cache directory of its own
(AIRLOCK_CACHE_DIR, unless set), filled by the warm-up runs.  Standard library only; Debian's perf and strace.
"""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request


def main():
    airlock, runs, clients, out = (sys.argv[1], int(sys.argv[2]),
                                   int(sys.argv[3]), sys.argv[4])
    extra = sys.argv[5:]
    sd = tempfile.mkdtemp(dir=os.environ.get("STATE_BASE", "/var/tmp"),
                          prefix="api-cpu.")
    # A cache directory of its own: the machine's shared one is rewritten
    # by every other airlock binary's processes (the key holds the
    # binary's identity), and each rewrite makes the next idle supervisor
    # observe the languages again (javac and all) inside the measurement.
    env = dict(os.environ)
    if "AIRLOCK_CACHE_DIR" not in env:
        env["AIRLOCK_CACHE_DIR"] = sd + ".cache"
        os.mkdir(sd + ".cache", 0o700)
    p = subprocess.Popen([airlock, "--state-dir", sd] + extra +
                         ["serve", "--listen", "127.0.0.1:0"],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True, env=env)
    url = None
    for line in p.stderr:
        m = re.search(r"listening on (http://[0-9.:]+)", line)
        if m:
            url = m.group(1)
            break
    if url is None:
        sys.exit("airlock serve did not start")
    threading.Thread(target=lambda: [None for _ in p.stderr],
                     daemon=True).start()
    for _ in range(100):
        if os.path.exists(sd + "/token"):
            break
        time.sleep(0.05)
    with open(sd + "/token") as f:
        tok = f.read().strip()
    bad = []

    def post():
        r = urllib.request.Request(
            url + "/v1/runs?wait=true", method="POST",
            data=json.dumps({"language": "sh", "code": "true"}).encode(),
            headers={"Authorization": "Bearer " + tok,
                     "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(r, timeout=60) as resp:
                j = json.loads(resp.read())
                if j.get("outcome") != "completed":
                    bad.append(j.get("outcome"))
        except urllib.error.HTTPError as e:
            bad.append(f"HTTP {e.code}: {e.read()[:200]!r}")

    # The first supervisors on an empty cache directory observe every
    # language inside the sandbox (seconds of javac, go, rustc...): let
    # that finish before the measurement.
    for _ in range(40):
        post()
    time.sleep(5)
    pid = str(p.pid)
    if out.endswith(".data"):
        cmd = ["perf", "record", "-q", "-F",
               os.environ.get("PERF_FREQ", "4000"), "-g", "-p", pid,
               "-o", out]
    elif out.endswith(".faults"):
        cmd = ["perf", "record", "-q", "-e", "page-faults", "-c", "1", "-g",
               "-p", pid, "-o", out]
    elif out.endswith(".stat"):
        cmd = ["perf", "stat", "-x,", "-e",
               "task-clock,syscalls:sys_enter_fdatasync,"
               "syscalls:sys_enter_fsync,syscalls:sys_enter_clone3,"
               "syscalls:sys_enter_execve,ext4:ext4_allocate_inode,"
               "ext4:ext4_free_inode", "-p", pid, "-o", out]
    elif out.endswith(".sys"):
        cmd = ["perf", "record", "-q", "-e", "raw_syscalls:sys_enter"] + \
            (["-g"] if os.environ.get("PERF_CALLERS") else []) + \
            ["-p", pid, "-o", out]
    elif out.endswith(".strace"):
        cmd = ["strace", "-f", "-c", "-S", "calls", "-o", out, "-p", pid]
    else:
        cmd = None
    tracer = None
    if cmd:
        tracer = subprocess.Popen(cmd, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        time.sleep(1.0)
    per = runs // clients
    t0 = time.time()
    ts = [threading.Thread(target=lambda: [post() for _ in range(per)])
          for _ in range(clients)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    elapsed = time.time() - t0
    time.sleep(0.3)
    if tracer:
        tracer.send_signal(signal.SIGINT)
        tracer.wait()
    p.send_signal(signal.SIGTERM)
    p.wait(timeout=30)
    subprocess.run(["rm", "-rf", sd, sd + ".cache"])
    n = per * clients
    print(f"runs {n} elapsed {elapsed:.2f} s {n / elapsed:.1f} runs/s "
          f"not completed {len(bad)} load {os.getloadavg()[0]:.2f}")
    for b in bad[:5]:
        print("  ", b)
    if out.endswith(".stat"):
        with open(out) as f:
            for line in f:
                v = line.split(",")
                if len(v) > 2 and v[0] and not line.startswith("#"):
                    print(f"  {v[2]}: {float(v[0]) / n:.2f} per run")


if __name__ == "__main__":
    main()
