"""GET /v1/runs/{id}/events: server-sent events in order, late attach,
non-UTF-8 output, Last-Event-ID resume."""
import base64
import threading
import time

import pytest

from test_api_support import Daemon, local_config, sh


@pytest.fixture
def daemon(tmp_path):
    d = Daemon(tmp_path, local_config()).start()
    yield d
    d.stop()


def joined(events, name):
    out = b""
    for ev, data in events:
        if ev == name:
            out += (data["data"].encode() if "data" in data
                    else base64.b64decode(data["data_b64"]))
    return out


def test_live_events_arrive_in_order_then_the_result(daemon):
    code = "for i in 1 2 3 4 5; do echo out$i; echo err$i >&2; " \
           "sleep 0.1; done"
    st, _, body = daemon.run(sh(code, streaming=True), wait=False)
    assert st == 202
    events = daemon.events(body["run_id"])
    names = [e for e, _ in events]
    assert names[-1] == "result" and names.count("result") == 1
    assert set(names[:-1]) <= {"stdout", "stderr"}
    assert joined(events, "stdout") == b"".join(
        b"out%d\n" % i for i in range(1, 6))
    assert joined(events, "stderr") == b"".join(
        b"err%d\n" % i for i in range(1, 6))
    result = events[-1][1]
    assert result["outcome"] == "completed"
    assert result["run_id"] == body["run_id"]


def test_a_late_subscriber_gets_everything_already_produced(daemon):
    code = "echo first; sleep 0.6; echo second"
    st, _, body = daemon.run(sh(code, streaming=True), wait=False)
    rid = body["run_id"]
    time.sleep(0.3)  # "first" is out, "second" is not yet
    early = {}
    t = threading.Thread(target=lambda: early.update(e=daemon.events(rid)))
    t.start()
    t.join(30)
    assert joined(early["e"], "stdout") == b"first\nsecond\n"
    # After the end, a subscriber still gets the whole story.
    late = daemon.events(rid)
    assert joined(late, "stdout") == b"first\nsecond\n"
    assert late[-1][0] == "result"


def test_non_utf8_output_is_sent_as_base64(daemon):
    st, _, body = daemon.run(sh("printf '\\377\\376ok'", streaming=True),
                             wait=False)
    events = daemon.events(body["run_id"])
    assert joined(events, "stdout") == b"\xff\xfeok"
    assert any("data_b64" in d for e, d in events if e == "stdout")


def test_last_event_id_resumes_after_that_event(daemon):
    code = "echo a; sleep 0.1; echo b; sleep 0.1; echo c"
    st, _, body = daemon.run(sh(code, streaming=True), wait=False)
    rid = body["run_id"]
    daemon.wait_finished(rid)
    all_events = daemon.events(rid)
    out = [e for e in all_events if e[0] == "stdout"]
    assert len(out) >= 2
    resumed = daemon.events(rid, headers={"Last-Event-ID": "0"})
    assert joined(resumed, "stdout") == \
        joined(all_events, "stdout")[len(out[0][1]["data"]):]


def test_without_streaming_the_stream_is_just_the_result(daemon):
    st, _, body = daemon.run(sh("echo quiet"), wait=False)
    events = daemon.events(body["run_id"])
    assert [e for e, _ in events] == ["result"]
    assert events[0][1]["stdout"] == "quiet\n"
