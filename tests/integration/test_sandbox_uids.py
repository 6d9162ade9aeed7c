"""Per-run host uids are unique across airlock processes, not only within
one (docs/sandbox.md, "Per-run host uids")."""
import datetime
import fcntl
import json
import os
import struct
import subprocess

import pytest

from sandbox_helpers import (BIN, UID_BASE, config_file, facts, need,
                             session_config)

LOCK_FILE = "/run/airlock/uid-pool.lock"


def need_pool():
    need(language="sh")
    if facts()["mechanism"].get("uid_mode") != "per_run_pool":
        pytest.skip("sandbox facts: uid_mode is %s, not per_run_pool" %
                    facts()["mechanism"].get("uid_mode"))


def start(config, code):
    return subprocess.Popen([BIN, "--config", config, "run", "-p", "sandbox",
                             "--json", "-l", "sh", "-e", code],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def host_uid(res):
    assert res["outcome"] == "completed", res
    inside, outside, count = res["stdout"].split()[:3]
    assert inside == "0" and count == "1"
    return int(outside)


def when(stamp):
    return datetime.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ")


def test_concurrent_cli_processes_get_distinct_uids():
    need_pool()
    procs = [start(session_config(), "cat /proc/self/uid_map; sleep 3")
             for _ in range(4)]
    runs = []
    for p in procs:
        res = json.loads(p.communicate(timeout=60)[0])
        runs.append((host_uid(res), when(res["started_at"]),
                     when(res["finished_at"])))
    # A uid is held from before a run starts until after it ends, so two
    # runs that overlapped held theirs at once.  A process that started
    # late on a loaded machine (a cold cache) may begin after another
    # ended and reuse its uid: that is the pool working, not a clash.
    overlapping = [(a, b) for i, a in enumerate(runs) for b in runs[i + 1:]
                   if a[1] < b[2] and b[1] < a[2]]
    assert overlapping, runs
    for a, b in overlapping:
        assert a[0] != b[0], (a, b)


def ofd_lock(fd, uid):
    # struct flock: l_type, l_whence (shorts), l_start, l_len (off_t),
    # l_pid (int), padded
    fl = struct.pack("hhqqi4x", fcntl.F_WRLCK, os.SEEK_SET, uid, 1, 0)
    fcntl.fcntl(fd, fcntl.F_OFD_SETLK, fl)


def test_uid_held_elsewhere_is_skipped_and_a_full_pool_is_busy(tmp_path):
    need_pool()
    base = UID_BASE + 90  # this session's, past what the others use
    cfg = config_file(tmp_path / "config.json",
                      {"uid_base": base, "uid_count": 2})
    # another process's run holds `base`: ours must get base + 1
    holder = os.open(LOCK_FILE, os.O_RDWR)
    try:
        ofd_lock(holder, base)
        p = start(cfg, "cat /proc/self/uid_map")
        assert host_uid(json.loads(p.communicate(timeout=60)[0])) == base + 1
        # both held: nothing is shared, the run is refused as busy
        ofd_lock(holder, base + 1)
        p = start(cfg, "echo RAN")
        res = json.loads(p.communicate(timeout=60)[0])
        assert res["outcome"] == "unavailable" and res["reason"] == "busy"
        assert res["stdout"] == ""
    finally:
        os.close(holder)
    p = start(cfg, "cat /proc/self/uid_map")
    assert host_uid(json.loads(p.communicate(timeout=60)[0])) == base
