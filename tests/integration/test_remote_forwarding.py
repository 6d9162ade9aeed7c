"""The `remote` provider runs under the caller's run id and forwards the
secrets its host resolved: X-Airlock-Run-Id and X-Airlock-Forwarded-Env
(docs/api.md).  The back end takes a forwarded environment only from a
tenant with accept_forwarded_env; secrets never travel in plain text to a
host that is not loopback; the value never lands in the audit trail, a
result, a state file or a log."""
import base64
import hashlib
import http.server
import json
import os
import threading
import time
import uuid

import pytest

from test_api_support import GRANT_ALL, Daemon, local_config, sh

SECRET = "fwd-" + uuid.uuid4().hex + " with space=eq"
TOKEN_OPEN = "open-" + uuid.uuid4().hex
TOKEN_CLOSED = "closed-" + uuid.uuid4().hex


def sha(s):
    return hashlib.sha256(s.encode()).hexdigest()


def secrets_file(path, values):
    path.write_text(json.dumps(values))
    os.chmod(path, 0o600)
    return str(path)


def front_config(url, token, secrets_path):
    grant = dict(GRANT_ALL, secrets=["FWD_SECRET"])
    # remote is not airlock's own sandbox: the deployment acknowledges it
    return {
        "acknowledged_providers": ["remote"],
        "providers": [{"provider": "remote",
                       "config": {"url": url, "token": token,
                                  "timeout_ms": 5000}}],
        "tenants": {"default": {"languages": ["sh"], "grant": grant}},
        "secrets": {"file": secrets_path},
    }


def secret_req(code):
    req = sh(code)
    req["grant"]["secrets"] = ["FWD_SECRET"]
    return req


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("fwd")
    grant = dict(GRANT_ALL, secrets=["FWD_SECRET"])
    back_cfg = local_config(
        tenants=("open", "closed"),
        tokens={sha(TOKEN_OPEN): "open", sha(TOKEN_CLOSED): "closed"},
        extra={"secrets": {"file": secrets_file(tmp / "back-secrets.json",
                                                {})}})
    back_cfg["tenants"]["open"]["grant"] = grant
    back_cfg["tenants"]["open"]["accept_forwarded_env"] = True
    back_cfg["tenants"]["closed"]["grant"] = grant
    back = Daemon(tmp, back_cfg, name="back").start()
    front = Daemon(tmp, front_config(
        "http://127.0.0.1:%d" % back.port, TOKEN_OPEN,
        secrets_file(tmp / "front-secrets.json", {"FWD_SECRET": SECRET})),
        name="front").start()
    yield front, back, tmp
    front.stop()
    back.stop()


def post(back, body, token, headers, wait=True):
    return back.request("POST", "/v1/runs" + ("" if wait else "?wait=false"),
                        body, token=token, headers=headers)


def test_round_trip_runs_under_the_callers_id_with_the_secret(pair):
    front, back, _ = pair
    st, _, res = front.run(secret_req(
        'printf %s "$FWD_SECRET" | sha256sum | cut -c1-64; '
        'echo "$AIRLOCK_RUN_ID"'))
    assert st == 200, json.dumps(res)
    assert res["outcome"] == "completed", res
    digest, run_id = res["stdout"].split()
    assert digest == sha(SECRET)
    # The program saw the front's run id, and the back end knows the run
    # under that same id.
    assert run_id == res["run_id"]
    st, _, bres = back.request("GET", "/v1/runs/" + run_id,
                               token=TOKEN_OPEN)
    assert st == 200 and bres["run_id"] == run_id
    assert bres["outcome"] == "completed"


def test_the_secret_leaves_no_trace(pair):
    front, back, tmp = pair
    st, _, res = front.run(secret_req('test -n "$FWD_SECRET" && echo set'))
    assert st == 200 and res["stdout"] == "set\n", res
    needles = [SECRET.encode(),
               base64.b64encode(json.dumps(
                   {"FWD_SECRET": SECRET},
                   separators=(",", ":")).encode())]
    assert SECRET not in json.dumps(res)
    for d in (front, back):
        for root, _, files in os.walk(d.dir):
            for name in files:
                p = os.path.join(root, name)
                if p.endswith("secrets.json"):
                    continue
                try:
                    data = open(p, "rb").read()
                except OSError:
                    continue
                for n in needles:
                    assert n not in data, p
        # The audit trail, as the CLI shows it.
        for n in needles:
            assert n.decode() not in d.log()


def test_caller_chosen_run_id_is_taken_once(pair):
    _, back, _ = pair
    rid = str(uuid.uuid4())
    st, _, res = post(back, sh('echo "$AIRLOCK_RUN_ID"'), TOKEN_OPEN,
                      {"X-Airlock-Run-Id": rid})
    assert st == 200 and res["run_id"] == rid, res
    assert res["stdout"] == rid + "\n"
    # Reused: by the same tenant or another one.
    for tok in (TOKEN_OPEN, TOKEN_CLOSED):
        st, _, res = post(back, sh("true"), tok, {"X-Airlock-Run-Id": rid})
        assert st == 409, res
        assert res["outcome"] == "conflict"
        assert res["reason"] == "run_id_in_use"
        assert res["run_id"] != rid


def test_a_run_directory_on_disk_holds_its_id(pair):
    _, back, _ = pair
    rid = str(uuid.uuid4())
    d = back.state / "runs" / rid
    d.mkdir(mode=0o700)
    try:
        st, _, res = post(back, sh("true"), TOKEN_OPEN,
                          {"X-Airlock-Run-Id": rid})
        assert st == 409 and res["reason"] == "run_id_in_use", res
    finally:
        d.rmdir()


