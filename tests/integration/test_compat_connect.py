"""Interactive runs over a WebSocket (docs/compat.md, docs/api.md):
Piston's /api/v2/connect protocol (init, stage, data, exit, signal, its
close codes) and airlock's own /v1/connect.  The client is Debian's
python3-websocket (installed by scripts/install-deps.sh; without it this
test fails)."""
import json
import signal
import time

import pytest
import websocket

from compat_support import GRANT, TOKEN, sha, start


@pytest.fixture(scope="module")
def d(tmp_path_factory):
    daemon = start(tmp_path_factory.mktemp("connect"))
    yield daemon
    daemon.stop()


def connect(d, path, token=TOKEN):
    h = ["Authorization: Bearer " + token] if token else []
    return websocket.create_connection(
        "ws://127.0.0.1:%d%s" % (d.port, path), header=h, timeout=30)


def messages(ws):
    """Every message until the server closes: (list, close code)."""
    got = []
    while True:
        op, data = ws.recv_data(control_frame=True)
        if op == websocket.ABNF.OPCODE_CLOSE:
            code = int.from_bytes(data[:2], "big") if len(data) >= 2 else None
            return got, code
        if op == websocket.ABNF.OPCODE_TEXT:
            got.append(json.loads(data))


def test_piston_interactive_run(d):
    ws = connect(d, "/api/v2/connect")
    ws.send(json.dumps({
        "type": "init", "language": "python", "version": "*",
        "files": [{"content": "import sys\nprint(sys.stdin.read().upper())\n"
                              "sys.stderr.write('e\\n')\nsys.exit(3)"}],
        "stdin": "hi"}))
    # Piston's stdin stays open on a connect: the client ends it.
    ws.send(stdin_frame(eof=True))
    got, code = messages(ws)
    assert code == 4999
    assert got[0]["type"] == "runtime" and got[0]["language"] == "python"
    assert got[1] == {"type": "stage", "stage": "run"}
    data = [m for m in got if m["type"] == "data"]
    assert "".join(m["data"] for m in data if m["stream"] == "stdout") == \
        "HI\n"
    assert "".join(m["data"] for m in data if m["stream"] == "stderr") == \
        "e\n"
    assert got[-1] == {"type": "exit", "stage": "run", "code": 3,
                       "signal": None}


def test_piston_output_arrives_before_the_end(d):
    ws = connect(d, "/api/v2/connect")
    ws.send(json.dumps({
        "type": "init", "language": "bash", "version": "*",
        "files": [{"content": "echo first; sleep 30"}]}))
    first = None
    while first is None:
        m = json.loads(ws.recv())
        if m["type"] == "data":
            first = m
    assert first == {"type": "data", "stream": "stdout", "data": "first\n"}
    # The run is still going: a signal ends it.
    ws.send(json.dumps({"type": "signal", "signal": "SIGKILL"}))
    got, code = messages(ws)
    assert code == 4999
    assert got[-1]["type"] == "exit" and got[-1]["code"] is None
    assert got[-1]["signal"] is not None


def test_piston_compiled_stages(d):
    from sandbox_helpers import need
    need(language="c")
    ws = connect(d, "/api/v2/connect")
    ws.send(json.dumps({
        "type": "init", "language": "c", "version": "*",
        "files": [{"content": "#include <stdio.h>\nint main(void)"
                              "{puts(\"built\");return 0;}"}]}))
    got, code = messages(ws)
    assert code == 4999
    kinds = [(m["type"], m.get("stage")) for m in got
             if m["type"] in ("stage", "exit")]
    assert kinds == [("stage", "compile"), ("exit", "compile"),
                     ("stage", "run"), ("exit", "run")]
    assert {"type": "data", "stream": "stdout", "data": "built\n"} in got


@pytest.mark.parametrize("first,code", [
    ({"type": "data", "stream": "stdin", "data": "x"}, 4003),
    ({"type": "signal", "signal": "SIGKILL"}, 4003),
    ({"type": "nonsense"}, 4002),
])
def test_piston_close_codes_before_init(d, first, code):
    ws = connect(d, "/api/v2/connect")
    ws.send(json.dumps(first))
    _, got = messages(ws)
    assert got == code


