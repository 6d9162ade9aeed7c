"""Many airlockd nodes on one PostgreSQL (docs/scale-out.md): a private
PostgreSQL 15 and three nodes on loopback.  Every run appends its token to
a marker file on the host (the trusted local provider), so "executed
once" is counted from what actually ran, and every accepted run's one
outcome is counted in the store and in the fleet's audit chain."""
import base64
import collections
import hashlib
import http.client
import json
import os
import signal
import subprocess
import threading
import time
import uuid

import pytest

from fleet_support import (TOKEN, TOKEN2, Node, Postgres, fleet_config, free_port,
                           start_nodes, wait_until)
from test_api_support import AIRLOCK_BIN, Daemon, local_config, sh
from test_durable_support import (DurableDaemon, alive, audit_records,
                                  cleanup_state)


@pytest.fixture(scope="module")
def pg():
    p = Postgres()
    yield p
    p.close()


@pytest.fixture
def fleet(tmp_path, pg, request):
    # A long lease, so a node slowed by a loaded machine is not taken for
    # dead; the tests that kill a node ask for a short one.
    kw = {"lease_ms": 10000}
    kw.update(getattr(request, "param", {}))
    nodes = start_nodes(tmp_path, pg, n=3, **kw)
    yield nodes
    for n in nodes:
        if n.proc is not None:
            n.stop()
        cleanup_state(n)


def marker_code(marker, token, extra=""):
    return "%secho %s >> %s" % (extra, token, marker)


