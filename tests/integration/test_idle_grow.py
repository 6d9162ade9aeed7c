"""How many idle supervisors the daemon keeps follows the runs in flight
(docs/durability.md, "Idle supervisors"): a run that finds every generic
supervisor of the sandbox serving a run makes the daemon keep one more, up
to `concurrency`, so later runs at that concurrency are handed over
instead of each starting a supervisor; a run of a pooled language that
finds every warm supervisor of its language serving a run does the same
for that language's warm ones, so later runs at that concurrency are warm.
The supervisors kept above the configured numbers are at most
`concurrency` in all.  Once no run has missed for a minute (five seconds
in the test build) the daemon keeps one fewer, down to the configured
number, and ends the one above it."""
import re
import threading

import pytest

from test_durable_faults import fault_bin  # noqa: F401 (fixture)
from test_durable_support import (DurableDaemon, assert_no_sanitizer_reports,
                                  cleanup_state, wait_until)
from test_idle_reuse import sandbox_config
from test_idle_supervisors import idle_pids

GENERIC = 'airlock_idle_supervisors{kind="generic"}'
WANTED = 'airlock_idle_supervisors_wanted{kind="generic"}'
WARM = 'airlock_idle_supervisors{kind="warm"}'
WANTED_WARM = 'airlock_idle_supervisors_wanted{kind="warm"}'
COLD = 'airlock_supervisor_launches_total{how="cold"}'
HANDOFF = 'airlock_supervisor_launches_total{how="handoff"}'
HANDOFF_WARM = 'airlock_supervisor_launches_total{how="handoff_warm"}'


def metric(d, name):
    st, _, text = d.request("GET", "/metrics")
    assert st == 200, text
    m = re.search(r"^%s (\d+)$" % re.escape(name), text, re.M)
    assert m, name
    return int(m.group(1))


def burst(d, n, language):
    """n runs at once, each long enough to overlap the others."""
    results = [None] * n

    def one(i):
        results[i] = d.run({"language": language,
                            "code": "sleep 0.4; echo ok",
                            "limits": {"wall_ms": 20000}}, timeout=60)

    ts = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(90)
    for st, _, res in results:
        assert st == 200 and res["stdout"] == "ok\n", res


def grown(d):
    """The supervisors kept above the configured numbers (one generic,
    one warm), from one reading of the metrics."""
    st, _, text = d.request("GET", "/metrics")
    assert st == 200, text
    total = 0
    for name in (WANTED, WANTED_WARM):
        m = re.search(r"^%s (\d+)$" % re.escape(name), text, re.M)
        assert m, name
        total += int(m.group(1)) - 1
    return total


def test_the_numbers_grow_with_the_runs_and_shrink_back(tmp_path, fault_bin):
    # One generic idle supervisor and one warm one of sh, concurrency 3.
    cfg = sandbox_config(idle=1)
    cfg["concurrency"] = 3
    cfg["providers"][0]["config"] = {"pool": {"sh": {"size": 1}}}
    d = DurableDaemon(tmp_path, cfg, binary=fault_bin)
    # Long enough for a new supervisor to start before the pool gives
    # one back, even under the sanitizers.
    d.start(env={"AIRLOCK_TEST_IDLE_SHRINK_MS": "5000"})
    try:
        st, _, caps = d.request("GET", "/v1/capabilities")
        if not caps["providers"][0]["available"]:
            pytest.skip("the sandbox is unavailable here (probe: %s)" %
                        caps["providers"][0]["unavailable_reason"])
        wait_until(lambda: metric(d, GENERIC) == 1 and
                   metric(d, WARM) == 1, timeout=30,
                   what="the configured generic and warm supervisors")
        assert metric(d, WANTED) == 1 and metric(d, WANTED_WARM) == 1
        # One run at a time never finds the one it needs busy.
        for language in ("bash", "sh"):
            st, _, res = d.run({"language": language, "code": "echo one"})
            assert st == 200 and res["stdout"] == "one\n", res
        assert metric(d, WANTED) == 1 and metric(d, WANTED_WARM) == 1
        assert metric(d, COLD) == 0
        # Three bash runs at a time (no pool): each burst whose runs find
        # every generic one serving adds one, up to concurrency (3) and
        # never past it; the warm number stays.
        for _ in range(8):
            burst(d, 3, "bash")
            assert metric(d, WANTED) <= 3
            if metric(d, WANTED) == 3:
                break
        assert metric(d, WANTED) == 3, "did not grow to concurrency"
        assert metric(d, WANTED_WARM) == 1
        wait_until(lambda: metric(d, GENERIC) == 3, timeout=30,
                   what="three generic idle supervisors")
        # Now a burst of three is handed over whole.
        cold, handoff = metric(d, COLD), metric(d, HANDOFF)
        burst(d, 3, "bash")
        assert metric(d, COLD) == cold
        assert metric(d, HANDOFF) == handoff + 3
        # Three sh runs at a time: a run that finds every warm one of sh
        # serving adds one (and runs on a generic one meanwhile), while
        # the ones kept above the configured numbers stay within
        # concurrency (3) in all.  The generic ones give one back five
        # seconds after their last miss, which a slow machine reaches
        # here: then the warm ones may take its place.
        for i in range(10):
            burst(d, 3, "sh")
            assert grown(d) <= 3
            if i >= 2 and metric(d, WANTED_WARM) >= 2:
                break
        assert metric(d, WANTED_WARM) >= 2, "the warm ones did not grow"
        wait_until(lambda: metric(d, WARM) >= 2, timeout=30,
                   what="two warm idle supervisors")
        # Two sh runs at a time are warm whole.
        warm = metric(d, HANDOFF_WARM)
        burst(d, 2, "sh")
        assert metric(d, HANDOFF_WARM) == warm + 2
        # No run misses: back to the configured ones, the others ended.
        wait_until(lambda: metric(d, WANTED) == 1 and
                   metric(d, WANTED_WARM) == 1, timeout=60,
                   what="the numbers back to the configured ones")
        wait_until(lambda: metric(d, GENERIC) == 1 and
                   metric(d, WARM) == 1 and len(idle_pids(d)) == 2,
                   timeout=60, what="the idle supervisors above them ended")
        st, _, res = d.run({"language": "sh", "code": "echo after"})
        assert st == 200 and res["stdout"] == "after\n", res
    finally:
        d.stop() if d.proc is not None else None
        cleanup_state(d)
    assert_no_sanitizer_reports(d)
