"""The inbox of a durable run (docs/durability.md): `POST
/v1/runs/{id}/inbox` delivers an event as a file in $AIRLOCK_INBOX; the
program acknowledges it by creating $AIRLOCK_INBOX_ACKS/<id>; the result
lists the delivered events it acknowledged.  Repeats are written once,
forged acknowledgements are ignored, deliveries after the result are
refused, bad input answers typed 4xx — and under the sandbox the inbox is
at /inbox and /inbox-acks."""
import json
import subprocess
import time

import pytest

from test_durable_support import (AIRLOCK_BIN, DurableDaemon,
                                  assert_no_sanitizer_reports, cleanup_state,
                                  local_config, read_lines, run_dir, sh,
                                  start_launched, wait_until)


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


# Acknowledges every delivered event whose id starts with "ack", copies
# what it read to $SEEN, forges an acknowledgement for an event never
# delivered, and ends when a file named "stop" appears in the inbox.
READER = r'''
touch "$AIRLOCK_INBOX_ACKS/never-delivered"
while :; do
  for f in "$AIRLOCK_INBOX"/*.json; do
    [ -e "$f" ] || continue
    name=$(basename "$f" .json); id=${name#*-}
    grep -qx "$name" "$SEEN" 2>/dev/null && continue
    echo "$name" >> "$SEEN"; cat "$f" >> "$SEEN.content"; echo >> "$SEEN.content"
    case "$id" in ack*) touch "$AIRLOCK_INBOX_ACKS/$id";; esac
    [ "$id" = stop ] && exit 0
  done
  sleep 0.05
done
'''


def deliver(d, rid, eid, event, **kw):
    return d.request("POST", "/v1/runs/%s/inbox" % rid,
                     {"id": eid, "event": event}, **kw)


def test_events_are_delivered_acknowledged_and_listed(daemon, tmp_path):
    seen = tmp_path / "seen"
    rid = start_launched(daemon, sh(READER, env={"SEEN": str(seen)},
                                    limits={"wall_ms": 30000}))
    st, _, b = deliver(daemon, rid, "ack-1", {"n": 1, "text": "hello"})
    assert st == 202 and b == {"run_id": rid, "state": "delivered",
                               "id": "ack-1"}
    st, _, b = deliver(daemon, rid, "note_2", {"n": 2})
    assert st == 202
    # A repeated id is written once, whatever it carries.
    st, _, b = deliver(daemon, rid, "ack-1", {"n": 99})
    assert st == 200 and b["state"] == "duplicate"
    st, _, b = deliver(daemon, rid, "ack-3", {"n": 3})
    assert st == 202
    wait_until(lambda: len(read_lines(seen)) == 3, what="the reads")
    st, _, b = deliver(daemon, rid, "stop", {})
    res = daemon.wait_finished(rid)
    assert res["outcome"] == "completed", res
    # In delivery order; the unacknowledged and the forged are absent.
    assert res["inbox_acked"] == ["ack-1", "ack-3"]
    assert read_lines(seen) == ["000001-ack-1", "000002-note_2",
                                "000003-ack-3", "000004-stop"]
    first = json.loads(read_lines(str(seen) + ".content")[0])
    assert first == {"id": "ack-1", "event": {"n": 1, "text": "hello"}}
    # After the result: refused.
    st, _, b = deliver(daemon, rid, "late", {})
    assert st == 409 and b["error"] == "run_finished"


def test_a_run_that_acknowledges_nothing_has_no_inbox_acked(daemon):
    rid = start_launched(daemon, sh("sleep 0.5"))
    assert deliver(daemon, rid, "e1", {"x": 1})[0] == 202
    res = daemon.wait_finished(rid)
    assert res["outcome"] == "completed" and "inbox_acked" not in res


def test_the_inbox_survives_a_restart(daemon, tmp_path):
    seen = tmp_path / "seen"
    rid = start_launched(daemon, sh(READER, env={"SEEN": str(seen)},
                                    limits={"wall_ms": 30000}))
    assert deliver(daemon, rid, "ack-before", {})[0] == 202
    wait_until(lambda: read_lines(seen), what="the first read")
    daemon.kill9()
    daemon.start()
    assert deliver(daemon, rid, "ack-before", {})[0] == 200
    assert deliver(daemon, rid, "ack-after", {})[0] == 202
    assert deliver(daemon, rid, "stop", {})[0] == 202
    res = daemon.wait_finished(rid)
    assert res["inbox_acked"] == ["ack-before", "ack-after"]


@pytest.mark.parametrize("body, why", [
    ({"id": "has space", "event": {}}, "id"),
    ({"id": "", "event": {}}, "id"),
    ({"id": "x" * 65, "event": {}}, "id"),
    ({"id": "ok", "event": [1, 2]}, "event"),
    ({"id": "ok", "event": "text"}, "event"),
    ({"id": "ok"}, "event"),
    ({"event": {}}, "id"),
    ({"id": "ok", "event": {}, "extra": 1}, "body"),
    ("[1]", "body"),
    ("{not json", "body"),
    ('{"id": "ok", "id": "ok", "event": {}}', "body"),
])
def test_bad_events_are_typed_400(daemon, body, why):
    rid = start_launched(daemon, sh("sleep 3"))
    st, h, b = daemon.request("POST", "/v1/runs/%s/inbox" % rid, body)
    assert st == 400, b
    assert b["error"] == "invalid_event" and b["message"].startswith(why), b
    # Never an echo of the value.
    if isinstance(body, dict) and isinstance(body.get("id"), str) and \
            len(body["id"]) > 3:
        assert body["id"] not in b["message"]
    assert list((run_dir(daemon, rid) / "inbox").iterdir()) == []
    daemon.request("POST", "/v1/runs/%s/interrupt?wait=true" % rid)


