"""Interrupt and stop of durable runs (docs/durability.md): a stop
(`POST /v1/runs/{id}/interrupt?wait=true`) answers only once the run's
whole tree is verified gone, escalating past a supervisor that does not
respond; the outcome is `interrupted`."""
import copy
import os
import signal
import time

import pytest

from test_durable_support import (DurableDaemon, alive,
                                  assert_no_sanitizer_reports, cleanup_state,
                                  files_holding, identity, local_config,
                                  read_lines, run_cgroup, run_dir, sh,
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


# A tree that ignores TERM: the shell and a child of its own.
TERM_DEAF = ('trap "" TERM; echo $$ >> "$PIDS"; '
             '(trap "" TERM; echo $$ >> "$PIDS"; sleep 60) & '
             'sleep 60; wait')


def start_deaf(d, pids):
    st, _, body = d.run(sh(TERM_DEAF, env={"PIDS": str(pids)},
                           limits={"wall_ms": 120000}), wait=False)
    assert st == 202, body
    wait_until(lambda: len(read_lines(pids)) == 2, what="the tree")
    # The tree lives in the run's own cgroup (so "gone" below means it).
    assert run_cgroup(body["run_id"], d).exists()
    return body["run_id"]


def test_stop_answers_once_the_tree_is_gone(daemon, tmp_path):
    pids = tmp_path / "pids"
    rid = start_deaf(daemon, pids)
    t0 = time.monotonic()
    st, _, res = daemon.request("POST",
                                "/v1/runs/%s/interrupt?wait=true" % rid)
    assert st == 200, res
    assert res["outcome"] == "interrupted" and res["exit_code"] is None
    # TERM was ignored: KILL after the grace ended it.
    assert res["signal"] == signal.SIGKILL
    assert time.monotonic() - t0 < 10
    tree = [int(p) for p in read_lines(pids)]
    assert not any(alive(p) for p in tree), tree
    assert not run_cgroup(rid, daemon).exists()
    st, _, body = daemon.request("POST", "/v1/runs/%s/interrupt" % rid)
    assert st == 409 and body["error"] == "run_finished"


def test_stop_escalates_past_a_supervisor_that_does_not_answer(daemon,
                                                               tmp_path):
    pids = tmp_path / "pids"
    rid = start_deaf(daemon, pids)
    sup = identity(daemon, rid)["pid"]
    os.kill(sup, signal.SIGSTOP)
    t0 = time.monotonic()
    st, _, res = daemon.request("POST",
                                "/v1/runs/%s/interrupt?wait=true" % rid,
                                timeout=60)
    assert st == 200, res
    assert res["outcome"] == "interrupted" and res["signal"] == 9, res
    assert time.monotonic() - t0 < 20
    assert not alive(sup)
    assert not any(alive(int(p)) for p in read_lines(pids))
    assert not run_cgroup(rid, daemon).exists()


def test_interrupt_is_term_then_kill_and_answers_at_once(daemon, tmp_path):
    pids = tmp_path / "pids"
    rid = start_deaf(daemon, pids)
    st, _, body = daemon.request("POST", "/v1/runs/%s/interrupt" % rid)
    assert st == 202 and body["state"] == "interrupting"
    res = daemon.wait_finished(rid)
    assert res["outcome"] == "interrupted" and res["signal"] == 9
    assert not any(alive(int(p)) for p in read_lines(pids))


def test_bad_wait_on_interrupt_is_400(daemon, tmp_path):
    st, _, body = daemon.run(sh("sleep 5"), wait=False)
    rid = body["run_id"]
    st, _, body = daemon.request("POST",
                                 "/v1/runs/%s/interrupt?wait=maybe" % rid)
    assert st == 400 and body["error"] == "invalid_query"
    st, _, res = daemon.request("POST",
                                "/v1/runs/%s/interrupt?wait=1" % rid)
    assert st == 200 and res["outcome"] == "interrupted"


def test_the_fault_switch_is_inert_outside_test_builds(tmp_path):
    """AIRLOCK_FAULT is honoured only by builds made with AL_TEST_BUILD=1
    (the binary under test here is not one)."""
    d = DurableDaemon(tmp_path, local_config())
    try:
        d.start(env={"AIRLOCK_FAULT": "after_launch"})
        st, _, res = d.run(sh("echo fine"))
        assert st == 200 and res["stdout"] == "fine\n", res
        assert d.proc.poll() is None
        assert (run_dir(d, res["run_id"]) / "final.json").exists()
    finally:
        d.stop()
        cleanup_state(d)


def test_secrets_reach_the_program_and_never_the_disk(tmp_path):
    """Named secrets go to the supervisor through an in-memory file: not
    in its argv, not in its environment, not in the run directory."""
    store = tmp_path / "secrets"
    store.mkdir(mode=0o700)
    value = "s3cr3t-value-0123456789"
    (store / "API_TOKEN").write_text(value + "\n")
    (store / "API_TOKEN").chmod(0o600)
    # A copy: local_config shares one grant object between tests.
    cfg = copy.deepcopy(local_config())
    cfg["secrets"] = {"dir": str(store)}
    cfg["tenants"]["default"]["grant"]["secrets"] = ["API_TOKEN"]
    d = DurableDaemon(tmp_path, cfg)
    try:
        d.start()
        req = sh('echo "len=${#API_TOKEN}"; sleep 0.5')
        req["grant"]["secrets"] = ["API_TOKEN"]
        st, _, body = d.run(req, wait=False)
        rid = body["run_id"]
        wait_until(lambda: (run_dir(d, rid) / "identity.json").exists(),
                   what="the launch")
        sup = identity(d, rid)["pid"]
        with open("/proc/%d/cmdline" % sup, "rb") as f:
            assert value.encode() not in f.read()
        with open("/proc/%d/environ" % sup, "rb") as f:
            assert value.encode() not in f.read()
        res = d.wait_finished(rid)
        assert res["stdout"] == "len=%d\n" % len(value), res
        d.stop()
        assert files_holding(run_dir(d, rid), value.encode()) == []
    finally:
        d.stop()
        cleanup_state(d)
    assert_no_sanitizer_reports(d)
