-- Schema version 19: values of a session's data set by a person (an intervention at a
-- breakpoint): what was set, when, by whom, and the value it replaced. The value names its edit
-- (`session_data.edit_id`, `run_id` NULL), and an input that read it names the edit as its source
-- (`attempt_inputs.source_edit_id`): lineage leads to the person.
CREATE TABLE data_edits (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    instance   TEXT NOT NULL,
    key        TEXT NOT NULL,
    old_json   TEXT,
    new_json   TEXT NOT NULL,
    time_ms    INTEGER NOT NULL,
    by_whom    TEXT NOT NULL
);
CREATE INDEX data_edits_by_session ON data_edits (session_id, id);
ALTER TABLE session_data ADD COLUMN edit_id INTEGER;
ALTER TABLE attempt_inputs ADD COLUMN source_edit_id INTEGER;
