"""The Piston v2 API (docs/compat.md): runtimes, packages and execute
with every status, encoding and error shape, the examples of Piston's
docs/api-v2.md replayed, anonymous access with its rate limit, and the
npm client piston-client driven against airlockd (installed by
scripts/install-tools.sh; without it this test fails)."""
import base64
import json
import os
import re
import shutil
import subprocess

import pytest

from compat_support import TOKEN, config, start
from test_api_support import Daemon

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
TOOLS = os.environ.get("AIRLOCK_TOOLS_DIR") or os.path.join(REPO, "tools")


@pytest.fixture(scope="module")
def d(tmp_path_factory):
    daemon = start(tmp_path_factory.mktemp("piston"))
    yield daemon
    daemon.stop()


def execute(d, body, token=TOKEN):
    return d.request("POST", "/api/v2/execute", body, token=token)


def runtime(d, language):
    st, _, rts = d.request("GET", "/api/v2/runtimes", token=TOKEN)
    assert st == 200
    return next(r for r in rts if r["language"] == language)


def observed_version(d, language):
    st, _, caps = d.request("GET", "/v1/capabilities", token=TOKEN)
    assert st == 200
    for p in caps["providers"]:
        for l in p["languages"]:
            if l["language"] == language:
                return l["version"]
    return None


STAGE_KEYS = {"stdout", "stderr", "output", "code", "signal", "message",
              "status", "cpu_time", "wall_time", "memory"}


# ---- docs/api-v2.md examples, replayed (shapes field by field) --------

def test_doc_runtimes_example_shape(d):
    st, hdrs, rts = d.request("GET", "/api/v2/runtimes", token=TOKEN)
    assert st == 200 and hdrs["content-type"].startswith("application/json")
    assert isinstance(rts, list) and rts
    for r in rts:
        assert set(r) - {"runtime"} == {"language", "version", "aliases"}
        assert isinstance(r["aliases"], list)
    # Versions are the probe's observed facts, not a catalogue.
    py = runtime(d, "python")
    assert py["version"] == observed_version(d, "python")
    assert "py" in py["aliases"]


def test_doc_packages_example_shape(d):
    st, _, pk = d.request("GET", "/api/v2/packages", token=TOKEN)
    assert st == 200 and pk
    for p in pk:
        assert set(p) == {"language", "language_version", "installed"}
        assert p["installed"] is True


def test_doc_packages_install_and_uninstall_examples(d):
    st, _, out = d.request("POST", "/api/v2/packages",
                           {"language": "bash", "version": "5.x"},
                           token=TOKEN)
    assert st == 200 and set(out) == {"language", "version"}
    assert out["language"] == "bash" and out["version"].startswith("5.")
    st, _, out = d.request("POST", "/api/v2/packages",
                           {"language": "bash", "version": "1.x"},
                           token=TOKEN)
    assert st == 404 and set(out) == {"message"}
    st, _, out = d.request("DELETE", "/api/v2/packages",
                           {"language": "bash", "version": "5.x"},
                           token=TOKEN)
    assert st == 501 and set(out) == {"message"}


def test_doc_execute_example(d):
    if observed_version(d, "javascript") is None:
        pytest.skip("no javascript toolchain observed")
    # The example's request as written, except the version: the doc's
    # 24.16.0 is Piston's package; a selector of the observed one.
    body = {"language": "js", "version": "*",
            "files": [{"name": "my_cool_code.js",
                       "content": "console.log(process.argv)"}],
            "stdin": "", "args": ["1", "2", "3"], "compile_timeout": 10000,
            "run_timeout": 3000, "compile_memory_limit": -1,
            "run_memory_limit": -1}
    st, _, out = execute(d, body)
    assert st == 200, out
    assert set(out) == {"language", "version", "run"}
    assert out["language"] == "javascript"
    assert out["version"] == observed_version(d, "javascript")
    assert set(out["run"]) == STAGE_KEYS
    run = out["run"]
    assert run["code"] == 0 and run["signal"] is None
    assert run["stderr"] == "" and run["stdout"] == run["output"]
    # Node prints the short array on one line here (no terminal).
    assert re.sub(r"\s+", " ", run["stdout"]).endswith(
        "'/code/main.js', '1', '2', '3' ]\n".replace("\n", " "))


