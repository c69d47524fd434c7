-- Schema version 10: the iteration of each looping scope (retry, while) that held a task when its
-- attempt began, as the JSON array of `ScopeIteration`s the engine gives, the outermost first.
-- NULL outside loops and for attempts recorded before this version.
ALTER TABLE task_runs ADD COLUMN iterations_json TEXT;
