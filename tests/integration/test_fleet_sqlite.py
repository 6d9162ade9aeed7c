"""Several airlockd nodes of ONE host on a shared SQLite store
(docs/scale-out.md, "One host: SQLite"): the core fleet checks of
test_fleet.py against `"store": "sqlite:///…"`.  Every run appends its
token to a marker file, so "executed once" is counted from what actually
ran; every accepted run's one outcome is counted in the store and in the
fleet's audit chain, read straight from the database file."""
import collections
import json
import os
import signal
import sqlite3
import subprocess
import threading
import time
import uuid

import pytest

from fleet_support import TOKEN2, Node, fleet_config, start_nodes, wait_until
from test_fleet import (INBOX_READER, adopted_run_scenario, fwd_header,
                        rfc3339, solo_nodes)
from test_api_support import AIRLOCK_BIN, local_config, sh
from test_durable_support import DurableDaemon, cleanup_state


class SqliteStore:
    """The fleet's database file; the nodes create it."""

    def __init__(self, path):
        self.path = path
        self.url = "sqlite://" + str(path)

    def query(self, sql, args=()):
        c = sqlite3.connect(str(self.path), timeout=30)
        try:
            return c.execute(sql, args).fetchall()
        finally:
            c.close()


@pytest.fixture
def store(tmp_path):
    return SqliteStore(tmp_path / "fleetdb" / "fleet.db")


@pytest.fixture
def fleet(tmp_path, store, request):
    # A long lease, so a node slowed by a loaded machine is not taken for
    # dead; the tests that kill a node ask for a short one.
    kw = {"lease_ms": 10000}
    kw.update(getattr(request, "param", {}))
    nodes = start_nodes(tmp_path, store, n=3, **kw)
    yield nodes
    for n in nodes:
        if n.proc is not None:
            n.stop()
        cleanup_state(n)


def marker_code(marker, token, extra=""):
    return "%secho %s >> %s" % (extra, token, marker)


