"""The Python client (clients/python, docs/api.md) against a real airlockd
on loopback: every call, the SSE stream, interrupting a sleeping run,
artifact downloads, and typed errors that never carry the token."""
import hashlib
import io
import os
import sys
import time

import pytest

from test_api_support import Daemon, local_config, sh

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                "clients", "python"))
import airlock_client as ac  # noqa: E402


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    cfg = local_config(concurrency=8)
    cfg["tenants"]["default"]["grant"]["toolbelt"] = True
    d = Daemon(tmp_path_factory.mktemp("client-py"), cfg).start()
    yield d
    d.stop()


@pytest.fixture
def client(daemon):
    return ac.Client("http://127.0.0.1:%d" % daemon.port,
                     token_file=str(daemon.state / "token"), timeout=30)


def test_health_needs_no_token_and_capabilities_need_one(daemon, client):
    anon = ac.Client("http://127.0.0.1:%d" % daemon.port)
    h = anon.health()
    assert h["ready"] is True and h["status"] == "ok"
    caps = client.capabilities()
    assert [c["provider"] for c in caps] == ["local"]
    assert caps[0]["streaming"] is True
    with pytest.raises(ac.UnauthorizedError) as e:
        anon.capabilities()
    assert e.value.status == 401 and e.value.error == "unauthorized"


def test_run_returns_the_result_whatever_its_outcome(client):
    res = client.run(sh("echo hello; echo oops >&2"))
    assert isinstance(res, ac.Result)
    assert res.outcome == "completed" and res.ok and res.ran
    assert res.stdout == "hello\n" and res.stderr == "oops\n"
    assert res.usage.wall_ms >= 0 and res.run_id
    # keyword form; a failing program is a result, not an error
    failed = client.run(language="sh", code="printf '\\377'; exit 3",
                        grant={"network": "host"})
    assert failed.outcome == "failed" and failed.exit_code == 3
    assert not failed.ok
    assert failed.stdout_data == b"\xff" and failed.stdout == "\ufffd"


def gated(path, then="true"):
    """sh code that waits (bounded, 60 s) for the test to create `path`."""
    return sh("i=0; while [ ! -e %s ] && [ $i -lt 3000 ]; do sleep 0.02;"
              " i=$((i+1)); done; %s" % (path, then))


def test_submit_get_wait_and_list(client, tmp_path):
    gate = tmp_path / "gate"
    rid = client.submit(gated(gate, "echo done"))
    assert isinstance(rid, str) and rid
    assert client.get(rid) is None  # waiting for the gate
    gate.touch()
    res = client.wait(rid, timeout=30)
    assert res.run_id == rid and res.stdout == "done\n"
    got = client.get(rid)
    assert got is not None and got.outcome == "completed"
    page = client.list_runs(limit=1)
    assert len(page.runs) == 1 and page.runs[0].run_id == rid
    assert page.runs[0].state == "finished"
    assert page.next_after is not None
    older = client.list_runs(limit=1000, after=page.next_after)
    assert rid not in [r.run_id for r in older.runs]


def test_events_stream_output_then_the_result(client):
    rid = client.submit(sh("for i in 1 2 3; do echo out$i; echo err$i >&2;"
                           " sleep 0.05; done; printf '\\376'",
                           streaming=True))
    events = list(client.events(rid))
    assert events[-1].type == "result"
    assert {e.type for e in events[:-1]} <= {"stdout", "stderr"}
    out = b"".join(e.bytes for e in events if e.type == "stdout")
    err = "".join(e.text for e in events if e.type == "stderr")
    assert out == b"out1\nout2\nout3\n\xfe"
    assert err == "err1\nerr2\nerr3\n"
    ids = [int(e.id) for e in events]
    assert ids == list(range(len(events)))
    res = events[-1].result()
    assert res.run_id == rid and res.outcome == "completed"
    # resume after the second event: the rest, the same ids
    rest = list(client.events(rid, last_event_id=1))
    assert [(e.id, e.type, e.data) for e in rest] == \
        [(e.id, e.type, e.data) for e in events[2:]]
    # at the result's id the server answers 204: an empty iterator
    assert list(client.events(rid, last_event_id=events[-1].id)) == []
    with pytest.raises(ac.BadRequestError) as e:
        list(client.events(rid, last_event_id="x"))
    assert e.value.error == "invalid_header"


def test_events_without_streaming_are_just_the_result(client):
    rid = client.submit(sh("echo quiet"))
    events = list(client.events(rid))
    assert [e.type for e in events] == ["result"]
    assert events[0].result().stdout == "quiet\n"


