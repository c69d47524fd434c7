-- Schema version 6: lineage across sessions.

-- The session a restart ran over again (the same blueprint versions and params); NULL for a
-- session launched on its own. Deleting the older session keeps the newer one.
ALTER TABLE sessions ADD COLUMN restarted_from TEXT REFERENCES sessions (id) ON DELETE SET NULL;
CREATE INDEX sessions_by_origin ON sessions (restarted_from) WHERE restarted_from IS NOT NULL;
