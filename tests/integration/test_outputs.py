"""Declared outputs (docs/workspaces.md; attacks.md "outputs"): files come
back with the right hashes, and every hostile output a program can make —
links to host files, hardlinks, FIFOs, device nodes, directories, `..`
patterns, a file swapped for a link while the run ends — is refused by
name and never read through; retention removes only expired runs and
never a live one."""
import json
import os
import subprocess
import time

import pytest

from sandbox_helpers import session_config
from test_workspace_support import (BIN, artifact, cli,
                                    need_provider, outputs_by_path, provider,
                                    run_request, sha256,
                                    store_bytes)

assert provider  # the fixture, imported for its parametrisation


def test_outputs_come_back_with_their_hashes(state_dir, tmp_path, provider):
    need_provider(provider, "python")
    res = run_request(state_dir, provider, {
        "language": "python",
        "code": "import os\nos.makedirs('out/sub', exist_ok=True)\n"
                "open('out/a.json','w').write('{\"a\": 1}')\n"
                "open('out/b.json','wb').write(bytes(range(256))*100)\n"
                "open('out/sub/c.txt','w').write('c')\n"
                "open('out/.hidden.json','w').write('h')\n"
                "open('empty','w').close()\n"
                "print('ok')\n",
        "outputs": ["out/*.json", "out/*/c.txt", "empty", "out/none*.csv"],
        "grant": {"workspace": "rw"}}, tmp_path)
    assert res["outcome"] == "completed", res
    out = outputs_by_path(res)
    assert list(out) == ["out/a.json", "out/b.json", "out/sub/c.txt",
                         "empty", "out/none*.csv"]
    expect = {"out/a.json": b'{"a": 1}', "out/b.json": bytes(range(256)) * 100,
              "out/sub/c.txt": b"c", "empty": b""}
    for path, data in expect.items():
        o = out[path]
        assert o.get("refused") is None, o
        assert o["size"] == len(data) and o["sha256"] == sha256(data)
        assert artifact(state_dir, res["run_id"], o["artifact"]) == data
    assert out["out/none*.csv"]["refused"] == "no_match"
    assert out["out/none*.csv"]["artifact"] is None
    # each artifact 0600 in a 0700 store of the run
    store = os.path.join(state_dir, "artifacts", res["run_id"])
    assert os.stat(store).st_mode & 0o777 == 0o700
    for f in os.listdir(store):
        assert os.lstat(os.path.join(store, f)).st_mode & 0o777 == 0o600


HOSTILE_SH = """
ln -s /etc/passwd passwd.txt
ln -s /etc/shadow shadow.txt
ln -s /dev/null null.txt
mkdir dir.txt
mkfifo fifo.txt
echo in > a.txt; ln a.txt b.txt
mkdir realdir; echo deep > realdir/x.txt; ln -s /etc realdir/etc
ln -s realdir linkdir
if mknod dev.txt c 1 3 2>/dev/null; then echo MKNOD_OK; else echo MKNOD_REFUSED; fi
echo fine > fine.txt
"""

HOSTILE_PY = """
import os
os.symlink('/etc/passwd', 'passwd.txt')
os.symlink('/etc/shadow', 'shadow.txt')
os.symlink('/dev/null', 'null.txt')
os.mkdir('dir.txt')
os.mkfifo('fifo.txt')
open('a.txt', 'w').write('in\\n'); os.link('a.txt', 'b.txt')
os.mkdir('realdir'); open('realdir/x.txt', 'w').write('deep\\n')
os.symlink('/etc', 'realdir/etc')
os.symlink('realdir', 'linkdir')
try:
    os.mknod('dev.txt', 0o20666, os.makedev(1, 3)); print('MKNOD_OK')
except OSError:
    print('MKNOD_REFUSED')
open('fine.txt', 'w').write('fine\\n')
"""


