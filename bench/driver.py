#!/usr/bin/python3
"""airlock bench driver (bench/README.md explains the method).

Runs airlock and its peers on the same work, interleaved round-robin, and
prints medians, p90 and ratios -- never pass/fail thresholds.  Standard
library only (Debian's /usr/bin/python3).

usage: driver.py --airlock BUILD/airlock --inproc BUILD/bench/inproc
                 --out bench/results/latest.md [--quick]
"""

import argparse
import datetime
import json
import math
import os
import platform
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

DEVNULL = subprocess.DEVNULL


# ---- small helpers ------------------------------------------------------

def log(msg):
    print(f"bench: {msg}", file=sys.stderr, flush=True)


def run_text(argv, timeout=20):
    """stdout+stderr of a short command, or '' when it cannot run."""
    try:
        p = subprocess.run(argv, stdin=DEVNULL, capture_output=True,
                           text=True, timeout=timeout)
        return (p.stdout + p.stderr).strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def first_line(text):
    return text.splitlines()[0].strip() if text.strip() else ""


def median(xs):
    return statistics.median(xs) if xs else float("nan")


def p90(xs):
    if not xs:
        return float("nan")
    s = sorted(xs)
    return s[max(0, math.ceil(0.9 * len(s)) - 1)]


def p99(xs):
    if not xs:
        return float("nan")
    s = sorted(xs)
    return s[max(0, math.ceil(0.99 * len(s)) - 1)]


def fmt_ms(v):
    return "—" if v is None or math.isnan(v) else f"{v:.2f}"


def fmt_ratio(a, b):
    if a is None or b is None or math.isnan(a) or math.isnan(b) or b <= 0:
        return "—"
    return f"{a / b:.2f}×"


def vm_kb(pid, key="VmRSS"):
    """A kB figure from /proc/PID/status (VmRSS, VmHWM), or None."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def tree_rss_kb(root):
    """Summed VmRSS of root and every descendant (shared pages counted
    once per process: an upper bound)."""
    kids = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                st = f.read()
        except OSError:
            continue
        ppid = int(st[st.rindex(")") + 2:].split()[1])
        kids.setdefault(ppid, []).append(int(d))
    total, pending = 0, [root]
    while pending:
        pid = pending.pop()
        total += vm_kb(pid) or 0
        pending.extend(kids.get(pid, []))
    return total


def reset_peak_rss(pid):
    """Resets VmHWM to the current RSS (proc(5), clear_refs 5)."""
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


# ---- machine facts ------------------------------------------------------

def machine_facts(airlock):
    cpu = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = "unknown"
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    mem = f"{int(line.split()[1]) / 1048576:.1f} GiB"
                    break
    except OSError:
        pass
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    commit = run_text(["git", "-C", repo, "rev-parse", "--short", "HEAD"])
    dirty = run_text(["git", "-C", repo, "status", "--porcelain",
                      "--untracked-files=no"])
    return {
        "date": datetime.datetime.now(datetime.timezone.utc)
        .strftime("%Y-%m-%d %H:%M UTC"),
        "kernel": platform.release(),
        "cpu": cpu,
        "cores": str(os.cpu_count()),
        "memory": mem,
        "airlock": first_line(run_text([airlock, "--version"])) +
        (f" (commit {commit}{', modified' if dirty else ''})"
         if commit else ""),
        "python (driver)": platform.python_version(),
        "load average at start (1, 5, 15 min)": load_average(),
    }


def load_average():
    """Other work on the machine shows here; interleaving spreads it."""
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


# ---- interpreters: the ones airlock's sandbox would use ------------------

def sandbox_languages(airlock, state_dir):
    """language -> interpreter path, as `airlock probe` observed them."""
    out = run_text([airlock, "--state-dir", state_dir, "probe", "--json"])
    try:
        facts = json.loads(out)
    except ValueError:
        return {}
    for f in facts if isinstance(facts, list) else []:
        if f.get("provider") == "sandbox":
            return {lang["language"]: lang["path"]
                    for lang in f.get("languages", [])}
    return {}


def prefix_outside_usr(path):
    """The install prefix of an interpreter that lives outside /usr (a
    pyenv build, say), which the peers' minimal roots must also bind."""
    real = os.path.realpath(path)
    if real.startswith("/usr/"):
        return None
    return os.path.dirname(os.path.dirname(real))


# ---- workloads ----------------------------------------------------------

class Workload:
    def __init__(self, key, title, cmd, lang, code, rounds, note=""):
        self.key, self.title, self.cmd = key, title, cmd
        self.lang, self.code, self.rounds, self.note = lang, code, rounds, note

    def request(self):
        return {"language": self.lang, "code": self.code}


def workloads(langs, quick):
    fast, slow = (12, 6) if quick else (60, 25)
    py = langs.get("python") or shutil.which("python3") or "/usr/bin/python3"
    node = langs.get("javascript") or shutil.which("node") or "/usr/bin/node"
    return [
        Workload("true", "/bin/true", ["/bin/true"], "sh", "exec /bin/true",
                 fast, "airlock has no bare-binary language: its run is sh "
                 "code `exec /bin/true` (dash starts, then execs true)"),
        Workload("sh-true", "sh -c true", ["/bin/sh", "-c", "true"], "sh",
                 "true", fast),
        Workload("echo", "sh -c 'echo 1'", ["/bin/sh", "-c", "echo 1"], "sh",
                 "echo 1", fast),
        Workload("python", "python hello world",
                 [py, "-c", 'print("hello world")'], "python",
                 'print("hello world")', slow,
                 f"interpreter {py} for every variant (the one airlock's "
                 "probe selected)"),
        Workload("node", "node hello world",
                 [node, "-e", 'console.log("hello world")'], "javascript",
                 'console.log("hello world")', slow, f"interpreter {node}"),
    ]


# ---- variants -----------------------------------------------------------

class Result:
    """Samples of one variant on one workload."""

    def __init__(self):
        self.ms = []
        self.failures = 0


class Variant:
    """kind: 'spawn' (a command per run), 'inproc' (a line to bench/inproc)
    or 'http' (POST to airlockd).  skip: why it is not measured."""

    def __init__(self, name, kind, describe):
        self.name, self.kind, self.describe = name, kind, describe
        self.skip = None
        self.version = ""

    def argv(self, w):  # spawn only
        raise NotImplementedError

    def supports(self, w):
        return True

    def once(self, w):
        """Returns (ms, ok)."""
        argv = self.argv(w)
        t0 = time.perf_counter_ns()
        p = subprocess.run(argv, stdin=DEVNULL, stdout=DEVNULL,
                           stderr=DEVNULL, check=False)
        t1 = time.perf_counter_ns()
        return (t1 - t0) / 1e6, p.returncode == 0

    def smoke(self, w):
        """None when a run works, else why not."""
        try:
            p = subprocess.run(self.argv(w), stdin=DEVNULL,
                               capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.SubprocessError) as e:
            return f"cannot start: {e}"
        if p.returncode != 0:
            why = first_line(p.stderr) or first_line(p.stdout)
            return f"smoke run exited {p.returncode}: {why[:160]}"
        return None


class Bare(Variant):
    def __init__(self):
        super().__init__("bare", "spawn", "the command itself")

    def argv(self, w):
        return list(w.cmd)


class Unshare(Variant):
    def __init__(self):
        super().__init__("unshare", "spawn",
                         "`unshare -Urpmn --fork CMD` (util-linux)")
        self.version = first_line(run_text(["unshare", "--version"]))

    def argv(self, w):
        return ["unshare", "-Urpmn", "--fork"] + w.cmd


