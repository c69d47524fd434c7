//! Agents' checklists (docs/format.md §7), as roboto's agent tasks: a thread's top-level tasks,
//! each with ordered subtasks.
//!
//! - A thread is an agent's line of work in a project (`thread` names it; the agent and the
//!   project are the caller's). Its tasks are numbered 1, 2, 3... for the life of the thread,
//!   listed in that order.
//! - A task is `pending`, `in_progress` or `completed`. At most one task of a thread is in
//!   progress: starting another while one is refused, naming it. Starting a completed task is
//!   refused; starting a pending one again after another finished is how work resumes.
//! - Subtasks are `pending` or `done`; they are active with their task, never on their own.
//! - A task is completed only when every subtask is done, and with a conclusion.
//! - Every write takes an optional request id, scoped to the project.

use rusqlite::params;
use serde::{Deserialize, Serialize};

use crate::clock::iso_8601;
use crate::error::SqliteResultExt;
use crate::{Store, StoreError, Tx};

/// Where a top-level task stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AgentTaskStatus {
    Pending,
    /// The single active task of its thread.
    InProgress,
    /// Finished, with a conclusion.
    Completed,
}

/// Whether a subtask is done.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AgentSubtaskStatus {
    Pending,
    Done,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AgentSubtask {
    pub title: String,
    pub status: AgentSubtaskStatus,
}

/// A top-level task of a thread.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AgentTask {
    /// 1, 2, 3... within the thread, stable for its life.
    pub task_id: u64,
    /// Its place among the thread's tasks (0 first).
    pub position: u64,
    pub title: String,
    pub description: Option<String>,
    pub status: AgentTaskStatus,
    /// In order; the task is completed only once every one is done.
    pub subtasks: Vec<AgentSubtask>,
    /// What came of it, once completed.
    pub conclusion: Option<String>,
    /// When it last became in progress (ISO 8601, UTC).
    pub started_at: Option<String>,
    /// When it was completed.
    pub completed_at: Option<String>,
}

/// What a change of a task answers: its id and the status it is in now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AgentTaskMinimal {
    pub task_id: u64,
    pub status: AgentTaskStatus,
}

/// Whose thread: the caller's project and agent, and the thread's name.
#[derive(Debug, Clone, Copy)]
pub struct Thread<'a> {
    pub project: &'a str,
    pub agent: &'a str,
    pub name: &'a str,
}

fn status_text(s: AgentTaskStatus) -> &'static str {
    match s {
        AgentTaskStatus::Pending => "pending",
        AgentTaskStatus::InProgress => "in_progress",
        AgentTaskStatus::Completed => "completed",
    }
}

type Raw = (i64, String, Option<String>, String, String, Option<String>, Option<i64>, Option<i64>);

const SELECT: &str = "SELECT task_id, title, description, status, subtasks_json, conclusion, started_ms, completed_ms
                      FROM agent_tasks WHERE project = ?1 AND agent = ?2 AND thread = ?3";

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Raw> {
    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?, r.get(7)?))
}

fn into_task(raw: Raw, position: u64, path: &std::path::Path) -> Result<AgentTask, StoreError> {
    let corrupt = |detail: String| StoreError::Corrupt { path: path.to_path_buf(), detail };
    let status = match raw.3.as_str() {
        "pending" => AgentTaskStatus::Pending,
        "in_progress" => AgentTaskStatus::InProgress,
        "completed" => AgentTaskStatus::Completed,
        other => return Err(corrupt(format!("agent task {} has the status {other:?}", raw.0))),
    };
    let subtasks =
        orrery_blueprint::json::from_str(&raw.4).map_err(|e| corrupt(format!("agent task {}: {e}", raw.0)))?;
    Ok(AgentTask {
        task_id: raw.0.max(0) as u64,
        position,
        title: raw.1,
        description: raw.2,
        status,
        subtasks,
        conclusion: raw.5,
        started_at: raw.6.map(|ms| iso_8601(ms, "Z")),
        completed_at: raw.7.map(|ms| iso_8601(ms, "Z")),
    })
}