@pytest.mark.parametrize("lang", ["sh", "python"])
def test_hostile_outputs_refused(state_dir, tmp_path, provider, lang):
    need_provider(provider, lang)
    res = run_request(state_dir, provider, {
        "language": lang, "code": HOSTILE_SH if lang == "sh" else HOSTILE_PY,
        "outputs": ["*.txt", "linkdir/x.txt", "realdir/etc/passwd",
                    "realdir/*/passwd", "realdir/x.txt"],
        "limits": {"wall_ms": 20000},
        "grant": {"workspace": "rw"}}, tmp_path)
    # (a FIFO that made the collection wait would never get here)
    assert res["outcome"] == "completed", res
    out = outputs_by_path(res)
    refused = {p: o.get("refused") for p, o in out.items()}
    assert refused["passwd.txt"] == "symlink"
    assert refused["shadow.txt"] == "symlink"
    assert refused["null.txt"] == "symlink"
    assert refused["dir.txt"] == "directory"
    assert refused["fifo.txt"] == "fifo"
    assert refused["a.txt"] == "hardlink" and refused["b.txt"] == "hardlink"
    assert refused["linkdir/x.txt"] == "symlink"
    assert refused["realdir/etc/passwd"] == "symlink"
    # a link is never descended while matching
    assert refused["realdir/*/passwd"] == "no_match"
    # devices: the sandbox refuses mknod itself; the local provider's
    # program is the caller (root here may make one)
    if "MKNOD_OK" in res["stdout"]:
        assert provider == "local"
        assert refused["dev.txt"] == "device"
    else:
        assert "dev.txt" not in refused
    if provider == "sandbox":
        assert "MKNOD_REFUSED" in res["stdout"]
    for path in ("fine.txt", "realdir/x.txt"):
        o = out[path]
        assert refused[path] is None and o["artifact"], o
    for o in out.values():
        if o.get("refused"):
            assert o["artifact"] is None and o["sha256"] is None
    # nothing of the host reached the store
    kept = store_bytes(state_dir)
    with open("/etc/passwd", "rb") as f:
        assert f.readline()[:20] not in kept
    assert b"root:" not in kept


def test_hardlink_to_a_file_outside_local(state_dir, tmp_path):
    """The local program can reach host files: a hardlink to one is
    refused (more than one link), and its bytes are never copied."""
    outside = tmp_path / "outside-secret"
    outside.write_text("TOPSECRET-OUTSIDE\n")
    res = run_request(state_dir, "local", {
        "language": "sh",
        "code": "ln \"$SECRET\" out.txt && echo LINKED",
        "env": {"SECRET": str(outside)},
        "outputs": ["out.txt"], "grant": {"workspace": "rw"}},
        tmp_path, env={"AIRLOCK_RUN_BASE": str(tmp_path / "runs")})
    assert res["outcome"] == "completed" and "LINKED" in res["stdout"], res
    assert outputs_by_path(res)["out.txt"]["refused"] == "hardlink"
    assert b"TOPSECRET" not in store_bytes(state_dir)
    assert outside.read_text() == "TOPSECRET-OUTSIDE\n"


def test_no_hardlink_reaches_outside_the_sandbox_workspace(state_dir,
                                                           tmp_path):
    """Under the sandbox nothing outside the workspace can be linked in:
    /code and /tmp are other mounts (EXDEV), and host files are absent."""
    need_provider("sandbox")
    res = run_request(state_dir, "sandbox", {
        "language": "sh",
        "code": "ln /code/main.sh code.txt; echo code=$?; "
                "echo t > /tmp/t; ln /tmp/t tmp.txt; echo tmp=$?; "
                "ln /etc/passwd passwd.txt; echo passwd=$?",
        "outputs": ["*.txt"], "grant": {"workspace": "rw"}}, tmp_path)
    assert res["outcome"] == "completed", res
    assert "code=0" not in res["stdout"] and "tmp=0" not in res["stdout"]
    assert "passwd=0" not in res["stdout"]
    assert outputs_by_path(res)["*.txt"]["refused"] == "no_match"


@pytest.mark.parametrize("pattern", ["../x", "a/../../x", "/etc/passwd",
                                     "out/**/x", "a//b"])
def test_escaping_patterns_are_invalid(state_dir, tmp_path, provider,
                                       pattern):
    res = run_request(state_dir, provider, {
        "language": "sh", "code": "echo RAN", "outputs": ["ok", pattern],
        "grant": {"workspace": "rw"}}, tmp_path)
    assert res["outcome"] == "invalid_request", res
    assert res["reason"] == "outputs[1]"
    assert "RAN" not in res["stdout"]


RACE = """
( while :; do ln -sf {target} out.txt; echo x > out.txt; rm -f out.txt;
  echo x > out.txt; done ) &
sleep 0.2
"""


