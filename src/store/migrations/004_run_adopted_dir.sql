-- The state directory of the node whose supervisor a run's adopter is
-- watching (same host, docs/scale-out.md "Failover"): kept across a
-- second adoption, and a run with one is never queued again.
ALTER TABLE runs ADD COLUMN adopted_dir text;
