"""Shared fixtures: the airlock binary and a private state directory."""
import json
import os
import subprocess

import pytest

BIN = os.environ.get("AIRLOCK_BIN") or os.path.join(
    os.path.dirname(__file__), "..", "..", "build", "airlock")


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "not_under_san(reason): left out of the run against "
        "the ASan+UBSan build (scripts/integration-san.sh sets AIRLOCK_SAN=1)"
        ", with the reason printed")


# The files whose tests take longest together (pytest --durations=0
# summed per file; 10 s to a minute each, docs/performance.md), longest
# first.  They are collected first, so make check-fast's workers (one
# file at a time, in collection order) start them early, and no long
# file starts last while the other worker has nothing left to do.  Order
# only: every test still runs.
LONG_FILES = [
    "test_fleet.py",
    "test_fleet_sqlite.py",
    "test_container_provider.py",
    "test_container_docker.py",
    "test_api_http_hardening.py",
    "test_container_hostile.py",
    "test_compiled_languages.py",
    "test_sandbox_cache.py",
    "test_outputs.py",
    "test_compat_judge0.py",
    "test_durable_recovery.py",
    "test_api_lifecycle.py",
    "test_sandbox_hostile.py",
    "test_idle_supervisors.py",
    "test_container_images.py",
    "test_pool.py",
    "test_api_limits.py",
    "test_retention.py",
    "test_crash_gauntlet.py",
]


def _long_first(items):
    rank = {name: i for i, name in enumerate(LONG_FILES)}
    order = {id(item): i for i, item in enumerate(items)}
    items.sort(key=lambda item: (rank.get(item.path.name, len(rank)),
                                 order[id(item)]))


def pytest_collection_modifyitems(config, items):
    """Long files first (LONG_FILES).  Under AIRLOCK_SAN=1, a test marked
    not_under_san is skipped and says why (docs/testing.md, "Sanitizers
    beyond unit tests")."""
    _long_first(items)
    if os.environ.get("AIRLOCK_SAN") != "1":
        return
    for item in items:
        m = item.get_closest_marker("not_under_san")
        if m is not None:
            why = m.args[0] if m.args else m.kwargs.get("reason", "")
            item.add_marker(pytest.mark.skip(
                reason="left out under ASan+UBSan: " + why))


@pytest.fixture(autouse=True, scope="session")
def _private_default_state_dir(tmp_path_factory):
    """Tests that do not pass --state-dir still never write the machine's
    /var/lib/airlock: the default state directory is a session temp dir."""
    d = tmp_path_factory.mktemp("default-state")
    old = os.environ.get("AIRLOCK_STATE_DIR")
    os.environ["AIRLOCK_STATE_DIR"] = str(d)
    yield
    if old is None:
        os.environ.pop("AIRLOCK_STATE_DIR", None)
    else:
        os.environ["AIRLOCK_STATE_DIR"] = old


@pytest.fixture
def state_dir(tmp_path):
    d = tmp_path / "state"
    d.mkdir(mode=0o700)
    return str(d)


@pytest.fixture
def airlock(state_dir):
    """Runs `airlock ARGS` with a private state dir; returns CompletedProcess."""
    def run(*args, input=None, timeout=60, env=None, config=None):
        cmd = [BIN, "--state-dir", state_dir]
        if config is not None:
            cmd += ["--config", config]
        cmd += list(args)
        e = dict(os.environ)
        e.pop("AIRLOCK_CONFIG", None)
        if env:
            e.update(env)
        return subprocess.run(cmd, input=input, capture_output=True,
                              timeout=timeout, env=e)
    return run


@pytest.fixture
def run_json(airlock):
    """Runs `airlock run --json ARGS`; returns (result dict, process)."""
    def run(*args, **kw):
        p = airlock("run", "--json", *args, **kw)
        out = p.stdout.decode()
        assert out.strip(), p.stderr.decode()
        return json.loads(out), p
    return run
