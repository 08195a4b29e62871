-- Blob garbage collection (`flow store gc`): when each blob was last written or referenced. Every artifact write
-- touches it in the statement that writes the reference, so a blob being referenced right now is never "old"; the GC
-- deletes only blobs no artifact references that nobody touched for a while (store/postgres_artifacts.py gc_blobs).
ALTER TABLE flow_blobs ADD COLUMN touched_at timestamptz NOT NULL DEFAULT now();
CREATE INDEX flow_artifacts_digest ON flow_artifacts (digest);  -- the GC's "is it referenced" (and the FK's check on delete)
