"""The exec execution shape (docs/contract.md, "Request"): an argv run
directly, no code and no shell, through the real daemon with the sandbox
and the local provider; every refusal; the result's workspace,
timeout_ms and log_artifact; the log artifact served as text; plan pins
that cover exec."""
import hashlib
import json
import os

import pytest

from test_api_support import Daemon, local_config
from test_remote_roundtrip import front_config
from test_attack_grants import plan_sha256

TOKEN = "ex-" + hashlib.sha256(os.urandom(16)).hexdigest()
TOKEN_CODE_ONLY = "co-" + hashlib.sha256(os.urandom(16)).hexdigest()
SECRET = "pin-" + hashlib.sha256(os.urandom(16)).hexdigest()[:16]
PINNED = {"exec": ["/bin/sh", "-c", 'echo "${#PINNED}"']}


def sha(s):
    return hashlib.sha256(s.encode()).hexdigest()


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("exec")
    store = tmp / "secrets.json"
    store.write_text(json.dumps({"PINNED": SECRET}))
    os.chmod(store, 0o600)
    d = Daemon(tmp, {
        "providers": ["sandbox"],
        "secrets": {"file": str(store)},
        "tenants": {
            "default": {"languages": "*",
                        "grant": {"workspace": ["none", "ro", "rw"]},
                        "pins": [{"plan_sha256": plan_sha256(PINNED),
                                  "grant": {"secrets": ["PINNED"]}}]},
            # a tenant whose allow-list does not name "exec"
            "codeonly": {"languages": ["sh", "python"]},
        },
        "tokens": {sha(TOKEN): "default", sha(TOKEN_CODE_ONLY): "codeonly"},
    }).start()
    yield d
    d.stop()


def run(d, req, token=TOKEN):
    st, _, r = d.run(req, token=token)
    return r


def test_argv_runs_untouched(daemon):
    r = run(daemon, {"exec": ["/bin/echo", "a $HOME;", "`id`"]})
    assert r["outcome"] == "completed", r
    assert r["stdout"] == "a $HOME; `id`\n"


def test_interpreter_the_facts_list(daemon):
    r = run(daemon, {"exec": ["python", "-c", "import sys; print(sys.argv[1:])",
                              "x"]})
    assert r["outcome"] == "completed", r
    assert r["stdout"] == "['x']\n"


def test_language_exec_may_be_named(daemon):
    r = run(daemon, {"language": "exec", "exec": ["/bin/true"]})
    assert r["outcome"] == "completed", r


def test_exit_status_and_stdin(daemon):
    r = run(daemon, {"exec": ["/bin/sh", "-c", "cat; exit 3"], "stdin": "in"})
    assert r["outcome"] == "failed" and r["exit_code"] == 3, r
    assert r["stdout"] == "in"


@pytest.mark.parametrize("req,reason", [
    ({"exec": ["/bin/echo"], "code": "x", "language": "sh"}, "exec"),
    ({"exec": ["/bin/echo"], "code_sha256": "0" * 64}, "exec"),
    ({"language": "sh"}, "code"),
    ({"exec": []}, "exec"),
    ({"exec": "/bin/echo"}, "exec"),
    ({"exec": [""]}, "exec[0]"),
    ({"exec": ["/bin/echo", 5]}, "exec[1]"),
    ({"exec": ["/bin/ec\u0001ho"]}, "exec[0]"),
    ({"exec": ["/bin/echo", "a\u0000b"]}, "exec[1]"),
    ({"exec": ["/bin/echo"], "argv": ["x"]}, "argv"),
    ({"exec": ["/bin/echo"], "language": "python"}, "language"),
    ({"language": "exec", "code": "echo"}, "language"),
    ({"exec": ["/bin/echo"], "dir": "/tmp"}, "request"),
])
def test_refused_by_the_contract(daemon, req, reason):
    r = run(daemon, req)
    assert r["outcome"] == "invalid_request", r
    assert r["reason"] == reason, r
    assert r["permanent"] is True


def planted(tmp_path):
    p = tmp_path / "planted"
    p.write_text("#!/bin/sh\necho PLANTED\n")
    os.chmod(p, 0o755)
    os.chmod(tmp_path, 0o755)
    return str(p)


def test_refused_by_the_provider(daemon, tmp_path):
    for program in ["bin/echo", "/etc/passwd", "/usr/bin/../bin/echo",
                    "/usr/bin//echo", "/usr/bin/", "/no/such/program",
                    planted(tmp_path), "cobol", "/proc/self/exe"]:
        r = run(daemon, {"exec": [program]})
        assert r["outcome"] == "invalid_request", (program, r)
        assert r["reason"] == "exec[0]", (program, r)
        assert r["exit_code"] is None and "PLANTED" not in r["stdout"]


