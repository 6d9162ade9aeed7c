"""`make bench`'s fleet rows (docs/scale-out.md): runs/s with 1, 2 and 3
airlockd nodes on one PostgreSQL, and on one SQLite file (the nodes of
one host), and the store's cost per run.

A private PostgreSQL 15 (tests/integration/fleet_support.py: initdb into a
temporary directory as an unprivileged user, fsync on, defaults otherwise)
and N nodes with the trusted local provider, concurrency 4 each.  Clients
(8 threads) POST ?wait=false round robin to the nodes; a row's time runs
from the first POST to the moment the store has every run finished.

- "sh true": each run executes `true` (a supervisor process per run).
- "store path": execution_enabled false, so each run is queued, claimed,
  refused by the claiming node's admission and finished: the store's own
  ceiling (enqueue + claim + finish, three transactions and two audit
  records per run).

Cost per run: PostgreSQL's commits (pg_stat_database.xact_commit) and WAL
bytes (pg_current_wal_lsn) over the row, divided by the runs.

The SQLite rows ("store": "sqlite:///…" in a fresh temporary directory,
synchronous=FULL) run the same workloads.  Their cost per run: the write
transactions the nodes committed (each logs its count when it stops:
heartbeats and output events included, like PostgreSQL's commits) and
the growth of the database (page_count x page_size, read through the
WAL) over the row, divided by the runs.

usage: fleet.py --airlock ABS_PATH [--runs N] [--backends pg,sqlite]
                [--out FILE]"""
import argparse
import contextlib
import os
import pathlib
import re
import shutil
import sqlite3
import sys
import tempfile
import threading
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "integration"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--airlock", required=True)
    ap.add_argument("--runs", type=int, default=150)
    ap.add_argument("--backends", default="pg,sqlite")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    backends = args.backends.split(",")
    os.environ["AIRLOCK_BIN"] = args.airlock
    import fleet_support as fs  # needs AIRLOCK_BIN set first

    text = "Load average at the start: %.1f %.1f %.1f\n\n" % os.getloadavg()
    if "pg" in backends:
        pg = fs.Postgres()
        rows = []
        try:
            for workload in ("sh true", "store path"):
                for n in (1, 2, 3):
                    rows.append(one_row(fs, pg, workload, n, args.runs))
                    print("fleet: %-10s nodes=%d %7.1f runs/s  %.1f "
                          "commits/run  %.0f WAL bytes/run" % rows[-1][:5],
                          flush=True)
            chain = audit_rate(fs, pg)
            print("fleet: audit serial %.0f/s, plain %.0f/s, chainer %.0f/s"
                  % chain, flush=True)
        finally:
            pg.close()
        text += report(rows, args.runs) + report_chain(chain)
    if "sqlite" in backends:
        rows = []
        for workload in ("sh true", "store path"):
            for n in (1, 2, 3):
                rows.append(one_row_sqlite(fs, workload, n, args.runs))
                print("fleet sqlite: %-10s nodes=%d %7.1f runs/s  %.1f "
                      "commits/run  %.0f DB bytes/run" % rows[-1][:5],
                      flush=True)
        text += "\n" + report_sqlite(rows, args.runs)
    text += "Load average at the end: %.1f %.1f %.1f\n" % os.getloadavg()
    print(text)
    if args.out:
        pathlib.Path(args.out).write_text(text)


@contextlib.contextmanager
def scratch(prefix):
    """A temporary directory for a row's nodes: removed once the row is
    measured, kept (and named) when it failed, for the nodes' logs."""
    tmp = pathlib.Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield tmp
    except BaseException:
        print("fleet: kept %s for its nodes' logs" % tmp, file=sys.stderr,
              flush=True)
        raise
    shutil.rmtree(tmp, ignore_errors=True)


def stat(pg):
    commits = int(pg.psql("SELECT sum(xact_commit) FROM pg_stat_database")
                  [0][0])
    lsn = int(pg.psql("SELECT pg_current_wal_lsn() - '0/0'::pg_lsn")[0][0])
    return commits, lsn


def one_row(fs, pg, workload, n, runs):
    with scratch("airlock-fleet-bench-") as tmp:
        return measure_row(fs, pg, tmp, workload, n, runs)


