-- Schema version 2: who drives a session, and what other processes ask of it.

-- The lease of the runner driving a session: a token naming the runner, and the process it
-- lives in (pid plus start time, so a reused pid is not taken for it). NULL when no runner
-- holds the session. A lease whose process is gone is free to take.
ALTER TABLE sessions ADD COLUMN runner_token TEXT;
ALTER TABLE sessions ADD COLUMN runner_pid INTEGER;
ALTER TABLE sessions ADD COLUMN runner_start_time INTEGER;

-- Requests to a session's runner from elsewhere (another `orrery`, the job API): stop, pause,
-- cancel a task, answer a prompt. The runner polls the open ones, acts, and marks each handled
-- with what came of it.
CREATE TABLE session_requests (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id  TEXT NOT NULL REFERENCES sessions (id),
    kind        TEXT NOT NULL CHECK (kind IN ('stop', 'pause', 'cancel', 'answer')),
    node        TEXT,
    value_json  TEXT,
    created_ms  INTEGER NOT NULL,
    handled_ms  INTEGER,
    outcome     TEXT
);
CREATE INDEX session_requests_open ON session_requests (session_id, id) WHERE handled_ms IS NULL;
