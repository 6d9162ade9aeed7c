"""Every audited start has exactly one end (issue 14, item 3;
docs/durability.md, "Recovery"): a daemon killed between auditing a run's
run.started and persisting the run left a start without an end (about 2
per kill -9 under 2 clients).  The next daemon's recovery closes each such
start with one run.finished (`unavailable` / `lost`, detail
`not_persisted`), so `airlock audit` never shows a run without an end, and
`airlock audit verify` still passes.

The exact window is reached with the test build's fault point
`before_persist` (test_durable_faults.py builds it); a kill -9 under a
burst of 2 clients checks the same invariant with the ordinary binary."""
import subprocess
import threading
import time

from test_durable_faults import fault_bin  # noqa: F401 (a fixture)
from test_durable_support import (AIRLOCK_BIN, DurableDaemon, audit_records,
                                  cleanup_state, local_config, sh, wait_until)


def ends_by_run(d):
    """{run_id: [run.finished records]} for every run with a start."""
    recs = audit_records(d)
    out = {r["run_id"]: [] for r in recs if r["event"] == "run.started"}
    for r in recs:
        if r["event"] == "run.finished" and r["run_id"] in out:
            out[r["run_id"]].append(r)
    return out


def verify(d):
    p = subprocess.run([AIRLOCK_BIN, "--state-dir", str(d.state), "audit",
                        "verify"], capture_output=True, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr


def test_a_start_audited_before_a_kill_gets_one_lost_end(tmp_path,
                                                         fault_bin):  # noqa
    d = DurableDaemon(tmp_path, local_config(), binary=fault_bin)
    try:
        d.start(env={"AIRLOCK_FAULT": "before_persist"})
        try:
            d.run(sh("echo never"), timeout=30)
        except (ConnectionError, OSError):
            pass  # the daemon died under the request
        assert d.wait_dead(timeout=30) == -9, d.all_logs()
        assert "fault point before_persist" in d.all_logs()
        # The start is audited, the run never persisted: no end yet.
        ends = ends_by_run(d)
        assert len(ends) == 1 and list(ends.values()) == [[]], ends
        (rid,) = ends
        assert not (d.state / "runs" / rid).exists()
        # A search mark that does not name a record of this trail (a
        # replaced database, a stale file) is ignored: the search starts
        # at the beginning and finds the start.
        (d.state / "audit.mark").write_text("2 " + "0" * 64)

        d.start()
        ends = ends_by_run(d)
        assert len(ends[rid]) == 1, ends
        end = ends[rid][0]
        assert end["outcome"] == "unavailable" and end["reason"] == "lost"
        assert end["detail"] == "not_persisted"
        start = [r for r in audit_records(d)
                 if r["event"] == "run.started" and r["run_id"] == rid][0]
        for k in ("tenant", "principal", "language", "code_sha256",
                  "provider"):
            assert end.get(k) == start.get(k), k
        assert "closed 1 audited run(s)" in d.log()
        verify(d)

        # The next search begins past what this one closed.
        seq, _ = (d.state / "audit.mark").read_text().split()
        assert int(seq) >= 2

        # Closed once: another restart adds nothing.
        d.kill9()
        d.start()
        assert [len(v) for v in ends_by_run(d).values()] == [1]
        verify(d)
    finally:
        d.stop() if d.proc is not None else None
        cleanup_state(d)


def test_kill9_under_two_clients_leaves_no_start_without_one_end(tmp_path):
    d = DurableDaemon(tmp_path, local_config(concurrency=8))
    stop = threading.Event()
    accepted = []

    def client():
        while not stop.is_set():
            try:
                st, _, body = d.run(sh("echo hi"), wait=False, timeout=10)
            except (ConnectionError, OSError):
                return
            if st == 202:
                accepted.append(body["run_id"])

    try:
        d.start()
        threads = [threading.Thread(target=client) for _ in range(2)]
        for t in threads:
            t.start()
        wait_until(lambda: len(accepted) >= 30, timeout=60,
                   what="runs accepted")
        d.kill9()
        stop.set()
        for t in threads:
            t.join(timeout=30)
        d.start()
        # Adopted runs end by themselves; every start then has one end.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            ends = ends_by_run(d)
            if all(len(v) >= 1 for v in ends.values()):
                break
            time.sleep(0.1)
        ends = ends_by_run(d)
        assert ends and all(len(v) == 1 for v in ends.values()), \
            {k: len(v) for k, v in ends.items() if len(v) != 1}
        # Every run handed out is among them.
        assert set(accepted) <= set(ends)
        verify(d)
    finally:
        stop.set()
        d.stop() if d.proc is not None else None
        cleanup_state(d)
