-- A queued run's language, set only when some live node publishes it in
-- its facts: a node claims only runs it can run (docs/scale-out.md,
-- "Selection").  NULL: any node (its admission decides).
ALTER TABLE runs ADD COLUMN language text;
