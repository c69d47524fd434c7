//! The job protocol's named tasks: each task id points at its current run, a session.

use rusqlite::{params, OptionalExtension};
use serde::{Deserialize, Serialize};

use crate::error::SqliteResultExt;
use crate::refusals::require_session;
use crate::{Store, StoreError};

/// A submitted task and its current run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SubmittedTask {
    pub task_id: String,
    /// Its current run.
    pub session_id: String,
    /// The tasks it declared as its upstream (lineage across sessions).
    pub source_tasks: Vec<String>,
    /// What its current run was submitted with: the task name, `source_tasks` as given and
    /// the inputs (`{}` for tasks submitted before it was kept).
    pub config: serde_json::Value,
    pub submitted_ms: i64,
}

impl Store {
    /// Points `task_id` at `session_id` if it still points at `replaces` (`None`: there is no
    /// such task yet): a compare-and-swap, so that of two submitters that both saw the same
    /// current run, one wins. `None` when `task_id` points elsewhere by now.
    pub fn put_submitted_task(
        &mut self,
        task_id: &str,
        session_id: &str,
        source_tasks: &[String],
        config: &serde_json::Value,
        replaces: Option<&str>,
    ) -> Result<Option<SubmittedTask>, StoreError> {
        self.write(|tx| {
            require_session(tx.sql, tx.path, session_id)?;
            let sources = serde_json::to_string(source_tasks).unwrap_or_else(|_| "[]".into());
            let config_json = config.to_string();
            let changed = match replaces {
                None => tx.sql.execute(
                    "INSERT INTO submitted_tasks (task_id, session_id, source_tasks_json, config_json, submitted_ms)
                     VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (task_id) DO NOTHING",
                    params![task_id, session_id, sources, config_json, tx.now_ms],
                ),
                Some(replaces) => tx.sql.execute(
                    "UPDATE submitted_tasks SET session_id = ?2, source_tasks_json = ?3, config_json = ?4,
                     submitted_ms = ?5 WHERE task_id = ?1 AND session_id = ?6",
                    params![task_id, session_id, sources, config_json, tx.now_ms, replaces],
                ),
            }
            .at(tx.path)?;
            Ok((changed == 1).then(|| SubmittedTask {
                task_id: task_id.to_string(),
                session_id: session_id.to_string(),
                source_tasks: source_tasks.to_vec(),
                config: config.clone(),
                submitted_ms: tx.now_ms,
            }))
        })
    }

    /// A submitted task, if there is one by that id.
    pub fn submitted_task(&self, task_id: &str) -> Result<Option<SubmittedTask>, StoreError> {
        self.read(|conn, path| {
            conn.query_row(
                "SELECT task_id, session_id, source_tasks_json, submitted_ms, config_json FROM submitted_tasks
                 WHERE task_id = ?1",
                [task_id],
                submitted_row,
            )
            .optional()
            .at(path)?
            .map(|raw| raw.into_task(path))
            .transpose()
        })
    }

    /// Every submitted task, by id.
    pub fn submitted_tasks(&self) -> Result<Vec<SubmittedTask>, StoreError> {
        self.read(|conn, path| {
            let mut stmt = conn
                .prepare(
                    "SELECT task_id, session_id, source_tasks_json, submitted_ms, config_json FROM submitted_tasks
                     ORDER BY task_id",
                )
                .at(path)?;
            let rows = stmt.query_map([], submitted_row).at(path)?;
            rows.map(|r| r.at(path).and_then(|raw| raw.into_task(path))).collect()
        })
    }

    /// Forgets a submitted task (its sessions stay); whether it was there.
    pub fn delete_submitted_task(&mut self, task_id: &str) -> Result<bool, StoreError> {
        self.write(|tx| {
            let n = tx.sql.execute("DELETE FROM submitted_tasks WHERE task_id = ?1", [task_id]).at(tx.path)?;
            Ok(n > 0)
        })
    }
}

struct RawTask(String, String, String, i64, String);

fn submitted_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<RawTask> {
    Ok(RawTask(row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?, row.get(4)?))
}

impl RawTask {
    fn into_task(self, path: &std::path::Path) -> Result<SubmittedTask, StoreError> {
        let source_tasks = orrery_blueprint::json::from_str(&self.2).map_err(|e| StoreError::Corrupt {
            path: path.to_path_buf(),
            detail: format!("the source tasks of {:?} do not read: {e}", self.0),
        })?;
        let config = orrery_blueprint::json::from_str(&self.4).map_err(|e| StoreError::Corrupt {
            path: path.to_path_buf(),
            detail: format!("the config of {:?} does not read: {e}", self.0),
        })?;
        Ok(SubmittedTask { task_id: self.0, session_id: self.1, source_tasks, config, submitted_ms: self.3 })
    }
}
