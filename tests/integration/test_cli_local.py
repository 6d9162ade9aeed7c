"""`airlock run` on the local and disabled providers, through the CLI and
the host pipeline: every outcome they can produce, produced for real."""
import base64
import json
import os
import signal
import subprocess
import threading
import time

import pytest

LOCAL = ["-p", "local"]


def output(result, stream):
    if stream in result:
        return result[stream].encode()
    return base64.b64decode(result[stream + "_b64"])


def test_prints_42(airlock):
    p = airlock("run", *LOCAL, "-l", "python", "-e", "print(6*7)")
    assert p.returncode == 0
    assert p.stdout == b"42\n"


def test_completed_result_shape(run_json):
    r, p = run_json(*LOCAL, "-l", "sh", "-e", "echo hi")
    assert r["outcome"] == "completed" and r["exit_code"] == 0
    assert r["signal"] is None and r["reason"] is None
    assert r["stdout"] == "hi\n" and r["stdout_bytes"] == 3
    assert r["provider"]["id"] == "local"
    assert r["provider"]["safety_class"] == "trusted_local"
    assert r["started_at"].endswith("Z") and r["finished_at"].endswith("Z")
    assert r["usage"]["wall_ms"] >= 0
    assert p.returncode == 0


def test_failed_exit_status_and_stderr(run_json, airlock):
    r, p = run_json(*LOCAL, "-l", "sh", "-e", "echo bad >&2; exit 7")
    assert r["outcome"] == "failed" and r["exit_code"] == 7
    assert r["stderr"] == "bad\n"
    assert p.returncode == 7
    p = airlock("run", *LOCAL, "-l", "sh", "-e", "echo bad >&2; exit 7")
    assert p.returncode == 7 and p.stderr == b"bad\n"


def test_killed_by_signal(run_json, airlock):
    r, _ = run_json(*LOCAL, "-l", "sh", "-e", "kill -KILL $$")
    assert r["outcome"] == "killed" and r["signal"] == 9
    assert r["exit_code"] is None and r["reason"] == "signal"
    p = airlock("run", *LOCAL, "-l", "sh", "-e", "kill -KILL $$")
    assert p.returncode == 128 + 9


def test_cpu_limit_is_killed_with_reason(run_json):
    r, _ = run_json(*LOCAL, "--cpu", "1s", "-l", "sh", "-e",
                    "while :; do :; done")
    assert r["outcome"] == "killed"
    assert r["reason"] == "cpu_limit"


def test_file_size_limit_is_killed_with_reason(run_json):
    r, _ = run_json(*LOCAL, "--file-limit", "1K", "-l", "sh", "-e",
                    "exec head -c 100000 /dev/zero > big")
    assert r["outcome"] == "killed"
    assert r["reason"] == "file_size_limit"


def test_timeout_has_no_exit_code(run_json, airlock):
    r, _ = run_json(*LOCAL, "-t", "300ms", "-l", "sh", "-e", "sleep 30")
    assert r["outcome"] == "timed_out" and r["exit_code"] is None
    p = airlock("run", *LOCAL, "-t", "300ms", "-l", "sh", "-e", "sleep 30")
    assert p.returncode == 124
    assert b"timed_out" in p.stderr


def test_term_ignoring_child_and_setsid_grandchild_are_gone(run_json, tmp_path):
    marker = tmp_path / "pids"
    code = ("trap '' TERM; "
            "(trap '' TERM; setsid sh -c 'echo $$ >> %s; sleep 60' &); "
            "echo $$ >> %s; sleep 60" % (marker, marker))
    t0 = time.monotonic()
    r, _ = run_json(*LOCAL, "-t", "500ms", "-l", "sh", "-e", code)
    assert r["outcome"] == "timed_out"
    assert time.monotonic() - t0 < 10
    pids = [int(x) for x in marker.read_text().split()]
    assert len(pids) == 2
    for pid in pids:
        assert not os.path.exists("/proc/%d" % pid) or \
            open("/proc/%d/stat" % pid).read().split()[2] == "Z"