def test_piston_close_codes_after_init(d):
    # Short runs: the sessions close before them, and a run goes on to
    # its end holding a slot that the next tests need.
    init = {"type": "init", "language": "bash", "version": "*",
            "run_timeout": 3000, "files": [{"content": "sleep 30"}]}
    batch = dict(init, stdin_stream=False)
    for first, second, code in (
            (init, init, 4000),
            (init, {"type": "data", "stream": "stdout", "data": "x"}, 4004),
            (init, {"type": "signal", "signal": "SIGNOPE"}, 4005),
            (batch, {"type": "data", "stream": "stdin", "data": "x"},
             4002)):
        ws = connect(d, "/api/v2/connect")
        ws.send(json.dumps(first))
        json.loads(ws.recv())  # runtime
        ws.send(json.dumps(second))
        _, got = messages(ws)
        assert got == code, second


def test_piston_init_timeout_and_unknown_runtime(d):
    ws = connect(d, "/api/v2/connect")
    _, code = messages(ws)
    assert code == 4001
    ws = connect(d, "/api/v2/connect")
    ws.send(json.dumps({"type": "init", "language": "cobol", "version": "*",
                        "files": [{"content": "x"}]}))
    got, code = messages(ws)
    assert code == 4002 and got[0]["type"] == "error"
    assert "runtime is unknown" in got[0]["message"]


def test_connect_needs_an_upgrade_and_a_token(d):
    st, _, out = d.request("GET", "/api/v2/connect", token=TOKEN)
    assert st == 426 and set(out) == {"message"}
    with pytest.raises(websocket.WebSocketBadStatusException):
        connect(d, "/v1/connect", token="wrong")


def test_v1_interactive_mode(d):
    ws = connect(d, "/v1/connect")
    ws.send(json.dumps({"type": "init", "request": {
        "language": "python", "code": "print(input())", "stdin": "v1\n"}}))
    got, code = messages(ws)
    assert code == 1000
    assert got[0]["type"] == "run"
    assert {"type": "data", "stream": "stdout", "data": "v1\n"} in got
    result = got[-1]
    assert result["type"] == "result"
    assert result["result"]["outcome"] == "completed"
    assert result["result"]["run_id"] == got[0]["run_id"]
    st, _, r = d.request("GET", "/v1/runs/" + got[0]["run_id"], token=TOKEN)
    assert st == 200 and r["stdout"] == "v1\n"


# ---- live stdin (Piston's default; "stdin_stream": true on /v1) ----

ECHO = ("import sys\n"
        "for line in sys.stdin:\n"
        "    print('got ' + line.strip(), flush=True)\n"
        "print('eof', flush=True)\n")


def next_stdout(ws):
    """The next stdout data message's text (output before it is skipped)."""
    while True:
        m = json.loads(ws.recv())
        assert m["type"] not in ("exit", "result", "error"), m
        if m["type"] == "data" and m["stream"] == "stdout":
            return m["data"]


def stdin_frame(data=None, eof=False):
    m = {"type": "data", "stream": "stdin"}
    if data is not None:
        m["data"] = data
    if eof:
        m["eof"] = True
    return json.dumps(m)


def test_piston_live_stdin_echoes_each_line_before_the_next(d):
    ws = connect(d, "/api/v2/connect")
    ws.send(json.dumps({"type": "init", "language": "python",
                        "version": "*",
                        "files": [{"content": ECHO}], "stdin": "zero\n"}))
    # The init's stdin comes first; each answer arrives before the next
    # line is sent, so the program read them live (a causal order).
    assert next_stdout(ws) == "got zero\n"
    ws.send(stdin_frame("one\n"))
    assert next_stdout(ws) == "got one\n"
    ws.send(stdin_frame("two\n"))
    assert next_stdout(ws) == "got two\n"
    ws.send(stdin_frame(eof=True))
    got, code = messages(ws)
    assert code == 4999
    assert {"type": "data", "stream": "stdout", "data": "eof\n"} in got
    assert got[-1] == {"type": "exit", "stage": "run", "code": 0,
                       "signal": None}


