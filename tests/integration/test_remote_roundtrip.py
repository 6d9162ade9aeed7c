"""The `remote` provider: a front airlockd whose only provider is a second
airlockd (running the local provider).  Every outcome the back end can
produce comes back through the front unchanged; transport failures are
typed."""
import base64
import socket
import threading
import time

import pytest

from test_api_support import GRANT_ALL, Daemon, local_config, sh


def front_config(url, token_file=None, token=None, languages=("sh",
                                                             "python")):
    pc = {"url": url, "timeout_ms": 5000}
    if token is not None:
        pc["token"] = token
    else:
        pc["token_file"] = token_file
    # remote is not airlock's own sandbox: the deployment acknowledges it
    return {
        "acknowledged_providers": ["remote"],
        "providers": [{"provider": "remote", "config": pc}],
        "tenants": {"default": {"languages": list(languages),
                                "grant": GRANT_ALL}},
        "concurrency": 8,
    }


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("remote")
    # The back end allows only sh, one run at a time, no waiting: its own
    # refusals (denied, busy) must come back through the front.
    back_cfg = local_config(concurrency=1, extra={"slot_wait_ms": 0})
    back_cfg["tenants"]["default"]["languages"] = ["sh"]
    back_cfg["tenants"]["default"]["ceilings"] = {"wall_ms": 30000}
    back = Daemon(tmp, back_cfg, name="back").start()
    front = Daemon(tmp, front_config("http://127.0.0.1:%d" % back.port,
                                     token_file=str(back.state / "token")),
                   name="front").start()
    yield front, back
    front.stop()
    back.stop()


def test_capabilities_are_the_remotes_facts_as_remote(pair):
    front, back = pair
    st, _, caps = front.request("GET", "/v1/capabilities")
    assert st == 200
    [f] = caps["providers"]
    _, _, bcaps = back.request("GET", "/v1/capabilities")
    [b] = bcaps["providers"]
    assert f["provider"] == "remote" and f["safety_class"] == "remote"
    assert f["available"] is True
    assert f["languages"] == b["languages"]
    assert f["isolation"] == b["isolation"]
    assert f["limits"] == b["limits"]
    assert f["mechanism"]["remote_provider"] == "local"
    assert f["mechanism"]["remote_url"] == "http://127.0.0.1:%d" % back.port
    assert back.token not in str(caps)


@pytest.mark.parametrize("code,limits,outcome,check", [
    ("echo out; echo err >&2", None, "completed",
     lambda r: r["exit_code"] == 0 and r["stdout"] == "out\n"
     and r["stderr"] == "err\n"),
    ("exit 5", None, "failed", lambda r: r["exit_code"] == 5),
    ("kill -9 $$", None, "killed", lambda r: r["signal"] == 9),
    ("sleep 5", {"wall_ms": 300}, "timed_out",
     lambda r: r["exit_code"] is None),
])
def test_ran_outcomes_round_trip(pair, code, limits, outcome, check):
    front, back = pair
    req = sh(code)
    if limits:
        req["limits"] = limits
    st, _, res = front.run(req)
    assert st == 200, res
    assert res["outcome"] == outcome, res
    assert check(res), res
    # The back end ran it: its own table has a run with that outcome.
    _, _, page = back.request("GET", "/v1/runs?limit=1")
    assert page["runs"][0]["outcome"] == outcome


def test_refusal_of_the_back_end_comes_back_typed(pair):
    front, back = pair
    # The front has no ceiling; the back end's tenant has one.
    st, _, res = front.run(sh("true", limits={"wall_ms": 40000}))
    assert st == 403, res
    assert res["outcome"] == "denied"
    assert res["reason"] == "gate:ceiling:wall_ms"
    assert res["exit_code"] is None and res["stdout"] == ""
    _, _, page = back.request("GET", "/v1/runs?limit=1")
    assert page["runs"][0]["outcome"] == "denied"


def test_capabilities_follow_the_back_end_tenant(pair):
    front, _ = pair
    # The back end's tenant may not use python, so the remote does not
    # offer it, and the front refuses it itself.
    _, _, caps = front.request("GET", "/v1/capabilities")
    langs = [lang["language"] for lang in caps["providers"][0]["languages"]]
    assert langs == ["sh"]
    st, _, res = front.run({"language": "python", "code": "print(1)",
                            "grant": {"network": "host"}})
    assert st == 422 and res["outcome"] == "unsupported_language"


