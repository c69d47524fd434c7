-- Schema version 12: agents' durable task memory (docs/format.md §7): tasks by name within a
-- project, each with an append-only list of raw events numbered from 1 and a set of named
-- steps. `author` is the agent that wrote the row. Payloads longer than the maximum keep their
-- first characters (`truncated`) and the sha256 of the whole text.
CREATE TABLE memory_tasks (
    project        TEXT NOT NULL,
    name           TEXT NOT NULL,
    goal           TEXT NOT NULL,
    author         TEXT NOT NULL,
    created_ms     INTEGER NOT NULL,
    updated_ms     INTEGER NOT NULL,
    last_event_seq INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (project, name)
) WITHOUT ROWID;

CREATE TABLE memory_events (
    project       TEXT NOT NULL,
    task          TEXT NOT NULL,
    seq           INTEGER NOT NULL,
    kind          TEXT NOT NULL,
    role          TEXT,
    name          TEXT,
    payload       TEXT NOT NULL,
    truncated     INTEGER NOT NULL,
    payload_sha256 TEXT NOT NULL,
    author        TEXT NOT NULL,
    created_ms    INTEGER NOT NULL,
    PRIMARY KEY (project, task, seq),
    FOREIGN KEY (project, task) REFERENCES memory_tasks (project, name)
) WITHOUT ROWID;

CREATE TABLE memory_steps (
    project          TEXT NOT NULL,
    task             TEXT NOT NULL,
    name             TEXT NOT NULL,
    state            TEXT NOT NULL,
    kind             TEXT NOT NULL,
    result_event_seq INTEGER,
    -- The task's last event number when the step was last set.
    updated_seq      INTEGER NOT NULL,
    created_ms       INTEGER NOT NULL,
    updated_ms       INTEGER NOT NULL,
    PRIMARY KEY (project, task, name),
    FOREIGN KEY (project, task) REFERENCES memory_tasks (project, name)
) WITHOUT ROWID;

CREATE INDEX memory_steps_by_state ON memory_steps (project, task, state, name);