def test_doc_error_shape_unknown_version(d):
    st, _, out = execute(d, {"language": "python", "version": "1.0.0",
                             "files": [{"content": "print(1)"}]})
    assert st == 400 and out == {"message": "python-1.0.0 runtime is unknown"}
    st, _, out = execute(d, {"language": "cobol", "version": "*",
                             "files": [{"content": "x"}]})
    assert st == 400 and set(out) == {"message"}
    st, _, out = execute(d, {"language": "python", "version": "*"})
    assert st == 400 and out == {"message": "files is required as an array"}


# ---- execute: statuses, order, encodings -------------------------------

def py(d, code, **kw):
    body = {"language": "python", "version": "3.x",
            "files": [{"name": "main.py", "content": code}]}
    body.update(kw)
    st, _, out = execute(d, body)
    assert st == 200, out
    return out["run"]


def test_exit_code_is_RE(d):
    run = py(d, "import sys; print('x'); sys.exit(3)")
    assert run["status"] == "RE" and run["code"] == 3
    assert run["message"] == "Exited with error status 3"
    assert run["stdout"] == "x\n" and run["signal"] is None


def test_signal_is_SG(d):
    run = py(d, "import os; os.kill(os.getpid(), 11)")
    assert run["status"] == "SG" and run["signal"] == "SIGSEGV"
    assert run["code"] is None


def test_timeout_is_TO(d):
    run = py(d, "import time; time.sleep(5)", run_timeout=300)
    assert run["status"] == "TO" and run["code"] is None


def test_cpu_time_is_TO(d):
    run = py(d, "while True: pass", run_cpu_time=200, run_timeout=5000)
    assert run["status"] == "TO"


def test_output_limit_is_OL_and_EL(d):
    run = py(d, "import sys; sys.stdout.write('a' * (2 << 20))")
    assert run["status"] == "OL"
    run = py(d, "import sys; sys.stderr.write('a' * (2 << 20))")
    assert run["status"] == "EL"


def test_success_has_null_status(d):
    run = py(d, "print('ok')")
    assert run["status"] is None and run["message"] is None
    assert run["code"] == 0 and run["memory"] > 0 and run["wall_time"] >= 0


def test_output_is_interleaved_in_arrival_order(d):
    code = ("import sys, time\n"
            "for i in range(3):\n"
            "    sys.stdout.write('o%d\\n' % i); sys.stdout.flush()\n"
            "    time.sleep(0.05)\n"
            "    sys.stderr.write('e%d\\n' % i); sys.stderr.flush()\n"
            "    time.sleep(0.05)\n")
    run = py(d, code)
    assert run["output"] == "o0\ne0\no1\ne1\no2\ne2\n"
    assert run["stdout"] == "o0\no1\no2\n"


def test_stdin_args_and_workspace_files(d):
    files = [{"name": "main.py", "content": base64.b64encode(
                 b"import sys\nprint(sys.stdin.read(), sys.argv[1:])\n"
                 b"print(open('data.bin','rb').read())\n"
                 b"print(open('h.txt').read())").decode(),
              "encoding": "base64"},
             {"name": "data.bin", "content": base64.b64encode(
                 b"\x00\xff").decode(), "encoding": "base64"},
             {"name": "h.txt", "content": "6869", "encoding": "hex"}]
    st, _, out = execute(d, {"language": "python3", "version": "3",
                             "files": files, "stdin": "in",
                             "args": ["a", 2]})
    assert st == 200, out
    assert out["run"]["stdout"] == "in ['a', '2']\nb'\\x00\\xff'\nhi\n"


def test_memory_limit_applies(d):
    run = py(d, "x = bytearray(300 << 20); print(len(x))",
             run_memory_limit=64 << 20)
    assert run["status"] in ("SG", "RE") and run["stdout"] == ""


