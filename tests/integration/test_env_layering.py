"""The run's environment in layers (docs/host.md, "The run's environment"),
through the real daemon and the sandbox: the trusted AIRLOCK_* variables
and PATH come last and no secret may take their names (refused when the
configuration loads and in a request); the baseline keeps the daemon's
locale, time zone and terminal when their values are plain; a daemon
variable reaches a run only through its tenant's pass_env; secret_env
maps a secret to a variable; a request's "name" becomes
AIRLOCK_SCRIPT_NAME and is audited."""
import hashlib
import json
import os
import subprocess

import pytest

from test_api_support import AIRLOCK_BIN, Daemon

SECRET_A = "gh-" + hashlib.sha256(os.urandom(16)).hexdigest()[:20]
SECRET_B = "db-" + hashlib.sha256(os.urandom(16)).hexdigest()[:20]
PROXY = "http://127.0.0.1:9/"
NOT_PASSED = "not-passed-" + hashlib.sha256(os.urandom(8)).hexdigest()[:12]
TOKEN_OTHER = "other-" + hashlib.sha256(os.urandom(16)).hexdigest()
TOKEN = "def-" + hashlib.sha256(os.urandom(16)).hexdigest()
PRINT_ENV = ("import os\n"
             "for k in sorted(os.environ): print(k + '=' + os.environ[k])\n")


def sha(s):
    return hashlib.sha256(s.encode()).hexdigest()


def daemon_env():
    """The daemon's own environment for these tests: plain locale values,
    one that is not plain, a proxy and a variable nobody passes."""
    env = dict(os.environ)
    for k in list(env):
        if k.startswith("LC_") or k in ("LANG", "TZ", "TERM"):
            del env[k]
    env.update({"LANG": "C.UTF-8", "LC_TIME": "C.UTF-8",
                "LC_MESSAGES": "C;touch /tmp/x", "TZ": "Europe/Berlin",
                "TERM": "xterm-256color", "HTTPS_PROXY": PROXY,
                "AIRLOCK_TEST_NOT_PASSED": NOT_PASSED})
    return env


def start(d):
    """Daemon.start with daemon_env() as the daemon's environment."""
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(daemon_env())
    try:
        return d.start()
    finally:
        os.environ.clear()
        os.environ.update(saved)


def store(tmp):
    path = tmp / "secrets.json"
    path.write_text(json.dumps({"gh.token": SECRET_A, "db-url": SECRET_B,
                                "PATH": "/evil", "AIRLOCK_RUN_ID": "x"}))
    os.chmod(path, 0o600)
    return str(path)


def config(tmp, **tenant):
    t = {"languages": "*",
         "grant": {"secrets": ["gh.token", "db-url"]},
         "secret_env": {"gh.token": "GH_TOKEN"},
         "pass_env": ["HTTPS_PROXY"]}
    t.update(tenant)
    return {"providers": ["sandbox"],
            "secrets": {"file": store(tmp)},
            "tenants": {"default": t,
                        "other": {"languages": "*"}},
            "tokens": {sha(TOKEN_OTHER): "other", sha(TOKEN): "default"}}


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("envl")
    d = start(Daemon(tmp, config(tmp)))
    yield d
    d.stop()


def env_of(d, token=TOKEN, **req):
    body = {"language": "python", "code": PRINT_ENV}
    body.update(req)
    st, _, r = d.run(body, token=token)
    assert st == 200 and r["outcome"] == "completed", r
    out = {}
    for line in r["stdout"].splitlines():
        k, _, v = line.partition("=")
        out[k] = v
    return r, out


def refused_at_load(tmp, name, secret):
    cfg = config(tmp, grant={"secrets": [secret]})
    d = Daemon(tmp, cfg, name=name)
    d.start(expect_ok=False)
    rc = d.wait(30)
    d.stop()
    return rc, d.log()


@pytest.mark.parametrize("secret", ["PATH", "AIRLOCK_RUN_ID",
                                    "airlock-run-id", "home"])
def test_reserved_secret_refused_at_load(tmp_path, secret):
    rc, log = refused_at_load(tmp_path, "bad", secret)
    assert rc != 0, log
    assert "tenants.default.grant.secrets[0]" in log, log
    assert "reserved" in log, log
    assert "/evil" not in log


