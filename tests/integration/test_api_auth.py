"""airlockd authentication: the generated token, configured (hashed)
tokens, 401s, and tenant separation."""
import hashlib
import os
import stat

import pytest

from test_api_support import Daemon, error_shape, local_config, sh

TOKEN_A = "alpha-token-" + "a" * 40
TOKEN_B = "bravo-token-" + "b" * 40


def sha(t):
    return hashlib.sha256(t.encode()).hexdigest()


def test_generated_token_is_created_once_private_and_never_printed(
        tmp_path):
    d = Daemon(tmp_path, local_config()).start()
    try:
        path = d.state / "token"
        st = os.stat(path)
        assert stat.S_IMODE(st.st_mode) == 0o600
        token = d.token
        assert len(token) == 64 and int(token, 16) >= 0
        assert str(path) in d.log()
        assert token not in d.log()
        assert d.request("GET", "/v1/capabilities")[0] == 200
    finally:
        d.stop()
    # A restart reuses the same token.
    d2 = Daemon(tmp_path, local_config()).start()
    try:
        assert d2.token == token
        assert d2.request("GET", "/v1/capabilities")[0] == 200
        assert token not in d2.log()
    finally:
        d2.stop()


def test_missing_or_wrong_token_is_401(tmp_path):
    d = Daemon(tmp_path, local_config()).start()
    try:
        for tok in (None, "wrong", d.token + "x", ""):
            st, h, body = d.request("GET", "/v1/capabilities", token=tok)
            assert st == 401, tok
            assert h["www-authenticate"] == "Bearer"
            error_shape(body, 401, "unauthorized")
        st, _, body = d.request("GET", "/v1/capabilities", token=None,
                                headers={"Authorization": "Basic " +
                                         d.token})
        assert st == 401
        # A refused POST never starts a run.
        st, _, body = d.run(sh("touch %s/ran" % tmp_path), token="nope")
        assert st == 401
        assert not (tmp_path / "ran").exists()
    finally:
        d.stop()


@pytest.fixture
def two_tenants(tmp_path):
    cfg = local_config(tenants=("alpha", "bravo"),
                       tokens={sha(TOKEN_A): "alpha", sha(TOKEN_B): "bravo"})
    d = Daemon(tmp_path, cfg).start()
    yield d
    d.stop()


def test_configured_tokens_map_to_tenants_and_no_file_is_made(two_tenants):
    d = two_tenants
    assert not (d.state / "token").exists()
    assert "token for tenant" not in d.log()
    st, _, res = d.run(sh("echo a"), token=TOKEN_A)
    assert st == 200 and res["outcome"] == "completed"
    # The raw hash is not a token.
    st, _, _ = d.request("GET", "/v1/capabilities", token=sha(TOKEN_A))
    assert st == 401


def test_a_tenant_never_sees_another_tenants_runs(two_tenants):
    d = two_tenants
    st, _, res = d.run(sh("echo secret-of-alpha"), token=TOKEN_A)
    assert st == 200
    rid = res["run_id"]
    for method, path in (("GET", "/v1/runs/" + rid),
                         ("GET", "/v1/runs/%s/events" % rid),
                         ("POST", "/v1/runs/%s/interrupt" % rid)):
        st, _, body = d.request(method, path, token=TOKEN_B)
        assert st == 404, path
        error_shape(body, 404, "not_found")
        assert "secret-of-alpha" not in str(body)
    st, _, page = d.request("GET", "/v1/runs", token=TOKEN_B)
    assert st == 200 and page["runs"] == []
    st, _, page = d.request("GET", "/v1/runs?after=" + rid, token=TOKEN_B)
    assert st == 400
    st, _, page = d.request("GET", "/v1/runs", token=TOKEN_A)
    assert [r["run_id"] for r in page["runs"]] == [rid]
    assert d.request("GET", "/v1/runs/" + rid, token=TOKEN_A)[0] == 200


def test_the_body_cannot_name_a_tenant(two_tenants):
    req = sh("true")
    req["tenant"] = "alpha"
    st, _, res = two_tenants.run(req, token=TOKEN_B)
    assert st == 400 and res["outcome"] == "invalid_request"


@pytest.mark.parametrize("tokens,key", [
    ({"not-a-hash": "default"}, "tokens.<0>"),
    ({sha("x"): "nobody"}, "tokens.<0>"),
    ([], "tokens"),
])
def test_bad_tokens_refuse_to_start_naming_the_key(tmp_path, tokens, key):
    d = Daemon(tmp_path, local_config(tokens=tokens))
    d.start(expect_ok=False)
    assert d.wait(timeout=10) != 0
    log = d.log()
    assert key in log
    assert "listening" not in log
    if isinstance(tokens, dict):
        for k in tokens:
            assert k not in log
