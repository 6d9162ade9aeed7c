"""Trust in the state directory (issue 13, item 9; docs/threat-model.md,
"Trust in files (T9)").  The state directory holds the audit trail and
stored output: airlock uses it only when it is the running user's and
private, creates its database files 0600, and never follows a link planted
in place of airlock.db or its -wal / -shm.  A refusal is a typed message
naming the problem (and the chmod that fixes loose permissions)."""
import os
import pwd
import socket
import stat
import subprocess

import pytest

from test_api_support import AIRLOCK_BIN

DB_FILES = ("airlock.db", "airlock.db-wal", "airlock.db-shm")


def airlock(state, *args, timeout=60):
    return subprocess.run([AIRLOCK_BIN, "--state-dir", str(state)] +
                          list(args), capture_output=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def run_hi(state):
    return airlock(state, "run", "-p", "local", "-l", "sh", "-e", "echo hi")


def serve_refused(state):
    """airlock serve on state: its exit status and output (it must not
    start)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    p = subprocess.run([AIRLOCK_BIN, "--state-dir", str(state), "serve",
                        "--listen", "127.0.0.1:%d" % port],
                       capture_output=True, timeout=30,
                       stdin=subprocess.DEVNULL)
    return p.returncode, (p.stdout + p.stderr).decode()


def mode(path):
    return stat.S_IMODE(os.lstat(path).st_mode)


def private_dir(tmp_path, name="state"):
    d = tmp_path / name
    d.mkdir(mode=0o700)
    return d


def test_database_files_are_created_private(tmp_path):
    state = private_dir(tmp_path)
    p = run_hi(state)
    assert p.returncode == 0 and p.stdout == b"hi\n", p.stderr
    for name in DB_FILES:
        assert (state / name).exists(), name
        assert mode(state / name) == 0o600, (name, oct(mode(state / name)))
    assert airlock(state, "audit", "verify").returncode == 0


def test_loose_files_of_an_older_version_are_made_private(tmp_path):
    state = private_dir(tmp_path)
    assert run_hi(state).returncode == 0
    for name in DB_FILES:
        os.chmod(state / name, 0o644)
    assert run_hi(state).returncode == 0
    for name in DB_FILES:
        assert mode(state / name) == 0o600, name


@pytest.mark.parametrize("perm", [0o755, 0o750, 0o770, 0o701])
def test_a_state_dir_open_to_others_is_refused(tmp_path, perm):
    state = tmp_path / "state"
    state.mkdir()
    os.chmod(state, perm)
    p = run_hi(state)
    err = p.stderr.decode()
    assert p.returncode == 125 and p.stdout == b"", err
    assert "open to other users" in err and "chmod 700 %s" % state in err
    # Nothing was created in it.
    assert list(state.iterdir()) == []
    rc, out = serve_refused(state)
    assert rc != 0 and "chmod 700" in out, out
    assert list(state.iterdir()) == []
    p = airlock(state, "audit", "verify")
    assert p.returncode != 0 and b"chmod 700" in p.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="chowns to another user")
def test_a_state_dir_of_another_user_is_refused(tmp_path):
    """A state directory another user owns (and so may fill with links
    and records) is not used, even by root."""
    other = pwd.getpwnam("nobody").pw_uid
    state = private_dir(tmp_path)
    assert run_hi(state).returncode == 0   # a real database in it
    for p in [state] + [state / n for n in DB_FILES]:
        os.chown(p, other, -1)
    for args in (("run", "-p", "local", "-l", "sh", "-e", "echo hi"),
                 ("audit", "verify"), ("audit", "tail")):
        p = airlock(state, *args)
        err = p.stderr.decode()
        assert p.returncode != 0 and p.stdout == b"", (args, err)
        assert "owned by another user" in err, (args, err)
    rc, out = serve_refused(state)
    assert rc != 0 and "owned by another user" in out, out
    assert not (state / "token").exists()


@pytest.mark.parametrize("name", DB_FILES)
def test_a_planted_database_link_is_not_followed(tmp_path, name):
    victim = tmp_path / "victim"
    victim.write_bytes(b"not a database\n")
    state = private_dir(tmp_path)
    if name != "airlock.db":
        assert run_hi(state).returncode == 0
        (state / name).unlink()
    os.symlink(victim, state / name)
    p = run_hi(state)
    err = p.stderr.decode()
    assert p.returncode == 125 and p.stdout == b"", err
    assert "%s in the state directory" % name in err
    assert "symbolic link" in err
    p = airlock(state, "audit", "verify")
    assert p.returncode != 0 and b"symbolic link" in p.stderr
    assert victim.read_bytes() == b"not a database\n"
    assert mode(victim) == 0o644
