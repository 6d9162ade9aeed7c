#!/usr/bin/python3
"""The soak (docs/testing.md, "Soak"): SOAK_RUNS requests to a real
`airlock serve` on loopback from 2 clients, a seeded mix of languages and
hostile requests, while the daemon's descriptors, threads, RSS and the
state directory's size are sampled.

Prints a markdown report (and writes it to --out) with throughput,
latency p50/p99 per kind of request, errors, and growth per run.  Exits 1
when a request got an unexpected answer, a run was lost (no terminal
record) or doubled (one run id answered twice, or started twice), the
daemon's descriptors did not return to their idle count, or its RSS kept
growing through the second half of the soak.

Usage: bench/soak.py --bin build/airlock [--runs N] [--seed S] [--out F]
Standard library only; the daemon helper comes from the integration
suite (tests/integration/test_api_support.py).
"""
import argparse
import datetime
import json
import os
import pathlib
import platform
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "integration"))
import test_api_support as api  # noqa: E402

CLIENTS = 2
# The daemon's descriptors after the soak may exceed their idle count by
# this much (a WAL file reopened, an idle supervisor's pipe in flux).
FD_SLACK = 8
# RSS growth through the second half of the soak, extrapolated to 10,000
# runs, above which it counts as growing without bound.
RSS_LIMIT_PER_10K = 32 * 1024 * 1024
# The finished runs airlockd's table keeps (AL_SRV_MAX_RUNS).
TABLE_RUNS = 4096
# Samples of the daemon taken over the soak.
SAMPLES = 100


# ---- the mix ------------------------------------------------------------
# Each kind: (weight, needs, build(i) -> (query, body), check(status, body,
# i) -> None or what was wrong).  body is a dict (sent as JSON) or bytes.

def completed_with(stdout):
    def check(st, body, i):
        want = stdout(i)
        if st != 200 or body.get("outcome") != "completed" or \
                body.get("exit_code") != 0 or body.get("stdout") != want:
            return "want completed %r, got %s %s" % (want, st, brief(body))
        return None
    return check


def outcome_is(outcome, reason=None, status=200, extra=None):
    def check(st, body, i):
        if st != status or body.get("outcome") != outcome or \
                (reason is not None and body.get("reason") != reason) or \
                (extra is not None and not extra(body)):
            return "want %s/%s, got %s %s" % (outcome, reason, st,
                                              brief(body))
        return None
    return check


def refused(st, body, i):
    if st != 400 or not isinstance(body, dict) or \
            body.get("outcome", body.get("error")) is None:
        return "want a typed 400, got %s %s" % (st, brief(body))
    return None


def brief(body):
    if isinstance(body, dict):
        return json.dumps({k: body[k] for k in
                           ("outcome", "reason", "error", "exit_code",
                            "message") if k in body})
    return repr(body)[:200]


KINDS = {
    "sh": (30, "sh",
           lambda i: ("", {"language": "sh", "code": "echo soak-%d" % i}),
           completed_with(lambda i: "soak-%d\n" % i)),
    "sh-stdin": (8, "sh",
                 lambda i: ("", {"language": "sh", "code": "cat",
                                 "stdin": "in-%d\n" % i}),
                 completed_with(lambda i: "in-%d\n" % i)),
    "python": (15, "python",
               lambda i: ("", {"language": "python",
                               "code": "print(%d * 2)" % i}),
               completed_with(lambda i: "%d\n" % (i * 2))),
    "javascript": (10, "javascript",
                   lambda i: ("", {"language": "javascript",
                                   "code": "console.log(%d + 1)" % i}),
                   completed_with(lambda i: "%d\n" % (i + 1))),
    "sh-nowait": (8, "sh",
                  lambda i: ("?wait=false",
                             {"language": "sh", "code": "echo nw-%d" % i}),
                  completed_with(lambda i: "nw-%d\n" % i)),
    "timeout": (4, "sh",
                lambda i: ("", {"language": "sh",
                                "code": "while :; do :; done",
                                "limits": {"wall_ms": 200}}),
                outcome_is("timed_out")),
    "memory": (4, "python",
               lambda i: ("", {"language": "python",
                               "code": "x = bytearray(256 << 20)",
                               "limits": {"memory_bytes": 32 << 20}}),
               outcome_is("killed", "memory_limit")),
    "flood": (4, "sh",
              lambda i: ("", {"language": "sh",
                              "code": "yes | head -c 20000000",
                              "limits": {"output_bytes": 65536}}),
              outcome_is("completed", extra=lambda b:
                         b.get("stdout_truncated") is True and
                         b.get("stdout_bytes") == 20000000)),
    "bad-json": (5, None, lambda i: ("", b'{"language": "sh", "code": '),
                 refused),
    "bad-field": (5, None,
                  lambda i: ("", {"language": "sh", "code": "true",
                                  "unknown_%d" % (i % 7): 1}),
                  refused),
    "bad-limit": (5, None,
                  lambda i: ("", {"language": "sh", "code": "true",
                                  "limits": {"memory_bytes": -1}}),
                  refused),
}


