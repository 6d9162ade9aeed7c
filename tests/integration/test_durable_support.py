"""Shared support for the durable-run tests (docs/durability.md): a daemon
that can be SIGKILLed and restarted on the same state directory, a look at
a run's directory, its supervisor and the audit trail, and a clean-up that
leaves no supervisor or run cgroup behind.

No tests live here; the test_durable_* files import it.
"""
import hashlib
import json
import os
import pathlib
import re
import signal
import sqlite3
import subprocess
import time

from test_api_support import AIRLOCK_BIN, Daemon, local_config, sh

REPO = pathlib.Path(__file__).resolve().parents[2]
UNIFIED = pathlib.Path("/sys/fs/cgroup/unified")

__all__ = ["AIRLOCK_BIN", "DurableDaemon", "local_config", "sh", "wait_until",
           "alive", "proc_state", "starttime", "run_dir", "identity",
           "audit_records", "audit_events", "finished_records",
           "start_launched", "cleanup_state", "read_lines", "supervisor_log",
           "assert_no_sanitizer_reports", "run_cgroup", "idle_cgroups",
           "cgroup_tag"]


class DurableDaemon(Daemon):
    """A Daemon that can be killed with SIGKILL and started again on the
    same state directory, optionally with extra environment (the fault
    switch) or another binary (the test build)."""

    def __init__(self, tmp_path, config=None, name="d", binary=None):
        super().__init__(tmp_path, config, name=name)
        self.binary = binary or AIRLOCK_BIN
        self.starts = 0

    def start(self, expect_ok=True, timeout=15, env=None):
        self.starts += 1
        self.log_path = self.dir / ("stderr.%d.log" % self.starts)
        args = [self.binary, "--state-dir", str(self.state)]
        if self.config_path is not None:
            args += ["--config", str(self.config_path)]
        args += ["serve", "--listen", "127.0.0.1:0"]
        e = dict(os.environ)
        e.pop("AIRLOCK_FAULT", None)
        e.update(env or {})
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(args, stdout=self._log,
                                     stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, env=e)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = self.log()
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", text)
            if m:
                self.port = int(m.group(1))
                return self
            if self.proc.poll() is not None:
                if expect_ok:
                    raise AssertionError("daemon exited: " + text)
                return self
            time.sleep(0.02)
        raise AssertionError("daemon did not start: " + self.log())

    def kill9(self):
        """SIGKILL, the way a crash ends it; waits for it to be gone."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=20)
        self._log.close()
        self.proc = None

    def wait_dead(self, timeout=30):
        """Waits for the daemon to end by itself (a fault point)."""
        rc = self.proc.wait(timeout=timeout)
        self._log.close()
        self.proc = None
        return rc

    def all_logs(self):
        return "".join(p.read_text(errors="replace")
                       for p in sorted(self.dir.glob("stderr.*.log")))


def wait_until(pred, timeout=20, step=0.05, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(step)
    raise AssertionError("timed out waiting for " + what)


def proc_state(pid):
    """The state letter of a pid, or None when there is no such process."""
    try:
        text = pathlib.Path("/proc/%d/stat" % pid).read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return text[text.rindex(")") + 2]


def alive(pid):
    """True for a process that still runs (a zombie has ended)."""
    st = proc_state(pid)
    return st is not None and st not in "ZX"


def starttime(pid):
    text = pathlib.Path("/proc/%d/stat" % pid).read_text()
    return int(text[text.rindex(")") + 2:].split()[19])


def run_dir(d, run_id):
    return d.state / "runs" / run_id


def files_holding(directory, needle):
    """Files under `directory` whose bytes contain `needle`.  Call it once
    the daemon has stopped: records are rewritten through a temporary
    file renamed over them (recovery.json right after the run's answer),
    so while the daemon runs a file listed here can vanish before it is
    read."""
    return [p for p in sorted(directory.rglob("*"))
            if p.is_file() and needle in p.read_bytes()]


def identity(d, run_id):
    return json.loads((run_dir(d, run_id) / "identity.json").read_text())


def supervisor_log(d, run_id):
    p = run_dir(d, run_id) / "supervisor.log"
    return p.read_text(errors="replace") if p.exists() else ""


def run_cgroup(run_id, d=None):
    """The run's cgroup: airlock-run-<id>.<tag> (the tag comes from the
    daemon's state directory), or, for a run handed to an idle supervisor,
    the cgroup its recovery record names (airlock-run-sup-<nonce>.<tag>,
    docs/durability.md); a path that does not exist when none is."""
    if d is not None:
        try:
            rec = json.loads((run_dir(d, run_id) / "recovery.json")
                             .read_text())
            if isinstance(rec.get("cgroup"), str):
                return pathlib.Path(rec["cgroup"])
        except (OSError, ValueError):
            pass
    found = sorted(UNIFIED.glob("airlock-run-%s.*" % run_id))
    return found[0] if found else UNIFIED / ("airlock-run-%s.none" % run_id)


def audit_records(d):
    """Every audit record of the daemon's state directory, in order
    (read-only: the daemon may be running)."""
    db = sqlite3.connect("file:%s?mode=ro" % (d.state / "airlock.db"),
                         uri=True)
    try:
        rows = db.execute("SELECT record FROM audit ORDER BY seq").fetchall()
    finally:
        db.close()
    return [json.loads(r) for (r,) in rows]


def audit_events(d, run_id):
    """The audit trail's events for one run, in order."""
    return [r["event"] for r in audit_records(d) if r.get("run_id") == run_id]


def finished_records(d, run_id):
    """The run's run.finished audit records."""
    return [r for r in audit_records(d)
            if r.get("run_id") == run_id and r["event"] == "run.finished"]


def start_launched(d, req, what="the launch"):
    """Submits req without waiting for it; its run id once its supervisor
    has recorded its identity (the run is launched)."""
    st, _, body = d.run(req, wait=False)
    assert st == 202, body
    rid = body["run_id"]
    wait_until(lambda: (run_dir(d, rid) / "identity.json").exists(),
               what=what)
    return rid


def read_lines(path):
    try:
        return pathlib.Path(path).read_text().splitlines()
    except FileNotFoundError:
        return []


def assert_no_sanitizer_reports(d):
    """Supervisors write to their run's supervisor.log, the daemon to its
    own log: a sanitizer build reports leaks and errors there."""
    logs = list((d.state / "runs").glob("*/supervisor.log"))
    logs += list(d.dir.glob("stderr.*.log"))
    for log in logs:
        text = log.read_text(errors="replace")
        assert "Sanitizer" not in text and "runtime error" not in text, \
            text


def _supervisors_of(state):
    """Pids of live supervisors started on this state directory."""
    found = []
    want = str(state)
    for p in pathlib.Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            args = (p / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        args = [a.decode(errors="replace") for a in args]
        if "supervise" in args and any(a == want or a.startswith(want)
                                       for a in args):
            if alive(int(p.name)):
                found.append(int(p.name))
    return found


def cleanup_state(d):
    """Ends whatever a test left: the daemon, supervisors on its state
    directory, and the runs' cgroups."""
    if d.proc is not None and d.proc.poll() is None:
        d.proc.kill()
        d.proc.wait()
    for pid in _supervisors_of(d.state.resolve()):
        try:
            os.kill(pid, signal.SIGCONT)
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    runs = d.state / "runs"
    cgs = [run_cgroup(rd.name, d) for rd in runs.iterdir()] \
        if runs.exists() else []
    # Idle supervisors SIGKILLed above could not remove their own cgroups.
    cgs += idle_cgroups(d)
    for cg in cgs:
        if not cg.exists():
            continue
        try:
            (cg / "cgroup.kill").write_text("1")
        except OSError:
            pass
        for _ in range(200):
            try:
                for sub in sorted(cg.iterdir(), reverse=True):
                    if sub.is_dir():
                        sub.rmdir()
                cg.rmdir()
                break
            except OSError:
                time.sleep(0.01)


def cgroup_tag(d):
    """The tag of the daemon's cgroups (from its state directory)."""
    return hashlib.sha256(str(d.state.resolve()).encode()).hexdigest()[:8]


def idle_cgroups(d):
    """The idle supervisors' cgroups of this daemon's state directory."""
    return sorted(UNIFIED.glob("airlock-run-sup-*.%s" % cgroup_tag(d)))
