"""Grant reuse (T2), default ceilings (T5) and providers airlock did not
build (T13), attacked through the real daemon and CLI with the sandbox.

T2: a grant pinned to content must not be reusable with other behaviour:
variables that make an interpreter load code are refused unless the
tenant names them, and a pin names the whole execution plan (computed
here from docs/host.md alone).  T5: a fresh install bounds every run.
T13: a provider airlock did not build runs nothing until acknowledged."""
import base64
import hashlib
import json
import os
import subprocess

import pytest

from test_api_support import AIRLOCK_BIN, Daemon, local_config

SECRET = "pinned-secret-" + hashlib.sha256(os.urandom(16)).hexdigest()[:16]
TOKEN_LAX = "lax-" + hashlib.sha256(os.urandom(16)).hexdigest()
TOKEN_DEF = "def-" + hashlib.sha256(os.urandom(16)).hexdigest()
JS = 'console.log("report ok")'
BASH = "echo report ok"
NODE_ATTACK = "--import=data:text/javascript,console.log(process.env.PINNED)"
BASH_ATTACK = "$(echo $PINNED >&2)"


def sha(data):
    if isinstance(data, str):
        data = data.encode()
    return hashlib.sha256(data).hexdigest()


def plan_sha256(req):
    """The canonical plan form of docs/host.md, "Content pins"."""
    out = [b"airlock-plan-v1\n"]

    def item(label, data):
        if isinstance(data, str):
            data = data.encode()
        out.append(b"%s %d\n%s\n" % (label.encode(), len(data), data))

    # an exec request (no code) plans as language "exec", code ""
    item("language", req.get("language", "exec"))
    item("code", req.get("code", ""))
    argv = req.get("argv", [])
    item("argv.count", str(len(argv)))
    for a in argv:
        item("argv", a)
    env = req.get("env", {})
    item("env.count", str(len(env)))
    for name in sorted(env, key=str.encode):
        item("env.name", name)
        item("env.value", env[name])
    if req.get("stdin_b64") is not None:
        stdin = base64.b64decode(req["stdin_b64"])
    elif req.get("stdin") is not None:
        stdin = req["stdin"].encode()
    else:
        stdin = None
    item("stdin.count", "0" if stdin is None else "1")
    if stdin is not None:
        item("stdin", stdin)
    files = req.get("files", [])
    item("files.count", str(len(files)))
    for f in sorted(files, key=lambda f: f["path"].encode()):
        item("file.path", f["path"])
        item("file.mode", "%04o" % int(f.get("mode", "0644"), 8))
        if "content_b64" in f:
            item("file.content", base64.b64decode(f["content_b64"]))
        else:
            item("file.content", f["content"])
    tc = req.get("toolchain", {})
    item("toolchain.count", str(len(tc)))
    for tid in sorted(tc, key=str.encode):
        item("toolchain.id", tid)
        item("toolchain.constraint", tc[tid])
    if req.get("name") is not None:
        item("name", req["name"])
    if req.get("exec") is not None:
        item("exec.count", str(len(req["exec"])))
        for a in req["exec"]:
            item("exec", a)
    if req.get("image") is not None:
        item("image", req["image"])
    if req.get("build_flags"):
        item("build_flags.count", str(len(req["build_flags"])))
        for f in req["build_flags"]:
            item("build_flag", f)
    if req.get("tests"):
        item("tests.count", str(len(req["tests"])))
        for t in req["tests"]:
            if "stdin_b64" in t:
                item("test.stdin", base64.b64decode(t["stdin_b64"]))
            else:
                item("test.stdin", t.get("stdin", ""))
            if t.get("argv") is None:
                item("test.argv.count", "-")
                continue
            item("test.argv.count", str(len(t["argv"])))
            for a in t["argv"]:
                item("test.argv", a)
    return sha(b"".join(out))


