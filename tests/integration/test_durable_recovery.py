"""Durable runs across a real SIGKILL of airlockd and a real restart on the
same state directory (docs/durability.md): adoption with the run still
streaming, the result of a run that finished while the daemon was down,
a run whose supervisor died too (lost, nothing left running), a forged
identity pointing at an unrelated process (neither adopted nor signalled),
epochs (a superseded daemon cannot interrupt), and the deadline counting
across the restart."""
import json
import os
import signal
import subprocess
import time

import pytest

from test_durable_support import (DurableDaemon, alive, assert_no_sanitizer_reports,
                                  audit_events, cleanup_state, identity,
                                  local_config, proc_state, read_lines,
                                  run_cgroup,
                                  run_dir, sh, starttime, supervisor_log,
                                  wait_until)


@pytest.fixture
def daemon(tmp_path):
    d = DurableDaemon(tmp_path, local_config())
    d.start()
    yield d
    try:
        d.stop() if d.proc is not None else None
    finally:
        cleanup_state(d)
    assert_no_sanitizer_reports(d)


def submit(d, req):
    st, _, body = d.run(req, wait=False)
    assert st == 202, body
    return body["run_id"]


def joined_stdout(events):
    return "".join(data.get("data", "") for ev, data in events
                   if ev == "stdout")


def test_a_live_run_is_adopted_and_keeps_streaming(daemon, tmp_path):
    mark = tmp_path / "launches"
    code = ('echo launched >> "$MARK"; i=0; while [ $i -lt 12 ]; do '
            'echo tick$i; i=$((i+1)); sleep 0.15; done')
    rid = submit(daemon, sh(code, streaming=True, env={"MARK": str(mark)},
                            limits={"wall_ms": 30000}))
    wait_until(lambda: (run_dir(daemon, rid) / "output").exists() and
               (run_dir(daemon, rid) / "output").stat().st_size > 0,
               what="first output")
    sup = identity(daemon, rid)["pid"]
    daemon.kill9()
    # The run does not die with the daemon.
    time.sleep(0.4)
    assert alive(sup)
    daemon.start()
    assert "1 adopted" in daemon.log() and "at epoch 2" in daemon.log()
    st, _, body = daemon.request("GET", "/v1/runs/" + rid)
    assert st == 200
    events = daemon.events(rid)
    # Every line, in order, once: those written before the restart too.
    assert joined_stdout(events) == "".join("tick%d\n" % i
                                            for i in range(12))
    res = events[-1][1]
    assert events[-1][0] == "result" and res["outcome"] == "completed"
    assert res["run_id"] == rid
    assert read_lines(mark) == ["launched"]
    assert audit_events(daemon, rid) == ["run.started", "run.finished"]
    # Listed, finished, with the stored result.
    st, _, lst = daemon.request("GET", "/v1/runs")
    assert [r["state"] for r in lst["runs"] if r["run_id"] == rid] == \
        ["finished"]
    assert not alive(sup)
    assert not run_cgroup(rid, daemon).exists()


def test_a_run_that_finished_while_the_daemon_was_down(daemon, tmp_path):
    mark = tmp_path / "launches"
    rid = submit(daemon, sh('echo launched >> "$MARK"; echo a; sleep 1; '
                            'echo b', env={"MARK": str(mark)}))
    wait_until(lambda: read_lines(mark), what="the launch")
    daemon.kill9()
    # The supervisor records the result on its own.
    wait_until(lambda: (run_dir(daemon, rid) / "result.json").exists(),
               what="the recorded result")
    assert not (run_dir(daemon, rid) / "final.json").exists()
    daemon.start()
    assert "1 finished now" in daemon.log()
    st, _, res = daemon.request("GET", "/v1/runs/" + rid)
    assert st == 200 and res["outcome"] == "completed", res
    assert res["stdout"] == "a\nb\n"
    assert read_lines(mark) == ["launched"]
    assert audit_events(daemon, rid) == ["run.started", "run.finished"]
    # A further restart lists the same stored result and launches nothing.
    daemon.kill9()
    daemon.start()
    assert "1 finished," in daemon.log()
    st, _, again = daemon.request("GET", "/v1/runs/" + rid)
    assert again == res
    assert read_lines(mark) == ["launched"]
    assert audit_events(daemon, rid) == ["run.started", "run.finished"]


