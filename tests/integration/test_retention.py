"""Retention (docs/workspaces.md, "Retention"; docs/threat-model.md,
"Result reads and retention (T8, S8)"): forgetting a run removes all of
its stored data — run directory (final result, output), artifact store,
stored idempotent result — and keeps its audit records; until retention
removes it, a finished run is read from the disk, whether or not the
daemon's table still holds it, also after a restart."""
import os
import subprocess
import time

from test_api_support import (AIRLOCK_BIN, Daemon, local_config,
                              post_invalid_runs, sh)
from test_durable_support import audit_events

SECRET = "forget-me-0b1d"


def test_forget_removes_all_stored_data_and_keeps_the_audit(tmp_path):
    d = Daemon(tmp_path, local_config()).start()
    try:
        req = sh("mkdir -p out; echo %s > out/s.txt; echo %s" % (SECRET,
                                                                  SECRET),
                 outputs=["out/s.txt"], idempotency_key="k-forget",
                 streaming=True)
        st, _, res = d.run(req)
        assert st == 200 and res["stdout"] == SECRET + "\n", res
        run_id = res["run_id"]
        assert (d.state / "runs" / run_id).is_dir()
        assert (d.state / "artifacts" / run_id).is_dir()

        p = subprocess.run([AIRLOCK_BIN, "--state-dir", str(d.state),
                            "runs", "forget", run_id],
                           capture_output=True, timeout=30)
        assert p.returncode == 0, p.stderr
        assert b"removed 1" in p.stdout, p.stdout
        assert not (d.state / "runs" / run_id).exists()
        assert not (d.state / "artifacts" / run_id).exists()
        # the daemon that ran it answers like for an unknown run
        for path in ("/v1/runs/" + run_id,
                     "/v1/runs/%s/artifacts/out-1" % run_id,
                     "/v1/runs/%s/events" % run_id):
            st, _, body = d.request("GET", path)
            assert st == 404 and SECRET not in str(body), (path, body)
        st, _, listed = d.request("GET", "/v1/runs")
        assert run_id not in [r["run_id"] for r in listed["runs"]]
        # the stored idempotent result went too: the same request runs
        # again instead of answering with the forgotten output
        st, _, again = d.run(req)
        assert st == 200 and again["run_id"] != run_id, again
        # nothing on disk names the secret but the new run's data
        for root, _, files in os.walk(d.state):
            if run_id in root:
                raise AssertionError(root)
        # the audit records stay
        events = audit_events(d, run_id)
        assert "run.started" in events and "run.finished" in events, events
        p = subprocess.run([AIRLOCK_BIN, "--state-dir", str(d.state),
                            "runs", "forget", run_id],
                           capture_output=True, timeout=30)
        assert p.returncode == 125 and b"no stored data" in p.stderr
    finally:
        d.stop()


def test_finished_run_is_read_from_disk_after_restart_and_eviction(
        tmp_path):
    d = Daemon(tmp_path, local_config())
    d.start()
    try:
        st, _, res = d.run(sh("echo %s" % SECRET))
        assert st == 200, res
        run_id = res["run_id"]
    finally:
        d.stop()
    # Restarted with a small table (AIRLOCK_RUN_TABLE_MAX; the daemon
    # says so), then four times as many requests as it holds.
    os.environ["AIRLOCK_RUN_TABLE_MAX"] = "8"
    try:
        d.start()
    finally:
        del os.environ["AIRLOCK_RUN_TABLE_MAX"]
    try:
        assert "run table holds at most 8 runs" in d.log(), d.log()
        post_invalid_runs(d, 32)
        st, _, body = d.request("GET", "/v1/runs/" + run_id)
        assert st == 200 and body["stdout"] == SECRET + "\n", body
        st, _, listed = d.request("GET", "/v1/runs?limit=1000")
        assert run_id not in [r["run_id"] for r in listed["runs"]]
    finally:
        d.stop()


def test_retention_sweep_removes_the_run_directory(tmp_path):
    d = Daemon(tmp_path, local_config(extra={"retention": 1})).start()
    try:
        st, _, res = d.run(sh("echo %s" % SECRET))
        assert st == 200, res
        run_dir = d.state / "runs" / res["run_id"]
        deadline = time.monotonic() + 15
        while run_dir.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not run_dir.exists()
        st, _, body = d.request("GET", "/v1/runs/" + res["run_id"])
        assert st == 404 and SECRET not in str(body), body
    finally:
        d.stop()


def test_forget_waits_for_an_answered_runs_cleanup(tmp_path):
    """A run forgotten right after its answer: its daemon cleans up its
    directory under the run's lock, and `runs forget` waits for it rather
    than removing the tree beneath it (or calling the run live); a run
    with no final result is live and not waited for."""
    import fcntl
    import threading
    d = Daemon(tmp_path, local_config()).start()
    try:
        st, _, res = d.run(sh("echo hi"))
        assert st == 200, res
        run_id = res["run_id"]
    finally:
        d.stop()
    run_dir = d.state / "runs" / run_id
    assert (run_dir / "final.json").is_file()
    held = os.open(run_dir, os.O_RDONLY | os.O_DIRECTORY)
    fcntl.flock(held, fcntl.LOCK_EX)
    # the holder writes a file, then lets go, as the cleanup does
    def release():
        time.sleep(0.3)
        (run_dir / "late.tmp").write_text("x")
        fcntl.flock(held, fcntl.LOCK_UN)
    t = threading.Thread(target=release)
    t.start()
    t0 = time.monotonic()
    p = subprocess.run([AIRLOCK_BIN, "--state-dir", str(d.state),
                        "runs", "forget", run_id],
                       capture_output=True, timeout=30)
    t.join()
    os.close(held)
    assert p.returncode == 0, (p.stdout, p.stderr)
    assert b"removed 1" in p.stdout, p.stdout
    assert time.monotonic() - t0 >= 0.25
    assert not run_dir.exists()
    # no final result: live at once, whoever holds it
    live = d.state / "runs" / "live-run-1"
    live.mkdir(mode=0o700)
    held = os.open(live, os.O_RDONLY | os.O_DIRECTORY)
    fcntl.flock(held, fcntl.LOCK_EX)
    t0 = time.monotonic()
    p = subprocess.run([AIRLOCK_BIN, "--state-dir", str(d.state),
                        "runs", "forget", "live-run-1"],
                       capture_output=True, timeout=30)
    os.close(held)
    assert p.returncode != 0 and b"live 1" in p.stdout, (p.stdout, p.stderr)
    assert time.monotonic() - t0 < 1.5
