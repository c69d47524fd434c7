-- Schema version 9: sessions that mirror a session of an antikythera server (followed over its
-- event stream): the server's address and the session's id there. NULL for local sessions.
-- One mirror per remote session.
ALTER TABLE sessions ADD COLUMN remote_url TEXT;
ALTER TABLE sessions ADD COLUMN remote_session TEXT;
CREATE UNIQUE INDEX sessions_by_remote ON sessions (remote_url, remote_session) WHERE remote_url IS NOT NULL;
