"""A durable run on the `container` provider across a real SIGKILL of
airlockd and a restart (docs/durability.md): the supervisor and its
container outlive the daemon, the new daemon adopts the run, output
keeps streaming, the result is the container's, and nothing of the
container is left afterwards."""
import os
import time

import pytest

from test_api_support import GRANT_ALL
from test_durable_support import (DurableDaemon, alive, cleanup_state,
                                  identity, run_dir, wait_until)

pytestmark = pytest.mark.skipif(os.geteuid() != 0,
                                reason="the container provider runs as root")


def run_processes(rid):
    """The pids whose cgroup or arguments name the run."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/cgroup" % pid) as f:
                cg = f.read()
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                args = f.read()
        except OSError:
            continue
        if rid in cg or rid.encode() in args:
            found.append(pid)
    return found


def describe(pid):
    """A process's arguments and cgroups, for a failure message."""
    try:
        with open("/proc/%s/cmdline" % pid, "rb") as f:
            args = f.read().replace(b"\0", b" ").decode(errors="replace")
        with open("/proc/%s/cgroup" % pid) as f:
            return "%s: %s [%s]" % (pid, args, f.read().replace("\n", " "))
    except OSError:
        return "%s: gone" % pid


def container_config():
    return {"providers": [{"provider": "container",
                           "config": {"runtime": "runc"}}],
            "tenants": {"default": {"languages": ["sh"],
                                    "grant": GRANT_ALL}},
            "concurrency": 2}


@pytest.fixture
def daemon(tmp_path):
    d = DurableDaemon(tmp_path, container_config())
    d.start()
    yield d
    try:
        d.stop() if d.proc is not None else None
    finally:
        cleanup_state(d)


def test_a_container_run_is_adopted_after_kill_9(daemon, tmp_path):
    code = ('i=0; while [ $i -lt 12 ]; do echo tick$i; i=$((i+1)); '
            'sleep 0.15; done; echo done > out.txt')
    req = {"language": "sh", "code": code, "outputs": ["out.txt"],
           "grant": {"network": "none", "workspace": "rw",
                     "streaming": True},
           "limits": {"wall_ms": 30000}}
    st, _, body = daemon.run(req, wait=False)
    assert st == 202, body
    rid = body["run_id"]
    out = run_dir(daemon, rid) / "output"
    wait_until(lambda: out.exists() and out.stat().st_size > 0,
               what="first output")
    sup = identity(daemon, rid)["pid"]
    daemon.kill9()
    time.sleep(0.4)
    assert alive(sup)          # the supervisor and its container live on
    daemon.start()
    assert "1 adopted" in daemon.log()
    events = daemon.events(rid)
    text = "".join(d.get("data", "") for ev, d in events if ev == "stdout")
    assert text == "".join("tick%d\n" % i for i in range(12))
    res = events[-1][1]
    assert events[-1][0] == "result" and res["outcome"] == "completed", res
    assert res["provider"]["id"] == "container"
    assert [o["path"] for o in res["outputs"]] == ["out.txt"]
    assert not alive(sup)
    # nothing of the container is left: no runtime state, no process
    # (the container's cgroup and the supervisor's arguments name the
    # run; other tests' containers may run meanwhile).  The clean-up of
    # the adopted run may still be ending as the result goes out: a
    # process that stays is a leak, one that ends within 10 s is not.
    deadline = time.monotonic() + 10
    left = run_processes(rid)
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = run_processes(rid)
    assert left == [], [describe(pid) for pid in left]
    assert not list((run_dir(daemon, rid)).glob("work/*/state"))
