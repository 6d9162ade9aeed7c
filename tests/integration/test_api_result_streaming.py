"""Result reads and retention (docs/threat-model.md, "Result reads and
retention (T8, S8)"): a run's output is stored once, and reads of a large
result are sent from the disk, so concurrent GETs do not pin the
daemon's memory."""
import os
import re
import socket

import pytest

from test_api_support import Daemon, local_config, sh

OUT = 48 << 20  # within the 64 MiB output limit
READERS = 12


def rss_bytes(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def dir_bytes(path):
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            total += os.lstat(os.path.join(root, name)).st_size
    return total


def test_large_result_is_stored_once_and_streamed(tmp_path):
    cfg = local_config()
    # above the built-in 16 MiB output ceiling: this tenant's own
    cfg["tenants"]["default"]["ceilings"] = {"output_bytes": 64 << 20}
    d = Daemon(tmp_path, cfg).start()
    socks = []
    try:
        code = "head -c %d /dev/zero | tr '\\0' x" % OUT
        st, _, res = d.run(sh(code, streaming=True,
                              limits={"output_bytes": 64 << 20,
                                      "wall_ms": 120000}),
                           timeout=120)
        assert st == 200 and res["outcome"] == "completed", \
            {k: v for k, v in res.items() if k != "stdout"}
        assert len(res["stdout"]) == OUT and not res["stdout_truncated"]
        run_id = res["run_id"]
        del res

        # about 1x the output in the run's directory (the result once)
        stored = dir_bytes(d.state / "runs" / run_id)
        assert OUT <= stored < OUT * 1.2, stored
        # under one name: final.json, result.json gone
        rd = d.state / "runs" / run_id
        assert not (rd / "result.json").exists()
        assert (rd / "final.json").stat().st_nlink == 1

        # READERS concurrent GETs, each answered (headers read) but left
        # unread: the daemon holds every answer at once
        before = rss_bytes(d.proc.pid)
        req = ("GET /v1/runs/%s HTTP/1.1\r\nHost: x\r\n"
               "Authorization: Bearer %s\r\n\r\n" % (run_id, d.token))
        for _ in range(READERS):
            s = socket.create_connection(("127.0.0.1", d.port), timeout=30)
            s.sendall(req.encode())
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = s.recv(1024)
                assert chunk, head
                head += chunk
            assert head.startswith(b"HTTP/1.1 200"), head[:100]
            hdrs, _, body = head.partition(b"\r\n\r\n")
            length = int(re.search(rb"(?i)content-length: *(\d+)",
                                   hdrs).group(1))
            socks.append((s, length, len(body)))
        grown = rss_bytes(d.proc.pid) - before
        # 12 answers held in memory would be 12 x 48 MiB
        assert grown < 64 << 20, grown

        # and every reader still gets the whole result
        for s, length, n in socks:
            assert length > OUT
            while n < length:
                chunk = s.recv(1 << 20)
                assert chunk, (n, length)
                n += len(chunk)
    finally:
        for s in socks:
            s[0].close()
        d.stop()


@pytest.mark.not_under_san(
    "ASan's allocator keeps freed memory in quarantine and its "
    "shadow memory grows with use, so RSS growth is not the "
    "daemon's")
def test_finished_runs_do_not_pin_their_live_output(tmp_path):
    """The table keeps each finished run's live-output buffer for late SSE
    subscribers: only its tail once the result (with all the output) is
    stored."""
    d = Daemon(tmp_path, local_config()).start()
    try:
        d.run(sh("echo warm", streaming=True))
        before = rss_bytes(d.proc.pid)
        runs = 48
        for _ in range(runs):
            st, _, res = d.run(sh("head -c 1048576 /dev/zero | tr '\\0' y",
                                  streaming=True))
            assert st == 200 and res["outcome"] == "completed"
        grown = rss_bytes(d.proc.pid) - before
        # 1 MiB of buffered events per run would be 48 MiB
        assert grown < 16 << 20, grown
        # a late subscriber still gets the whole output, in the result
        events = d.events(res["run_id"])
        assert events[-1][0] == "result"
        assert len(events[-1][1]["stdout"]) == 1 << 20
    finally:
        d.stop()
