"""A durable sandbox run's own run directory (its code, inputs, /tmp's
backing) lives on the per-boot tmpfs, not beneath RUN/ on the state
directory (docs/durability.md, "The run directory"): nothing in it must
outlive a reboot, and creating it on disk cost an inode allocation per
entry (docs/performance.md).  The daemon removes what a killed
supervisor's sandbox left there when it finishes the run.  The finishing
marker, likewise, is a link rather than a new inode, and so is the
final result when it is the supervisor's result byte for byte."""
import json
import os
import pathlib
import signal
import stat

import pytest

from test_durable_support import (DurableDaemon, alive,
                                  assert_no_sanitizer_reports, audit_events,
                                  cleanup_state, identity, run_dir,
                                  wait_until)

SHM = pathlib.Path("/dev/shm")


def tmpfs_base():
    """The base the sandbox uses, or None when /dev/shm is not a
    root-owned sticky tmpfs (then RUN/work is used, as before)."""
    try:
        st = SHM.lstat()
        with open("/proc/self/mounts") as f:
            kinds = [ln.split()[2] for ln in f if ln.split()[1] == "/dev/shm"]
    except OSError:
        return None
    if not (stat.S_ISDIR(st.st_mode) and st.st_uid == 0 and
            st.st_mode & stat.S_ISVTX) or kinds[-1:] != ["tmpfs"]:
        return None
    return SHM / ("airlock-%d" % os.geteuid())


def sandbox_config(idle):
    grant = {"network": ["none"], "workspace": ["none", "ro", "rw"],
             "secrets": [], "streaming": True}
    return {"providers": [{"provider": "sandbox"}],
            "idle_supervisors": idle,
            "tenants": {"default": {"languages": "*", "grant": grant}}}


@pytest.fixture(params=[0, 1], ids=["cold", "idle"])
def daemon(request, tmp_path):
    base = tmpfs_base()
    if base is None:
        pytest.skip("/dev/shm is not a root-owned sticky tmpfs here")
    d = DurableDaemon(tmp_path, sandbox_config(request.param))
    d.start()
    st, _, caps = d.request("GET", "/v1/capabilities")
    if not caps["providers"][0]["available"]:
        d.stop()
        cleanup_state(d)
        pytest.skip("the sandbox is unavailable here (probe: %s)" %
                    caps["providers"][0]["unavailable_reason"])
    yield d, base
    try:
        d.stop() if d.proc is not None else None
    finally:
        cleanup_state(d)
    assert_no_sanitizer_reports(d)


def submit(d, code):
    st, _, body = d.run({"language": "sh", "code": code,
                         "grant": {"workspace": "rw"},
                         "limits": {"wall_ms": 30000}}, wait=False)
    assert st == 202, body
    return body["run_id"]


def test_the_run_directory_is_on_tmpfs_and_gone_after(daemon):
    d, base = daemon
    rid = submit(d, "echo hi > /workspace/w; cat /code/*; sleep 30")
    leftover = base / rid
    wait_until(lambda: (leftover / "code").exists(), what="the run directory")
    # Nothing of it on the state directory.
    assert not (run_dir(d, rid) / "work").exists()
    # The program's writes are not in it (a rw /workspace is a tmpfs).
    assert not (leftover / "workspace" / "w").exists()
    st, _, res = d.request("POST", "/v1/runs/%s/interrupt?wait=true" % rid)
    assert st == 200 and res["outcome"] == "interrupted", res
    assert not leftover.exists()
    assert audit_events(d, rid) == ["run.started", "run.finished"]
    # The finishing marker is a second name of identity.json's inode
    # (only its existence counts; a link allocates no inode).
    rd = run_dir(d, rid)
    assert (rd / "finishing").stat().st_ino == \
        (rd / "identity.json").stat().st_ino


def test_a_killed_supervisors_run_directory_is_removed(daemon):
    d, base = daemon
    rid = submit(d, "sleep 30")
    leftover = base / rid
    wait_until(lambda: (leftover / "code").exists() and
               (run_dir(d, rid) / "identity.json").exists(),
               what="the run directory")
    sup = identity(d, rid)["pid"]
    os.kill(sup, signal.SIGKILL)
    wait_until(lambda: not alive(sup), what="the supervisor's end")
    res = d.wait_finished(rid)
    assert res["outcome"] == "unavailable" and res["reason"] == "lost", res
    # Its provider never removed it; the daemon's clean-up did.
    assert not leftover.exists()
    assert audit_events(d, rid) == ["run.started", "run.finished"]


def test_the_final_result_is_a_second_name_of_the_supervisors(daemon):
    d, _ = daemon
    st, _, res = d.run({"language": "sh", "code": "echo hi",
                        "limits": {"wall_ms": 30000}})
    assert st == 200 and res["outcome"] == "completed", res
    rd = run_dir(d, res["run_id"])
    final, result = rd / "final.json", rd / "result.json"
    # one inode under both names, holding what the API answered
    assert final.stat().st_ino == result.stat().st_ino
    assert final.stat().st_nlink == 2
    assert json.loads(final.read_text())["stdout"] == "hi\n"
    st, _, again = d.request("GET", "/v1/runs/%s" % res["run_id"])
    assert st == 200 and again["stdout"] == "hi\n", again


def test_a_large_final_result_is_kept_once_under_its_new_name(daemon):
    d, _ = daemon
    n = 100000  # over the 64 KiB past which a result is stored once
    st, _, res = d.run({"language": "sh",
                        "code": "head -c %d /dev/zero | tr '\\0' x" % n,
                        "limits": {"wall_ms": 30000}})
    assert st == 200 and res["outcome"] == "completed", res["outcome"]
    rd = run_dir(d, res["run_id"])
    wait_until(lambda: not (rd / "result.json").exists(),
               what="result.json removed")
    final = rd / "final.json"
    assert final.stat().st_nlink == 1
    assert json.loads(final.read_text())["stdout"] == "x" * n
    st, _, again = d.request("GET", "/v1/runs/%s" % res["run_id"])
    assert st == 200 and again["stdout"] == "x" * n
