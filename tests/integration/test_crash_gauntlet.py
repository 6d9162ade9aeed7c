"""The crash gauntlet (docs/testing.md, "Crash gauntlet"): airlockd is
SIGKILLed under a burst of runs from two clients — at moments drawn from a
seeded random generator, and at each injected fault point of a run's life
(the AL_TEST_BUILD binary, docs/durability.md "Fault points") — and
restarted on the same state directory each time.  Whenever the kill lands,
afterwards:

- every run the API accepted (answered with a run id) has exactly one
  terminal outcome, readable under its id;
- every run the audit trail saw start has exactly one run.started and
  exactly one run.finished (none left without an end, none doubled);
- no run's program was launched twice;
- the audit chain verifies (`airlock audit verify`).

The checks are invariants: they must hold for any moment of the kill, so
the moments only change which paths are exercised, never the verdict."""
import http.client
import os
import random
import subprocess
import threading
import time

import pytest

from test_durable_faults import POINTS, fault_bin  # noqa: F401 (fixture)
from test_durable_support import (AIRLOCK_BIN, DurableDaemon,
                                  assert_no_sanitizer_reports, audit_records,
                                  cleanup_state, local_config, sh, wait_until)

KILLS = 5
ROUNDS = 3
SEED = 14


class Clients:
    """Two client threads posting runs until told to stop or the daemon
    goes away.  Each request carries a unique token that its program
    appends to MARK, so launches can be counted per request."""

    def __init__(self, d, mark, prefix):
        self.d, self.mark, self.prefix = d, mark, prefix
        self.accepted = {}  # run_id -> token
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.n = 0
        self.errors = []
        self.threads = [threading.Thread(target=self._loop, args=(i,))
                        for i in range(2)]

    def _request(self, token, i):
        # A mix: short runs, one that outlives the kill, one that fails.
        kind = i % 3
        body = {0: 'echo "%s" >> "$MARK"; echo ok' % token,
                1: 'echo "%s" >> "$MARK"; sleep 0.4; echo ok' % token,
                2: 'echo "%s" >> "$MARK"; exit 3' % token}[kind]
        return sh(body, env={"MARK": str(self.mark)},
                  limits={"wall_ms": 20000})

    def _loop(self, who):
        try:
            self._posts(who)
        except Exception as e:  # reported by join()
            self.errors.append(repr(e))

    def _posts(self, who):
        i = 0
        while not self.stop.is_set():
            with self.lock:
                self.n += 1
                token = "%s-%d-%d" % (self.prefix, who, self.n)
            try:
                st, _, body = self.d.run(self._request(token, i),
                                         wait=(i % 4 == 0), timeout=30)
            except (ConnectionError, OSError, http.client.HTTPException):
                # The daemon died under the request (after its headers
                # and before its body, too: IncompleteRead).
                return
            i += 1
            if isinstance(body, dict) and body.get("run_id"):
                with self.lock:
                    self.accepted[body["run_id"]] = token
            elif st not in (429, 503):
                raise AssertionError("unexpected answer %s %r" % (st, body))

    def start(self):
        for t in self.threads:
            t.start()

    def join(self):
        self.stop.set()
        for t in self.threads:
            t.join(timeout=60)
            assert not t.is_alive(), "a client hung"
        assert not self.errors, self.errors


def check_invariants(d, accepted, mark):
    """The gauntlet's verdict, on a running daemon after the last
    restart.  Every check runs; the failures are reported together."""
    failures = []
    # Every accepted run ends under its id.
    for rid in accepted:
        res = d.wait_finished(rid, timeout=60)
        if not res.get("outcome"):
            failures.append("accepted run %s: no outcome: %r" % (rid, res))

    # The audit trail: one start and one finish per run it saw start.
    def by_run():
        seen = {}
        for r in audit_records(d):
            if r.get("run_id") and r.get("event") in ("run.started",
                                                       "run.finished"):
                seen.setdefault(r["run_id"], []).append(r["event"])
        return seen
    # run.finished of a run recovered as lost may trail its GET answer.
    try:
        wait_until(lambda: all(ev.count("run.finished") >= 1
                               for ev in by_run().values()),
                   timeout=30, what="a run.finished for every start")
    except AssertionError:
        pass  # reported precisely below
    seen = by_run()
    bad = {rid: ev for rid, ev in seen.items()
           if ev.count("run.started") != 1 or ev.count("run.finished") != 1}
    if bad:
        failures.append("runs without exactly one start and one finish: "
                        "%r" % bad)
    unaudited = sorted(rid for rid in accepted if rid not in seen)
    if unaudited:
        failures.append("accepted runs never audited: %r" % unaudited)
    # No program launched twice.
    lines = mark.read_text().splitlines() if mark.exists() else []
    doubled = sorted({t for t in lines if lines.count(t) > 1})
    if doubled:
        failures.append("launched more than once: %r" % doubled)
    # The audit chain verifies.
    p = subprocess.run([AIRLOCK_BIN, "--state-dir", str(d.state), "audit",
                        "verify"], capture_output=True, timeout=60)
    if p.returncode != 0:
        failures.append("audit verify: " + p.stdout.decode() +
                        p.stderr.decode())
    print("gauntlet: %d runs accepted, %d audited, %d launches, "
          "%d problems" % (len(accepted), len(seen), len(lines),
                           len(failures)))
    assert not failures, "\n".join(failures)


def test_kill9_at_random_moments_under_a_burst(tmp_path):
    rng = random.Random(SEED)
    mark = tmp_path / "launches"
    d = DurableDaemon(tmp_path, local_config(concurrency=4))
    accepted = {}
    try:
        for k in range(KILLS):
            d.start()
            c = Clients(d, mark, "k%d" % k)
            c.start()
            time.sleep(rng.uniform(0.2, 1.5))
            d.kill9()
            c.join()
            accepted.update(c.accepted)
        d.start()
        assert accepted, "no run was accepted before the kills"
        check_invariants(d, accepted, mark)
        assert_no_sanitizer_reports(d)
    finally:
        d.stop() if d.proc is not None else None
        cleanup_state(d)


@pytest.mark.parametrize("point", POINTS)
def test_kill_at_a_fault_point_under_a_burst(tmp_path, fault_bin, point):  # noqa: F811
    """ROUNDS times: the test build kills itself at the point (the first
    run to reach it) while two clients post, with the previous crash's
    runs being recovered; then a clean start."""
    mark = tmp_path / "launches"
    d = DurableDaemon(tmp_path, local_config(concurrency=4),
                      binary=fault_bin)
    accepted = {}
    try:
        for k in range(ROUNDS):
            # Recovering the last round's runs may reach the point
            # before the daemon listens: that is a kill too.
            d.port = None
            d.start(expect_ok=False, env={"AIRLOCK_FAULT": point})
            c = Clients(d, mark, "%s%d" % (point, k))
            if d.port is not None and d.proc.poll() is None:
                c.start()
            rc = d.wait_dead(timeout=60)
            if c.threads[0].ident is not None:
                c.join()
            accepted.update(c.accepted)
            assert rc == -9, d.all_logs()
            assert "fault point %s" % point in d.all_logs()
        d.start()
        check_invariants(d, accepted, mark)
        assert_no_sanitizer_reports(d)
    finally:
        d.stop() if d.proc is not None else None
        cleanup_state(d)
