-- A run that carries an X-Airlock-Forwarded-Env (docs/scale-out.md,
-- "Headers of the remote provider"): its secrets never reach the store,
-- they stay in the memory of the node that accepted it, so only that
-- node (pinned) may claim it; a pinned run whose node is gone ends lost.
ALTER TABLE runs ADD COLUMN pinned text;
-- The submission that queued the row: its own retry (an answer lost with
-- the connection) is told apart from another submission asking for the
-- same X-Airlock-Run-Id.
ALTER TABLE runs ADD COLUMN submit_nonce text;