def test_a_front_side_refusal_never_reaches_the_back_end(pair):
    front, back = pair
    _, _, before = back.request("GET", "/v1/runs?limit=1")
    # The remote's facts offer only host networking: the front refuses.
    req = sh("true")
    req["grant"]["network"] = "none"
    st, _, res = front.run(req)
    assert st == 422 and res["outcome"] == "unenforceable_limit"
    _, _, after = back.request("GET", "/v1/runs?limit=1")
    assert after["runs"] == before["runs"]


def test_busy_back_end_answers_unavailable_busy(pair):
    front, _ = pair
    box = {}

    def long_run():
        box["r"] = front.run(sh("sleep 1.5"))
    t = threading.Thread(target=long_run)
    t.start()
    time.sleep(0.5)
    st, _, res = front.run(sh("echo second"))
    t.join(30)
    assert box["r"][0] == 200 and box["r"][2]["outcome"] == "completed"
    assert st == 429, res
    assert res["outcome"] == "unavailable" and res["reason"] == "busy"


def test_interrupt_through_the_front_stops_the_remote_run(pair):
    front, back = pair
    st, _, acc = front.run(sh("echo up; sleep 20",
                              limits={"wall_ms": 25000}), wait=False)
    assert st == 202
    time.sleep(0.6)
    t0 = time.monotonic()
    st, _, _ = front.request("POST",
                             "/v1/runs/%s/interrupt" % acc["run_id"])
    assert st == 202
    res = front.wait_finished(acc["run_id"])
    assert res["outcome"] == "interrupted", res
    assert time.monotonic() - t0 < 10
    _, _, page = back.request("GET", "/v1/runs?limit=1")
    assert page["runs"][0]["outcome"] == "interrupted"


def test_live_output_streams_through_both_services(pair):
    front, _ = pair
    st, _, acc = front.run(sh("echo one; sleep 0.2; echo two",
                              streaming=True), wait=False)
    events = front.events(acc["run_id"])
    out = "".join(d["data"] for e, d in events if e == "stdout")
    assert out == "one\ntwo\n"
    assert events[-1][0] == "result"
    assert events[-1][1]["outcome"] == "completed"


def test_binary_live_output_streams_through_both_services(pair):
    """Bytes that are not UTF-8 cross the back end's stream as base64
    (`data_b64`), are decoded by the front's remote provider and sent on
    unchanged."""
    front, _ = pair
    st, _, acc = front.run(sh("printf 'a\\377\\376b\\n'; sleep 0.2; "
                              "printf 'ok\\n'", streaming=True),
                           wait=False)
    events = front.events(acc["run_id"])
    out = b"".join(base64.b64decode(d["data_b64"]) if "data_b64" in d
                   else d["data"].encode() for e, d in events
                   if e == "stdout")
    assert out == b"a\xff\xfeb\nok\n"
    assert events[-1][0] == "result"
    assert events[-1][1]["outcome"] == "completed"


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_unreachable_remote_is_unavailable(tmp_path):
    front = Daemon(tmp_path, front_config(
        "http://127.0.0.1:%d" % free_port(), token="x" * 64)).start()
    try:
        _, _, caps = front.request("GET", "/v1/capabilities")
        [f] = caps["providers"]
        assert f["available"] is False
        assert f["unavailable_reason"] == "remote_unreachable"
        st, _, res = front.run(sh("true"))
        assert res["outcome"] == "unavailable", res
        assert st == 503
        st, _, health = front.request("GET", "/v1/health", token=None)
        assert st == 503 and health["checks"]["provider_available"] is False
    finally:
        front.stop()


def test_wrong_token_for_the_remote_is_typed(tmp_path):
    back = Daemon(tmp_path, local_config(), name="back").start()
    front = Daemon(tmp_path, front_config(
        "http://127.0.0.1:%d" % back.port, token="not-the-token"),
        name="front").start()
    try:
        _, _, caps = front.request("GET", "/v1/capabilities")
        assert caps["providers"][0]["unavailable_reason"] == \
            "remote_unauthorized"
        st, _, res = front.run(sh("true"))
        assert res["outcome"] == "unavailable"
        assert "not-the-token" not in front.log() + back.log()
    finally:
        front.stop()
        back.stop()
