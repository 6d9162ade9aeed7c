"""A corpus of hostile and malformed HTTP requests against a real daemon,
sent over raw sockets: every answer is a typed JSON error, or for what
libmicrohttpd refuses before any handler runs (an unparseable request
line, header syntax, Content-Length) its own plain answer as documented in
docs/api.md ("Requests refused before routing"); and the daemon's
descriptors, threads and memory are back at their idle values afterwards.
"""
import json
import os
import re
import socket
import time

import pytest

from test_api_support import Daemon, local_config

# libmicrohttpd's own answers (text/html or empty), documented in
# docs/api.md: malformed request line or headers, Content-Length it
# cannot parse or that overflows, a request line or headers past its
# per-connection memory, an HTTP version it does not speak.
MHD_PLAIN = {400, 413, 414, 431, 501, 505}


@pytest.fixture
def daemon(tmp_path):
    d = Daemon(tmp_path, local_config()).start()
    yield d
    d.stop()


def proc_figures(pid):
    fds = len(os.listdir("/proc/%d/fd" % pid))
    status = open("/proc/%d/status" % pid).read()
    threads = int(re.search(r"^Threads:\s+(\d+)", status, re.M).group(1))
    rss_kb = int(re.search(r"^VmRSS:\s+(\d+)", status, re.M).group(1))
    return fds, threads, rss_kb


