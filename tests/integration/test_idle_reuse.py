"""A supervisor that serves several runs (docs/durability.md): a generic
idle supervisor of the built-in sandbox takes runs one after another, up
to a bound, each with a nonce of its own; nothing of one run (processes,
secrets, environment, descriptors) reaches the next; a daemon killed
during a reused supervisor's later run recovers it exactly once.

Every test tells a reused supervisor from a fresh one by the process
itself: the pid and start time recorded for each run, and the nonce its
argument vector shows."""
import hashlib
import json
import os
import pathlib
import re
import uuid

import pytest

from test_durable_faults import fault_bin  # noqa: F401 (fixture)
from test_durable_support import (DurableDaemon, alive,
                                  assert_no_sanitizer_reports, audit_events,
                                  cleanup_state, finished_records, identity,
                                  idle_cgroups, run_dir, starttime,
                                  wait_until)

# The bound in src/supervisor/reuse.h (AL_SUP_RUNS_MAX).
RUNS_MAX = 64


def sandbox_config(idle=1, secrets_file=None, secrets=()):
    grant = {"network": ["none"], "workspace": ["none", "ro", "rw"],
             "secrets": sorted(secrets), "streaming": True}
    cfg = {"providers": [{"provider": "sandbox"}],
           "idle_supervisors": idle,
           "tenants": {"default": {"languages": "*", "grant": grant}}}
    if secrets_file is not None:
        cfg["secrets"] = {"file": str(secrets_file)}
    return cfg


def start(tmp_path, cfg):
    d = DurableDaemon(tmp_path, cfg)
    d.start()
    st, _, caps = d.request("GET", "/v1/capabilities")
    if not caps["providers"][0]["available"]:
        d.stop()
        cleanup_state(d)
        pytest.skip("the sandbox is unavailable here (probe: %s)" %
                    caps["providers"][0]["unavailable_reason"])
    return d


@pytest.fixture
def daemon(tmp_path):
    d = start(tmp_path, sandbox_config())
    yield d
    try:
        d.stop() if d.proc is not None else None
    finally:
        cleanup_state(d)
    assert_no_sanitizer_reports(d)


def cmdline(pid):
    return pathlib.Path("/proc/%d/cmdline" % pid).read_bytes().split(b"\0")


def nonce_of(pid):
    args = cmdline(pid)
    return args[args.index(b"--nonce") + 1].decode()


def record(d, rid):
    return json.loads((run_dir(d, rid) / "recovery.json").read_text())


def run_sh(d, code, **extra):
    req = {"language": "sh", "code": code, "limits": {"wall_ms": 20000}}
    req.update(extra)
    st, _, res = d.run(req)
    assert st == 200, res
    return res


def wait_ready(d, token="default"):
    """The one idle supervisor is back (or new) and waiting."""
    def ready():
        st, _, text = d.request("GET", "/metrics", token=token)
        return 'airlock_idle_supervisors{kind="generic"} 1' in text
    wait_until(ready, timeout=30, what="an idle supervisor")


def test_one_supervisor_serves_runs_in_sequence(daemon):
    d = daemon
    wait_ready(d)
    seen = []
    for i in range(4):
        res = run_sh(d, 'echo "run %d $AIRLOCK_RUN_ID"' % i)
        rid = res["run_id"]
        assert res["outcome"] == "completed", res
        assert res["stdout"] == "run %d %s\n" % (i, rid), res
        seen.append((rid, identity(d, rid)))
        wait_ready(d)
    pids = {(i["pid"], i["starttime"]) for _, i in seen}
    assert len(pids) == 1, seen  # the same process, not a recycled pid
    pid = seen[0][1]["pid"]
    assert starttime(pid) == seen[0][1]["starttime"]
    # A nonce per run: the first is the process's own, each later one
    # new, and the process shows only the newest.
    recs = [record(d, rid) for rid, _ in seen]
    nonces = [r["nonce"] for r in recs]
    assert len(set(nonces)) == 4, nonces
    assert "sup_nonce" not in recs[0]
    assert all(r["sup_nonce"] == nonces[0] for r in recs[1:]), recs
    assert all(r["cgroup"] == recs[0]["cgroup"] for r in recs), recs
    assert recs[0]["cgroup"].endswith("/airlock-run-sup-%s.%s" % (
        nonces[0], recs[0]["cgroup"].rsplit(".", 1)[1]))
    assert nonce_of(pid) == nonces[-1]
    # Each run's own log holds only its own lines.
    for rid, _ in seen:
        log = (run_dir(d, rid) / "supervisor.log").read_text()
        others = [o for o, _ in seen if o != rid]
        assert not any(o in log for o in others), log
    for rid, _ in seen:
        assert audit_events(d, rid) == ["run.started", "run.finished"]
    # Operators see it: three runs after the first found it ready again.
    st, _, text = d.request("GET", "/metrics", token="default")
    m = re.search(r"^airlock_idle_supervisors_reused_total (\d+)$", text,
                  re.M)
    assert m and int(m.group(1)) >= 3, text


