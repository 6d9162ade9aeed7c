"""Hostile programs under the sandbox provider (attacks.md).  Each test
asserts the specific safe result (errno, outcome), so it fails if the
protection is removed."""
import os
import signal
import socket
import subprocess
import threading
import time

import pytest

from sandbox_helpers import UID_BASE, UID_COUNT, hostile, need, run

EPERM, ENOENT, ESRCH, EACCES, ENOSYS, EROFS = 1, 2, 3, 13, 38, 30
EAFNOSUPPORT, ECONNREFUSED, ENETUNREACH, EMFILE = 97, 111, 101, 24
ENOSPC = 28


def lines(res):
    assert res["outcome"] == "completed", res
    return res["stdout"].splitlines()


def uids_alive(lo=UID_BASE, hi=UID_BASE + UID_COUNT):
    """Processes of this session's per-run uids still alive."""
    out = subprocess.run(["ps", "-eo", "uid="], capture_output=True,
                         text=True).stdout.split()
    return [u for u in out if lo <= int(u) < hi]


def test_shadow_is_not_there():
    out = lines(hostile("read_shadow.sh"))
    assert "rc=1" in out
    assert any("No such file" in l for l in out)
    assert "shadow" not in out and "ssh" not in out


def test_host_dirs_hidden():
    out = lines(hostile("host_dirs.py"))
    for p in ["/root/.ssh", "/home", "/var/lib", "/var/cache/airlock",
              "/etc/ssh", "/etc/machine-id", "/run"]:
        assert "errno %s %d" % (p, ENOENT) in out
    assert not any(l.startswith("VISIBLE") for l in out)


def test_writes_only_to_tmp_and_workspace():
    out = lines(hostile("write_outside.sh"))
    assert not any(l.startswith("WROTE") for l in out), out
    # the default grant gives no workspace: an empty read-only dir
    assert "denied /workspace/x" in out and "tmp ok" in out


def test_host_environment_not_visible(monkeypatch):
    monkeypatch.setenv("AIRLOCK_HOST_SECRET", "hunter2")
    out = lines(hostile("environ.py"))
    assert "AIRLOCK_HOST_SECRET" not in out[0]
    # pid 1 (the init) and the parent: unreadable, or readable without it
    for l in out[1:]:
        assert l.startswith("errno") or l.endswith("False"), l
    assert any(l.startswith("errno /proc/1/environ") for l in out), out


def test_only_stdio_fds_inherited():
    out = lines(hostile("fds.py"))
    # 3 is the directory listdir itself opened
    assert out == ["[0, 1, 2, 3]"]


def test_cannot_signal_host_process():
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        out = lines(hostile("kill_host.py", "--arg", str(sleeper.pid)))
        assert "errno %d" % ESRCH in out
        assert sleeper.poll() is None
        pids = eval(out[-1].split(" ", 1)[1])
        assert sleeper.pid not in pids and max(pids) < 100
    finally:
        sleeper.kill()
        sleeper.wait()


@pytest.mark.parametrize("name,err", [
    ("ptrace", EPERM), ("process_vm_readv", EPERM), ("keyctl", EPERM),
    ("add_key", EPERM), ("bpf", EPERM), ("perf_event_open", EPERM),
    ("userfaultfd", EPERM), ("io_uring_setup", EPERM), ("mount", EPERM),
    ("umount2", EPERM), ("pivot_root", EPERM), ("chroot", EPERM),
    ("unshare", EPERM), ("setns", EPERM), ("clone_newuser", EPERM),
    ("clone3", ENOSYS), ("init_module", EPERM), ("finit_module", EPERM),
    ("kexec_load", EPERM), ("reboot", EPERM), ("swapon", EPERM),
    ("settimeofday", EPERM), ("clock_settime", EPERM),
    ("open_by_handle_at", EPERM), ("personality", EPERM),
    ("syslog", EPERM), ("fsopen", EPERM),
])
def test_dangerous_syscalls_refused(name, err, _syscalls={}):
    if not _syscalls:
        for l in lines(hostile("syscalls.py")):
            n, r, e = l.split()
            _syscalls[n] = (int(r), int(e))
    assert _syscalls[name] == (-1, err)