class Bwrap(Variant):
    def __init__(self, extra_prefixes):
        super().__init__(
            "bwrap", "spawn",
            "`bwrap --unshare-all --die-with-parent --new-session "
            "--ro-bind /usr /usr` + /bin,/lib,/lib64,/sbin symlinks, "
            "`--proc /proc --dev /dev --tmpfs /tmp` (+ ro-bind of an "
            "interpreter prefix outside /usr) `CMD`")
        self.extra = extra_prefixes
        self.version = first_line(run_text(["bwrap", "--version"]))

    def argv(self, w):
        a = ["bwrap", "--unshare-all", "--die-with-parent", "--new-session",
             "--ro-bind", "/usr", "/usr"]
        for d in ("bin", "lib", "lib64", "sbin"):
            if os.path.islink("/" + d):
                a += ["--symlink", "usr/" + d, "/" + d]
        for p in self.extra:
            a += ["--ro-bind", p, p]
        a += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
              "--chdir", "/tmp"]
        return a + w.cmd


class Firejail(Variant):
    def __init__(self):
        super().__init__("firejail", "spawn",
                         "`firejail --quiet --noprofile --net=none CMD`")
        self.version = first_line(run_text(["firejail", "--version"]))

    def argv(self, w):
        return ["firejail", "--quiet", "--noprofile", "--net=none"] + w.cmd


class OciRuntime(Variant):
    """runc or crun with one bundle per workload: a read-only rootfs of
    symlinks and mount points, the host's /usr (and an interpreter prefix
    outside it) bound read-only, a tmpfs /tmp, the spec's default
    namespaces (pid, mount, ipc, uts, network)."""

    def __init__(self, tool, workdir, extra_prefixes):
        super().__init__(tool, "spawn",
                         f"`{tool} --root STATE run --bundle B ID`, "
                         "bundle from `runc spec`: ro rootfs, host /usr "
                         "bound ro, tmpfs /tmp")
        self.tool = tool
        self.extra = extra_prefixes
        self.base = os.path.join(workdir, tool)
        self.state = os.path.join(self.base, "state")
        self.rootfs = os.path.join(self.base, "rootfs")
        self.bundles = {}
        self.seq = 0
        self.lock = threading.Lock()
        self.version = first_line(run_text([tool, "--version"]))

    def prepare(self, works):
        os.makedirs(self.state, exist_ok=True)
        for d in ["usr", "proc", "dev", "sys", "tmp"] + \
                [p.lstrip("/") for p in self.extra]:
            os.makedirs(os.path.join(self.rootfs, d), exist_ok=True)
        for d in ("bin", "lib", "lib64", "sbin"):
            if os.path.islink("/" + d):
                os.symlink("usr/" + d, os.path.join(self.rootfs, d))
        spec_dir = os.path.join(self.base, "spec")
        os.makedirs(spec_dir)
        # `runc spec` writes the default config.json (crun has no spec
        # command of its own that we rely on; the OCI format is shared).
        if subprocess.run(["runc", "spec"], cwd=spec_dir, stdin=DEVNULL,
                          stdout=DEVNULL, stderr=DEVNULL).returncode != 0:
            return "`runc spec` failed"
        with open(os.path.join(spec_dir, "config.json")) as f:
            spec = json.load(f)
        for w in works:
            c = json.loads(json.dumps(spec))
            c["process"]["args"] = list(w.cmd)
            c["process"]["terminal"] = False
            c["root"] = {"path": self.rootfs, "readonly": True}
            mounts = c.setdefault("mounts", [])
            for src in ["/usr"] + self.extra:
                mounts.append({"destination": src, "type": "bind",
                               "source": src, "options": ["rbind", "ro"]})
            mounts.append({"destination": "/tmp", "type": "tmpfs",
                           "source": "tmpfs",
                           "options": ["nosuid", "nodev", "size=64m"]})
            b = os.path.join(self.base, "bundle-" + w.key)
            os.makedirs(b)
            with open(os.path.join(b, "config.json"), "w") as f:
                json.dump(c, f, indent=1)
            self.bundles[w.key] = b
        return None

    def argv(self, w):
        with self.lock:
            self.seq += 1
            cid = f"alb-{os.getpid()}-{self.seq}"
        return [self.tool, "--root", self.state, "run", "--bundle",
                self.bundles[w.key], cid]


class AirlockCli(Variant):
    def __init__(self, airlock, state_dir):
        super().__init__("airlock run", "spawn",
                         "`airlock --state-dir TMP run -p sandbox -l LANG "
                         "-e CODE` (the whole CLI process: config, host "
                         "pipeline, audit to SQLite, sandbox)")
        self.airlock, self.state_dir = airlock, state_dir

    def argv(self, w):
        return [self.airlock, "--state-dir", self.state_dir, "run",
                "-p", "sandbox", "-l", w.lang, "-e", w.code]


# ---- the floor by components (issue 21) --------------------------------
# What a run through the CLI or the API cannot do without on this machine,
# each measured alone in the throughput slices: airlock's mechanisms with
# no bookkeeping (bench/floor), a process start of the airlock binary, an
# HTTP round trip to airlockd, and one durable sync.  bench/README.md,
# "The floor by components", says how they add up.

FLOOR_VARIANT = "+lsm"  # bench/floor's airlock's whole per-run floor
# Syncs a run needs by its durability promise (docs/performance.md,
# "Syncs", counted there with perf stat): the CLI's audit records
# run.started and run.finished; the API's run.started, the run's record
# and its directory before the launch, and the result's file.
SYNCS = {"cli": 2, "api": 4}
# The variants run alone take turns with bwrap this many times (their
# reference is bwrap's slices between theirs): bwrap's own runs/s moved
# by a quarter between two single slices of one bench.
ALONE_TURNS = 2
REFUSED_EXIT = 125  # the CLI's exit status when no process ran (README)
C_FLOOR = "floor: airlock's mechanisms"
C_START = "a process start: `airlock --version`"
C_REFUSED = "a refused CLI run: `airlock run -p disabled`"
C_HTTP = "an HTTP round trip: `GET /v1/health`"
C_SYNC = "a durable sync: 4 KiB written, `fdatasync`"


def floor_throughput(floor, workers, seconds):
    """`workers` bench/floor processes looping FLOOR_VARIANT until the
    deadline (SIGINT: each finishes its run and prints its table)."""
    env = dict(os.environ, FLOOR_ONLY=FLOOR_VARIANT)
    t0 = time.perf_counter()
    ps = [subprocess.Popen([floor, "1000000", "/bin/sh", "-c", "true"],
                           env=env, stdin=DEVNULL, stdout=subprocess.PIPE,
                           stderr=DEVNULL, text=True)
          for _ in range(workers)]
    time.sleep(seconds)
    for p in ps:
        p.send_signal(signal.SIGINT)
    n = bad = 0
    row = re.compile(r"^\| " + re.escape(FLOOR_VARIANT) +
                     r" \| (\d+) \|.*\| (\d+) \|$", re.M)
    for p in ps:
        try:
            out, _ = p.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            out, _ = p.communicate()
        m = row.search(out or "")
        if m:
            n += int(m.group(1))
            bad += int(m.group(2))
        else:
            bad += 1
    return n, time.perf_counter() - t0, bad


class ProcStart(Variant):
    def __init__(self, airlock):
        super().__init__(C_START, "spawn", "")
        self.airlock = airlock

    def argv(self, w):
        return [self.airlock, "--version"]


class RefusedRun(Variant):
    """A CLI run refused by its provider: the process start, the
    configuration, the state directory's checks, the audit database's
    first open in a process and one durable audit commit (the refusal).
    Every CLI run does all of it before its sandbox starts, with
    `run.started` as its commit."""

    def __init__(self, airlock, state_dir):
        super().__init__(C_REFUSED, "spawn",
                         "`airlock --state-dir TMP run -p disabled -l LANG "
                         "-e CODE` (the CLI variant's state directory): "
                         "refused by its provider, no process runs; sh -c "
                         "true only, a part of the floor by components")
        self.airlock, self.state_dir = airlock, state_dir

    def supports(self, w):
        return w.key == "sh-true"

    def argv(self, w):
        return [self.airlock, "--state-dir", self.state_dir, "run",
                "-p", "disabled", "-l", w.lang, "-e", w.code]

    def once(self, w):
        t0 = time.perf_counter_ns()
        p = subprocess.run(self.argv(w), stdin=DEVNULL, stdout=DEVNULL,
                           stderr=subprocess.PIPE, text=True, check=False)
        t1 = time.perf_counter_ns()
        return (t1 - t0) / 1e6, (p.returncode == REFUSED_EXIT and
                                 "provider_disabled" in p.stderr)

    def smoke(self, w):
        return None if self.once(w)[1] else (
            "`airlock run -p disabled` did not end refused "
            f"(exit {REFUSED_EXIT}, provider_disabled)")


