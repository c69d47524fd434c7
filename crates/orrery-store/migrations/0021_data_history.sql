-- Schema version 21: every value a session's data held, not only the last one, so that a run
-- can be looked at as it stood at any moment (time travel). Kept by triggers on session_data:
-- whatever writes it (a task's outputs, a composite's copy, a restart's kept data, a person's
-- edit), the history has it, in commit order. A session from before keeps each key's last
-- value at the time it was written.
CREATE TABLE data_history (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    instance   TEXT NOT NULL,
    key        TEXT NOT NULL,
    value_json TEXT NOT NULL,
    time_ms    INTEGER NOT NULL,
    run_id     TEXT,
    edit_id    INTEGER
);
CREATE INDEX data_history_by_session ON data_history (session_id, id);
INSERT INTO data_history (session_id, instance, key, value_json, time_ms, run_id, edit_id)
    SELECT session_id, instance, key, value_json, updated_ms, run_id, edit_id FROM session_data
    ORDER BY updated_ms;
CREATE TRIGGER data_history_on_insert AFTER INSERT ON session_data BEGIN
    INSERT INTO data_history (session_id, instance, key, value_json, time_ms, run_id, edit_id)
    VALUES (NEW.session_id, NEW.instance, NEW.key, NEW.value_json, NEW.updated_ms, NEW.run_id, NEW.edit_id);
END;
CREATE TRIGGER data_history_on_update AFTER UPDATE ON session_data
    WHEN OLD.value_json IS NOT NEW.value_json OR OLD.run_id IS NOT NEW.run_id OR OLD.edit_id IS NOT NEW.edit_id
        OR OLD.updated_ms IS NOT NEW.updated_ms
BEGIN
    INSERT INTO data_history (session_id, instance, key, value_json, time_ms, run_id, edit_id)
    VALUES (NEW.session_id, NEW.instance, NEW.key, NEW.value_json, NEW.updated_ms, NEW.run_id, NEW.edit_id);
END;
