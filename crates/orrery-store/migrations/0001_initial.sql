-- 0001: the first schema of Orrery's task store.
-- Applied once, in one transaction, when PRAGMA user_version is 0; never edited after release:
-- a change is a new file (0002_...) appended to MIGRATIONS in src/migrations.rs.

-- Blueprint versions, keyed by the sha256 of their canonical JSON text.
CREATE TABLE blueprint_versions (
    hash           TEXT PRIMARY KEY,
    blueprint_id   TEXT NOT NULL,
    canonical_json TEXT NOT NULL,
    created_ms     INTEGER NOT NULL
);
CREATE INDEX blueprint_versions_by_blueprint ON blueprint_versions (blueprint_id, created_ms);

CREATE TABLE sessions (
    id              TEXT PRIMARY KEY,
    blueprint_hash  TEXT NOT NULL REFERENCES blueprint_versions (hash),
    blueprint_id    TEXT NOT NULL,
    name            TEXT NOT NULL,
    state           TEXT NOT NULL
        CHECK (state IN ('pending', 'running', 'completed', 'failed', 'stopped')),
    params_json     TEXT NOT NULL,
    created_ms      INTEGER NOT NULL,
    started_ms      INTEGER,
    finished_ms     INTEGER,
    last_error_json TEXT
);
CREATE INDEX sessions_by_created ON sessions (created_ms);

-- One row per node of the flattened graph: "{blueprint_instance}.{task_id}".
CREATE TABLE task_nodes (
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    node       TEXT NOT NULL,
    state      TEXT NOT NULL
        CHECK (state IN ('UNSPECIFIED', 'PENDING', 'READY', 'RUNNING', 'SUCCEEDED', 'FAILED',
                         'SKIPPED', 'SKIP_REQUESTED')),
    updated_ms INTEGER NOT NULL,
    PRIMARY KEY (session_id, node)
) WITHOUT ROWID;

-- One row per attempt; run_id is fresh for every attempt and keys every later write.
CREATE TABLE task_runs (
    run_id             TEXT PRIMARY KEY,
    session_id         TEXT NOT NULL,
    node               TEXT NOT NULL,
    attempt            INTEGER NOT NULL CHECK (attempt >= 1),
    state              TEXT NOT NULL
        CHECK (state IN ('running', 'succeeded', 'failed', 'cancelled', 'skipped', 'unknown')),
    agent              TEXT NOT NULL,
    started_ms         INTEGER NOT NULL,
    finished_ms        INTEGER,
    exit_code          INTEGER,
    error_json         TEXT,
    pid                INTEGER,
    process_start_time INTEGER,
    log_path           TEXT,
    inputs_json        TEXT,
    outputs_json       TEXT,
    FOREIGN KEY (session_id, node) REFERENCES task_nodes (session_id, node) ON DELETE CASCADE,
    UNIQUE (session_id, node, attempt)
);
CREATE INDEX task_runs_running ON task_runs (run_id) WHERE state = 'running';
CREATE INDEX task_runs_by_session ON task_runs (session_id, started_ms);

-- Key/value data per session and per blueprint instance (docs/format.md §4).
CREATE TABLE session_data (
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    instance   TEXT NOT NULL,
    key        TEXT NOT NULL,
    value_json TEXT NOT NULL,
    updated_ms INTEGER NOT NULL,
    PRIMARY KEY (session_id, instance, key)
) WITHOUT ROWID;

-- Keyed by instance too: the reference keys by bare task id and collides (docs/format.md §4).
CREATE TABLE scope_iterations (
    session_id    TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    instance      TEXT NOT NULL,
    scope_task_id TEXT NOT NULL,
    iterations    INTEGER NOT NULL CHECK (iterations >= 0),
    PRIMARY KEY (session_id, instance, scope_task_id)
) WITHOUT ROWID;

-- Append-only; seq is 1, 2, 3 ... per session with no gaps.
CREATE TABLE events (
    session_id     TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq            INTEGER NOT NULL CHECK (seq >= 1),
    time_ms        INTEGER NOT NULL,
    kind           TEXT NOT NULL,
    run_id         TEXT,
    payload        TEXT NOT NULL,
    -- Set only when the payload was cut: the length in bytes and sha256 of the full text.
    full_len       INTEGER,
    full_sha256    TEXT,
    PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;
CREATE INDEX events_by_run ON events (run_id, seq) WHERE run_id IS NOT NULL;

-- Idempotent writes (docs/format.md §7): written in the same transaction as the write.
CREATE TABLE requests (
    request_id  TEXT PRIMARY KEY,
    operation   TEXT NOT NULL,
    args_digest TEXT NOT NULL,
    answer_json TEXT NOT NULL,
    created_ms  INTEGER NOT NULL
);

-- The checklist of one attempt, in order of first appearance.
CREATE TABLE progress_steps (
    run_id           TEXT NOT NULL REFERENCES task_runs (run_id) ON DELETE CASCADE,
    position         INTEGER NOT NULL CHECK (position >= 0),
    name             TEXT NOT NULL,
    state            TEXT NOT NULL CHECK (state IN ('pending', 'in_progress', 'done', 'unknown')),
    percentage       INTEGER CHECK (percentage BETWEEN 0 AND 100),
    result_event_seq INTEGER,
    updated_ms       INTEGER NOT NULL,
    PRIMARY KEY (run_id, name),
    UNIQUE (run_id, position)
);
CREATE INDEX progress_steps_in_progress ON progress_steps (run_id) WHERE state = 'in_progress';
