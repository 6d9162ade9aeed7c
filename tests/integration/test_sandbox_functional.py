"""The local provider's functional cases, under the sandbox."""
import base64
import concurrent.futures
import ctypes
import json
import signal
import subprocess

from sandbox_helpers import BIN, PROVIDER, need, run, session_config


def test_stdin(tmp_path):
    f = tmp_path / "in"
    f.write_bytes(b"hello\n")
    res = run("sh", "cat", "--stdin-file", str(f))
    assert res["outcome"] == "completed" and res["stdout"] == "hello\n"


def test_empty_code_and_empty_arg():
    assert run("sh", "")["outcome"] == "completed"
    res = run("python", "import sys; print(repr(sys.argv[1:]))", "--arg", "")
    assert res["stdout"] == "['']\n"


def test_exit_code_and_stderr():
    res = run("sh", "echo oops >&2; exit 7")
    assert res["outcome"] == "failed" and res["exit_code"] == 7
    assert res["stderr"] == "oops\n"


def test_output_cap():
    res = run("python", "print('x' * 100000)", "--output-limit", "1000")
    assert res["stdout_truncated"] and res["stdout_bytes"] == 100001
    assert len(res["stdout"]) <= 1000 + 200


def test_binary_output():
    res = run("python", "import sys; sys.stdout.buffer.write(bytes(range(256)))")
    assert base64.b64decode(res["stdout_b64"]) == bytes(range(256))


def test_no_host_env(monkeypatch):
    monkeypatch.setenv("AIRLOCK_LEAK_CHECK", "1")
    res = run("sh", "env", "--env", "MODE=fast")
    names = {l.split("=", 1)[0] for l in res["stdout"].splitlines()}
    assert "AIRLOCK_LEAK_CHECK" not in names and "MODE" in names
    assert {"PATH", "HOME", "LANG", "TMPDIR", "AIRLOCK_RUN_ID"} <= names
    assert "HOME=/workspace" in res["stdout"]


def test_concurrent_runs_have_separate_tmp():
    code = "echo $$ > /tmp/me; sleep 0.5; ls /tmp; id -u"
    with concurrent.futures.ThreadPoolExecutor(4) as ex:
        results = list(ex.map(lambda _: run("sh", code), range(4)))
    for r in results:
        assert r["outcome"] == "completed"
        assert r["stdout"].split()[0] == "me"


def test_ignored_signals_do_not_reach_the_program():
    """Signals its caller ignores are at their default in the program
    (src/sandbox/launch.c resets those the kernel's masks name)."""
    need(language="sh")

    def ignore():
        for s in (signal.SIGUSR1, signal.SIGUSR2, signal.SIGHUP,
                  signal.SIGPIPE, signal.SIGRTMIN + 3):
            signal.signal(s, signal.SIG_IGN)
        # glibc's own (32, 33): its sigaction refuses them, the kernel's
        # does not
        libc = ctypes.CDLL(None, use_errno=True)
        ign = (ctypes.c_ulong * 4)(1, 0, 0, 0)  # SIG_IGN, flags, -, mask
        for s in (32, 33):
            libc.syscall(13, s, ign, None, 8)  # rt_sigaction

    cmd = [BIN, "--config", session_config(), "run", "-p", PROVIDER,
           "-l", "sh", "-e", "grep '^SigIgn' /proc/self/status", "--json"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60,
                       preexec_fn=ignore)
    res = json.loads(p.stdout)
    assert res["outcome"] == "completed", p.stderr
    assert res["stdout"].splitlines()[0] == "SigIgn:\t0000000000000000"
