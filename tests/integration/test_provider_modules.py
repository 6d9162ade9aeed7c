"""Provider modules (docs/writing-a-provider.md, "As a module"): a provider
built as a shared object, named in the configuration, loaded by the real
CLI and daemon.  The example provider is build/modules/example-local.so;
the test modules (tests/modules/) are build/test-modules/*.so."""
import json
import os
import re
import shutil
import subprocess

import pytest

from test_api_support import Daemon

AIRLOCK_BIN = os.environ.get("AIRLOCK_BIN", "")
BUILD = os.path.dirname(AIRLOCK_BIN)
EXAMPLE = os.path.join(BUILD, "modules", "example-local.so")
TESTMOD = os.path.join(BUILD, "test-modules")

GRANT = {"network": ["none", "host"], "workspace": ["none", "rw"],
         "secrets": [], "streaming": True}
REQ = ["-l", "sh", "--network", "host", "--workspace", "rw"]


def module(name):
    path = os.path.join(TESTMOD, name + ".so")
    assert os.path.exists(path), "make all builds " + path
    return path


def config(path, name="example-local", ack=True, before=(), extra=None,
           mconfig=None):
    cand = {"provider": name, "module": path}
    if mconfig is not None:
        cand["config"] = mconfig
    cfg = {"execution_enabled": True,
           "trusted_provider_acknowledged": True,
           "acknowledged_providers": [name] if ack else [],
           "providers": list(before) + [cand],
           "tenants": {"default": {"languages": "*", "grant": GRANT}}}
    cfg.update(extra or {})
    return cfg


def write(tmp_path, cfg, name="config.json"):
    p = tmp_path / name
    p.write_text(json.dumps(cfg))
    return str(p)


def log_lines(path):
    """{pid: [call words]} from the counting module's log."""
    by_pid = {}
    if not os.path.exists(path):
        return by_pid
    for line in open(path).read().splitlines():
        pid, rest = line.split(" ", 1)
        by_pid.setdefault(pid, []).append(rest)
    return by_pid


def assert_probe_before_each_ensure(by_pid):
    ensures = 0
    for pid, calls in by_pid.items():
        for i, c in enumerate(calls):
            if c.startswith("ensure"):
                ensures += 1
                assert i > 0 and calls[i - 1] == "probe", (pid, calls)
    return ensures


def test_example_module_built_and_uses_only_public_api():
    assert os.path.exists(EXAMPLE), "make all builds " + EXAMPLE
    und = subprocess.run(["nm", "-D", "--undefined-only", EXAMPLE],
                         capture_output=True, check=True).stdout.decode()
    used = set(re.findall(r"\b(al_[a-z0-9_]+)", und))
    assert "al_facts_new" in used
    exported = set(re.findall(r"^\s+(al_[a-z0-9_]+);",
                              open(os.path.join(BUILD, "libairlock.map"))
                              .read(), re.M))
    assert used <= exported, used - exported
    # ... and the shared library exports exactly that surface, versioned
    lib = os.path.join(BUILD, "libairlock.so")
    out = subprocess.run(["nm", "-D", "--defined-only", lib],
                         capture_output=True, check=True).stdout.decode()
    names = {ln.split()[-1].split("@")[0] for ln in out.splitlines()
             if ln.strip()}
    assert {n for n in names if not n.startswith("al_")} == {"AIRLOCK_0"}
    assert "al_provider_module_load" in names
    dyn = subprocess.run(["readelf", "-d", lib], capture_output=True,
                         check=True).stdout.decode()
    assert "[libairlock.so.0]" in dyn


def test_cli_runs_module(airlock, tmp_path):
    cfg = write(tmp_path, config(EXAMPLE))
    p = airlock("run", *REQ, "-e", "echo from a module; exit 3", config=cfg)
    assert p.returncode == 3, p.stderr
    assert p.stdout == b"from a module\n"