def exchange(port, data, timeout=10):
    """Sends data and reads until the peer closes or the timeout: returns
    the bytes read and whether the connection was closed by the server."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    out = b""
    try:
        try:
            s.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass
        # Nothing more will come from us: the server answers or closes.
        try:
            s.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                chunk = s.recv(65536)
            except ConnectionResetError:
                break
            except socket.timeout:
                raise AssertionError("no answer and no close within %ds: %r"
                                     % (timeout, data[:200]))
            if not chunk:
                break
            out += chunk
    finally:
        s.close()
    return out


def parse_first(raw):
    """The first HTTP response in raw: (status, headers dict, body)."""
    head, sep, rest = raw.partition(b"\r\n\r\n")
    assert sep, "no complete response head: %r" % raw[:300]
    lines = head.decode("latin-1").split("\r\n")
    m = re.match(r"HTTP/1\.[01] (\d{3}) ", lines[0] + " ")
    assert m, "not an HTTP status line: %r" % lines[0]
    hdrs = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        hdrs[k.strip().lower()] = v.strip()
    n = int(hdrs.get("content-length", len(rest)))
    return int(m.group(1)), hdrs, rest[:n]


def corpus(token, run_id):
    """(name, raw request bytes, expectation) for >= 150 distinct hostile
    requests; run_id names a finished run of the token's tenant.
    expectation: "json" (a typed JSON error), "plain" (libmicrohttpd's
    own answer, or its close, is allowed too), "ok" (harmless: any typed
    JSON answer, a success included), "any-json" (a typed JSON error or a
    refusal result)."""
    rid = run_id.encode()
    auth = b"Authorization: Bearer " + token.encode() + b"\r\n"
    ctj = b"Content-Type: application/json\r\n"
    cases = []

    def add(name, raw, expect="json"):
        cases.append((name, raw, expect))

    def req(method, path, headers=b"", body=b"", version=b"HTTP/1.1",
            with_auth=True, with_len=True):
        h = b"Host: x\r\nConnection: close\r\n"
        if with_auth:
            h += auth
        h += headers
        if with_len and body:
            h += b"Content-Length: %d\r\n" % len(body)
        return method + b" " + path + b" " + version + b"\r\n" + h + \
            b"\r\n" + body

    # -- bad request lines (libmicrohttpd refuses most itself)
    for i, line in enumerate([
            b"GET\r\n\r\n", b"GET /v1/health\r\n\r\n",
            b" GET /v1/health HTTP/1.1\r\n\r\n",
            b"GET  /v1/health HTTP/1.1\r\n\r\n",
            b"GET /v1/health HTTP/9.9\r\nHost: x\r\n\r\n",
            b"GET /v1/health HTTP/1.1 extra\r\nHost: x\r\n\r\n",
            b"GET /v1/health FTP/1.0\r\n\r\n",
            b"\r\n\r\n\r\n", b"GET /v1/health HTTP/1.1\n\n",
            b"GET /v1/health HTTP/1.1\r\r\n\r\n",
            b"\x00\x01\x02 /v1/health HTTP/1.1\r\n\r\n",
            b"GET /\xff\xfe HTTP/1.1\r\nHost: x\r\n\r\n",
            b"GET http://evil/v1/health HTTP/1.1\r\nHost: x\r\n\r\n",
            b"GET * HTTP/1.1\r\nHost: x\r\n\r\n",
            b"GET /v1/health HTTP/1.1\r\nHost: x\r\n",  # never ends
            b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03",  # TLS hello
            b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
    ]):
        # libmicrohttpd tolerates a doubled space and bare LF endings.
        add("request-line-%d" % i, line, "ok" if i in (3, 8) else "plain")
    add("request-line-huge-uri",
        b"GET /" + b"a" * 70000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", "plain")
    add("request-line-only-spaces", b"        \r\n\r\n", "plain")

    # -- methods
    for m in [b"PUT", b"DELETE", b"PATCH", b"OPTIONS", b"TRACE",
              b"CONNECT", b"FOO", b"get", b"POSTX", b"G\x01T",
              b"M" * 300, b"PROPFIND"]:
        add("method-" + m[:12].decode("latin-1"),
            req(m, b"/v1/runs"), "plain")
    add("head-post-only", req(b"HEAD", b"/v1/runs/abc/interrupt"), "ok")
    add("get-post-only", req(b"GET", b"/v1/runs/abc/inbox"))
    add("post-get-only", req(b"POST", b"/v1/health", ctj, b"{}"))

    # -- paths
    for i, p in enumerate([
            b"/", b"/v1", b"/v1/", b"/v1/runs/", b"/v1/runs//events",
            b"/v1/health/", b"//v1/health", b"/v1/./health",
            b"/v1/runs/../health", b"/v1/runs/%2e%2e/health",
            b"/v1/runs/a%2Fb", b"/v1/runs/abc%00", b"/v1/runs/abc%00x",
            b"/v1/runs/abc%00/events", b"/v1/runs/abc/events%00",
            b"/v1/runs/" + b"a" * 40, b"/v1/runs/" + b"a" * 5000,
            b"/v1/runs/abc/artifacts/", b"/v1/runs/abc/artifacts/../log",
            b"/v1/runs/abc/artifacts/LOG", b"/v1/runs/abc/nope",
            b"/v1/runs/a b", b"/v1/runs/%", b"/v1/runs/%zz",
            b"/v1/runs/%0a", b"/v1/runs/%0d%0aX-Injected:%201",
            b"/v1/runs/\xc3\xa9", b"/v1/runs/%c3%a9", b"/metrics/",
            b"/v1/capabilities/x", b"/v1/health%00", b"/v1/HEALTH",
            b"/v1/runs/abc/interrupt/x", b"/%76%31/health%3F",
            b"/v1/runs/abc;x", b"/v1/runs/abc#frag",
            # A real run behind a NUL, a slash or a case change.
            b"/v1/runs/" + rid + b"%00", b"/v1/runs/" + rid + b"%00x",
            b"/v1/runs/" + rid + b"%00/events",
            b"/v1/runs/" + rid + b"/events%00",
            b"/v1/runs/" + rid + b"/artifacts/log%00x",
            b"/v1/runs/" + rid + b"%2Fevents%00",
            b"/v1/runs/" + rid + b"/", b"/v1/runs/" + rid.upper(),
            b"/v1/runs/" + rid + b"/artifacts/",
            b"/v1/runs/" + rid + b"/artifacts/%6c%6f%67%00",
    ]):
        add("path-%d" % i, req(b"GET", p), "plain")

    # -- query strings
    for i, q in enumerate([
            b"/v1/runs?limit=1&limit=2", b"/v1/runs?limit=%00",
            b"/v1/runs?limit=1%00", b"/v1/runs?limit=-1",
            b"/v1/runs?limit=99999999999999999999", b"/v1/runs?limit=",
            b"/v1/runs?limit", b"/v1/runs?after=../../x",
            b"/v1/runs?after=%00", b"/v1/runs?after=a&after=b",
            b"/v1/runs?nope=1", b"/v1/runs?=1", b"/v1/runs?&&&",
            b"/v1/runs?limit=1&" + b"x=1&" * 200,
            b"/v1/health?x=1", b"/metrics?format=json",
            b"/v1/runs?LIMIT=1", b"/v1/runs?limit=1%26after=x",
            b"/v1/runs?wait=false", b"/v1/runs/abc?wait=true",
    ]):
        add("query-%d" % i, req(b"GET", q), "plain")
    for i, q in enumerate([
            b"/v1/runs?wait=false&wait=true", b"/v1/runs?wait=maybe",
            b"/v1/runs?wait=false%00x", b"/v1/runs?wait", b"/v1/runs?wait=",
            b"/v1/runs?wait=FALSE", b"/v1/runs?limit=1",
            b"/v1/runs?wait%00=false",
    ]):
        add("post-query-%d" % i,
            req(b"POST", q, ctj, b'{"language":"sh","code":"true"}'))

    # -- headers
    big = b"X-Big: " + b"a" * 40000 + b"\r\n"
    many = b"".join(b"X-H%d: v\r\n" % i for i in range(3000))
    for i, h in enumerate([
            big, many, b"Bad Header\r\n", b": novalue\r\n",
            b"X-A : b\r\n", b"X-A:\x00b\r\n", b"X-A: b\r\n c\r\n",
            b"Host: a\r\n", b"Authorization: Bearer x\r\n",
            b"Last-Event-ID: 1\r\nLast-Event-ID: 2\r\n",
            b"Content-Type: a\r\nContent-Type: b\r\n",
            b"X-Airlock-Run-Id: a\r\nX-Airlock-Run-Id: b\r\n",
            b"Transfer-Encoding: gzip\r\n",
            b"Transfer-Encoding: chunked, gzip\r\n",
            b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n",
            b"Expect: 100-continue\r\n", b"Connection: upgrade\r\n"
            b"Upgrade: websocket\r\n",
            b"X-\xff\xfe: v\r\n", b"Cookie: " + b"c=" * 2000 + b"\r\n",
    ]):
        # What libmicrohttpd tolerates (an empty name, a space before the
        # colon, a NUL, folding, Expect, Upgrade, odd bytes) is harmless
        # on a route that reads no header but the token.
        add("header-%d" % i, req(b"GET", b"/v1/health", h),
            "ok" if i in (3, 4, 5, 6, 15, 16, 17, 18) else "plain")

    # -- Content-Length
    for i, cl in enumerate([
            b"-1", b"+5", b"abc", b"1e3", b"0x10", b"99999999999999999999999",
            b"18446744073709551616", b"18446744073709551615", b"",
            b"5, 5", b" 5", b"16777217", b"4294967296"]):
        add("content-length-%d" % i,
            req(b"POST", b"/v1/runs",
                ctj + b"Content-Length: " + cl + b"\r\n", b"",
                with_len=False) + b'{"a":1}', "plain")
    add("content-length-duplicate",
        req(b"POST", b"/v1/runs",
            ctj + b"Content-Length: 2\r\nContent-Length: 30\r\n",
            with_len=False) + b"{}", "plain")
    add("content-length-short",
        req(b"POST", b"/v1/runs", ctj + b"Content-Length: 100\r\n",
            with_len=False) + b"{}", "plain")
    add("content-length-on-get",
        req(b"GET", b"/v1/health", b"Content-Length: 16777216\r\n"))
    add("content-length-on-metrics",
        req(b"GET", b"/metrics", b"Content-Length: 10\r\n",
            with_len=False) + b"0123456789")
    add("content-length-on-interrupt",
        req(b"POST", b"/v1/runs/" + rid + b"/interrupt",
            b"Content-Length: 1000000\r\n"))
    add("content-length-on-events",
        req(b"GET", b"/v1/runs/" + rid + b"/events",
            b"Content-Length: 1\r\n", with_len=False) + b"x")
    add("content-length-on-artifact",
        req(b"GET", b"/v1/runs/" + rid + b"/artifacts/log",
            b"Content-Length: 3\r\n", with_len=False) + b"abc")
    add("content-length-on-head",
        req(b"HEAD", b"/v1/health", b"Content-Length: 5\r\n",
            with_len=False) + b"hello", "any-json")

    # -- chunked abuse
    te = b"Transfer-Encoding: chunked\r\n"
    for i, body in enumerate([
            b"zz\r\n{}\r\n0\r\n\r\n", b"-1\r\n{}\r\n0\r\n\r\n",
            b"2\r\n{}", b"2\r\n{}\r\n", b"FFFFFFFFFFFFFFFFFFFF\r\nx\r\n",
            b"2;ext=" + b"e" * 5000 + b"\r\n{}\r\n0\r\n\r\n",
            b"2\r\n{}\r\n0\r\nX-Trailer: " + b"t" * 40000 +
            b"\r\n\r\n",
            b"1\r\n{\r\n1\r\n}\r\n0\r\n\r\n",
            b"0\r\n\r\n", b"2\r\n{}XX0\r\n\r\n",
    ]):
        add("chunked-%d" % i,
            req(b"POST", b"/v1/runs", ctj + te, with_len=False) + body,
            "plain")
    add("chunked-on-get",
        req(b"GET", b"/v1/health", te, with_len=False) +
        b"5\r\nhello\r\n0\r\n\r\n")
    add("chunked-on-capabilities",
        req(b"GET", b"/v1/capabilities", te, with_len=False) +
        b"0\r\n\r\n")

    # -- authentication
    for i, a in enumerate([
            b"", b"Bearer", b"Bearer ", b"bearer " + token.encode(),
            b"Basic dXNlcjpwYXNz", b"Bearer " + token.encode() + b"x",
            b"Bearer " + token.encode()[:-1], b"Bearer  " + token.encode(),
            b"Bearer " + b"a" * 5000, b"Bearer \x00",
            b"Bearer " + token.encode() + b", Bearer x",
            b"Token " + token.encode(),
    ]):
        # The scheme is case-insensitive (RFC 9110) and may be followed
        # by more than one space: those two are the token, answered 200.
        add("auth-%d" % i,
            req(b"GET", b"/v1/capabilities",
                b"Authorization: " + a + b"\r\n", with_auth=False),
            "ok" if i in (3, 7) else "json")
    add("auth-twice",
        req(b"GET", b"/v1/capabilities", auth + auth, with_auth=False))
    add("auth-missing-post",
        req(b"POST", b"/v1/runs", ctj, b"{}", with_auth=False))

    # -- content types
    for i, ct in enumerate([
            None, b"text/plain", b"application/x-www-form-urlencoded",
            b"multipart/form-data; boundary=x", b"application/jsonx",
            b"application/json; charset=latin-1", b"application/xml",
            b"application/json;charset=utf-16", b"*/*", b"",
            b"APPLICATION/JSON; charset=\"ascii\"", b"text/json",
    ]):
        h = b"" if ct is None else b"Content-Type: " + ct + b"\r\n"
        add("content-type-%d" % i,
            req(b"POST", b"/v1/runs", h,
                b'{"language":"sh","code":"true"}'), "plain")
    add("content-type-inbox",
        req(b"POST", b"/v1/runs/abc/inbox", b"Content-Type: text/plain\r\n",
            b'{"id":"e","event":{}}'))

    # -- bodies (typed 400 results: the request contract's refusals)
    for i, body in enumerate([
            b"{", b"[]", b"null", b"1", b'"x"', b"\xff\xfe",
            b'{"language":"sh","code":"true"} x',
            b'{"language":"sh","code":"a\\u0000b"}',
            b'{"language":"sh","language":"sh","code":"true"}',
            b'{"language":"sh","code":"true","tenant":"other"}',
            b"[" * 100000, b'{"a":' * 5000 + b"1" + b"}" * 5000,
            b'{"language":"sh","code":"' + b"\\ud800" + b'"}',
            b'{"language":"\x00","code":"true"}',
            b"\xef\xbb\xbf{}", b" " * 1000,
    ]):
        add("body-%d" % i, req(b"POST", b"/v1/runs", ctj, body), "any-json")
        if i < 6:
            add("body-nowait-%d" % i,
                req(b"POST", b"/v1/runs?wait=false", ctj, body), "any-json")
    for i, body in enumerate([
            b"{", b'{"id":"e"}', b'{"id":"e","event":1}',
            b'{"id":"a b","event":{}}', b'{"id":"e","event":{},"x":1}',
    ]):
        add("inbox-body-%d" % i,
            req(b"POST", b"/v1/runs/" + rid + b"/inbox", ctj, body))

    # -- event stream resumption headers
    for i, v in enumerate([b"abc", b"-1", b"18446744073709551615",
                           b"1 2", b"0x10", b"99999999999999999999999",
                           b"\xff", b"1.5"]):
        add("last-event-id-%d" % i,
            req(b"GET", b"/v1/runs/" + rid + b"/events",
                b"Last-Event-ID: " + v + b"\r\n"))
    # Past the result of a finished run: 204, the stream is over.
    add("last-event-id-past-result",
        req(b"GET", b"/v1/runs/" + rid + b"/events",
            b"Last-Event-ID: 4000000000\r\n"), "ok")
    return cases


def test_hostile_requests_get_typed_answers_and_leave_nothing_behind(
        daemon):
    pid = daemon.proc.pid
    # Idle: after one of everything, so lazily opened things are open.
    st, _, _ = daemon.request("GET", "/v1/health", token=None)
    st, _, res = daemon.run({"language": "sh", "code": "echo warm",
                             "grant": {"network": "host"}})
    assert st == 200, res
    daemon.request("POST", "/v1/runs", b"{")
    time.sleep(0.5)
    idle = proc_figures(pid)

    cases = corpus(daemon.token, res["run_id"])
    names = [c[0] for c in cases]
    assert len(set(names)) == len(names)
    assert len(cases) >= 150, len(cases)
    plain = 0
    for name, raw, expect in cases:
        out = exchange(daemon.port, raw)
        if not out:
            # Closed without an answer: only for what is not HTTP at all
            # or was cut short (libmicrohttpd's documented close).
            assert expect == "plain", name
            continue
        st, h, body = parse_first(out)
        if st == 100:  # Expect: 100-continue, then the answer
            st, h, body = parse_first(out.partition(b"\r\n\r\n")[2])
        ctype = h.get("content-type", "")
        assert st != 500, name
        if st == 204:
            assert expect == "ok" and body == b"", (name, body)
            continue
        if ctype.startswith("application/json"):
            if raw.startswith(b"HEAD "):
                assert body == b"", name
                continue
            doc = json.loads(body)
            # Nothing the client sent is echoed back.
            assert daemon.token not in body.decode("utf-8", "replace")
            if st < 400:
                assert expect == "ok", (name, st, doc)
                continue
            if "outcome" in doc:
                # A refusal result of the request contract.
                assert expect in ("any-json", "plain"), (name, doc)
                assert doc["outcome"] not in ("completed", "failed"), name
                continue
            assert doc["status"] == st and doc["error"], (name, doc)
            assert isinstance(doc["message"], str), (name, doc)
        else:
            assert expect == "plain", (name, st, ctype, body[:200])
            assert st in MHD_PLAIN, (name, st, body[:200])
            plain += 1
    # Most of the corpus reaches the handlers: typed JSON.
    assert plain < len(cases) // 3, plain

    # The daemon still serves, and is back at its idle figures.
    st, _, body = daemon.request("GET", "/v1/health", token=None)
    assert st == 200, body
    deadline = time.monotonic() + 20
    while True:
        now = proc_figures(pid)
        fds_ok = now[0] <= idle[0] + 2
        threads_ok = now[1] <= idle[1] + 2
        # ASan quarantines freed memory: RSS is only the daemon's own
        # figure in the plain build (docs/testing.md)
        rss_ok = now[2] <= idle[2] + 16 * 1024 or \
            os.environ.get("AIRLOCK_SAN") == "1"
        if (fds_ok and threads_ok and rss_ok) or \
                time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert fds_ok, (idle, now)
    assert threads_ok, (idle, now)
    assert rss_ok, (idle, now)
