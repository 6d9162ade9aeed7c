"""Artifacts through airlockd (docs/workspaces.md, docs/api.md): a run's
declared outputs and its log at GET /v1/runs/{id}/artifacts/{artifact},
octet-stream, tenant-scoped (another tenant's run, an unknown or a
malformed artifact: 404); a durable run collects through its supervisor;
the daemon's retention timer removes expired stores and never a live
run's."""
import hashlib
import json
import os
import time

import pytest

from sandbox_helpers import UID_BASE, UID_COUNT, need
from test_api_support import Daemon, error_shape, local_config, sh

TOKEN_A = "alpha-token-" + "a" * 40
TOKEN_B = "bravo-token-" + "b" * 40

REPORT_PY = """import csv, json, os
rows = list(csv.DictReader(open("data/in.csv")))
os.makedirs("out", exist_ok=True)
with open("out/report.json", "w") as f:
    json.dump({"rows": len(rows), "total": sum(int(r["n"]) for r in rows)}, f)
print("done")
"""


def sha(data):
    return hashlib.sha256(data).hexdigest()


def token_sha(t):
    return hashlib.sha256(t.encode()).hexdigest()


def stores(d):
    base = d.state / "artifacts"
    return sorted(p for p in os.listdir(base)) if base.is_dir() else []


@pytest.fixture
def two_tenants(tmp_path):
    d = Daemon(tmp_path, local_config(
        tenants=("alpha", "bravo"),
        tokens={token_sha(TOKEN_A): "alpha",
                token_sha(TOKEN_B): "bravo"})).start()
    yield d
    d.stop()


def test_artifacts_of_a_run(two_tenants):
    d = two_tenants
    st, _, res = d.run(sh("mkdir -p out; printf 'a\\0b' > out/bin.dat;"
                          " echo report > out/r.txt; echo logged",
                          outputs=["out/*"]), token=TOKEN_A)
    assert st == 200 and res["outcome"] == "completed", res
    outs = {o["path"]: o for o in res["outputs"]}
    assert set(outs) == {"out/bin.dat", "out/r.txt"}
    for path, data in (("out/bin.dat", b"a\0b"), ("out/r.txt", b"report\n")):
        o = outs[path]
        st, h, body = d.request(
            "GET", "/v1/runs/%s/artifacts/%s" % (res["run_id"],
                                                 o["artifact"]),
            token=TOKEN_A, raw=True)
        assert st == 200
        assert h["content-type"] == "application/octet-stream"
        assert body == data and sha(body) == o["sha256"]
    st, _, body = d.request("GET", "/v1/runs/%s/artifacts/log"
                            % res["run_id"], token=TOKEN_A, raw=True)
    assert st == 200 and body == b"logged\n"
    # another tenant's run answers exactly like an unknown one
    for token, path in (
            (TOKEN_B, "/v1/runs/%s/artifacts/log" % res["run_id"]),
            (TOKEN_A, "/v1/runs/%s/artifacts/out-9" % res["run_id"]),
            (TOKEN_A, "/v1/runs/nosuchrun/artifacts/log")):
        st, _, body = d.request("GET", path, token=token)
        assert st == 404
        error_shape(body, 404, "not_found")
    # malformed ids are no resource at all
    for path in ("/v1/runs/%s/artifacts/..%%2Ftoken" % res["run_id"],
                 "/v1/runs/%s/artifacts/../token" % res["run_id"],
                 "/v1/runs/%s/artifacts/LOG" % res["run_id"],
                 "/v1/runs/%s/artifacts/" % res["run_id"]):
        st, _, body = d.request("GET", path, token=TOKEN_A)
        assert st == 404, path
    st, h, _ = d.request("POST", "/v1/runs/%s/artifacts/log"
                         % res["run_id"], body=b"", token=TOKEN_A)
    assert st == 405 and h["allow"] == "GET, HEAD"
    st, _, _ = d.request("GET", "/v1/runs/%s/artifacts/log" % res["run_id"],
                         token=None)
    assert st == 401


def test_hostile_output_through_the_daemon(two_tenants):
    d = two_tenants
    st, _, res = d.run(sh("ln -s /etc/passwd out.txt; ln -s %s/token t.txt"
                          % d.state, outputs=["*.txt"]), token=TOKEN_A)
    assert st == 200 and res["outcome"] == "completed", res
    assert {o["path"]: o["refused"] for o in res["outputs"]} == {
        "out.txt": "symlink", "t.txt": "symlink"}


def sandbox_daemon(tmp_path, extra=None):
    cfg = {"providers": [{"provider": "sandbox",
                          "config": {"uid_base": UID_BASE,
                                     "uid_count": UID_COUNT}}],
           "tenants": {"default": {"languages": "*", "grant": {
               "network": ["none"], "workspace": ["none", "ro", "rw"],
               "streaming": True}}}}
    if extra:
        cfg.update(extra)
    return Daemon(tmp_path, cfg).start()


def test_python_report_end_to_end_through_the_api(tmp_path):
    """data/in.csv in, out/report.json out, through a durable run's
    supervisor under the sandbox."""
    need(language="python")
    d = sandbox_daemon(tmp_path)
    try:
        st, _, res = d.run({
            "language": "python", "code": REPORT_PY,
            "files": [{"path": "data/in.csv",
                       "content": "name,n\na,1\nb,2\nc,39\n",
                       "mode": "0640"}],
            "outputs": ["out/report.json"],
            "grant": {"workspace": "rw"}})
        assert st == 200 and res["outcome"] == "completed", res
        [o] = res["outputs"]
        st, h, body = d.request("GET", "/v1/runs/%s/artifacts/%s"
                                % (res["run_id"], o["artifact"]), raw=True)
        assert st == 200 and sha(body) == o["sha256"]
        assert json.loads(body) == {"rows": 3, "total": 42}
        st, _, body = d.request("GET", "/v1/runs/%s/artifacts/log"
                                % res["run_id"], raw=True)
        assert st == 200 and body == b"done\n"
    finally:
        d.stop()


def test_retention_timer_removes_expired_stores_not_live_ones(tmp_path):
    d = Daemon(tmp_path, local_config(extra={"retention": 1})).start()
    try:
        st, _, done = d.run(sh("echo old"))
        assert st == 200 and done["outcome"] == "completed"
        st, _, live = d.run(sh("echo started; sleep 60",
                               limits={"wall_ms": 90000}), wait=False)
        assert st == 202
        # the finished run's store expires within a few sweeps; the live
        # one, older than the retention by then, stays while it runs
        deadline = time.monotonic() + 10
        while done["run_id"] in stores(d) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert done["run_id"] not in stores(d)
        st, _, _ = d.request("GET", "/v1/runs/%s/artifacts/log"
                             % done["run_id"])
        assert st == 404
        time.sleep(1.5)  # more sweeps; the live store is past retention
        st, _, state = d.request("GET", "/v1/runs/" + live["run_id"])
        assert st == 200 and state.get("state") == "running", state
        assert live["run_id"] in stores(d)
        st, _, body = d.request("GET", "/v1/runs/%s/artifacts/log"
                                % live["run_id"], raw=True)
        assert st == 200 and body == b"started\n"
        st, _, _ = d.request("POST", "/v1/runs/%s/interrupt"
                             % live["run_id"])
        assert st == 202
        res = d.wait_finished(live["run_id"])
        assert res["outcome"] == "interrupted", res
        deadline = time.monotonic() + 10
        while live["run_id"] in stores(d) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert live["run_id"] not in stores(d)
        assert "retention: removed" in d.log()
    finally:
        d.stop()