pub(crate) fn all(
    sql: &rusqlite::Connection,
    path: &std::path::Path,
    t: Thread<'_>,
) -> Result<Vec<AgentTask>, StoreError> {
    let mut stmt = sql.prepare(&format!("{SELECT} ORDER BY task_id")).at(path)?;
    let rows = stmt.query_map(params![t.project, t.agent, t.name], row).at(path)?;
    let mut tasks = Vec::new();
    for (position, raw) in rows.enumerate() {
        tasks.push(into_task(raw.at(path)?, position as u64, path)?);
    }
    Ok(tasks)
}

fn one(tx: &Tx<'_>, t: Thread<'_>, task_id: u64) -> Result<AgentTask, StoreError> {
    all(tx.sql, tx.path, t)?
        .into_iter()
        .find(|task| task.task_id == task_id)
        .ok_or_else(|| StoreError::not_found("agent task", format!("{} of thread {:?}", task_id, t.name)))
}

fn refused(message: String) -> StoreError {
    StoreError::Refused { message }
}

fn save(tx: &Tx<'_>, t: Thread<'_>, task: &AgentTask) -> Result<AgentTaskMinimal, StoreError> {
    let subtasks = serde_json::to_string(&task.subtasks).unwrap_or_else(|_| "[]".into());
    tx.sql
        .execute(
            "UPDATE agent_tasks SET status = ?5, subtasks_json = ?6, conclusion = ?7
             WHERE project = ?1 AND agent = ?2 AND thread = ?3 AND task_id = ?4",
            params![
                t.project,
                t.agent,
                t.name,
                task.task_id as i64,
                status_text(task.status),
                subtasks,
                task.conclusion
            ],
        )
        .at(tx.path)?;
    Ok(AgentTaskMinimal { task_id: task.task_id, status: task.status })
}

fn check_text(what: &str, text: &str) -> Result<(), StoreError> {
    if text.trim().is_empty() || text.chars().count() > 2000 {
        return Err(StoreError::invalid(format!("{what} must have 1 to 2,000 characters, not only spaces")));
    }
    Ok(())
}

impl Store {
    /// The thread's tasks, by id.
    pub fn agent_tasks(&self, t: Thread<'_>) -> Result<Vec<AgentTask>, StoreError> {
        self.read(|sql, path| all(sql, path, t))
    }

