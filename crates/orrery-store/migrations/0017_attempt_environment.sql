-- Schema version 17: what a process of an attempt was started with: the program found on its
-- PATH, its working directory and its environment variables (Orrery's own ORRERY_* ones aside),
-- as JSON. NULL for an attempt without a process and for attempts recorded before version 17.
ALTER TABLE task_runs ADD COLUMN environment_json TEXT;