def test_two_modules_in_one_configuration(airlock, tmp_path):
    # Each loads as itself (the loader knows objects by the name they were
    # opened with; descriptor numbers must not make one the other).
    log = tmp_path / "calls.log"
    cfg = config(EXAMPLE)
    cfg["providers"].insert(0, {"provider": "counting",
                                "module": module("counting"),
                                "config": {"log": str(log)}})
    cfg["acknowledged_providers"].append("counting")
    path = write(tmp_path, cfg)
    p = airlock("run", *REQ, "-e", "echo first", config=path)
    assert p.returncode == 0, p.stderr
    assert "execute 1 start" in open(log).read()
    p = airlock("run", "-p", "example-local", *REQ, "-e", "echo second",
                config=path)
    assert p.returncode == 0 and p.stdout == b"second\n", p.stderr


def test_unacknowledged_module_is_not_loaded(airlock, tmp_path):
    log = tmp_path / "calls.log"
    cfg = write(tmp_path, config(module("counting"), name="counting",
                                 ack=False, mconfig={"log": str(log)}))
    p = airlock("run", "--json", *REQ, "-e", "echo x", config=cfg)
    r = json.loads(p.stdout)
    assert r["outcome"] == "unavailable", r
    tail = airlock("audit", "tail", "--json").stdout.decode()
    assert '"skipped":"not_acknowledged"' in tail.replace(" ", "")
    # -p does not acknowledge a module; the kit and probe refuse it too
    p = airlock("run", "-p", "counting", *REQ, "-e", "echo x", config=cfg)
    assert p.returncode == 125
    for cmd in (["probe", "-p", "counting"], ["contract", "-p", "counting"]):
        p = airlock(*cmd, config=cfg)
        assert p.returncode == 125, p
        assert b"not_acknowledged" in p.stderr
    assert not log.exists(), "an unacknowledged module ran code"


@pytest.mark.parametrize("name,message", [
    ("abi_mismatch", "was built for provider ABI version 2, this airlock "
                     "speaks 1"),
    ("size_mismatch", "has a provider table of"),
    ("no_entry", "does not define al_provider_module_entry()"),
])
def test_bad_module_refused(airlock, tmp_path, name, message):
    cfg = write(tmp_path, config(module(name)))
    p = airlock("run", *REQ, "-e", "echo x", config=cfg)
    assert p.returncode == 125
    assert message in p.stderr.decode(), p.stderr


def test_daemon_refuses_bad_module(tmp_path):
    d = Daemon(tmp_path, config(module("abi_mismatch")))
    d.start(expect_ok=False)
    try:
        assert d.wait(30) != 0
        assert "was built for provider ABI version 2" in d.log()
    finally:
        d.stop()


def test_module_file_trust(airlock, tmp_path):
    # Writable by others: refused.
    loose = tmp_path / "loose"
    loose.mkdir()
    copy = loose / "example.so"
    shutil.copy(EXAMPLE, copy)
    os.chmod(copy, 0o666)
    p = airlock("run", *REQ, "-e", "echo x",
                config=write(tmp_path, config(str(copy))))
    assert p.returncode == 125
    assert "writable by no one else" in p.stderr.decode()
    # In a directory others can write (no sticky bit): refused.
    os.chmod(copy, 0o755)
    os.chmod(loose, 0o777)
    p = airlock("run", *REQ, "-e", "echo x",
                config=write(tmp_path, config(str(copy))))
    assert p.returncode == 125
    assert "is writable by another user" in p.stderr.decode()
    os.chmod(loose, 0o755)
    p = airlock("run", *REQ, "-e", "echo ok",
                config=write(tmp_path, config(str(copy))))
    assert p.returncode == 0, p.stderr
    # Missing, relative, a built-in's name, another provider's module.
    cases = [
        (config(str(tmp_path / "absent.so")), "cannot find the module"),
        (config("example.so"), "expected an absolute path"),
        (config(EXAMPLE, name="sandbox"), "built-in provider"),
        (config(EXAMPLE, name="acme"), "provides another provider"),
    ]
    for cfg, message in cases:
        p = airlock("run", *REQ, "-e", "echo x",
                    config=write(tmp_path, cfg))
        assert p.returncode == 125
        assert message in p.stderr.decode(), (message, p.stderr)


