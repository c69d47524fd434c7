-- Schema version 14: who started a session through the facade (docs/format.md §7): the
-- caller's project and agent, so that an agent's task memory and checklist can be shown beside
-- the sessions it started. NULL for sessions made before this version and for mirrors.
ALTER TABLE sessions ADD COLUMN started_project TEXT;
ALTER TABLE sessions ADD COLUMN started_agent TEXT;
CREATE INDEX sessions_by_starter ON sessions (started_project, started_agent, created_ms)
    WHERE started_agent IS NOT NULL;
