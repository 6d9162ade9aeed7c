"""Where `airlock run` puts a run's directory (RUN/code, RUN/workspace):
on the host's memory-backed /dev/shm when it is a tmpfs and nothing chose
a place (cheaper to create and remove than ext4), under TMPDIR or
AIRLOCK_RUN_BASE when set; removed after the run either way.  Each test
reads the file system of /code as the program sees it."""
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


def code_mount(run_json, env):
    r, _ = run_json("-p", "sandbox", "-l", "sh", "-e",
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
