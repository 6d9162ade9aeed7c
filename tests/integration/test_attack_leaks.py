"""What a run can learn about the host (threat model T11), under the
sandbox: the init's command line, host paths in the mount table, other
processes' file locks, and system calls a run never needs (modify_ldt,
NUMA placement)."""
import fcntl
import json
import os
import subprocess

import pytest

from sandbox_helpers import BIN, need, run, session_config
from test_durable_support import DurableDaemon, cleanup_state

ENOSYS = 38


def test_init_command_line_is_clean(tmp_path):
    """/proc/1/cmdline showed the caller's argv: here the state directory,
    for a daemon's run the supervisor's identity nonce too."""
    need(language="sh")
    state = tmp_path / "state-dir-of-the-host"
    state.mkdir(mode=0o700)
    p = subprocess.run(
        [BIN, "--state-dir", str(state), "--config", session_config(),
         "run", "-p", "sandbox", "--json", "-l", "sh", "-e",
         "tr '\\0' '|' < /proc/1/cmdline; echo; cat /proc/1/comm"],
        capture_output=True, text=True, timeout=60)
    r = json.loads(p.stdout)
    assert r["outcome"] == "completed", r
    cmdline, comm = r["stdout"].splitlines()
    assert cmdline == "airlock-init|", cmdline
    assert comm == "airlock-init"
    assert str(state) not in r["stdout"]


def test_daemon_run_init_shows_no_supervisor_argv(tmp_path):
    """A daemon's run: its init starts in the run's supervisor's memory
    (or as a copy of it), whose argv names the state directory and the
    identity nonce."""
    need(language="sh")
    cfg = {"providers": [{"provider": "sandbox"}],
           "tenants": {"default": {"languages": ["sh"],
                                   "grant": {"network": ["none"],
                                             "workspace": ["none"]}}}}
    d = DurableDaemon(tmp_path, cfg)
    try:
        d.start()
        st, _, res = d.run({"language": "sh", "code":
                            "tr '\\0' '|' < /proc/1/cmdline"})
        assert st == 200, res
        assert res["outcome"] == "completed", res
        assert res["stdout"] == "airlock-init|", res["stdout"]
    finally:
        d.stop()
        cleanup_state(d)


def test_init_memory_is_not_the_runs_to_read(tmp_path):
    """pid 1 runs as the run's own host uid: were it dumpable, the program
    could read its memory and environment through /proc/1 (or ptrace it
    and forge the exit report).  Its mem, environ and exe stay closed, and
    it holds no capability."""
    need(language="sh")
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    code = ("for f in environ mem; do "
            "cat /proc/1/$f >/dev/null 2>&1 && echo open:$f; done; "
            "readlink /proc/1/exe >/dev/null 2>&1 && echo open:exe; "
            "ls /proc/1/fd/ >/dev/null 2>&1 && echo open:fd; "
            "grep -E '^Cap(Inh|Prm|Eff|Amb):' /proc/1/status | "
            "grep -v '0000000000000000$'; echo done")
    p = subprocess.run(
        [BIN, "--state-dir", str(state), "--config", session_config(),
         "run", "-p", "sandbox", "--json", "-l", "sh", "-e", code],
        capture_output=True, text=True, timeout=60)
    r = json.loads(p.stdout)
    assert r["outcome"] == "completed", r
    assert r["stdout"] == "done\n", r["stdout"]


def mounts_of(res):
    assert res["outcome"] == "completed", res
    rows = []
    for line in res["stdout"].splitlines():
        left, _, right = line.partition(" - ")
        f = left.split()
        rows.append({"root": f[3], "point": f[4], "fstype": right.split()[0],
                     "line": line})
    return rows


def test_mount_table_names_no_host_path(tmp_path, monkeypatch):
    """A run's own areas (code, a read-only workspace) were bound from the
    run directory, whose path on its file system (here under TMPDIR) the
    mount table showed; each is now an overlay with root "/" and
    "lowerdir=.", and every other mount shows only what is at the same
    path inside (system dirs, device nodes, /proc parts)."""
    need(language="sh")
    host = tmp_path / "host-secret-name"
    host.mkdir()
    monkeypatch.setenv("TMPDIR", str(host))
    infile = tmp_path / "in.txt"
    infile.write_text("x")
    res = run("sh", "cat /proc/self/mountinfo; echo $AIRLOCK_RUN_ID >&2",
              "--workspace", "ro", "--file", "%s:in.txt" % infile)
    rows = mounts_of(res)
    run_id = res["stderr"].strip()
    text = res["stdout"]
    for needle in ("host-secret-name", str(tmp_path), run_id,
                   "airlock-%d" % os.geteuid()):
        assert needle not in text, (needle, text)
    for m in rows:
        assert (m["root"] == "/" or m["root"] == m["point"] or
                m["fstype"] in ("devtmpfs", "proc")), m["line"]
    points = {m["point"]: m for m in rows}
    for area in ("/code", "/workspace"):
        assert points[area]["fstype"] == "overlay", points[area]["line"]
        assert "lowerdir=.:" in points[area]["line"]


def test_views_show_the_files(tmp_path):
    """The overlays list and read what the host wrote."""
    need(language="sh")
    infile = tmp_path / "in.txt"
    infile.write_text("hello")
    res = run("sh", "ls /code /workspace; cat /workspace/in.txt",
              "--workspace", "ro", "--file", "%s:in.txt" % infile)
    assert res["outcome"] == "completed", res
    assert res["stdout"].split() == ["/code:", "main.sh", "/workspace:",
                                     "in.txt", "hello"]


def test_other_processes_locks_are_hidden(tmp_path):
    """/proc/locks lists every lock on the host (other runs' uid-pool
    locks among them); this test holds one while the run looks."""
    need(language="sh")
    with open(tmp_path / "held", "w") as f:
        fcntl.lockf(f, fcntl.LOCK_EX)
        res = run("sh", "cat /proc/locks; echo end")
    assert res["outcome"] == "completed", res
    assert res["stdout"] == "end\n", res["stdout"]


SYSCALLS = r"""
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
buf = ctypes.create_string_buffer(4096)
calls = {
    "modify_ldt": (154, (0, buf, 16)),
    "set_mempolicy": (238, (0, None, 0)),
    "get_mempolicy": (239, (None, None, 0, None, 0)),
    "mbind": (237, (buf, 4096, 0, None, 0, 0)),
    "migrate_pages": (256, (0, 64, buf, buf)),
    "move_pages": (279, (0, 0, None, None, None, 0)),
    "set_mempolicy_home_node": (450, (buf, 4096, 0, 0)),
}
for name, (nr, args) in calls.items():
    ctypes.set_errno(0)
    r = libc.syscall(nr, *args)
    print(name, r, ctypes.get_errno())
"""


def test_ldt_and_numa_calls_refused():
    need(language="python")
    if os.uname().machine != "x86_64":
        pytest.skip("syscall numbers here are x86_64's")
    res = run("python", SYSCALLS)
    assert res["outcome"] == "completed", res
    seen = {}
    for line in res["stdout"].splitlines():
        name, r, err = line.split()
        seen[name] = (int(r), int(err))
    assert len(seen) == 7, res
    for name, (r, err) in seen.items():
        assert (r, err) == (-1, ENOSYS), (name, r, err)
