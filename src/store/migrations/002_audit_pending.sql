-- Audit records are committed with the change they describe into
-- audit_pending (no lock, no chain), then moved into the chain in batches
-- by whichever node holds the chain's lock: one commit per batch instead
-- of one serialised commit per record (docs/scale-out.md, "The audit
-- chain").
CREATE TABLE audit_pending (
  id bigserial PRIMARY KEY,
  record text NOT NULL
);
