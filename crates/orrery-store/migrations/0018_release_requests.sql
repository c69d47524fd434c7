-- Schema version 18: a request may also let go of a task held at a breakpoint (`release`: the
-- task in `node`, or every held task when NULL; how, as a JSON string, in `value_json`), or set a
-- value of the session's data while one is held (`set_data`: instance, key, value and who, as a
-- JSON object in `value_json`). SQLite cannot change a CHECK in place: the table is made again
-- with its rows.
CREATE TABLE session_requests_18 (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id  TEXT NOT NULL REFERENCES sessions (id),
    kind        TEXT NOT NULL CHECK (kind IN ('stop', 'pause', 'cancel', 'answer', 'release', 'set_data')),
    node        TEXT,
    value_json  TEXT,
    created_ms  INTEGER NOT NULL,
    handled_ms  INTEGER,
    outcome     TEXT
);
INSERT INTO session_requests_18 (id, session_id, kind, node, value_json, created_ms, handled_ms, outcome)
    SELECT id, session_id, kind, node, value_json, created_ms, handled_ms, outcome FROM session_requests;
DROP TABLE session_requests;
ALTER TABLE session_requests_18 RENAME TO session_requests;
CREATE INDEX session_requests_open ON session_requests (session_id, id) WHERE handled_ms IS NULL;
