-- Schema version 20: a simulated session (a run without processes) keeps what it simulates
-- with it: the outputs set per task, the tasks that fail, the past session whose outputs it
-- replays. NULL: a real run.
ALTER TABLE sessions ADD COLUMN simulation_json TEXT;
