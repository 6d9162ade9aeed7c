"""airlockd's log (docs/serve.md, "Logs"): every line is a timestamped,
levelled record in text (key=value) or JSON; one access line per request
with its id, never a token; a caller's X-Request-Id and W3C traceparent
are carried into the log and the run's audit record."""
import hashlib
import http.client
import json
import os
import re
import select
import signal
import subprocess
import threading
import time

from test_api_support import AIRLOCK_BIN, Daemon, local_config, sh

TOKEN = "log-test-token-" + "q" * 40
WRONG = "not-the-token-" + "z" * 40
TRACE = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
TS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
PAIR = re.compile(r' ?([A-Za-z_][A-Za-z0-9_.]*)=("(?:[^"\\]|\\.)*"|[^ "]+)')


def config():
    return local_config(
        tokens={hashlib.sha256(TOKEN.encode()).hexdigest(): "default"})


def parse_text(line):
    """One logfmt line as a dict; fails on anything else."""
    out, pos = {}, 0
    while pos < len(line):
        m = PAIR.match(line, pos)
        assert m, "not key=value at %d: %r" % (pos, line)
        v = m.group(2)
        out[m.group(1)] = v[1:-1] if v.startswith('"') else v
        pos = m.end()
    return out


def records(d, fmt):
    lines = [ln for ln in d.log().splitlines() if ln]
    assert lines
    recs = [json.loads(ln) if fmt == "json" else parse_text(ln)
            for ln in lines]
    for r in recs:
        assert isinstance(r, dict), r
        assert TS.match(r["ts"]), r
        assert r["level"] in ("error", "warn", "info", "debug"), r
        assert isinstance(r["msg"], str), r
    return recs


def access(recs):
    return [r for r in recs if r["msg"] == "request"]


def some_traffic(d):
    st, hdrs, body = d.run(sh("echo hi"), token=TOKEN)
    assert st == 200, body
    assert d.request("GET", "/v1/nope", token=TOKEN)[0] == 404
    assert d.request("GET", "/v1/runs", token=WRONG)[0] == 401
    assert d.request("GET", "/v1/health", token=None)[0] == 200
    return hdrs, body


def audit_records(d):
    out = subprocess.run([AIRLOCK_BIN, "--state-dir", str(d.state), "audit",
                          "tail", "--json"], capture_output=True,
                         timeout=30, check=True).stdout.decode()
    return [json.loads(ln) for ln in out.splitlines() if ln]


def test_text_lines_parse_and_name_each_request(tmp_path):
    d = Daemon(tmp_path, config()).start()
    try:
        _, body = some_traffic(d)
    finally:
        d.stop()
    recs = records(d, "text")
    # A request's line is written once its answer is sent, so the next
    # request (another connection, another thread) may be logged first.
    lines = {(r["method"], r["path"], r["status"]): r for r in access(recs)}
    assert sorted(lines) == sorted([
        ("POST", "/v1/runs", "200"), ("GET", "/v1/nope", "404"),
        ("GET", "/v1/runs", "401"), ("GET", "/v1/health", "200")])
    run = lines[("POST", "/v1/runs", "200")]
    assert run["run_id"] == body["run_id"]
    assert run["tenant"] == "default"
    # a wrong token names no tenant
    assert "tenant" not in lines[("GET", "/v1/runs", "401")]


def test_json_lines_parse_daemon_and_supervisors(tmp_path):
    d = Daemon(tmp_path, config(), extra_args=["--log-format", "json"])
    d.start()
    try:
        some_traffic(d)
        st, _, body = d.run(sh("echo bye >&2; exit 3"), token=TOKEN)
        assert st == 200 and body["exit_code"] == 3, body
    finally:
        d.stop()
    recs = records(d, "json")
    assert any(r["msg"].startswith("listening on http://") for r in recs)
    assert len(access(recs)) == 5
    # The supervisors log alike, into their run's supervisor.log.
    sup = [ln for p in (d.state / "runs").glob("*/supervisor.log")
           for ln in p.read_text().splitlines() if ln]
    for ln in sup:
        r = json.loads(ln)
        assert TS.match(r["ts"]) and r["level"] and r["msg"], r