def test_a_run_whose_supervisor_died_too_is_lost_and_nothing_is_left(
        daemon, tmp_path):
    pids = tmp_path / "pids"
    code = ('echo $$ >> "$PIDS"; sleep 60 & echo $! >> "$PIDS"; '
            'trap "" TERM; wait')
    rid = submit(daemon, sh(code, env={"PIDS": str(pids)},
                            limits={"wall_ms": 60000}))
    wait_until(lambda: len(read_lines(pids)) == 2, what="the program")
    sup = identity(daemon, rid)["pid"]
    daemon.kill9()
    os.kill(sup, signal.SIGKILL)
    wait_until(lambda: not alive(sup), what="the supervisor's end")
    program = [int(p) for p in read_lines(pids)]
    # The program's tree outlived both (the sleep, at least).
    assert any(alive(p) for p in program)
    daemon.start()
    assert "1 lost" in daemon.log()
    st, _, res = daemon.request("GET", "/v1/runs/" + rid)
    assert st == 200
    assert res["outcome"] == "unavailable" and res["reason"] == "lost"
    assert res["exit_code"] is None and res["signal"] is None
    # Its tree was ended and verified gone before it was reported.
    assert not any(alive(p) for p in program), program
    assert not run_cgroup(rid, daemon).exists()
    assert audit_events(daemon, rid) == ["run.started", "run.finished"]


def test_a_forged_identity_is_neither_adopted_nor_signalled(daemon,
                                                           tmp_path):
    pids = tmp_path / "pids"
    rid = submit(daemon, sh('echo $$ >> "$PIDS"; sleep 60',
                            env={"PIDS": str(pids)},
                            limits={"wall_ms": 60000}))
    wait_until(lambda: read_lines(pids), what="the program")
    sup = identity(daemon, rid)["pid"]
    daemon.kill9()
    os.kill(sup, signal.SIGKILL)
    wait_until(lambda: not alive(sup), what="the supervisor's end")
    # An unrelated process, and a record naming it with its real start
    # time: only the nonce in its argv is missing.
    other = subprocess.Popen(["sleep", "100"])
    try:
        forged = {"pid": other.pid, "starttime": starttime(other.pid)}
        (run_dir(daemon, rid) / "identity.json").write_text(
            json.dumps(forged))
        daemon.start()
        assert "1 lost" in daemon.log() and "1 adopted" not in daemon.log()
        st, _, res = daemon.request("GET", "/v1/runs/" + rid)
        assert res["outcome"] == "unavailable" and res["reason"] == "lost"
        # Not signalled: still running, not stopped.
        time.sleep(0.2)
        assert other.poll() is None
        assert proc_state(other.pid) in ("S", "R")
        program = int(read_lines(pids)[0])
        assert not alive(program)
    finally:
        other.kill()
        other.wait()


def test_tampered_records_are_lost_and_never_trusted(daemon, tmp_path):
    pids = tmp_path / "pids"
    rid = submit(daemon, sh('echo $$ >> "$PIDS"; sleep 60',
                            env={"PIDS": str(pids)},
                            limits={"wall_ms": 60000}))
    wait_until(lambda: read_lines(pids), what="the program")
    sup = identity(daemon, rid)["pid"]
    daemon.kill9()
    (run_dir(daemon, rid) / "recovery.json").write_text('{"version": 1}')
    daemon.start()
    assert "1 unreadable" in daemon.log()
    # Whatever the run left is ended; the run is not listed to anyone.
    assert not alive(sup) and not alive(int(read_lines(pids)[0]))
    st, _, body = daemon.request("GET", "/v1/runs/" + rid)
    assert st == 404
    final = json.loads((run_dir(daemon, rid) / "final.json").read_text())
    assert final["outcome"] == "unavailable" and final["reason"] == "lost"


def test_a_superseded_daemon_cannot_interrupt(tmp_path):
    a = DurableDaemon(tmp_path, local_config(), name="a")
    b = None
    try:
        a.start()
        code = 'i=0; while [ $i -lt 15 ]; do echo t$i; i=$((i+1)); ' \
               'sleep 0.2; done'
        rid = submit(a, sh(code, limits={"wall_ms": 30000}))
        wait_until(lambda: (run_dir(a, rid) / "identity.json").exists(),
                   what="the launch")
        sup = identity(a, rid)["pid"]
        # A hangs; B starts on the same state and adopts the run.
        a.signal(signal.SIGSTOP)
        b = DurableDaemon(tmp_path, local_config(), name="b")
        b.state = a.state
        b.config_path = a.config_path
        b.start()
        assert "1 adopted" in b.log() and "at epoch 2" in b.log()
        a.signal(signal.SIGCONT)
        tok = a.token
        st, _, body = a.request("POST", "/v1/runs/%s/interrupt" % rid,
                                token=tok)
        assert st == 409 and body["error"] == "superseded", body
        st, _, body = a.request("POST", "/v1/runs/%s/inbox" % rid,
                                {"id": "e1", "event": {}}, token=tok)
        assert st == 409 and body["error"] == "superseded", body
        # The supervisor refuses a lower epoch's request on its own too.
        (run_dir(a, rid) / "control.json").write_text(
            json.dumps({"epoch": 1, "action": "interrupt"}))
        os.kill(sup, signal.SIGUSR1)
        wait_until(lambda: "lower epoch" in supervisor_log(a, rid),
                   what="the refusal")
        res = b.wait_finished(rid, timeout=30)
        assert res["outcome"] == "completed", res
        assert res["stdout"].count("\n") == 15
    finally:
        a.kill9() if a.proc is not None else None
        if b is not None:
            b.stop()
        cleanup_state(a)


