"""Idle supervisors (docs/durability.md, "Idle supervisors"): airlockd
keeps supervisors exec'd ahead of the runs, with the provider ensured, and
hands a run to one over its socket instead of starting a supervisor.

Every test here tells a handed-over run from a cold one by the process
itself (the run's recorded supervisor is one that was idle before the run
was submitted) and by the daemon's counters, so none can pass by always
starting cold.  Killing the daemon leaves idle supervisors nothing to do:
they exit and leave no process or cgroup behind, and a kill at each
boundary of a hand-off still launches a run at most once."""
import copy
import json
import os
import pathlib
import re
import signal
import subprocess
import threading
import time

import pytest

from test_durable_faults import POINTS, fault_bin  # noqa: F401 (fixture)
from test_durable_support import (AIRLOCK_BIN, DurableDaemon, alive,
                                  assert_no_sanitizer_reports, audit_events,
                                  cleanup_state, files_holding,
                                  idle_cgroups, identity,
                                  local_config, read_lines, run_cgroup,
                                  run_dir, sh, supervisor_log, wait_until)


def idle_pids(d):
    """Live idle supervisors (`supervise --idle`) of this state dir that
    serve no run now (a run's supervisor keeps its argv; one that serves
    several runs waits again once its run is finished)."""
    want = str(d.state.resolve())
    found = []
    serving = set()
    for idf in (d.state / "runs").glob("*/identity.json"):
        if (idf.parent / "final.json").exists():
            continue
        try:
            serving.add(json.loads(idf.read_text())["pid"])
        except (OSError, ValueError, KeyError):
            pass
    for p in pathlib.Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            args = (p / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        args = [a.decode(errors="replace") for a in args]
        if "supervise" in args and "--idle" in args and want in args \
                and alive(int(p.name)) and int(p.name) not in serving \
                and not _forked_from_supervisor(int(p.name)):
            found.append(int(p.name))
    return sorted(found)


def _forked_from_supervisor(pid):
    """A fork that did not exec (a provider's shepherd or init) carries
    its supervisor's argv: the parent tells."""
    try:
        stat = pathlib.Path("/proc/%d/stat" % pid).read_text()
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        args = pathlib.Path("/proc/%d/cmdline" % ppid).read_bytes()
    except (OSError, ValueError):
        return False
    return b"supervise" in args.split(b"\0")


def metrics(d):
    st, _, text = d.request("GET", "/metrics")
    assert st == 200, text
    out = {}
    for line in text.splitlines():
        m = re.match(r'^(airlock_(?:idle_supervisors|supervisor_launches_'
                     r'total)\{\w+="(\w+)"\}) (\d+)$', line)
        if m:
            out[m.group(2)] = int(m.group(3))
    return out


def wait_idle(d, n, kind="generic"):
    wait_until(lambda: metrics(d).get(kind) == n and
               len(idle_pids(d)) >= n, timeout=30,
               what="%d %s idle supervisor(s)" % (n, kind))
    return idle_pids(d)


def cfg_with(idle, **extra):
    cfg = copy.deepcopy(local_config(extra=extra))
    cfg["idle_supervisors"] = idle
    return cfg


@pytest.fixture
def idle_daemon(tmp_path):
    d = DurableDaemon(tmp_path, cfg_with(2))
    d.start()
    yield d
    try:
        d.stop() if d.proc is not None else None
    finally:
        cleanup_state(d)
    assert_no_sanitizer_reports(d)


def test_a_run_goes_to_an_idle_supervisor(idle_daemon):
    d = idle_daemon
    before = wait_idle(d, 2)
    st, _, res = d.run(sh('echo "hi $AIRLOCK_RUN_ID"; echo err >&2'))
    assert st == 200 and res["outcome"] == "completed", res
    rid = res["run_id"]
    assert res["stdout"] == "hi %s\n" % rid and res["stderr"] == "err\n"
    # Its supervisor was one of the idle ones, not a new process.
    assert identity(d, rid)["pid"] in before
    m = metrics(d)
    assert m["handoff"] == 1 and m["cold"] == 0, m
    # Its cgroup was the idle supervisor's (named by the run's nonce),
    # recorded before the hand-off, and is gone with the run.
    rec = json.loads((run_dir(d, rid) / "recovery.json").read_text())
    assert rec["cgroup"].endswith("/airlock-run-sup-%s.%s" % (
        rec["nonce"], rec["cgroup"].rsplit(".", 1)[1]))
    assert not run_cgroup(rid, d).exists()
    # The supervisor's log went to the run's directory at hand-off.
    assert "records do not match" not in supervisor_log(d, rid)
    # Refilled behind it.
    after = wait_idle(d, 2)
    assert set(after) != set(before)
    assert audit_events(d, rid) == ["run.started", "run.finished"]


def test_idle_supervisors_serve_runs_one_after_another(idle_daemon):
    d = idle_daemon
    wait_idle(d, 2)
    seen = set()
    for i in range(6):
        idle = idle_pids(d)
        st, _, res = d.run(sh("echo %d" % i))
        assert st == 200 and res["stdout"] == "%d\n" % i, res
        sup = identity(d, res["run_id"])["pid"]
        if sup in idle:
            seen.add(sup)
    m = metrics(d)
    assert m["handoff"] + m["cold"] == 6, m
    # Idle ones are used (each exactly once) whenever one is ready.
    assert m["handoff"] == len(seen) and m["handoff"] >= 2, m


def test_zero_keeps_the_cold_launch(tmp_path):
    d = DurableDaemon(tmp_path, cfg_with(0))
    try:
        d.start()
        st, _, res = d.run(sh("echo cold"))
        assert st == 200 and res["stdout"] == "cold\n", res
        assert idle_pids(d) == []
        m = metrics(d)
        assert m["handoff"] == 0 and m["cold"] == 1 and m["generic"] == 0, m
        rec = json.loads((run_dir(d, res["run_id"]) / "recovery.json")
                         .read_text())
        assert "/airlock-run-%s." % res["run_id"] in rec["cgroup"]
    finally:
        d.stop()
        cleanup_state(d)
    assert_no_sanitizer_reports(d)


def test_a_kill_of_the_daemon_ends_idle_supervisors_and_their_cgroups(
        tmp_path):
    d = DurableDaemon(tmp_path, cfg_with(3))
    try:
        d.start()
        pids = wait_idle(d, 3)
        assert len(idle_cgroups(d)) == 3
        d.kill9()
        # Their socket ended: each exits without running anything and
        # removes its own cgroup.
        wait_until(lambda: not any(alive(p) for p in pids), timeout=15,
                   what="the idle supervisors to exit")
        wait_until(lambda: idle_cgroups(d) == [], timeout=10,
                   what="their cgroups to go")
        assert not (d.state / "runs").exists() or \
            list((d.state / "runs").iterdir()) == []
        # A new daemon starts its own.
        d.start()
        again = wait_idle(d, 3)
        assert not set(again) & set(pids)
    finally:
        d.stop() if d.proc is not None else None
        cleanup_state(d)
    assert_no_sanitizer_reports(d)


def test_a_graceful_stop_ends_idle_supervisors(tmp_path):
    d = DurableDaemon(tmp_path, cfg_with(2))
    try:
        d.start()
        pids = wait_idle(d, 2)
        d.stop()
        assert not any(alive(p) for p in pids)
        assert idle_cgroups(d) == []
    finally:
        cleanup_state(d)


def test_secrets_go_to_a_handed_over_run_in_memory_only(tmp_path):
    store = tmp_path / "secrets"
    store.mkdir(mode=0o700)
    value = "idle-s3cr3t-0123456789"
    (store / "API_TOKEN").write_text(value + "\n")
    (store / "API_TOKEN").chmod(0o600)
    cfg = cfg_with(1)
    cfg["secrets"] = {"dir": str(store)}
    cfg["tenants"]["default"]["grant"]["secrets"] = ["API_TOKEN"]
    d = DurableDaemon(tmp_path, cfg)
    try:
        d.start()
        before = wait_idle(d, 1)
        req = sh('echo "len=${#API_TOKEN}"')
        req["grant"]["secrets"] = ["API_TOKEN"]
        st, _, res = d.run(req)
        assert st == 200 and res["stdout"] == "len=%d\n" % len(value), res
        assert identity(d, res["run_id"])["pid"] in before
        d.stop()
        assert files_holding(run_dir(d, res["run_id"]),
                             value.encode()) == []
    finally:
        d.stop()
        cleanup_state(d)
    assert_no_sanitizer_reports(d)


def test_an_interrupt_reaches_a_handed_over_run(idle_daemon):
    d = idle_daemon
    before = wait_idle(d, 2)
    st, _, body = d.run(sh("sleep 30", limits={"wall_ms": 60000}),
                        wait=False)
    assert st == 202
    rid = body["run_id"]
    wait_until(lambda: (run_dir(d, rid) / "identity.json").exists(),
               what="the hand-off")
    assert identity(d, rid)["pid"] in before
    st, _, res = d.request("POST", "/v1/runs/%s/interrupt?wait=true" % rid)
    assert st == 200 and res["outcome"] == "interrupted", res
    assert not run_cgroup(rid, d).exists()


def test_a_reload_replaces_idle_supervisors(tmp_path):
    d = DurableDaemon(tmp_path, cfg_with(1))
    try:
        d.start()
        old = wait_idle(d, 1)
        cfg = cfg_with(2)
        d.config_path.write_text(json.dumps(cfg))
        d.signal(1)  # SIGHUP
        wait_until(lambda: "configuration reloaded" in d.log(),
                   what="the reload")
        new = wait_idle(d, 2)
        assert not set(new) & set(old)
        wait_until(lambda: not any(alive(p) for p in old),
                   what="the old configuration's idle supervisor to end")
    finally:
        d.stop()
        cleanup_state(d)


def test_the_supervise_command_refuses_idle_with_a_run():
    p = subprocess.run([AIRLOCK_BIN, "--state-dir", "/nonexistent",
                        "supervise", "--idle", "--run", "x", "--nonce",
                        "0" * 32], capture_output=True, timeout=10)
    assert p.returncode == 2, p


# ---- a kill of the daemon at each boundary of a hand-off ----------------

@pytest.mark.parametrize("point", POINTS)
def test_a_kill_at_each_boundary_of_a_hand_off_launches_once(
        tmp_path, fault_bin, point):  # noqa: F811 (fixture)
    mark = tmp_path / "launches"
    d = DurableDaemon(tmp_path, cfg_with(1), binary=fault_bin)
    req = sh('echo launched >> "$MARK"; sleep 0.6; echo done',
             env={"MARK": str(mark)}, idempotency_key="key-" + point)
    try:
        d.start(env={"AIRLOCK_FAULT": point})
        before = wait_idle(d, 1)
        try:
            d.run(req, timeout=30)
        except (ConnectionError, OSError):
            pass
        assert d.wait_dead(timeout=30) == -9, d.all_logs()
        runs = list((d.state / "runs").iterdir())
        assert len(runs) == 1
        rid = runs[0].name
        rec = json.loads((runs[0] / "recovery.json").read_text())
        assert "/airlock-run-sup-%s." % rec["nonce"] in rec["cgroup"]
        if point == "after_persist":
            # Persisted with the idle supervisor's nonce, never handed:
            # the supervisor sees its socket end and goes, running nothing.
            wait_until(lambda: not any(alive(p) for p in before),
                       what="the idle supervisor to exit")
            assert read_lines(mark) == []
        d.start()
        st, _, res = d.run(req, timeout=60)
        assert res["run_id"] == rid
        if point == "after_persist":
            assert res["outcome"] == "unavailable" and \
                res["reason"] == "lost", res
            assert read_lines(mark) == []
        else:
            assert st == 200 and res["outcome"] == "completed", res
            assert read_lines(mark) == ["launched"]
            assert identity(d, rid)["pid"] in before
        wait_until(lambda: (run_dir(d, rid) / "final.json").exists(),
                   what="the acknowledged result")
        assert audit_events(d, rid) == ["run.started", "run.finished"]
        # Cleaned up just after the result is acknowledged.
        wait_until(lambda: not pathlib.Path(rec["cgroup"]).exists(),
                   what="the run's cgroup to go")
    finally:
        d.stop() if d.proc is not None else None
        cleanup_state(d)
    assert_no_sanitizer_reports(d)


# ---- warm pools (the sandbox provider's "pool") ---------------------------

def pool_config(idle, size):
    grant = {"network": ["none"], "workspace": ["none", "ro", "rw"],
             "secrets": [], "streaming": True}
    return {"providers": [{"provider": "sandbox",
                           "config": {"pool": {"python": {"size": size}}}}],
            "idle_supervisors": idle,
            "tenants": {"default": {"languages": "*", "grant": grant}}}


def test_a_language_pool_keeps_warm_supervisors_and_routes_to_them(
        tmp_path):
    """Per language in the sandbox's pool, `size` idle supervisors each
    ensure the sandbox with that language's pool of size 1; a request of
    the language goes to one of them, any other to a generic one."""
    d = DurableDaemon(tmp_path, pool_config(1, 2))
    try:
        d.start()
        st, _, caps = d.request("GET", "/v1/capabilities")
        sb = caps["providers"][0]
        if not sb["available"]:
            pytest.skip("the sandbox with a pool configured is unavailable "
                        "here (probe: %s)" % sb["unavailable_reason"])
        if "python" not in [lang["language"] for lang in sb["languages"]]:
            pytest.skip("the sandbox found no python toolchain")
        wait_idle(d, 2, kind="warm")
        before = wait_idle(d, 1, kind="generic")
        assert len(before) == 3
        st, _, res = d.run({"language": "python", "code": "print(6 * 7)"})
        assert st == 200 and res["stdout"] == "42\n", res
        assert identity(d, res["run_id"])["pid"] in before
        m = metrics(d)
        assert m["handoff_warm"] == 1 and m["handoff"] == 0, m
        st, _, res = d.run({"language": "sh", "code": "echo sh"})
        assert st == 200 and res["stdout"] == "sh\n", res
        assert identity(d, res["run_id"])["pid"] in before
        m = metrics(d)
        assert m["handoff_warm"] == 1 and m["handoff"] == 1, m
        assert m["cold"] == 0, m
        # Two warm ones again: the one that served made its member again
        # and waits for the next run (docs/durability.md, "A supervisor
        # that serves several runs").
        wait_until(lambda: metrics(d).get("warm") == 2, timeout=30,
                   what="2 warm idle supervisors")
    finally:
        d.stop() if d.proc is not None else None
        cleanup_state(d)
    assert_no_sanitizer_reports(d)


def test_only_idle_supervisors_hold_warm_sandboxes(tmp_path):
    """The daemon's own sandbox handle only probes: with a pool configured
    it must not prepare members itself (they would never serve a run).  A
    member's init is a fork of the process that made it, carrying that
    process's argv: none of the daemon's children may be one."""
    d = DurableDaemon(tmp_path, pool_config(0, 2))
    try:
        d.start()
        st, _, caps = d.request("GET", "/v1/capabilities")
        sb = caps["providers"][0]
        if not sb["available"]:
            pytest.skip("the sandbox with a pool configured is unavailable "
                        "here (probe: %s)" % sb["unavailable_reason"])
        if "python" not in [lang["language"] for lang in sb["languages"]]:
            pytest.skip("the sandbox found no python toolchain")
        wait_idle(d, 2, kind="warm")
        # a run makes the daemon ensure its own handle (selection)
        st, _, res = d.run({"language": "sh", "code": "echo sh"})
        assert st == 200 and res["stdout"] == "sh\n", res
        time.sleep(1.0)  # time for a pool in the daemon to have started
        kids = []
        for p in pathlib.Path("/proc").iterdir():
            if not p.name.isdigit():
                continue
            try:
                stat = (p / "stat").read_text()
                args = (p / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if int(stat[stat.rindex(")") + 2:].split()[1]) == d.proc.pid:
                kids.append(args)
        assert kids, "no idle supervisors among the daemon's children"
        assert all(b"supervise" in a for a in kids), kids
    finally:
        d.stop() if d.proc is not None else None
        cleanup_state(d)
    assert_no_sanitizer_reports(d)


def test_idle_supervisors_count_against_concurrency(tmp_path):
    """Refilling stops while runs in flight + idle supervisors reach
    concurrency + the number configured (docs/configuration.md)."""
    cfg = cfg_with(1)
    cfg["concurrency"] = 1
    d = DurableDaemon(tmp_path, cfg)
    try:
        d.start()
        wait_idle(d, 1)
        st, _, body = d.run(sh("sleep 30", limits={"wall_ms": 60000}),
                            wait=False)
        assert st == 202, body
        first = body["run_id"]
        wait_until(lambda: (run_dir(d, first) / "identity.json").exists(),
                   what="the hand-off")
        idle = wait_idle(d, 1)  # refilled: 1 in flight + 1 idle <= 1 + 1
        # Two more wait for the one slot: 3 in flight.
        waiters = [threading.Thread(target=d.run, args=(sh("echo w"),),
                                    kwargs={"timeout": 90})
                   for _ in range(2)]
        for t in waiters:
            t.start()
        wait_until(lambda: metrics_in_flight(d) == 3, what="3 in flight")
        # The idle one is lost: no refill while 3 + 0 >= 1 + 1.
        os.kill(idle[0], signal.SIGKILL)
        wait_until(lambda: metrics(d)["generic"] == 0, what="the reap")
        time.sleep(2.5)
        assert idle_pids(d) == [] and metrics(d)["generic"] == 0
        st, _, res = d.request("POST",
                               "/v1/runs/%s/interrupt?wait=true" % first)
        assert st == 200, res
        for t in waiters:
            t.join(90)
        # All done: refilled.
        wait_idle(d, 1)
    finally:
        d.stop() if d.proc is not None else None
        cleanup_state(d)


def metrics_in_flight(d):
    st, _, text = d.request("GET", "/metrics")
    m = re.search(r"^airlock_api_runs_in_flight (\d+)$", text, re.M)
    return int(m.group(1)) if m else -1
