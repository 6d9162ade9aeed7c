"""Where a sandboxed run's directory (RUN/code, RUN/workspace) goes
(src/sandbox/runbase.c), seen through `airlock run`:
on the host's memory-backed /dev/shm when it is a tmpfs and nothing chose
a place (cheaper to create and remove than ext4), a run with a rw
workspace too (its /workspace is a tmpfs of its own, bounded: nothing the
program writes lands in the run's directory); under TMPDIR or AIRLOCK_RUN_BASE when set; removed after the run either
way.  Each test reads the file system of /code as the program sees it."""
import json
import os
import tempfile

import pytest

from sandbox_helpers import need


def shm_is_tmpfs():
    with open("/proc/mounts") as f:
        for line in f:
            fields = line.split()
            if fields[1] == "/dev/shm":
                st = os.stat("/dev/shm")
                return (fields[2] == "tmpfs" and st.st_uid == 0 and
                        bool(st.st_mode & 0o1000))
    return False


def fs_of(path):
    best, fstype = "", None
    with open("/proc/mounts") as f:
        for line in f:
            fields = line.split()
            m = fields[1]
            if (path == m or path.startswith(m.rstrip("/") + "/")) and \
                    len(m) >= len(best):
                best, fstype = m, fields[2]
    return fstype


def code_mount(run_json, env, *extra):
    r, _ = run_json("-p", "sandbox", *extra, "-l", "sh", "-e",
                    "grep ' /code ' /proc/self/mountinfo", env=env)
    assert r["outcome"] == "completed", r
    # ... root mountpoint options - fstype source superoptions
    fields = r["stdout"].split()
    return fields[3], fields[fields.index("-") + 1]


def clean_env():
    e = {k: v for k, v in os.environ.items()
         if k not in ("TMPDIR", "AIRLOCK_RUN_BASE")}
    return e


def test_default_is_dev_shm_when_it_is_tmpfs(run_json, monkeypatch):
    need(language="sh")
    monkeypatch.delenv("TMPDIR", raising=False)
    monkeypatch.delenv("AIRLOCK_RUN_BASE", raising=False)
    root, fstype = code_mount(run_json, clean_env())
    base = "/airlock-%d/" % os.geteuid()
    if shm_is_tmpfs():
        assert fstype == "tmpfs"
        run_id = root[len(base):].split("/")[0]
        assert root.startswith(base) and root.endswith("/code")
        assert not os.path.exists("/dev/shm" + base + run_id)
    else:
        assert not os.path.exists("/dev/shm" + base)


def test_rw_workspace_is_a_tmpfs_of_its_own(run_json, monkeypatch,
                                            tmp_path):
    need(language="sh")
    monkeypatch.delenv("TMPDIR", raising=False)
    monkeypatch.delenv("AIRLOCK_RUN_BASE", raising=False)
    root, fstype = code_mount(run_json, clean_env(), "--workspace", "rw")
    assert fstype == ("tmpfs" if shm_is_tmpfs() else fs_of("/tmp"))
    assert root.endswith("/code")
    r, _ = run_json("-p", "sandbox", "--workspace", "rw", "-l", "sh", "-e",
                    "grep ' /workspace ' /proc/self/mountinfo",
                    env=clean_env())
    assert r["outcome"] == "completed", r
    fields = r["stdout"].split()
    assert fields[fields.index("-") + 1] == "tmpfs"
    assert "size=262144k" in r["stdout"], r["stdout"]
    # an explicit workspace_bytes: the same, of that size
    req = tmp_path / "req.json"
    req.write_text(json.dumps({
        "language": "sh", "code": "grep ' /code ' /proc/self/mountinfo",
        "grant": {"workspace": "rw"},
        "limits": {"workspace_bytes": 1 << 20}}))
    r, _ = run_json("-p", "sandbox", "--request", str(req),
                    env=clean_env())
    assert r["outcome"] == "completed", r
    fields = r["stdout"].split()
    fstype = fields[fields.index("-") + 1]
    assert fstype == ("tmpfs" if shm_is_tmpfs() else fs_of("/tmp"))


@pytest.mark.parametrize("var", ["TMPDIR", "AIRLOCK_RUN_BASE"])
def test_a_chosen_place_wins(run_json, var, tmp_path):
    need(language="sh")
    d = tempfile.mkdtemp(dir=str(tmp_path))
    os.chmod(d, 0o700)
    base = d if var == "AIRLOCK_RUN_BASE" else os.path.join(
        d, "airlock-%d" % os.geteuid())
    env = clean_env()
    env[var] = d if var == "TMPDIR" else base
    root, _ = code_mount(run_json, env)
    # the mount's root is the path inside its file system: it ends with
    # the chosen base's own tail and the run's code directory
    assert root.endswith("/code")
    assert os.path.basename(base) in root.split("/")
    assert os.path.isdir(base) and os.listdir(base) == []
