"""Warm pools of the sandbox provider through the CLI (docs/sandbox.md,
"Warm pools"): the conformance kit passes with pools on and its runs take
members (the pool's counters, so this cannot pass by always running
cold); `airlock run` makes no pool; a bad pool config is refused
without its value."""
import json
import os

from sandbox_helpers import UID_BASE, UID_COUNT, config_file, need

POOL = {"sh": {"size": 2, "workspace": "rw"},
        "python": {"size": 1, "workspace": "rw"}}


def _config(tmp_path, pool):
    return config_file(tmp_path / "config.json",
                       {"uid_base": UID_BASE, "uid_count": UID_COUNT,
                        "pool": pool})


def _stats(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f]


def test_kit_passes_through_the_pool(airlock, tmp_path):
    need(language="sh")
    stats = str(tmp_path / "stats")
    p = airlock("contract", "-p", "sandbox", "--json",
                config=_config(tmp_path, POOL),
                env={"AIRLOCK_SANDBOX_POOL_STATS": stats}, timeout=300)
    report = json.loads(p.stdout)
    failed = [c["name"] for c in report["cases"] if c["status"] == "fail"]
    assert failed == [] and p.returncode == 0, failed
    lines = _stats(stats)
    assert len(lines) == 1, lines  # the kit's one handle
    s = lines[0]
    assert s["taken"] >= 10, s
    assert s["failed"] == 0, s
    # each member served one run: never more taken than prepared
    assert s["taken"] <= s["prepared"], s


def test_cli_run_makes_no_pool(airlock, tmp_path):
    need(language="python")
    stats = str(tmp_path / "stats")
    base = tmp_path / "runs"
    base.mkdir(mode=0o700)
    cfg = config_file(tmp_path / "config.json",
                      {"uid_base": UID_BASE, "uid_count": UID_COUNT,
                       "run_dir": str(base), "pool": POOL})
    p = airlock("run", "--json", "-p", "sandbox", "-l", "python", "-e",
                "import sys; print(sys.argv)", "--arg", "a", config=cfg,
                env={"AIRLOCK_SANDBOX_POOL_STATS": stats})
    res = json.loads(p.stdout)
    assert res["outcome"] == "completed", res
    assert res["stdout"] == "['/code/main.py', 'a']\n"
    # no pool: no counters written, no member's directory ever made
    assert _stats(stats) == []
    assert list(base.iterdir()) == []


def test_bad_pool_config_refused_without_its_value(airlock, tmp_path):
    # (the reason, the key path, is checked in test_sandbox_pool.c)
    need()
    for pool in ({"python": {"size": 4242}}, {"no-such-lang-77": {"size": 1}}):
        p = airlock("probe", "-p", "sandbox", "--json",
                    config=_config(tmp_path, pool))
        out = (p.stdout + p.stderr).decode()
        assert p.returncode != 0
        assert "invalid sandbox provider configuration" in out, out
        assert "4242" not in out and "no-such-lang-77" not in out, out
