-- Schema version 8: the user's settings that the app and the CLI share (the MQTT broker whose
-- agents run tasks, and how), by key; each value is JSON.
CREATE TABLE settings (
    key        TEXT PRIMARY KEY,
    value      TEXT NOT NULL,
    updated_ms INTEGER NOT NULL
) WITHOUT ROWID;
