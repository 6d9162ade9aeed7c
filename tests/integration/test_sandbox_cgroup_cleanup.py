"""A run's cgroups are removed even when its process tree is slow to die,
and the sweep removes empty leftovers whose creator is gone
(docs/sandbox.md, "Cgroups").  Each test fails if a cgroup is left."""
import os
import subprocess
import time

import pytest

from sandbox_helpers import BIN, facts, need, session_config

# The v1 controllers a run's cgroups may use (cpu accounting is cpuacct).
V1 = ("memory", "pids", "cpuacct")


def bases():
    """Our own cgroup in each hierarchy the sandbox's facts say it uses:
    {"memory": path, ..., "unified": path}, found as the sandbox does."""
    used = facts()["mechanism"]["cgroup"]
    want = {"unified"} | {("cpuacct" if c == "cpu" else c)
                          for c in ("memory", "pids", "cpu")
                          if used.get(c) == "v1"}
    own = {}
    with open("/proc/self/cgroup") as f:
        for line in f:
            num, ctrls, path = line.rstrip("\n").split(":", 2)
            if num == "0" and ctrls == "":
                own["unified"] = path
            for c in ctrls.split(","):
                if c in V1:
                    own[c] = path
    found = {}
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, right = line.split(" - ", 1)
            root, mnt = left.split()[3:5]
            fstype, _src, opts = right.split()[:3]
            names = []
            if fstype == "cgroup2":
                names = ["unified"]
            elif fstype == "cgroup":
                names = [c for c in opts.split(",") if c in V1]
            for n in names:
                path = own.get(n)
                if n in found or path is None:
                    continue
                if root != "/" and not path.startswith(root):
                    continue
                rest = path[len(root):] if root != "/" else path
                found[n] = (mnt + rest).rstrip("/") or "/"
    return {n: p for n, p in found.items() if n in want and os.path.isdir(p)}


def cgroups_of(pid):
    """Every cgroup the process `pid` made as a run's, in every hierarchy."""
    left = []
    for base in bases().values():
        left += [os.path.join(base, n) for n in os.listdir(base)
                 if n.startswith("airlock-%d-" % pid)]
    return left


# A tree that is slow to die: many processes, each holding memory it has
# touched (a SIGKILLed process leaves its cgroups only after its memory
# is released), some still forking when the wall limit kills the run.
SLOW_TREE = r"""
import os, time
kids = 0
for i in range(90):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        b = bytearray(3 << 20)
        for j in range(0, len(b), 4096):
            b[j] = 1
        while True:
            try:
                if os.fork() == 0:
                    time.sleep(0.05)
                    os._exit(0)
            except OSError:
                pass
            try:
                os.wait()
            except OSError:
                pass
    kids += 1
print(kids, flush=True)
time.sleep(60)
"""


