-- Schema version 13: agents' checklists (docs/format.md §7): top-level tasks of a thread (a
-- project's agent's line of work), each with ordered subtasks as a JSON array of
-- {title, status}. At most one task of a thread is in progress; one is completed only with
-- every subtask done and a conclusion.
CREATE TABLE agent_tasks (
    project       TEXT NOT NULL,
    agent         TEXT NOT NULL,
    thread        TEXT NOT NULL,
    task_id       INTEGER NOT NULL,
    title         TEXT NOT NULL,
    description   TEXT,
    status        TEXT NOT NULL,
    subtasks_json TEXT NOT NULL,
    conclusion    TEXT,
    created_ms    INTEGER NOT NULL,
    started_ms    INTEGER,
    completed_ms  INTEGER,
    PRIMARY KEY (project, agent, thread, task_id)
) WITHOUT ROWID;