def test_kit_passes_on_example_module(airlock, tmp_path):
    cfg = write(tmp_path, config(EXAMPLE))
    p = airlock("contract", "-p", "example-local", "--json", config=cfg,
                timeout=120)
    assert p.returncode == 0, p.stdout[-2000:]
    rep = json.loads(p.stdout)
    assert rep["provider"] == "example-local"
    assert not [c for c in rep["cases"] if c["status"] == "fail"]
    assert len([c for c in rep["cases"] if c["status"] == "pass"]) > 30


def test_require_provider(airlock, tmp_path):
    need = {"require_provider": "example-local"}
    ok = write(tmp_path, config(EXAMPLE, extra=need), "ok.json")
    p = airlock("run", *REQ, "-e", "echo bound", config=ok)
    assert p.returncode == 0 and p.stdout == b"bound\n", p.stderr
    p = airlock("run", "-p", "sandbox", "-l", "sh", "-e", "true", config=ok)
    assert p.returncode == 125
    assert "requires provider example-local; sandbox was asked for" in \
        p.stderr.decode()
    behind = write(tmp_path, config(EXAMPLE, before=["sandbox"], extra=need),
                   "behind.json")
    p = airlock("run", *REQ, "-e", "echo x", config=behind)
    assert p.returncode == 125
    assert "but sandbox comes first" in p.stderr.decode()
    unacked = write(tmp_path, config(EXAMPLE, ack=False, extra=need),
                    "unacked.json")
    p = airlock("run", *REQ, "-e", "echo x", config=unacked)
    assert p.returncode == 125
    assert "not in acknowledged_providers" in p.stderr.decode()
    # the daemon refuses to start the same way, and starts when bound
    d = Daemon(tmp_path, config(EXAMPLE, before=["sandbox"], extra=need),
               name="behind")
    d.start(expect_ok=False)
    try:
        assert d.wait(30) != 0
        assert "but sandbox comes first" in d.log()
    finally:
        d.stop()


def test_cli_reprobes_before_ensure(airlock, tmp_path):
    log = tmp_path / "calls.log"
    cfg = write(tmp_path, config(module("counting"), name="counting",
                                 mconfig={"log": str(log)}))
    p = airlock("run", *REQ, "-e", "echo counted", config=cfg)
    assert p.returncode == 0, p.stderr
    (calls,) = log_lines(log).values()
    # no handle yet: the selection probe is the new handle's own (made
    # under its ensure lock), then its ensure
    assert calls[:2] == ["probe", "ensure 1 ok"], calls
    assert "execute 1 start" in calls
    assert calls[-1] == "release 1 ok"


def test_daemon_runs_module_and_quarantines(tmp_path):
    log = tmp_path / "calls.log"
    # Every handle of the daemon's is healthy once, then not; its release
    # fails.
    cfg = config(module("counting"), name="counting",
                 mconfig={"log": str(log), "healthy_checks": 1,
                          "fail_release": True},
                 extra={"require_provider": "counting"})
    d = Daemon(tmp_path, cfg).start()
    try:
        for i in range(3):
            st, _, r = d.run({"language": "sh", "code": "echo run %d" % i,
                              "grant": {"network": "host",
                                        "workspace": "rw"}})
            assert st == 200, r
            assert r["outcome"] == "completed", r
            assert r["stdout"] == "run %d\n" % i
        st, _, metrics = d.request("GET", "/metrics")
        assert "airlock_quarantined_handles 1\n" in metrics
    finally:
        d.stop()
    by_pid = log_lines(log)
    # The daemon's own calls: the one whose handle was health-checked.
    (dcalls,) = [c for c in by_pid.values() if any(
        x.startswith("health") for x in c)]
    assert "release 1 fail" in dcalls
    after = dcalls[dcalls.index("release 1 fail") + 1:]
    assert not [c for c in after if c.split(" ")[1:2] == ["1"]], dcalls
    assert "ensure 2 ok" in after
    # Each run's supervisor loaded the module from the run's record and
    # executed on a handle of its own; every ensure anywhere came right
    # after a probe.
    execs = [c for calls in by_pid.values() for c in calls
             if c.startswith("execute")]
    assert len(execs) == 3
    assert assert_probe_before_each_ensure(by_pid) >= 5
