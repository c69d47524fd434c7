-- Schema version 4: lineage within a session.

-- The attempt whose settlement (or, for a composite's inner instance, whose start) wrote each
-- session data value; NULL when no attempt did (a skip's defaults, an intervention).
ALTER TABLE session_data ADD COLUMN run_id TEXT;

-- Where each input of an attempt came from: the session data key it read (in its blueprint
-- instance), the attempt that had written that value, and the sha256 of the value it got.
CREATE TABLE attempt_inputs (
    run_id        TEXT NOT NULL REFERENCES task_runs (run_id) ON DELETE CASCADE,
    input         TEXT NOT NULL,
    instance      TEXT NOT NULL,
    key           TEXT NOT NULL,
    source_run_id TEXT,
    value_sha256  TEXT NOT NULL,
    PRIMARY KEY (run_id, input)
) WITHOUT ROWID;
CREATE INDEX attempt_inputs_by_source ON attempt_inputs (source_run_id) WHERE source_run_id IS NOT NULL;