def submit_all(nodes, bodies):
    """POSTs each body (wait=false) to the nodes round robin from a few
    threads: {index: (status, answer)}."""
    out = {}
    lock = threading.Lock()
    todo = list(enumerate(bodies))

    def worker():
        while True:
            with lock:
                if not todo:
                    return
                i, body = todo.pop()
            try:
                st, _, b = nodes[i % len(nodes)].request(
                    "POST", "/v1/runs?wait=false", body, timeout=60)
            except OSError as e:  # a killed node
                st, b = None, str(e)
            with lock:
                out[i] = (st, b)

    threads = [threading.Thread(target=worker) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    return out


def states(store, ids):
    rows = store.query("SELECT id, state, node, outcome FROM runs WHERE id "
                       "IN (%s)" % ",".join("?" * len(ids)), list(ids))
    return {r[0]: r[1:] for r in rows}


def all_finished(store, ids):
    s = states(store, ids)
    return len(s) == len(ids) and all(v[0] == "finished"
                                      for v in s.values())


def audit_counts(store, event):
    c = collections.Counter()
    for (rec,) in store.query("SELECT record FROM audit"):
        r = json.loads(rec)
        if r["event"] == event:
            c[r["run_id"]] += 1
    return c


def adoptions(store):
    """The run.adopted records, in order: who took which run from whom."""
    out = []
    for (rec,) in store.query("SELECT record FROM audit"):
        r = json.loads(rec)
        if r["event"] == "run.adopted":
            out.append((r["run_id"][-8:], r["from"], r["node"]))
    return out


def verify_chain(store):
    out = subprocess.run([AIRLOCK_BIN, "audit", "verify", "--store",
                          store.url], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert "chain intact" in out.stdout
    return out.stdout


def assert_once(store, ids):
    finished = audit_counts(store, "run.finished")
    queued = audit_counts(store, "run.queued")
    for i in ids:
        assert finished[i] == 1, (i, finished[i])
        assert queued[i] == 1, (i, queued[i])


def test_runs_once_spread_and_read_anywhere(fleet, store, tmp_path):
    marker = tmp_path / "marker"
    bodies = [sh(marker_code(marker, "t%d" % i, "sleep 0.05; "))
              for i in range(60)]
    answers = submit_all(fleet, bodies)
    assert all(st == 202 for st, _ in answers.values()), answers
    ids = [b["run_id"] for _, b in answers.values()]
    assert len(set(ids)) == 60
    assert wait_until(lambda: all_finished(store, ids), 60, 0.2)
    s = states(store, ids)
    assert all(v[2] == "completed" for v in s.values()), s
    # Spread: more than one node claimed runs.
    assert len({v[1] for v in s.values()}) >= 2
    lines = marker.read_text().split()
    assert sorted(lines) == sorted("t%d" % i for i in range(60))
    assert_once(store, ids)
    # Chained as they commit: nothing waits to be chained.
    assert "%d records" % (2 * 60) in verify_chain(store)
    files = {p.name for p in store.path.parent.iterdir()}
    assert files <= {"fleet.db", "fleet.db-wal", "fleet.db-shm"}, files
    assert oct(store.path.stat().st_mode & 0o777) == "0o600"
    assert store.query("SELECT version FROM schema_migrations ORDER BY "
                       "version") == [(1,), (2,), (3,)]

    # Read anywhere: a run with output, read from a node that did not
    # run it, its events streamed there and resumed on a third.
    st, _, b = fleet[0].request("POST", "/v1/runs?wait=false",
                                sh("echo one; sleep 0.2; echo two",
                                   streaming=True))
    assert st == 202
    rid = b["run_id"]
    assert wait_until(lambda: all_finished(store, [rid]), 30, 0.1)
    ran_on = states(store, [rid])[rid][1]
    others = [n for n in fleet if "node%d" % fleet.index(n) != ran_on]
    st, _, res = others[0].request("GET", "/v1/runs/" + rid)
    assert st == 200 and res["stdout"] == "one\ntwo\n"
    st, _, text = others[0].request("GET", "/v1/runs/%s/events" % rid)
    assert st == 200
    assert text.count("event: stdout") >= 1 and "event: result" in text
    first_id = [ln for ln in text.splitlines() if ln.startswith("id: ")][0]
    st, _, rest = others[1].request("GET", "/v1/runs/%s/events" % rid,
                                    headers={"Last-Event-ID":
                                             first_id[4:]})
    assert st == 200 and "event: result" in rest
    assert first_id not in rest
    # Another tenant's run answers like an unknown one, everywhere.
    st, _, _ = others[1].request("GET", "/v1/runs/" + rid, token=TOKEN2)
    assert st == 404
    # A blocking submission to one node gets the result another node
    # recorded (the waiter is woken through the store).
    st, _, res = fleet[1].request("POST", "/v1/runs", sh("echo waited"))
    assert st == 200 and res["stdout"] == "waited\n"


@pytest.mark.parametrize("fleet", [{"adopt": True, "lease_ms": 2000},
                                   {"adopt": False, "lease_ms": 2000}],
                         indirect=True, ids=["same_host", "host_lost"])
def test_kill9_node_mid_burst(fleet, store, tmp_path, request):
    """With adoption a surviving node watches the dead node's supervisors
    and records their results; without it (as for a dead host) the runs
    end lost.  Either way each accepted run has one outcome."""
    adopt = request.node.callspec.params["fleet"]["adopt"]
    marker = tmp_path / "marker"
    bodies = [sh(marker_code(marker, "k%d" % i, "sleep 0.3; "))
              for i in range(30)]
    accepted = {}

    def submit():
        accepted.update(submit_all(fleet, bodies))

    t = threading.Thread(target=submit)
    t.start()
    victim = fleet[1]
    # Killed once a run of its own is launched (its supervisor recorded).
    launched = wait_until(lambda: sorted(
        (victim.state / "runs").glob("*/identity.json")), 60, 0.02)
    assert launched
    victim.kill9()
    launched = {p.parent.name for p in launched}
    t.join(timeout=120)
    ids = [b["run_id"] for st, b in accepted.values() if st == 202]
    assert len(ids) >= 20
    # The lease (2 s) runs out; a surviving node settles node1's runs.
    assert wait_until(lambda: all_finished(store, ids), 60, 0.25)
    s = states(store, ids)
    lost = [i for i, v in s.items() if v[2] == "unavailable"]
    adopted = {i: c for i, c in audit_counts(store, "run.adopted").items()
               if i in s}
    if adopt:
        assert adopted, "node1 had runs in flight"
        assert all(c == 1 for c in adopted.values()), adoptions(store)
        assert all(s[i][1] != "node1" for i in adopted)
        for i in launched & set(ids):
            if s[i][1] != "node1":
                assert s[i][2] == "completed", (i, s[i])
        assert any(s[i][2] == "completed" for i in adopted)
    else:
        assert lost, "node1 had runs in flight"
        assert not adopted
        assert all(s[i][1] == "node1" for i in lost)
    # Nothing ran twice; every completed run ran.
    lines = collections.Counter(marker.read_text().split())
    assert all(c == 1 for c in lines.values()), lines
    body_token = {b["run_id"]: "k%d" % i for i, (st, b) in accepted.items()
                  if st == 202}
    for i, v in s.items():
        if v[2] == "completed":
            assert lines[body_token[i]] == 1
    assert_once(store, ids)
    # node1 comes back: the store keeps the one outcome it has.
    victim.start(timeout=30)
    st, _, b = victim.request("POST", "/v1/runs", sh("echo back"))
    assert st == 200 and b["stdout"] == "back\n"
    victim.stop()
    assert_once(store, ids)
    verify_chain(store)


def stop_outside_write(node, store, tries=20):
    """SIGSTOPs node at a moment it does not hold the store's one write
    lock (stopped holding it, it would stop every node's writes, the
    heartbeats among them, until it goes on)."""
    for _ in range(tries):
        node.proc.send_signal(signal.SIGSTOP)
        c = sqlite3.connect(str(store.path), timeout=2)
        try:
            c.execute("BEGIN IMMEDIATE")
            c.rollback()
            return
        except sqlite3.OperationalError:
            pass  # still locked after 2 s: most likely by the stopped node
        finally:
            c.close()
        node.proc.send_signal(signal.SIGCONT)
        time.sleep(0.05)
    raise AssertionError("the node held the write lock at each stop")


@pytest.mark.parametrize("fleet", [{"adopt": True, "lease_ms": 2000},
                                   {"adopt": False, "lease_ms": 2000}],
                         indirect=True, ids=["adopt", "no_adopt"])
def test_stopped_node_is_slow_not_dead(fleet, store, tmp_path):
    """A node whose lease runs out while its process lives on this host
    (stopped here; a loaded machine or a busy store does the same) is
    slow, not dead: no node adopts or settles its runs, and it records
    them itself once it goes on."""
    marker, gate = tmp_path / "marker", tmp_path / "gate"
    victim = fleet[1]
    # 12 runs fill the 3 nodes' 4 slots each and wait for the gate (at
    # most 40 s), so the victim certainly holds runs when it is stopped.
    wait_gate = ("n=0; while [ ! -e %s ] && [ $n -lt 800 ]; do "
                 "sleep 0.05; n=$((n+1)); done; " % gate)
    bodies = [sh(marker_code(marker, "s%d" % i, wait_gate),
                 limits={"wall_ms": 60000}) for i in range(12)]
    accepted = submit_all(fleet, bodies)
    ids = [b["run_id"] for st, b in accepted.values() if st == 202]
    assert len(ids) == 12, accepted
    assert wait_until(lambda: sum(
        v[:2] == ("running", "node1")
        for v in states(store, ids).values()) == 4, 60, 0.05)
    stop_outside_write(victim, store)
    try:
        held = [i for i, v in states(store, ids).items()
                if v[:2] == ("running", "node1")]
        assert len(held) == 4
        time.sleep(3 * 2.0)  # three leases
        s = states(store, ids)
        assert all(s[i][:2] == ("running", "node1") for i in held), s
        assert not audit_counts(store, "run.adopted")
        assert all(v[2] != "unavailable" for v in s.values()), s
        # The others say so at their next look at the store, which under
        # the sanitizers on a loaded machine can come after three leases.
        assert wait_until(lambda: "ran out but its process lives on this "
                          "host" in fleet[0].log() + fleet[2].log(), 30,
                          0.25), fleet[0].log()[-2000:]
        assert not audit_counts(store, "run.adopted")
        gate.touch()
    finally:
        gate.touch()
        victim.proc.send_signal(signal.SIGCONT)
    assert wait_until(lambda: all_finished(store, ids), 60, 0.25)
    s = states(store, ids)
    assert all(v[2] == "completed" for v in s.values()), s
    assert all(s[i][1] == "node1" for i in held)
    lines = collections.Counter(marker.read_text().split())
    assert sorted(lines) == sorted("s%d" % i for i in range(12)), lines
    assert_once(store, ids)
    verify_chain(store)


def test_idempotency_race_two_nodes(fleet, store, tmp_path):
    marker = tmp_path / "marker"
    for i in range(20):
        body = sh(marker_code(marker, "i%d" % i),
                  idempotency_key="race-%d" % i)
        res = [None, None]

        def post(k):
            res[k] = fleet[k].request("POST", "/v1/runs", body)

        ts = [threading.Thread(target=post, args=(k,)) for k in (0, 1)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(timeout=60)
        assert res[0][0] == 200 and res[1][0] == 200, res
        assert res[0][2]["run_id"] == res[1][2]["run_id"]
    lines = collections.Counter(marker.read_text().split())
    assert sorted(lines) == sorted("i%d" % i for i in range(20))
    assert all(c == 1 for c in lines.values())
    assert store.query("SELECT count(*) FROM runs") == [(20,)]
    # The same key with another request is a conflict, on any node.
    st, _, b = fleet[2].request("POST", "/v1/runs",
                                sh("echo other", idempotency_key="race-0"))
    assert st == 409 and b["error"] == "idempotency_conflict"


@pytest.mark.parametrize("fleet", [{"tenant_max": 2}], indirect=True)
def test_fleet_wide_tenant_concurrency(fleet, store, tmp_path):
    active = tmp_path / "active"
    active.mkdir()
    counts = tmp_path / "counts"
    code = ("touch %s/$$; ls %s | wc -l >> %s; sleep 0.25; rm %s/$$"
            % (active, active, counts, active))
    answers = submit_all(fleet, [sh(code) for _ in range(12)])
    ids = [b["run_id"] for _, b in answers.values()]
    assert wait_until(lambda: all_finished(store, ids), 60, 0.25)
    seen = [int(x) for x in counts.read_text().split()]
    assert len(seen) == 12
    assert max(seen) <= 2, seen
    # More than one node ran them: the limit held across nodes.
    assert len({v[1] for v in states(store, ids).values()}) >= 2
    verify_chain(store)


def test_list_runs_and_run_ids_across_nodes(fleet, store):
    """GET /v1/runs on any node lists the tenant's runs of the whole
    fleet from the store, with filters and paging; an X-Airlock-Run-Id is
    known fleet-wide, and a second submission asking for it is refused at
    any node."""
    since = rfc3339(time.time() - 1)
    ids, failed = [], []
    for i in range(6):
        st, _, b = fleet[i % 3].request(
            "POST", "/v1/runs", sh("exit 3" if i % 2 else "true"))
        assert st == 200, b
        ids.append(b["run_id"])
        if i % 2:
            failed.append(b["run_id"])
    st, _, other = fleet[1].request("POST", "/v1/runs", sh("true"),
                                    token=TOKEN2)
    assert st == 200
    until = rfc3339(time.time() + 1)
    newest_first = ids[::-1]
    # Every node lists all six, wherever they ran.
    for n in fleet:
        st, _, b = n.request("GET", "/v1/runs?limit=6")
        assert st == 200, b
        assert [r["run_id"] for r in b["runs"]] == newest_first
        assert all(r["state"] == "finished" and r["language"] == "sh"
                   for r in b["runs"]), b
        assert {r["run_id"]: r["outcome"] for r in b["runs"]} == {
            i: "failed" if i in failed else "completed" for i in ids}
    q = "/v1/runs?outcome=failed&language=sh&since=%s&until=%s" % (
        since, until)
    st, _, b = fleet[2].request("GET", q)
    assert [r["run_id"] for r in b["runs"]] == failed[::-1]
    assert b["next_after"] is None
    st, _, b = fleet[0].request("GET", q + "&limit=2")
    assert [r["run_id"] for r in b["runs"]] == failed[::-1][:2]
    assert b["next_after"] == failed[1]
    st, _, b = fleet[1].request("GET", q + "&limit=2&after=" +
                                b["next_after"])
    assert [r["run_id"] for r in b["runs"]] == [failed[0]]
    assert b["next_after"] is None
    st, _, b = fleet[0].request("GET", "/v1/runs?until=" + since)
    assert not set(ids) & {r["run_id"] for r in b["runs"]}
    st, _, b = fleet[0].request("GET", "/v1/runs?language=python&since=" +
                                since)
    assert b["runs"] == []
    st, _, b = fleet[0].request("GET", "/v1/runs?since=" + since,
                                token=TOKEN2)
    assert [r["run_id"] for r in b["runs"]] == [other["run_id"]]
    st, _, b = fleet[2].request("GET", "/v1/runs?after=" +
                                other["run_id"])
    assert st == 400 and b["error"] == "invalid_query"

    # A caller-chosen id: queued and run under it, readable anywhere.
    rid = str(uuid.uuid4())
    body = sh('echo "$AIRLOCK_RUN_ID"')
    st, _, b = fleet[0].request("POST", "/v1/runs?wait=false", body,
                                headers={"X-Airlock-Run-Id": rid})
    assert st == 202 and b["run_id"] == rid, b
    assert wait_until(lambda: all_finished(store, [rid]), 30, 0.1)
    st, _, res = fleet[2].request("GET", "/v1/runs/" + rid)
    assert st == 200 and res["stdout"] == rid + "\n", res
    # The same id again (even the same request), or by another tenant,
    # at any node: another submission's, refused with a fresh id.
    for n, tok in ((fleet[1], None), (fleet[0], None), (fleet[2], TOKEN2)):
        kw = {"token": tok} if tok else {}
        st, _, b = n.request("POST", "/v1/runs?wait=false", body,
                             headers={"X-Airlock-Run-Id": rid}, **kw)
        assert st == 409 and b["outcome"] == "conflict", b
        assert b["reason"] == "run_id_in_use" and b["run_id"] != rid
    assert store.query("SELECT count(*) FROM runs WHERE id = ?",
                       (rid,)) == [(1,)]
    assert_once(store, ids + [rid])


def test_pinned_run_of_a_dead_node_ends_lost(store, tmp_path):
    """A queued run pinned to a node (its X-Airlock-Forwarded-Env in that
    node's memory) is never taken by another node; when its node dies it
    ends lost, once."""
    cfg = fleet_config(store.url, node_id="pinner", concurrency=1,
                       lease_ms=1500)
    cfg["tenants"]["default"]["accept_forwarded_env"] = True
    node = Node(tmp_path, cfg, name="pinner")
    watcher = Node(tmp_path, fleet_config(store.url, node_id="pwatch",
                                          lease_ms=1500), name="pwatch")
    try:
        node.start(timeout=30)
        watcher.start(timeout=30)
        secret = "fwd-" + uuid.uuid4().hex
        hdr = {"X-Airlock-Forwarded-Env": fwd_header({"X": secret})}
        # The first holds the node's one slot; the second waits queued
        # (the idle watcher never takes it).
        ids = []
        for code in ("sleep 30", "true"):
            st, _, b = node.request("POST", "/v1/runs?wait=false",
                                    sh(code, limits={"wall_ms": 60000}),
                                    headers=hdr)
            assert st == 202, b
            ids.append(b["run_id"])
        assert wait_until(lambda: states(store, ids)[ids[0]][0] ==
                          "running", 30, 0.1)
        assert states(store, ids)[ids[1]][:2] == ("queued", None)
        assert store.query("SELECT pinned FROM runs WHERE id = ?",
                           (ids[1],)) == [("pinner",)]
        node.kill9()
        assert wait_until(lambda: states(store, ids)[ids[1]][0] ==
                          "finished", 30, 0.1)
        assert states(store, ids)[ids[1]] == ("finished", None,
                                              "unavailable")
        st, _, res = watcher.request("GET", "/v1/runs/" + ids[1])
        assert res["reason"] == "lost", res
        assert audit_counts(store, "run.finished")[ids[1]] == 1
        # The forwarded value never reached the store's files.
        for f in store.path.parent.iterdir():
            assert secret.encode() not in f.read_bytes(), f
    finally:
        for n in (node, watcher):
            if n.proc is not None:
                n.stop()
            cleanup_state(n)


def test_controls_reach_an_adopted_run(store, tmp_path):
    """A node is killed with two runs in flight; a surviving node of the
    host adopts them; an inbox event and an interrupt sent to a third
    node reach them through the store."""
    victim, heir, third = solo_nodes(tmp_path, store,
                                     ["victim", "heir", "third"],
                                     lease_ms=1500)
    seen = tmp_path / "seen"
    try:
        victim.start(timeout=30)
        st, _, b = victim.request("POST", "/v1/runs?wait=false",
                                  sh(INBOX_READER, env={"SEEN": str(seen)},
                                     limits={"wall_ms": 60000}))
        assert st == 202
        reader = b["run_id"]
        st, _, b = victim.request("POST", "/v1/runs?wait=false",
                                  sh("sleep 50", limits={"wall_ms": 60000}))
        assert st == 202
        sleeper = b["run_id"]
        assert wait_until(lambda: all(
            (victim.state / "runs" / r / "identity.json").exists()
            for r in (reader, sleeper)), 30, 0.05)
        heir.start(timeout=30)
        third.start(timeout=30)
        victim.kill9()

        def adopted():
            s = states(store, [reader, sleeper])
            return len(s) == 2 and all(v[0] == "running" and
                                       v[1] in ("heir", "third")
                                       for v in s.values()) and s
        s = wait_until(adopted, 30, 0.1)
        assert s, states(store, [reader, sleeper])
        assert set(audit_counts(store, "run.adopted")) >= {reader, sleeper}
        other = {"heir": third, "third": heir}
        st, _, b = other[s[reader][1]].request(
            "POST", "/v1/runs/%s/inbox" % reader,
            {"id": "ev-1", "event": {"n": 7}})
        assert st == 202, b
        st, _, b = other[s[sleeper][1]].request(
            "POST", "/v1/runs/%s/interrupt" % sleeper)
        assert st == 202 and b["state"] == "interrupting", b
        assert wait_until(lambda: all_finished(store, [reader, sleeper]),
                          30, 0.1)
        s = states(store, [reader, sleeper])
        assert s[reader][2] == "completed", s
        assert json.loads(seen.read_text()) == {"id": "ev-1",
                                                "event": {"n": 7}}
        assert s[sleeper][2] == "interrupted", s
        st, _, res = third.request("GET", "/v1/runs/" + sleeper)
        assert st == 200 and res["outcome"] == "interrupted", res
        st, _, b = third.request("POST", "/v1/runs/%s/inbox" % reader,
                                 {"id": "ev-2", "event": {}})
        assert st == 409 and b["error"] == "run_finished"
        assert_once(store, [reader, sleeper])
        verify_chain(store)
    finally:
        for n in (victim, heir, third):
            if n.proc is not None:
                n.stop()
            cleanup_state(n)


def test_adopted_run_streams_stops_and_carries_the_trace(store, tmp_path):
    """test_fleet.py's adopted_run_scenario on the SQLite store."""
    def queued():
        return [json.loads(r) for (r,) in store.query(
            "SELECT record FROM audit") if json.loads(r)["event"] ==
                "run.queued"]
    ids = adopted_run_scenario(store, tmp_path, states, queued)
    assert_once(store, ids)
    verify_chain(store)


def test_a_queued_run_wakes_one_claimer(store, tmp_path):
    """One run at a time on three idle nodes: each queued run wakes one
    node's claimer (the wakes table), not all three, and the node that
    claims it does not claim again to find the queue empty."""
    import re
    nodes = solo_nodes(tmp_path, store, ["w0", "w1", "w2"])
    try:
        for n in nodes:
            n.start(timeout=30)
        for i in range(12):
            st, _, b = nodes[i % 3].request("POST", "/v1/runs", sh("true"))
            assert st == 200 and b["outcome"] == "completed", b
    finally:
        for n in nodes:
            n.stop()
            cleanup_state(n)
    queries = polls = errors = claimed = 0
    for n in nodes:
        m = re.search(r"fleet: (\d+) claim queries \((\d+) on the safety "
                      r"poll, (\d+) failed\), (\d+) runs claimed", n.log())
        assert m, n.log()[-2000:]
        queries += int(m.group(1))
        polls += int(m.group(2))
        errors += int(m.group(3))
        claimed += int(m.group(4))
    assert claimed == 12
    # The claims not made by the 2 s safety poll (whose number follows
    # the time the test takes, not the runs) nor refused by the store
    # (busy under load, then retried): one per run plus each
    # node's start-up look, and slack for a wake-up racing a poll that
    # took its run, and for a run queued when the store saw no live node
    # with a free slot (its query judges heartbeats and running runs at
    # that moment; on a loaded machine they lag), which wakes every
    # node.  Waking every node per run makes it 3 x 12 + 3.
    woken = queries - polls - errors
    assert woken <= 12 + 3 + 12, (queries, polls, errors)


def test_tampered_chain_fails_verify(store, tmp_path):
    node = Node(tmp_path, fleet_config(store.url, node_id="solo"),
                name="solo")
    try:
        node.start(timeout=30)
        st, _, _ = node.request("POST", "/v1/runs", sh("true"))
        assert st == 200
    finally:
        node.stop()
        cleanup_state(node)
    verify_chain(store)
    # The triggers refuse the edit; behind their back it is caught.
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        store.query("UPDATE audit SET record = record WHERE seq = 1")
    c = sqlite3.connect(str(store.path))
    c.executescript("DROP TRIGGER audit_no_update; UPDATE audit SET "
                    "record = replace(record, 'run.queued', 'run.qveued') "
                    "WHERE seq = 1;")
    c.close()
    out = subprocess.run([AIRLOCK_BIN, "audit", "verify", "--store",
                          store.url], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 1
    assert "record 1: record hash mismatch" in out.stderr


def test_verify_never_creates_a_store(tmp_path):
    missing = tmp_path / "nothing.db"
    out = subprocess.run([AIRLOCK_BIN, "audit", "verify", "--store",
                          "sqlite://%s" % missing], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 1 and "no store at" in out.stderr
    assert not missing.exists()
    # Another SQLite file (a node's own airlock.db has an audit table
    # too) is refused and left as it was.
    other = tmp_path / "other.db"
    c = sqlite3.connect(str(other))
    c.execute("CREATE TABLE audit (seq INTEGER PRIMARY KEY, record TEXT)")
    c.close()
    os.chmod(other, 0o600)
    before = other.read_bytes()
    out = subprocess.run([AIRLOCK_BIN, "audit", "verify", "--store",
                          "sqlite://%s" % other], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 1 and "is not a fleet store" in out.stderr
    assert other.read_bytes() == before
    assert not (tmp_path / "other.db-wal").exists()


@pytest.mark.parametrize("url, reason", [
    ("sqlite://relative/fleet.db", "store"),
    ("sqlite:///", "sqlite:///ABSOLUTE/PATH/FILE"),
    ("sqlite:///tmp/x.db?mode=ro", "sqlite:///ABSOLUTE/PATH/FILE"),
    # Another user could swap the -wal file in a directory anyone writes.
    ("sqlite:///tmp/airlock-fleet-test.db", "not writable by others"),
])
def test_bad_sqlite_store_is_refused(tmp_path, url, reason):
    cfg = local_config()
    cfg["store"] = url
    d = DurableDaemon(tmp_path, cfg)
    d.start(expect_ok=False)
    assert d.proc.wait(timeout=20) != 0
    assert reason in d.log()
    assert not os.path.exists("/tmp/airlock-fleet-test.db")