def test_socket_families_refused():
    out = lines(hostile("sockets.py"))
    for fam in ["vsock", "packet", "netlink_audit", "key", "alg",
                "bluetooth"]:
        assert "%s %d" % (fam, EAFNOSUPPORT) in out, out
    assert "raw_inet %d" % EPERM in out
    assert "unix ok" in out


@pytest.fixture
def listeners():
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)
    name = "airlock-test-%d" % os.getpid()
    ab = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    ab.bind("\0" + name)
    ab.listen(4)
    yield srv.getsockname()[1], name
    srv.close()
    ab.close()


def test_network_none_cannot_reach_host_loopback(listeners):
    port, name = listeners
    out = lines(hostile("net_probe.py", "--network", "none",
                        "--arg", str(port), "--arg", name))
    assert out[0] == "ifaces ['lo']"
    # Landlock refuses TCP first (EACCES); without it the empty network
    # namespace answers ENETUNREACH
    assert "connect %d" % EACCES in out or "connect %d" % ENETUNREACH in out
    assert "abstract %d" % ECONNREFUSED in out


def test_network_loopback_is_private(listeners):
    need(network="loopback")
    port, name = listeners
    out = lines(hostile("net_probe.py", "--network", "loopback",
                        "--arg", str(port), "--arg", name))
    assert "connect %d" % ECONNREFUSED in out
    assert "abstract %d" % ECONNREFUSED in out


def test_no_privileges_and_nosuid():
    out = lines(hostile("privs.sh"))
    assert "NoNewPrivs:\t1" in out
    for cap in ["CapEff", "CapBnd", "CapPrm", "CapAmb"]:
        assert "%s:\t0000000000000000" % cap in out
    assert "Seccomp:\t2" in out
    usr = [l for l in out if l.startswith("usr ")][0]
    assert "ro" in usr.split()[1].split(",") and "nosuid" in usr


def test_devices_and_kernel_files():
    out = lines(hostile("devices.sh"))
    for d in ["/dev/mem", "/dev/kmsg", "/dev/tty", "/dev/vsock", "/dev/kvm"]:
        assert "absent %s" % d in out
    assert "sysrq denied" in out and "core_pattern denied" in out
    assert "no sys" in out
    assert "kcore 0" in out


def test_tiocsti_refused():
    out = lines(hostile("tiocsti.py"))
    assert out == ["0 %d" % EPERM, "1 %d" % EPERM, "2 %d" % EPERM]


def test_fork_bomb_held_by_pids_limit():
    need(limit="pids")
    res = hostile("forkbomb.sh", "--pids", "32", "-t", "5s")
    assert res["outcome"] in ("completed", "failed", "killed", "timed_out")
    if res["outcome"] == "killed":
        assert res["reason"] == "pids_limit"
    assert "fork" in res["stderr"] or "Resource" in res["stderr"] or \
        res["outcome"] == "killed"
    assert uids_alive() == []


def test_memory_bomb_killed_with_reason():
    need(limit="memory_bytes")
    res = hostile("membomb.py", "-m", "64M", "-t", "20s")
    assert res["outcome"] == "killed" and res["reason"] == "memory_limit"
    assert res["usage"]["peak_memory_bytes"] <= 64 * 1024 * 1024


def test_tmp_is_bounded():
    out = lines(hostile("tmpfill.sh"))
    assert any("No space left on device" in l for l in out)
    size = [l for l in out if l.startswith("tmp size kb")][0]
    assert int(size.split()[-1]) <= 64 * 1024


def test_open_files_limited():
    out = lines(hostile("nofile.py"))
    n, err = out[0].split()[1:]
    assert int(err) == EMFILE and int(n) < 256


def test_nothing_outlives_the_run():
    res = hostile("escape.sh")
    assert res["outcome"] == "completed"
    assert uids_alive() == []


def test_term_ignoring_tree_times_out_and_is_gone():
    t0 = time.time()
    res = hostile("term_ignore.sh", "-t", "1s")
    assert res["outcome"] == "timed_out" and res["exit_code"] is None
    assert time.time() - t0 < 10
    assert uids_alive() == []