def test_access_line_fields_and_no_token(tmp_path):
    d = Daemon(tmp_path, config(), extra_args=["--log-format", "json"])
    d.start()
    try:
        st, hdrs, body = d.run(sh("echo hi"), token=TOKEN)
        assert st == 200
        assert d.request("GET", "/v1/runs", token=WRONG)[0] == 401
    finally:
        d.stop()
    log = d.log()
    assert TOKEN not in log and WRONG not in log
    assert "echo hi" not in log  # no body either
    a = access(records(d, "json"))
    # A request's line is written once it completes, which for the run
    # can be after the next request's (the answer is sent first): found
    # by method, not by order.
    assert sorted(r["method"] for r in a) == ["GET", "POST"], a
    run = next(r for r in a if r["method"] == "POST")
    other = next(r for r in a if r["method"] == "GET")
    assert run["method"] == "POST" and run["path"] == "/v1/runs"
    assert run["status"] == 200 and run["tenant"] == "default"
    assert run["run_id"] == body["run_id"]
    assert run["bytes"] == int(hdrs["content-length"])
    assert isinstance(run["duration_ms"], int) and run["duration_ms"] >= 0
    assert run["request_id"] == hdrs["x-request-id"]
    assert re.fullmatch(r"[0-9a-f]{16}", run["request_id"])
    assert other["request_id"] != run["request_id"]


def test_request_id_is_echoed_and_a_plain_one_honoured(tmp_path):
    d = Daemon(tmp_path, config(), extra_args=["--log-format", "json"])
    d.start()
    try:
        st, h, _ = d.request("GET", "/v1/health", token=None,
                             headers={"X-Request-Id": "caller-1.A_b"})
        assert st == 200 and h["x-request-id"] == "caller-1.A_b"
        for bad in ("has space", "x" * 65, "semi;colon", "quote\"d"):
            st, h, _ = d.request("GET", "/v1/health", token=None,
                                 headers={"X-Request-Id": bad})
            assert st == 200
            assert re.fullmatch(r"[0-9a-f]{16}", h["x-request-id"]), bad
        # Refusals carry one too.
        st, h, _ = d.request("GET", "/v1/nope", token=None)
        assert st == 404 and re.fullmatch(r"[0-9a-f]{16}",
                                           h["x-request-id"])
    finally:
        d.stop()
    ids = [r["request_id"] for r in access(records(d, "json"))]
    # access lines are written as answers complete, not in request order
    assert "caller-1.A_b" in ids
    assert "semi;colon" not in d.log()


def test_traceparent_reaches_the_access_line_and_the_audit(tmp_path):
    d = Daemon(tmp_path, config(), extra_args=["--log-format", "json"])
    d.start()
    try:
        st, _, body = d.request("POST", "/v1/runs", sh("echo t"),
                                token=TOKEN, headers={"traceparent": TRACE})
        assert st == 200, body
        audit = audit_records(d)
    finally:
        d.stop()
    line = access(records(d, "json"))[0]
    assert line["traceparent"] == TRACE
    assert line["trace_id"] == TRACE[3:35]
    started = [r for r in audit if r["event"] == "run.started"
               and r["run_id"] == body["run_id"]]
    assert len(started) == 1
    assert started[0]["traceparent"] == TRACE
    assert started[0]["trace_id"] == TRACE[3:35]
    assert subprocess.run([AIRLOCK_BIN, "--state-dir", str(d.state), "audit",
                           "verify"], capture_output=True,
                          timeout=30).returncode == 0


INVALID_TRACES = [
    "01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",  # version
    "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01",  # upper case
    "00-00000000000000000000000000000000-b7ad6b7169203331-01",  # zero trace
    "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",  # zero parent
    "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-1",   # short flags
    "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-x",
    "garbage",
]


def test_an_invalid_traceparent_is_ignored(tmp_path):
    d = Daemon(tmp_path, config(), extra_args=["--log-format", "json"])
    d.start()
    try:
        run_ids = []
        for tp in INVALID_TRACES:
            st, _, body = d.request("POST", "/v1/runs", sh("echo t"),
                                    token=TOKEN, headers={"traceparent": tp})
            assert st == 200 and body["outcome"] == "completed", (tp, body)
            run_ids.append(body["run_id"])
        audit = audit_records(d)
    finally:
        d.stop()
    for line in access(records(d, "json")):
        assert "traceparent" not in line and "trace_id" not in line, line
    for r in audit:
        assert r["run_id"] in run_ids
        assert "traceparent" not in r and "trace_id" not in r, r