@pytest.mark.parametrize("attempt", range(20))
def test_swap_for_a_link_never_leaks_a_host_file(state_dir, tmp_path,
                                                  provider, attempt):
    """A background loop swaps out.txt between a file and a link to a host
    file until the run ends; whatever state it is left in, the result is
    either the file's own bytes or a refusal, never the target's."""
    need_provider(provider)
    if provider == "sandbox":
        target = "/etc/shadow"  # absent in the sandbox; the host's exists
        secret = None
    else:
        # the local program runs as the caller: aim it at a decoy the
        # test owns, never at a real host file it could overwrite
        decoy = tmp_path / "decoy"
        decoy.write_text("TOPSECRET-DECOY\n")
        target = str(decoy)
        secret = b"TOPSECRET"
    res = run_request(state_dir, provider, {
        "language": "sh", "code": RACE.format(target=target),
        "outputs": ["out.txt"], "limits": {"wall_ms": 5000},
        "grant": {"workspace": "rw"}}, tmp_path)
    assert res["outcome"] == "completed", res
    o = outputs_by_path(res)["out.txt"]
    if o.get("refused") is None:
        data = artifact(state_dir, res["run_id"], o["artifact"])
        # killed between creating and writing it: empty is its own state
        assert data in (b"", b"x\n"), data
        assert o["sha256"] == sha256(data)
    else:
        assert o["refused"] in ("symlink", "missing", "changed"), o
    kept = store_bytes(state_dir)
    if secret:
        assert secret not in kept
    with open("/etc/shadow", "rb") as f:
        first = f.readline()
    assert first not in kept or first == b"x\n"


def test_log_artifact_holds_the_combined_output(state_dir, tmp_path,
                                                provider):
    need_provider(provider)
    res = run_request(state_dir, provider, {
        "language": "sh",
        "code": "echo one; echo two >&2; sleep 0.05; echo three",
        "limits": {"output_bytes": 1024}}, tmp_path)
    assert res["outcome"] == "completed", res
    log = artifact(state_dir, res["run_id"], "log")
    assert sorted(log.splitlines()) == [b"one", b"three", b"two"]
    assert log.endswith(b"three\n")
    # another run's id or an unknown artifact: nothing
    p = subprocess.run([BIN, "--state-dir", state_dir, "runs", "artifact",
                        res["run_id"], "out-1"], capture_output=True)
    assert p.returncode == 125


# ---- retention ------------------------------------------------------------

def stores(state_dir):
    base = os.path.join(state_dir, "artifacts")
    return sorted(os.listdir(base)) if os.path.isdir(base) else []


def test_retention_removes_only_expired_runs(state_dir, tmp_path):
    need_provider("sandbox")
    ids = []
    for _ in range(3):
        res = run_request(state_dir, "sandbox", {
            "language": "sh", "code": "echo hi"}, tmp_path)
        assert res["outcome"] == "completed", res
        ids.append(res["run_id"])
    old = time.time() - 8 * 86400
    for rid in ids[:2]:
        os.utime(os.path.join(state_dir, "artifacts", rid), (old, old))
    # the configured default: 7 days
    p = cli(state_dir, "sandbox", "runs", "forget")
    assert p.returncode == 0, p.stderr
    assert stores(state_dir) == [ids[2]]
    assert b"removed 2" in p.stdout
    # an explicit age
    p = cli(state_dir, "sandbox", "runs", "forget", "--older-than", "1d")
    assert p.returncode == 0 and stores(state_dir) == [ids[2]]
    p = cli(state_dir, "sandbox", "runs", "forget", "--older-than", "0s")
    assert p.returncode == 0 and stores(state_dir) == []
    # bad ages are usage errors
    p = cli(state_dir, "sandbox", "runs", "forget", "--older-than", "7 days")
    assert p.returncode == 2


def test_retention_refuses_a_live_run(state_dir, tmp_path):
    need_provider("sandbox")
    (tmp_path / "req.json").write_text(
        '{"language": "sh", "code": "echo started; sleep 3",'
        ' "limits": {"wall_ms": 10000}}')
    proc = subprocess.Popen(
        [BIN, "--state-dir", state_dir, "--config",
         session_config(), "run", "-p",
         "sandbox", "--json", "--request", str(tmp_path / "req.json")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        # The store's directory appears under a dot name first (made,
        # then renamed into place): wait for the run's own name.
        deadline = time.time() + 10
        live = []
        while not live and time.time() < deadline:
            live = [s for s in stores(state_dir) if not s.startswith(".")]
            time.sleep(0.02)
        assert len(live) == 1, stores(state_dir)
        # even when old by its timestamp, a live run is not removed
        old = time.time() - 30 * 86400
        os.utime(os.path.join(state_dir, "artifacts", live[0]), (old, old))
        p = cli(state_dir, "sandbox", "runs", "forget", live[0])
        assert p.returncode == 125
        assert b"live" in p.stderr
        p = cli(state_dir, "sandbox", "runs", "forget", "--older-than", "0")
        assert p.returncode == 0 and b"live 1" in p.stdout
        assert live[0] in stores(state_dir)
        out, _ = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    res = json.loads(out.decode())
    assert res["outcome"] == "completed" and res["run_id"] == live[0]
    # finished: now it may go
    p = cli(state_dir, "sandbox", "runs", "forget", live[0])
    assert p.returncode == 0 and stores(state_dir) == []
