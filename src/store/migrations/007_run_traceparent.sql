-- The submitter's W3C traceparent (docs/api.md, "Request ids and
-- traces"), carried through the queue to the node that executes the run:
-- its run.started record and its log lines name the caller's trace as a
-- single node's do.  NULL: none.
ALTER TABLE runs ADD COLUMN traceparent text;
