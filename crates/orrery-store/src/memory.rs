//! Agents' durable task memory (docs/format.md §7): what an agent is doing, kept across its
//! restarts and the store's crashes, scoped to a project and authored by an agent.
//!
//! - **Tasks** are named within their project; creating one again with the same goal answers
//!   the existing task, with another goal is refused (`task_exists`).
//! - **Events** are raw records appended to a task (a message, a tool call or its result, a
//!   note), numbered 1, 2, 3... per task, read in pages after a sequence number. A payload
//!   longer than [`MAX_PAYLOAD_CHARS`] characters keeps its first ones, marked `truncated`,
//!   with the sha256 of the whole text.
//! - **Steps** are named within a task (setting one again updates it), each with a state
//!   (`unknown` when its outcome is not known, e.g. after a crash) and optionally the event
//!   that holds its result, which must exist (`event_not_found`).
//! - **The resume view** of a task is bounded: its goal, status, last event number, at most
//!   [`MAX_VIEW_STEPS`] steps grouped by state in view order (in progress, failed, unknown,
//!   not started, completed; by name within each), so that what resuming must look at comes
//!   first, and the count of steps in every state; never an event's body.
//! - Every write takes an optional request id, scoped to the project: the same id and
//!   arguments answer the stored result, other arguments (or another write) are refused
//!   (`request_id_reused`).

use rusqlite::{params, OptionalExtension};
use serde::{Deserialize, Serialize};

use std::collections::BTreeMap;
use std::path::Path;

use crate::canonical::sha256_hex;
use crate::clock::iso_8601;
use crate::error::SqliteResultExt;
use crate::{Store, StoreError, Tx};

/// The longest payload kept whole, in characters.
pub const MAX_PAYLOAD_CHARS: usize = 32_000;
/// How many steps the resume view lists.
pub const MAX_VIEW_STEPS: usize = 50;
/// The largest page of events.
pub const MAX_MEMORY_PAGE: u32 = 200;
/// The longest task or step name, in characters.
pub const MAX_NAME_CHARS: usize = 200;

macro_rules! names {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident = $text:literal,)* }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
        pub enum $name {
            $($(#[$vdoc])* #[serde(rename = $text)] $variant,)*
        }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant,)*];

            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)*
                }
            }

            fn parse(text: &str) -> Option<$name> {
                match text {
                    $($text => Some($name::$variant),)*
                    _ => None,
                }
            }
        }
    };
}

names! {
    /// What an event of a task records.
    MemoryEventKind {
        /// A message of a conversation (`role` says whose).
        Message = "message",
        /// A call of a tool (`name` says which).
        ToolCall = "tool_call",
        /// What a tool answered (`name` says which).
        ToolResult = "tool_result",
        /// A note the agent keeps for itself.
        Note = "note",
    }
}

names! {
    /// Where a step of a task stands.
    MemoryStepState {
        NotStarted = "not_started",
        InProgress = "in_progress",
        Completed = "completed",
        Failed = "failed",
        /// Its outcome is not known (the agent lost track, a crash): resuming runs it again.
        Unknown = "unknown",
    }
}

names! {
    /// The broad category of a step.
    MemoryStepKind {
        Read = "read",
        Analysis = "analysis",
        Other = "other",
    }
}

/// A task, without its events and steps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MemoryTask {
    pub name: String,
    pub project_id: String,
    pub goal: String,
    /// `open`.
    pub status: String,
    /// The number of its last event; 0 before the first.
    pub event_seq: u64,
    /// The agent that created it.
    pub author: String,
    /// ISO 8601, UTC.
    pub created_at: String,
}

/// One event of a task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MemoryEvent {
    pub seq: u64,
    pub kind: MemoryEventKind,
    pub role: Option<String>,
    pub name: Option<String>,
    /// The text, its first [`MAX_PAYLOAD_CHARS`] characters when it was longer.
    pub payload: String,
    /// The sha256 of the whole text (hex, of its UTF-8).
    pub payload_sha256: String,
    /// Whether `payload` is cut.
    pub truncated: bool,
    pub author: String,
    /// ISO 8601, UTC.
    pub at: String,
}