class Health(Variant):
    """GET /v1/health, a new connection each (as the API variant posts)."""

    def __init__(self, daemon):
        super().__init__(C_HTTP, "http", "")
        self.daemon = daemon

    def once(self, w):
        t0 = time.perf_counter_ns()
        try:
            with urllib.request.urlopen(self.daemon.url + "/v1/health",
                                        timeout=10) as r:
                r.read()
                ok = r.status == 200
        except (OSError, ValueError):
            ok = False
        return (time.perf_counter_ns() - t0) / 1e6, ok

    def smoke(self, w):
        return None if self.once(w)[1] else "GET /v1/health failed"


class Sync(Variant):
    """4 KiB written and fdatasync'd, a file per thread, on the state
    directory's file system (as an audit commit or a record is)."""

    def __init__(self, directory):
        super().__init__(C_SYNC, "file", "")
        self.directory = directory
        self.fds = {}
        self.lock = threading.Lock()
        self.block = b"a" * 4096

    def once(self, w):
        me = threading.get_ident()
        with self.lock:
            fd = self.fds.get(me)
            if fd is None:
                fd = os.open(os.path.join(self.directory,
                                          f"sync-{len(self.fds)}"),
                             os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600)
                self.fds[me] = [fd, 0]
                fd = self.fds[me]
        t0 = time.perf_counter_ns()
        os.pwrite(fd[0], self.block, (fd[1] % 64) * 4096)
        fd[1] += 1
        os.fdatasync(fd[0])
        return (time.perf_counter_ns() - t0) / 1e6, True

    def close(self):
        for fd, _ in self.fds.values():
            os.close(fd)
        self.fds = {}


class InProc(Variant):
    """A line to the long-lived bench/inproc; it times the call itself."""

    def __init__(self, name, mode, proc, describe):
        super().__init__(name, "inproc", describe)
        self.mode, self.proc = mode, proc

    def once(self, w):
        reply = self.proc.ask(f"{self.mode} {json.dumps(w.request())}")
        ns, outcome = reply.split()
        return int(ns) / 1e6, outcome == "completed"

    def smoke(self, w):
        _, ok = self.once(w)
        return None if ok else "smoke run did not complete (see inproc log)"


class Api(Variant):
    """POST /v1/runs?wait=true to airlockd, end to end (urllib, one
    connection per request)."""

    def __init__(self, daemon, name="airlock API", extra=""):
        super().__init__(name, "http",
                         "`POST /v1/runs?wait=true` to `airlock serve` on "
                         "loopback (urllib, new connection per request)" +
                         extra)
        self.daemon = daemon
        self.unexpected = {}  # "outcome (reason)" -> count
        self.lock = threading.Lock()

    def once(self, w):
        t0 = time.perf_counter_ns()
        res = self.daemon.post(w.request())
        t1 = time.perf_counter_ns()
        ok = res.get("outcome") == "completed"
        if not ok:
            key = f"{res.get('outcome')} ({res.get('reason')})"
            with self.lock:
                self.unexpected[key] = self.unexpected.get(key, 0) + 1
        return (t1 - t0) / 1e6, ok

    def smoke(self, w):
        try:
            _, ok = self.once(w)
        except (OSError, ValueError) as e:
            return f"request failed: {e}"
        return None if ok else "smoke run did not complete"


# ---- the long-lived in-process helper -----------------------------------

class InProcHelper:
    def __init__(self, binary, state_dir, log_path, pool=None):
        self.log = open(log_path, "a")
        extra = [json.dumps({"pool": pool})] if pool else []
        self.p = subprocess.Popen([binary, state_dir] + extra,
                                  stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=self.log,
                                  text=True, bufsize=1)
        ready = self.p.stdout.readline().strip()
        if ready != "ready":
            self.close()
            raise RuntimeError("bench/inproc did not start (see its log)")

    def ask(self, line):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()
        reply = self.p.stdout.readline()
        if not reply:
            raise RuntimeError("bench/inproc exited")
        return reply.strip()

    def close(self):
        if self.p.poll() is None:
            try:
                self.p.stdin.write("Q\n")
                self.p.stdin.close()
            except OSError:
                pass
            try:
                self.p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        self.log.close()


# ---- airlockd -----------------------------------------------------------

def have_serve(airlock):
    try:
        return subprocess.run([airlock, "serve", "--help"], stdin=DEVNULL,
                              stdout=DEVNULL, stderr=DEVNULL,
                              timeout=10).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


POOL_API = "airlock API, warm pool"
API_WIDE = "4 client threads (bwrap: 4 workers)"
POOL_CONFIG = {"python": {"size": 2}, "javascript": {"size": 2},
               "sh": {"size": 2}}


def pool_daemon_config(state_dir):
    """al_config_default's shape, with the sandbox provider's pool on."""
    return {
        "state_dir": state_dir,
        "providers": [{"provider": "sandbox",
                       "config": {"pool": POOL_CONFIG}}],
        "tenants": {"default": {
            "languages": "*",
            "grant": {"network": ["none", "loopback", "host"],
                      "workspace": ["none", "ro", "rw"], "secrets": [],
                      "streaming": True}}},
    }