def submit_all(nodes, bodies, wait=False, retry_503=False, pace=0.0):
    """POSTs each body to nodes round robin from a few threads; returns
    {index: (status, answer)}.  retry_503: a client that retries while the
    store is away (bounded)."""
    out = {}
    lock = threading.Lock()
    todo = list(enumerate(bodies))

    def worker():
        while True:
            with lock:
                if not todo:
                    return
                i, body = todo.pop()
            node = nodes[i % len(nodes)]
            for _ in range(150 if retry_503 else 1):
                try:
                    st, _, b = node.request(
                        "POST",
                        "/v1/runs" + ("" if wait else "?wait=false"),
                        body, timeout=120)
                except OSError as e:  # a killed node
                    st, b = None, str(e)
                if st != 503:
                    break
                time.sleep(0.2)
            time.sleep(pace)
            with lock:
                out[i] = (st, b)

    threads = [threading.Thread(target=worker) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    return out


def states(pg, ids):
    rows = pg.psql("SELECT id, state, node, outcome FROM runs WHERE id IN "
                   "(%s)" % ",".join("'%s'" % i for i in ids))
    return {r[0]: r[1:] for r in rows}


def all_finished(pg, ids):
    s = states(pg, ids)
    return len(s) == len(ids) and all(v[0] == "finished"
                                      for v in s.values())


def chained(pg):
    """The nodes move committed records into the chain shortly after
    they commit: waits until none is pending."""
    assert wait_until(lambda: pg.psql(
        "SELECT count(*) FROM audit_pending")[0][0] == "0", 30, 0.1)


def audit_counts(pg, event):
    chained(pg)
    rows = pg.psql("SELECT record FROM audit")
    c = collections.Counter()
    for (rec,) in rows:
        r = json.loads(rec)
        if r["event"] == event:
            c[r["run_id"]] += 1
    return c


def verify_chain(pg):
    chained(pg)
    out = subprocess.run([AIRLOCK_BIN, "audit", "verify", "--store",
                          pg.url], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert "chain intact" in out.stdout


def assert_once(pg, ids):
    finished = audit_counts(pg, "run.finished")
    queued = audit_counts(pg, "run.queued")
    for i in ids:
        assert finished[i] == 1, (i, finished[i])
        assert queued[i] == 1, (i, queued[i])


def test_200_runs_once_and_read_anywhere(fleet, pg, tmp_path):
    marker = tmp_path / "marker"
    bodies = [sh(marker_code(marker, "t%d" % i, "sleep 0.05; "))
              for i in range(200)]
    answers = submit_all(fleet, bodies)
    assert all(st == 202 for st, _ in answers.values()), answers
    ids = [b["run_id"] for _, b in answers.values()]
    assert len(set(ids)) == 200
    assert wait_until(lambda: all_finished(pg, ids), 150, 0.5)
    s = states(pg, ids)
    assert all(v[2] == "completed" for v in s.values())
    # Spread: more than one node claimed runs.
    assert len({v[1] for v in s.values()}) >= 2
    lines = marker.read_text().split()
    assert sorted(lines) == sorted("t%d" % i for i in range(200))
    assert_once(pg, ids)
    verify_chain(pg)

    # Read anywhere: a run with output, read from a node that did not
    # run it, its events streamed there and resumed on a third.
    st, _, b = fleet[0].request("POST", "/v1/runs?wait=false",
                                sh("echo one; sleep 0.2; echo two",
                                   streaming=True))
    assert st == 202
    rid = b["run_id"]
    assert wait_until(lambda: all_finished(pg, [rid]), 30, 0.1)
    ran_on = states(pg, [rid])[rid][1]
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

    # Artifacts: copied to the shared directory before the result is
    # recorded, read from every node.
    st, _, res = fleet[2].request("POST", "/v1/runs",
                                  sh("printf art > out.txt",
                                     outputs=["out.txt"]))
    assert st == 200 and res["outputs"][0]["artifact"], res
    aid = res["outputs"][0]["artifact"]
    for n in fleet:
        st, _, body = n.request("GET", "/v1/runs/%s/artifacts/%s"
                                % (res["run_id"], aid))
        assert st == 200 and body == "art", (st, body)
        st, _, _ = n.request("GET", "/v1/runs/%s/artifacts/%s"
                             % (res["run_id"], aid), token=TOKEN2)
        assert st == 404


@pytest.mark.parametrize("fleet", [{"adopt": True, "lease_ms": 3000},
                                   {"adopt": False, "lease_ms": 3000}],
                         indirect=True, ids=["same_host", "host_lost"])
def test_kill9_node_mid_burst(fleet, pg, tmp_path, request):
    """All nodes share this host: with adoption a surviving node watches
    the dead node's supervisors and records their results; without it
    (as for a dead host) the runs end lost."""
    adopt = request.node.callspec.params["fleet"]["adopt"]
    marker = tmp_path / "marker"
    bodies = [sh(marker_code(marker, "k%d" % i, "sleep 0.3; "))
              for i in range(45)]
    accepted = {}
    done = threading.Event()

    def submit():
        accepted.update(submit_all(fleet, bodies))
        done.set()

    t = threading.Thread(target=submit)
    t.start()
    victim = fleet[1]
    # Killed once a run of its own is launched (its supervisor recorded).
    launched = wait_until(lambda: sorted(
        (victim.state / "runs").glob("*/identity.json")), 60, 0.02)
    assert launched
    victim.kill9()
    launched = {p.parent.name for p in launched}
    t.join(timeout=200)
    ids = [b["run_id"] for st, b in accepted.values() if st == 202]
    assert len(ids) >= 30
    # The lease (3 s) runs out; a surviving node settles node1's runs.
    assert wait_until(lambda: all_finished(pg, ids), 90, 0.5)
    s = states(pg, ids)
    lost = [i for i, v in s.items() if v[2] == "unavailable"]
    adopted = {i: c for i, c in audit_counts(pg, "run.adopted").items()
               if i in s}
    if adopt:
        # node1's runs in flight were adopted, each once, and finished.
        assert adopted, "node1 had runs in flight"
        assert all(c == 1 for c in adopted.values())
        assert all(s[i][1] != "node1" for i in adopted)
        # A launched run's supervisor outlived its daemon: its result
        # was recorded by the adopter.  Only runs claimed and not yet
        # launched end lost.
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
    assert_once(pg, ids)
    # node1 comes back: its recovery finishes what it had, the store
    # keeps the one outcome it recorded.
    victim.start(timeout=30)
    time.sleep(0.5)
    victim.stop()
    assert_once(pg, ids)
    verify_chain(pg)


def test_idempotency_race_two_nodes(fleet, pg, tmp_path):
    marker = tmp_path / "marker"
    for i in range(20):
        body = sh(marker_code(marker, "i%d" % i),
                  idempotency_key="race-%d-%s" % (i, tmp_path.name))
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
    # The same key with another request is a conflict, on any node.
    st, _, b = fleet[2].request("POST", "/v1/runs",
                                sh("echo other",
                                   idempotency_key="race-0-%s"
                                   % tmp_path.name))
    assert st == 409 and b["error"] == "idempotency_conflict"


@pytest.mark.parametrize("fleet", [{"tenant_max": 2}], indirect=True)
def test_fleet_wide_tenant_concurrency(fleet, pg, tmp_path):
    active = tmp_path / "active"
    active.mkdir()
    counts = tmp_path / "counts"
    code = ("touch %s/$$; ls %s | wc -l >> %s; sleep 0.25; rm %s/$$"
            % (active, active, counts, active))
    answers = submit_all(fleet, [sh(code) for _ in range(12)])
    ids = [b["run_id"] for _, b in answers.values()]
    assert wait_until(lambda: all_finished(pg, ids), 90, 0.25)
    seen = [int(x) for x in counts.read_text().split()]
    assert len(seen) == 12
    assert max(seen) <= 2, seen


# The fixture's long lease: no node's may run out while PostgreSQL
# restarts.
def test_postgres_restart_under_load(fleet, pg, tmp_path):
    marker = tmp_path / "marker"
    # A client retrying a 503 sends its idempotency key: the store may
    # have queued the run whose answer was lost with the connection.
    bodies = [sh(marker_code(marker, "p%d" % i, "sleep 0.2; "),
                 idempotency_key="p%d-%s" % (i, tmp_path.name))
              for i in range(40)]
    accepted = {}

    def submit():
        accepted.update(submit_all(fleet, bodies, retry_503=True,
                                   pace=0.05))

    t = threading.Thread(target=submit)
    t.start()
    assert wait_until(lambda: pg.psql(
        "SELECT count(*) FROM runs WHERE state = 'running'")[0][0] != "0",
        60, 0.05)
    pg.restart()
    t.join(timeout=200)
    # A submission while the store was away was refused (503) and
    # retried; every one was accepted in the end.
    ids = [b["run_id"] for st, b in accepted.values() if st == 202]
    assert len(ids) == 40, accepted
    assert wait_until(lambda: all_finished(pg, ids), 90, 0.5)
    s = states(pg, ids)
    assert all(v[2] == "completed" for v in s.values()), s
    lines = collections.Counter(marker.read_text().split())
    assert all(c == 1 for c in lines.values())
    assert_once(pg, ids)
    verify_chain(pg)
    # The nodes reconnected: a new run goes through each.
    for n in fleet:
        st, _, b = n.request("POST", "/v1/runs", sh("echo back"))
        assert st == 200 and b["stdout"] == "back\n"


def test_node_without_a_capable_provider_leaves_the_run(pg, tmp_path):
    """A node whose only provider is `disabled` publishes no language and
    claims nothing in one: runs submitted to it run on the capable
    node."""
    cfg_a = fleet_config(pg.url, node_id="incapable")
    cfg_a["providers"] = [{"provider": "disabled"}]
    a = Node(tmp_path, cfg_a, name="incapable")
    b = Node(tmp_path, fleet_config(pg.url, node_id="capable"),
             name="capable")
    try:
        a.start(timeout=30)
        b.start(timeout=30)
        facts = json.loads(pg.psql("SELECT facts FROM nodes WHERE id = "
                                   "'incapable'")[0][0])
        assert facts["languages"] == [] and facts["providers"] == \
            ["disabled"]
        assert "sh" in json.loads(pg.psql(
            "SELECT facts FROM nodes WHERE id = 'capable'")[0][0])[
                "languages"]
        answers = submit_all([a], [sh("echo cap") for _ in range(8)])
        ids = [b_["run_id"] for st, b_ in answers.values()]
        assert wait_until(lambda: all_finished(pg, ids), 60, 0.2)
        s = states(pg, ids)
        assert all(v[1] == "capable" and v[2] == "completed"
                   for v in s.values()), s
    finally:
        for n in (a, b):
            if n.proc is not None:
                n.stop()
            cleanup_state(n)


def rfc3339(t):
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + \
        ".%03dZ" % int((t % 1) * 1000)


def test_list_runs_across_nodes(fleet, pg):
    """GET /v1/runs on any node lists the tenant's runs of the whole
    fleet from the store, newest first, with the single node's filters
    and paging."""
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
    ran_on = {v[1] for v in states(pg, ids).values()}
    assert len(ran_on) >= 2, ran_on
    for n in fleet:
        st, _, b = n.request("GET", "/v1/runs?limit=6")
        assert st == 200, b
        assert [r["run_id"] for r in b["runs"]] == newest_first
        assert all(r["state"] == "finished" and r["language"] == "sh"
                   for r in b["runs"]), b
        assert {r["run_id"]: r["outcome"] for r in b["runs"]} == {
            i: "failed" if i in failed else "completed" for i in ids}
    # Filters, combined, and paging through the filtered list.
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
    st, _, b = fleet[0].request("GET", "/v1/runs?outcome=timed_out&since="
                                + since)
    assert b["runs"] == []
    # The other tenant sees only its own; its run is no page mark here.
    st, _, b = fleet[0].request("GET", "/v1/runs?since=" + since,
                                token=TOKEN2)
    assert [r["run_id"] for r in b["runs"]] == [other["run_id"]]
    st, _, b = fleet[2].request("GET", "/v1/runs?after=" +
                                other["run_id"])
    assert st == 400 and b["error"] == "invalid_query"
    st, _, b = fleet[2].request("GET", "/v1/runs?outcome=nope")
    assert st == 400 and b["error"] == "invalid_query"
    # A queued run is listed too, with its state and no outcome yet.
    st, _, b = fleet[0].request("POST", "/v1/runs?wait=false",
                                sh("sleep 0.2"))
    assert st == 202
    st, _, lst = fleet[1].request("GET", "/v1/runs?limit=1")
    assert lst["runs"][0]["run_id"] == b["run_id"]
    assert lst["runs"][0]["state"] in ("queued", "running", "finished")


def fwd_header(obj):
    return base64.b64encode(json.dumps(obj).encode()).decode()


def test_remote_provider_headers_on_a_fleet(pg, tmp_path):
    """X-Airlock-Run-Id and X-Airlock-Forwarded-Env (docs/api.md) on a
    fleet node, with the single node's rules: the run is known fleet-wide
    under the caller's id; the forwarded environment never reaches the
    store (the run is pinned to the node that holds it in memory)."""
    secret = "fwd-" + uuid.uuid4().hex + " v=1"
    grant = {"network": ["none", "loopback", "host"],
             "workspace": ["none", "ro", "rw"], "secrets": ["FWD_SECRET"]}
    sfile = tmp_path / "no-secrets.json"
    sfile.write_text("{}")
    os.chmod(sfile, 0o600)
    nodes = []
    for name in ("fa", "fb"):
        cfg = fleet_config(pg.url, node_id=name)
        cfg["tenants"]["default"]["accept_forwarded_env"] = True
        cfg["tenants"]["default"]["grant"] = grant
        cfg["secrets"] = {"file": str(sfile)}
        nodes.append(Node(tmp_path, cfg, name=name))
    fa, fb = nodes
    # A single node in front whose `remote` provider sends both headers.
    ffile = tmp_path / "front-secrets.json"
    ffile.write_text(json.dumps({"FWD_SECRET": secret}))
    os.chmod(ffile, 0o600)
    front = None
    try:
        for n in nodes:
            n.start(timeout=30)
        front = Daemon(tmp_path, {
            "acknowledged_providers": ["remote"],
            "providers": [{"provider": "remote", "config": {
                "url": "http://127.0.0.1:%d" % fa.port, "token": TOKEN,
                "timeout_ms": 5000}}],
            "tenants": {"default": {"languages": ["sh"],
                                    "grant": grant}},
            "secrets": {"file": str(ffile)}}, name="front").start()
        req = sh('printf %s "$FWD_SECRET" | sha256sum | cut -c1-64; '
                 'echo "$AIRLOCK_RUN_ID"')
        req["grant"]["secrets"] = ["FWD_SECRET"]
        st, _, res = front.run(req)
        assert st == 200 and res["outcome"] == "completed", res
        digest, rid = res["stdout"].split()
        assert digest == hashlib.sha256(secret.encode()).hexdigest()
        assert rid == res["run_id"]
        # Known under the caller's id on every node; run by the node that
        # holds the environment.
        assert states(pg, [rid])[rid] == ["finished", "fa", "completed"]
        st, _, back = fb.request("GET", "/v1/runs/" + rid)
        assert st == 200 and back["run_id"] == rid
        # A forwarded run posted to fb runs on fb, wherever slots are.
        rid2 = str(uuid.uuid4())
        st, _, b = fb.request("POST", "/v1/runs?wait=false",
                              sh('printf %s "$ONLY_FWD" | sha256sum'),
                              headers={"X-Airlock-Run-Id": rid2,
                                       "X-Airlock-Forwarded-Env":
                                       fwd_header({"ONLY_FWD": secret})})
        assert st == 202 and b["run_id"] == rid2, b
        assert wait_until(lambda: all_finished(pg, [rid2]), 30, 0.1)
        st, _, res = fa.request("GET", "/v1/runs/" + rid2)
        assert res["stdout"].split()[0] == digest and res["run_id"] == rid2
        assert states(pg, [rid2])[rid2][1] == "fb"
        # An id in use anywhere in the fleet is refused, at any node.
        st, _, b = fb.request("POST", "/v1/runs?wait=false", sh("true"),
                              headers={"X-Airlock-Run-Id": rid})
        assert st == 409 and b["outcome"] == "conflict", b
        assert b["reason"] == "run_id_in_use" and b["run_id"] != rid
        st, _, b = fa.request("POST", "/v1/runs?wait=false", sh("true"),
                              headers={"X-Airlock-Run-Id": rid.upper()})
        assert st == 400 and b["reason"] == "run_id", b
        # The tenant gate and the header's form, answered at once.
        st, _, b = fa.request("POST", "/v1/runs?wait=false", sh("true"),
                              token=TOKEN2,
                              headers={"X-Airlock-Forwarded-Env":
                                       fwd_header({"FWD_SECRET": secret})})
        assert st == 403 and b["reason"] == "gate:forwarded_env", b
        st, _, b = fa.request("POST", "/v1/runs?wait=false", sh("true"),
                              headers={"X-Airlock-Forwarded-Env":
                                       fwd_header({"PATH": secret})})
        assert st == 400 and b["reason"] == "forwarded_env", b
        # The secret is nowhere in the store, a node's files or logs.
        pg.psql("CHECKPOINT")
        needle = secret.encode()
        for root in (pg.data, fa.dir, fb.dir):
            for dirpath, _, files in os.walk(root):
                for name in files:
                    path = os.path.join(dirpath, name)
                    try:
                        data = open(path, "rb").read()
                    except OSError:
                        continue
                    assert needle not in data, path
    finally:
        if front is not None:
            front.stop()
        for n in nodes:
            if n.proc is not None:
                n.stop()
            cleanup_state(n)


def test_pinned_runs_of_a_dead_node_end_lost(pg, tmp_path):
    """A queued run pinned to a node (its forwarded environment in that
    node's memory) ends lost, once, when the node dies."""
    cfg = fleet_config(pg.url, node_id="pinner", concurrency=1,
                       lease_ms=3000)
    cfg["tenants"]["default"]["accept_forwarded_env"] = True
    node = Node(tmp_path, cfg, name="pinner")
    watcher = Node(tmp_path, fleet_config(pg.url, node_id="pwatch",
                                          lease_ms=3000), name="pwatch")
    try:
        node.start(timeout=30)
        watcher.start(timeout=30)
        hdr = {"X-Airlock-Forwarded-Env": fwd_header({"X": "y"})}
        # The first holds the node's one slot; the second waits queued.
        ids = []
        for code in ("sleep 30", "true"):
            st, _, b = node.request("POST", "/v1/runs?wait=false",
                                    sh(code, limits={"wall_ms": 60000}),
                                    headers=hdr)
            assert st == 202, b
            ids.append(b["run_id"])
        assert wait_until(lambda: states(pg, ids)[ids[0]][0] == "running",
                          30, 0.1)
        assert states(pg, ids)[ids[1]][:2] == ["queued", ""]
        node.kill9()
        # The watcher never takes it: it ends lost when the lease runs
        # out.
        assert wait_until(lambda: states(pg, ids)[ids[1]][0] ==
                          "finished", 30, 0.1)
        assert states(pg, ids)[ids[1]] == ["finished", "", "unavailable"]
        st, _, res = watcher.request("GET", "/v1/runs/" + ids[1])
        assert res["reason"] == "lost", res
        assert audit_counts(pg, "run.finished")[ids[1]] == 1
    finally:
        for n in (node, watcher):
            if n.proc is not None:
                n.stop()
            cleanup_state(n)


# Waits for an inbox event, copies it to $SEEN, ends (bounded).
INBOX_READER = r'''
for i in $(seq 600); do
  for f in "$AIRLOCK_INBOX"/*.json; do
    [ -e "$f" ] || continue
    cat "$f" > "$SEEN"; exit 0
  done
  sleep 0.05
done
exit 3
'''


def solo_nodes(tmp_path, pg, names, **kw):
    return [Node(tmp_path, fleet_config(pg.url, node_id=n, **kw), name=n)
            for n in names]


def test_controls_reach_an_adopted_run(pg, tmp_path):
    """A node is killed with two runs in flight; a surviving node of the
    host adopts them; an inbox event and an interrupt sent to a third
    node reach them through the store."""
    victim, heir, third = solo_nodes(tmp_path, pg, ["victim", "heir",
                                                    "third"], lease_ms=3000)
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
        # Both launched (their supervisors recorded) on the victim.
        assert wait_until(lambda: all(
            (victim.state / "runs" / r / "identity.json").exists()
            for r in (reader, sleeper)), 30, 0.05)
        heir.start(timeout=30)
        third.start(timeout=30)
        victim.kill9()
        # The lease runs out; a survivor (same host and boot) adopts both.
        def adopted():
            s = states(pg, [reader, sleeper])
            return len(s) == 2 and all(v[0] == "running" and
                                       v[1] in ("heir", "third")
                                       for v in s.values()) and s
        s = wait_until(adopted, 30, 0.1)
        assert s, states(pg, [reader, sleeper])
        assert set(audit_counts(pg, "run.adopted")) >= {reader, sleeper}
        # Each is reached through the node that did not adopt it.
        other = {"heir": third, "third": heir}
        st, _, b = other[s[reader][1]].request(
            "POST", "/v1/runs/%s/inbox" % reader,
            {"id": "ev-1", "event": {"n": 7}})
        assert st == 202, b
        st, _, b = other[s[sleeper][1]].request(
            "POST", "/v1/runs/%s/interrupt" % sleeper)
        assert st == 202 and b["state"] == "interrupting", b
        assert wait_until(lambda: all_finished(pg, [reader, sleeper]), 30,
                          0.1)
        s = states(pg, [reader, sleeper])
        assert s[reader][2] == "completed", s
        assert json.loads(seen.read_text()) == {"id": "ev-1",
                                                "event": {"n": 7}}
        assert s[sleeper][2] == "interrupted", s
        st, _, res = third.request("GET", "/v1/runs/" + sleeper)
        assert st == 200 and res["outcome"] == "interrupted", res
        # Once recorded, both are refused as finished.
        st, _, b = third.request("POST", "/v1/runs/%s/inbox" % reader,
                                 {"id": "ev-2", "event": {}})
        assert st == 409 and b["error"] == "run_finished"
        assert_once(pg, [reader, sleeper])
    finally:
        for n in (victim, heir, third):
            if n.proc is not None:
                n.stop()
            cleanup_state(n)


GATED = r"""
echo before
for i in $(seq 400); do [ -e "$G1" ] && break; sleep 0.05; done
echo after-one
for i in $(seq 400); do [ -e "$G2" ] && break; sleep 0.05; done
echo after-two
"""
TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def sse_read(node, run_id, until=None, last_id=None, timeout=30):
    """The run's SSE stream from node as (id, event, data) triples, up to
    the first event whose data has `until` (then it stops reading), else
    to the stream's end."""
    conn = http.client.HTTPConnection("127.0.0.1", node.port,
                                      timeout=timeout)
    h = {"Authorization": "Bearer " + TOKEN}
    if last_id is not None:
        h["Last-Event-ID"] = str(last_id)
    conn.request("GET", "/v1/runs/%s/events" % run_id, headers=h)
    resp = conn.getresponse()
    assert resp.status == 200, resp.read()
    out, eid, ev, data = [], None, None, []
    try:
        for line in resp:
            line = line.decode().rstrip("\n")
            if line.startswith("id: "):
                eid = int(line[4:])
            elif line.startswith("event: "):
                ev = line[7:]
            elif line.startswith("data: "):
                data.append(line[6:])
            elif line == "" and ev is not None:
                out.append((eid, ev, json.loads("\n".join(data))))
                if until is not None and until in out[-1][2].get("data",
                                                                 ""):
                    break
                eid, ev, data = None, None, []
    finally:
        conn.close()
    return out


def adopted_run_scenario(store, tmp_path, states, queued_records):
    """A node is killed (-9) with two runs in flight; `heir` adopts both.
    `front` (no capable provider, no adoption: it executes nothing) serves
    the reads and controls:
    - the output the gated run writes after the adoption streams live
      from the store (read before the run ends), with the dead node's
      numbering: no gap, no duplicate, the result event one past it;
    - a stop of a run whose supervisor does not answer (SIGSTOP) is
      escalated past the grace: its tree is killed, `interrupted` by 9;
    - a run submitted to front with a traceparent runs on heir under the
      caller's trace (heir's run.started record and log, the fleet's
      run.queued record)."""
    victim, heir = solo_nodes(tmp_path, store, ["victim", "heir"],
                              lease_ms=3000)
    cfg = fleet_config(store.url, node_id="front", lease_ms=3000,
                       adopt=False)
    cfg["providers"] = [{"provider": "disabled"}]
    front = Node(tmp_path, cfg, name="front")
    g1, g2 = tmp_path / "g1", tmp_path / "g2"
    try:
        victim.start(timeout=30)
        st, _, b = victim.request(
            "POST", "/v1/runs?wait=false",
            sh(GATED, streaming=True, env={"G1": str(g1), "G2": str(g2)},
               limits={"wall_ms": 60000}))
        assert st == 202
        gated = b["run_id"]
        st, _, b = victim.request("POST", "/v1/runs?wait=false",
                                  sh("sleep 50", limits={"wall_ms": 60000}))
        assert st == 202
        sleeper = b["run_id"]
        assert wait_until(lambda: all(
            (victim.state / "runs" / r / "identity.json").exists()
            for r in (gated, sleeper)), 30, 0.05)
        # "before" was written while the victim lived.
        out = victim.state / "runs" / gated / "output"
        assert wait_until(lambda: out.exists() and out.stat().st_size, 30)
        heir.start(timeout=30)
        front.start(timeout=30)
        victim.kill9()
        assert wait_until(lambda: (lambda s: len(s) == 2 and all(
            v[0] == "running" and v[1] == "heir" for v in s.values()))(
                states(store, [gated, sleeper])), 30, 0.1), \
            states(store, [gated, sleeper])

        # Live: "after-one" is read from front while the run waits on g2.
        g1.touch()
        seen = sse_read(front, gated, until="after-one")
        assert states(store, [gated])[gated][0] == "running"
        assert [(i, e, d["data"]) for i, e, d in seen] == [
            (0, "stdout", "before\n"), (1, "stdout", "after-one\n")], seen

        # A stop the supervisor cannot obey (stopped) is escalated.
        sup = json.loads((victim.state / "runs" / sleeper /
                          "identity.json").read_text())["pid"]
        os.kill(sup, signal.SIGSTOP)
        st, _, res = front.request(
            "POST", "/v1/runs/%s/interrupt?wait=true" % sleeper, timeout=60)
        assert st == 200, res
        assert res["outcome"] == "interrupted" and res["signal"] == 9, res
        assert "did not stop within its grace" in heir.log()
        assert not alive(sup)

        g2.touch()
        assert wait_until(lambda: states(store, [gated])[gated][0] ==
                          "finished", 30, 0.1)
        st, _, res = front.request("GET", "/v1/runs/" + gated)
        assert st == 200 and res["outcome"] == "completed", res
        assert res["stdout"] == "before\nafter-one\nafter-two\n"
        evs = sse_read(front, gated)
        outs = [(i, d["data"]) for i, e, d in evs if e == "stdout"]
        assert outs == [(0, "before\n"), (1, "after-one\n"),
                        (2, "after-two\n")], evs
        assert evs[-1][:2] == (3, "result"), evs
        # Resumed on the adopter from the first event on.
        rest = sse_read(heir, gated, last_id=0)
        assert [i for i, _, _ in rest] == [1, 2, 3], rest

        # The caller's trace goes through the queue to heir.
        st, _, res = front.request("POST", "/v1/runs", sh("echo traced"),
                                   headers={"traceparent": TRACEPARENT})
        assert st == 200 and res["outcome"] == "completed", res
        traced = res["run_id"]
        assert states(store, [traced])[traced][1] == "heir"
        trace_id = TRACEPARENT[3:35]
        started = [r for r in audit_records(heir)
                   if r.get("run_id") == traced and
                   r["event"] == "run.started"]
        assert len(started) == 1, started
        assert started[0]["traceparent"] == TRACEPARENT
        assert started[0]["trace_id"] == trace_id
        assert any(traced in ln and "trace_id=" + trace_id in ln
                   for ln in heir.log().splitlines()), heir.log()[-3000:]
        q = [r for r in queued_records() if r["run_id"] == traced]
        assert len(q) == 1 and q[0]["trace_id"] == trace_id, q
        return [gated, sleeper, traced]
    finally:
        for n in (victim, heir, front):
            if n.proc is not None:
                n.stop()
            cleanup_state(n)


def test_adopted_run_streams_stops_and_carries_the_trace(pg, tmp_path):
    def queued():
        chained(pg)
        return [json.loads(r) for (r,) in pg.psql(
            "SELECT record FROM audit")
                if json.loads(r)["event"] == "run.queued"]
    ids = adopted_run_scenario(pg, tmp_path, states, queued)
    assert_once(pg, ids)
    verify_chain(pg)


def test_a_queued_run_wakes_one_claimer(pg, tmp_path):
    """One run at a time on three idle nodes: each queued run wakes one
    node's claimer (a live node with a free slot), not all three, and
    the node that claims it does not claim again to find the queue
    empty.  Waking every node cost four claim queries per run here."""
    import re
    nodes = solo_nodes(tmp_path, pg, ["w0", "w1", "w2"])
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


def test_zz_tampered_chain_fails_verify(pg):
    """The last test on the shared store: it breaks its chain on purpose."""
    chained(pg)
    pg.psql("ALTER TABLE audit DISABLE TRIGGER audit_no_change")
    pg.psql("UPDATE audit SET record = replace(record, 'run.queued', "
            "'run.qveued') WHERE seq = 1")
    out = subprocess.run([AIRLOCK_BIN, "audit", "verify", "--store",
                          pg.url], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 1
    assert "record 1: record hash mismatch" in out.stderr


@pytest.mark.parametrize("extra, reason", [
    ({"store": "mysql://x"}, "store"),
    ({"store": 5}, "store"),
    ({"fleet": []}, "fleet"),
])
def test_bad_store_configuration_is_refused(tmp_path, extra, reason):
    cfg = local_config()
    cfg.update(extra)
    d = DurableDaemon(tmp_path, cfg)
    d.start(expect_ok=False)
    assert d.proc.wait(timeout=20) != 0
    assert reason in d.log()


def test_unreachable_store_never_echoes_the_password(tmp_path):
    port = free_port()  # nothing listens there
    cfg = local_config()
    cfg["store"] = ("postgresql://airlock:s3cret-pw@127.0.0.1:%d/x"
                    "?connect_timeout=2" % port)
    cfg["fleet"] = {"node_id": "bad node"}
    d = DurableDaemon(tmp_path, cfg, name="a")
    d.start(expect_ok=False)
    assert d.proc.wait(timeout=20) != 0
    assert "fleet.node_id" in d.log()
    cfg["fleet"] = {}
    d = DurableDaemon(tmp_path, cfg, name="b")
    d.start(expect_ok=False)
    assert d.proc.wait(timeout=20) != 0
    log = d.log()
    assert "cannot connect to the store" in log
    assert "s3cret-pw" not in log
    out = subprocess.run([AIRLOCK_BIN, "audit", "verify", "--store",
                          cfg["store"]], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 1 and "s3cret-pw" not in out.stderr + out.stdout
