-- The fleet's shared state (docs/scale-out.md).  One row per accepted run;
-- its state moves queued -> running -> finished, each step one
-- transaction, so a run has exactly one terminal outcome.
CREATE TABLE runs (
  id text PRIMARY KEY,
  qseq bigserial UNIQUE,
  tenant text NOT NULL,
  principal text NOT NULL,
  body text NOT NULL,
  request_sha256 text NOT NULL,
  idem_key text,
  tenant_max integer NOT NULL,
  state text NOT NULL CHECK (state IN ('queued', 'running', 'finished')),
  node text,
  created_at timestamptz NOT NULL DEFAULT now(),
  claimed_at timestamptz,
  finished_at timestamptz,
  status integer,
  outcome text,
  result text,
  UNIQUE (tenant, idem_key)
);
CREATE INDEX runs_queued ON runs (tenant, qseq) WHERE state = 'queued';
CREATE INDEX runs_running ON runs (tenant) WHERE state = 'running';
CREATE INDEX runs_node ON runs (node) WHERE state = 'running';

CREATE TABLE events (
  run_id text NOT NULL REFERENCES runs (id),
  seq bigint NOT NULL,
  stream smallint NOT NULL,
  data bytea NOT NULL,
  PRIMARY KEY (run_id, seq)
);

CREATE TABLE controls (
  id bigserial PRIMARY KEY,
  run_id text NOT NULL REFERENCES runs (id),
  kind text NOT NULL CHECK (kind IN ('interrupt', 'stop', 'inbox')),
  event_id text,
  event text,
  done boolean NOT NULL DEFAULT false,
  UNIQUE (run_id, event_id)
);

CREATE TABLE nodes (
  id text PRIMARY KEY,
  host text NOT NULL,
  started_at timestamptz NOT NULL,
  heartbeat_at timestamptz NOT NULL,
  concurrency integer NOT NULL,
  in_use integer NOT NULL,
  facts text NOT NULL
);

CREATE TABLE audit (
  seq bigint PRIMARY KEY,
  prev_hash text NOT NULL,
  hash text NOT NULL,
  record text NOT NULL
);
CREATE FUNCTION audit_append_only() RETURNS trigger LANGUAGE plpgsql AS
  $$ BEGIN RAISE EXCEPTION 'audit trail is append-only'; END $$;
CREATE TRIGGER audit_no_change BEFORE UPDATE OR DELETE ON audit
  FOR EACH ROW EXECUTE FUNCTION audit_append_only();