def test_tenant_must_allow_exec(daemon):
    r = run(daemon, {"exec": ["/bin/true"]}, token=TOKEN_CODE_ONLY)
    assert r["outcome"] == "denied" and r["reason"] == "gate:language", r


def test_result_reports_workspace_timeout_and_log(daemon):
    r = run(daemon, {"exec": ["/bin/echo", "logged"],
                     "limits": {"wall_ms": 7000},
                     "grant": {"workspace": "rw"}})
    assert r["outcome"] == "completed", r
    assert r["timeout_ms"] == 7000
    ws = r["workspace"]
    assert ws["kind"] == "scratch"
    assert ws["size_bytes"] == 256 << 20
    assert "tmpfs" in ws["summary"] and "rw" in ws["summary"]
    assert r["log_artifact"] == "log"
    st, hdrs, body = daemon.request(
        "GET", "/v1/runs/%s/artifacts/%s" % (r["run_id"], r["log_artifact"]),
        token=TOKEN, raw=True)
    assert st == 200
    assert hdrs["content-type"] == "text/plain; charset=utf-8"
    assert body == b"logged\n"
    # code runs report the same fields
    r = run(daemon, {"language": "sh", "code": "echo x"})
    assert r["timeout_ms"] > 0 and r["workspace"]["kind"] == "scratch"
    assert r["workspace"]["size_bytes"] == 0 and r["log_artifact"] == "log"
    # a refusal ran nothing: no such fields
    r = run(daemon, {"exec": ["/etc/passwd"]})
    assert "workspace" not in r and "log_artifact" not in r


def test_plan_pin_covers_exec(daemon):
    r = run(daemon, dict(PINNED, grant={"secrets": ["PINNED"]}))
    assert r["outcome"] == "completed", r
    assert r["stdout"] == "%d\n" % len(SECRET)
    for other in (["/bin/sh", "-c", 'echo "$PINNED"'],
                  ["/bin/sh", "-c", 'echo "${#PINNED}"', "extra"]):
        r = run(daemon, {"exec": other, "grant": {"secrets": ["PINNED"]}})
        assert r["outcome"] == "denied" and r["reason"] == "gate:grant", r
        assert SECRET not in json.dumps(r)


def test_capabilities_advertise_exec(daemon):
    st, _, body = daemon.request("GET", "/v1/capabilities", token=TOKEN)
    assert st == 200, body
    assert any(p.get("exec") is True for p in body["providers"]), body


def test_local_provider(tmp_path):
    cfg = local_config()
    cfg["tenants"]["default"]["languages"] = ["sh", "exec"]
    d = Daemon(tmp_path, cfg).start()
    try:
        st, _, r = d.run({"exec": ["/bin/echo", "local"],
                          "grant": {"network": "host"}})
        assert r["outcome"] == "completed" and r["stdout"] == "local\n", r
        assert r["workspace"]["kind"] == "scratch"
        st, _, r = d.run({"exec": [planted(tmp_path)],
                          "grant": {"network": "host"}})
        assert r["outcome"] == "invalid_request", r
        assert r["reason"] == "exec[0]"
    finally:
        d.stop()


def test_remote_forwards_exec_when_the_remote_offers_it(tmp_path):
    back_cfg = local_config()
    back_cfg["tenants"]["default"]["languages"] = ["sh", "exec"]
    back = Daemon(tmp_path, back_cfg, name="back").start()
    fronts = []
    try:
        for name, langs in (("front", ("sh", "exec")), ("narrow", ("sh",))):
            fronts.append(Daemon(tmp_path, front_config(
                "http://127.0.0.1:%d" % back.port,
                token_file=str(back.state / "token"), languages=langs),
                name=name).start())
        front, narrow = fronts
        st, _, caps = front.request("GET", "/v1/capabilities")
        assert caps["providers"][0]["exec"] is True, caps
        st, _, r = front.run({"exec": ["/bin/echo", "via remote"],
                              "grant": {"network": "host"}})
        assert r["outcome"] == "completed", r
        assert r["stdout"] == "via remote\n"
        # the remote's log is not an artifact of the front's
        assert "log_artifact" not in r
        st, _, r = front.run({"exec": [planted(tmp_path)],
                              "grant": {"network": "host"}})
        assert r["outcome"] == "invalid_request", r
        # a tenant that may not use exec is not offered it
        st, _, caps = narrow.request("GET", "/v1/capabilities")
        assert caps["providers"][0]["exec"] is False, caps
    finally:
        for f in fronts:
            f.stop()
        back.stop()
