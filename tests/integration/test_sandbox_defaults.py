"""The sandbox bounds a run that names no memory or pids limit (512 MiB,
256 processes): each test would complete if the default were removed.
Without a cgroup for the controller (unprivileged) the facts give no such
bound and the tests skip."""
from sandbox_helpers import need, need_default_bound


def test_processes_bounded_without_a_pids_limit(run_json):
    need_default_bound("pids")
    # 400 processes fit on the host, not under the 256 default.  Each is
    # a subshell blocked opening a FIFO: a fork without an exec, so that
    # a slow, loaded machine still reaches the bound well before -t.
    code = ("mkfifo /tmp/p; i=0; while [ $i -lt 400 ]; do "
            "(read x < /tmp/p) & i=$((i+1)); done; echo started-all; wait")
    r, _ = run_json("-t", "20s", "-l", "sh", "-e", code)
    assert r["outcome"] in ("failed", "killed"), r
    assert "started-all" not in r["stdout"]
    assert "fork" in r["stderr"].lower()


def test_memory_bounded_without_a_memory_limit(run_json):
    need_default_bound("memory_bytes")
    # 1 GiB fits on the host (24 GiB), not under the 512 MiB default.
    r, _ = run_json("-t", "20s", "-l", "python", "-e",
                    "x = bytearray(1 << 30); x[::4096] = b'x' * (len(x) // 4096); print('allocated')")
    assert r["outcome"] == "killed", r
    assert r["reason"] == "memory_limit"
    assert "allocated" not in r["stdout"]


def test_explicit_limits_win_over_the_defaults(run_json):
    need(language="python", limit="memory_bytes")
    r, _ = run_json("-t", "20s", "-m", "2G", "-l", "python", "-e",
                    "x = bytearray(1 << 30); x[::4096] = b'x' * (len(x) // 4096); print('allocated')")
    assert r["outcome"] == "completed", r
    assert r["stdout"] == "allocated\n"
