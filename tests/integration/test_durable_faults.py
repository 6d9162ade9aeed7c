"""Exactly one launch (docs/durability.md, "Fault points"): a test build of
airlockd (make AL_TEST_BUILD=1) SIGKILLs itself at each boundary of a run
— after persisting the recovery record, after the launch, during the run,
after the result is recorded, before it is acknowledged — and after a real
restart every run has been launched at most once (exactly once past the
launch) and ends with exactly one stored result and one run.finished.

The test build is $AIRLOCK_FAULT_BIN when set, else it is built once here
into build-test/ (make BUILD=build-test AL_TEST_BUILD=1; the binary and
the network module beside it)."""
import os
import subprocess

import pytest

from test_durable_support import (REPO, DurableDaemon,
                                  assert_no_sanitizer_reports, audit_events,
                                  cleanup_state, local_config, read_lines,
                                  run_dir, sh, wait_until)


@pytest.fixture(scope="session")
def fault_bin():
    path = os.environ.get("AIRLOCK_FAULT_BIN")
    if path:
        assert os.access(path, os.X_OK), path
        return path
    # A make of its own: nothing inherited from a make that runs pytest.
    env = {k: v for k, v in os.environ.items()
           if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES")}
    p = subprocess.run(["make", "-C", str(REPO), "-j2", "BUILD=build-test",
                        "AL_TEST_BUILD=1", "build-test/airlock",
                        "build-test/libairlock-net.so"],
                       capture_output=True, timeout=600, env=env)
    assert p.returncode == 0, p.stderr.decode()[-4000:]
    return str(REPO / "build-test" / "airlock")


POINTS = ["after_persist", "after_launch", "during_run", "after_result",
          "before_ack"]


@pytest.mark.parametrize("point", POINTS)
def test_a_kill_at_each_boundary_launches_once_and_stores_one_result(
        tmp_path, fault_bin, point):
    mark = tmp_path / "launches"
    d = DurableDaemon(tmp_path, local_config(), binary=fault_bin)
    req = sh('echo launched >> "$MARK"; sleep 0.6; echo done',
             env={"MARK": str(mark)}, idempotency_key="key-" + point)
    try:
        d.start(env={"AIRLOCK_FAULT": point})
        try:
            d.run(req, timeout=30)
        except (ConnectionError, OSError):
            pass  # the daemon died under the request
        rc = d.wait_dead(timeout=30)
        assert rc == -9, d.all_logs()
        assert "fault point %s" % point in d.all_logs()

        d.start()
        # The same request again: the idempotency key finds the run the
        # crashed daemon admitted; nothing runs a second time.
        st, _, res = d.run(req, timeout=60)
        rid = res["run_id"]
        launches = read_lines(mark)
        if point == "after_persist":
            # Killed before the launch: never ran, reported lost.
            assert launches == []
            assert st == 503
            assert res["outcome"] == "unavailable" and res["reason"] == "lost"
        else:
            assert launches == ["launched"], launches
            assert st == 200 and res["outcome"] == "completed", res
            assert res["stdout"] == "done\n"
        # The key's waiter is answered as the result is stored, just
        # before it is acknowledged in final.json.
        wait_until(lambda: (run_dir(d, rid) / "final.json").exists(),
                   what="the acknowledged result")
        assert audit_events(d, rid) == ["run.started", "run.finished"]
        # Exactly one run directory: one admission, one result.
        assert [p.name for p in (d.state / "runs").iterdir()] == [rid]
        st, _, stored = d.request("GET", "/v1/runs/" + rid)
        assert stored == res

        # And it stays so across one more restart.
        d.kill9()
        d.start()
        st, _, again = d.run(req, timeout=60)
        assert again == res
        assert read_lines(mark) == launches
        assert audit_events(d, rid) == ["run.started", "run.finished"]
        assert_no_sanitizer_reports(d)
    finally:
        d.stop() if d.proc is not None else None
        cleanup_state(d)


def test_a_result_synced_but_not_yet_named_is_found(tmp_path, fault_bin):
    """The supervisor writes its result into the reserve the daemon made
    with the run's records and syncs that file alone; killed before the
    rename names it result.json, the result is still found (settled from
    the reserve), not reported lost."""
    d = DurableDaemon(tmp_path, local_config(), binary=fault_bin)
    try:
        d.start(env={"AIRLOCK_FAULT": "record_unnamed"})
        st, _, res = d.run(sh("echo kept"), timeout=60)
        assert st == 200 and res["outcome"] == "completed", res
        assert res["stdout"] == "kept\n"
        rid = res["run_id"]
        log = (run_dir(d, rid) / "supervisor.log").read_text()
        assert "fault point record_unnamed" in log, log
        assert (run_dir(d, rid) / "result.json").exists()
        assert not (run_dir(d, rid) / ".result.reserve").exists()
        assert audit_events(d, rid) == ["run.started", "run.finished"]
        assert_no_sanitizer_reports(d)
    finally:
        d.stop() if d.proc is not None else None
        cleanup_state(d)


def test_a_kill_during_a_run_without_a_key_is_found_by_its_id(tmp_path,
                                                            fault_bin):
    """Without an idempotency key the caller still has the run id it was
    given: the adopted run answers under it."""
    mark = tmp_path / "launches"
    d = DurableDaemon(tmp_path, local_config(), binary=fault_bin)
    try:
        d.start(env={"AIRLOCK_FAULT": "during_run"})
        st, _, body = d.run(sh('echo launched >> "$MARK"; sleep 1; '
                               'echo done', env={"MARK": str(mark)}),
                            wait=False)
        assert st == 202
        rid = body["run_id"]
        d.wait_dead(timeout=30)
        d.start()
        res = d.wait_finished(rid)
        assert res["outcome"] == "completed" and res["stdout"] == "done\n"
        assert read_lines(mark) == ["launched"]
        wait_until(lambda: audit_events(d, rid) ==
                   ["run.started", "run.finished"], what="the audit")
    finally:
        d.stop() if d.proc is not None else None
        cleanup_state(d)
