-- The PostgreSQL store's migration 007 (src/store/migrations/) for the
-- SQLite store: the submitter's W3C traceparent, carried through the
-- queue to the node that executes the run.  NULL: none.
ALTER TABLE runs ADD COLUMN traceparent TEXT;
