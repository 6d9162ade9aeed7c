"""Other tenants (docs/threat-model.md, "Other tenants (T1)"): a run id
and everything stored under it belong to the tenant its durable record
names.  A client-chosen run id (X-Airlock-Run-Id) that ever named a run —
made by the command line in the same state directory, or by another
tenant's API run long evicted from the daemon's table — is refused as
409 run_id_in_use, and another tenant's run and artifacts answer 404
exactly like unknown ones."""
import hashlib
import json
import os
import subprocess
import uuid

from test_api_support import (AIRLOCK_BIN, Daemon, error_shape, local_config,
                              post_invalid_runs, sh)

TOKEN_V = "victim-token-" + "v" * 40
TOKEN_M = "mallory-token-" + "m" * 40
SECRET = "victim-secret-7f3a9c\n"


def token_sha(t):
    return hashlib.sha256(t.encode()).hexdigest()


def two_tenants(tmp_path, env=None):
    # "default": the command line's tenant
    cfg = local_config(tenants=("victim", "mallory", "default"),
                       tokens={token_sha(TOKEN_V): "victim",
                               token_sha(TOKEN_M): "mallory"})
    d = Daemon(tmp_path, cfg)
    if env:
        os.environ.update(env)
    try:
        d.start()
    finally:
        for k in env or ():
            os.environ.pop(k, None)
    return d, cfg


def claim(d, run_id):
    """Mallory's run asking for run_id, writing nothing of its own."""
    return d.request("POST", "/v1/runs", sh("echo mine"), token=TOKEN_M,
                     headers={"X-Airlock-Run-Id": run_id})


def assert_unreadable(d, run_id):
    for path in ("/v1/runs/%s/artifacts/out-1" % run_id,
                 "/v1/runs/%s/artifacts/log" % run_id,
                 "/v1/runs/%s" % run_id):
        st, _, body = d.request("GET", path, token=TOKEN_M)
        assert st == 404 and SECRET not in str(body), (path, st, body)
        error_shape(body, 404, "not_found")
    # exactly like a run that never existed
    st, _, unknown = d.request("GET", "/v1/runs/%s" % uuid.uuid4(),
                               token=TOKEN_M)
    st2, _, known = d.request("GET", "/v1/runs/%s" % run_id, token=TOKEN_M)
    assert st == st2 == 404 and unknown == known


def test_cli_run_id_cannot_be_claimed(tmp_path):
    d, cfg = two_tenants(tmp_path)
    try:
        # A run made by the command line in the same state directory.
        cfg_path = tmp_path / "cli.json"
        cfg_path.write_text(json.dumps(cfg))
        req = tmp_path / "req.json"
        req.write_text(json.dumps(sh(
            "mkdir -p out; printf '%s' > out/secret.txt" % SECRET,
            outputs=["out/secret.txt"])))
        p = subprocess.run(
            [AIRLOCK_BIN, "--state-dir", str(d.state), "--config",
             str(cfg_path), "run", "-p", "local", "--json", "--request",
             str(req)], capture_output=True, timeout=60)
        res = json.loads(p.stdout)
        assert res["outcome"] == "completed", res
        victim_id = res["run_id"]
        assert (d.state / "artifacts" / victim_id / "out-1").read_text() \
            == SECRET

        st, _, body = claim(d, victim_id)
        # what the claim would have given first: the victim's file
        assert_unreadable(d, victim_id)
        assert st == 409, (st, body)
        assert body["reason"] == "run_id_in_use", body
        assert body["run_id"] != victim_id, body
    finally:
        d.stop()


def test_evicted_run_id_cannot_be_claimed(tmp_path):
    # The daemon's table holds 4,096 runs; the test shrinks it
    # (AIRLOCK_RUN_TABLE_MAX, only ever smaller; the daemon says so) and
    # sends four times as many requests as it holds.
    d, _ = two_tenants(tmp_path, env={"AIRLOCK_RUN_TABLE_MAX": "16"})
    try:
        assert "run table holds at most 16 runs" in d.log(), d.log()
        st, _, res = d.run(sh("mkdir -p out; printf '%s' > out/s.txt"
                              % SECRET, outputs=["out/s.txt"]),
                           token=TOKEN_V)
        assert st == 200 and res["outcome"] == "completed", res
        victim_id = res["run_id"]
        post_invalid_runs(d, 64, TOKEN_M)

        st, _, body = claim(d, victim_id)
        assert_unreadable(d, victim_id)
        assert st == 409, (st, body)
        assert body["reason"] == "run_id_in_use", body
        # the victim still reads its own run, evicted or not
        st, _, again = d.request("GET", "/v1/runs/" + victim_id,
                                 token=TOKEN_V)
        assert st == 200 and again["run_id"] == victim_id, again
        st, _, data = d.request("GET", "/v1/runs/%s/artifacts/out-1"
                                % victim_id, token=TOKEN_V, raw=True)
        assert st == 200 and data.decode() == SECRET
    finally:
        d.stop()


def test_forgotten_run_id_stays_used(tmp_path):
    """Once a run's stored data is gone, the audit trail still names its
    id: it is never handed to anyone again."""
    d, _ = two_tenants(tmp_path)
    try:
        st, _, res = d.run(sh("echo hi"), token=TOKEN_V)
        assert st == 200, res
        victim_id = res["run_id"]
        p = subprocess.run([AIRLOCK_BIN, "--state-dir", str(d.state),
                            "runs", "forget", victim_id],
                           capture_output=True, timeout=30)
        assert p.returncode == 0, p.stderr
        assert not (d.state / "runs" / victim_id).exists()
        st, _, body = claim(d, victim_id)
        assert st == 409 and body["reason"] == "run_id_in_use", body
        # a fresh id of the same shape is still accepted
        st, _, body = claim(d, str(uuid.uuid4()))
        assert st == 200 and body["outcome"] == "completed", body
    finally:
        d.stop()