def test_compat_runs_show_in_v1_runs_and_audit(d):
    py(d, "print('listed')")
    st, _, runs = d.request("GET", "/v1/runs?limit=1", token=TOKEN)
    assert st == 200 and runs["runs"][0]["language"] == "python"
    rid = runs["runs"][0]["run_id"]
    st, _, audit = d.request("GET", "/v1/audit?run_id=" + rid, token=TOKEN)
    assert st == 200
    assert {r["event"] for r in audit["records"]} >= {"run.finished"}


# ---- access ---------------------------------------------------------

def test_bad_token_is_401_never_anonymous(d):
    st, _, out = d.request("GET", "/api/v2/runtimes", token="wrong")
    assert st == 401 and set(out) == {"message"}


def test_anonymous_tenant_runs_as_itself(d):
    run_st, _, out = execute(d, {"language": "py", "files": [
        {"content": "print(2)"}]}, token=None)
    assert run_st == 200 and out["run"]["stdout"] == "2\n"


def test_anonymous_rate_limit(tmp_path):
    d = start(tmp_path, config(anonymous_rate={"requests": 2,
                                               "per_s": 3600}))
    try:
        for _ in range(2):
            st, _, _ = d.request("GET", "/api/v2/runtimes", token=None)
            assert st == 200
        st, hdrs, out = d.request("GET", "/api/v2/runtimes", token=None)
        assert st == 429 and set(out) == {"message"}
        assert 1 <= int(hdrs["retry-after"]) <= 3600
        # A token is not the anonymous tenant's rate.
        st, _, _ = d.request("GET", "/api/v2/runtimes", token=TOKEN)
        assert st == 200
        st, _, metrics = d.request("GET", "/metrics", token=TOKEN)
        assert "airlock_rate_limited_total 1" in metrics
    finally:
        d.stop()


def test_tenant_request_rate_on_v1_and_compat(tmp_path):
    cfg = config()
    cfg["tenants"]["default"]["request_rate"] = {"requests": 3,
                                                 "per_s": 3600}
    d = start(tmp_path, cfg)
    try:
        st, _, _ = d.request("GET", "/v1/runs", token=TOKEN)
        assert st == 200
        st, _, _ = d.request("GET", "/api/v2/runtimes", token=TOKEN)
        assert st == 200
        st, _, _ = d.request("GET", "/statuses", token=None,
                             headers={"X-Auth-Token": TOKEN})
        assert st == 200
        st, hdrs, out = d.request("GET", "/v1/runs", token=TOKEN)
        assert st == 429 and out["error"] == "rate_limited"
        assert 1 <= int(hdrs["retry-after"]) <= 3600
        st, hdrs, out = d.request("GET", "/api/v2/runtimes", token=TOKEN)
        assert st == 429 and set(out) == {"message"}
        # Another tenant has its own window (none configured).
        from compat_support import NONET
        st, _, _ = d.request("GET", "/v1/runs", token=NONET)
        assert st == 200
        st, _, metrics = d.request("GET", "/v1/health", token=None)
        assert st == 200
    finally:
        d.stop()


def test_anonymous_needs_a_rate(tmp_path):
    cfg = config()
    del cfg["compat"]["piston"]["anonymous_rate"]
    d = Daemon(tmp_path, cfg)
    d.start(expect_ok=False)
    assert d.wait(20) != 0
    assert "anonymous_rate" in d.log()
    d.stop()


def test_off_by_default_and_on_with_only_the_compat_key(tmp_path):
    d = start(tmp_path, None, name="off")
    try:
        st, _, _ = d.request("GET", "/api/v2/runtimes")
        assert st == 404
    finally:
        d.stop()
    d = start(tmp_path, {"compat": {"piston": {}}}, name="on")
    try:
        st, _, rts = d.request("GET", "/api/v2/runtimes")
        assert st == 200 and rts
        st, _, _ = d.request("GET", "/languages")
        assert st == 404  # judge0 not enabled
    finally:
        d.stop()


# ---- the npm client ----------------------------------------------------

