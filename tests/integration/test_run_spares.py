"""Run directories made ahead (docs/durability.md, "Run directories made
ahead"): airlockd keeps `spare_run_dirs` directories with a run's first
entries ready under STATE_DIR/spare-runs/<epoch>/, and admission renames
one to runs/<id> instead of creating its entries on the request's path.

A run's directory must come out the same either way (no temp file or
blank left in it, the same modes), a daemon's start must remove what a
gone daemon left but never what a live one holds, and `spare_run_dirs: 0`
must turn it off.  The counters tell a made-ahead directory from one made
on admission, so no test passes by always taking the old path."""
import copy
import fcntl
import os
import re
import stat

import pytest

from test_durable_support import (DurableDaemon, assert_no_sanitizer_reports,
                                  cleanup_state, local_config, run_dir, sh,
                                  wait_until)

EXPECTED = {"acks", "final.json", "finishing", "identity.json", "inbox",
            "recovery.json", "result.json", "supervisor.log"}


def counts(d):
    st, _, text = d.request("GET", "/metrics")
    assert st == 200, text
    out = {}
    for line in text.splitlines():
        m = re.match(r'^airlock_run_dirs_total\{how="(\w+)"\} (\d+)$', line)
        if m:
            out[m.group(1)] = int(m.group(2))
    return out


def epoch_dirs(d):
    base = d.state / "spare-runs"
    return sorted(p.name for p in base.iterdir()) if base.exists() else []


def ready_spares(d):
    # the store made ahead is a spare's last entry
    return sorted(d.state.glob("spare-runs/*/*/run/.artifacts"))


def config(spares=None):
    cfg = copy.deepcopy(local_config())
    if spares is not None:
        cfg["spare_run_dirs"] = spares
    return cfg


@pytest.fixture
def make_daemon(tmp_path):
    made = []

    def make(cfg, name="d"):
        d = DurableDaemon(tmp_path, cfg, name=name)
        made.append(d)
        return d
    yield make
    for d in made:
        try:
            d.stop() if d.proc is not None else None
        finally:
            cleanup_state(d)
        assert_no_sanitizer_reports(d)


def assert_run_dir_as_made_on_admission(d, rid):
    rd = run_dir(d, rid)
    # A run's clean-up (its unused blanks among them) comes after its
    # answer: the last run's may still be under way.
    try:
        wait_until(lambda: {p.name for p in rd.iterdir()} == EXPECTED,
                   timeout=10, what="run %s cleaned up" % rid)
    except AssertionError:
        pass  # the names, below, say what is left
    names = {p.name for p in rd.iterdir()}
    assert names == EXPECTED, names
    assert stat.S_IMODE(rd.stat().st_mode) == 0o700
    assert stat.S_IMODE((rd / "inbox").stat().st_mode) == 0o755
    assert stat.S_IMODE((rd / "acks").stat().st_mode) == 0o700
    for name in ("recovery.json", "identity.json", "final.json"):
        assert stat.S_IMODE((rd / name).stat().st_mode) == 0o600, name
    # The final result is the supervisor's result.json under a second
    # name exactly when the bytes are the same (the local provider's
    # result gains the provider's facts when finished: two files).
    final, result = rd / "final.json", rd / "result.json"
    same = final.read_bytes() == result.read_bytes()
    assert (final.stat().st_ino == result.stat().st_ino) == same
    assert final.stat().st_nlink == (2 if same else 1)


def test_runs_take_directories_made_ahead(make_daemon):
    d = make_daemon(config())
    d.start()
    wait_until(lambda: len(ready_spares(d)) == 4, what="4 spares made")
    epochs = epoch_dirs(d)
    assert len(epochs) == 1
    stores_ahead = {p.stat().st_ino for p in ready_spares(d)}
    rids = []
    for i in range(6):
        st, _, res = d.run(sh("echo run %d" % i))
        assert st == 200 and res["outcome"] == "completed", res
        assert res["stdout"] == "run %d\n" % i
        rids.append(res["run_id"])
    c = counts(d)
    # Sequential runs find a spare (the maker has the time between them
    # at most of the time; one made on admission is still a success).
    assert c["ahead"] >= 3 and c["ahead"] + c["on_admission"] == 6, c
    for rid in rids:
        assert_run_dir_as_made_on_admission(d, rid)
    # The first run's artifact store is the one made with its spare, and
    # holds its log.
    store = d.state / "artifacts" / rids[0]
    assert store.stat().st_ino in stores_ahead
    assert (store / "log").read_text() == "run 0\n"
    # Refilled behind the runs.
    wait_until(lambda: len(ready_spares(d)) == 4, what="spares refilled")
    # Nothing of a run is left in the slots.
    for p in d.state.glob("spare-runs/*/*/run"):
        assert {q.name for q in p.iterdir()} == {
            "inbox", "acks", ".result.reserve", "supervisor.log",
            ".blank.0", ".blank.1", ".blank.2", ".artifacts"}


def test_zero_makes_none(make_daemon):
    d = make_daemon(config(0))
    d.start()
    st, _, res = d.run(sh("echo hi"))
    assert st == 200 and res["stdout"] == "hi\n", res
    assert epoch_dirs(d) == []
    assert counts(d) == {"ahead": 0, "on_admission": 0}
    assert_run_dir_as_made_on_admission(d, res["run_id"])


def test_a_start_removes_what_a_gone_daemon_left(make_daemon):
    d = make_daemon(config(2))
    d.start()
    wait_until(lambda: len(ready_spares(d)) == 2, what="2 spares made")
    first = epoch_dirs(d)
    d.kill9()
    assert epoch_dirs(d) == first  # left behind by the kill
    d.start()
    wait_until(lambda: len(ready_spares(d)) == 2, what="2 spares made")
    second = epoch_dirs(d)
    assert len(second) == 1 and second != first
    st, _, res = d.run(sh("echo again"))
    assert st == 200 and res["stdout"] == "again\n", res


def test_a_live_daemons_spares_are_left_alone(make_daemon):
    d = make_daemon(config(1))
    # Another daemon's directory, locked the way a live daemon holds it.
    held = d.state / "spare-runs" / "999999"
    d.state.mkdir(mode=0o700, exist_ok=True)
    os.chmod(d.state, 0o700)
    (held / "0" / "run").mkdir(mode=0o700, parents=True)
    (held / "0" / "run" / "keep").write_text("x")
    fd = os.open(held, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        d.start()
        wait_until(lambda: len(ready_spares(d)) == 1, what="a spare made")
        assert (held / "0" / "run" / "keep").read_text() == "x"
        d.stop()
    finally:
        os.close(fd)
    # Once its holder is gone, the next start removes it.
    d.start()
    wait_until(lambda: not held.exists(), what="the released directory gone")