def test_foreign_arch_syscall_kills():
    res = hostile("x32.py")
    assert res["outcome"] == "killed" and res["signal"] == signal.SIGSYS
    assert "AFTER" not in res["stdout"]


@pytest.mark.parametrize("name", ["threads.py", "threads.sh"])
def test_threads_bomb_held_by_pids_limit(name):
    need(limit="pids")
    res = hostile(name, "--pids", "32", "-t", "20s")
    out = res["stdout"].splitlines()
    assert "unbounded" not in res["stdout"], out[-3:]
    if name.endswith(".py"):
        assert res["outcome"] == "completed", res
        word, n, err = out[-1].split()
        assert word == "stopped" and err == "RuntimeError"
    else:
        # dash gives up when the limit refuses a fork
        assert res["outcome"] == "failed" and "Cannot fork" in res["stderr"]
        n = out[-1]
    assert 0 < int(n) < 32
    assert uids_alive() == []


@pytest.mark.parametrize("name,total", [
    ("flood.sh", (3000000, 3000000)),
    ("flood.py", (40 * 65536 + 1, 40 * 65536)),
])
def test_interleaved_floods_of_long_lines_are_capped(name, total):
    t0 = time.time()
    res = hostile(name, "--output-limit", "64K", "-t", "20s")
    assert res["outcome"] == "completed", res
    assert time.time() - t0 < 15
    for stream, letter, seen in (("stdout", "a", total[0]),
                                 ("stderr", "b", total[1])):
        assert res[stream + "_truncated"] is True
        assert res[stream + "_bytes"] == seen
        kept = res[stream]
        body = kept.split("\n[airlock: output truncated]")[0]
        assert len(body) == 65536 and set(body) == {letter}, stream


@pytest.mark.parametrize("name", ["sigspin.py", "sigspin.sh"])
def test_spinning_in_the_term_handler_past_the_deadline(name):
    t0 = time.time()
    res = hostile(name, "-t", "1s")
    assert res["outcome"] == "timed_out" and res["exit_code"] is None, res
    assert res["stdout"].startswith("ready")
    # TERM at the deadline, KILL after the grace: nothing waits on the spin
    assert time.time() - t0 < 8
    assert uids_alive() == []


@pytest.mark.parametrize("name", ["stdin_block.py", "stdin_block.sh"])
def test_blocking_on_input_past_the_deadline(name, tmp_path):
    big = tmp_path / "stdin"
    big.write_bytes(b"x" * (4 << 20))  # far more than a pipe holds
    t0 = time.time()
    res = hostile(name, "-t", "1s", "--stdin-file", str(big))
    assert res["outcome"] == "timed_out", res
    assert res["stdout"] == "blocking\n"
    assert time.time() - t0 < 8
    assert uids_alive() == []


@pytest.mark.parametrize("name", ["inodes.py", "inodes.sh"])
def test_tmp_inode_exhaustion_is_bounded(name):
    t0 = time.time()
    res = hostile(name, "-t", "30s")
    out = res["stdout"].split()
    assert "unbounded" not in out, out
    n = int(out[1])
    # /tmp is 64 MiB: one inode per 4 KiB, minus the root directory
    assert 1000 < n <= 64 * 1024 // 4, n
    if name.endswith(".py"):
        assert int(out[2]) == ENOSPC
    else:
        assert "No space left on device" in res["stderr"]
    assert time.time() - t0 < 25


def test_setuid_binaries_are_inert():
    out = lines(hostile("setuid.sh"))
    # the bits are there, on root's (unmapped: nobody's) files
    assert "-rwsr-xr-x /usr/bin/su" in out
    assert "-rwsr-xr-x /usr/bin/newgrp" in out
    assert "su rc=1" in out
    # a shell started through the setuid newgrp: our own ids, no caps
    assert "Uid:\t0\t0\t0\t0" in out and "Gid:\t0\t0\t0\t0" in out
    for cap in ("CapEff", "CapPrm", "CapBnd"):
        assert "%s:\t0000000000000000" % cap in out