CLIENT = r"""
import piston from %s;
const client = piston({server: process.argv[2]});
const runtimes = await client.runtimes();
const py = await client.execute('python', 'import sys; print(sys.argv[1:])');
const js = await client.execute('js', 'console.log(6 * 7)', {args: []});
console.log(JSON.stringify({runtimes, py, js}));
"""


def test_piston_client(d, tmp_path):
    index = os.path.join(TOOLS, "node_modules", "piston-client", "index.js")
    assert os.path.exists(index), \
        "piston-client missing: run scripts/install-tools.sh"
    node = shutil.which("node")
    assert node, "node missing: run scripts/install-deps.sh"
    script = tmp_path / "client.mjs"
    script.write_text(CLIENT % json.dumps("file://" + index))
    p = subprocess.run([node, str(script), "http://127.0.0.1:%d" % d.port],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert any(r["language"] == "python" for r in out["runtimes"])
    assert out["py"]["run"]["stdout"] == "['1', '2', '3']\n"
    assert out["py"]["language"] == "python"
    if observed_version(d, "javascript") is not None:
        assert out["js"]["run"]["stdout"] == "42\n"


# ---- compiled languages: the compile stage ------------------------------

def test_compile_stage(d):
    from sandbox_helpers import need
    need(language="c")
    st, _, out = execute(d, {"language": "gcc", "version": "*",
                             "files": [{"name": "a.c", "content":
                                        "#include <stdio.h>\nint main(int c,"
                                        " char **v){printf(\"%s\\n\", v[1]);"
                                        " return 2;}"}],
                             "args": ["x"], "compile_timeout": 30000,
                             "compile_memory_limit": -1})
    assert st == 200, out
    assert set(out) == {"language", "version", "compile", "run"}
    assert out["language"] == "c"
    assert set(out["compile"]) == STAGE_KEYS
    assert out["compile"]["code"] == 0 and out["compile"]["status"] is None
    assert out["run"]["stdout"] == "x\n" and out["run"]["status"] == "RE"


def test_compile_error_answers_the_compile_stage_as_run(d):
    from sandbox_helpers import need
    need(language="cpp")
    st, _, out = execute(d, {"language": "c++", "version": "*",
                             "files": [{"content": "int main() { x; }"}]})
    assert st == 200 and out["run"] == out["compile"]
    assert out["compile"]["status"] == "RE" and out["compile"]["code"] != 0
    assert "x" in out["compile"]["stderr"]


def test_piston_client_compiled(d, tmp_path):
    from sandbox_helpers import need
    need(language="rust")
    index = os.path.join(TOOLS, "node_modules", "piston-client", "index.js")
    assert os.path.exists(index), \
        "piston-client missing: run scripts/install-tools.sh"
    script = tmp_path / "rust.mjs"
    script.write_text(
        "import piston from %s;\n"
        "const c = piston({server: process.argv[2]});\n"
        "const r = await c.execute('rust', 'fn main(){println!(\"{}\", "
        "std::env::args().count());}');\n"
        "console.log(JSON.stringify(r));\n" % json.dumps("file://" + index))
    p = subprocess.run([shutil.which("node"), str(script),
                        "http://127.0.0.1:%d" % d.port],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["compile"]["code"] == 0
    assert out["run"]["stdout"] == "4\n"  # the program and the client's 1 2 3


def test_lost_run_is_XX(d):
    """A run whose supervisor is lost (killed here, a process this
    test's daemon started) cannot be carried out: XX."""
    import threading
    from test_compat_judge0 import supervisor_running
    from compat_support import poll
    box = {}

    def go():
        box["r"] = execute(d, {"language": "bash", "version": "*",
                               "files": [{"content": "exec sleep 17"}],
                               "run_timeout": 20000})
    t = threading.Thread(target=go)
    t.start()
    sup = poll(lambda: supervisor_running(d.proc.pid, b"sleep"))
    os.kill(sup, 9)
    t.join(60)
    st, _, out = box["r"]
    assert st == 200 and out["run"]["status"] == "XX", out
    assert out["run"]["message"].startswith("unavailable")