class Daemon:
    def __init__(self, airlock, state_dir, log_path, config=None):
        self.state_dir = state_dir
        self.log_path = log_path
        cfg = ["--config", config] if config else []
        self.p = subprocess.Popen(
            [airlock, "--state-dir", state_dir] + cfg +
            ["serve", "--listen", "127.0.0.1:0"], stdin=DEVNULL,
            stdout=DEVNULL, stderr=subprocess.PIPE, text=True)
        self.url = None
        found = threading.Event()

        def pump():
            with open(log_path, "a") as logf:
                for line in self.p.stderr:
                    logf.write(line)
                    logf.flush()
                    m = re.search(r"listening on (http://[0-9.:\[\]]+)", line)
                    if m and self.url is None:
                        self.url = m.group(1)
                        found.set()
            found.set()  # it exited without listening: stop waiting
        self.pump = threading.Thread(target=pump, daemon=True)
        self.pump.start()
        if not found.wait(20) or self.url is None:
            self.stop()
            raise RuntimeError("airlock serve printed no listening address")
        tok = os.path.join(state_dir, "token")
        for _ in range(100):
            if os.path.exists(tok):
                break
            time.sleep(0.05)
        with open(tok) as f:
            self.token = f.read().strip()
        for _ in range(100):
            try:
                with urllib.request.urlopen(self.url + "/v1/health",
                                            timeout=5) as r:
                    if r.status == 200:
                        break
            except (OSError, ValueError):
                time.sleep(0.05)
        time.sleep(0.5)  # let start-up settle, then: idle, no run yet
        self.idle_kb = self.rss_kb()

    def post(self, req):
        body = json.dumps(req).encode()
        r = urllib.request.Request(
            self.url + "/v1/runs?wait=true", data=body, method="POST",
            headers={"Authorization": "Bearer " + self.token,
                     "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(r, timeout=60) as resp:
                return json.loads(resp.read())
        except urllib.error.HTTPError as e:
            try:
                return json.loads(e.read())
            except ValueError:
                return {"outcome": f"http_{e.code}"}

    def rss_kb(self, key="VmRSS"):
        return vm_kb(self.p.pid, key)

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        self.pump.join(timeout=5)


# ---- measurement --------------------------------------------------------

def latency(w, variants, warmup):
    """Interleaved round-robin: every round runs each variant once, the
    starting variant rotating so none always follows the same neighbour."""
    active = [v for v in variants if v.skip is None and v.supports(w)]
    results = {v.name: Result() for v in active}
    for r in range(w.rounds + warmup):
        k = r % len(active) if active else 0
        for v in active[k:] + active[:k]:
            ms, ok = v.once(w)
            if r < warmup:
                continue
            res = results[v.name]
            if ok:
                res.ms.append(ms)
            else:
                res.failures += 1
    return results


def spawn_throughput(v, w, workers, seconds):
    """workers threads each looping the variant for `seconds`."""
    counts = [0] * workers
    bad = [0] * workers
    deadline = time.perf_counter() + seconds

    def loop(i):
        while time.perf_counter() < deadline:
            _, ok = v.once(w)
            counts[i] += 1
            bad[i] += 0 if ok else 1
    t0 = time.perf_counter()
    ts = [threading.Thread(target=loop, args=(i,)) for i in range(workers)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return sum(counts), time.perf_counter() - t0, sum(bad)


def cpu_busy_s():
    """Busy CPU seconds of the whole machine since boot, from the first
    line of /proc/stat: user + nice + system + irq + softirq + steal (the
    total of the first eight fields minus idle and iowait; guest time is
    already inside user and nice).  None when /proc/stat is unreadable."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != "cpu" or len(fields) < 6:
        return None
    j = [int(x) for x in fields[1:9]]
    return (sum(j) - j[3] - j[4]) / os.sysconf("SC_CLK_TCK")


def with_cpu(fn, seconds):
    """Runs one throughput slice between two reads of /proc/stat; returns
    its (runs, elapsed, not completed) and the machine's busy CPU seconds
    and wall seconds between the two reads (busy None when unreadable)."""
    c0, t0 = cpu_busy_s(), time.monotonic()
    n, el, bad = fn(seconds)
    c1, t1 = cpu_busy_s(), time.monotonic()
    busy = c1 - c0 if c0 is not None and c1 is not None else None
    return n, el, bad, busy, t1 - t0


def inproc_throughput(helpers, mode, threads, seconds, w):
    """Each helper process runs `threads` threads for `seconds`."""
    line = f"T {mode} {threads} {int(seconds * 1000)} {json.dumps(w.request())}"
    for h in helpers:
        h.p.stdin.write(line + "\n")
        h.p.stdin.flush()
    runs = bad = 0
    elapsed = 0.0
    for h in helpers:
        n, ns, b = (int(x) for x in h.p.stdout.readline().split())
        runs, bad = runs + n, bad + b
        elapsed = max(elapsed, ns / 1e9)
    return runs, elapsed, bad


# ---- the run ------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--airlock", required=True)
    ap.add_argument("--inproc", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--floor",
                    help="bench/floor, for the floor by components")
    ap.add_argument("--quick", action="store_true",
                    help="few rounds and short throughput (a smoke run)")
    args = ap.parse_args()
    started = time.monotonic()
    quick = args.quick
    warmup = 2 if quick else 3
    tp_long, tp_short = (2.0, 1.0) if quick else (10.0, 5.0)
    tp_slice = 1.0 if quick else 2.0

    # State where a service keeps it (persistent storage, not the /tmp
    # that other jobs churn), and a cache of airlock's own observations
    # that no other build on the machine shares or evicts.
    work = tempfile.mkdtemp(prefix="airlock-bench-",
                            dir="/var/tmp" if os.path.isdir("/var/tmp")
                            else None)
    cache = os.path.join(work, "cache")
    os.makedirs(cache, mode=0o700)
    os.environ["AIRLOCK_CACHE_DIR"] = cache
    # what run() starts, stopped here whatever happens
    helpers, daemons = [], []
    try:
        return run(args, work, quick, warmup, (tp_long, tp_short, tp_slice),
                   started, helpers, daemons)
    finally:
        for h in helpers:
            h.close()
        for d in daemons:
            d.stop()
        for f in ("inproc.log", "daemon.log"):
            p = os.path.join(work, f)
            if os.path.exists(p) and os.path.getsize(p) > 0:
                with open(p) as fh:
                    tail = fh.read().strip().splitlines()[-5:]
                log(f"{f} (last lines): " + " | ".join(tail))
        shutil.rmtree(work, ignore_errors=True)


def run(args, work, quick, warmup, tp_times, started, helpers, daemons):
    tp_long, tp_short, tp_slice = tp_times
    airlock = os.path.abspath(args.airlock)
    facts = machine_facts(airlock)
    state = os.path.join(work, "state")
    os.makedirs(state, mode=0o700)
    langs = sandbox_languages(airlock, state)
    works = workloads(langs, quick)
    extra = sorted({p for p in (prefix_outside_usr(w.cmd[0]) for w in works)
                    if p})
    inproc_log = os.path.join(work, "inproc.log")

    variants = [Bare()]
    for tool, make in (("unshare", Unshare), ("bwrap", lambda: Bwrap(extra)),
                       ("firejail", Firejail),
                       ("runc", lambda: OciRuntime("runc", work, extra)),
                       ("crun", lambda: OciRuntime("crun", work, extra))):
        if shutil.which(tool) is None:
            v = Variant(tool, "spawn", "")
            v.skip = f"`{tool}` not installed"
            variants.append(v)
            continue
        v = make()
        if isinstance(v, OciRuntime):
            if shutil.which("runc") is None:
                v.skip = "needs `runc spec` to write the bundle"
            else:
                v.skip = v.prepare(works)
        variants.append(v)
    variants.append(AirlockCli(airlock, state))
    refused_v = RefusedRun(airlock, state)
    refused_v.skip = refused_v.smoke(
        next(w for w in works if w.key == "sh-true"))
    variants.append(refused_v)

    inproc_state = os.path.join(work, "inproc-state")
    os.makedirs(inproc_state, mode=0o700)
    main_helper = InProcHelper(args.inproc, inproc_state, inproc_log,
                               POOL_CONFIG)
    helpers.append(main_helper)
    inproc_rss0 = main_helper.ask("M")
    variants.append(InProc(
        "airlock lib: provider", "P", main_helper,
        "bench/inproc: `execute` on an ensured `sandbox` handle "
        "(public API, no host, no audit)"))
    variants.append(InProc(
        "airlock lib: host", "H", main_helper,
        "bench/inproc: `al_host_run` (default config, provider "
        "`sandbox`, every gate, audit to SQLite)"))
    variants.append(InProc(
        "airlock lib: provider, warm pool", "W", main_helper,
        "bench/inproc: `execute` on a second `sandbox` handle ensured with "
        f"`{json.dumps({'pool': POOL_CONFIG})}` (a member is refilled "
        "after each pooled run, in the background)"))

    daemon_note = None
    daemon = None
    if have_serve(airlock):
        dstate = os.path.join(work, "daemon-state")
        os.makedirs(dstate, mode=0o700)
        try:
            daemon = Daemon(airlock, dstate, os.path.join(work, "daemon.log"))
            daemons.append(daemon)
        except (RuntimeError, OSError) as e:
            daemon_note = f"`airlock serve` did not start: {e}"
        if daemon is not None:
            variants.append(Api(daemon))
    else:
        daemon_note = ("`airlock serve` is not in this build "
                       "(`airlock serve --help` fails): no API figures")
    # The same daemon with warm pools on (the sandbox provider's "pool"
    # config, docs/sandbox.md): runs of a pooled language take a sandbox
    # whose interpreter was started ahead of the request.
    pool_daemon = None
    pool_variant = Api(None, POOL_API,
                       "; config: sandbox provider with "
                       f"`{json.dumps(POOL_CONFIG)}`")
    variants.append(pool_variant)
    if daemon is None:
        pool_variant.skip = daemon_note or "no daemon"
    else:
        pstate = os.path.join(work, "pool-state")
        os.makedirs(pstate, mode=0o700)
        cfg_path = os.path.join(work, "pool-config.json")
        with open(cfg_path, "w") as f:
            json.dump(pool_daemon_config(pstate), f)
        try:
            pool_daemon = Daemon(airlock, pstate,
                                 os.path.join(work, "daemon.log"), cfg_path)
            daemons.append(pool_daemon)
            pool_variant.daemon = pool_daemon
        except (RuntimeError, OSError) as e:
            pool_variant.skip = (f"`airlock serve` with a pool config did "
                                 f"not start: {e}")

    # Smoke every variant on the first workload; a failing peer is
    # skipped with its reason.
    for v in variants:
        if v.skip is None:
            v.skip = v.smoke(works[0])
            if v.skip:
                log(f"{v.name}: skipped: {v.skip}")

    # ---- latency
    lat = {}
    for w in works:
        log(f"latency: {w.title} ({w.rounds} rounds + {warmup} warm-up)")
        lat[w.key] = latency(w, variants, warmup)

    # ---- throughput, interleaved in slices like the latency rounds
    tp = []
    tw = next(w for w in works if w.key == "sh-true")
    by_name = {v.name: v for v in variants}
    second = InProcHelper(args.inproc, inproc_state, inproc_log)
    helpers.append(second)
    pair = [main_helper, second]
    spawn_how = "2 driver threads, a process per run"
    entries = []  # (name, how, run one slice of s seconds)
    for name in ("bare", "bwrap", "airlock run"):
        v = by_name.get(name)
        if v is None or v.skip:
            tp.append((name, spawn_how, None, 0, 0,
                       v.skip if v else "absent", None, None))
            continue
        entries.append((name, spawn_how,
                        lambda s, v=v: spawn_throughput(v, tw, 2, s)))
    entries.append(("airlock lib: provider", "2 processes × 1 thread",
                    lambda s: inproc_throughput(pair, "P", 1, s, tw)))
    entries.append(("airlock lib: host",
                    "2 processes × 1 thread, one state dir",
                    lambda s: inproc_throughput(pair, "H", 1, s, tw)))
    # The floor by components, in the same slices.
    components = {}  # name -> why skipped (None: measured)
    floor = os.path.abspath(args.floor) if args.floor else None
    if floor is None or not os.access(floor, os.X_OK):
        components[C_FLOOR] = "bench/floor not built"
    elif os.geteuid() != 0:
        components[C_FLOOR] = "bench/floor's airlock layers need root"
    else:
        components[C_FLOOR] = None
        entries.append((C_FLOOR, "2 processes (bench/floor `+lsm`)",
                        lambda s: floor_throughput(floor, 2, s)))
    start_v = ProcStart(airlock)
    components[C_START] = start_v.smoke(tw)
    if components[C_START] is None:
        entries.append((C_START, spawn_how,
                        lambda s: spawn_throughput(start_v, tw, 2, s)))
    components[C_REFUSED] = refused_v.skip
    if components[C_REFUSED] is None:
        entries.append((C_REFUSED, spawn_how,
                        lambda s: spawn_throughput(refused_v, tw, 2, s)))
    if daemon is not None and by_name["airlock API"].skip is None:
        health_v = Health(daemon)
        components[C_HTTP] = health_v.smoke(tw)
    else:
        components[C_HTTP] = "no daemon"
    if components[C_HTTP] is None:
        entries.append((C_HTTP, "2 client threads",
                        lambda s: spawn_throughput(health_v, tw, 2, s)))
    sync_dir = os.path.join(work, "syncs")
    os.makedirs(sync_dir, mode=0o700)
    sync_v = Sync(sync_dir)
    components[C_SYNC] = None
    entries.append((C_SYNC, "2 threads",
                    lambda s: spawn_throughput(sync_v, tw, 2, s)))
    slices = max(1, round(tp_long / tp_slice))
    log(f"throughput: {len(entries)} variants × {slices} interleaved "
        f"slices of {tp_slice:g} s")
    # per variant: runs, elapsed, not completed, busy CPU s, CPU wall s
    sums = {name: [0, 0.0, 0, 0.0, 0.0] for name, _, _ in entries}
    for k in range(slices):
        order = entries[k % len(entries):] + entries[:k % len(entries)]
        for name, _, fn in order:
            got = with_cpu(fn, tp_slice)
            acc = sums[name]
            for i, x in enumerate(got):
                acc[i] = None if x is None or acc[i] is None else acc[i] + x
    sync_v.close()
    for name, how, _ in entries:
        n, el, bad, busy, wall = sums[name]
        tp.append((name, how, n, el, bad, "",
                   None if busy is None else (busy, wall), None))
    for name, why in components.items():
        if why is not None:
            tp.append((name, "—", None, 0, 0, why, None, None))
    # Runs on two threads of one process (the daemon, a threaded
    # embedder) go alone and last: a stalled run there must not distort
    # the others' slices.  Each takes turns with bwrap slices of its own
    # length and is compared with them: the machine drifts over the
    # bench, and these come last.
    bw = by_name.get("bwrap")

    def alone(name, how, fn, workers=2):
        """ALONE_TURNS turns of a bwrap slice (of `workers` workers) then
        the variant's, each half as long: the reference is bwrap's runs/s
        over its slices."""
        log(f"throughput: {name}, {how} ({tp_short:g} s, alternated with "
            "bwrap)")
        rn, rel = 0, 0.0
        n, el, bad, busy, wall = 0, 0.0, 0, 0.0, 0.0
        for _ in range(ALONE_TURNS):
            if bw is not None and bw.skip is None:
                got = with_cpu(
                    lambda s: spawn_throughput(bw, tw, workers, s),
                    tp_short / ALONE_TURNS)
                rn, rel = rn + got[0], rel + got[1]
            vn, vel, vbad, vbusy, vwall = with_cpu(fn,
                                                   tp_short / ALONE_TURNS)
            n, el, bad, wall = n + vn, el + vel, bad + vbad, wall + vwall
            busy = None if busy is None or vbusy is None else busy + vbusy
        ref = rn / rel if rn and rel > 0 else None
        tp.append((name, how, n, el, bad, "",
                   None if busy is None else (busy, wall), ref))

    api = by_name.get("airlock API")
    if api is not None and api.skip is None:
        alone("airlock API", "2 client threads",
              lambda s: spawn_throughput(api, tw, 2, s))
        # Two synchronous clients leave the cores idle while each waits
        # for its answer; four show the service's cost per run when the
        # cores are kept busy (bwrap's slices then have four workers).
        alone("airlock API", API_WIDE,
              lambda s: spawn_throughput(api, tw, 4, s), workers=4)
    if pool_variant.skip is None:
        alone(POOL_API, "2 client threads",
              lambda s: spawn_throughput(pool_variant, tw, 2, s))
    alone("airlock lib: provider", "1 process × 2 threads",
          lambda s: inproc_throughput([main_helper], "P", 2, s, tw))

    # ---- daemon memory
    dmem = None
    if daemon is not None and by_name["airlock API"].skip is None:
        pyw = next(w for w in works if w.key == "python")
        nruns = 40 if quick else 200
        log(f"daemon: {nruns} sequential python runs")
        time.sleep(1.0)
        before = daemon.rss_kb()
        peak_ok = reset_peak_rss(daemon.p.pid)
        ms = []
        bad = 0
        for _ in range(nruns):
            t, ok = by_name["airlock API"].once(pyw)
            ms.append(t)
            bad += 0 if ok else 1
        after = daemon.rss_kb()
        peak = daemon.rss_kb("VmHWM") if peak_ok else None
        dmem = {"idle_kb": daemon.idle_kb, "before_kb": before,
                "after_kb": after, "peak_kb": peak, "n": nruns,
                "p50": median(ms), "p99": p99(ms), "bad": bad}

    # ---- warm pool: python hello, sequential, with a pause between runs
    # so the pool refills (a request rate the pool is sized for)
    pmem = None
    if pool_variant.skip is None:
        pyw = next(w for w in works if w.key == "python")
        nruns = 30 if quick else 100
        bare_v = by_name.get("bare")
        paired = bare_v is not None and bare_v.skip is None
        log(f"warm pool: {nruns} sequential python runs, 0.2 s apart"
            + (", each after a bare python run" if paired else ""))
        time.sleep(1.0)
        tree_kb = tree_rss_kb(pool_daemon.p.pid)
        ms, bare_ms = [], []
        bad = 0
        for _ in range(nruns):
            # The bare reference in the same window and at the same pace:
            # what the machine still digests from the throughput rounds
            # (network namespaces torn down by kernel workers, for one)
            # then weighs on both sides of the ratio alike.
            if paired:
                time.sleep(0.2)
                t, ok = bare_v.once(pyw)
                if ok:
                    bare_ms.append(t)
            time.sleep(0.2)
            t, ok = pool_variant.once(pyw)
            ms.append(t)
            bad += 0 if ok else 1
        pmem = {"n": nruns, "p50": median(ms), "p99": p99(ms), "bad": bad,
                "idle_kb": pool_daemon.idle_kb, "tree_kb": tree_kb,
                "bare_p50": median(bare_ms) if bare_ms else None,
                "bare_n": len(bare_ms)}

    # inproc RSS growth over everything it ran
    inproc_rss = main_helper.ask("M")

    elapsed = time.monotonic() - started
    facts["load average at end (1, 5, 15 min)"] = load_average()
    api_notes = dict(api.unexpected) if api is not None else {}
    for k, v in pool_variant.unexpected.items():
        api_notes[f"{POOL_API}: {k}"] = v
    md = render(facts, variants, works, lat, warmup, tp, tw, dmem,
                (daemon_note, api_notes), (inproc_rss0, inproc_rss), elapsed, quick,
                inproc_log, pmem)
    print(md)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        f.write(md)
    log(f"wrote {args.out} ({elapsed:.0f} s)")
    return 0


# ---- the report ---------------------------------------------------------

def short_cmd(v, w):
    if v.kind == "inproc":
        return f"request `{json.dumps(w.request())}`"
    if v.kind == "http":
        return f"POST `{json.dumps(w.request())}`"
    if isinstance(v, AirlockCli):
        return (f"`airlock run -p sandbox -l {w.lang} "
                f"-e {shlex.quote(w.code)}`")
    if isinstance(v, RefusedRun):
        return (f"`airlock run -p disabled -l {w.lang} "
                f"-e {shlex.quote(w.code)}`")
    cmd = shlex.join(w.cmd)
    if isinstance(v, Bwrap):
        return f"`bwrap --unshare-all … {cmd}`"
    if isinstance(v, OciRuntime):
        return f"`{v.tool} run`, process `{cmd}`"
    return f"`{shlex.join(v.argv(w))}`"


def render_latency_floor(L, lat_sh):
    """A CLI run's latency against the wall time of what it cannot do
    without: a refused CLI run and the library's provider path, medians
    of the same interleaved rounds (sh -c true)."""
    need = ("bwrap", "airlock run", C_REFUSED, "airlock lib: provider")
    if any(not lat_sh.get(k) or not lat_sh[k].ms for k in need):
        return
    bw, cli, ref, lib = (median(lat_sh[k].ms) for k in need)
    floor = ref + lib
    L.append("Latency, from the sh -c true rounds (medians): a CLI run's "
             "floor is a refused CLI run (its process start, "
             "configuration, the audit database's first open and "
             "`run.started`'s commit) followed by the library's provider "
             "path (the sandbox's own work on an ensured handle).  It "
             "leaves out the selection's probe of the host, the second "
             "commit and the process's exit.")
    L.append("")
    L.append("| run | floor: its parts | floor median ms | floor / bwrap | "
             "measured median ms | measured / floor |")
    L.append("|---|---|---|---|---|---|")
    L.append(f"| bwrap `--unshare-all … sh -c true` | itself | {bw:.2f} | "
             f"1.00× | — | — |")
    L.append(f"| `airlock run` | a refused CLI run ({ref:.2f}) + the "
             f"library's provider path ({lib:.2f}) | {floor:.2f} | "
             f"{floor / bw:.2f}× | {cli:.2f} | {cli / floor:.2f}× |")
    L.append("")


def render_floor(L, parts, tp_cpu, ncpu):
    """The floor by components: what a CLI run and an API run cannot do
    without, each part measured alone in the throughput slices, added up
    against bwrap's CPU per run (bench/README.md)."""
    L.append("## The floor by components: CPU per run, sh -c true")
    L.append("")
    L.append("What a run cannot do without on this machine, each part "
             "measured alone in the interleaved throughput slices above "
             "(2 workers; CPU ms per run system-wide, as there): "
             "airlock's mechanisms with no bookkeeping (bench/floor `+lsm`: "
             "its namespaces, cgroups, mounts, credentials, Landlock and "
             "seccomp, the program's exec and wait), a process start of "
             "the airlock binary (spawned by the driver, as bwrap is), an "
             "HTTP round trip to airlockd (the client's side included, as "
             "in the API variant) and one durable sync.  A CLI run adds a "
             f"process start and {SYNCS['cli']} syncs to the mechanisms, "
             "an API run an HTTP round trip and "
             f"{SYNCS['api']} syncs (docs/performance.md, \"Syncs\").  "
             "A refused CLI run (`-p disabled`) is what every CLI run does "
             "before its sandbox: the process start, the configuration, "
             "the audit database's first open in the process and one "
             "durable audit commit; with the mechanisms and the second "
             "commit's sync it is the floor of a CLI run that keeps its "
             "audit trail in SQLite.  "
             "On two cores near 100 % busy, runs/s go as the inverse of "
             "CPU per run: bwrap's CPU / a floor is the throughput ratio "
             "that floor would allow, the best a run keeping those "
             "promises could reach here.")
    L.append("")
    L.append("| part | how | runs | CPU ms per run | cores busy | "
             "not completed |")
    L.append("|---|---|---|---|---|---|")
    cpu = {}
    for name in (C_FLOOR, C_START, C_REFUSED, C_HTTP, C_SYNC):
        row = parts.get(name)
        if row is None:
            continue
        how, n, el, bad, why, c = row
        if n is None:
            L.append(f"| {name} | — | — | — | — | skipped: {why} |")
            continue
        per = busy_pct = "—"
        if c is not None and n:
            busy, wall = c
            cpu[name] = busy * 1000 / n
            per = f"{cpu[name]:.3f}"
            if wall > 0:
                busy_pct = f"{100 * busy / (wall * ncpu):.0f} %"
        L.append(f"| {name} | {how} | {n} | {per} | {busy_pct} | {bad} |")
    L.append("")
    bw = tp_cpu.get(("bwrap", "2 driver threads, a process per run"))
    if bw is None or C_FLOOR not in cpu or C_SYNC not in cpu:
        L.append("Not added up: bwrap, the mechanisms or the sync was not "
                 "measured.")
        L.append("")
        return
    L.append("| run | floor: its parts | floor CPU ms per run | "
             "floor / bwrap's CPU | throughput the floor allows / bwrap | "
             "measured CPU ms per run | measured / floor |")
    L.append("|---|---|---|---|---|---|---|")

    def line(label, what, floor, measured):
        got = (f"{measured:.2f} | {measured / floor:.2f}×"
               if measured else "— | —")
        L.append(f"| {label} | {what} | {floor:.2f} | {floor / bw:.2f}× | "
                 f"{bw / floor:.2f}× | {got} |")
    line("bwrap `--unshare-all … sh -c true`", "itself", bw, None)
    line("the mechanisms alone", "bench/floor `+lsm`", cpu[C_FLOOR],
         tp_cpu.get(("airlock lib: provider", "2 processes × 1 thread")))
    if C_START in cpu:
        line("`airlock run`",
             f"the mechanisms + a process start + {SYNCS['cli']} syncs",
             cpu[C_FLOOR] + cpu[C_START] + SYNCS["cli"] * cpu[C_SYNC],
             tp_cpu.get(("airlock run",
                         "2 driver threads, a process per run")))
    if C_REFUSED in cpu:
        line("`airlock run` with its audit database",
             f"the mechanisms + a refused CLI run + "
             f"{SYNCS['cli'] - 1} sync",
             cpu[C_FLOOR] + cpu[C_REFUSED] +
             (SYNCS["cli"] - 1) * cpu[C_SYNC],
             tp_cpu.get(("airlock run",
                         "2 driver threads, a process per run")))
    if C_HTTP in cpu:
        line("the API", f"the mechanisms + an HTTP round trip + "
             f"{SYNCS['api']} syncs",
             cpu[C_FLOOR] + cpu[C_HTTP] + SYNCS["api"] * cpu[C_SYNC],
             tp_cpu.get(("airlock API", "2 client threads")))
    L.append("")
    L.append("(The mechanisms' row compares with the library's provider "
             "path, 2 processes; the API's measured CPU is from its slice "
             "run alone.)")
    L.append("")


def render(facts, variants, works, lat, warmup, tp, tw, dmem, daemon_info,
           inproc_rss, elapsed, quick, inproc_log, pmem):
    daemon_note, api_notes = daemon_info
    L = []
    L.append("# airlock bench — latest results")
    L.append("")
    L.append("Produced by `make bench` (bench/run.sh → bench/driver.py); "
             "method in bench/README.md.  Ratios, not thresholds: a ratio "
             "< 1 means faster than the reference.")
    if quick:
        L.append("")
        L.append("**Quick run (--quick): few rounds, not for comparison.**")
    L.append("")
    L.append("## Machine")
    L.append("")
    L.append("| fact | value |")
    L.append("|---|---|")
    for k, v in facts.items():
        L.append(f"| {k} | {v} |")
    L.append(f"| bench wall time | {elapsed:.0f} s |")
    L.append("")
    L.append("## Variants")
    L.append("")
    L.append("| variant | version | runs exactly | status |")
    L.append("|---|---|---|---|")
    for v in variants:
        status = f"skipped: {v.skip}" if v.skip else "measured"
        L.append(f"| {v.name} | {v.version or '—'} | {v.describe or '—'} | "
                 f"{status} |")
    L.append("")

    heads = {}
    for w in works:
        res = lat[w.key]
        bare = median(res["bare"].ms) if "bare" in res else None
        bw = median(res["bwrap"].ms) if "bwrap" in res else None
        L.append(f"## Latency: {w.title}")
        L.append("")
        L.append(f"{w.rounds} interleaved rounds after {warmup} discarded "
                 f"warm-up rounds; wall clock per run.  "
                 f"{w.note + '.' if w.note else ''}")
        L.append("")
        L.append("| variant | runs | n | median ms | p90 ms | vs bare | "
                 "vs bwrap | failed |")
        L.append("|---|---|---|---|---|---|---|---|")
        for v in variants:
            if v.skip:
                continue
            r = res.get(v.name)
            if r is None:
                continue
            m = median(r.ms)
            L.append(f"| {v.name} | {short_cmd(v, w)} | {len(r.ms)} | "
                     f"{fmt_ms(m)} | {fmt_ms(p90(r.ms))} | "
                     f"{fmt_ratio(m, bare)} | {fmt_ratio(m, bw)} | "
                     f"{r.failures} |")
            heads[(w.key, v.name)] = m
        L.append("")

    L.append(f"## Throughput: {tw.title}, 2 workers")
    L.append("")
    L.append("Each worker loops the run until the deadline; runs/s = all "
             "runs / elapsed (the last run may end after the deadline).  "
             "The variants take turns in slices of a few seconds (the "
             "first rotating), like the latency rounds.  The variants "
             "whose runs share one process's threads (the API, the "
             "2-thread library) run alone, last, for a shorter time, "
             f"each in {ALONE_TURNS} turns with a bwrap slice as long "
             "before each of its own: their \"vs bwrap\" is against "
             "those bwrap slices (in brackets: against the interleaved "
             "bwrap above), as the machine drifts over the bench.  "
             "The API also runs with 4 clients against bwrap slices of 4 "
             "workers: 2 synchronous clients leave the cores idle while "
             "each waits for its answer.  "
             "CPU ms per run is the busy CPU time of the whole machine "
             "(/proc/stat, read just before and after each slice: every "
             "process, the driver's own client threads and kernel workers "
             "included) over the variant's runs; on an otherwise idle "
             "machine that is what the variant costs.  Cores busy is that "
             f"time / (wall time between the reads × {os.cpu_count()} "
             "CPUs): a variant near 100 % is CPU-bound, and its runs/s "
             "ratio is then about the inverse ratio of CPU per run.")
    L.append("")
    L.append("| variant | workers | runs | seconds | runs/s | vs bwrap | "
             "CPU ms per run (system-wide) | cores busy | not completed |")
    L.append("|---|---|---|---|---|---|---|---|---|")
    bw_rate = None
    for name, how, n, el, bad, why, cpu, ref in tp:
        if name == "bwrap" and n:
            bw_rate = n / el
    tp_rates = {}
    tp_refs = {}  # the bwrap slices a variant run alone took turns with
    tp_cpu = {}   # (name, how) -> CPU ms per run, system-wide
    ncpu = os.cpu_count() or 1
    parts = {}    # the floor's components: name -> row, rendered below
    for name, how, n, el, bad, why, cpu, ref in tp:
        if name in (C_FLOOR, C_START, C_REFUSED, C_HTTP, C_SYNC):
            parts[name] = (how, n, el, bad, why, cpu)
            continue
        if n is None:
            L.append(f"| {name} | — | — | — | — | — | — | — | "
                     f"skipped: {why} |")
            continue
        rate = n / el if el > 0 else float("nan")
        tp_rates[(name, how)] = rate
        if ref:
            tp_refs[(name, how)] = ref
        per_run = busy_pct = "—"
        if cpu is not None:
            busy, wall = cpu
            if n:
                per_run = f"{busy * 1000 / n:.2f}"
                tp_cpu[(name, how)] = busy * 1000 / n
            if wall > 0:
                busy_pct = f"{100 * busy / (wall * ncpu):.0f} %"
        vs = fmt_ratio(rate, bw_rate)
        if ref:
            vs = f"{fmt_ratio(rate, ref)} ({vs})"
        L.append(f"| {name} | {how} | {n} | {el:.1f} | {rate:.1f} | "
                 f"{vs} | {per_run} | {busy_pct} | {bad} |")
    L.append("")
    render_floor(L, parts, tp_cpu, ncpu)
    render_latency_floor(L, lat.get("sh-true", {}))

    L.append("## airlockd")
    L.append("")
    if dmem:
        n = dmem["n"]
        L.append("Started with `airlock serve --listen 127.0.0.1:0` and a "
                 "temp state dir.  Idle RSS is read 0.5 s after it answered "
                 "`/v1/health`, before any run.  Then, after the latency "
                 f"and throughput rounds, {n} sequential "
                 "`POST /v1/runs?wait=true` of python hello world, with the "
                 "peak RSS (VmHWM) reset just before them.")
        L.append("")
        L.append("| figure | value |")
        L.append("|---|---|")

        def mib(kb):
            return "—" if kb is None else f"{kb / 1024:.1f} MiB"
        L.append(f"| idle RSS | {mib(dmem['idle_kb'])} |")
        L.append(f"| RSS before the {n} runs | {mib(dmem['before_kb'])} |")
        L.append(f"| RSS after them | {mib(dmem['after_kb'])} |")
        if dmem["before_kb"] and dmem["after_kb"]:
            per = (dmem["after_kb"] - dmem["before_kb"]) / n
            L.append(f"| RSS growth per run (after − before) / {n} | "
                     f"{per:.1f} KiB |")
        if dmem["peak_kb"] and dmem["before_kb"]:
            L.append(f"| peak RSS during the runs − RSS before (one run in "
                     f"flight) | {(dmem['peak_kb'] - dmem['before_kb']) / 1024:.1f} MiB |")
        L.append(f"| p50 / p99 | {fmt_ms(dmem['p50'])} / "
                 f"{fmt_ms(dmem['p99'])} ms |")
        L.append(f"| not completed | {dmem['bad']} |")
        bare_py = heads.get(("python", "bare"))
        if bare_py:
            L.append(f"| p50 overhead over bare python (median) | "
                     f"{dmem['p50'] - bare_py:.2f} ms |")
    else:
        L.append(daemon_note or "not measured")
    L.append("")
    L.append("## Warm pool: python hello world through the API")
    L.append("")
    if pmem:
        bare_py = heads.get(("python", "bare"))
        n = pmem["n"]
        paced_bare = pmem.get("bare_p50")
        L.append(f"A second `airlock serve`, its sandbox provider configured "
                 f"with `\"pool\": {json.dumps(POOL_CONFIG)}`; {n} "
                 f"sequential `POST /v1/runs?wait=true` of python hello "
                 f"world, 0.2 s apart (time for the pool to refill), each "
                 f"after a bare `python3` hello 0.2 s before it.  Both p50 "
                 f"and p99 are compared with the median of those bare runs "
                 f"(the same window, the same pace: the machine is still "
                 f"digesting the throughput rounds then), and, as before "
                 f"this pairing, with the bare median of the latency rounds "
                 f"above.")
        L.append("")
        L.append("| figure | value | vs bare python, paced alike "
                 "(aim) | vs the latency rounds' bare median | aim |")
        L.append("|---|---|---|---|---|")
        L.append(f"| p50 | {fmt_ms(pmem['p50'])} ms | "
                 f"{fmt_ratio(pmem['p50'], paced_bare)} | "
                 f"{fmt_ratio(pmem['p50'], bare_py)} | ≤ 0.5× |")
        L.append(f"| p99 | {fmt_ms(pmem['p99'])} ms | "
                 f"{fmt_ratio(pmem['p99'], paced_bare)} | "
                 f"{fmt_ratio(pmem['p99'], bare_py)} | ≤ 0.8× |")
        if paced_bare is not None:
            L.append(f"| bare python, paced alike: median of "
                     f"{pmem['bare_n']} | {fmt_ms(paced_bare)} ms | | "
                     f"{fmt_ratio(paced_bare, bare_py)} | |")
        L.append(f"| not completed | {pmem['bad']} | | | |")
        L.append(f"| daemon idle RSS | {pmem['idle_kb'] / 1024:.1f} MiB "
                 f"| | | |")
        if pmem["tree_kb"]:
            L.append(f"| RSS of the daemon and everything it keeps ready "
                     f"(idle supervisors, warm sandboxes), summed | "
                     f"{pmem['tree_kb'] / 1024:.1f} MiB | | | |")
    else:
        pv = next((v for v in variants if v.name == POOL_API), None)
        L.append(f"not measured: {pv.skip if pv else 'absent'}")
    L.append("")
    L.append("## Library process memory")
    L.append("")
    L.append(f"bench/inproc (ensured sandbox handle + host): VmRSS "
             f"{int(inproc_rss[0]) / 1024:.1f} MiB after start-up, "
             f"{int(inproc_rss[1]) / 1024:.1f} MiB after every in-process "
             f"run above.")
    L.append("")

    # headline ratios
    L.append("## Headline ratios")
    L.append("")
    L.append("| comparison | ratio | aim |")
    L.append("|---|---|---|")

    def ratio_row(label, a, b, aim):
        L.append(f"| {label} | {fmt_ratio(a, b)} | {aim} |")
    ratio_row("`airlock run -l sh -e true` / `bwrap --unshare-all … sh -c "
              "true` (median)", heads.get(("sh-true", "airlock run")),
              heads.get(("sh-true", "bwrap")), "≤ 1.0×")
    ratio_row("library provider path, sh `exec /bin/true` / bwrap "
              "`/bin/true` (median)",
              heads.get(("true", "airlock lib: provider")),
              heads.get(("true", "bwrap")), "≤ 0.6×")
    ratio_row("library provider path, sh `true` / bwrap `sh -c true` "
              "(median)", heads.get(("sh-true", "airlock lib: provider")),
              heads.get(("sh-true", "bwrap")), "≤ 0.6×")
    ratio_row("library host path (audit), sh `true` / bwrap `sh -c true` "
              "(median)", heads.get(("sh-true", "airlock lib: host")),
              heads.get(("sh-true", "bwrap")), "—")
    for name, how in (("airlock run", "2 driver threads, a process per run"),
                      ("airlock lib: provider", "2 processes × 1 thread"),
                      ("airlock lib: provider", "1 process × 2 threads"),
                      ("airlock API", "2 client threads"),
                      (POOL_API, "2 client threads"),
                      ("airlock API", API_WIDE)):
        ref = tp_refs.get((name, how), bw_rate)
        if (name, how) in tp_rates and ref:
            # issue 21's aims: the CLI's and the service's throughput
            aim = ("—" if name == "airlock lib: provider" or
                   how == API_WIDE else "≥ 1.0×")
            L.append(f"| throughput {name} ({how}) / bwrap | "
                     f"{fmt_ratio(tp_rates[(name, how)], ref)} | "
                     f"{aim} |")
    ratio_row("python hello: `airlock run` / bare python (median)",
              heads.get(("python", "airlock run")),
              heads.get(("python", "bare")), "—")
    ratio_row("python hello: library provider path / bare python (median)",
              heads.get(("python", "airlock lib: provider")),
              heads.get(("python", "bare")), "—")
    if ("python", "airlock API") in heads:
        ratio_row("python hello: airlock API / bare python (median)",
                  heads.get(("python", "airlock API")),
                  heads.get(("python", "bare")), "—")
    if ("python", "airlock lib: provider, warm pool") in heads:
        ratio_row("python hello: library provider path, warm pool / bare "
                  "python (median)",
                  heads.get(("python", "airlock lib: provider, warm pool")),
                  heads.get(("python", "bare")), "—")
    if ("python", POOL_API) in heads:
        ratio_row("python hello: airlock API, warm pool / bare python "
                  "(median of the interleaved rounds)",
                  heads.get(("python", POOL_API)),
                  heads.get(("python", "bare")), "≤ 0.5×")
    if pmem and pmem.get("bare_p50"):
        ratio_row("python hello: airlock API, warm pool, paced 0.2 s apart, "
                  "p50 / bare python paced alike (median)",
                  pmem["p50"], pmem["bare_p50"], "≤ 0.5×")
        ratio_row("python hello: airlock API, warm pool, paced 0.2 s apart, "
                  "p99 / bare python paced alike (median)",
                  pmem["p99"], pmem["bare_p50"], "≤ 0.8×")
    if ("node", POOL_API) in heads:
        ratio_row("javascript hello: airlock API, warm pool / bare node "
                  "(median of the interleaved rounds)",
                  heads.get(("node", POOL_API)),
                  heads.get(("node", "bare")), "≤ 0.3×")
    L.append("")

    notes = []
    try:
        with open(inproc_log) as f:
            lines = [ln.strip() for ln in f if ln.strip()]
    except OSError:
        lines = []
    if lines:
        notes.append(f"bench/inproc reported {len(lines)} line(s) on "
                     f"stderr; distinct: " +
                     "; ".join(sorted(set(lines))[:5]))
    if api_notes:
        notes.append("airlock API runs that did not complete: " +
                     "; ".join(f"{k} × {v}" for k, v in
                               sorted(api_notes.items())))
    if notes:
        L.append("## Notes")
        L.append("")
        for n in notes:
            L.append(f"- {n}")
        L.append("")
    return "\n".join(L)


if __name__ == "__main__":
    sys.exit(main())