/// One step of a task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MemoryStep {
    pub name: String,
    pub kind: MemoryStepKind,
    pub state: MemoryStepState,
    /// The event that holds its result.
    pub result_event_seq: Option<u64>,
    /// The task's last event number when the step was last set.
    pub updated_seq: u64,
}

/// A step as the task view and `list_steps` show it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StepSummary {
    pub name: String,
    pub kind: MemoryStepKind,
    pub state: MemoryStepState,
    pub result_event_seq: Option<u64>,
}

/// The bounded resume view of a task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TaskView {
    pub task_name: String,
    pub goal: String,
    pub status: String,
    pub last_event_seq: u64,
    /// At most [`MAX_VIEW_STEPS`] steps in all, by state (every state a key), by name in each.
    pub steps: BTreeMap<String, Vec<StepSummary>>,
    /// How many steps are in each state (every state a key), those not shown counted.
    pub step_counts: BTreeMap<String, u64>,
    /// Whether steps were left out of `steps`.
    pub steps_truncated: bool,
}

/// `get_task`'s answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TaskLookup {
    pub found: bool,
    pub view: Option<TaskView>,
}

/// A page of a task's events.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EventPage {
    pub found: bool,
    pub events: Vec<MemoryEvent>,
    /// Whether events follow this page.
    pub truncated: bool,
    /// When they do, `after_seq` for the next page: the last event's number here.
    pub next_after_seq: Option<u64>,
}

/// A new event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewMemoryEvent {
    pub kind: MemoryEventKind,
    pub role: Option<String>,
    pub name: Option<String>,
    pub payload: String,
}

/// A step set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepUpdate {
    pub name: String,
    pub state: MemoryStepState,
    pub kind: MemoryStepKind,
    pub result_event_seq: Option<u64>,
}

/// The order the resume view lists states in: what resuming must look at first.
const VIEW_ORDER: [MemoryStepState; 5] = [
    MemoryStepState::InProgress,
    MemoryStepState::Failed,
    MemoryStepState::Unknown,
    MemoryStepState::NotStarted,
    MemoryStepState::Completed,
];

fn check_name(what: &str, name: &str) -> Result<(), StoreError> {
    let n = name.chars().count();
    if n == 0 || n > MAX_NAME_CHARS || name.chars().any(char::is_control) {
        return Err(StoreError::invalid(format!(
            "{what} {name:?} must have 1 to {MAX_NAME_CHARS} characters, none of them a control character"
        )));
    }
    Ok(())
}

/// The scope a request id of the task memory lives in: its project's.
fn scope(project: &str) -> String {
    format!("memory:{project}")
}

fn task_row(
    sql: &rusqlite::Connection,
    path: &Path,
    project: &str,
    name: &str,
) -> Result<Option<MemoryTask>, StoreError> {
    sql.query_row(
        "SELECT name, goal, author, created_ms, last_event_seq FROM memory_tasks WHERE project = ?1 AND name = ?2",
        params![project, name],
        |r| {
            Ok(MemoryTask {
                name: r.get(0)?,
                project_id: project.to_string(),
                goal: r.get(1)?,
                status: "open".into(),
                author: r.get(2)?,
                created_at: iso_8601(r.get(3)?, "Z"),
                event_seq: r.get::<_, i64>(4)?.max(0) as u64,
            })
        },
    )
    .optional()
    .at(path)
}

fn require_task(tx: &Tx<'_>, project: &str, name: &str) -> Result<MemoryTask, StoreError> {
    task_row(tx.sql, tx.path, project, name)?
        .ok_or_else(|| StoreError::TaskNotFound { project: project.to_string(), name: name.to_string() })
}

