-- The fleet's shared state in one SQLite file that the nodes of ONE host
-- share (docs/scale-out.md, "One host: SQLite"): the PostgreSQL store's
-- tables (src/store/migrations/*.sql) in SQLite's types.  Times are Unix
-- milliseconds.  A run's state moves queued -> running -> finished, each
-- step one transaction, so a run has exactly one terminal outcome.
CREATE TABLE runs (
  qseq INTEGER PRIMARY KEY AUTOINCREMENT,
  id TEXT NOT NULL UNIQUE,
  tenant TEXT NOT NULL,
  principal TEXT NOT NULL,
  body TEXT NOT NULL,
  request_sha256 TEXT NOT NULL,
  idem_key TEXT,
  tenant_max INTEGER NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('queued', 'running', 'finished')),
  node TEXT,
  language TEXT,
  adopted_dir TEXT,
  created_ms INTEGER NOT NULL,
  claimed_ms INTEGER,
  finished_ms INTEGER,
  status INTEGER,
  outcome TEXT,
  result TEXT,
  UNIQUE (tenant, idem_key)
);
CREATE INDEX runs_queued ON runs (tenant, qseq) WHERE state = 'queued';
CREATE INDEX runs_running ON runs (tenant) WHERE state = 'running';
CREATE INDEX runs_node ON runs (node) WHERE state = 'running';

CREATE TABLE events (
  run_id TEXT NOT NULL REFERENCES runs (id),
  seq INTEGER NOT NULL,
  stream INTEGER NOT NULL,
  data BLOB NOT NULL,
  PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;

CREATE TABLE controls (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  run_id TEXT NOT NULL REFERENCES runs (id),
  kind TEXT NOT NULL CHECK (kind IN ('interrupt', 'stop', 'inbox')),
  event_id TEXT,
  event TEXT,
  done INTEGER NOT NULL DEFAULT 0,
  UNIQUE (run_id, event_id)
);

CREATE TABLE nodes (
  id TEXT PRIMARY KEY,
  host TEXT NOT NULL,
  started_ms INTEGER NOT NULL,
  heartbeat_ms INTEGER NOT NULL,
  concurrency INTEGER NOT NULL,
  in_use INTEGER NOT NULL,
  facts TEXT NOT NULL
);

-- Records are chained inside the transaction that makes their change:
-- SQLite's one write lock already serialises it (no audit_pending).
CREATE TABLE audit (
  seq INTEGER PRIMARY KEY,
  prev_hash TEXT NOT NULL,
  hash TEXT NOT NULL,
  record TEXT NOT NULL
);
CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit
  BEGIN SELECT RAISE(ABORT, 'audit trail is append-only'); END;
CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit
  BEGIN SELECT RAISE(ABORT, 'audit trail is append-only'); END;

-- In place of LISTEN/NOTIFY: every change bumps changes (a run queued or
-- a tenant's slot freed also bumps queued); each node polls the row.
CREATE TABLE notices (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  changes INTEGER NOT NULL,
  queued INTEGER NOT NULL
);
INSERT INTO notices (id, changes, queued) VALUES (1, 0, 0);