def test_a_recoverer_with_a_lower_epoch_is_refused(daemon):
    rid = submit(daemon, sh('sleep 1.5; echo done',
                            limits={"wall_ms": 30000}))
    wait_until(lambda: (run_dir(daemon, rid) / "identity.json").exists(),
               what="the launch")
    daemon.kill9()
    # The run's lease names an epoch newer than any this state has given.
    (run_dir(daemon, rid) / "lease").write_text("999\n")
    daemon.start()
    assert "1 owned by a newer epoch" in daemon.log()
    st, _, body = daemon.request("POST", "/v1/runs/%s/interrupt" % rid)
    assert st == 409 and body["error"] == "superseded", body
    res = daemon.wait_finished(rid)
    assert res["outcome"] == "completed" and res["stdout"] == "done\n"
    assert (run_dir(daemon, rid) / "lease").read_text() == "999\n"


def test_the_deadline_keeps_counting_across_a_restart(daemon):
    t0 = time.monotonic()
    rid = submit(daemon, sh("echo go; sleep 30", limits={"wall_ms": 2500}))
    wait_until(lambda: (run_dir(daemon, rid) / "identity.json").exists(),
               what="the launch")
    time.sleep(0.5)
    daemon.kill9()
    time.sleep(1.0)
    daemon.start()
    res = daemon.wait_finished(rid, timeout=30)
    elapsed = time.monotonic() - t0
    assert res["outcome"] == "timed_out" and res["exit_code"] is None, res
    # 2.5 s from the start, not from the restart.
    assert res["usage"]["wall_ms"] < 4000, res
    assert elapsed < 8, elapsed


def test_an_interrupt_reaches_an_adopted_run(daemon):
    rid = submit(daemon, sh("echo begun; sleep 60",
                            limits={"wall_ms": 60000}))
    wait_until(lambda: (run_dir(daemon, rid) / "identity.json").exists(),
               what="the launch")
    daemon.kill9()
    daemon.start()
    st, _, body = daemon.request("POST", "/v1/runs/%s/interrupt" % rid)
    assert st == 202, body
    res = daemon.wait_finished(rid)
    assert res["outcome"] == "interrupted", res


def test_one_record_before_the_launch_and_no_request_once_finished(daemon):
    """The run's one record carries the request, the provider and the
    epoch (no request/provider/facts/lease/lock files); once finished it
    keeps the recovery fields but not the request (code, stdin)."""
    rid = submit(daemon, sh('sleep 0.5; echo secret-ish-code-output',
                            limits={"wall_ms": 30000}))
    d = run_dir(daemon, rid)
    wait_until(lambda: (d / "identity.json").exists(), what="the launch")
    rec = json.loads((d / "recovery.json").read_text())
    assert rec["version"] == 2 and rec["run_id"] == rid
    assert json.loads(rec["request"])["code"] == \
        'sleep 0.5; echo secret-ish-code-output'
    assert rec["provider"] == "local" and rec["epoch"] >= 1
    for gone in ("request.json", "provider.json", "facts.json", "lease",
                 "lock"):
        assert not (d / gone).exists(), gone
    res = daemon.wait_finished(rid)
    assert res["stdout"] == "secret-ish-code-output\n"
    wait_until(lambda: json.loads((d / "recovery.json").read_text())
               .get("request", "x") is None, what="the request dropped")
    rec2 = json.loads((d / "recovery.json").read_text())
    assert rec2["nonce"] == rec["nonce"] and rec2["tenant"] == rec["tenant"]
    assert "secret-ish" not in (d / "recovery.json").read_text()
    assert not any(p.name.startswith(".") for p in d.iterdir())