def test_log_level_warn_suppresses_access_lines(tmp_path):
    d = Daemon(tmp_path, config(), extra_args=["--log-level", "warn"])
    d.start()
    try:
        some_traffic(d)
    finally:
        d.stop()
    recs = records(d, "text")
    assert access(recs) == []
    # Only the start-up line is written below the level.
    assert [r for r in recs if r["level"] in ("info", "debug")
            and not r["msg"].startswith("listening on")] == []


def test_bad_log_flags_are_usage_errors(tmp_path):
    for args, said in ((["--log-format", "xml"], b"--log-format expects"),
                       (["--log-level", "loud"], b"--log-level expects")):
        p = subprocess.run([AIRLOCK_BIN, "--state-dir", str(tmp_path / "s"),
                            "serve", "--listen", "127.0.0.1:0"] + args,
                           capture_output=True, timeout=30)
        assert p.returncode == 2, p
        assert said in p.stderr, p.stderr


def test_unread_stderr_never_stops_the_daemon(tmp_path):
    """A stderr nobody reads (a stalled log shipper, a paused pager) fills
    its pipe; the daemon keeps answering, its lines wait in the writer's
    queue and arrive in order once read, and SIGTERM still stops it."""
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(config()))
    r, w = os.pipe()
    p = subprocess.Popen([AIRLOCK_BIN, "--state-dir", str(tmp_path / "s"),
                          "--config", str(cfg), "serve", "--listen",
                          "127.0.0.1:0"], stdout=w, stderr=w,
                         stdin=subprocess.DEVNULL)
    os.close(w)
    got = bytearray()
    reading = threading.Event()
    stop = threading.Event()

    def reader():
        while not stop.is_set():
            if not reading.wait(0.05):
                continue
            ready, _, _ = select.select([r], [], [], 0.05)
            if ready:
                chunk = os.read(r, 65536)
                if not chunk:
                    return
                got.extend(chunk)

    t = threading.Thread(target=reader)
    t.start()
    try:
        reading.set()
        deadline = time.monotonic() + 30
        while b"listening on" not in got and time.monotonic() < deadline:
            time.sleep(0.02)
        port = int(re.search(rb"127\.0\.0\.1:(\d+)", bytes(got)).group(1))
        reading.clear()
        time.sleep(0.2)  # the reader is parked

        def get_health():
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            c.request("GET", "/v1/health")
            resp = c.getresponse()
            resp.read()
            c.close()
            return resp.status

        # ~1200 access lines: several times what the pipe holds.
        for _ in range(1200):
            assert get_health() == 200
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        c.request("POST", "/v1/runs", json.dumps(sh("echo hi")),
                  {"Authorization": "Bearer " + TOKEN,
                   "Content-Type": "application/json"})
        resp = c.getresponse()
        body = json.loads(resp.read())
        c.close()
        assert resp.status == 200 and body["stdout"] == "hi\n", body
        # Read at last: every line arrives, in order.
        reading.set()
        deadline = time.monotonic() + 30
        while (b"path=/v1/runs" not in got
               and time.monotonic() < deadline):
            time.sleep(0.05)
        recs = [parse_text(ln) for ln in
                bytes(got).decode(errors="replace").splitlines() if ln]
        paths = [x["path"] for x in recs if x["msg"] == "request"]
        assert paths == ["/v1/health"] * 1200 + ["/v1/runs"]
        assert not [x for x in recs if "dropped" in x]
        # Unread again and full: SIGTERM still drains and stops it.
        reading.clear()
        time.sleep(0.2)
        for _ in range(1200):
            assert get_health() == 200
        p.send_signal(signal.SIGTERM)
        assert p.wait(timeout=30) == 0
    finally:
        stop.set()
        t.join(timeout=10)
        if p.poll() is None:
            p.kill()
            p.wait()
        os.close(r)