def test_concurrent_requests_for_one_id_get_it_once(pair):
    _, back, _ = pair
    rid = str(uuid.uuid4())
    got = []

    def one():
        got.append(post(back, sh("sleep 0.3"), TOKEN_OPEN,
                        {"X-Airlock-Run-Id": rid})[0])
    ts = [threading.Thread(target=one) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(30)
    assert sorted(got) == [200, 409, 409, 409], got
    assert back.wait_finished(rid, token=TOKEN_OPEN)["outcome"] == \
        "completed"


@pytest.mark.parametrize("bad", [
    "not-a-uuid", str(uuid.uuid4()).upper(), "{%s}" % uuid.uuid4(),
    str(uuid.uuid4()).replace("-", ""), str(uuid.uuid4()) + "0"],
    # Fixed ids: the values are random, and pytest-xdist needs every
    # worker to collect the same names (make check-fast).
    ids=["not-a-uuid", "upper-case", "braced", "no-dashes", "too-long"])
def test_a_malformed_run_id_is_invalid(pair, bad):
    _, back, _ = pair
    st, _, res = post(back, sh("true"), TOKEN_OPEN,
                      {"X-Airlock-Run-Id": bad})
    assert st == 400, res
    assert res["outcome"] == "invalid_request" and res["reason"] == "run_id"
    assert bad not in json.dumps(res)


def fwd_header(obj):
    return base64.b64encode(json.dumps(obj).encode()).decode()


def test_a_tenant_without_the_flag_is_denied(pair):
    _, back, _ = pair
    st, _, res = post(back, sh("true"), TOKEN_CLOSED,
                      {"X-Airlock-Forwarded-Env":
                       fwd_header({"FWD_SECRET": SECRET})})
    assert st == 403, res
    assert res["outcome"] == "denied"
    assert res["reason"] == "gate:forwarded_env"
    assert SECRET not in json.dumps(res) and SECRET not in back.log()


@pytest.mark.parametrize("value", [
    "%%%not base64", fwd_header([SECRET]), fwd_header({"PATH": SECRET}),
    fwd_header({"AIRLOCK_X": SECRET}), fwd_header({"LD_PRELOAD": SECRET}),
    fwd_header({"1BAD": SECRET}), fwd_header({"N": 5}),
    fwd_header({"V%d" % i: SECRET for i in range(65)}),
    fwd_header({"BIG": "x" * 9000})],
    ids=["not-base64", "a-list", "path", "airlock-prefix", "ld-preload",
         "bad-name", "not-a-string", "too-many", "too-big"])
def test_a_malformed_forwarded_env_is_invalid(pair, value):
    _, back, _ = pair
    st, _, res = post(back, sh("true"), TOKEN_OPEN,
                      {"X-Airlock-Forwarded-Env": value})
    assert st == 400, res
    assert res["outcome"] == "invalid_request"
    assert res["reason"] == "forwarded_env"
    assert SECRET not in json.dumps(res)


def test_forwarded_env_reaches_the_program_directly(pair):
    _, back, _ = pair
    st, _, res = post(back, sh('printf %s "$ONLY_FWD"'), TOKEN_OPEN,
                      {"X-Airlock-Forwarded-Env":
                       fwd_header({"ONLY_FWD": "plain value"})})
    assert st == 200 and res["stdout"] == "plain value", res


class Recorder(http.server.BaseHTTPRequestHandler):
    """A proxy that answers the front's probe for http://192.0.2.1:9 with
    the real back end's capabilities and records every request."""
    seen = []
    caps = b"{}"

    def log_message(self, *a):
        pass

    def do_GET(self):
        Recorder.seen.append(("GET", self.path))
        body = Recorder.caps if self.path.endswith("/v1/capabilities") \
            else b'{"status":"ok","live":true,"ready":true}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        Recorder.seen.append(("POST", self.path, dict(self.headers)))
        self.send_response(503)
        self.send_header("Content-Length", "0")
        self.end_headers()


def test_no_secret_in_plain_text_to_a_non_loopback_host(pair, tmp_path,
                                                          monkeypatch):
    _, back, _ = pair
    _, _, caps = back.request("GET", "/v1/capabilities", token=TOKEN_OPEN)
    Recorder.caps = json.dumps(caps).encode()
    Recorder.seen = []
    proxy = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    # The front reaches "192.0.2.1" only through the recording proxy, so
    # whatever it would send is seen here.
    monkeypatch.setenv("http_proxy",
                       "http://127.0.0.1:%d" % proxy.server_address[1])
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.delenv("NO_PROXY", raising=False)
    front = Daemon(tmp_path, front_config(
        "http://192.0.2.1:9", TOKEN_OPEN,
        secrets_file(tmp_path / "s.json", {"FWD_SECRET": SECRET})),
        name="tls-front").start()
    try:
        t0 = time.monotonic()
        st, _, res = front.run(secret_req("echo ran"))
        took = time.monotonic() - t0
        assert st == 503, res
        assert res["outcome"] == "unavailable", res
        assert res["reason"] == "secrets_need_tls", res
        assert res["stdout"] == "" and res["exit_code"] is None
        # Refused at once, and not a byte of a run went anywhere.
        assert took < 3, took
        assert not [s for s in Recorder.seen if s[0] == "POST"], \
            Recorder.seen
        # The probe did go through the proxy: it was reachable.
        assert ("GET", "http://192.0.2.1:9/v1/capabilities") in \
            Recorder.seen
        # A run without secrets may still go (and reaches the proxy).
        st, _, res = front.run(sh("echo ran"))
        assert [s for s in Recorder.seen if s[0] == "POST"], Recorder.seen
    finally:
        front.stop()
        proxy.shutdown()
        proxy.server_close()