def test_double_forked_grandchild_does_not_outlive_the_program(run_json, tmp_path):
    marker = tmp_path / "pid"
    code = "(sh -c 'echo $$ > %s; exec sleep 60' &) ; sleep 0.3; exit 0" % marker
    r, _ = run_json(*LOCAL, "-l", "sh", "-e", code)
    assert r["outcome"] == "completed"
    pid = int(marker.read_text())
    assert not os.path.exists("/proc/%d" % pid)


def test_stdin_delivered_and_closed_when_none(airlock, tmp_path):
    f = tmp_path / "in.txt"
    f.write_bytes(b"line one\n")
    p = airlock("run", *LOCAL, "--stdin-file", str(f), "-l", "python", "-e",
                "import sys; print(sys.stdin.read().upper(), end='')")
    assert p.stdout == b"LINE ONE\n"
    # No stdin: reading gets EOF at once rather than hanging.
    p = airlock("run", *LOCAL, "-t", "5s", "-l", "sh", "-e",
                "cat; echo eof", timeout=20)
    assert p.returncode == 0 and p.stdout == b"eof\n"


def test_binary_stdin_round_trips(run_json, tmp_path):
    data = bytes(range(256))
    f = tmp_path / "in.bin"
    f.write_bytes(data)
    r, _ = run_json(*LOCAL, "--stdin-file", str(f), "-l", "sh", "-e", "cat")
    assert output(r, "stdout") == data
    assert "stdout_b64" in r and "stdout" not in r


def test_empty_program_completes(run_json):
    r, _ = run_json(*LOCAL, "-l", "python", "-e", "")
    assert r["outcome"] == "completed"
    assert r["stdout"] == "" and r["stderr"] == ""


def test_empty_argument_survives(run_json):
    r, _ = run_json(*LOCAL, "--arg", "a", "--arg", "", "--arg", "b c",
                    "-l", "python", "-e",
                    "import sys, json; print(json.dumps(sys.argv[1:]))")
    assert json.loads(r["stdout"]) == ["a", "", "b c"]


def test_output_cap_keeps_exactly_the_cap(run_json):
    r, _ = run_json(*LOCAL, "--output-limit", "1000", "-l", "sh", "-e",
                    "head -c 500000 /dev/zero | tr '\\0' x; echo done >&2")
    assert r["outcome"] == "completed"
    assert r["stdout_truncated"] is True
    assert r["stdout_bytes"] == 500000
    assert output(r, "stdout").startswith(b"x" * 1000)
    assert r["stderr"] == "done\n"


def test_binary_output_round_trips(run_json):
    r, _ = run_json(*LOCAL, "-l", "python", "-e",
                    "import sys; sys.stdout.buffer.write(bytes(range(256)))")
    assert "stdout" not in r
    assert base64.b64decode(r["stdout_b64"]) == bytes(range(256))


def test_no_host_variable_leaks(run_json):
    r, _ = run_json(*LOCAL, "--env", "MODE=fast", "-l", "sh", "-e", "env",
                    env={"AIRLOCK_TEST_LEAK": "hostvalue"})
    names = {l.split("=", 1)[0] for l in r["stdout"].splitlines()}
    assert "AIRLOCK_TEST_LEAK" not in names
    assert "MODE=fast" in r["stdout"].splitlines()
    assert {"PATH", "HOME", "LANG", "TMPDIR", "AIRLOCK_RUN_ID",
            "AIRLOCK_RUN_TEMP"} <= names
    # the baseline also keeps this process's locale, time zone and
    # terminal (docs/host.md, "The run's environment")
    baseline = {n for n in names if n.startswith("LC_")} | {"TZ", "TERM"}
    assert names <= {"PATH", "HOME", "LANG", "TMPDIR", "AIRLOCK_RUN_ID",
                     "AIRLOCK_RUN_TEMP", "MODE", "PWD", "OLDPWD", "SHLVL",
                     "_"} | baseline