# ---- the daemon -----------------------------------------------------------

def proc_sample(pid, state):
    fds = len(os.listdir("/proc/%d/fd" % pid))
    rss = threads = 0
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1]) * 1024
            elif line.startswith("Threads:"):
                threads = int(line.split()[1])
    disk = 0
    for root, dirs, files in os.walk(state):
        for n in dirs + files:
            try:
                disk += os.lstat(os.path.join(root, n)).st_blocks * 512
            except OSError:
                pass
    return {"fds": fds, "rss": rss, "threads": threads, "disk": disk}


def settled(d, quiet_s=1.0, tries=20):
    """A sample once the descriptor count has stopped changing."""
    last = None
    for _ in range(tries):
        s = proc_sample(d.proc.pid, d.state)
        if last is not None and s["fds"] == last["fds"]:
            return s
        last = s
        time.sleep(quiet_s)
    return last


def slope(points):
    """Least-squares slope of [(x, y)], 0 for fewer than 2 points."""
    n = len(points)
    if n < 2:
        return 0.0
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    den = sum((x - mx) ** 2 for x, _ in points)
    return sum((x - mx) * (y - my) for x, y in points) / den if den else 0.0


def pct(values, p):
    if not values:
        return float("nan")
    v = sorted(values)
    return v[min(len(v) - 1, max(0, int(round(p / 100.0 * len(v) + 0.5)) - 1))]


# ---- the soak ---------------------------------------------------------------

class Soak:
    def __init__(self, d, schedule):
        self.d = d
        self.schedule = schedule
        self.next = 0
        self.done = 0
        self.lock = threading.Lock()
        self.records = []  # (i, kind, status, run_id, outcome, ms, problem)

    def one(self, i, kind):
        _, _, build, check = KINDS[kind]
        query, body = build(i)
        t0 = time.perf_counter()
        try:
            if isinstance(body, bytes):
                st, _, res = self.d.request(
                    "POST", "/v1/runs" + query, body,
                    headers={"Content-Type": "application/json"},
                    timeout=120)
            else:
                st, _, res = self.d.request("POST", "/v1/runs" + query,
                                            body, timeout=120)
            if query and st == 202 and isinstance(res, dict):
                res = self.d.wait_finished(res["run_id"], timeout=120)
                st = 200
        except Exception as e:  # a dropped connection is a finding
            return (i, kind, None, None, None,
                    (time.perf_counter() - t0) * 1000, "error: %r" % e)
        ms = (time.perf_counter() - t0) * 1000
        problem = check(st, res, i) if isinstance(res, dict) else \
            "not JSON: %s %r" % (st, str(res)[:200])
        rid = res.get("run_id") if isinstance(res, dict) else None
        outcome = res.get("outcome") if isinstance(res, dict) else None
        return (i, kind, st, rid, outcome, ms, problem)

    def client(self):
        while True:
            with self.lock:
                i = self.next
                if i >= len(self.schedule):
                    return
                self.next += 1
            rec = self.one(i, self.schedule[i])
            with self.lock:
                self.records.append(rec)
                self.done += 1


def audit(state):
    db = sqlite3.connect("file:%s?mode=ro" % (state / "airlock.db"),
                         uri=True)
    try:
        rows = db.execute("SELECT record FROM audit ORDER BY seq").fetchall()
    finally:
        db.close()
    by_run = {}
    for (text,) in rows:
        r = json.loads(text)
        if r.get("run_id"):
            by_run.setdefault(r["run_id"], []).append(
                (r["event"], r.get("outcome")))
    return by_run, len(rows)


