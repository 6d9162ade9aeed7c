"""A durable API run with an inbox taken by a warm pool member (docs/
sandbox.md, "Warm pools"; docs/durability.md, the inbox): the daemon's
warm idle supervisor ensures the sandbox's pool as an inbox class, so an
API run (which always has an inbox) is served by a member — the
hand-off counter says a warm supervisor took it and the provider's pool
counters (AIRLOCK_SANDBOX_POOL_STATS) that a member did — and the event
delivered while it runs reaches /inbox, its acknowledgement the
result's inbox_acked."""
import json

import pytest

from test_durable_support import (DurableDaemon, assert_no_sanitizer_reports,
                                  cleanup_state, start_launched, wait_until)
from test_idle_supervisors import metrics, pool_config, wait_idle

# Waits (bounded) for the event "ack-1", prints it, acknowledges it.
READER = r'''
import os, time
print(sorted(os.listdir(os.environ["AIRLOCK_INBOX"])))
name = "/inbox/000001-ack-1.json"
for _ in range(2000):
    if os.path.exists(name):
        break
    time.sleep(0.01)
print(open(name).read())
open("/inbox-acks/ack-1", "w").close()
'''


def test_an_api_run_with_an_inbox_takes_a_warm_member(tmp_path):
    stats = tmp_path / "pool-stats.jsonl"
    d = DurableDaemon(tmp_path, pool_config(0, 1))
    try:
        d.start(env={"AIRLOCK_SANDBOX_POOL_STATS": str(stats)})
        st, _, caps = d.request("GET", "/v1/capabilities")
        sb = caps["providers"][0]
        if not sb["available"]:
            pytest.skip("the sandbox with a pool configured is unavailable "
                        "here (probe: %s)" % sb["unavailable_reason"])
        if "python" not in [lang["language"] for lang in sb["languages"]]:
            pytest.skip("the sandbox found no python toolchain")
        wait_idle(d, 1, kind="warm")
        rid = start_launched(d, {"language": "python", "code": READER,
                                 "limits": {"wall_ms": 30000}},
                             what="the hand-off")
        st, _, b = d.request("POST", "/v1/runs/%s/inbox" % rid,
                             {"id": "ack-1", "event": {"n": 1}})
        assert st == 202, b
        res = d.wait_finished(rid)
        assert res["outcome"] == "completed", res
        # (the first listing may or may not hold it: a race with the start)
        assert res["stdout"].endswith('\n{"id":"ack-1","event":{"n":1}}\n'), \
            res
        assert res["inbox_acked"] == ["ack-1"], res
        m = metrics(d)
        assert m["handoff_warm"] == 1 and m.get("cold", 0) == 0, m
        # The supervisor serves further runs (docs/durability.md): it
        # writes its pool's counters when it releases its handle, at the
        # latest when the daemon stops.
        d.stop()
        wait_until(lambda: stats.exists() and stats.read_text().strip(),
                   what="the pool's counters")
        lines = [json.loads(x) for x in stats.read_text().splitlines()]
        assert sum(x["taken"] for x in lines) == 1, lines
        assert sum(x["cold"] for x in lines) == 0, lines
    finally:
        d.stop() if d.proc is not None else None
        cleanup_state(d)
    assert_no_sanitizer_reports(d)
