-- GET /v1/runs from any node (docs/scale-out.md, "Reading anywhere"):
-- a tenant's runs newest first, and the language each was admitted in
-- (set by the executing node once its admission accepted the run; NULL
-- before, and for a run refused before admission).
ALTER TABLE runs ADD COLUMN admitted_language text;
CREATE INDEX runs_tenant_qseq ON runs (tenant, qseq);
