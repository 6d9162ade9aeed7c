"""Where a sandboxed run's directory (RUN/code, RUN/workspace) goes
(src/sandbox/runbase.c), seen through `airlock run`:
on the host's memory-backed /dev/shm when it is a tmpfs and nothing chose
a place (cheaper to create and remove than ext4), a run with a rw
workspace too (its /workspace is a tmpfs of its own, bounded: nothing the
program writes lands in the run's directory); under TMPDIR or
AIRLOCK_RUN_BASE when set; removed after the run either way.  Each test
finds the run's directory from outside while the run sleeps (the run's
own mount table does not name it)."""
import json
import os
import signal
import subprocess
import tempfile
import time
import uuid

import pytest

from sandbox_helpers import BIN, need


def shm_is_tmpfs():
    with open("/proc/mounts") as f:
        for line in f:
            fields = line.split()
            if fields[1] == "/dev/shm":
                st = os.stat("/dev/shm")
                return (fields[2] == "tmpfs" and st.st_uid == 0 and
                        bool(st.st_mode & 0o1000))
    return False


def fs_of(path):
    best, fstype = "", None
    with open("/proc/mounts") as f:
        for line in f:
            fields = line.split()
            m = fields[1]
            if (path == m or path.startswith(m.rstrip("/") + "/")) and \
                    len(m) >= len(best):
                best, fstype = m, fields[2]
    return fstype


def clean_env():
    e = {k: v for k, v in os.environ.items()
         if k not in ("TMPDIR", "AIRLOCK_RUN_BASE")}
    return e


