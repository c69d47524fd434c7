-- Schema version 11: what a job-protocol task was submitted with (its `config`: the task name,
-- `source_tasks` as given, and its inputs with their defaults), as a JSON object. Tasks
-- submitted before this version read `{}`.
ALTER TABLE submitted_tasks ADD COLUMN config_json TEXT NOT NULL DEFAULT '{}';
