-- The PostgreSQL store's migrations 005 and 006 (src/store/migrations/)
-- for the SQLite store.  admitted_language: the language a run was
-- admitted in, for GET /v1/runs (NULL before admission).  pinned: the one
-- node that may claim the run (it holds the run's forwarded environment
-- in memory); a pinned run whose node is gone ends lost.  submit_nonce:
-- the submission that queued the row, so that its own retry is told
-- apart from another submission of the same X-Airlock-Run-Id.
ALTER TABLE runs ADD COLUMN admitted_language TEXT;
ALTER TABLE runs ADD COLUMN pinned TEXT;
ALTER TABLE runs ADD COLUMN submit_nonce TEXT;
CREATE INDEX runs_tenant_qseq ON runs (tenant, qseq);
CREATE INDEX runs_pinned ON runs (pinned) WHERE state = 'queued';

-- Targeted wake-ups (a queued run wakes one node that can take it): the
-- count of wake-ups sent to each node; one to every node still bumps
-- notices.queued.
CREATE TABLE wakes (
  node TEXT PRIMARY KEY,
  n INTEGER NOT NULL
) WITHOUT ROWID;
