"""The web console at /ui (docs/console.md): its static files and their
headers, the runs-list filters and GET /v1/audit it relies on, and the
console itself in a real browser — Debian's chromium driven by
puppeteer-core (tests/console/console.cjs).  chromium and puppeteer-core
are installed by scripts/install-deps.sh; without them this test fails."""
import hashlib
import json
import os
import shutil
import subprocess

import pytest

from test_api_support import Daemon, error_shape, local_config, sh

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
TOOLS = os.environ.get("AIRLOCK_TOOLS_DIR") or os.path.join(REPO, "tools")
CHROMIUM = os.environ.get("AIRLOCK_CHROMIUM", "/usr/bin/chromium")
SCRIPT = os.path.join(REPO, "tests", "console", "console.cjs")
CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; "
       "img-src 'self'; connect-src 'self'; object-src 'none'; "
       "base-uri 'none'; form-action 'self'; frame-ancestors 'none'")


TOKEN = "console-test-token-default-0123456789abcdef"
OTHER = "console-test-token-other-0123456789abcdef"


def sha(t):
    return hashlib.sha256(t.encode()).hexdigest()


@pytest.fixture
def daemon(tmp_path):
    d = Daemon(tmp_path, local_config(tenants=("default", "other"), tokens={
        sha(TOKEN): "default", sha(OTHER): "other"}))
    d.state.mkdir(mode=0o700, parents=True)
    # The browser script and Daemon.request read the token from here.
    d.state.joinpath("token").write_text(TOKEN)
    d.start()
    yield d
    d.stop()


def test_static_files_are_public_with_strict_headers(daemon):
    for path, ctype in (("/ui/", "text/html; charset=utf-8"),
                        ("/ui/index.html", "text/html; charset=utf-8"),
                        ("/ui/console.js", "text/javascript; charset=utf-8"),
                        ("/ui/console.css", "text/css; charset=utf-8"),
                        ("/ui/favicon.svg", "image/svg+xml")):
        st, h, body = daemon.request("GET", path, token=None, raw=True)
        assert st == 200, path
        assert h["content-type"] == ctype, path
        assert h["content-security-policy"] == CSP
        assert h["x-content-type-options"] == "nosniff"
        assert h["x-frame-options"] == "DENY"
        assert h["cache-control"] == "no-cache"
        assert h["referrer-policy"] == "no-referrer"
        assert body, path
    st, h, body = daemon.request("GET", "/ui/", token=None, raw=True)
    with open(os.path.join(REPO, "ui", "index.html"), "rb") as f:
        assert body == f.read()
    # The page loads its own script only: no inline script, no other host.
    assert b"<script>" not in body and b"http" not in body.split(
        b"<body>")[0].replace(b"http-equiv", b"")
    st, h, _ = daemon.request("GET", "/ui", token=None, raw=True)
    assert st == 308 and h["location"] == "/ui/"
    st, h, _ = daemon.request("HEAD", "/ui/console.js", token=None, raw=True)
    assert st == 200


def test_only_the_embedded_files_are_served(daemon):
    for path in ("/ui/nope.js", "/ui/../ui/index.html", "/ui/%2e%2e/token",
                 "/ui//index.html", "/ui/index.html/", "/uix"):
        st, _, body = daemon.request("GET", path, token=None)
        assert st == 404, path
        error_shape(body, 404)
    st, h, body = daemon.request("POST", "/ui/", body={}, token=None)
    assert st == 405 and h["allow"] == "GET, HEAD"
    st, _, body = daemon.request("GET", "/ui/?token=x", token=None)
    assert st == 400
    error_shape(body, 400, "invalid_query")


def test_runs_list_filters(daemon):
    ok = daemon.run(sh("echo ok"))[2]["run_id"]
    bad = daemon.run(sh("exit 3"))[2]["run_id"]
    py = daemon.run({"language": "python", "code": "print(1)",
                     "grant": {"network": "host"}})[2]["run_id"]
    other = daemon.run(sh("echo x"), token=OTHER)[2]["run_id"]

    def ids(q, token="default"):
        st, _, body = daemon.request("GET", "/v1/runs" + q, token=token)
        assert st == 200, body
        return [r["run_id"] for r in body["runs"]]

    assert ids("") == [py, bad, ok]
    assert ids("?outcome=completed") == [py, ok]
    assert ids("?outcome=failed") == [bad]
    assert ids("?language=sh") == [bad, ok]
    assert ids("?language=python&outcome=completed") == [py]
    assert ids("?outcome=completed&language=sh", token=OTHER) == [other]
    st, _, body = daemon.request("GET", "/v1/runs?language=python")
    assert body["runs"][0]["language"] == "python"
    created = body["runs"][0]["created_at"]
    assert ids("?since=" + created) == [py]
    assert ids("?until=" + created) == [bad, ok]
    assert ids("?since=2000-01-01T00:00:00Z&until=2000-01-02T00:00:00.000Z") == []
    assert ids("?outcome=completed&limit=1") == [py]
    for q in ("?outcome=nope", "?outcome=", "?language=cobol",
              "?language=" + "a" * 40, "?since=yesterday",
              "?since=2026-02-30T00:00:00Z", "?since=2026-12-01T00:00:00%2B01:00",
              "?until=2026-12-01%2000:00:00Z", "?since=2026-12-01T00:00:00.5Z",
              "?since=2026-12-02T00:00:00Z&until=2026-12-01T00:00:00Z",
              "?outcome=failed&outcome=completed", "?state=running"):
        st, _, body = daemon.request("GET", "/v1/runs" + q)
        assert st == 400, q
        error_shape(body, 400, "invalid_query")