type RawStep = (String, String, String, Option<i64>, i64);

const SELECT_STEP: &str = "SELECT name, state, kind, result_event_seq, updated_seq FROM memory_steps";

fn step_of(r: &rusqlite::Row<'_>) -> rusqlite::Result<RawStep> {
    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
}

fn into_step(raw: RawStep, path: &Path) -> Result<MemoryStep, StoreError> {
    let corrupt = |what: &str, v: &str| StoreError::Corrupt {
        path: path.to_path_buf(),
        detail: format!("step {:?} has the {what} {v:?}", raw.0),
    };
    Ok(MemoryStep {
        state: MemoryStepState::parse(&raw.1).ok_or_else(|| corrupt("state", &raw.1))?,
        kind: MemoryStepKind::parse(&raw.2).ok_or_else(|| corrupt("kind", &raw.2))?,
        result_event_seq: raw.3.map(|s| s.max(0) as u64),
        updated_seq: raw.4.max(0) as u64,
        name: raw.0,
    })
}

fn summary(step: MemoryStep) -> StepSummary {
    StepSummary { name: step.name, kind: step.kind, state: step.state, result_event_seq: step.result_event_seq }
}

fn steps_where(
    sql: &rusqlite::Connection,
    path: &Path,
    project: &str,
    task: &str,
    state: MemoryStepState,
    limit: Option<usize>,
) -> Result<Vec<MemoryStep>, StoreError> {
    let limit = limit.map_or(-1, |l| l as i64);
    let mut stmt = sql
        .prepare(&format!("{SELECT_STEP} WHERE project = ?1 AND task = ?2 AND state = ?3 ORDER BY name LIMIT ?4"))
        .at(path)?;
    let rows = stmt.query_map(params![project, task, state.as_str(), limit], step_of).at(path)?;
    rows.map(|r| r.at(path).and_then(|raw| into_step(raw, path))).collect()
}

pub(crate) const SELECT_EVENT: &str =
    "SELECT seq, kind, role, name, payload, payload_sha256, truncated, author, created_ms FROM memory_events";

/// The events of task `task` that `stmt` (a [`SELECT_EVENT`] query) finds.
pub(crate) fn events_of(
    stmt: &mut rusqlite::Statement<'_>,
    args: impl rusqlite::Params,
    path: &Path,
    task: &str,
) -> Result<Vec<MemoryEvent>, StoreError> {
    let rows = stmt
        .query_map(args, |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, Option<String>>(2)?,
                r.get::<_, Option<String>>(3)?,
                r.get::<_, String>(4)?,
                r.get::<_, String>(5)?,
                r.get::<_, bool>(6)?,
                r.get::<_, String>(7)?,
                r.get::<_, i64>(8)?,
            ))
        })
        .at(path)?;
    let mut events = Vec::new();
    for row in rows {
        let (seq, kind, role, name, payload, payload_sha256, truncated, author, created_ms) = row.at(path)?;
        let kind = MemoryEventKind::parse(&kind).ok_or_else(|| StoreError::Corrupt {
            path: path.to_path_buf(),
            detail: format!("event {seq} of task {task:?} has the kind {kind:?}"),
        })?;
        let at = iso_8601(created_ms, "Z");
        let seq = seq.max(0) as u64;
        events.push(MemoryEvent { seq, kind, role, name, payload, payload_sha256, truncated, author, at });
    }
    Ok(events)
}

impl Store {
    /// Creates task `name` of `project` with `goal`, or answers the existing one when its goal
    /// is the same (`task_exists` when it is not).
    pub fn create_memory_task(
        &mut self,
        project: &str,
        agent: &str,
        name: &str,
        goal: &str,
        request_id: Option<&str>,
    ) -> Result<MemoryTask, StoreError> {
        check_name("task name", name)?;
        let args = serde_json::json!({"name": name, "goal": goal});
        self.write_once_in(&scope(project), request_id, "create_task", &args, |tx| {
            if let Some(task) = task_row(tx.sql, tx.path, project, name)? {
                if task.goal != goal {
                    return Err(StoreError::TaskExists { name: name.to_string(), goal: task.goal });
                }
                return Ok(task);
            }
            tx.sql
                .execute(
                    "INSERT INTO memory_tasks (project, name, goal, author, created_ms, updated_ms)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?5)",
                    params![project, name, goal, agent, tx.now_ms],
                )
                .at(tx.path)?;
            require_task(tx, project, name)
        })
    }

