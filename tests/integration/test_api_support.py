"""Shared support for the airlockd API tests: a real daemon process on a
loopback port with a temporary state directory, and a small HTTP client.

No tests live here; the test_api_* and test_remote_* files import it.
"""
import copy
import http.client
import json
import os
import re
import signal
import subprocess
import time

AIRLOCK_BIN = os.environ.get("AIRLOCK_BIN", "")

# The local provider needs no sandbox helper; the tests acknowledge it.
GRANT_ALL = {"network": ["none", "loopback", "host"],
             "workspace": ["none", "ro", "rw"], "streaming": True}


def local_config(tenants=("default",), tokens=None, concurrency=4,
                 extra=None):
    cfg = {
        "trusted_provider_acknowledged": True,
        "providers": [{"provider": "local"}],
        "tenants": {t: {"languages": ["sh", "python"], "grant": copy.deepcopy(GRANT_ALL)}
                    for t in tenants},
        "concurrency": concurrency,
    }
    if tokens is not None:
        cfg["tokens"] = tokens
    if extra:
        cfg.update(extra)
    return cfg


def sh(code, **kw):
    """A request for the local provider: sh code with host networking
    (the only network mode a trusted local run can truthfully offer)."""
    req = {"language": "sh", "code": code,
           "grant": {"network": "host", "workspace": "rw"}}
    for k, v in kw.items():
        if k == "streaming":
            req["grant"]["streaming"] = v
        else:
            req[k] = v
    return req


class Daemon:
    """`airlock serve` on 127.0.0.1 with port 0; the port is read from the
    daemon's own start-up line."""

    def __init__(self, tmp_path, config=None, name="d", extra_args=()):
        self.dir = tmp_path / name
        self.state = self.dir / "state"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.config_path = None
        if config is not None:
            self.config_path = self.dir / "config.json"
            self.config_path.write_text(json.dumps(config))
        self.log_path = self.dir / "stderr.log"
        self.extra_args = list(extra_args)
        self.proc = None
        self.port = None

    def start(self, expect_ok=True, timeout=15):
        assert AIRLOCK_BIN, "AIRLOCK_BIN must name the airlock binary"
        args = [AIRLOCK_BIN, "--state-dir", str(self.state)]
        if self.config_path is not None:
            args += ["--config", str(self.config_path)]
        args += ["serve", "--listen", "127.0.0.1:0"] + self.extra_args
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(args, stdout=self._log,
                                     stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)",
                          self.log())
            if m:
                self.port = int(m.group(1))
                return self
            if self.proc.poll() is not None:
                if expect_ok:
                    raise AssertionError("daemon exited: " + self.log())
                return self
            time.sleep(0.02)
        raise AssertionError("daemon did not start: " + self.log())

    def log(self):
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    @property
    def token(self):
        return (self.state / "token").read_text().strip()

    def signal(self, sig):
        self.proc.send_signal(sig)

    def wait(self, timeout):
        return self.proc.wait(timeout=timeout)

    def stop(self):
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=40)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()
        self.proc = None

    # ---- HTTP -------------------------------------------------------
    def request(self, method, path, body=None, token="default",
                headers=None, timeout=60, raw=False):
        """Returns (status, headers, parsed JSON or text).  token: a token
        string, "default" for the generated one, or None for none."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port,
                                          timeout=timeout)
        h = dict(headers or {})
        if token == "default":
            token = self.token
        if token is not None:
            h["Authorization"] = "Bearer " + token
        if body is not None and not isinstance(body, (bytes, str)):
            body = json.dumps(body)
        if body is not None:
            h.setdefault("Content-Type", "application/json")
        try:
            conn.request(method, path, body=body, headers=h)
            resp = conn.getresponse()
            data = resp.read()
            hdrs = {k.lower(): v for k, v in resp.getheaders()}
        finally:
            conn.close()
        if raw:
            return resp.status, hdrs, data
        ctype = hdrs.get("content-type", "")
        if ctype.startswith("application/json"):
            return resp.status, hdrs, json.loads(data)
        return resp.status, hdrs, data.decode("utf-8", "replace")

    def run(self, req, wait=True, token="default", timeout=60):
        q = "" if wait else "?wait=false"
        return self.request("POST", "/v1/runs" + q, req, token=token,
                            timeout=timeout)

    def wait_finished(self, run_id, token="default", timeout=30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            st, _, body = self.request("GET", "/v1/runs/" + run_id,
                                       token=token)
            assert st == 200, body
            if "outcome" in body:
                return body
            time.sleep(0.05)
        raise AssertionError("run did not finish")

    def events(self, run_id, token="default", timeout=30, headers=None):
        """Reads the whole SSE stream: a list of (event, data-object)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port,
                                          timeout=timeout)
        h = {"Authorization": "Bearer " + (self.token if token == "default"
                                           else token)}
        h.update(headers or {})
        conn.request("GET", "/v1/runs/%s/events" % run_id, headers=h)
        resp = conn.getresponse()
        assert resp.status == 200, resp.read()
        assert resp.getheader("Content-Type") == "text/event-stream"
        out, ev, data = [], None, []
        for line in resp:
            line = line.decode().rstrip("\n")
            if line == "":
                if ev is not None:
                    out.append((ev, json.loads("\n".join(data))))
                ev, data = None, []
            elif line.startswith("event: "):
                ev = line[7:]
            elif line.startswith("data: "):
                data.append(line[6:])
        conn.close()
        return out


def error_shape(body, status, code=None):
    assert isinstance(body, dict), body
    assert body.get("status") == status, body
    assert isinstance(body.get("error"), str) and body["error"], body
    assert isinstance(body.get("message"), str), body
    if code is not None:
        assert body["error"] == code, body


def post_invalid_runs(d, n, token=None):
    """n invalid POSTs on one keep-alive connection (token: d's when
    None): each one enters the daemon's run table (answered 400) and
    pushes older runs out."""
    conn = http.client.HTTPConnection("127.0.0.1", d.port, timeout=30)
    h = {"Authorization": "Bearer " + (token or d.token),
         "Content-Type": "application/json"}
    try:
        for _ in range(n):
            conn.request("POST", "/v1/runs", body="x", headers=h)
            r = conn.getresponse()
            r.read()
            assert r.status == 400, r.status
    finally:
        conn.close()