def git_commit():
    try:
        c = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short",
                            "HEAD"], capture_output=True, text=True).stdout
        dirty = subprocess.run(["git", "-C", str(REPO), "status",
                                "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True).stdout
        return c.strip() + (" (with uncommitted changes)" if dirty.strip()
                            else "")
    except OSError:
        return "unknown"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=str(REPO / "build" / "airlock"))
    ap.add_argument("--runs", type=int,
                    default=int(os.environ.get("SOAK_RUNS", "10000")))
    ap.add_argument("--seed", type=int, default=14)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    api.AIRLOCK_BIN = os.path.abspath(args.bin)

    work = pathlib.Path(tempfile.mkdtemp(prefix="airlock-soak-",
                                         dir="/var/tmp"))
    d = api.Daemon(work, name="d")
    load0 = os.getloadavg()
    started_at = datetime.datetime.now(datetime.timezone.utc)
    d.start()
    try:
        # The languages the sandbox offers here.
        st, _, caps = d.request("GET", "/v1/capabilities")
        have = set()
        for p in caps.get("providers", []) if isinstance(caps, dict) else []:
            if p.get("available"):
                have.update(lang.get("language")
                            for lang in p.get("languages", []))
        kinds = [k for k, (_, need, _, _) in KINDS.items()
                 if need is None or need in have]
        skipped = [k for k in KINDS if k not in kinds]
        rng = random.Random(args.seed)
        weights = [KINDS[k][0] for k in kinds]
        schedule = rng.choices(kinds, weights=weights, k=args.runs)

        idle = settled(d)
        soak = Soak(d, schedule)
        samples = [(0, idle)]
        step = max(1, args.runs // SAMPLES)
        threads = [threading.Thread(target=soak.client)
                   for _ in range(CLIENTS)]
        t0 = time.monotonic()
        for t in threads:
            t.start()
        next_at = step
        while any(t.is_alive() for t in threads):
            time.sleep(0.02)
            if soak.done >= next_at and d.proc.poll() is None:
                samples.append((soak.done, proc_sample(d.proc.pid, d.state)))
                next_at += step
        elapsed = time.monotonic() - t0
        for t in threads:
            t.join()
        alive = d.proc.poll() is None
        end = settled(d) if alive else None
        by_run, n_records = audit(d.state)
        vp = subprocess.run([api.AIRLOCK_BIN, "--state-dir", str(d.state),
                             "audit", "verify"], capture_output=True,
                            text=True, timeout=300)
    finally:
        d.stop()
        log_tail = d.log()[-2000:]
        shutil.rmtree(work, ignore_errors=True)
    load1 = os.getloadavg()

    # ---- verdict ------------------------------------------------------
    recs = sorted(soak.records)
    problems = [r for r in recs if r[6]]
    ids = {}
    for r in recs:
        if r[3]:
            ids.setdefault(r[3], []).append(r[0])
    doubled = {rid: ix for rid, ix in ids.items() if len(ix) > 1}
    lost, mismatched = [], []
    for r in recs:
        rid, kind = r[3], r[1]
        if not rid:
            continue
        ev = by_run.get(rid, [])
        names = [e for e, _ in ev]
        if kind.startswith("bad-"):
            if names != ["run.denied"]:
                lost.append((rid, kind, names))
            continue
        if names.count("run.started") > 1 or names.count("run.finished") > 1:
            doubled.setdefault(rid, [r[0]])
        elif names != ["run.started", "run.finished"]:
            lost.append((rid, kind, names))
        elif ev[1][1] != r[4]:
            mismatched.append((rid, kind, ev[1][1], r[4]))
    unknown = [rid for rid in by_run if rid not in ids]
    orphans = [rid for rid in unknown
               if [e for e, _ in by_run[rid]].count("run.finished") != 1 and
               "run.denied" not in [e for e, _ in by_run[rid]]]
    lost += [(rid, "not answered", [e for e, _ in by_run[rid]])
             for rid in orphans]

    # Growth is judged over the second half, and only once the daemon's
    # run table is full (it keeps TABLE_RUNS finished results in memory
    # by design, so RSS rises until then).
    half = [(n, s) for n, s in samples
            if n >= max(args.runs // 2, TABLE_RUNS + 500)]
    judged = len(half) >= 3
    second = [(n, s) for n, s in samples if n >= args.runs // 2]
    fd_slope = slope([(n, s["fds"]) for n, s in second])
    rss_slope = slope([(n, s["rss"]) for n, s in half])
    disk_slope = slope([(n, s["disk"]) for n, s in samples[1:]])
    peak_fds = max(s["fds"] for _, s in samples)
    peak_rss = max(s["rss"] for _, s in samples)
    fails = []
    if problems:
        fails.append("%d requests got an unexpected answer" % len(problems))
    if lost:
        fails.append("%d runs lost (no terminal record)" % len(lost))
    if doubled:
        fails.append("%d runs doubled" % len(doubled))
    if mismatched:
        fails.append("%d runs audited with another outcome" % len(mismatched))
    if not alive:
        fails.append("the daemon died")
    if end is not None and end["fds"] > idle["fds"] + FD_SLACK:
        fails.append("descriptors did not return to idle (%d -> %d)" %
                     (idle["fds"], end["fds"]))
    if judged and rss_slope * 10000 > RSS_LIMIT_PER_10K:
        fails.append("RSS grows %.0f B/run through the second half" %
                     rss_slope)
    if vp.returncode != 0:
        fails.append("airlock audit verify failed")

    # ---- report -------------------------------------------------------
    out = []
    w = out.append
    w("# airlock soak — %s" % started_at.strftime("%Y-%m-%d %H:%M UTC"))
    w("")
    w("`bench/soak.py --runs %d --seed %d`: %d requests to `airlock serve` "
      "(sandbox provider, default configuration, state dir under /var/tmp) "
      "from %d clients, a new connection per request." %
      (args.runs, args.seed, args.runs, CLIENTS))
    w("")
    w("- commit %s, binary `%s`" % (git_commit(), args.bin))
    w("- %s, kernel %s, %d cores; load average %.2f at start, %.2f at end" %
      (platform.node(), platform.release(), os.cpu_count() or 0,
       load0[0], load1[0]))
    w("- kinds left out (language not available): %s" %
      (", ".join(skipped) or "none"))
    w("")
    w("**Verdict: %s**" % ("PASS" if not fails else "FAIL — " +
                           "; ".join(fails)))
    w("")
    w("## Throughput and latency")
    w("")
    w("%d requests in %.1f s: **%.1f requests/s**." %
      (len(recs), elapsed, len(recs) / elapsed if elapsed else 0))
    w("")
    w("| kind | requests | unexpected | p50 ms | p99 ms |")
    w("|---|---:|---:|---:|---:|")
    for k in kinds + ["all"]:
        rs = [r for r in recs if k == "all" or r[1] == k]
        ok = [r[5] for r in rs if not r[6]]
        w("| %s | %d | %d | %.1f | %.1f |" %
          (k, len(rs), len(rs) - len(ok), pct(ok, 50), pct(ok, 99)))
    w("")
    w("## The daemon over the soak")
    w("")
    w("| | idle (before) | peak | end (settled) | growth per run, "
      "2nd half |")
    w("|---|---:|---:|---:|---:|")
    e = end or {"fds": float("nan"), "rss": float("nan"),
                "threads": float("nan"), "disk": float("nan")}
    w("| descriptors | %d | %d | %s | %.4f |" %
      (idle["fds"], peak_fds, e["fds"], fd_slope))
    w("| RSS MiB | %.1f | %.1f | %.1f | %s |" %
      (idle["rss"] / 2**20, peak_rss / 2**20, e["rss"] / 2**20,
       "%.0f B (runs %d+)" % (rss_slope, half[0][0]) if judged else
       "not judged below %d runs" % (2 * (TABLE_RUNS + 500))))
    w("| threads | %d | %d | %s | |" %
      (idle["threads"], max(s["threads"] for _, s in samples), e["threads"]))
    w("| state dir MiB | %.1f | | %.1f | %.0f B (whole soak) |" %
      (idle["disk"] / 2**20, e["disk"] / 2**20, disk_slope))
    w("")
    w("Descriptors at every %d requests: %s" %
      (step, " ".join(str(s["fds"]) for _, s in samples[::max(1, len(samples) // 20)])))
    w("")
    w("## Records")
    w("")
    w("- audit: %d records, %d run ids; `airlock audit verify`: %s" %
      (n_records, len(by_run), "ok" if vp.returncode == 0 else
       "FAILED: " + (vp.stdout + vp.stderr).strip()[:300]))
    w("- lost: %d, doubled: %d, audited outcome differs: %d, audited runs "
      "no client was answered for: %d" %
      (len(lost), len(doubled), len(mismatched), len(unknown)))
    if problems:
        w("")
        w("Unexpected answers (first 10 of %d; the first at request %d):" %
          (len(problems), problems[0][0]))
        w("")
        for r in problems[:10]:
            w("- #%d %s: %s" % (r[0], r[1], r[6]))
        kinds_bad = {}
        for r in problems:
            kinds_bad[r[6].split(":")[0][:60]] = \
                kinds_bad.get(r[6].split(":")[0][:60], 0) + 1
        w("")
        w("By kind of problem: " + ", ".join("%s ×%d" % kv for kv in
                                              sorted(kinds_bad.items())))
    if lost:
        w("")
        w("Lost (first 10): " + "; ".join("%s %s %s" % x for x in lost[:10]))
    if not alive or fails:
        w("")
        w("Daemon log (tail):")
        w("")
        w("```")
        w(log_tail.strip())
        w("```")
    text = "\n".join(out) + "\n"
    sys.stdout.write(text)
    if args.out:
        pathlib.Path(args.out).write_text(text)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