    /// The resume view of task `name` (`found: false` when the project has none).
    pub fn memory_task(&self, project: &str, name: &str) -> Result<TaskLookup, StoreError> {
        self.read(|sql, path| {
            let Some(task) = task_row(sql, path, project, name)? else {
                return Ok(TaskLookup { found: false, view: None });
            };
            let mut counts: BTreeMap<String, u64> =
                MemoryStepState::ALL.iter().map(|s| (s.as_str().to_string(), 0)).collect();
            let mut stmt = sql
                .prepare("SELECT state, COUNT(*) FROM memory_steps WHERE project = ?1 AND task = ?2 GROUP BY state")
                .at(path)?;
            let rows = stmt
                .query_map(params![project, name], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))
                .at(path)?;
            for row in rows {
                let (state, n) = row.at(path)?;
                counts.insert(state, n.max(0) as u64);
            }
            let mut steps = BTreeMap::new();
            let mut room = MAX_VIEW_STEPS;
            for state in VIEW_ORDER {
                let shown = steps_where(sql, path, project, name, state, Some(room))?;
                room -= shown.len();
                steps.insert(state.as_str().to_string(), shown.into_iter().map(summary).collect::<Vec<_>>());
            }
            let total: u64 = counts.values().sum();
            Ok(TaskLookup {
                found: true,
                view: Some(TaskView {
                    task_name: task.name,
                    goal: task.goal,
                    status: task.status,
                    last_event_seq: task.event_seq,
                    steps_truncated: total > (MAX_VIEW_STEPS - room) as u64,
                    steps,
                    step_counts: counts,
                }),
            })
        })
    }

    /// Appends an event to task `task`, its payload cut at [`MAX_PAYLOAD_CHARS`] characters.
    pub fn record_memory_event(
        &mut self,
        project: &str,
        agent: &str,
        task: &str,
        event: &NewMemoryEvent,
        request_id: Option<&str>,
    ) -> Result<MemoryEvent, StoreError> {
        let sha = sha256_hex(&event.payload);
        let args = serde_json::json!({"task_name": task, "kind": event.kind, "role": event.role, "name": event.name,
            "payload_sha256": sha});
        self.write_once_in(&scope(project), request_id, "record_event", &args, |tx| {
            let current = require_task(tx, project, task)?;
            let seq = current.event_seq + 1;
            let truncated = event.payload.chars().nth(MAX_PAYLOAD_CHARS).is_some();
            let kept: String = event.payload.chars().take(MAX_PAYLOAD_CHARS).collect();
            tx.sql
                .execute(
                    "INSERT INTO memory_events (project, task, seq, kind, role, name, payload, truncated,
                     payload_sha256, author, created_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                    params![
                        project,
                        task,
                        seq as i64,
                        event.kind.as_str(),
                        event.role,
                        event.name,
                        kept,
                        truncated,
                        sha,
                        agent,
                        tx.now_ms
                    ],
                )
                .at(tx.path)?;
            tx.sql
                .execute(
                    "UPDATE memory_tasks SET last_event_seq = ?3, updated_ms = ?4 WHERE project = ?1 AND name = ?2",
                    params![project, task, seq as i64, tx.now_ms],
                )
                .at(tx.path)?;
            Ok(MemoryEvent {
                seq,
                kind: event.kind,
                role: event.role.clone(),
                name: event.name.clone(),
                payload: kept,
                payload_sha256: sha.clone(),
                truncated,
                author: agent.to_string(),
                at: iso_8601(tx.now_ms, "Z"),
            })
        })
    }

    /// The events of task `task` after `after_seq`, at most `limit` (1 to [`MAX_MEMORY_PAGE`]).
    pub fn memory_events(
        &self,
        project: &str,
        task: &str,
        after_seq: u64,
        limit: u32,
    ) -> Result<EventPage, StoreError> {
        if !(1..=MAX_MEMORY_PAGE).contains(&limit) {
            return Err(StoreError::invalid(format!("limit {limit} is outside 1..={MAX_MEMORY_PAGE}")));
        }
        self.read(|sql, path| {
            let Some(found) = task_row(sql, path, project, task)? else {
                return Ok(EventPage { found: false, events: Vec::new(), truncated: false, next_after_seq: None });
            };
            let mut stmt = sql
                .prepare(&format!("{SELECT_EVENT} WHERE project = ?1 AND task = ?2 AND seq > ?3 ORDER BY seq LIMIT ?4"))
                .at(path)?;
            let after = i64::try_from(after_seq).unwrap_or(i64::MAX);
            let events = events_of(&mut stmt, params![project, task, after, limit], path, task)?;
            let last = events.last().map(|e| e.seq);
            let truncated = last.is_some_and(|seq| seq < found.event_seq);
            Ok(EventPage { found: true, events, truncated, next_after_seq: last.filter(|_| truncated) })
        })
    }

    /// Creates or updates step `update.name` of task `task`.
    pub fn set_memory_step(
        &mut self,
        project: &str,
        task: &str,
        update: &StepUpdate,
        request_id: Option<&str>,
    ) -> Result<MemoryStep, StoreError> {
        check_name("step name", &update.name)?;
        let args = serde_json::json!({"task_name": task, "name": update.name, "state": update.state,
            "kind": update.kind, "result_event_seq": update.result_event_seq});
        self.write_once_in(&scope(project), request_id, "set_step", &args, |tx| {
            let current = require_task(tx, project, task)?;
            if let Some(seq) = update.result_event_seq {
                if seq == 0 || seq > current.event_seq {
                    return Err(StoreError::EventNotFound { task: task.to_string(), seq });
                }
            }
            tx.sql
                .execute(
                    "INSERT INTO memory_steps (project, task, name, state, kind, result_event_seq, updated_seq,
                     created_ms, updated_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8)
                     ON CONFLICT (project, task, name) DO UPDATE SET state = excluded.state, kind = excluded.kind,
                     result_event_seq = excluded.result_event_seq, updated_seq = excluded.updated_seq,
                     updated_ms = excluded.updated_ms",
                    params![
                        project,
                        task,
                        update.name,
                        update.state.as_str(),
                        update.kind.as_str(),
                        update.result_event_seq.map(|s| s as i64),
                        current.event_seq as i64,
                        tx.now_ms
                    ],
                )
                .at(tx.path)?;
            tx.sql
                .execute(
                    "UPDATE memory_tasks SET updated_ms = ?3 WHERE project = ?1 AND name = ?2",
                    params![project, task, tx.now_ms],
                )
                .at(tx.path)?;
            let raw = tx
                .sql
                .query_row(
                    &format!("{SELECT_STEP} WHERE project = ?1 AND task = ?2 AND name = ?3"),
                    params![project, task, update.name],
                    step_of,
                )
                .at(tx.path)?;
            into_step(raw, tx.path)
        })
    }

    /// Every step of task `task` in `state`, by name, not capped; none when there is no such
    /// task.
    pub fn memory_steps(
        &self,
        project: &str,
        task: &str,
        state: MemoryStepState,
    ) -> Result<Vec<StepSummary>, StoreError> {
        self.read(|sql, path| {
            Ok(steps_where(sql, path, project, task, state, None)?.into_iter().map(summary).collect())
        })
    }
}
