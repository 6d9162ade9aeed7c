"""Shared helpers for the sandbox integration tests: run the CLI with
`-p sandbox --json`, and skip only on the provider's probed facts."""
import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile

import pytest

BIN = os.environ.get("AIRLOCK_BIN", "build/airlock")
HOSTILE = os.path.join(os.path.dirname(__file__), "hostile")
# The provider under test: test_container_hostile.py runs the same
# programs under `container` (its config takes uid_base/uid_count too).
PROVIDER = "sandbox"
_facts = {}


def facts():
    if PROVIDER not in _facts:
        cfg = [] if PROVIDER == "sandbox" else ["--config", session_config()]
        p = subprocess.run([BIN, *cfg, "probe", "-p", PROVIDER, "--json"],
                           capture_output=True, text=True, timeout=120)
        _facts[PROVIDER] = json.loads(p.stdout)
    return _facts[PROVIDER]


def need(language=None, limit=None, network=None):
    f = facts()
    if not f.get("available"):
        # scripts/run-unprivileged.sh: the configuration under test must
        # run the sandbox, so its absence fails instead of skipping.
        if os.environ.get("AIRLOCK_REQUIRE_SANDBOX") == "1":
            pytest.fail("sandbox unavailable: %s" %
                        f.get("unavailable_reason"))
        pytest.skip("sandbox unavailable: %s" % f.get("unavailable_reason"))
    if language and language not in [l["language"] for l in f["languages"]]:
        pytest.skip("sandbox facts list no %s toolchain" % language)
    if limit and limit not in f["limits"]:
        pytest.skip("sandbox facts do not list limit %s" % limit)
    if network and network not in f["network"]:
        pytest.skip("sandbox facts do not offer network %s" % network)


def need_default_bound(limit):
    """Skips unless the facts say a run naming no `limit` is still bounded
    (there is no such bound without a cgroup for it, e.g. unprivileged)."""
    need()
    bounds = facts()["mechanism"].get("default_bounds", {})
    if limit not in bounds:
        pytest.skip("sandbox facts give no default %s bound "
                    "(mechanism.default_bounds: %s)" % (limit, bounds))


# This session's own range of per-run host uids, so that checks for
# processes left behind see only our runs, not another airlock's on the
# same host.
UID_BASE = 300000 + (os.getpid() % 500) * 100
UID_COUNT = 100
_session_dirs = {}


def session_config():
    """A configuration file (removed at exit) with this session's uids."""
    if PROVIDER not in _session_dirs:
        d = tempfile.mkdtemp(prefix="airlock-test-")
        atexit.register(shutil.rmtree, d, True)
        config_file(os.path.join(d, "config.json"),
                    {"uid_base": UID_BASE, "uid_count": UID_COUNT})
        _session_dirs[PROVIDER] = d
    return os.path.join(_session_dirs[PROVIDER], "config.json")


def run(lang, code, *args, timeout=60):
    need(language=lang)
    cmd = [BIN, "--config", session_config(), "run", "-p", PROVIDER,
           "-l", lang, "-e", code, "--json"]
    cmd += list(args)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    try:
        res = json.loads(p.stdout)
    except ValueError:
        raise AssertionError("no JSON result: rc=%d stderr=%s" %
                             (p.returncode, p.stderr))
    # The CLI's log says why a run could not be carried out: pytest shows
    # it with a failing test's captured output.
    if res.get("outcome") == "unavailable":
        sys.stderr.write("airlock run: %s %s\n%s" %
                         (res["outcome"], res.get("reason"), p.stderr))
    return res


def hostile(name, *args, **kw):
    """Runs tests/integration/hostile/<name> (.sh or .py)."""
    path = os.path.join(HOSTILE, name)
    with open(path) as f:
        code = f.read()
    lang = "python" if name.endswith(".py") else "sh"
    return run(lang, code, *args, **kw)


def config_file(path, sandbox_config):
    """Writes a CLI configuration whose only candidate is the sandbox with
    sandbox_config; returns its path."""
    with open(path, "w") as f:
        json.dump({"execution_enabled": True,
                   "providers": [{"provider": PROVIDER,
                                  "config": sandbox_config}],
                   "tenants": {"default": {
                       "languages": "*",
                       "grant": {"network": ["none", "loopback"],
                                 "workspace": ["none", "ro", "rw"],
                                 "secrets": [], "streaming": True}}}}, f)
    return str(path)