def test_slow_dying_tree_leaves_no_cgroup():
    need(language="python", limit="memory_bytes")
    p = subprocess.Popen([BIN, "--config", session_config(), "run",
                          "-p", "sandbox", "-l", "python", "-e", SLOW_TREE,
                          "-t", "3s", "--json"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    out, err = p.communicate(timeout=120)
    assert '"outcome":"timed_out"' in out.replace(" ", ""), (out, err)
    assert bases(), "no cgroup hierarchy found"
    assert cgroups_of(p.pid) == [], err


def run_true():
    """One run, whose removal of its cgroups sweeps."""
    p = subprocess.run([BIN, "--config", session_config(), "run",
                        "-p", "sandbox", "-l", "sh", "-e", "true"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr


def populated(d):
    """A v2 cgroup's populated flag, a v1 cgroup's listed processes."""
    if os.path.exists(os.path.join(d, "cgroup.events")):
        with open(os.path.join(d, "cgroup.events")) as f:
            return "populated 1" in f.read()
    with open(os.path.join(d, "cgroup.procs")) as f:
        return f.read().strip() != ""


def kill_cli_mid_run():
    """Starts a CLI run of `sleep 30`, SIGKILLs the CLI once the run's
    cgroups hold its tree: (the CLI's pid, those cgroups)."""
    p = subprocess.Popen([BIN, "--config", session_config(), "run",
                          "-p", "sandbox", "-l", "sh", "-e", "sleep 30",
                          "-t", "30s", "--json"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    want = len(bases())
    left, held = [], []
    deadline = time.monotonic() + 20  # well inside the run's 30 s
    # the run's cgroups exist once it started; a CLI that ended first
    # (a refusal) says why.  One per hierarchy holds the run: a set made
    # ahead that came too late for it (a loaded machine) sits beside
    # them, empty, and is the sweep's as well.
    while time.monotonic() < deadline and p.poll() is None:
        left = cgroups_of(p.pid)
        held = [d for d in left if holds(d)]
        if len(held) == want:
            break
        time.sleep(0.05)
    ended = p.poll() is not None
    p.kill()
    out, err = p.communicate()
    assert not ended, "the CLI ended before its run's cgroups held it: " \
        "rc=%s stdout=%s stderr=%s" % (p.returncode, out, err)
    assert len(held) == want, (left, want, err)
    return p.pid, left


def holds(d):
    """populated(d), false for a cgroup removed meanwhile."""
    try:
        return populated(d)
    except OSError:
        return False


def test_a_killed_cli_takes_its_run_with_it():
    """The init dies with its launcher (parent-death signal, set again
    after the init drops to the run's uid): SIGKILL of the CLI ends the
    run's whole tree, with no one else killing it."""
    need(limit="memory_bytes")  # the run's tree is seen through its cgroups
    _, left = kill_cli_mid_run()
    for _ in range(200):
        if not any(os.path.isdir(d) and populated(d) for d in left):
            break
        time.sleep(0.05)
    alive = [d for d in left if os.path.isdir(d) and populated(d)]
    for d in alive:  # not to leave it behind when the check fails
        with open(os.path.join(d, "cgroup.procs")) as f:
            for pid in f.read().split():
                os.kill(int(pid), 9)
    assert alive == [], "the run outlived its killed CLI"


def test_cgroups_of_a_killed_creator_are_swept():
    """The creator killed mid-run cannot remove its cgroups (this is how
    they piled up under a daemon whose supervisors were killed): once its
    tree is gone, a later run's removal sweeps what is left."""
    need(limit="memory_bytes")
    cli_pid, left = kill_cli_mid_run()
    # ended as the daemon ends a run whose supervisor died: the run's
    # processes (ours: started by the CLI above) killed through the cgroup
    for d in left:
        if os.path.exists(os.path.join(d, "cgroup.kill")):
            with open(os.path.join(d, "cgroup.kill"), "w") as f:
                f.write("1")
        else:
            with open(os.path.join(d, "cgroup.procs")) as f:
                for pid in f.read().split():
                    os.kill(int(pid), 9)
    for _ in range(600):
        if not any(os.path.isdir(d) and populated(d) for d in left):
            break
        time.sleep(0.05)
    assert not any(os.path.isdir(d) and populated(d) for d in left)
    old = time.time() - 600
    for d in left:
        os.utime(d, (old, old))  # past the sweep's minimum age
    run_true()
    assert cgroups_of(cli_pid) == []


def dead_pid():
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def test_sweep_removes_only_empty_leftovers_of_gone_creators():
    need(limit="memory_bytes")
    gone = dead_pid()
    old = time.time() - 600
    made = []
    try:
        for base in bases().values():
            leftover = os.path.join(base, "airlock-%d-0000abcd-t" % gone)
            # kept: its creator (this test) is alive
            live = os.path.join(base, "airlock-%d-0000abcd-t" % os.getpid())
            # kept: too young to tell from a run still being set up
            young = os.path.join(base, "airlock-%d-0000abce-t" % gone)
            # kept: not a name the sandbox makes (a durable run's)
            other = os.path.join(base, "airlock-run-%d.t" % gone)
            for d in (leftover, live, young, other):
                os.mkdir(d)
                made.append(d)
            for d in (leftover, live, other):
                os.utime(d, (old, old))
        run_true()  # its removal sweeps
        left = [d for d in made if os.path.isdir(d)]
        assert [d for d in made if "-0000abcd-t" in d and
                ("-%d-" % gone) in d and d in left] == [], left
        for d in made:
            if "-0000abcd-t" in d and ("-%d-" % gone) in d:
                continue
            assert d in left, "%s was swept" % d
    finally:
        for d in made:
            if os.path.isdir(d):
                os.rmdir(d)


def test_sweep_leaves_a_cgroup_that_holds_a_process():
    need(limit="memory_bytes")
    b = bases()
    if "pids" not in b:
        pytest.skip("no v1 pids hierarchy to place a process in")
    gone = dead_pid()
    d = os.path.join(b["pids"], "airlock-%d-0000abcf-t" % gone)
    os.mkdir(d)
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        with open(os.path.join(d, "cgroup.procs"), "w") as f:
            f.write(str(sleeper.pid))
        old = time.time() - 600
        os.utime(d, (old, old))
        run_true()
        assert os.path.isdir(d)
        assert sleeper.poll() is None, "the sweep touched a process"
    finally:
        sleeper.kill()
        sleeper.wait()
        for _ in range(200):
            try:
                os.rmdir(d)
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.01)