C_ECHO = (
    "#include <stdio.h>\n"
    "int main(void) {\n"
    "    char line[64];\n"
    "    while (fgets(line, sizeof line, stdin)) {\n"
    "        printf(\"got %s\", line);\n"
    "        fflush(stdout);\n"
    "    }\n"
    "    puts(\"eof\");\n"
    "    return 0;\n"
    "}\n")


def test_piston_compiled_run_streams_live(d):
    # A compiled program driven line by line, as on Piston: the compile
    # stage and its exit come when the build ends, then the run stage,
    # whose output arrives while the program still waits for input.
    from sandbox_helpers import need
    need(language="c")
    ws = connect(d, "/api/v2/connect")
    ws.send(json.dumps({"type": "init", "language": "c", "version": "*",
                        "files": [{"content": C_ECHO}]}))
    seen = []
    while not seen or seen[-1] != {"type": "stage", "stage": "run"}:
        m = json.loads(ws.recv())
        assert m["type"] not in ("error", "data"), m
        seen.append(m)
    assert [m["type"] for m in seen] == ["runtime", "stage", "exit",
                                         "stage"]
    assert seen[1] == {"type": "stage", "stage": "compile"}
    assert seen[2] == {"type": "exit", "stage": "compile", "code": 0,
                       "signal": None}
    ws.send(stdin_frame("one\n"))
    assert next_stdout(ws) == "got one\n"
    ws.send(stdin_frame("two\n"))
    assert next_stdout(ws) == "got two\n"
    ws.send(stdin_frame(eof=True))
    got, code = messages(ws)
    assert code == 4999
    assert [m for m in got if m["type"] == "stage"] == []
    assert {"type": "data", "stream": "stdout", "data": "eof\n"} in got
    assert got[-1] == {"type": "exit", "stage": "run", "code": 0,
                       "signal": None}


def test_piston_live_stdin_signal_still_ends_it(d):
    ws = connect(d, "/api/v2/connect")
    ws.send(json.dumps({"type": "init", "language": "python",
                        "version": "*",
                        "files": [{"content": ECHO}]}))
    ws.send(stdin_frame("a\n"))
    assert next_stdout(ws) == "got a\n"
    ws.send(json.dumps({"type": "signal", "signal": "SIGKILL"}))
    got, code = messages(ws)
    assert code == 4999
    assert got[-1]["type"] == "exit" and got[-1]["signal"] is not None


def test_piston_oversized_stdin_frame_is_an_error(d):
    ws = connect(d, "/api/v2/connect")
    ws.send(json.dumps({"type": "init", "language": "python",
                        "version": "*",
                        "files": [{"content": ECHO}]}))
    ws.send(stdin_frame("x" * (64 * 1024 + 1)))
    got, code = messages(ws)
    assert code == 4002
    errors = [m for m in got if m["type"] == "error"]
    assert errors and "over 65536 bytes" in errors[0]["message"]


def test_piston_live_stdin_round_trip(d):
    # Without any opt-in: the program reads a line, answers, and reads
    # another that is only sent once the answer arrived.
    code = ("a = input()\nprint('hello ' + a, flush=True)\n"
            "b = input()\nprint('bye ' + b, flush=True)\n")
    ws = connect(d, "/api/v2/connect")
    ws.send(json.dumps({"type": "init", "language": "python",
                        "version": "*", "files": [{"content": code}]}))
    ws.send(stdin_frame("ann\n"))
    assert next_stdout(ws) == "hello ann\n"
    ws.send(stdin_frame("bob\n"))
    got, code = messages(ws)
    assert code == 4999
    out = "".join(m["data"] for m in got
                  if m["type"] == "data" and m["stream"] == "stdout")
    assert out == "bye bob\n"
    assert got[-1] == {"type": "exit", "stage": "run", "code": 0,
                       "signal": None}