def test_a_leftover_process_does_not_reach_the_next_run(daemon):
    d = daemon
    wait_ready(d)
    procs = "cat /proc/[0-9]*/comm 2>/dev/null | sort | tr '\\n' ' '"
    res = run_sh(d, "setsid sleep 100 >/dev/null 2>&1 & "
                    "(sleep 101 &) ; sleep 0.2; " + procs)
    assert res["outcome"] == "completed", res
    # The way the next run looks does see them.
    assert res["stdout"].count("sleep") == 2, res
    first = identity(d, res["run_id"])
    wait_ready(d)
    res2 = run_sh(d, procs)
    assert res2["outcome"] == "completed", res2
    assert identity(d, res2["run_id"])["pid"] == first["pid"]
    # No sleep of the first run in the second run's sandbox, and none on
    # the host in the supervisor's cgroup.
    assert "sleep" not in res2["stdout"], res2
    cg = pathlib.Path(record(d, res2["run_id"])["cgroup"])
    procs = (cg / "cgroup.procs").read_text().split()
    assert procs == [str(first["pid"])], procs
    for sub in cg.iterdir():
        if sub.is_dir():
            assert "populated 0" in (sub / "cgroup.events").read_text()


ACME, OTHER = "acme-token-" + "a" * 24, "other-token-" + "b" * 24


def test_secrets_and_environment_do_not_carry_over(tmp_path):
    """A supervisor serves runs of any tenant (docs/durability.md): one
    tenant's run with a secret, then another tenant's run on the same
    supervisor sees nothing of it."""
    sec = tmp_path / "secrets.json"
    sec.write_text(json.dumps({"API_KEY": "s3cr3t-first"}))
    sec.chmod(0o600)
    cfg = sandbox_config(secrets_file=sec, secrets=["API_KEY"])
    grant = cfg["tenants"].pop("default")["grant"]
    cfg["tenants"] = {"acme": {"languages": "*", "grant": grant},
                      "other": {"languages": "*",
                                "grant": dict(grant, secrets=[])}}
    cfg["tokens"] = {hashlib.sha256(t.encode()).hexdigest(): name
                     for t, name in ((ACME, "acme"), (OTHER, "other"))}
    d = DurableDaemon(tmp_path, cfg)
    try:
        d.start()
        st, _, caps = d.request("GET", "/v1/capabilities", token=ACME)
        if not caps["providers"][0]["available"]:
            pytest.skip("the sandbox is unavailable here")
        wait_ready(d, ACME)
        st, _, res = d.run({"language": "sh", "limits": {"wall_ms": 20000},
                            "code": 'echo "key=$API_KEY"; export LEAK=1; '
                                    'echo x > /tmp/left; '
                                    'echo x > /workspace/left',
                            "grant": {"workspace": "rw",
                                      "secrets": ["API_KEY"]}},
                           token=ACME)
        assert st == 200 and res["outcome"] == "completed", res
        assert res["stdout"] == "key=s3cr3t-first\n", res
        pid = identity(d, res["run_id"])["pid"]
        wait_ready(d, ACME)
        st, _, res2 = d.run({"language": "sh", "limits": {"wall_ms": 20000},
                             "code": 'echo "key=${API_KEY-unset} '
                                     'leak=${LEAK-unset}"; '
                                     'ls /tmp /workspace 2>&1; env | sort',
                             "grant": {"workspace": "rw"}}, token=OTHER)
        assert st == 200 and res2["outcome"] == "completed", res2
        assert identity(d, res2["run_id"])["pid"] == pid
        assert record(d, res2["run_id"])["tenant"] == "other"
        out = res2["stdout"]
        assert out.startswith("key=unset leak=unset\n"), out
        assert "left" not in out and "s3cr3t" not in out, out
        # The supervisor's own environment and descriptors hold nothing
        # of the first run.
        env = pathlib.Path("/proc/%d/environ" % pid).read_bytes()
        assert b"s3cr3t" not in env and b"AIRLOCK_RUN_BASE" not in env
        fds = [os.readlink("/proc/%d/fd/%s" % (pid, f))
               for f in os.listdir("/proc/%d/fd" % pid)]
        assert not any("secrets" in f or res["run_id"] in f
                       for f in fds), fds
    finally:
        try:
            d.stop() if d.proc is not None else None
        finally:
            cleanup_state(d)
    assert_no_sanitizer_reports(d)


def test_the_run_limit_recycles_the_supervisor(daemon):
    d = daemon
    wait_ready(d)
    pids = []
    for i in range(RUNS_MAX + 1):
        res = run_sh(d, "echo %d" % i)
        assert res["outcome"] == "completed" and res["stdout"] == "%d\n" % i
        pids.append(identity(d, res["run_id"])["pid"])
        wait_ready(d)
    assert len(set(pids[:RUNS_MAX])) == 1, pids
    assert pids[RUNS_MAX] != pids[0], pids
    wait_until(lambda: not alive(pids[0]), what="the recycled one's end")
    # Its cgroup went with it; only the new one's is left.
    assert len(idle_cgroups(d)) == 1, idle_cgroups(d)


