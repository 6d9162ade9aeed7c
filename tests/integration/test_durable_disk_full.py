"""A full disk never loses a run's outcome (issue 14, item 2;
docs/durability.md, "A full disk").  The state directory is a small
tmpfs that the test fills from outside while a run is going:

- the supervisor cannot write a result that does not fit the space it
  reserved: it keeps the result in memory, marks it pending and retries;
- the daemon cannot write run.finished or final.json: it keeps the result
  in memory and retries.

Either way the run answers as running meanwhile (never `lost`), health
and /metrics count the record as pending, and once space is freed the GET
answers the real outcome and the audit has exactly one run.finished."""
import os
import pathlib
import subprocess
import threading

import pytest

from test_durable_support import (DurableDaemon, cleanup_state,
                                  finished_records, local_config, sh,
                                  wait_until)

pytestmark = pytest.mark.skipif(os.geteuid() != 0,
                                reason="mounts a tmpfs (root)")


def mount_tmpfs(path, size="4m"):
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o",
                    "size=%s,mode=0700" % size, "airlock-test", str(path)],
                   check=True)


def umount(path):
    subprocess.run(["umount", "-l", str(path)], capture_output=True)


def fill(dirpath):
    """Fills the file system under dirpath to the last page."""
    f = dirpath / "filler"
    fd = os.open(str(f), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        for chunk in (1 << 16, 4096, 512, 1):
            data = b"\0" * chunk
            while True:
                try:
                    if os.write(fd, data) < chunk:
                        break
                except OSError:
                    break
    finally:
        os.close(fd)
    return f


def health(d):
    st, _, body = d.request("GET", "/v1/health")
    return body


def metric(d, name):
    st, _, text = d.request("GET", "/metrics")
    text = text if isinstance(text, str) else text.decode()
    for line in text.splitlines():
        if line.startswith(name + " "):
            return int(float(line.split()[1]))
    return None


def state_of(d, rid):
    st, _, body = d.request("GET", "/v1/runs/" + rid)
    return body


def pending_shown(d):
    return health(d).get("records_pending", 0) >= 1 and \
        metric(d, "airlock_records_pending") >= 1


def test_a_result_bigger_than_its_reserve_waits_in_the_supervisor(tmp_path):
    ready, go = tmp_path / "ready", tmp_path / "go"
    d = DurableDaemon(tmp_path, local_config())
    mount_tmpfs(d.state)
    filler = None
    try:
        d.start()
        # 200 kB of output: more than the result's reserved space.
        req = sh('head -c 200000 /dev/zero | tr "\\0" a; touch "$READY"; '
                 'i=0; while [ ! -e "$GO" ] && [ $i -lt 1200 ]; do '
                 'sleep 0.05; i=$((i+1)); done; exit 3',
                 env={"READY": str(ready), "GO": str(go)},
                 limits={"output_bytes": 1 << 20})
        st, _, body = d.run(req, wait=False)
        assert st == 202, body
        rid = body["run_id"]
        wait_until(ready.exists, what="the output written")
        filler = fill(d.state)
        go.touch()

        wait_until(lambda: pending_shown(d), timeout=30,
                   what="the pending record in health and metrics")
        assert (d.state / "runs" / rid / "result.pending").exists()
        res = state_of(d, rid)
        assert res.get("state") == "running", res
        assert finished_records(d, rid) == []

        filler.unlink()
        res = d.wait_finished(rid, timeout=60)
        assert res["outcome"] == "failed" and res["exit_code"] == 3, res
        assert res["stdout"] == "a" * 200000
        assert len(finished_records(d, rid)) == 1
        wait_until(lambda: health(d).get("records_pending") == 0,
                   what="nothing pending")
        assert metric(d, "airlock_records_pending") == 0
        assert not (d.state / "runs" / rid / "result.pending").exists()
    finally:
        d.stop() if d.proc is not None else None
        cleanup_state(d)
        umount(d.state)


def test_the_daemons_record_waits_for_room_on_the_disk(tmp_path):
    """The daemon's own records: a stop escalated to a kill (the run's
    control file cannot be written on the full disk, so the supervisor is
    never asked) leaves the daemon to write run.finished and final.json
    itself.  Without spare run directories: a spare's blanks have space
    taken ahead, and a record as small as this one is then written into
    it on the full disk without waiting (docs/durability.md)."""
    ready = tmp_path / "ready"
    cfg = local_config()
    cfg["spare_run_dirs"] = 0
    d = DurableDaemon(tmp_path, cfg)
    mount_tmpfs(d.state)
    filler = None
    stopper = None
    try:
        d.start()
        st, _, body = d.run(sh('touch "$READY"; sleep 60',
                               env={"READY": str(ready)}), wait=False)
        assert st == 202, body
        rid = body["run_id"]
        # Filled once the run is set up (a setup failing for room would
        # give back what it had taken).
        wait_until(ready.exists, what="the program running")
        filler = fill(d.state)
        answer = {}

        def stop():
            try:
                answer["r"] = d.request(
                    "POST", "/v1/runs/%s/interrupt?wait=true" % rid,
                    timeout=120)
            except OSError as e:
                answer["r"] = e
        stopper = threading.Thread(target=stop)
        stopper.start()

        wait_until(lambda: pending_shown(d), timeout=30,
                   what="the pending record in health and metrics")
        res = state_of(d, rid)
        assert res.get("state") == "running", res
        assert finished_records(d, rid) == []

        filler.unlink()
        res = d.wait_finished(rid, timeout=60)
        assert res["outcome"] == "interrupted" and res["signal"] == 9, res
        assert len(finished_records(d, rid)) == 1
        assert (d.state / "runs" / rid / "final.json").exists()
        wait_until(lambda: health(d).get("records_pending") == 0,
                   what="nothing pending")
        stopper.join(timeout=60)
        assert answer["r"][0] == 200, answer
    finally:
        d.stop() if d.proc is not None else None
        if stopper is not None:
            stopper.join(timeout=60)
        cleanup_state(d)
        umount(d.state)


def test_fill_reaches_the_last_page(tmp_path):
    """The helper really leaves no room (else the tests above prove
    nothing)."""
    p = tmp_path / "fs"
    mount_tmpfs(p, size="256k")
    try:
        fill(p)
        with pytest.raises(OSError):
            (p / "more").write_bytes(b"x" * 4096)
    finally:
        umount(p)