def test_piston_stdin_stream_false_keeps_init_stdin_only(d):
    # Opted out: stdin ends after the init's, as on /execute.
    ws = connect(d, "/api/v2/connect")
    ws.send(json.dumps({"type": "init", "language": "python",
                        "version": "*", "files": [{"content": ECHO}],
                        "stdin": "only\n", "stdin_stream": False}))
    got, code = messages(ws)
    assert code == 4999
    out = "".join(m["data"] for m in got
                  if m["type"] == "data" and m["stream"] == "stdout")
    assert out == "got only\neof\n"


def test_v1_live_stdin(d):
    ws = connect(d, "/v1/connect")
    ws.send(json.dumps({"type": "init", "stdin_stream": True, "request": {
        "language": "python", "code": ECHO}}))
    run = json.loads(ws.recv())
    assert run["type"] == "run"
    ws.send(stdin_frame("one\n"))
    assert next_stdout(ws) == "got one\n"
    ws.send(stdin_frame("two\n"))
    assert next_stdout(ws) == "got two\n"
    ws.send(stdin_frame(eof=True))
    got, code = messages(ws)
    assert code == 1000
    result = got[-1]["result"]
    assert result["outcome"] == "completed" and result["exit_code"] == 0
    assert result["stdout"] == "got one\ngot two\neof\n"


def test_v1_client_leaving_ends_stdin(d):
    ws = connect(d, "/v1/connect")
    ws.send(json.dumps({"type": "init", "stdin_stream": True, "request": {
        "language": "python", "code": ECHO}}))
    run_id = json.loads(ws.recv())["run_id"]
    ws.send(stdin_frame("last\n"))
    assert next_stdout(ws) == "got last\n"
    ws.close()
    # The run goes on to its end once its stdin is over (a bounded wait).
    for _ in range(600):
        st, _, r = d.request("GET", "/v1/runs/" + run_id, token=TOKEN)
        if st == 200 and r.get("state") != "running":
            break
        time.sleep(0.05)
    assert st == 200 and r["stdout"] == "got last\neof\n"


SH_ECHO = 'while read -r l; do echo "got $l"; done; echo eof'


def one_provider(tmp_path_factory, name, provider, **extra):
    cfg = {"execution_enabled": True, "trusted_provider_acknowledged": True,
           "providers": [provider],
           "tenants": {"default": {"languages": "*", "grant": GRANT}},
           "tokens": {sha(TOKEN): "default"}}
    cfg.update(extra)
    return start(tmp_path_factory.mktemp(name), cfg)


def test_local_provider_live_stdin(tmp_path_factory):
    dl = one_provider(tmp_path_factory, "local", "local")
    try:
        ws = connect(dl, "/v1/connect")
        ws.send(json.dumps({"type": "init", "stdin_stream": True,
                            "request": {"language": "sh", "code": SH_ECHO,
                                        "stdin": "zero\n",
                                        "grant": {"network": "host"}}}))
        assert json.loads(ws.recv())["type"] == "run"
        assert next_stdout(ws) == "got zero\n"
        ws.send(stdin_frame("one\n"))
        assert next_stdout(ws) == "got one\n"
        ws.send(stdin_frame(eof=True))
        got, code = messages(ws)
        assert code == 1000
        assert got[-1]["result"]["stdout"] == "got zero\ngot one\neof\n"
    finally:
        dl.stop()


def test_provider_without_stdin_streams_refuses_typed(tmp_path_factory):
    import os
    module = os.path.join(os.path.dirname(os.environ["AIRLOCK_BIN"]),
                          "modules", "example-local.so")
    assert os.path.exists(module), "make all builds " + module
    dm = one_provider(tmp_path_factory, "module",
                      {"provider": "example-local", "module": module},
                      acknowledged_providers=["example-local"])
    try:
        ws = connect(dm, "/v1/connect")
        ws.send(json.dumps({"type": "init", "stdin_stream": True,
                            "request": {"language": "sh", "code": SH_ECHO,
                                        "grant": {"network": "host", "workspace": "rw"}}}))
        got, code = messages(ws)
        assert code == 1000
        result = got[-1]["result"]
        assert result["outcome"] == "unavailable", result
        assert result["reason"] == "stdin_stream_unsupported"
        # Not interactive, the same provider runs it.
        ws = connect(dm, "/v1/connect")
        ws.send(json.dumps({"type": "init", "request": {
            "language": "sh", "code": SH_ECHO, "stdin": "x\n",
            "grant": {"network": "host", "workspace": "rw"}}}))
        got, code = messages(ws)
        assert got[-1]["result"]["stdout"] == "got x\neof\n"
    finally:
        dm.stop()