def test_daemon_killed_during_a_reused_supervisors_run(daemon):
    d = daemon
    wait_ready(d)
    first = run_sh(d, "echo one")
    pid = identity(d, first["run_id"])["pid"]
    wait_ready(d)
    st, _, body = d.run({"language": "sh", "limits": {"wall_ms": 20000},
                         "code": "sleep 1; echo two"}, wait=False)
    assert st == 202, body
    rid = body["run_id"]
    wait_until(lambda: (run_dir(d, rid) / "identity.json").exists(),
               what="the hand-off")
    assert identity(d, rid)["pid"] == pid
    # It shows the run's nonce once it has read the hand-off (the
    # identity is recorded as the message is sent).
    wait_until(lambda: nonce_of(pid) == record(d, rid)["nonce"],
               what="the run's nonce in its argv")
    d.kill9()
    # Its daemon gone, it finishes this run and takes no other.
    d.start()
    res = d.wait_finished(rid)
    assert res["outcome"] == "completed" and res["stdout"] == "two\n", res
    wait_until(lambda: not alive(pid), what="the orphaned supervisor's end")
    assert audit_events(d, rid) == ["run.started", "run.finished"]
    assert len(finished_records(d, rid)) == 1
    # The first run stays as it was.
    st, _, again = d.request("GET", "/v1/runs/" + first["run_id"])
    assert again["stdout"] == "one\n"
    assert audit_events(d, first["run_id"]) == ["run.started",
                                                "run.finished"]
    # A new run goes to a new supervisor.
    wait_ready(d)
    res3 = run_sh(d, "echo three")
    assert res3["stdout"] == "three\n"
    assert identity(d, res3["run_id"])["pid"] != pid


@pytest.mark.parametrize("point", ["after_result", "before_ack"])
def test_daemon_killed_after_done_before_finishing(tmp_path, fault_bin,
                                                   point):
    """The supervisor said "done" (its run's tree is gone) and waits for
    another run; the daemon dies before the run is finished.  The next
    daemon finishes it once; the supervisor, its socket gone, exits and
    takes its cgroup with it."""
    d = DurableDaemon(tmp_path, sandbox_config(), binary=fault_bin)
    try:
        d.start(env={"AIRLOCK_FAULT": point})
        wait_ready(d)
        # The run is quick: the daemon may reach the fault point, and die,
        # before its 202 is out, so the run's id is the caller's own.
        rid = str(uuid.uuid4())
        try:
            st, _, body = d.request(
                "POST", "/v1/runs?wait=false",
                {"language": "sh", "code": "echo once",
                 "limits": {"wall_ms": 20000}},
                headers={"X-Airlock-Run-Id": rid}, timeout=30)
            assert st == 202 and body["run_id"] == rid, body
        except (ConnectionError, OSError):
            pass  # the daemon died under the request
        assert d.wait_dead(timeout=30) == -9, d.all_logs()
        assert "fault point %s" % point in d.all_logs()
        pid = identity(d, rid)["pid"]
        cg = pathlib.Path(record(d, rid)["cgroup"])
        wait_until(lambda: not alive(pid), what="the supervisor's end")
        d.start()
        res = d.wait_finished(rid)
        assert res["outcome"] == "completed" and res["stdout"] == "once\n"
        assert audit_events(d, rid) == ["run.started", "run.finished"]
        assert len(finished_records(d, rid)) == 1
        wait_until(lambda: not cg.exists(), what="its cgroup's removal")
        assert_no_sanitizer_reports(d)
    finally:
        d.stop() if d.proc is not None else None
        cleanup_state(d)


def test_an_interrupted_and_a_timed_out_run_leave_it_serving(daemon):
    d = daemon
    wait_ready(d)
    st, _, body = d.run({"language": "sh", "code": "sleep 30",
                         "limits": {"wall_ms": 20000}}, wait=False)
    assert st == 202, body
    rid = body["run_id"]
    wait_until(lambda: (run_dir(d, rid) / "identity.json").exists(),
               what="the hand-off")
    pid = identity(d, rid)["pid"]
    st, _, res = d.request("POST", "/v1/runs/%s/interrupt?wait=true" % rid)
    assert st == 200 and res["outcome"] == "interrupted", res
    wait_ready(d)
    res = run_sh(d, "sleep 30", limits={"wall_ms": 300})
    assert res["outcome"] == "timed_out", res
    assert identity(d, res["run_id"])["pid"] == pid
    wait_ready(d)
    res = run_sh(d, "echo after")
    assert res["outcome"] == "completed" and res["stdout"] == "after\n"
    assert identity(d, res["run_id"])["pid"] == pid
