"""A warm supervisor that serves several runs (docs/durability.md, "A
supervisor that serves several runs"): an idle supervisor holding one
language's warm sandbox serves runs in sequence; between two runs it makes
its member again, after the run before is verified gone, so every run is
warm and none sees anything of the one before.

A run tells a warm start from a cold one by its own process: a python
member runs the program from its loader (`python -c ...`), a cold run
starts `python /code/main.py`."""
import hashlib
import json
import pathlib
import re

import pytest

from test_durable_support import (DurableDaemon, assert_no_sanitizer_reports,
                                  cleanup_state, identity, wait_until)

ACME, OTHER = "acme-token-" + "c" * 24, "other-token-" + "d" * 24
WARM_CHECK = ("import sys\n"
              "a = open('/proc/self/cmdline', 'rb').read().split(b'\\0')\n"
              "print('warm' if b'-c' in a else 'cold')\n")


def warm_config(secrets_file=None):
    grant = {"network": ["none"], "workspace": ["none"],
             "secrets": [], "streaming": True}
    cfg = {"providers": [{"provider": "sandbox",
                          "config": {"pool": {"python": {"size": 1}}}}],
           "idle_supervisors": 0,
           "tenants": {"default": {"languages": "*", "grant": grant}}}
    if secrets_file is not None:
        cfg["secrets"] = {"file": str(secrets_file)}
        cfg["tenants"] = {"acme": {"languages": "*",
                                   "grant": dict(grant,
                                                 secrets=["API_KEY"])},
                          "other": {"languages": "*", "grant": grant}}
        cfg["tokens"] = {hashlib.sha256(t.encode()).hexdigest(): name
                         for t, name in ((ACME, "acme"), (OTHER, "other"))}
    return cfg


def counters(d, token):
    st, _, text = d.request("GET", "/metrics", token=token)
    assert st == 200, text
    out = {}
    for name, key in (("warm", r'airlock_idle_supervisors\{kind="warm"\}'),
                      ("reused", "airlock_idle_supervisors_reused_total"),
                      ("started", "airlock_idle_supervisors_started_total")):
        m = re.search(r"^%s (\d+)$" % key, text, re.M)
        out[name] = int(m.group(1)) if m else -1
    return out


def start(tmp_path, cfg, token="default"):
    d = DurableDaemon(tmp_path, cfg)
    d.start()
    st, _, caps = d.request("GET", "/v1/capabilities", token=token)
    sb = caps["providers"][0]
    if not sb["available"] or "python" not in [
            lang["language"] for lang in sb["languages"]]:
        d.stop()
        cleanup_state(d)
        pytest.skip("no sandbox with python here")
    return d


def finish(d):
    """Stops the daemon and removes its state."""
    try:
        d.stop() if d.proc is not None else None
    finally:
        cleanup_state(d)


def wait_warm(d, token="default"):
    wait_until(lambda: counters(d, token)["warm"] == 1, timeout=30,
               what="the warm supervisor ready")


def python(d, code, token="default", **extra):
    req = {"language": "python", "code": code, "limits": {"wall_ms": 20000}}
    req.update(extra)
    st, _, res = d.run(req, token=token)
    assert st == 200 and res["outcome"] == "completed", res
    return res


def test_a_warm_supervisor_serves_warm_runs_in_sequence(tmp_path):
    d = start(tmp_path, warm_config())
    try:
        pids = []
        for _ in range(4):
            wait_warm(d)
            res = python(d, WARM_CHECK)
            assert res["stdout"] == "warm\n", res
            pids.append(identity(d, res["run_id"])["pid"])
        # One process served all four, each from a member of its own.
        assert len(set(pids)) == 1, pids
        wait_warm(d)
        c = counters(d, "default")
        assert c["reused"] >= 3 and c["started"] == 1, c
    finally:
        finish(d)
    assert_no_sanitizer_reports(d)


def test_nothing_of_a_warm_run_reaches_the_next(tmp_path):
    """One tenant's run with a secret leaves a file, a process and a
    variable; another tenant's run on the same supervisor, from the member
    made after it, finds none of them."""
    sec = tmp_path / "secrets.json"
    sec.write_text(json.dumps({"API_KEY": "s3cr3t-warm"}))
    sec.chmod(0o600)
    d = start(tmp_path, warm_config(sec), token=ACME)
    try:
        wait_warm(d, ACME)
        res = python(d, "import os, subprocess\n"
                        "print(os.environ['API_KEY'])\n"
                        "os.environ['LEAK'] = '1'\n"
                        "open('/tmp/left', 'w').write('x')\n"
                        "subprocess.Popen(['sleep', '100'],"
                        " start_new_session=True)\n",
                     token=ACME, grant={"secrets": ["API_KEY"]})
        assert res["stdout"] == "s3cr3t-warm\n", res
        pid = identity(d, res["run_id"])["pid"]
        wait_warm(d, ACME)
        res2 = python(d, WARM_CHECK +
                      "import os\n"
                      "print(sorted(os.listdir('/tmp')))\n"
                      "print(os.environ.get('API_KEY'),"
                      " os.environ.get('LEAK'))\n"
                      "comms = []\n"
                      "for p in os.listdir('/proc'):\n"
                      "    if p.isdigit():\n"
                      "        try:\n"
                      "            comms.append(open('/proc/%s/comm' % p)"
                      ".read().strip())\n"
                      "        except OSError:\n"
                      "            pass\n"
                      "print(sorted(comms))\n",
                      token=OTHER)
        assert identity(d, res2["run_id"])["pid"] == pid
        lines = res2["stdout"].splitlines()
        assert lines[0] == "warm", res2
        assert lines[1] == "[]", res2
        assert lines[2] == "None None", res2
        assert "sleep" not in lines[3], res2
        assert "s3cr3t" not in res2["stdout"], res2
        env = pathlib.Path("/proc/%d/environ" % pid).read_bytes()
        assert b"s3cr3t" not in env
    finally:
        finish(d)
    assert_no_sanitizer_reports(d)
