"""The sandbox run by an unprivileged user (threat model T10).  Started as
root the tests drop with setpriv to uid 65534, once with gid 65534 and once
with gid 65533 (a gid that is not the uid); started unprivileged
(scripts/run-unprivileged.sh) they run as the caller.  The cwd holds a `(null)` link to a directory of
world-writable files named like cgroup limit files: nothing may be
written through it, and what the probe, the doctor and a run say about
the limits must agree."""
import json
import os
import shutil
import subprocess
import tempfile

import pytest

from sandbox_helpers import BIN

UID = 65534
LIMIT_FLAGS = {"memory_bytes": ["-m", "64M"], "pids": ["--pids", "16"]}
ALL_LIMITS = ["wall_ms", "cpu_ms", "memory_bytes", "pids", "output_bytes",
              "file_bytes", "workspace_bytes", "open_files"]


@pytest.fixture(scope="module", params=[65534, 65533],
                ids=["gid_is_uid", "gid_differs"])
def user(request):
    """Runs the CLI as the unprivileged user, cwd in the trap directory;
    returns (run, trap target directory)."""
    root = os.geteuid() == 0
    if not root and request.param != UID:
        pytest.skip("needs root to choose the gid; ran as the caller")
    d = tempfile.mkdtemp(prefix="airlock-unpriv-")
    uid, gid = (UID, request.param) if root else (os.geteuid(),
                                                   os.getegid())
    # a copy the user can execute wherever the checkout lives
    bindir = os.path.join(d, "bin")
    os.mkdir(bindir)
    shutil.copy(BIN, os.path.join(bindir, "airlock"))
    src = os.path.dirname(os.path.abspath(BIN))
    for name in os.listdir(src):
        if name.startswith("libairlock-") and name.endswith(".so"):
            shutil.copy(os.path.join(src, name), bindir)
    target = os.path.join(d, "target")
    os.mkdir(target)
    for name in ("memory.limit_in_bytes", "pids.max",
                 "memory.memsw.limit_in_bytes", "cgroup.procs", "tasks"):
        open(os.path.join(target, name), "w").close()
        os.chmod(os.path.join(target, name), 0o666)
    os.chmod(target, 0o777)
    cwd = os.path.join(d, "cwd")
    os.mkdir(cwd)
    os.symlink(target, os.path.join(cwd, "(null)"))
    home = os.path.join(d, "home")
    os.mkdir(home, 0o700)
    for p in (d, bindir, cwd):
        os.chmod(p, 0o755)
    if root:
        os.chown(home, uid, gid)

    def run(*args, timeout=120):
        cmd = [os.path.join(bindir, "airlock"), "--state-dir",
               os.path.join(home, "state")] + list(args)
        if root:
            cmd = ["setpriv", "--reuid=%d" % uid, "--regid=%d" % gid,
                   "--clear-groups", "--"] + cmd
        env = {"HOME": home, "PATH": "/usr/local/bin:/usr/bin:/bin",
               "LANG": "C.UTF-8"}
        return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True,
                              text=True, timeout=timeout)

    yield run, target
    shutil.rmtree(d, ignore_errors=True)


def untouched(target):
    """Every trap file still empty, nothing added."""
    names = sorted(os.listdir(target))
    sizes = {n: os.path.getsize(os.path.join(target, n)) for n in names}
    assert names == sorted(["memory.limit_in_bytes", "pids.max",
                            "memory.memsw.limit_in_bytes", "cgroup.procs",
                            "tasks"]), names
    assert all(s == 0 for s in sizes.values()), sizes


def probe(run):
    p = run("probe", "-p", "sandbox", "--json")
    return json.loads(p.stdout)


def test_run_writes_nothing_through_the_cwd(user):
    run, target = user
    p = run("run", "--json", "-p", "sandbox", "-l", "sh", "-e", "echo hi")
    r = json.loads(p.stdout)
    assert r["outcome"] == "completed", (r, p.stderr)
    assert r["stdout"] == "hi\n"
    untouched(target)


def test_limits_without_a_cgroup_are_refused_not_ignored(user):
    run, target = user
    f = probe(run)
    assert f["available"], f
    bounds = f["mechanism"]["default_bounds"]
    for limit, flags in LIMIT_FLAGS.items():
        p = run("run", "--json", "-p", "sandbox", *flags, "-l", "sh", "-e",
                "echo ran")
        r = json.loads(p.stdout)
        if limit in f["limits"]:
            # a delegated cgroup: the limit and the default bound hold
            assert r["outcome"] == "completed", r
            assert limit in bounds
        else:
            assert r["outcome"] == "unenforceable_limit", r
            assert r["reason"] == limit
            assert limit not in bounds, bounds
    untouched(target)


def check_doctor(p, facts):
    d = json.loads(p.stdout)
    assert (p.returncode == 0) == d["ok"]
    checks = {c["mechanism"]: c for c in d["checks"]}
    # the doctor's own real run agrees with the probe's
    assert checks["run"]["ok"] == facts["available"], (d, facts)
    assert d["ok"] == facts["available"]
    assert set(ALL_LIMITS) <= set(d["limits"]), d["limits"]
    for limit in d["limits"]:
        enforced = d["limits"][limit]["enforced"]
        assert enforced == (limit in facts["limits"]), (limit, d, facts)
        assert ("default" in d["limits"][limit]) == (
            limit in facts["mechanism"]["default_bounds"])
    for limit, ctrl in (("memory_bytes", "cgroup_memory"),
                        ("pids", "cgroup_pids")):
        assert checks[ctrl]["ok"] == d["limits"][limit]["enforced"]
    return d


def test_doctor_tells_the_truth_unprivileged(user):
    run, target = user
    facts = probe(run)
    d = check_doctor(run("doctor", "--json"), facts)
    assert d["uid_mode"] == "own_uid"
    assert d["ok"], d
    untouched(target)


def test_doctor_tells_the_truth_as_caller():
    """As root under `make integration`, as the unprivileged user under
    scripts/run-unprivileged.sh."""
    facts = json.loads(subprocess.run(
        [BIN, "probe", "-p", "sandbox", "--json"], capture_output=True,
        text=True, timeout=120).stdout)
    p = subprocess.run([BIN, "doctor", "--json"], capture_output=True,
                       text=True, timeout=120)
    d = check_doctor(p, facts)
    assert d["uid_mode"] == ("per_run_pool" if os.geteuid() == 0
                             else "own_uid")
