"""airlockd lifecycle: graceful SIGTERM (runs finish, or are interrupted
past the grace), SIGHUP reloads (a bad file keeps the old configuration)."""
import hashlib
import json
import signal
import socket
import threading
import time

from test_api_support import Daemon, local_config, sh


def wait_log(d, text, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if text in d.log():
            return
        time.sleep(0.05)
    raise AssertionError("%r not in log: %s" % (text, d.log()))


def background_run(d, req):
    box = {}

    def go():
        try:
            box["r"] = d.run(req)
        except Exception as e:  # noqa: BLE001 — asserted by the caller
            box["r"] = ("error", repr(e), None)
    t = threading.Thread(target=go)
    t.start()
    return t, box


def test_sigterm_lets_running_runs_finish(tmp_path):
    d = Daemon(tmp_path, local_config()).start()
    try:
        t, box = background_run(d, sh("sleep 1; echo finished"))
        time.sleep(0.4)
        d.signal(signal.SIGTERM)
        wait_log(d, "shutting down")
        # New connections are refused while the run drains.
        time.sleep(0.1)
        try:
            socket.create_connection(("127.0.0.1", d.port), timeout=2)
            refused = False
        except OSError:
            refused = True
        assert refused
        t.join(20)
        st, _, res = box["r"]
        assert st == 200 and res["outcome"] == "completed"
        assert res["stdout"] == "finished\n"
        assert d.wait(timeout=20) == 0
        assert "stopped" in d.log()
    finally:
        d.stop()


def test_sigterm_interrupts_runs_past_the_grace(tmp_path):
    # A shorter grace than the default 10 s keeps the loop fast; what is
    # checked is that the run is given the grace, then interrupted.
    d = Daemon(tmp_path, local_config(),
               extra_args=["--shutdown-grace-ms", "2000"]).start()
    try:
        t, box = background_run(d, sh("echo begun; sleep 60",
                                      limits={"wall_ms": 120000}))
        time.sleep(0.4)
        t0 = time.monotonic()
        d.signal(signal.SIGTERM)
        t.join(40)
        st, _, res = box["r"]
        assert st == 200, res
        assert res["outcome"] == "interrupted"
        assert d.wait(timeout=30) == 0
        # The run had its grace, and was stopped soon after it.
        assert 1.8 < time.monotonic() - t0 < 20
        assert "interrupting 1 run(s)" in d.log()
    finally:
        d.stop()


def test_sighup_with_a_bad_config_keeps_the_running_one(tmp_path):
    d = Daemon(tmp_path, local_config()).start()
    try:
        token = d.token
        d.config_path.write_text(json.dumps(
            dict(local_config(), bogus_key="value-never-echoed")))
        d.signal(signal.SIGHUP)
        wait_log(d, "reload refused")
        log = d.log()
        assert "bogus_key" in log
        assert "value-never-echoed" not in log
        st, _, res = d.run(sh("echo still"), token=token)
        assert st == 200 and res["stdout"] == "still\n"
        d.config_path.write_text("{ not json")
        d.signal(signal.SIGHUP)
        time.sleep(0.5)
        assert d.log().count("reload refused") == 2
        assert d.run(sh("true"), token=token)[0] == 200
    finally:
        d.stop()


def test_sighup_with_a_good_config_swaps_the_tokens(tmp_path):
    d = Daemon(tmp_path, local_config()).start()
    try:
        old = d.token
        new = "fresh-token-" + "f" * 40
        d.config_path.write_text(json.dumps(local_config(tokens={
            hashlib.sha256(new.encode()).hexdigest(): "default"})))
        # A run in flight keeps going on the configuration it started on.
        t, box = background_run(d, sh("sleep 0.5; echo old-gen"))
        time.sleep(0.2)
        d.signal(signal.SIGHUP)
        wait_log(d, "configuration reloaded")
        t.join(20)
        assert box["r"][0] == 200 and box["r"][2]["stdout"] == "old-gen\n"
        assert d.request("GET", "/v1/capabilities", token=old)[0] == 401
        st, _, res = d.run(sh("echo new"), token=new)
        assert st == 200 and res["stdout"] == "new\n"
    finally:
        d.stop()


def test_a_bad_config_refuses_to_start(tmp_path):
    cfg = local_config()
    cfg["tenants"]["default"]["languages"] = "sh"
    d = Daemon(tmp_path, cfg)
    d.start(expect_ok=False)
    assert d.wait(timeout=10) != 0
    assert "tenants.default.languages" in d.log()
