-- Schema version 16: an attempt whose times Orrery does not know. A mirror of a server's session
-- records the tasks that had run (or begun) there before it followed: their state, inputs and
-- outputs are the server's, but the server keeps no task times, so started_ms (and finished_ms of
-- one that had ended) is when the mirror learned of it, and the timeline leaves it out.
ALTER TABLE task_runs ADD COLUMN times_unknown INTEGER NOT NULL DEFAULT 0;
