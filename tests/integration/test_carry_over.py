"""Carry-over of inbox events (docs/durability.md, "Carry-over"), through
the real daemon: a durable run's result lists the delivered events it
never acknowledged (inbox_pending); a later run of the same tenant that
names it in "continues" receives them in its inbox, in order, once; a
second continuation is refused; another tenant's run answers exactly
like an unknown one."""
import hashlib
import json
import os
import subprocess

import pytest

from test_durable_support import (AIRLOCK_BIN, DurableDaemon, cleanup_state,
                                  local_config, run_dir, sh, wait_until)

TOKEN_A = "a-" + hashlib.sha256(os.urandom(16)).hexdigest()
TOKEN_B = "b-" + hashlib.sha256(os.urandom(16)).hexdigest()

# Acknowledges the events whose id starts with "ack" (and "stop", which
# ends it); leaves the others pending.
READER = r'''
while :; do
  for f in "$AIRLOCK_INBOX"/*.json; do
    [ -e "$f" ] || continue
    name=$(basename "$f" .json); id=${name#*-}
    case "$id" in ack*|stop) touch "$AIRLOCK_INBOX_ACKS/$id";; esac
    [ "$id" = stop ] && exit 0
  done
  sleep 0.05
done
'''

# Prints each inbox file's name and content, in order, acknowledging none.
LISTER = r'''
for f in "$AIRLOCK_INBOX"/*.json; do
  [ -e "$f" ] || continue
  echo "$(basename "$f")"; cat "$f"; echo
done
'''


def sha(s):
    return hashlib.sha256(s.encode()).hexdigest()


@pytest.fixture
def daemon(tmp_path):
    d = DurableDaemon(tmp_path, local_config(
        tenants=("a", "b"), tokens={sha(TOKEN_A): "a", sha(TOKEN_B): "b"}))
    d.start()
    yield d
    try:
        d.stop() if d.proc is not None else None
    finally:
        cleanup_state(d)


def launch(d, req, token):
    st, _, body = d.run(req, wait=False, token=token)
    assert st == 202, body
    rid = body["run_id"]
    wait_until(lambda: (run_dir(d, rid) / "identity.json").exists(),
               what="the launch")
    return rid


def deliver(d, rid, eid, event, token=TOKEN_A):
    st, _, b = d.request("POST", "/v1/runs/%s/inbox" % rid,
                         {"id": eid, "event": event}, token=token)
    assert st == 202, b


def first_run(d):
    """A run that acknowledges ack-1 and stop, leaving p-2 and p-3."""
    rid = launch(d, sh(READER, limits={"wall_ms": 30000}), TOKEN_A)
    deliver(d, rid, "ack-1", {"n": 1})
    deliver(d, rid, "p-2", {"n": 2, "text": "two"})
    deliver(d, rid, "p-3", {"n": 3})
    deliver(d, rid, "stop", {})
    res = d.wait_finished(rid, token=TOKEN_A)
    assert res["outcome"] == "completed", res
    return rid, res


def listed(res):
    lines = res["stdout"].splitlines()
    return lines[0::2], [json.loads(x) for x in lines[1::2]]


def test_pending_then_carried_once(daemon):
    rid, res = first_run(daemon)
    assert res["inbox_acked"] == ["ack-1", "stop"]
    assert res["inbox_pending"] == ["p-2", "p-3"]
    # the continuation receives them, in order, before anything else
    st, _, r2 = daemon.run(sh(LISTER, continues=rid), token=TOKEN_A)
    assert st == 200 and r2["outcome"] == "completed", r2
    names, events = listed(r2)
    assert names == ["000001-p-2.json", "000002-p-3.json"]
    assert events == [{"id": "p-2", "event": {"n": 2, "text": "two"}},
                      {"id": "p-3", "event": {"n": 3}}]
    # it acknowledged none: they are pending again, now in the new run
    assert r2["inbox_pending"] == ["p-2", "p-3"]
    # a second continuation of the same run gets nothing: refused
    st, _, r3 = daemon.run(sh(LISTER, continues=rid), token=TOKEN_A)
    assert st == 409, r3
    assert r3["outcome"] == "conflict"
    assert r3["reason"] == "continues:already_continued"
    # the chain goes on: the new run can be continued in turn
    st, _, r4 = daemon.run(sh(LISTER, continues=r2["run_id"]),
                           token=TOKEN_A)
    assert r4["outcome"] == "completed", r4
    assert listed(r4)[0] == ["000001-p-2.json", "000002-p-3.json"]


def test_nothing_pending_carries_nothing(daemon):
    rid = launch(daemon, sh(READER, limits={"wall_ms": 30000}), TOKEN_A)
    deliver(daemon, rid, "ack-9", {})
    deliver(daemon, rid, "stop", {})
    res = daemon.wait_finished(rid, token=TOKEN_A)
    assert "inbox_pending" not in res, res
    st, _, r2 = daemon.run(sh(LISTER, continues=rid), token=TOKEN_A)
    assert r2["outcome"] == "completed" and r2["stdout"] == "", r2


def test_foreign_and_unknown_alike(daemon):
    rid, _ = first_run(daemon)
    answers = []
    for cont, token in ((rid, TOKEN_B),
                        ("00000000-0000-4000-8000-000000000000", TOKEN_A),
                        ("no-such-run", TOKEN_A)):
        st, _, r = daemon.run(sh(LISTER, continues=cont), token=token)
        assert st == 404, r
        assert r["outcome"] == "denied"
        assert r["reason"] == "continues:not_found"
        answers.append({k: v for k, v in r.items()
                        if k not in ("run_id", "finished_at")})
    assert answers[0] == answers[1] == answers[2]
    # the refused attempt by the other tenant did not use it up
    st, _, r2 = daemon.run(sh(LISTER, continues=rid), token=TOKEN_A)
    assert r2["outcome"] == "completed", r2
    assert listed(r2)[0] == ["000001-p-2.json", "000002-p-3.json"]


def test_running_run_cannot_be_continued(daemon):
    rid = launch(daemon, sh(READER, limits={"wall_ms": 30000}), TOKEN_A)
    st, _, r = daemon.run(sh(LISTER, continues=rid), token=TOKEN_A)
    assert st == 409 and r["reason"] == "continues:running", r
    deliver(daemon, rid, "stop", {})
    daemon.wait_finished(rid, token=TOKEN_A)


@pytest.mark.parametrize("bad", ["", "a/b", "x" * 40, 7])
def test_malformed_continues(daemon, bad):
    st, _, r = daemon.run(sh("true", continues=bad), token=TOKEN_A)
    assert st == 400 and r["reason"] == "continues", r


def test_cli_refuses_continues(tmp_path):
    req = tmp_path / "req.json"
    req.write_text(json.dumps({"language": "sh", "code": "true",
                               "continues": "x-1"}))
    p = subprocess.run([AIRLOCK_BIN, "--state-dir", str(tmp_path / "s"),
                        "run", "-p", "local", "--json", "--request",
                        str(req)], capture_output=True, timeout=60)
    r = json.loads(p.stdout)
    assert r["outcome"] == "denied" and r["reason"] == "continues:unsupported"
