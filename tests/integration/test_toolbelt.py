"""The toolbelt (docs/toolbelt.md): airlock-tool in a real durable run
talks to its supervisor over the run's socket — context, events seen live
on the SSE stream and kept in the result, the inbox read and acknowledged,
host operations granted or denied, a declared outcome — and bad input gets
typed errors."""
import http.client
import http.server
import json
import os
import subprocess
import threading

import pytest

from test_durable_support import (AIRLOCK_BIN, DurableDaemon,
                                  assert_no_sanitizer_reports, audit_events,
                                  finished_records,
                                  cleanup_state, local_config, run_dir, sh,
                                  start_launched, wait_until)


class Hook(http.server.BaseHTTPRequestHandler):
    """A loopback webhook: records each body, answers JSON."""
    bodies = []

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(n))
        Hook.bodies.append(body)
        out = json.dumps({"accepted": True, "echo": body["input"]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *a):
        pass


@pytest.fixture
def hook():
    Hook.bodies = []
    srv = http.server.HTTPServer(("127.0.0.1", 0), Hook)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def operations(port):
    return {"notify": {"kind": "webhook",
                       "url": "http://127.0.0.1:%d/hook" % port,
                       "timeout_ms": 5000},
            "page_oncall": {"kind": "webhook",
                            "url": "http://127.0.0.1:%d/page" % port}}


def sandbox_available():
    p = subprocess.run([AIRLOCK_BIN, "probe", "--json", "-p", "sandbox"],
                       capture_output=True, timeout=60)
    facts = json.loads(p.stdout)
    facts = facts[0] if isinstance(facts, list) else facts
    if not facts.get("available"):
        pytest.skip("sandbox provider unavailable on this host: %s"
                    % facts.get("unavailable_reason"))


def sandbox_config(port):
    return {"providers": [{"provider": "sandbox"}],
            "tenants": {"default": {
                "languages": ["sh"],
                "operations": operations(port),
                "grant": {"network": ["none"], "workspace": ["none", "rw"],
                          "streaming": True, "toolbelt": True,
                          "operations": ["notify", "page_oncall"]}}}}


def deliver(d, rid, eid, event):
    return d.request("POST", "/v1/runs/%s/inbox" % rid,
                     {"id": eid, "event": event})


class Stream:
    """The run's SSE stream read as it arrives, on a thread."""

    def __init__(self, d, rid):
        self.events = []
        self.cond = threading.Condition()
        self.conn = http.client.HTTPConnection("127.0.0.1", d.port,
                                               timeout=60)
        self.conn.request("GET", "/v1/runs/%s/events" % rid,
                          headers={"Authorization": "Bearer " + d.token})
        self.resp = self.conn.getresponse()
        assert self.resp.status == 200
        self.t = threading.Thread(target=self._read, daemon=True)
        self.t.start()

    def _read(self):
        ev, data = None, []
        for line in self.resp:
            line = line.decode().rstrip("\n")
            if line == "":
                if ev is not None:
                    with self.cond:
                        self.events.append((ev, "\n".join(data)))
                        self.cond.notify_all()
                ev, data = None, []
            elif line.startswith("event: "):
                ev = line[7:]
            elif line.startswith("data: "):
                data.append(line[6:])

    def wait_for(self, pred, timeout=30):
        with self.cond:
            assert self.cond.wait_for(lambda: pred(self.events), timeout), \
                self.events

    def close(self):
        self.t.join(timeout=30)
        self.conn.close()


# t LABEL CMD...: runs CMD and prints "LABEL <its stdout> rc=<status>".
T = r'''
t() { label=$1; shift; r=$("$@" 2>/dev/null); c=$?; echo "$label $r rc=$c"; }
'''


# Reads its context, emits 3 events, waits for two inbox events and reads
# them (twice: the second read finds them acknowledged), calls a granted
# operation and one its request was not granted, declares `failed` and
# exits 0.  No network.
PROGRAM = T + r'''
set -u
airlock-tool context > /tmp/ctx || exit 90
echo "ctx $(cat /tmp/ctx)"
for i in 1 2 3; do airlock-tool emit --type progress "{\"n\": $i}" >/dev/null || exit 91; done
while [ "$(ls /inbox | wc -l)" -lt 2 ]; do sleep 0.02; done
airlock-tool inbox > /tmp/inbox || exit 92
echo "inbox1 $(wc -l < /tmp/inbox)"
sed 's/^/line /' /tmp/inbox
echo "inbox2 $(airlock-tool inbox | wc -l)"
t call airlock-tool call notify '{"order": 17}'
t denied airlock-tool call page_oncall '{}'
airlock-tool outcome failed --reason order_rejected >/dev/null || exit 93
echo "env ${AIRLOCK_TOOL_SOCKET} ${AIRLOCK_TOOL_TOKEN_FILE} $(command -v airlock-tool)"
[ -S /toolbelt/sock ] && [ -r /toolbelt/token ] && echo "view $(ls /toolbelt 2>/dev/null | wc -l) $(ls /toolbelt-bin)"
touch /toolbelt/x 2>/dev/null && echo "toolbelt writable"
exit 0
'''


def test_the_toolbelt_in_the_sandbox(tmp_path, hook):
    sandbox_available()
    d = DurableDaemon(tmp_path, sandbox_config(hook.server_port))
    try:
        d.start()
        rid = start_launched(d, {
            "language": "sh", "code": PROGRAM,
            "limits": {"wall_ms": 30000},
            "grant": {"streaming": True, "toolbelt": True,
                      "operations": ["notify"]}})
        s = Stream(d, rid)
        # The 3 events arrive while the run still waits for its inbox.
        s.wait_for(lambda evs: sum(e == "event" for e, _ in evs) == 3)
        assert "result" not in [e for e, _ in s.events]
        assert deliver(d, rid, "ev-1", {"k": 1})[0] == 202
        assert deliver(d, rid, "ev-2", {"k": 2})[0] == 202
        res = d.wait_finished(rid)
        s.close()
        live = [json.loads(x) for e, x in s.events if e == "event"]
        assert [(e["seq"], e["type"], e["data"]) for e in live] == \
            [(1, "progress", {"n": 1}), (2, "progress", {"n": 2}),
             (3, "progress", {"n": 3})]

        out = res["stdout"].splitlines()
        ctx = json.loads(out[0][4:])
        assert ctx["run_id"] == rid and ctx["language"] == "sh"
        assert ctx["attempt"] == 1 and ctx["grant"]["toolbelt"] is True
        assert ctx["limits"]["wall_ms"] == 30000
        assert ctx["inbox"] == "/inbox" and "deadline" in ctx
        assert "tenant" not in ctx
        assert out[1] == "inbox1 2"
        assert [json.loads(x[5:]) for x in out[2:4]] == [
            {"id": "ev-1", "event": {"k": 1}},
            {"id": "ev-2", "event": {"k": 2}}]
        assert out[4] == "inbox2 0"
        call = out[5]
        assert call.endswith("rc=0"), call
        assert json.loads(call[5:-5]) == {"accepted": True,
                                          "echo": {"order": 17}}
        assert out[6] == 'denied {"ok":false,"error":"denied"} rc=1'
        assert out[7] == ("env /toolbelt/sock /toolbelt/token "
                          "/toolbelt-bin/airlock-tool")
        # Its own socket and token, in a directory it cannot list or
        # write; no other run's.
        assert out[8] == "view 0 airlock-tool"
        assert len(out) == 9
        # The webhook got the call, never the token.
        assert Hook.bodies == [{"run_id": rid, "operation": "notify",
                                "input": {"order": 17}}]

        assert res["outcome"] == "failed" and res["reason"] == "declared"
        assert res["exit_code"] == 0
        assert res["declaration"] == {"outcome": "failed",
                                      "reason": "order_rejected"}
        assert [e["data"] for e in res["events"]] == \
            [{"n": 1}, {"n": 2}, {"n": 3}]
        assert res["inbox_acked"] == ["ev-1", "ev-2"]
        assert [(c["operation"], c["outcome"]) for c in res["host_calls"]] \
            == [("notify", "ok"), ("page_oncall", "denied")]
        # Audited with the run's end: operation and outcome, no payload.
        fin = finished_records(d, rid)
        assert len(fin) == 1
        assert [(c["operation"], c["outcome"])
                for c in fin[0]["host_calls"]] == \
            [("notify", "ok"), ("page_oncall", "denied")]
        assert "order" not in json.dumps(fin[0])
        assert fin[0]["grant"]["toolbelt"] is True
        # Once finished the socket and the token are gone.
        assert list((run_dir(d, rid) / "tool").iterdir()) == []
        assert_no_sanitizer_reports(d)
    finally:
        d.stop()
        cleanup_state(d)


# Emits until the inbox says stop; then shows the token was replaced and
# tries the first one again.
LOOP = T + r'''
first=$(cat "$AIRLOCK_TOOL_TOKEN_FILE")
i=0
# at most 200 events (a run keeps 256), about 20 s
while [ ! -e "$AIRLOCK_INBOX/000001-stop.json" ] && [ $i -lt 200 ]; do
  i=$((i+1))
  airlock-tool emit "{\"i\": $i}" >/dev/null || echo "emit failed $i"
  sleep 0.1
done
[ "$first" != "$(cat "$AIRLOCK_TOOL_TOKEN_FILE")" ] && echo replaced
AIRLOCK_TOOL_TOKEN_FILE= AIRLOCK_TOOL_TOKEN=$first t old airlock-tool emit '{"old": 1}'
t new airlock-tool emit --type last '{"new": 1}'
'''


def test_adoption_replaces_the_token(tmp_path, hook):
    sandbox_available()
    d = DurableDaemon(tmp_path, sandbox_config(hook.server_port))
    try:
        d.start()
        rid = start_launched(d, {"language": "sh", "code": LOOP,
                                 "limits": {"wall_ms": 60000},
                                 "grant": {"toolbelt": True}})
        rd = run_dir(d, rid)
        pid = json.loads((rd / "identity.json").read_text())["pid"]
        wait_until(lambda: (rd / "output").exists()
                   and (rd / "output").stat().st_size > 0,
                   what="the first event")
        token_before = (rd / "tool" / "token").read_text()
        d.kill9()
        d.start()
        # Adopted at a new epoch: the file holds a new token.
        assert (rd / "tool" / "token").read_text() != token_before
        assert oct((rd / "tool" / "token").stat().st_mode & 0o777) == "0o600"
        assert deliver(d, rid, "stop", {})[0] == 202
        res = d.wait_finished(rid)
        out = res["stdout"].splitlines()
        assert "replaced" in out, out
        assert 'old {"ok":false,"error":"bad_token"} rc=1' in out
        assert any(x.startswith("new ") and x.endswith(" rc=0")
                   for x in out), out
        assert not [x for x in out if x.startswith("emit failed")], out
        assert res["outcome"] == "completed", res
        assert res["events"][-1]["type"] == "last"
        assert {"old": 1} not in [e["data"] for e in res["events"]]
        # Exactly one launch: one supervisor, one start.
        assert json.loads((rd / "identity.json").read_text())["pid"] == pid
        assert audit_events(d, rid).count("run.started") == 1
    finally:
        d.stop()
        cleanup_state(d)


# ---- the trusted local provider: bad input and the grant ---------------

def local_toolbelt_config(port):
    cfg = local_config()
    t = cfg["tenants"]["default"]
    t["languages"] = ["sh", "python"]
    t["operations"] = operations(port)
    t["grant"] = dict(t["grant"], toolbelt=True, operations=["notify"])
    return cfg


@pytest.fixture
def local(tmp_path, hook):
    d = DurableDaemon(tmp_path, local_toolbelt_config(hook.server_port))
    d.start()
    yield d
    try:
        d.stop() if d.proc is not None else None
    finally:
        cleanup_state(d)
    assert_no_sanitizer_reports(d)


BAD = T + r'''
cp "$AIRLOCK_TOOL_TOKEN_FILE" "$TOKEN_COPY"
big=$(head -c 20000 /dev/zero | tr '\0' a)
t big airlock-tool emit "\"$big\""
t badjson airlock-tool emit '{not json'
(unset AIRLOCK_TOOL_TOKEN AIRLOCK_TOOL_TOKEN_FILE; t notoken airlock-tool context)
zero=$(printf '0%.0s' $(seq 64))
AIRLOCK_TOOL_TOKEN_FILE= AIRLOCK_TOOL_TOKEN=$zero t wrong airlock-tool context
t unknown airlock-tool frobnicate
airlock-tool --request-id r-1 emit '{"once": 1}' >/dev/null
t again airlock-tool --request-id r-1 emit '{"once": 1}'
t reused airlock-tool --request-id r-1 outcome completed
t notgranted airlock-tool call page_oncall
t badname airlock-tool call 'bad name'
t completed airlock-tool outcome completed
'''


def test_bad_input_gets_typed_errors(local, tmp_path):
    copy = tmp_path / "token-copy"
    res = local.run(sh(BAD, limits={"wall_ms": 30000},
                       env={"TOKEN_COPY": str(copy)},
                       grant={"network": "host", "workspace": "rw",
                              "toolbelt": True}))[2]
    out = res["stdout"].splitlines()
    assert out == [
        'big {"ok":false,"error":"too_large"} rc=1',
        "badjson  rc=2",
        "notoken  rc=2",
        'wrong {"ok":false,"error":"bad_token"} rc=1',
        "unknown  rc=2",
        'again {"seq":1} rc=0',
        'reused {"ok":false,"error":"request_id_reused"} rc=1',
        'notgranted {"ok":false,"error":"denied"} rc=1',
        "badname  rc=2",
        'completed {"declared":"completed"} rc=0',
    ], res
    # The repeated request made one event; `completed` changes nothing.
    assert [e["data"] for e in res["events"]] == [{"once": 1}]
    assert res["outcome"] == "completed" and res["reason"] is None
    # Never an argument or a credential in what the run's host recorded.
    tok = copy.read_text()
    assert len(tok) == 64
    log = (run_dir(local, res["run_id"]) / "supervisor.log").read_text()
    assert tok not in log and "aaaa" not in log
    # The run is over: its credential and socket are gone.
    assert list((run_dir(local, res["run_id"]) / "tool").iterdir()) == []


def test_without_the_grant_there_is_no_toolbelt(local):
    code = ('echo "${AIRLOCK_TOOL_SOCKET-unset} '
            '${AIRLOCK_TOOL_TOKEN_FILE-unset} ${AIRLOCK_TOOL_TOKEN-unset}"; '
            'command -v airlock-tool || echo "not on PATH"')
    res = local.run(sh(code))[2]
    assert res["stdout"].splitlines() == ["unset unset unset", "not on PATH"]
    assert not (run_dir(local, res["run_id"]) / "tool").exists()
    assert "events" not in res and "declaration" not in res


def test_capabilities_say_toolbelt_and_host_api(local):
    st, _, caps = local.request("GET", "/v1/capabilities")
    assert st == 200
    facts = caps["providers"][0]
    assert facts["provider"] == "local"
    assert facts["toolbelt"] is True and facts["inject"] is True
    assert facts["host_api"] == ["notify"]


def test_the_grant_is_checked(local):
    # An operation the tenant's grant does not name: refused at the gate.
    st, _, res = local.run(sh("true", grant={
        "network": "host", "toolbelt": True,
        "operations": ["page_oncall"]}))
    assert res["outcome"] == "denied" and res["reason"] == "gate:grant"
    # Operations without the toolbelt: a typed invalid request.
    st, _, res = local.run(sh("true", grant={"network": "host",
                                             "operations": ["notify"]}))
    assert res["outcome"] == "invalid_request"
    assert res["reason"] == "grant.operations"


def test_a_grant_naming_an_undefined_operation_is_refused_at_load(tmp_path):
    cfg = local_config()
    cfg["tenants"]["default"]["grant"]["operations"] = ["nope"]
    d = DurableDaemon(tmp_path, cfg)
    d.start(expect_ok=False)
    assert d.proc.wait(timeout=20) != 0
    assert "operations" in d.log()
    d._log.close()
    d.proc = None


HOSTILE = r'''
import json, os, socket, subprocess
path = os.environ["AIRLOCK_TOOL_SOCKET"]
d = os.open(os.path.dirname(path), os.O_PATH)
addr = "/proc/self/fd/%d/sock" % d
idle = []
for _ in range(20):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.setblocking(False)
    try:
        s.connect(addr)
    except BlockingIOError:
        pass
    idle.append(s)          # connected, never sends
big = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
big.connect(addr)
big.send(b"{" + b" " * 100000 + b"}")
print("big", big.recv(1000).decode())
p = subprocess.run(["airlock-tool", "emit", '{"after": "idle"}'],
                   capture_output=True, text=True)
print("emit", p.returncode, p.stdout.strip())
'''


def test_idle_and_oversized_clients_do_not_stop_the_server(local):
    res = local.run({"language": "python", "code": HOSTILE,
                     "limits": {"wall_ms": 30000},
                     "grant": {"network": "host", "toolbelt": True}})[2]
    assert res["stdout"].splitlines() == [
        'big {"ok":false,"error":"too_large"}',
        'emit 0 {"seq":1}'], res
    assert [e["data"] for e in res["events"]] == [{"after": "idle"}]
