"""airlockd endpoints: runs, results, listing, interrupt, capabilities,
health, metrics, and the typed JSON of every error."""
import time

import pytest

from test_api_support import Daemon, error_shape, local_config, sh


@pytest.fixture
def daemon(tmp_path):
    d = Daemon(tmp_path, local_config()).start()
    yield d
    d.stop()


def test_health_needs_no_token_and_reports_ready(daemon):
    st, h, body = daemon.request("GET", "/v1/health", token=None)
    assert st == 200
    assert h["content-type"] == "application/json"
    assert body["live"] is True and body["ready"] is True
    assert body["checks"] == {"storage_writable": True,
                              "provider_available": True,
                              "accepting_runs": True}


def test_capabilities_are_the_probed_facts(daemon):
    st, _, body = daemon.request("GET", "/v1/capabilities")
    assert st == 200
    [facts] = body["providers"]
    assert facts["provider"] == "local"
    assert facts["safety_class"] == "trusted_local"
    assert facts["available"] is True
    assert any(lang["language"] == "sh" for lang in facts["languages"])


def test_completed_run_answers_200_with_the_result(daemon):
    st, _, res = daemon.run(sh("echo hello; echo oops >&2"))
    assert st == 200
    assert res["outcome"] == "completed" and res["exit_code"] == 0
    assert res["stdout"] == "hello\n" and res["stderr"] == "oops\n"
    assert res["provider"]["id"] == "local"
    assert res["run_id"]


def test_failed_run_still_answers_200(daemon):
    st, _, res = daemon.run(sh("exit 7"))
    assert st == 200
    assert res["outcome"] == "failed" and res["exit_code"] == 7


@pytest.mark.parametrize("body,status,outcome", [
    ("{not json", 400, "invalid_request"),
    ('{"language": "sh", "code": "true", "bogus": 1}', 400,
     "invalid_request"),
    ('{"language": "ruby", "code": "p 1"}', 403, "denied"),
])
def test_refusals_map_to_their_status(daemon, body, status, outcome):
    st, h, res = daemon.request("POST", "/v1/runs", body)
    assert st == status, res
    assert h["content-type"] == "application/json"
    assert res["outcome"] == outcome
    assert res.get("exit_code") is None


def test_unenforceable_limit_is_422(daemon):
    # The trusted local provider cannot truly restrict the network.
    req = sh("true")
    req["grant"]["network"] = "none"
    st, _, res = daemon.run(req)
    assert st == 422 and res["outcome"] == "unenforceable_limit"


def test_wait_false_returns_202_then_the_result(daemon):
    st, _, body = daemon.run(sh("sleep 0.3; echo done"), wait=False)
    assert st == 202
    assert body["state"] in ("running", "finished")
    run_id = body["run_id"]
    st, _, now = daemon.request("GET", "/v1/runs/" + run_id)
    assert st == 200 and now["run_id"] == run_id
    res = daemon.wait_finished(run_id)
    assert res["outcome"] == "completed" and res["stdout"] == "done\n"


def test_bad_wait_parameter_is_400(daemon):
    st, _, body = daemon.request("POST", "/v1/runs?wait=maybe", sh("true"))
    error_shape(body, 400, "invalid_query")
    assert st == 400


def test_unknown_run_and_path_are_json_404(daemon):
    st, _, body = daemon.request("GET", "/v1/runs/no-such-run")
    assert st == 404
    error_shape(body, 404, "not_found")
    st, _, body = daemon.request("GET", "/v1/nothing-here", token=None)
    assert st == 404
    error_shape(body, 404, "not_found")
    st, _, body = daemon.request("GET", "/v1/runs/bad%20id")
    assert st == 404


def test_wrong_method_is_json_405_with_allow(daemon):
    st, h, body = daemon.request("DELETE", "/v1/runs")
    assert st == 405 and h["allow"] == "GET, HEAD, POST"
    error_shape(body, 405, "method_not_allowed")
    st, h, body = daemon.request("GET", "/v1/runs/x/interrupt")
    assert st == 405 and h["allow"] == "POST"
    st, h, body = daemon.request("POST", "/v1/health")
    assert st == 405 and h["allow"] == "GET, HEAD"


