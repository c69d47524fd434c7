-- Schema version 5: the job protocol's named tasks (docs/format.md §6). A task id names a
-- blueprint session or a single task of a registered type; it points at its current run (a
-- session). Resubmitting a finished task points it at a new session; the old one stays.
CREATE TABLE submitted_tasks (
    task_id           TEXT PRIMARY KEY,
    session_id        TEXT NOT NULL REFERENCES sessions (id),
    source_tasks_json TEXT NOT NULL,
    submitted_ms      INTEGER NOT NULL
) WITHOUT ROWID;