def measure_row(fs, pg, tmp, workload, n, runs):
    nodes = []
    for i in range(n):
        cfg = fs.fleet_config(pg.url, node_id="bench%d" % i)
        if workload == "store path":
            cfg["execution_enabled"] = False
        node = fs.Node(tmp, cfg, name="bench%d" % i)
        node.start(timeout=30)
        nodes.append(node)
    try:
        body = {"language": "sh", "code": "true",
                "grant": {"network": "host", "workspace": "rw"}}
        ids, lock, todo = [], threading.Lock(), list(range(runs))
        # pg_stat_database is updated when a backend reports: let the
        # previous row's settle, then read.
        time.sleep(1.0)
        c0, w0 = stat(pg)
        t0 = time.monotonic()

        def client():
            while True:
                with lock:
                    if not todo:
                        return
                    i = todo.pop()
                st, _, b = nodes[i % n].request("POST", "/v1/runs?wait=false",
                                                body, timeout=120)
                assert st == 202, (st, b)
                with lock:
                    ids.append(b["run_id"])

        ts = [threading.Thread(target=client) for _ in range(8)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        quoted = ",".join("'%s'" % i for i in ids)
        polls = 0
        while True:
            polls += 1
            if int(pg.psql("SELECT count(*) FROM runs WHERE state = "
                           "'finished' AND id IN (%s)" % quoted)
                   [0][0]) >= runs:
                break
            time.sleep(0.05)
        elapsed = time.monotonic() - t0
        c1, w1 = stat(pg)
        # Each psql call here is one (read-only) commit: the polls and
        # the first stat's second query are left out; the nodes'
        # heartbeats and idle claims over the row are in.
        commits = (c1 - c0 - polls - 1) / runs
        return (workload, n, runs / elapsed, commits, (w1 - w0) / runs,
                elapsed)
    finally:
        for node in nodes:
            node.stop()


def post_all(nodes, runs, body):
    """POSTs runs bodies (wait=false) round robin from 8 threads: the
    run ids."""
    ids, lock, todo = [], threading.Lock(), list(range(runs))

    def client():
        while True:
            with lock:
                if not todo:
                    return
                i = todo.pop()
            st, _, b = nodes[i % len(nodes)].request(
                "POST", "/v1/runs?wait=false", body, timeout=120)
            assert st == 202, (st, b)
            with lock:
                ids.append(b["run_id"])

    ts = [threading.Thread(target=client) for _ in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return ids


def db_bytes(path):
    c = sqlite3.connect(str(path), timeout=30)
    try:
        return (c.execute("PRAGMA page_count").fetchone()[0] *
                c.execute("PRAGMA page_size").fetchone()[0])
    finally:
        c.close()


def one_row_sqlite(fs, workload, n, runs):
    with scratch("airlock-fleet-sqbench-") as tmp:
        return measure_row_sqlite(fs, tmp, workload, n, runs)


def measure_row_sqlite(fs, tmp, workload, n, runs):
    path = tmp / "fleetdb" / "fleet.db"
    nodes = []
    for i in range(n):
        cfg = fs.fleet_config("sqlite://" + str(path), node_id="sq%d" % i)
        if workload == "store path":
            cfg["execution_enabled"] = False
        node = fs.Node(tmp, cfg, name="sq%d" % i)
        node.start(timeout=30)
        nodes.append(node)
    stopped = False
    try:
        body = {"language": "sh", "code": "true",
                "grant": {"network": "host", "workspace": "rw"}}
        time.sleep(1.0)
        b0 = db_bytes(path)
        t0 = time.monotonic()
        ids = post_all(nodes, runs, body)
        c = sqlite3.connect(str(path), timeout=30)
        try:
            quoted = ",".join("'%s'" % i for i in ids)
            while c.execute("SELECT count(*) FROM runs WHERE state = "
                            "'finished' AND id IN (%s)" % quoted
                            ).fetchone()[0] < runs:
                time.sleep(0.05)
        finally:
            c.close()
        elapsed = time.monotonic() - t0
        grown = db_bytes(path) - b0
        for node in nodes:
            node.stop()
        stopped = True
        # Each node's count covers its whole life: its start's
        # transactions (migrations, first heartbeats) are in, a few.
        commits = 0
        for node in nodes:
            m = re.search(r"fleet store: (\d+) write transactions",
                          node.log())
            assert m, node.log()[-2000:]
            commits += int(m.group(1))
        return (workload, n, runs / elapsed, commits / runs, grown / runs,
                elapsed)
    finally:
        if not stopped:
            for node in nodes:
                node.stop()


def report_sqlite(rows, runs):
    out = ["## Fleet: airlockd nodes of one host on one SQLite file", "",
           "%d runs per row, 8 client threads, concurrency 4 per node, "
           "synchronous=FULL, all on this machine (bench/fleet.py)." % runs,
           "",
           "| workload | nodes | runs/s | write transactions per run | "
           "database bytes per run | seconds |",
           "|---|---|---|---|---|---|"]
    for w, n, rps, commits, grown, secs in rows:
        out.append("| %s | %d | %.1f | %.1f | %.0f | %.1f |"
                   % (w, n, rps, commits, grown, secs))
    return "\n".join(out) + "\n"


CHAINED = """BEGIN;
SELECT pg_advisory_xact_lock(7401);
WITH h AS (SELECT seq, hash FROM bench_audit ORDER BY seq DESC LIMIT 1)
INSERT INTO bench_audit SELECT coalesce((SELECT seq FROM h), 0) + 1,
  coalesce((SELECT hash FROM h), '0'),
  encode(sha256(convert_to(coalesce((SELECT hash FROM h), '0')
    || '{"event":"run.finished","run_id":"x"}', 'UTF8')), 'hex'),
  '{"event":"run.finished","run_id":"x"}';
END;
"""
UNCHAINED = """INSERT INTO bench_plain (record) VALUES
  ('{"event":"run.finished","run_id":"x"}');
"""


def pgbench(fs, pg, script):
    path = pg.root / "script.sql"
    path.write_text(script)
    os.chmod(path, 0o644)
    out = pg._run([str(fs.PG_BIN / "pgbench"), "-n", "-c", "8", "-j", "2",
                   "-T", "5", "-f", str(path), "-h", str(pg.sock), "-p",
                   str(pg.port), "-U", "airlock", "postgres"])
    for line in out.stdout.decode().splitlines():
        if line.startswith("tps = "):
            return float(line.split()[2])
    raise AssertionError(out.stdout.decode())


def audit_rate(fs, pg):
    """What the chain costs.  (1) A chain appended record by record
    (advisory lock, read the head, hash, insert, commit: a first design)
    from 8 clients, against (2) a plain insert, which is what a run's
    transaction does now (audit_pending), and (3) the rate one node's
    chainer moves pending records into the chain (20000 inserted at once,
    timed until none is pending)."""
    pg.psql("CREATE TABLE bench_audit (seq bigint PRIMARY KEY, prev_hash "
            "text, hash text, record text)")
    pg.psql("CREATE TABLE bench_plain (seq bigserial PRIMARY KEY, record "
            "text)")
    serial, plain = pgbench(fs, pg, CHAINED), pgbench(fs, pg, UNCHAINED)
    with scratch("airlock-fleet-chain-") as tmp:
        node = fs.Node(tmp, fs.fleet_config(pg.url, node_id="chain0"),
                       name="chain0")
        node.start(timeout=30)
        try:
            t0 = time.monotonic()
            pg.psql("INSERT INTO audit_pending (record) SELECT "
                    "'{\"event\":\"bench\",\"n\":' || g || '}' FROM "
                    "generate_series(1, 20000) g")
            while pg.psql("SELECT count(*) FROM audit_pending")[0][0] != "0":
                time.sleep(0.05)
            batched = 20000 / (time.monotonic() - t0)
        finally:
            node.stop()
    return serial, plain, batched


def report_chain(chain):
    return ("\nAudit chain (8 clients, 5 s, pgbench): appended record by "
            "record under the chain's lock %.0f records/s; a plain insert "
            "(what a run's transaction does) %.0f/s; one node's chainer "
            "moves %.0f records/s into the chain (batches of 1000).\n"
            % chain)


def report(rows, runs):
    out = ["## Fleet: airlockd nodes on one PostgreSQL", "",
           "%d runs per row, 8 client threads, concurrency 4 per node, "
           "PostgreSQL 15 with fsync on, all on this machine "
           "(bench/fleet.py)." % runs, "",
           "| workload | nodes | runs/s | PostgreSQL commits per run | "
           "WAL bytes per run | seconds |",
           "|---|---|---|---|---|---|"]
    for w, n, rps, commits, wal, secs in rows:
        out.append("| %s | %d | %.1f | %.1f | %.0f | %.1f |"
                   % (w, n, rps, commits, wal, secs))
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    main()
