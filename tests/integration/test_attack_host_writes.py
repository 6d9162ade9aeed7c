"""Host-backed writes (docs/threat-model.md, T3 and T4): no place a
sandboxed run can write is backed by the host's disk without a bound the
kernel enforces, and nothing the run wrote stays behind.

- T3: /inbox-acks of an API run was a bind of RUN/acks in the state
  directory; `fallocate` there grew the host's disk and the file stayed
  after the run.  Now it is a small tmpfs of the sandbox's own (bytes and
  inodes bounded); only markers named after delivered events reach
  RUN/acks, as empty files.
- T4: a rw workspace without workspace_bytes was a bind of a host
  directory.  Now it is a tmpfs of the config's default size.

Sizes stay small (twice a quota of a few MiB), so an unbounded old build
fails these tests without filling anything."""
import json
import os

import pytest

import sandbox_helpers as sb
from test_durable_support import (DurableDaemon, cleanup_state, run_dir,
                                  start_launched, wait_until)

MIB = 1 << 20


def sandbox_daemon(tmp_path, sandbox_config=None):
    cfg = {"providers": [{"provider": "sandbox",
                          "config": sandbox_config or {}}],
           "tenants": {"default": {"languages": ["sh"],
                                   "grant": {"network": ["none"],
                                             "workspace": ["none", "rw"],
                                             "streaming": True}}}}
    return DurableDaemon(tmp_path, cfg)


def tree_bytes(path):
    total = 0
    for root, dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_blocks * 512
            except FileNotFoundError:
                pass
    return total


# Tries to store 2 MiB (twice the acks tmpfs's default 1 MiB) and 2000
# markers (its inode cap is one per event, 1024) in /inbox-acks, then
# acknowledges the one delivered event.
ACKS_FILL = r'''
cd "$AIRLOCK_INBOX_ACKS" || exit 9
head -c 2097152 /dev/zero > big 2>/dev/null; echo "big $(wc -c < big)"
rm -f big
i=0; while [ $i -lt 2000 ] && true > "m$i" 2>/dev/null; do i=$((i+1)); done
echo "markers $i"
rm -f m*
while [ ! -e "$AIRLOCK_INBOX/000001-ev-1.json" ]; do sleep 0.05; done
: > ev-1
head -c 2097152 /dev/zero > ev-1.pad 2>/dev/null
echo "fstype $(stat -f -c %T .)"
'''


def test_acks_are_bounded_and_nothing_stays(tmp_path):
    sb.need(language="sh")
    d = sandbox_daemon(tmp_path)
    try:
        d.start()
        rid = start_launched(d, {"language": "sh", "code": ACKS_FILL,
                                 "limits": {"wall_ms": 30000}})
        st, _, b = d.request("POST", "/v1/runs/%s/inbox" % rid,
                             {"id": "ev-1", "event": {"n": 1}})
        assert st == 202, (b, d.wait_finished(rid)["stderr"])
        res = d.wait_finished(rid)
        assert res["outcome"] == "completed", res
        out = dict(line.split(" ", 1) for line in res["stdout"].splitlines())
        # bounded by the kernel: bytes and inodes
        assert int(out["big"]) <= 1 * MIB, out
        assert int(out["markers"]) <= 1024, out
        assert out["fstype"] == "tmpfs", out
        # the acknowledgement still arrives
        assert res["inbox_acked"] == ["ev-1"]
        # on the host: one empty marker, nothing the program wrote
        acks = run_dir(d, rid) / "acks"
        assert sorted(os.listdir(acks)) == ["ev-1"]
        assert os.lstat(acks / "ev-1").st_size == 0
        assert tree_bytes(acks) == 0
        # and the run's directory holds nothing of that size either
        assert tree_bytes(run_dir(d, rid)) < 256 * 1024
    finally:
        d.stop()
        cleanup_state(d)


# Writes twice the workspace bound and reports what was kept, and where.
WS_FILL = r'''
head -c 8388608 /dev/zero > big 2>/dev/null; echo "rc $?"
echo "size $(wc -c < big)"
echo "fstype $(stat -f -c %T .)"
echo "total $(stat -f -c '%b %S' . | awk '{print $1 * $2}')"
'''


def test_rw_workspace_without_workspace_bytes_is_bounded(tmp_path):
    sb.need(language="sh")
    cfg = sb.config_file(tmp_path / "config.json",
                         {"uid_base": sb.UID_BASE, "uid_count": sb.UID_COUNT,
                          "workspace_bytes": 4 * MIB})
    p = sb.subprocess.run(
        [sb.BIN, "--config", cfg, "run", "-p", "sandbox", "-l", "sh",
         "--workspace", "rw", "-e", WS_FILL, "--json"],
        capture_output=True, text=True, timeout=60)
    res = json.loads(p.stdout) if p.stdout.strip() else {}
    assert res.get("outcome") == "completed", (p.stdout, p.stderr)
    out = dict(line.split(" ", 1) for line in res["stdout"].splitlines())
    assert out["fstype"] == "tmpfs", out
    assert int(out["size"]) <= 4 * MIB, out
    assert out["rc"] != "0", out


def test_rw_workspace_default_bound(tmp_path):
    """With no configuration at all, a rw workspace is a tmpfs of the
    documented default (256 MiB), not the host's disk."""
    res = sb.run("sh", WS_FILL, "--workspace", "rw")
    assert res["outcome"] == "completed", res
    out = dict(line.split(" ", 1) for line in res["stdout"].splitlines())
    assert out["fstype"] == "tmpfs", out
    assert int(out["total"]) <= 256 * MIB, out
    assert out["rc"] == "0" and int(out["size"]) == 8 * MIB, out


def test_warm_member_workspace_is_bounded(tmp_path):
    """Through airlockd with a warm pool of rw members (its idle
    supervisors hold one each): the member's /workspace is a tmpfs of the
    config's workspace_bytes too, and its input file arrives in it."""
    sb.need(language="sh")
    stats = tmp_path / "pool-stats"
    cfg = {"providers": [{"provider": "sandbox",
                          "config": {"workspace_bytes": 4 * MIB,
                                     "pool": {"sh": {"size": 1,
                                                     "workspace": "rw"}}}}],
           "tenants": {"default": {"languages": ["sh"],
                                   "grant": {"network": ["none"],
                                             "workspace": ["none", "rw"],
                                             "streaming": True}}}}
    d = DurableDaemon(tmp_path, cfg)
    try:
        d.start(env={"AIRLOCK_SANDBOX_POOL_STATS": str(stats)})
        # the warm supervisor has its member ready: wait for it
        wait_until(lambda: "airlock_idle_supervisors{kind=\"warm\"} 1" in
                   d.request("GET", "/metrics")[2], timeout=30,
                   what="a warm idle supervisor")
        code = "cat in.txt; " + WS_FILL
        st, _, res = d.run({"language": "sh", "code": code,
                            "files": [{"path": "in.txt",
                                       "content": "input\n"}],
                            "grant": {"workspace": "rw"},
                            "limits": {"wall_ms": 20000}})
        assert st == 200 and res["outcome"] == "completed", res
        lines = res["stdout"].splitlines()
        assert lines[0] == "input"
        out = dict(line.split(" ", 1) for line in lines[1:])
        assert out["fstype"] == "tmpfs", out
        assert int(out["size"]) <= 4 * MIB, out
    finally:
        d.stop()
        cleanup_state(d)
    taken = [json.loads(line)["taken"] for line in
             stats.read_text().splitlines()] if stats.exists() else []
    assert sum(taken) >= 1, "the run did not go through a warm member"