def test_audit_is_the_tenants_own_with_verify(daemon):
    mine = daemon.run(sh("echo mine"))[2]["run_id"]
    theirs = daemon.run(sh("echo theirs"), token=OTHER)[2]["run_id"]
    st, _, body = daemon.request("GET", "/v1/audit")
    assert st == 200, body
    assert body["verify"] == {"ok": True}
    assert {r["run_id"] for r in body["records"]} == {mine}
    assert [r["event"] for r in body["records"]] == ["run.finished",
                                                     "run.started"]
    assert all(r["tenant"] == "default" for r in body["records"])
    seqs = [r["seq"] for r in body["records"]]
    assert seqs == sorted(seqs, reverse=True)
    assert body["records"][0]["prev_hash"] and body["records"][0]["hash"]
    # Paging by seq.
    st, _, p1 = daemon.request("GET", "/v1/audit?limit=1")
    assert len(p1["records"]) == 1 and p1["next_before"] == seqs[0]
    st, _, p2 = daemon.request("GET", "/v1/audit?limit=1&before=%d"
                               % p1["next_before"])
    assert p2["records"][0]["seq"] == seqs[1] and p2["next_before"] is None
    # One run's records; another tenant's run is simply not there.
    st, _, r = daemon.request("GET", "/v1/audit?run_id=" + mine)
    assert len(r["records"]) == 2
    st, _, r = daemon.request("GET", "/v1/audit?run_id=" + theirs)
    assert r["records"] == []
    for q in ("?limit=0", "?limit=1001", "?before=0", "?before=-1",
              "?before=x", "?run_id=a/b", "?tenant=other"):
        st, _, body = daemon.request("GET", "/v1/audit" + q)
        assert st == 400, q
        error_shape(body, 400, "invalid_query")
    st, _, body = daemon.request("GET", "/v1/audit", token=None)
    assert st == 401
    st, _, body = daemon.request("POST", "/v1/audit", body={})
    assert st == 405


def test_audit_reports_a_broken_chain(daemon):
    daemon.run(sh("echo one"))
    daemon.stop()
    db = daemon.state / "airlock.db"
    # A record edited behind the chain's back (the triggers that forbid
    # it dropped first: this is tampering, not an API).
    triggers = subprocess.run(
        ["sqlite3", str(db),
         "SELECT name FROM sqlite_master WHERE type='trigger'"],
        check=True, capture_output=True, text=True).stdout.split()
    sql = "".join("DROP TRIGGER %s;" % t for t in triggers)
    sql += "UPDATE audit SET record = replace(record, 'sh', 'zz') WHERE seq = 1;"
    subprocess.run(["sqlite3", str(db), sql], check=True)
    daemon.start()
    st, _, body = daemon.request("GET", "/v1/audit")
    assert st == 200
    assert body["verify"]["ok"] is False
    assert "record 1" in body["verify"]["message"]


def test_console_in_a_real_browser(daemon, tmp_path):
    """Login (a wrong token first), a run started from the form whose
    first line shows while it still runs (it waits for a file the script
    makes only once that line is on the page), its result, limits and
    artifact download, hostile output shown as text, the filtered runs
    list, the audit page's verify OK, capabilities and health."""
    assert os.access(CHROMIUM, os.X_OK), \
        "%s missing: run scripts/install-deps.sh" % CHROMIUM
    node = shutil.which("node")
    assert node, "node missing: run scripts/install-deps.sh"
    pptr = os.path.join(TOOLS, "node_modules", "puppeteer-core")
    assert os.path.isdir(pptr), \
        "%s missing: run scripts/install-tools.sh" % pptr
    work = tmp_path / "console"
    work.mkdir()
    env = dict(os.environ, NODE_PATH=os.path.join(TOOLS, "node_modules"),
               AIRLOCK_CHROMIUM=CHROMIUM, HOME=str(tmp_path))
    p = subprocess.run(
        [node, SCRIPT, "http://127.0.0.1:%d" % daemon.port,
         str(daemon.state / "token"), str(work)],
        env=env, capture_output=True, text=True, timeout=90)
    assert p.returncode == 0, p.stdout + p.stderr
    seen = json.loads(p.stdout.strip().splitlines()[-1])
    assert "refused" in seen["bad_token_error"]
    assert seen["state_when_line1_shown"] == "running"
    assert seen["output"] == "line1\nline2\n"
    assert seen["artifact"] == "report\n"
    assert seen["xss_elements"] == 0 and seen["pwned"] == 0
    assert "<script>" in seen["xss_output"]
    assert seen["run_id"] in seen["filtered_runs"]
    assert seen["verify"] == "ok"
    assert seen["page_errors"] == []
    for name in ("console-login-error.png", "console-run-live.png",
                 "console-run.png", "console-run-hostile.png",
                 "console-runs.png", "console-audit.png",
                 "console-system.png"):
        assert (work / name).stat().st_size > 1000, name
    # The token never reaches the daemon's log (URLs included).
    assert TOKEN not in daemon.log()