def test_interrupt_a_live_run(daemon):
    st, _, body = daemon.run(sh("echo started; sleep 30",
                                limits={"wall_ms": 60000}), wait=False)
    assert st == 202
    run_id = body["run_id"]
    time.sleep(0.3)
    t0 = time.monotonic()
    st, _, body = daemon.request("POST", "/v1/runs/%s/interrupt" % run_id)
    assert st == 202 and body == {"run_id": run_id, "state": "interrupting"}
    res = daemon.wait_finished(run_id)
    assert res["outcome"] == "interrupted"
    assert time.monotonic() - t0 < 10
    # Once finished there is nothing left to interrupt.
    st, _, body = daemon.request("POST", "/v1/runs/%s/interrupt" % run_id)
    assert st == 409
    error_shape(body, 409, "run_finished")


def test_list_runs_newest_first_with_paging(daemon):
    ids = []
    for i in range(5):
        st, _, res = daemon.run(sh("echo %d" % i))
        assert st == 200
        ids.append(res["run_id"])
    ids.reverse()
    st, _, page = daemon.request("GET", "/v1/runs?limit=2")
    assert st == 200
    assert [r["run_id"] for r in page["runs"]] == ids[:2]
    assert all(r["state"] == "finished" and r["outcome"] == "completed"
               for r in page["runs"])
    assert page["next_after"] == ids[1]
    st, _, page2 = daemon.request("GET",
                                  "/v1/runs?limit=2&after=" + ids[1])
    assert [r["run_id"] for r in page2["runs"]] == ids[2:4]
    st, _, last = daemon.request("GET", "/v1/runs?limit=2&after=" + ids[3])
    assert [r["run_id"] for r in last["runs"]] == ids[4:]
    assert last["next_after"] is None
    for q in ("limit=0", "limit=abc", "limit=1001", "after=nope"):
        st, _, body = daemon.request("GET", "/v1/runs?" + q)
        assert st == 400, q
        error_shape(body, 400, "invalid_query")


def test_metrics_count_runs_by_outcome(daemon):
    daemon.run(sh("true"))
    daemon.run(sh("exit 3"))
    st, h, text = daemon.request("GET", "/metrics")
    assert st == 200
    assert h["content-type"].startswith("text/plain")
    assert 'airlock_runs_total{outcome="completed",provider="local",' \
           'language="sh"} 1' in text
    assert 'outcome="failed"' in text
    for name in ("airlock_run_duration_seconds_bucket",
                 "airlock_slots_in_use", "airlock_slot_waiters",
                 "airlock_audit_write_failures_total",
                 "airlock_api_runs_in_flight",
                 "airlock_api_responses_total"):
        assert name in text, name
    st, _, body = daemon.request("GET", "/metrics", token=None)
    assert st == 401


def _audit_records(daemon):
    st, _, text = daemon.request("GET", "/metrics")
    assert st == 200
    counts = {}
    for line in text.splitlines():
        if line.startswith("airlock_audit_records_total{"):
            mode = line.split('synchronous="')[1].split('"')[0]
            counts[mode] = int(line.rsplit(" ", 1)[1])
    return counts


def _synced_commits(d, runs):
    """(full, normal) audit commits that `runs` sh runs added."""
    before = _audit_records(d)
    for _ in range(runs):
        st, _, res = d.run(sh("true"))
        assert st == 200 and res["outcome"] == "completed"
    after = _audit_records(d)
    return (after["full"] - before["full"],
            after["normal"] - before["normal"])


def test_a_durable_runs_end_is_not_synced_twice(daemon):
    """run.started is synced before the launch; the end of a run whose
    supervisor synced result.json is committed without its own sync
    ("auto", docs/configuration.md): recovery writes it from that file."""
    full, normal = _synced_commits(daemon, 3)
    assert full == 3
    assert normal == 3


def test_finished_synchronous_full_syncs_every_end(tmp_path):
    d = Daemon(tmp_path, local_config(
        extra={"audit": {"finished_synchronous": "full"}})).start()
    try:
        full, normal = _synced_commits(d, 2)
        assert full == 4
        assert normal == 0
    finally:
        d.stop()