# The plan pinned for T2's plan test: every part of a plan is used.
PLAN = {
    "language": "python",
    "code": ("import os, sys\n"
             "print(sys.argv[1], os.environ['MODE'], sys.stdin.read(),\n"
             "      open('data.txt').read(), len(os.environ['PINNED']))\n"),
    "argv": ["one"],
    "env": {"MODE": "fast"},
    "stdin": "in",
    "files": [{"path": "data.txt", "content": "d"}],
    "grant": {"workspace": "ro", "secrets": ["PINNED"]},
}
# The same plan judged on two cases: the cases' stdin and argv are part
# of the plan, since they change what runs.
PLAN_CASES = dict(PLAN, tests=[{"stdin": "a"},
                               {"stdin": "b", "argv": ["two"]}])


def secrets_file(path):
    path.write_text(json.dumps({"PINNED": SECRET}))
    os.chmod(path, 0o600)
    return str(path)


@pytest.fixture(scope="module")
def pinned(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("pins")
    pins = [
        {"language": "javascript", "code_sha256": sha(JS),
         "grant": {"secrets": ["PINNED"]}},
        {"language": "bash", "code_sha256": sha(BASH),
         "grant": {"secrets": ["PINNED"]}},
        {"plan_sha256": plan_sha256(PLAN),
         "grant": {"workspace": ["ro"], "secrets": ["PINNED"]}},
        {"plan_sha256": plan_sha256(PLAN_CASES),
         "grant": {"workspace": ["ro"], "secrets": ["PINNED"]}},
    ]
    d = Daemon(tmp, {
        "providers": ["sandbox"],
        "secrets": {"file": secrets_file(tmp / "secrets.json")},
        "tenants": {
            "default": {"languages": "*", "pins": pins},
            # an operator who allows both variables: the pin still holds
            "lax": {"languages": "*", "pins": pins,
                    "env_allow": ["NODE_OPTIONS", "BASH_ENV"]},
        },
        "tokens": {sha(TOKEN_LAX): "lax", sha(TOKEN_DEF): "default"},
    }).start()
    yield d
    d.stop()


def prun(d, req, token=TOKEN_DEF):
    return d.run(req, token=token)


def no_secret(body):
    text = json.dumps(body)
    assert SECRET not in text, body


def test_a_pin_still_grants_its_own_plan(pinned):
    st, _, r = prun(pinned, {"language": "javascript", "code": JS,
                           "grant": {"secrets": ["PINNED"]}})
    assert st == 200 and r["outcome"] == "completed", r
    assert r["stdout"] == "report ok\n"
    # without the pin the tenant holds no secret
    st, _, r = prun(pinned, {"language": "javascript", "code": JS + ";",
                           "grant": {"secrets": ["PINNED"]}})
    assert r["outcome"] == "denied" and r["reason"] == "gate:grant", r


@pytest.mark.parametrize("language,code,var,value", [
    ("javascript", JS, "NODE_OPTIONS", NODE_ATTACK),
    ("bash", BASH, "BASH_ENV", BASH_ATTACK),
])
def test_loader_variable_cannot_ride_a_code_pin(pinned, language, code, var,
                                                value):
    # On the old main both ran the pinned code with the attacker's code
    # first and printed the pinned secret.
    st, _, r = prun(pinned, {"language": language, "code": code,
                           "env": {var: value},
                           "grant": {"secrets": ["PINNED"]}})
    assert r["outcome"] == "denied", r
    assert r["reason"] == "gate:env:" + var
    no_secret(r)
    # the value is never echoed: not in the answer, the log or the audit
    assert value not in json.dumps(r)
    assert value not in pinned.log()
    audit = subprocess.run([AIRLOCK_BIN, "--state-dir", str(pinned.state),
                            "audit", "tail", "--json"], capture_output=True,
                           timeout=30).stdout.decode()
    assert r["run_id"] in audit and value not in audit


@pytest.mark.parametrize("language,code,var,value", [
    ("javascript", JS, "NODE_OPTIONS", NODE_ATTACK),
    ("bash", BASH, "BASH_ENV", BASH_ATTACK),
])
def test_allowed_variable_still_leaves_the_pinned_plan(pinned, language,
                                                       code, var, value):
    # The tenant may set the variable, but then the plan is not the pinned
    # one: the pin's grant (the secret) does not apply.
    st, _, r = prun(pinned, {"language": language, "code": code,
                           "env": {var: value},
                           "grant": {"secrets": ["PINNED"]}}, token=TOKEN_LAX)
    assert r["outcome"] == "denied" and r["reason"] == "gate:grant", r
    no_secret(r)


def test_plan_pin_runs_exactly_its_plan(pinned):
    st, _, r = prun(pinned, PLAN)
    assert st == 200 and r["outcome"] == "completed", r
    assert r["stdout"] == "one fast in d %d\n" % len(SECRET)
    # limits are not part of the plan
    st, _, r = prun(pinned, dict(PLAN, limits={"wall_ms": 9000}))
    assert r["outcome"] == "completed", r


@pytest.mark.parametrize("change", [
    {"argv": ["two"]},
    {"argv": ["one", "more"]},
    {"env": {"MODE": "slow"}},
    {"env": {"MODE": "fast", "EXTRA": "1"}},
    {"stdin": "import os; print(os.environ['PINNED'])"},
    {"stdin": None},
    {"files": [{"path": "data.txt", "content": "e"}]},
    {"files": [{"path": "data.txt", "content": "d", "mode": "0755"}]},
    {"files": [{"path": "data.txt", "content": "d"},
               {"path": "sitecustomize.py", "content": "x"}]},
    {"language": "ruby"},
    {"toolchain": {"python": ">=3"}},
    {"tests": [{"stdin": "import os; print(os.environ['PINNED'])"}]},
    {"tests": [{"stdin": "a"}, {"stdin": "b", "argv": ["three"]}]},
    {"tests": [{"stdin": "a"}, {"stdin": "b"}]},
], ids=lambda c: ",".join(c) + str(len(json.dumps(c))))
def test_plan_pin_refuses_a_changed_plan(pinned, change):
    req = dict(PLAN, **change)
    if req.get("stdin") is None:
        req.pop("stdin")
    st, _, r = prun(pinned, req)
    assert r["outcome"] == "denied" and r["reason"] == "gate:grant", r
    no_secret(r)


def test_plan_pin_covers_judged_cases(pinned):
    # The C plan and the reference above agree on a plan with cases: its
    # pin grants it, each case with its own stdin and argv.
    st, _, r = prun(pinned, PLAN_CASES)
    assert st == 200 and r["outcome"] != "denied", r
    outs = [c.get("stdout") for c in r["tests"]]
    assert outs == ["one fast a d %d\n" % len(SECRET),
                    "two fast b d %d\n" % len(SECRET)], r["tests"]


def test_code_pin_does_not_cover_judged_cases(pinned):
    # On the commit before, a code pin's grant rode along with cases
    # whose stdin the caller chose.
    st, _, r = prun(pinned, {"language": "javascript", "code": JS,
                           "tests": [{"stdin": "x"}],
                           "grant": {"secrets": ["PINNED"]}})
    assert r["outcome"] == "denied" and r["reason"] == "gate:grant", r
    no_secret(r)


# ---- T5: default ceilings -------------------------------------------


@pytest.fixture(scope="module")
def fresh(tmp_path_factory):
    """airlockd as installed: no configuration file at all."""
    d = Daemon(tmp_path_factory.mktemp("fresh"), None).start()
    yield d
    d.stop()


@pytest.mark.parametrize("limit,value", [
    ("memory_bytes", 4 << 30),
    ("pids", 100000),
    ("wall_ms", 86400000),
    ("cpu_ms", 86400000),
    ("output_bytes", 64 << 20),
    ("file_bytes", 8 << 30),
    ("open_files", 1 << 20),
])
def test_fresh_install_refuses_a_limit_above_its_ceiling(fresh, limit, value):
    # On the old main every one of these ran (a 2 GiB allocation completed
    # with memory_bytes 4 GiB).
    st, _, r = fresh.run({"language": "sh", "code": "true",
                          "limits": {limit: value}})
    assert st == 403 and r["outcome"] == "denied", r
    assert r["reason"] == "gate:ceiling:" + limit


def test_fresh_install_refuses_oversized_argv_and_env(fresh):
    big = "x" * 60000
    st, _, r = fresh.run({"language": "sh", "code": "true",
                          "argv": [big] * 5})
    assert r["outcome"] == "denied", r
    assert r["reason"] == "gate:ceiling:argv_bytes"
    st, _, r = fresh.run({"language": "sh", "code": "true",
                          "env": {"V%d" % i: big[:30000]
                                  for i in range(10)}})
    assert r["outcome"] == "denied", r
    assert r["reason"] == "gate:ceiling:env_bytes"


def test_unset_limits_are_bounded_inside_a_daemon_run(fresh):
    # CPU and file size a request leaves unset take the ceiling, and the
    # supervisor that runs it gets them (old main: unlimited).
    st, _, r = fresh.run({"language": "sh", "code": "ulimit -t; ulimit -f"})
    assert r["outcome"] == "completed", r
    assert r["stdout"] == "900\n%d\n" % ((1 << 30) // 512)


def test_configured_ceiling_reaches_the_supervisor(tmp_path):
    # A tenant's ceiling lowered an unset limit in the host, but the daemon
    # handed its supervisor the request without it (old main: unlimited).
    cfg = {"providers": ["sandbox"],
           "tenants": {"default": {"languages": "*",
                                   "ceilings": {"file_bytes": 4096,
                                                "cpu_ms": 3000}}}}
    d = Daemon(tmp_path, cfg).start()
    try:
        st, _, r = d.run({"language": "sh", "code": "ulimit -t; ulimit -f"})
        assert r["outcome"] == "completed", r
        assert r["stdout"] == "3\n8\n"
    finally:
        d.stop()


# ---- T13: providers airlock did not build ------------------------------


@pytest.fixture(scope="module")
def back(tmp_path_factory):
    """A second airlockd for the `remote` provider to reach."""
    d = Daemon(tmp_path_factory.mktemp("back"), local_config()).start()
    yield d
    d.stop()


def remote_run(tmp_path, back, acknowledged):
    cfg = {"providers": [{"provider": "remote",
                          "config": {"url": "http://127.0.0.1:%d" % back.port,
                                     "token_file": str(back.state / "token"),
                                     "timeout_ms": 5000}}],
           "tenants": {"default": {"languages": "*",
                                   "grant": {"network": ["host"]}}}}
    if acknowledged:
        cfg["acknowledged_providers"] = ["remote"]
    path = tmp_path / ("ack.json" if acknowledged else "noack.json")
    path.write_text(json.dumps(cfg))
    state = tmp_path / "state"
    env = dict(os.environ)
    env.pop("AIRLOCK_CONFIG", None)
    p = subprocess.run([AIRLOCK_BIN, "--state-dir", str(state), "--config",
                        str(path), "run", "--json", "--network", "host",
                        "-l", "sh", "-e", "echo ran"],
                       capture_output=True, timeout=60, env=env)
    return json.loads(p.stdout), state


def test_remote_runs_nothing_unacknowledged(tmp_path, back):
    # On the old main the remote provider was trusted on its word.
    r, state = remote_run(tmp_path, back, acknowledged=False)
    assert r["outcome"] == "unavailable", r
    assert r["reason"] == "sandbox_unavailable"
    tail = subprocess.run([AIRLOCK_BIN, "--state-dir", str(state), "audit",
                           "tail", "--json"], capture_output=True,
                          timeout=30).stdout.decode()
    assert '"skipped":"not_acknowledged"' in tail.replace(" ", "")


def test_remote_runs_once_acknowledged(tmp_path, back):
    r, _ = remote_run(tmp_path, back, acknowledged=True)
    assert r["outcome"] == "completed", r
    assert r["stdout"] == "ran\n"