def test_interrupt_a_sleeping_run(client, tmp_path):
    started = tmp_path / "started"
    # stop: answered with the result once the tree is gone
    rid = client.submit(sh("touch %s; exec sleep 60" % started,
                           limits={"wall_ms": 60000}))
    for _ in range(1500):  # bounded: until the program is sleeping
        if started.exists():
            break
        time.sleep(0.02)
    assert started.exists()
    res = client.interrupt(rid, wait=True, timeout=30)
    assert res is not None
    assert res.run_id == rid and res.outcome == "interrupted"
    # interrupting a finished run is a typed conflict
    with pytest.raises(ac.ConflictError) as e:
        client.interrupt(rid)
    assert e.value.status == 409 and e.value.error == "run_finished"
    # plain interrupt: accepted, then the run ends interrupted
    rid2 = client.submit(sh("exec sleep 60", limits={"wall_ms": 60000}))
    assert client.interrupt(rid2) is None
    assert client.wait(rid2, timeout=30).outcome == "interrupted"


def test_artifacts_listing_and_download(client, tmp_path):
    gate = tmp_path / "gate"
    rid = client.submit(gated(gate))
    with pytest.raises(ac.RunNotFinishedError):
        client.artifacts(rid)
    gate.touch()
    client.wait(rid, timeout=30)
    big = "head -c 300000 /dev/urandom > out/big.bin"
    res = client.run(sh("mkdir -p out; printf 'a\\0b' > out/small.dat; %s;"
                        " echo logged" % big, outputs=["out/*"]))
    assert res.outcome == "completed", res
    arts = client.artifacts(res.run_id)
    assert arts == client.artifacts(res)
    by_path = {a.path: a for a in arts}
    assert set(by_path) == {"out/big.bin", "out/small.dat", None}
    assert by_path[None].name == "log"
    for path, art in by_path.items():
        dest = tmp_path / art.name
        dl = client.download_artifact(res.run_id, art.name, str(dest))
        data = dest.read_bytes()
        assert dl.size == len(data)
        assert dl.sha256 == hashlib.sha256(data).hexdigest()
        if path is not None:
            assert art.sha256 == dl.sha256 and art.size == dl.size
    assert (tmp_path / "log").read_bytes() == b"logged\n"
    assert (tmp_path / by_path["out/small.dat"].name).read_bytes() == b"a\0b"
    assert by_path["out/big.bin"].size == 300000
    # to a file object
    buf = io.BytesIO()
    client.download_artifact(res.run_id, "log", buf)
    assert buf.getvalue() == b"logged\n"
    # an unknown artifact: typed 404, and no file left behind
    dest = tmp_path / "none"
    with pytest.raises(ac.NotFoundError) as e:
        client.download_artifact(res.run_id, "out-9", str(dest))
    assert e.value.error == "not_found"
    assert not dest.exists()
    assert [p.name for p in tmp_path.iterdir() if "part" in p.name] == []


def test_inbox_delivery(client, tmp_path):
    # the program stays until "end" arrives, so the duplicate "go" below
    # reaches a live run (a finished one answers run_finished instead)
    reader = ('while [ ! -e "$AIRLOCK_INBOX"/*-go.json ]; do sleep 0.02;'
              ' done; cat "$AIRLOCK_INBOX"/*-go.json;'
              ' touch "$AIRLOCK_INBOX_ACKS/go";'
              ' while [ ! -e "$AIRLOCK_INBOX"/*-end.json ]; do sleep 0.02; done')
    rid = client.submit(sh(reader, limits={"wall_ms": 30000}))
    for _ in range(200):  # until persisted (not_started before)
        try:
            state = client.deliver(rid, "go", {"k": "v"})
            break
        except ac.ConflictError as e:
            assert e.error == "not_started"
            time.sleep(0.02)
    assert state == "delivered"
    assert client.deliver(rid, "go", {"k": "v"}) == "duplicate"
    assert client.deliver(rid, "end", {}) == "delivered"
    res = client.wait(rid, timeout=30)
    assert res.inbox_acked == ["go"] and '"k"' in res.stdout


def test_typed_errors_never_carry_the_token(daemon, client, tmp_path):
    secret = "not-the-token-" + "z" * 40
    bad = ac.Client("http://127.0.0.1:%d" % daemon.port, token=secret)
    assert secret not in repr(bad)
    with pytest.raises(ac.UnauthorizedError) as e:
        bad.run(sh("echo hi"))
    err = e.value
    assert isinstance(err, ac.AirlockError)
    assert err.status == 401 and err.error == "unauthorized" and err.message
    for text in (str(err), repr(err), repr(err.args), repr(err.body)):
        assert secret not in text
    # an invalid request: 400, the outcome as the code, the typed result
    with pytest.raises(ac.BadRequestError) as e:
        client.run(sh("echo hi", tenant="other"))
    assert e.value.status == 400 and e.value.error == "invalid_request"
    assert e.value.result is not None
    assert e.value.result.outcome == "invalid_request" and e.value.message
    with pytest.raises(ac.BadRequestError) as e:
        client.submit(language="sh", code="true", limits={"wall_ms": -1})
    assert e.value.error == "invalid_request"
    with pytest.raises(ac.ForbiddenError) as e:  # not the tenant's
        client.run(language="cobol", code="x")
    assert e.value.status == 403 and e.value.error == "denied"
    assert e.value.message == "gate:language"
    with pytest.raises(ac.NotFoundError) as e:
        client.get("no-such-run")
    assert e.value.status == 404 and e.value.error == "not_found"
    with pytest.raises(ac.BadRequestError) as e:
        client.list_runs(limit=0)
    assert e.value.error == "invalid_query"
    tf = tmp_path / "token"
    tf.write_text(secret + "\n")
    with pytest.raises(ac.UnauthorizedError):
        ac.Client("http://127.0.0.1:%d" % daemon.port,
                  token_file=str(tf)).capabilities()