def test_secret_env_to_reserved_refused_at_load(tmp_path):
    d = Daemon(tmp_path, config(tmp_path, secret_env={"gh.token": "PATH"}))
    d.start(expect_ok=False)
    assert d.wait(30) != 0
    d.stop()
    assert "tenants.default.secret_env.gh.token" in d.log(), d.log()


def test_pass_env_validated_at_load(tmp_path):
    for i, bad in enumerate(["AIRLOCK_RUN_ID", "NODE_OPTIONS", "LC_ALL",
                             "1BAD"]):
        d = Daemon(tmp_path, config(tmp_path, pass_env=[bad]),
                   name="p%d" % i)
        d.start(expect_ok=False)
        assert d.wait(30) != 0, bad
        d.stop()
        assert "tenants.default.pass_env[0]" in d.log(), (bad, d.log())


@pytest.mark.parametrize("secret", ["PATH", "AIRLOCK_RUN_ID", "ld-preload"])
def test_reserved_secret_refused_in_request(daemon, secret):
    st, _, r = daemon.run({"language": "python", "code": "print(1)",
                           "grant": {"secrets": ["gh.token", secret]}},
                          token=TOKEN)
    assert r["outcome"] == "invalid_request", r
    assert r["reason"].startswith("grant.secrets["), r
    text = json.dumps(r)
    assert "/evil" not in text and SECRET_A not in text


def test_layers(daemon):
    r, env = env_of(daemon, grant={"secrets": ["gh.token", "db-url"]},
                    env={"MODE": "x"})
    # trusted
    assert env["AIRLOCK_RUN_ID"] == r["run_id"]
    assert env["PATH"] != "/evil" and "/usr/bin" in env["PATH"]
    # secret_env, and the default mapping
    assert env["GH_TOKEN"] == SECRET_A
    assert env["DB_URL"] == SECRET_B
    assert "gh.token" not in env and "db-url" not in env
    # locale baseline: plain values kept, the other one dropped
    assert env["LANG"] == "C.UTF-8"
    assert env["LC_TIME"] == "C.UTF-8"
    assert env["TZ"] == "Europe/Berlin"
    assert env["TERM"] == "xterm-256color"
    assert "LC_MESSAGES" not in env
    # pass_env, and nothing else of the daemon's
    assert env["HTTPS_PROXY"] == PROXY
    assert "AIRLOCK_TEST_NOT_PASSED" not in env
    assert NOT_PASSED not in r["stdout"]
    assert env["MODE"] == "x"


def test_request_env_wins_over_pass_env(daemon):
    _, env = env_of(daemon, env={"HTTPS_PROXY": "http://127.0.0.1:8/"})
    assert env["HTTPS_PROXY"] == "http://127.0.0.1:8/"


def test_pass_env_only_where_configured(daemon):
    _, env = env_of(daemon, token=TOKEN_OTHER)
    assert "HTTPS_PROXY" not in env
    assert env["TZ"] == "Europe/Berlin"


def test_script_name(daemon):
    r, env = env_of(daemon, name="report.py")
    assert env["AIRLOCK_SCRIPT_NAME"] == "report.py"
    _, env = env_of(daemon)
    assert "AIRLOCK_SCRIPT_NAME" not in env
    tail = subprocess.run([AIRLOCK_BIN, "--state-dir", str(daemon.state),
                           "audit", "tail", "-n", "50", "--json"],
                          capture_output=True, timeout=30).stdout.decode()
    started = [json.loads(line) for line in tail.splitlines()
               if r["run_id"] in line]
    started = [e for e in started if e["event"] == "run.started"]
    assert started and started[0]["script_name"] == "report.py", tail


@pytest.mark.parametrize("name", ["a/b", "..", "", "x\u0001", "a" * 256, 5])
def test_bad_script_name_refused(daemon, name):
    st, _, r = daemon.run({"language": "python", "code": "print(1)",
                           "name": name}, token=TOKEN)
    assert r["outcome"] == "invalid_request" and r["reason"] == "name", r