def test_daemon_loss_ends_live_stdin(tmp_path):
    # A restarted daemon does not resume the stream: the daemon going away
    # closes the program's stdin, and the run finishes as usual.
    from test_durable_support import (DurableDaemon, cleanup_state,
                                      local_config, wait_until)
    dd = DurableDaemon(tmp_path, local_config(tokens={sha(TOKEN): "default"}))
    dd.start()
    try:
        ws = connect(dd, "/v1/connect")
        ws.send(json.dumps({"type": "init", "stdin_stream": True,
                            "request": {"language": "sh", "code": SH_ECHO,
                                        "grant": {"network": "host"}}}))
        run_id = json.loads(ws.recv())["run_id"]
        ws.send(stdin_frame("before\n"))
        assert next_stdout(ws) == "got before\n"
        dd.kill9()
        dd.start()

        def done():
            st, _, r = dd.request("GET", "/v1/runs/" + run_id, token=TOKEN)
            return r if st == 200 and r.get("state") != "running" else None
        r = wait_until(done, timeout=30, what="the run's end")
        assert r["outcome"] == "completed", r
        assert r["stdout"] == "got before\neof\n"
    finally:
        try:
            dd.stop() if dd.proc is not None else None
        finally:
            cleanup_state(dd)


def test_live_stdin_backpressure_holds_the_client(d):
    # 5 MiB of stdin, more than a session may buffer, to a program that
    # reads nothing for a second: the daemon stops reading the socket
    # while the pipe is full (the client's sends wait), so every byte
    # arrives and nothing is refused.
    code = ("import sys, time\ntime.sleep(1)\n"
            "print(len(sys.stdin.buffer.read()))\n")
    ws = connect(d, "/v1/connect")
    ws.send(json.dumps({"type": "init", "stdin_stream": True, "request": {
        "language": "python", "code": code,
        "limits": {"wall_ms": 30000}}}))
    assert json.loads(ws.recv())["type"] == "run"
    chunk = "y" * (64 * 1024)
    for _ in range(80):
        ws.send(stdin_frame(chunk))
    ws.send(stdin_frame(eof=True))
    got, code = messages(ws)
    assert code == 1000, got
    assert got[-1]["result"]["stdout"] == "%d\n" % (80 * 64 * 1024)


# ---- the daemon stopping with a session open ----

def test_sigterm_with_an_open_session_exits_cleanly(tmp_path_factory):
    # Each upgraded session holds a libmicrohttpd handle: the daemon ends
    # every session before it stops libmicrohttpd, so SIGTERM with a
    # program still waiting for stdin ends in exit 0, no crash, and
    # (under the sanitizers) no report.
    ds = start(tmp_path_factory.mktemp("stop"),
               extra_args=["--shutdown-grace-ms", "300"])
    try:
        ws = connect(ds, "/api/v2/connect")
        ws.send(json.dumps({"type": "init", "language": "python",
                            "version": "*", "files": [{"content": ECHO}]}))
        ws.send(stdin_frame("a\n"))
        assert next_stdout(ws) == "got a\n"
        ds.signal(signal.SIGTERM)
        got, code = messages(ws)
        assert code in (1001, 4999), (got, code)
        rc = ds.wait(timeout=40)
        log = ds.log()
        assert rc == 0, log
        assert "AddressSanitizer" not in log and "runtime error" not in log
        assert "stopped" in log, log
    finally:
        ds.stop()
