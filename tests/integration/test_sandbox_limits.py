"""Limits under the sandbox and the reasons they give (docs/sandbox.md,
"Limits").  Each test fails if its limit is not enforced."""
import json
import signal
import subprocess

from sandbox_helpers import BIN, need, run


def run_request(tmp_path, request, timeout=60):
    need(language=request["language"])
    path = tmp_path / "request.json"
    path.write_text(json.dumps(request))
    p = subprocess.run([BIN, "run", "-p", "sandbox", "--json", "--request",
                        str(path)], capture_output=True, text=True,
                       timeout=timeout)
    return json.loads(p.stdout)


def test_file_size_limit_kills_with_reason():
    need(limit="file_bytes")
    res = run("sh", "cd /tmp; exec head -c 100000 /dev/zero > f",
              "--file-limit", "1K")
    assert res["outcome"] == "killed", res
    assert res["reason"] == "file_size_limit"
    assert res["signal"] == signal.SIGXFSZ


# The wall limit of the CPU tests: far past their CPU seconds even when
# the machine's cores are shared by many runnable processes (a second of
# CPU then takes many seconds of wall), so only the CPU limit can end them.
CPU_TEST_WALL = "120s"


def cpu_ms(res):
    return res["usage"]["cpu_user_ms"] + res["usage"]["cpu_sys_ms"]


# The kernel counts RLIMIT_CPU in scheduler ticks, each charged whole to
# the process running when it fires; the cgroup counts nanoseconds.  On a
# quiet machine the two agree within a few ticks; on a loaded one the
# ticks charge the program for time that short-lived processes ran inside
# them, and the program is killed with less CPU than its limit
# (docs/testing.md, "Load").  So the limit's value is checked where the
# program sees it (ulimit), the kill by its signal and reason, and the CPU
# used only against bounds that hold under either count.


def test_cpu_limit_kills_with_reason():
    need(limit="cpu_ms")
    res = run("sh", "ulimit -t; ulimit -Ht; while :; do :; done",
              "--cpu", "1s", "-t", CPU_TEST_WALL, timeout=180)
    assert res["outcome"] == "killed", res
    assert res["reason"] == "cpu_limit"
    assert res["signal"] == signal.SIGXCPU
    # soft: the limit; hard: a second later (the next test)
    assert res["stdout"] == "1\n2\n"
    # it ran until the limit, and was not let run on past it
    assert 500 <= cpu_ms(res) < 1500, res["usage"]


def test_cpu_limit_holds_when_sigxcpu_is_ignored():
    need(limit="cpu_ms")
    res = run("sh", "ulimit -Ht; trap '' XCPU; while :; do :; done",
              "--cpu", "1s", "-t", CPU_TEST_WALL, timeout=180)
    # the hard limit, a second later, is a SIGKILL the program cannot stop
    assert res["outcome"] == "killed", res
    assert res["signal"] == signal.SIGKILL
    assert res["stdout"] == "2\n"
    # past the soft limit (SIGXCPU ignored), ended at the hard one
    assert 1000 <= cpu_ms(res) < 2500, res["usage"]


def test_workspace_bytes_is_a_bounded_tmpfs(tmp_path):
    need(limit="workspace_bytes")
    res = run_request(tmp_path, {
        "language": "sh",
        "code": "df -k /workspace | tail -1; cat data/in.txt; "
                "stat -c '%a %u' data/in.txt; "
                "head -c 2000000 /dev/zero > big; echo rc=$?; "
                "wc -c < big",
        "grant": {"workspace": "rw"},
        "limits": {"workspace_bytes": 1048576},
        "files": [{"path": "data/in.txt", "content": "hello\n",
                   "mode": "0640"}]})
    assert res["outcome"] == "completed", res
    out = res["stdout"].splitlines()
    fs, size = out[0].split()[0], int(out[0].split()[1])
    assert fs == "tmpfs" and size == 1024
    assert out[1] == "hello" and out[2] == "640 0"
    assert out[3] == "rc=1"
    assert int(out[4]) <= 1048576
    assert "No space left on device" in res["stderr"]


def test_workspace_bytes_read_only_grant(tmp_path):
    need(limit="workspace_bytes")
    res = run_request(tmp_path, {
        "language": "sh", "code": "cat in.txt; echo x > new",
        "grant": {"workspace": "ro"},
        "limits": {"workspace_bytes": 65536},
        "files": [{"path": "in.txt", "content": "hi\n"}]})
    assert res["outcome"] == "failed" and res["stdout"] == "hi\n", res
    assert "Read-only file system" in res["stderr"]


def test_inputs_larger_than_workspace_are_refused(tmp_path):
    need(limit="workspace_bytes")
    res = run_request(tmp_path, {
        "language": "sh", "code": "echo RAN",
        "grant": {"workspace": "rw"},
        "limits": {"workspace_bytes": 65536},
        "files": [{"path": "big.bin", "content": "x" * 200000}]})
    assert res["outcome"] == "unavailable", res
    assert res["reason"] == "workspace_no_space"
    assert res["exit_code"] is None and "RAN" not in (res["stdout"] or "")


def test_pids_limit_seen_as_failed_fork_is_plain_failed():
    """The program met the pids limit as EAGAIN and chose its own exit
    status: the outcome is `failed` with that status and no reason
    (docs/sandbox.md, "Limits")."""
    need(limit="pids")
    res = run("sh", "for i in 1 2 3 4 5 6 7 8 9 10 11 12; do sleep 5 & done;"
              " wait", "--pids", "6", "-t", "20s")
    assert res["outcome"] == "failed", res
    assert res["exit_code"] == 2 and res["reason"] is None
    assert "fork" in res["stderr"].lower()
