-- Schema version 22: a request may also set or clear a breakpoint of a running session
-- (`breakpoint`: the task in `node`; where it holds, "before" or "after", as a JSON string in
-- `value_json`, or JSON null to clear it). SQLite cannot change a CHECK in place: the table is
-- made again with its rows.
CREATE TABLE session_requests_22 (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id  TEXT NOT NULL REFERENCES sessions (id),
    kind        TEXT NOT NULL
                CHECK (kind IN ('stop', 'pause', 'cancel', 'answer', 'release', 'set_data', 'breakpoint')),
    node        TEXT,
    value_json  TEXT,
    created_ms  INTEGER NOT NULL,
    handled_ms  INTEGER,
    outcome     TEXT
);
INSERT INTO session_requests_22 (id, session_id, kind, node, value_json, created_ms, handled_ms, outcome)
    SELECT id, session_id, kind, node, value_json, created_ms, handled_ms, outcome FROM session_requests;
DROP TABLE session_requests;
ALTER TABLE session_requests_22 RENAME TO session_requests;
CREATE INDEX session_requests_open ON session_requests (session_id, id) WHERE handled_ms IS NULL;