    /// Adds a pending task with its subtasks (all pending) at the end of the thread.
    pub fn add_agent_task(
        &mut self,
        t: Thread<'_>,
        title: &str,
        description: Option<&str>,
        subtasks: &[String],
        request_id: Option<&str>,
    ) -> Result<AgentTaskMinimal, StoreError> {
        check_text("a task's title", title)?;
        for s in subtasks {
            check_text("a subtask's title", s)?;
        }
        let args = serde_json::json!({"agent": t.agent, "thread": t.name, "title": title,
            "description": description, "subtasks": subtasks});
        self.write_once_in(&format!("checklist:{}", t.project), request_id, "add_agent_task", &args, |tx| {
            let next: i64 = tx
                .sql
                .query_row(
                    "SELECT COALESCE(MAX(task_id), 0) + 1 FROM agent_tasks WHERE project = ?1 AND agent = ?2 AND thread = ?3",
                    params![t.project, t.agent, t.name],
                    |r| r.get(0),
                )
                .at(tx.path)?;
            let subtasks: Vec<AgentSubtask> =
                subtasks.iter().map(|s| AgentSubtask { title: s.clone(), status: AgentSubtaskStatus::Pending }).collect();
            tx.sql
                .execute(
                    "INSERT INTO agent_tasks (project, agent, thread, task_id, title, description, status, subtasks_json,
                     created_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'pending', ?7, ?8)",
                    params![
                        t.project,
                        t.agent,
                        t.name,
                        next,
                        title,
                        description,
                        serde_json::to_string(&subtasks).unwrap_or_else(|_| "[]".into()),
                        tx.now_ms
                    ],
                )
                .at(tx.path)?;
            Ok(AgentTaskMinimal { task_id: next as u64, status: AgentTaskStatus::Pending })
        })
    }

    /// Makes task `task_id` the thread's one task in progress.
    pub fn start_agent_task(
        &mut self,
        t: Thread<'_>,
        task_id: u64,
        request_id: Option<&str>,
    ) -> Result<AgentTaskMinimal, StoreError> {
        let args = serde_json::json!({"agent": t.agent, "thread": t.name, "task_id": task_id});
        self.write_once_in(&format!("checklist:{}", t.project), request_id, "start_agent_task", &args, |tx| {
            let mut task = one(tx, t, task_id)?;
            match task.status {
                AgentTaskStatus::Completed => return Err(refused(format!("task {task_id} is completed"))),
                AgentTaskStatus::InProgress => return Ok(AgentTaskMinimal { task_id, status: task.status }),
                AgentTaskStatus::Pending => {}
            }
            if let Some(active) = all(tx.sql, tx.path, t)?.into_iter().find(|o| o.status == AgentTaskStatus::InProgress) {
                return Err(refused(format!(
                    "task {} ({:?}) is in progress: complete it before starting task {task_id} (at most one task \
                     of a thread is in progress)",
                    active.task_id, active.title
                )));
            }
            task.status = AgentTaskStatus::InProgress;
            let done = save(tx, t, &task)?;
            tx.sql
                .execute(
                    "UPDATE agent_tasks SET started_ms = ?5 WHERE project = ?1 AND agent = ?2 AND thread = ?3 AND task_id = ?4",
                    params![t.project, t.agent, t.name, task_id as i64, tx.now_ms],
                )
                .at(tx.path)?;
            Ok(done)
        })
    }

    /// Marks subtask `index` (0 first) of task `task_id` done or pending again.
    pub fn set_agent_subtask(
        &mut self,
        t: Thread<'_>,
        task_id: u64,
        index: usize,
        status: AgentSubtaskStatus,
        request_id: Option<&str>,
    ) -> Result<AgentTaskMinimal, StoreError> {
        let args = serde_json::json!({"agent": t.agent, "thread": t.name, "task_id": task_id, "index": index,
            "status": status});
        self.write_once_in(&format!("checklist:{}", t.project), request_id, "update_agent_subtask", &args, |tx| {
            let mut task = one(tx, t, task_id)?;
            if task.status == AgentTaskStatus::Completed {
                return Err(refused(format!("task {task_id} is completed: its subtasks stay as they were")));
            }
            let count = task.subtasks.len();
            let Some(subtask) = task.subtasks.get_mut(index) else {
                return Err(StoreError::invalid(format!(
                    "task {task_id} has {count} subtasks: there is no subtask {index}"
                )));
            };
            subtask.status = status;
            save(tx, t, &task)
        })
    }

    /// Completes task `task_id` with `conclusion`, once every subtask is done.
    pub fn complete_agent_task(
        &mut self,
        t: Thread<'_>,
        task_id: u64,
        conclusion: &str,
        request_id: Option<&str>,
    ) -> Result<AgentTaskMinimal, StoreError> {
        check_text("a conclusion", conclusion)?;
        let args =
            serde_json::json!({"agent": t.agent, "thread": t.name, "task_id": task_id, "conclusion": conclusion});
        self.write_once_in(&format!("checklist:{}", t.project), request_id, "complete_agent_task", &args, |tx| {
            let mut task = one(tx, t, task_id)?;
            if task.status == AgentTaskStatus::Completed {
                return Err(refused(format!("task {task_id} is completed already")));
            }
            let open: Vec<String> = task
                .subtasks
                .iter()
                .enumerate()
                .filter(|(_, s)| s.status != AgentSubtaskStatus::Done)
                .map(|(i, s)| format!("{i} ({:?})", s.title))
                .collect();
            if !open.is_empty() {
                return Err(refused(format!("task {task_id} has subtasks not done: {}", open.join(", "))));
            }
            task.status = AgentTaskStatus::Completed;
            task.conclusion = Some(conclusion.to_string());
            let done = save(tx, t, &task)?;
            tx.sql
                .execute(
                    "UPDATE agent_tasks SET completed_ms = ?5 WHERE project = ?1 AND agent = ?2 AND thread = ?3 AND task_id = ?4",
                    params![t.project, t.agent, t.name, task_id as i64, tx.now_ms],
                )
                .at(tx.path)?;
            Ok(done)
        })
    }
}
