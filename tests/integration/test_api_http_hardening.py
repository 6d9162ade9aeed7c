"""airlockd's HTTP layer against exhaustion and sloppy HTTP (docs/serve.md,
"Connections"; docs/api.md): no descriptor a request takes outlives its
run, libmicrohttpd polls with poll() (select() drops every socket past
1023), connections are bounded per client and in total, a request's
headers and body have deadlines, bodies are refused unread where a route
takes none, and the HTTP details: JSON content type, HEAD, strict query
strings, no NUL in a path, and an event stream that ends for good."""
import http.client
import json
import os
import re
import select
import socket
import stat
import time

import pytest

import test_api_support
from test_api_support import Daemon, error_shape, local_config, sh


@pytest.fixture
def daemon(tmp_path):
    d = Daemon(tmp_path, local_config()).start()
    yield d
    d.stop()


def fd_count(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def rss_kb(pid):
    status = open("/proc/%d/status" % pid).read()
    return int(re.search(r"^VmRSS:\s+(\d+)", status, re.M).group(1))


def settle(pid, bound, probe=fd_count, timeout=20):
    """Waits until probe(pid) <= bound; returns the last value."""
    deadline = time.monotonic() + timeout
    while True:
        v = probe(pid)
        if v <= bound or time.monotonic() > deadline:
            return v
        time.sleep(0.1)


class KeepAlive:
    """One kept-alive connection, reopened when the server closes it."""

    def __init__(self, d):
        self.d, self.conn = d, None

    def send(self, method, path, body=None, headers=None):
        for attempt in range(2):
            if self.conn is None:
                self.conn = http.client.HTTPConnection(
                    "127.0.0.1", self.d.port, timeout=30)
            try:
                self.conn.request(method, path, body=body,
                                  headers=headers or {})
                resp = self.conn.getresponse()
                data = resp.read()
                if resp.will_close:
                    self.close()
                return resp.status, data
            except (ConnectionError, http.client.HTTPException):
                self.close()
                if attempt == 1:
                    raise
        raise AssertionError("unreachable")

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None


def invalid_posts(d, n):
    """n POST /v1/runs with a body that is not JSON: each is a run that
    is refused (400) — the cheapest request that creates a run."""
    c = KeepAlive(d)
    h = {"Authorization": "Bearer " + d.token,
         "Content-Type": "application/json"}
    bad = 0
    for _ in range(n):
        try:
            st, _ = c.send("POST", "/v1/runs", b"{", h)
        except OSError:
            st = None
        bad += st != 400
    c.close()
    return bad


def new_connections_answer(d, n):
    ok = 0
    for _ in range(n):
        try:
            st, _, _ = d.request("GET", "/v1/health", token=None, timeout=10)
            ok += st == 200
        except OSError:
            pass
    return ok


def warm_idle(d):
    """The daemon's descriptors at rest, after one of each request kind
    (what opens lazily is open)."""
    st, _, res = d.run(sh("echo warm"))
    assert st == 200, res
    assert invalid_posts(d, 3) == 0
    assert new_connections_answer(d, 3) == 3
    time.sleep(0.3)
    return settle(d.proc.pid, 0, timeout=0.5)


# ---- descriptors (S1) ----------------------------------------------------

def test_5000_requests_leave_no_descriptor_behind(daemon):
    pid = daemon.proc.pid
    idle = warm_idle(daemon)
    bad = invalid_posts(daemon, 4900)
    for i in range(25):
        st, _, res = daemon.run(sh("echo %d" % i))
        assert st == 200 and res["stdout"] == "%d\n" % i, res
    assert bad == 0, "%d of 4900 requests failed" % bad
    now = settle(pid, idle + 3)
    assert now <= idle + 3, (idle, now)
    # Every new connection is served (select() refused those past 1023).
    assert new_connections_answer(daemon, 100) == 100
    st, _, body = daemon.request("GET", "/v1/health", token=None)
    assert body["resources"]["open_fds"] <= idle + 4, (idle, body)


def test_1500_requests_under_a_1024_descriptor_limit(tmp_path, monkeypatch):
    wrapper = tmp_path / "airlock-nofile-1024"
    wrapper.write_text("#!/bin/sh\nexec prlimit --nofile=1024:1024 -- "
                       "'%s' \"$@\"\n" % test_api_support.AIRLOCK_BIN)
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setattr(test_api_support, "AIRLOCK_BIN", str(wrapper))
    d = Daemon(tmp_path, local_config()).start()
    try:
        limits = open("/proc/%d/limits" % d.proc.pid).read()
        assert re.search(r"Max open files\s+1024\s+1024", limits), limits
        idle = warm_idle(d)
        assert invalid_posts(d, 1500) == 0
        st, _, res = d.run(sh("echo still"))
        assert st == 200 and res["stdout"] == "still\n", res
        st, _, body = d.request("GET", "/v1/health", token=None)
        assert st == 200 and body["ready"] is True, body
        assert body["resources"]["max_fds"] == 1024
        assert settle(d.proc.pid, idle + 3) <= idle + 3
        assert new_connections_answer(d, 50) == 50
    finally:
        d.stop()


def test_descriptors_and_connections_are_reported(daemon):
    pid = daemon.proc.pid
    # The idle supervisors start in the background (a socket and a pidfd
    # each): the count settles once they are ready.
    for _ in range(100):
        st, _, body = daemon.request("GET", "/v1/health", token=None)
        assert st == 200
        r = body["resources"]
        if abs(r["open_fds"] - fd_count(pid)) <= 3:
            break
        time.sleep(0.05)
    assert abs(r["open_fds"] - fd_count(pid)) <= 3, (r, fd_count(pid))
    limit = int(re.search(r"Max open files\s+(\d+)",
                          open("/proc/%d/limits" % pid).read()).group(1))
    assert r["max_fds"] == limit
    assert r["connections"] >= 1 and r["max_connections"] >= 1
    for _ in range(100):
        st, _, text = daemon.request("GET", "/metrics")
        assert st == 200
        m = re.search(r"^airlock_api_open_fds (\d+)$", text, re.M)
        assert m, text
        if abs(int(m.group(1)) - fd_count(pid)) <= 3:
            break
        time.sleep(0.05)
    assert abs(int(m.group(1)) - fd_count(pid)) <= 3, text
    assert re.search(r"^airlock_api_connections [1-9]", text, re.M)
    assert "airlock_api_max_fds %d" % limit in text
    assert re.search(r'^airlock_api_connection_timeouts_total'
                     r'\{phase="headers"\} 0$', text, re.M)


# ---- slow and many clients (T7) -------------------------------------------

def connect_from(d, source, timeout=5):
    return socket.create_connection(("127.0.0.1", d.port), timeout=timeout,
                                    source_address=(source, 0))


def closed_by_server(s, wait):
    """True when the server closed s (EOF or reset) within wait seconds."""
    r, _, _ = select.select([s], [], [], wait)
    if not r:
        return False
    try:
        return s.recv(1) == b""
    except ConnectionError:
        return True


def refused(socks, wait):
    """The sockets of socks the server closed within wait seconds."""
    out, deadline = [], time.monotonic() + wait
    while True:
        left = deadline - time.monotonic()
        open_ = [s for s in socks if s not in out]
        if left <= 0 or not open_:
            return out
        r, _, _ = select.select(open_, [], [], left)
        for s in r:
            try:
                if s.recv(1) == b"":
                    out.append(s)
            except ConnectionError:
                out.append(s)


def metric(d, name):
    st, _, text = d.request("GET", "/metrics", timeout=10)
    assert st == 200
    m = re.search("^" + re.escape(name) + r" (\d+)$", text, re.M)
    assert m, (name, text[-2000:])
    return int(m.group(1))


def test_256_slow_clients_leave_health_and_metrics_answerable(daemon):
    slow = []
    try:
        # Like the finding: 256 connections that send a request line and
        # then trickle header lines, never ending their headers.
        for _ in range(256):
            s = connect_from(daemon, "127.0.0.2")
            s.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n")
            slow.append(s)
        for round_ in range(3):
            for s in slow:
                s.sendall(b"X-Slow-%d: 1\r\n" % round_)
            t0 = time.monotonic()
            st, _, body = daemon.request("GET", "/v1/health", token=None,
                                         timeout=5)
            assert st == 200 and body["ready"] is True, body
            # The slow ones are really held meanwhile.
            assert body["resources"]["connections"] >= 257, body
            assert metric(daemon, "airlock_api_connections") >= 257
            assert time.monotonic() - t0 < 5
        assert not any(closed_by_server(s, 0) for s in slow)
    finally:
        for s in slow:
            s.close()


def test_connections_are_bounded_per_client_and_in_total(tmp_path):
    d = Daemon(tmp_path, local_config(), extra_args=[
        "--max-connections", "12", "--max-connections-per-client",
        "8"]).start()
    held = []
    try:
        a = [connect_from(d, "127.0.0.3") for _ in range(10)]
        held += a
        refused_a = refused(a, 2)
        assert len(refused_a) == 2, "per client: 8 of 10 held"
        b = [connect_from(d, "127.0.0.4") for _ in range(6)]
        held += b
        refused_b = refused(b, 2)
        assert len(refused_b) == 2, "in total: 12 held"
        for s in refused_a + refused_b:
            s.close()
            held.remove(s)
        # Room again once a client lets go.
        for s in held[:4]:
            s.close()
        held = held[4:]
        time.sleep(0.5)
        st, _, body = d.request("GET", "/v1/health", token=None, timeout=5)
        assert st == 200 and body["resources"]["max_connections"] == 12
    finally:
        for s in held:
            s.close()
        d.stop()


def trickle_until_closed(s, piece, seconds):
    """Sends piece(i) every 0.2 s until the server closes s; returns the
    time that took, or None when it stayed open for seconds."""
    t0 = time.monotonic()
    i = 0
    while time.monotonic() - t0 < seconds:
        time.sleep(0.2)
        try:
            s.sendall(piece(i))
        except OSError:
            return time.monotonic() - t0
        if closed_by_server(s, 0):
            return time.monotonic() - t0
        i += 1
    return None


def test_trickled_headers_and_bodies_are_cut_off(tmp_path):
    d = Daemon(tmp_path, local_config(), extra_args=[
        "--header-timeout-ms", "1000", "--body-timeout-ms",
        "1500"]).start()
    try:
        s = connect_from(d, "127.0.0.1")
        s.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n")
        took = trickle_until_closed(s, lambda i: b"X-%d: 1\r\n" % i, 10)
        s.close()
        assert took is not None, "headers trickled for 10 s, still open"
        assert took < 6, took
        s = connect_from(d, "127.0.0.1")
        s.sendall(b"POST /v1/runs HTTP/1.1\r\nHost: x\r\n"
                  b"Authorization: Bearer " + d.token.encode() + b"\r\n"
                  b"Content-Type: application/json\r\n"
                  b"Content-Length: 100000\r\n\r\n{")
        took = trickle_until_closed(s, lambda i: b" ", 10)
        s.close()
        assert took is not None, "a body trickled for 10 s, still open"
        assert took < 6, took
        assert metric(d, 'airlock_api_connection_timeouts_total'
                         '{phase="headers"}') >= 1
        assert metric(d, 'airlock_api_connection_timeouts_total'
                         '{phase="body"}') == 1
        # A prompt request on a fresh connection is unaffected.
        st, _, res = d.run(sh("echo prompt"))
        assert st == 200 and res["stdout"] == "prompt\n"
    finally:
        d.stop()


# ---- bodies (S4) ---------------------------------------------------------

def raw_answer(d, head, timeout=5):
    """Sends a request head (no body follows) and reads the answer."""
    s = socket.create_connection(("127.0.0.1", d.port), timeout=timeout)
    try:
        s.sendall(head)
        resp = http.client.HTTPResponse(s, method=head.split(b" ")[0]
                                        .decode())
        resp.begin()
        body = resp.read()
        return resp.status, resp.getheader("Content-Type"), body
    finally:
        s.close()


@pytest.mark.parametrize("head", [
    b"GET /v1/health HTTP/1.1\r\nHost: x\r\nContent-Length: 16777216\r\n",
    b"GET /v1/health HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n",
    b"HEAD /v1/health HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n",
    b"GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 16777216\r\n"
    b"Authorization: Bearer TOKEN\r\n",
    b"GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 16777216\r\n",
    b"POST /v1/runs/RUN/interrupt HTTP/1.1\r\nHost: x\r\n"
    b"Authorization: Bearer TOKEN\r\nContent-Length: 16777216\r\n",
])
def test_a_body_where_none_is_taken_is_refused_unread(daemon, head):
    _, _, res = daemon.run(sh("true"))
    head = head.replace(b"TOKEN", daemon.token.encode()).replace(
        b"RUN", res["run_id"].encode())
    # Only the head is sent: the answer must come without the body.
    st, ctype, body = raw_answer(daemon, head + b"\r\n")
    assert st == 413, (st, body)
    assert ctype == "application/json"
    if not head.startswith(b"HEAD"):
        error_shape(json.loads(body), 413, "body_not_allowed")


@pytest.mark.not_under_san(
    "ASan's allocator keeps freed memory in quarantine, so RSS "
    "says nothing about glibc giving bodies back")
def test_large_bodies_give_their_memory_back(daemon):
    pid = daemon.proc.pid
    warm_idle(daemon)
    before = rss_kb(pid)
    # Eight bodies of ~15 MiB: the request contract refuses each (the
    # code is over its bound), after they were read and parsed.
    big = json.dumps({"language": "sh",
                      "code": "#" * (15 * 1024 * 1024)}).encode()
    for _ in range(8):
        st, _, res = daemon.request("POST", "/v1/runs", big)
        assert st == 400, res
    after = settle(pid, before + 24 * 1024, probe=rss_kb, timeout=10)
    assert after <= before + 24 * 1024, (before, after)


# ---- HTTP details (S7) ---------------------------------------------------

def test_json_bodies_must_say_so(daemon, tmp_path):
    marker = tmp_path / "ran"
    req = json.dumps(sh("touch '%s'" % marker))
    for ctype in ("text/plain", "application/x-www-form-urlencoded",
                  "application/json; charset=latin-1", None):
        h = {} if ctype is None else {"Content-Type": ctype}
        conn = http.client.HTTPConnection("127.0.0.1", daemon.port,
                                          timeout=30)
        h["Authorization"] = "Bearer " + daemon.token
        conn.request("POST", "/v1/runs", body=req, headers=h)
        resp = conn.getresponse()
        body = json.loads(resp.read())
        conn.close()
        assert resp.status == 415, (ctype, body)
        error_shape(body, 415, "unsupported_media_type")
    assert not marker.exists(), "a non-JSON body ran"
    st, _, res = daemon.request(
        "POST", "/v1/runs", req,
        headers={"Content-Type": "Application/JSON; charset=UTF-8"})
    assert st == 200 and res["outcome"] == "completed", res
    assert marker.exists()
    st, _, acc = daemon.run(sh("sleep 5"), wait=False)
    st, _, body = daemon.request(
        "POST", "/v1/runs/%s/inbox" % acc["run_id"],
        json.dumps({"id": "e", "event": {}}),
        headers={"Content-Type": "text/plain"})
    assert st == 415, body
    daemon.request("POST", "/v1/runs/%s/interrupt" % acc["run_id"])


@pytest.mark.parametrize("body", [b"{", b"[]", b'{"language":"sh"}'])
def test_wait_false_answers_a_refusal_at_once(daemon, body):
    st, h, res = daemon.request("POST", "/v1/runs?wait=false", body)
    assert st == 400, res
    assert res["outcome"] == "invalid_request", res


def test_head_answers_like_get_without_a_body(daemon):
    _, _, res = daemon.run(sh("echo x"))
    rid = res["run_id"]
    for path, token in (("/v1/health", None), ("/metrics", "default"),
                        ("/v1/capabilities", "default"),
                        ("/v1/runs", "default"), ("/v1/runs/" + rid,
                                                  "default"),
                        ("/v1/runs/%s/artifacts/log" % rid, "default")):
        gst, gh, gbody = daemon.request("GET", path, token=token, raw=True)
        hst, hh, hbody = daemon.request("HEAD", path, token=token, raw=True)
        assert hst == gst == 200, (path, hst, gst)
        assert hbody == b"", path
        assert hh["content-type"] == gh["content-type"], path
    st, h, _ = daemon.request("HEAD", "/v1/runs/%s/interrupt" % rid,
                              raw=True)
    assert st == 405 and h["allow"] == "POST"


@pytest.mark.parametrize("method,path", [
    ("POST", "/v1/runs?wait=false&wait=true"),
    ("POST", "/v1/runs?wait=true&wait=true"),
    ("POST", "/v1/runs?wait=false&tenant=other"),
    ("POST", "/v1/runs?wait"),
    ("GET", "/v1/runs?limit=1&limit=1000"),
    ("GET", "/v1/runs?limit=5&limit=5"),
    ("GET", "/v1/runs?page=2"),
    ("GET", "/v1/health?verbose=1"),
])
def test_query_parameters_are_known_and_single(daemon, method, path):
    st, _, body = daemon.request(method, path,
                                 sh("true") if method == "POST" else None)
    assert st == 400, body
    error_shape(body, 400, "invalid_query")


def test_a_run_id_with_a_nul_is_no_run(daemon):
    _, _, res = daemon.run(sh("echo secret"))
    rid = res["run_id"]
    assert daemon.request("GET", "/v1/runs/" + rid)[0] == 200
    for path in ("/v1/runs/%s%%00x" % rid, "/v1/runs/%s%%00" % rid,
                 "/v1/runs/%s%%00/events" % rid,
                 "/v1/runs/%s/events%%00" % rid,
                 "/v1/runs/%s/artifacts/log%%00" % rid):
        st, _, body = daemon.request("GET", path)
        assert st == 404, (path, body)
        error_shape(body, 404, "not_found")
        assert "secret" not in json.dumps(body)
    st, _, body = daemon.request("POST", "/v1/runs?wait=false%00x",
                                 sh("true"))
    assert st == 400, body


def test_repeated_authorization_is_refused(daemon):
    s = socket.create_connection(("127.0.0.1", daemon.port), timeout=10)
    auth = b"Authorization: Bearer " + daemon.token.encode() + b"\r\n"
    s.sendall(b"GET /v1/capabilities HTTP/1.1\r\nHost: x\r\n" + auth +
              b"Authorization: Bearer nope\r\n\r\n")
    resp = http.client.HTTPResponse(s)
    resp.begin()
    body = json.loads(resp.read())
    s.close()
    assert resp.status == 400
    error_shape(body, 400, "invalid_header")


def read_stream(d, rid, last_id=None):
    """(status, [(event, id, data)]) of GET /v1/runs/{rid}/events."""
    conn = http.client.HTTPConnection("127.0.0.1", d.port, timeout=30)
    h = {"Authorization": "Bearer " + d.token}
    if last_id is not None:
        h["Last-Event-ID"] = last_id
    conn.request("GET", "/v1/runs/%s/events" % rid, headers=h)
    resp = conn.getresponse()
    events, ev, eid, data = [], None, None, []
    if resp.status == 200:
        for line in resp:
            line = line.decode().rstrip("\n")
            if line == "":
                if ev is not None:
                    events.append((ev, eid, json.loads("\n".join(data))))
                ev, eid, data = None, None, []
            elif line.startswith("event: "):
                ev = line[7:]
            elif line.startswith("id: "):
                eid = line[4:]
            elif line.startswith("data: "):
                data.append(line[6:])
    else:
        assert resp.read() == b""
    conn.close()
    return resp.status, events


def test_an_event_stream_ends_for_good_after_its_result(daemon):
    st, _, res = daemon.run(sh("echo one; echo two >&2", streaming=True))
    assert st == 200, res
    rid = res["run_id"]
    st, events = read_stream(daemon, rid)
    assert st == 200 and events[-1][0] == "result", events
    result_id = events[-1][1]
    assert result_id is not None, "the result event carries an id"
    assert int(result_id) > max(int(e[1]) for e in events[:-1])
    # A client that saw the result and reconnects (EventSource does) is
    # told the stream is over: 204, and it stops.
    assert read_stream(daemon, rid, result_id)[0] == 204
    assert read_stream(daemon, rid, str(int(result_id) + 7))[0] == 204
    # One that missed the result gets just that.
    st, rest = read_stream(daemon, rid, str(int(result_id) - 1))
    assert st == 200 and [e[0] for e in rest] == ["result"], rest
    st, _, body = daemon.request("GET", "/v1/runs/%s/events" % rid,
                                 headers={"Last-Event-ID": "x1"})
    assert st == 400
    error_shape(body, 400, "invalid_header")