def _parse(*chunks):
    p = ac.SSEParser()
    out = []
    for c in chunks:
        out += p.feed(c)
    return [(e.id, e.type, e.data) for e in out]


def test_sse_wire_format():
    # multi-line data, comments, a field without a space, the default type
    assert _parse(b": keep-alive\n\nevent: a\nid: 7\ndata: x\ndata:y\n\n"
                  b"data\n\ndata: z\n\n") == [
        ("7", "a", "x\ny"), ("7", "message", ""), ("7", "message", "z")]
    # CRLF and bare CR line ends, split anywhere, even inside a CRLF
    wire = b"event: stdout\r\nid: 1\r\ndata: {}\r\n\r\nevent: r\rdata: 2\r\r"
    whole = _parse(wire)
    assert whole == [("1", "stdout", "{}"), ("1", "r", "2")]
    for cut in range(1, len(wire)):
        assert _parse(wire[:cut], wire[cut:]) == whole, cut
    # an event without data is not dispatched; an unterminated one neither
    assert _parse(b"event: x\nid: 3\n\nevent: y\ndata: 1") == []
    # an id with a NUL is ignored; an empty id resets it
    assert _parse(b"id: a\0b\ndata: 1\n\nid\ndata: 2\n\n") == [
        (None, "message", "1"), ("", "message", "2")]


def test_python_client_type_checks():
    """The package is typed (py.typed): mypy --strict passes on it and on
    its example.  Debian's python3-mypy (scripts/install-deps.sh)."""
    import importlib.util
    import subprocess
    if importlib.util.find_spec("mypy") is None:
        pytest.fail("mypy is not installed: run scripts/install-deps.sh "
                    "(Debian's python3-mypy)")
    root = os.path.join(os.path.dirname(__file__), "..", "..", "clients",
                        "python")
    p = subprocess.run([sys.executable, "-m", "mypy", "--strict",
                        "--cache-dir=/dev/null", "airlock_client",
                        "examples"],
                       cwd=root, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=300)
    assert p.returncode == 0, p.stdout.decode(errors="replace")


def test_toolbelt_fields_are_typed(client):
    """The result's newer fields come typed: the program's events, its
    declared outcome, its workspace and wall limit, the log artifact."""
    res = client.run(sh('airlock-tool emit --type progress \'{"n": 1}\' '
                        '>/dev/null && airlock-tool outcome failed '
                        '--reason checked >/dev/null; echo done',
                        grant={"network": "host", "workspace": "rw",
                               "toolbelt": True},
                        limits={"wall_ms": 20000}))
    assert res.outcome == "failed" and res.reason == "declared", res.raw
    assert [(e.seq, e.type, e.data) for e in res.events] == \
        [(1, "progress", {"n": 1})]
    assert res.declaration == {"outcome": "failed", "reason": "checked"}
    assert res.host_calls == [] and res.build is None and res.tests == []
    assert res.timeout_ms == 20000 and res.log_artifact == "log"
    assert res.workspace is not None and res.workspace.kind == "scratch"
    assert res.workspace.summary == res.raw["workspace"]["summary"]


def test_build_and_judged_cases_are_typed():
    """A compiled run's result, as a daemon writes it (docs/contract.md):
    its build and judged cases become Build and TestCase values."""
    raw = {"run_id": "r1", "outcome": "completed", "exit_code": 0,
           "stdout": "", "stderr": "",
           "build": {"outcome": "completed", "exit_code": 0, "signal": None,
                     "stdout": "", "stderr_b64": "d2FybmluZwo=",
                     "wall_ms": 412, "cache_hit": True},
           "tests": [{"outcome": "completed", "exit_code": 0,
                      "stdout": "3\n", "stderr": "",
                      "usage": {"wall_ms": 2, "cpu_user_ms": 1,
                                "cpu_sys_ms": 0,
                                "peak_memory_bytes": 4096},
                      "verdict": "accepted"},
                     {"outcome": "failed", "exit_code": 1, "stdout": "",
                      "stderr": "", "usage": {}, "verdict": "wrong_answer"}],
           "inbox_pending": ["ev-2"]}
    res = ac.Result.from_json(raw)
    assert res.build == ac.Build("completed", None, 0, None, "", "warning\n",
                                 412, True)
    assert [t.verdict for t in res.tests] == ["accepted", "wrong_answer"]
    assert res.tests[0].stdout == "3\n"
    assert res.tests[0].usage.peak_memory_bytes == 4096
    assert res.inbox_pending == ["ev-2"] and res.workspace is None
