"""A remote run's toolbelt (docs/toolbelt.md, "Remote"): the back end
serves it as for any of its own runs, with the back-end tenant's grant and
operations; the front advertises `toolbelt` only when the back end offers
it, and the run's events, declaration and host calls come back in the
front's result."""
import http.client
import json

import pytest

from test_api_support import GRANT_ALL, Daemon, local_config, sh


def front_config(back, toolbelt=True):
    grant = dict(GRANT_ALL, toolbelt=toolbelt)
    return {
        "acknowledged_providers": ["remote"],
        "providers": [{"provider": "remote", "config": {
            "url": "http://127.0.0.1:%d" % back.port,
            "token_file": str(back.state / "token"), "timeout_ms": 5000}}],
        "tenants": {"default": {"languages": ["sh"], "grant": grant}},
        "concurrency": 4,
    }


def pair(tmp, back_toolbelt):
    back_cfg = local_config()
    back_cfg["tenants"]["default"]["grant"]["toolbelt"] = back_toolbelt
    back = Daemon(tmp, back_cfg, name="back").start()
    front = Daemon(tmp, front_config(back), name="front").start()
    return front, back


def tb_req(code):
    req = sh(code)
    req["grant"]["toolbelt"] = True
    return req


# Reads its context, emits two events, makes a call its grant does not
# allow, declares `failed`, exits 0.
PROGRAM = r'''
ctx=$(airlock-tool context) || exit 90
echo "$ctx"
airlock-tool emit --type progress '{"n": 1}' >/dev/null || exit 91
airlock-tool emit --type progress '{"n": 2}' >/dev/null || exit 91
airlock-tool call notify '{}' >/dev/null; echo "call rc=$?"
airlock-tool outcome failed --reason order_rejected >/dev/null || exit 93
exit 0
'''


@pytest.fixture(scope="module")
def granted(tmp_path_factory):
    front, back = pair(tmp_path_factory.mktemp("rtool"), True)
    yield front, back
    front.stop()
    back.stop()


def test_front_advertises_the_back_ends_toolbelt(granted):
    front, back = granted
    _, _, caps = front.request("GET", "/v1/capabilities")
    _, _, bcaps = back.request("GET", "/v1/capabilities")
    [f], [b] = caps["providers"], bcaps["providers"]
    assert b["toolbelt"] is True
    assert f["toolbelt"] is True
    # The back end's operations are the ones that apply (none here); the
    # front's inbox is not the program's.
    assert f.get("host_api", []) == b.get("host_api", [])
    assert "inject" not in f


def test_remote_run_reads_context_emits_and_declares(granted):
    front, back = granted
    st, _, res = front.run(tb_req(PROGRAM))
    assert st == 200, res
    out = res["stdout"].splitlines()
    ctx = json.loads(out[0])
    # The program runs on the back end under the front's run id.
    assert ctx["run_id"] == res["run_id"]
    assert ctx["grant"]["toolbelt"] is True and ctx["language"] == "sh"
    assert out[1] == "call rc=1"
    assert res["outcome"] == "failed" and res["reason"] == "declared"
    assert res["exit_code"] == 0
    assert res["declaration"] == {"outcome": "failed",
                                  "reason": "order_rejected"}
    assert [(e["type"], e["data"]) for e in res["events"]] == \
        [("progress", {"n": 1}), ("progress", {"n": 2})]
    assert [(c["operation"], c["outcome"]) for c in res["host_calls"]] == \
        [("notify", "denied")]
    # The front served no toolbelt of its own for the run.
    assert not (front.state / "toolbelt" / res["run_id"]).exists()


# Emits, then waits (bounded) for the test to have seen the event live.
LIVE = r'''
airlock-tool emit --type progress '{"live": 1}' >/dev/null || exit 91
i=0
while [ ! -e "$GO" ] && [ $i -lt 300 ]; do i=$((i+1)); sleep 0.1; done
[ -e "$GO" ] && echo released
'''


def sse_until_result(d, rid, on_event):
    """Reads the run's SSE stream on the front to its result event; calls
    on_event with each toolbelt event's data."""
    conn = http.client.HTTPConnection("127.0.0.1", d.port, timeout=60)
    conn.request("GET", "/v1/runs/%s/events" % rid,
                 headers={"Authorization": "Bearer " + d.token})
    resp = conn.getresponse()
    assert resp.status == 200
    seen, ev, data = [], None, []
    try:
        for line in resp:
            line = line.decode().rstrip("\n")
            if line == "":
                if ev == "event":
                    seen.append(json.loads("\n".join(data)))
                    on_event(seen[-1])
                if ev == "result":
                    return seen, json.loads("\n".join(data))
                ev, data = None, []
            elif line.startswith("event: "):
                ev = line[7:]
            elif line.startswith("data: "):
                data.append(line[6:])
    finally:
        conn.close()
    raise AssertionError("the stream ended without a result: %r" % seen)


def test_events_stream_live_through_the_front(granted, tmp_path):
    front, _ = granted
    go = tmp_path / "go"
    req = tb_req(LIVE)
    req["env"] = {"GO": str(go)}
    st, _, acc = front.run(req, wait=False)
    assert st == 202, acc
    # The program goes on only once its event was seen on the front.
    seen, res = sse_until_result(front, acc["run_id"],
                                 lambda e: go.touch())
    assert [(e["type"], e["data"]) for e in seen] == \
        [("progress", {"live": 1})]
    assert res["stdout"] == "released\n" and res["outcome"] == "completed"
    assert [e["data"] for e in res["events"]] == [{"live": 1}]


def test_without_the_grant_there_is_no_toolbelt_remotely(granted):
    front, _ = granted
    code = ('echo "${AIRLOCK_TOOL_SOCKET-unset}"; '
            'command -v airlock-tool || echo "not on PATH"')
    st, _, res = front.run(sh(code))
    assert st == 200, res
    assert res["stdout"].splitlines() == ["unset", "not on PATH"]
    assert "events" not in res and "declaration" not in res


def test_back_end_without_the_grant_is_not_offered(tmp_path):
    front, back = pair(tmp_path, False)
    try:
        _, _, bcaps = back.request("GET", "/v1/capabilities")
        assert "toolbelt" not in bcaps["providers"][0]
        _, _, caps = front.request("GET", "/v1/capabilities")
        [f] = caps["providers"]
        assert f["available"] is True and "toolbelt" not in f
        # Refused typed on the front; nothing reaches the back end.
        st, _, res = front.run(tb_req("echo ran"))
        assert res["outcome"] == "unenforceable_limit", res
        assert res["reason"] == "toolbelt" and res["exit_code"] is None
        assert res["stdout"] == ""
        st, _, page = back.request("GET", "/v1/runs")
        assert st == 200 and page["runs"] == [], page
    finally:
        front.stop()
        back.stop()