def test_event_size_and_other_refusals(daemon):
    rid = start_launched(daemon, sh("sleep 3"))
    # Over 64 KiB of event: typed 400; a body far past it: 413 unread.
    st, _, b = deliver(daemon, rid, "big", {"blob": "y" * (64 * 1024)})
    assert st == 400 and b["error"] == "invalid_event", b
    assert b["message"].startswith("event")
    st, _, b = deliver(daemon, rid, "huge", {"blob": "y" * (256 * 1024)})
    assert st == 413 and b["error"] == "body_too_large", b
    # Just under the bound (the event's JSON is 64 KiB at most).
    ok = {"blob": "y" * (64 * 1024 - 20)}
    st, _, b = deliver(daemon, rid, "fits", ok)
    assert st == 202, b
    st, _, b = deliver(daemon, "no-such-run", "e", {})
    assert st == 404 and b["error"] == "not_found"
    st, h, b = daemon.request("GET", "/v1/runs/%s/inbox" % rid)
    assert st == 405 and h["allow"] == "POST"
    st, _, b = deliver(daemon, rid, "e", {}, token=None)
    assert st == 401
    st, _, b = daemon.request("POST", "/v1/runs/%s/interrupt?wait=true" % rid)
    assert st == 200


def sandbox_facts():
    p = subprocess.run([AIRLOCK_BIN, "probe", "--json", "-p", "sandbox"],
                       capture_output=True, timeout=60)
    facts = json.loads(p.stdout)
    if isinstance(facts, list):
        facts = facts[0]
    return facts


@pytest.fixture
def sandbox_daemon(tmp_path):
    """A daemon on the sandbox provider; skipped, saying why, when the
    probed facts say the sandbox is unavailable."""
    facts = sandbox_facts()
    if not facts.get("available"):
        pytest.skip("sandbox provider unavailable on this host: %s"
                    % facts.get("unavailable_reason"))
    cfg = {"providers": [{"provider": "sandbox"}],
           "tenants": {"default": {"languages": ["sh"],
                                   "grant": {"network": ["none"],
                                             "workspace": ["none", "rw"],
                                             "streaming": True}}}}
    d = DurableDaemon(tmp_path, cfg)
    try:
        d.start()
        yield d
    finally:
        d.stop()
        cleanup_state(d)


def test_the_inbox_inside_the_sandbox(sandbox_daemon):
    d = sandbox_daemon
    code = r'''
echo "inbox=$AIRLOCK_INBOX acks=$AIRLOCK_INBOX_ACKS"
touch /inbox/planted 2>/dev/null && echo "inbox writable"
while [ ! -e /inbox/000001-ack-1.json ]; do sleep 0.05; done
cat /inbox/000001-ack-1.json; echo
touch "$AIRLOCK_INBOX_ACKS/ack-1"
'''
    rid = start_launched(d, {"language": "sh", "code": code,
                             "limits": {"wall_ms": 20000}})
    assert deliver(d, rid, "ack-1", {"k": "v"})[0] == 202
    res = d.wait_finished(rid)
    assert res["outcome"] == "completed", res
    lines = res["stdout"].splitlines()
    assert lines[0] == "inbox=/inbox acks=/inbox-acks"
    assert "inbox writable" not in lines
    assert json.loads(lines[1]) == {"id": "ack-1", "event": {"k": "v"}}
    assert res["inbox_acked"] == ["ack-1"]
    assert_no_sanitizer_reports(d)


def test_many_events_inside_the_sandbox_keep_their_order(sandbox_daemon):
    # More events than the supervisor's and the forwarder's lists start
    # with room for: they grow, and the acknowledged keep delivery order.
    d = sandbox_daemon
    n = 40
    code = r'''
while [ ! -e /inbox/0000%02d-last.json ]; do sleep 0.05; done
for f in /inbox/*.json; do
  id=$(basename "$f" .json); id=${id#*-}
  case "$id" in *[02468]) touch "$AIRLOCK_INBOX_ACKS/$id";; esac
done
''' % (n + 1)
    rid = start_launched(d, {"language": "sh", "code": code,
                             "limits": {"wall_ms": 30000}})
    # Ids whose order differs from their names' sort order.
    ids = ["e%d" % (n - i) for i in range(n)]
    for eid in ids:
        assert deliver(d, rid, eid, {"id": eid})[0] == 202
    assert deliver(d, rid, "last", {})[0] == 202
    res = d.wait_finished(rid)
    assert res["outcome"] == "completed", res
    assert res["inbox_acked"] == [e for e in ids if int(e[1:]) % 2 == 0]
    assert_no_sanitizer_reports(d)