def run_dir_of(env, bases, args, state_dir):
    """Starts `airlock run -p sandbox ARGS` with a program that sleeps
    (its code carries a marker), waits until a new directory of one of
    `bases` holds that code, cancels the run (SIGINT) and returns the
    directory, which must be gone afterwards.  The run's mount table no
    longer names it (the views of T11), so it is looked for from outside."""
    marker = "marker-%s" % uuid.uuid4().hex
    code = "sleep 30 # %s\n" % marker
    if args and args[0] == "--request":
        with open(args[1]) as f:
            req = json.load(f)
        req["code"] = code
        with open(args[1], "w") as f:
            json.dump(req, f)
        argv = list(args)
    else:
        argv = list(args) + ["-l", "sh", "-e", code]
    p = subprocess.Popen([BIN, "--state-dir", state_dir, "run", "-p",
                          "sandbox"] + argv, env=env,
                         stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    found = None
    deadline = time.monotonic() + 30
    try:
        while found is None and p.poll() is None and \
                time.monotonic() < deadline:
            for b in bases:
                try:
                    names = os.listdir(b)
                except OSError:
                    continue
                for n in names:
                    f = os.path.join(b, n, "code", "main.sh")
                    try:
                        with open(f) as fh:
                            if marker in fh.read():
                                found = os.path.join(b, n)
                    except OSError:
                        pass
            time.sleep(0.01)
    finally:
        p.send_signal(signal.SIGINT)
        p.wait(timeout=60)
    assert found is not None, "no run directory seen under %s" % bases
    assert not os.path.exists(found)
    return found


def test_default_is_dev_shm_when_it_is_tmpfs(state_dir):
    need(language="sh")
    shm = "/dev/shm/airlock-%d" % os.geteuid()
    tmp = "/tmp/airlock-%d" % os.geteuid()
    d = run_dir_of(clean_env(), [shm, tmp], [], state_dir)
    if shm_is_tmpfs():
        assert os.path.dirname(d) == shm
        assert fs_of(d) == "tmpfs"
    else:
        assert os.path.dirname(d) == tmp


def test_rw_workspace_is_a_tmpfs_of_its_own(state_dir, run_json, tmp_path):
    need(language="sh")
    shm = "/dev/shm/airlock-%d" % os.geteuid()
    tmp = "/tmp/airlock-%d" % os.geteuid()
    d = run_dir_of(clean_env(), [shm, tmp], ["--workspace", "rw"],
                   state_dir)
    assert os.path.dirname(d) == (shm if shm_is_tmpfs() else tmp)
    r, _ = run_json("-p", "sandbox", "--workspace", "rw", "-l", "sh", "-e",
                    "grep ' /workspace ' /proc/self/mountinfo",
                    env=clean_env())
    assert r["outcome"] == "completed", r
    fields = r["stdout"].split()
    assert fields[fields.index("-") + 1] == "tmpfs"
    assert "size=262144k" in r["stdout"], r["stdout"]
    # an explicit workspace_bytes: the same, of that size
    req = tmp_path / "req.json"
    req.write_text(json.dumps({
        "language": "sh", "code": "",
        "grant": {"workspace": "rw"},
        "limits": {"workspace_bytes": 1 << 20}}))
    d = run_dir_of(clean_env(), [shm, tmp], ["--request", str(req)],
                   state_dir)
    assert os.path.dirname(d) == (shm if shm_is_tmpfs() else tmp)


@pytest.mark.parametrize("var", ["TMPDIR", "AIRLOCK_RUN_BASE"])
def test_a_chosen_place_wins(state_dir, var, tmp_path):
    need(language="sh")
    d = tempfile.mkdtemp(dir=str(tmp_path))
    os.chmod(d, 0o700)
    base = d if var == "AIRLOCK_RUN_BASE" else os.path.join(
        d, "airlock-%d" % os.geteuid())
    env = clean_env()
    env[var] = d if var == "TMPDIR" else base
    run_dir = run_dir_of(env, [base], [], state_dir)
    assert os.path.dirname(run_dir) == base
    assert os.path.isdir(base) and os.listdir(base) == []


# ---- leftovers of killed processes (docs/sandbox.md, "Run directories
# of killed processes") ------------------------------------------------

@pytest.fixture
def own_base(tmp_path):
    """A base of this test's own (on /dev/shm when it is a tmpfs, like
    the default one), so no other process's run sweeps it meanwhile:
    the environment that chooses it."""
    parent = "/dev/shm" if shm_is_tmpfs() else str(tmp_path)
    base = os.path.join(parent, "airlock-test-%s" % uuid.uuid4().hex)
    os.mkdir(base, 0o700)
    env = clean_env()
    env["AIRLOCK_RUN_BASE"] = base
    try:
        yield env
    finally:
        subprocess.run(["rm", "-rf", "--one-file-system", base], check=True)


def comm(pid):
    try:
        with open("/proc/%d/comm" % pid) as f:
            return f.read().strip()
    except OSError:
        return None


def start_sleeping_run(state_dir, env):
    """Starts `airlock run` of a program that sleeps, waits until its run
    directory holds its code and its program sleeps (the code is written
    before the init starts): (the CLI, that directory)."""
    marker = "marker-%s" % uuid.uuid4().hex
    p = subprocess.Popen([BIN, "--state-dir", state_dir, "run", "-p",
                          "sandbox", "-l", "sh", "-e",
                          "sleep 60 # %s\n" % marker], env=env,
                         stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    b = env["AIRLOCK_RUN_BASE"]
    while p.poll() is None and time.monotonic() < deadline:
        for n in os.listdir(b):
            try:
                with open(os.path.join(b, n, "code", "main.sh")) as f:
                    if marker not in f.read():
                        continue
            except OSError:
                continue
            if any(comm(c) == "sleep" for c in descendants(p.pid)):
                return p, os.path.join(b, n)
        time.sleep(0.01)
    p.kill()
    p.wait()
    raise AssertionError("no run directory seen under %s" % b)


def proc_stat(pid):
    """(ppid, start time, state) of pid, or None when it is gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            rest = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return int(rest[1]), int(rest[19]), rest[0]


def descendants(pid):
    """{pid: start time} of every process below pid."""
    parents = {}
    for n in os.listdir("/proc"):
        if n.isdigit():
            s = proc_stat(int(n))
            if s is not None:
                parents[int(n)] = s
    found, stack = {}, [pid]
    while stack:
        p = stack.pop()
        for c, (ppid, start, _) in parents.items():
            if ppid == p and c not in found:
                found[c] = start
                stack.append(c)
    return found


def ended(pid, start):
    """The process pid started at start has ended (a zombie holds no
    descriptor any more)."""
    s = proc_stat(pid)
    return s is None or s[1] != start or s[2] == "Z"


def kill_cli(p):
    """SIGKILLs the CLI and waits until its run's whole tree has ended
    (the init dies with it: parent-death signal)."""
    tree = descendants(p.pid)
    assert tree, "the run has no process"
    p.kill()
    p.wait()
    for _ in range(600):
        alive = [c for c, start in tree.items() if not ended(c, start)]
        if not alive:
            return
        time.sleep(0.05)
    raise AssertionError("the run outlived its killed CLI: %s" % alive)


def run_true(state_dir, env):
    r = subprocess.run([BIN, "--state-dir", state_dir, "run", "-p",
                        "sandbox", "-l", "sh", "-e", "true"], env=env,
                       capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr


def test_a_killed_clis_run_directory_is_swept_by_a_later_run(state_dir,
                                                             own_base):
    need(language="sh")
    env = own_base
    p, d = start_sleeping_run(state_dir, env)
    kill_cli(p)
    # nobody removed it: the CLI was killed
    assert os.path.isdir(os.path.join(d, "code"))
    run_true(state_dir, env)
    assert not os.path.exists(d)
    assert os.listdir(env["AIRLOCK_RUN_BASE"]) == []


def test_a_live_runs_directory_is_not_swept(state_dir, own_base):
    need(language="sh")
    env = own_base
    live, live_dir = start_sleeping_run(state_dir, env)
    try:
        killed, left = start_sleeping_run(state_dir, env)
        kill_cli(killed)
        assert os.path.isdir(left)
        # the later run swept (the killed CLI's leftover is gone) and left
        # the live run's directory alone
        run_true(state_dir, env)
        assert not os.path.exists(left)
        assert os.path.isfile(os.path.join(live_dir, "code", "main.sh"))
        assert live.poll() is None
    finally:
        live.send_signal(signal.SIGINT)
        live.wait(timeout=60)
    assert not os.path.exists(live_dir)
    assert os.listdir(env["AIRLOCK_RUN_BASE"]) == []