def test_concurrent_runs_have_separate_temp_dirs(run_json):
    code = ('ls -A "$AIRLOCK_RUN_TEMP" | wc -l; echo x > "$AIRLOCK_RUN_TEMP/f"; '
            'sleep 0.3; echo "$AIRLOCK_RUN_TEMP"')
    results = [None] * 8

    def one(i):
        results[i], _ = run_json(*LOCAL, "-l", "sh", "-e", code)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    temps = set()
    for r in results:
        assert r["outcome"] == "completed"
        count, temp = r["stdout"].split()
        assert count == "0"
        temps.add(temp)
        assert not os.path.exists(temp), "the private temp dir is removed"
    assert len(temps) == 8


def test_unsupported_language(run_json, airlock):
    r, p = run_json(*LOCAL, "-l", "cobol", "-e", "x")
    assert r["outcome"] == "unsupported_language"
    assert p.returncode == 125
    assert r["exit_code"] is None and r["permanent"] is True


def test_powershell_absent_is_unsupported(run_json, airlock):
    probe = json.loads(airlock("probe", "-p", "local", "--json").stdout)
    langs = {l["language"] for l in probe["languages"]}
    if "powershell" in langs:
        pytest.skip("pwsh is installed here (the probe reports powershell)")
    r, _ = run_json(*LOCAL, "-l", "powershell", "-e", "Write-Output 1")
    assert r["outcome"] == "unsupported_language"


def test_disabled_provider(run_json):
    r, p = run_json("-p", "disabled", "-l", "sh", "-e", "echo hi")
    assert r["outcome"] == "disabled"
    assert r["stdout"] == "" and p.returncode == 125


def test_invalid_request_names_the_field_not_the_value(run_json, tmp_path):
    f = tmp_path / "req.json"
    f.write_text(json.dumps({"language": "sh", "code": "true",
                             "limits": {"memory_bytes": "SECRETVALUE"}}))
    r, p = run_json(*LOCAL, "--request", str(f))
    assert r["outcome"] == "invalid_request"
    assert r["reason"] == "limits.memory_bytes"
    assert b"SECRETVALUE" not in p.stdout + p.stderr
    assert p.returncode == 125


def test_unenforceable_limit_on_local(run_json):
    r, _ = run_json(*LOCAL, "-m", "64M", "-l", "sh", "-e", "true")
    assert r["outcome"] == "unenforceable_limit"
    assert r["reason"] == "memory_bytes"
    r, _ = run_json(*LOCAL, "--network", "none", "-l", "sh", "-e", "true")
    assert r["outcome"] == "unenforceable_limit"
    assert r["reason"] == "network"


def test_code_never_runs_from_a_path(run_json, tmp_path):
    script = tmp_path / "evil.sh"
    script.write_text("echo RAN_FROM_PATH\n")
    r, _ = run_json(*LOCAL, "-l", "sh", "-e", str(script))
    # The code is the text of the path: sh tries to execute it as a command.
    assert "RAN_FROM_PATH" not in r.get("stdout", "")


def test_cancel_by_signal_is_cancelled_not_timeout(airlock, state_dir):
    import os as _os
    from conftest import BIN
    p = subprocess.Popen([BIN, "--state-dir", state_dir, "run", "--json",
                          "-p", "local", "-l", "sh", "-e", "sleep 30"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(0.5)
    p.send_signal(signal.SIGINT)
    out, _ = p.communicate(timeout=20)
    r = json.loads(out)
    assert r["outcome"] == "cancelled"
    assert r["exit_code"] is None


def test_run_is_audited(airlock):
    airlock("run", *LOCAL, "-l", "sh", "-e", "true")
    tail = airlock("audit", "tail", "--json")
    events = [json.loads(l)["event"] for l in tail.stdout.decode().splitlines()]
    assert events[-2:] == ["run.started", "run.finished"]
    assert airlock("audit", "verify").returncode == 0


def test_help_and_version(airlock):
    assert airlock("--version").stdout.startswith(b"airlock ")
    assert b"usage: airlock run" in airlock("run", "--help").stdout
    assert airlock("frobnicate").returncode == 2
