-- Schema version 15: the blueprint file a session was started from (its absolute path), so
-- that a retry or a restart can offer the file as it is saved now beside the version the session
-- ran (docs/format.md §4). NULL for sessions made before this version, for mirrors and for
-- sessions started from a blueprint given as text.
ALTER TABLE sessions ADD COLUMN file TEXT;
