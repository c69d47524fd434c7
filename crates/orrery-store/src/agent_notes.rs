//! What the agent that started a session wrote while it was the agent's latest (docs/format.md
//! §7): its task memory and its checklists, to show beside the session.
//!
//! The window is from the session's creation until the same caller (project and agent) created
//! its next session, open while there is none: an agent records what came of a run after the
//! run ended, and the notes of its next run belong to that one. Memory tasks are those with an
//! event by the agent in the window, most recently written first, each with its resume view and
//! its last events of the window; checklist tasks are those that were open at some moment of
//! the window (created before its end, not completed before its start), by thread.

use rusqlite::{params, OptionalExtension};
use serde::{Deserialize, Serialize};

use crate::checklists::{self, AgentTask, Thread};
use crate::clock::iso_8601;
use crate::error::SqliteResultExt;
use crate::memory::{events_of, MemoryEvent, TaskView, SELECT_EVENT};
use crate::sessions::Starter;
use crate::{Store, StoreError};

/// How many memory tasks the notes show.
pub const MAX_NOTE_TASKS: usize = 20;
/// How many events of each task the notes show (the window's last).
pub const MAX_NOTE_EVENTS: usize = 50;
/// How much of an event's payload the notes show, in characters (the rest is one `get` away).
pub const MAX_NOTE_PAYLOAD_CHARS: usize = 2_000;

/// The agent's notes beside a session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SessionNotes {
    pub session_id: String,
    /// Who started it; `None` for a session stored before Orrery kept it (then nothing else).
    pub started_by: Option<Starter>,
    /// The window's start: the session's creation (ISO 8601, UTC).
    pub from: String,
    /// The window's end: when the same caller created its next session; `None` while open.
    pub until: Option<String>,
    pub memory: Vec<MemoryNotes>,
    /// Whether more memory tasks than [`MAX_NOTE_TASKS`] had events in the window.
    pub memory_truncated: bool,
    pub checklists: Vec<ChecklistNotes>,
}

/// A memory task the agent wrote to in the window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MemoryNotes {
    pub view: TaskView,
    /// Its agent's events of the window, oldest first: the last [`MAX_NOTE_EVENTS`], each
    /// payload at most [`MAX_NOTE_PAYLOAD_CHARS`] characters (`truncated` when cut).
    pub events: Vec<MemoryEvent>,
    /// How many of its agent's events fall in the window, those not shown counted.
    pub events_in_window: u64,
}

/// A checklist thread with tasks open in the window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ChecklistNotes {
    pub thread: String,
    /// Those tasks, in the thread's order (`position` is their place in the whole thread).
    pub tasks: Vec<AgentTask>,
}

impl Store {
    /// The notes of the agent that started session `id`.
    pub fn session_notes(&self, id: &str) -> Result<SessionNotes, StoreError> {
        let session = self.session(id)?;
        let from_ms = session.created_ms;
        let mut notes = SessionNotes {
            session_id: session.id.clone(),
            started_by: session.started_by.clone(),
            from: iso_8601(from_ms, "Z"),
            until: None,
            memory: Vec::new(),
            memory_truncated: false,
            checklists: Vec::new(),
        };
        let Some(starter) = session.started_by else { return Ok(notes) };
        let (project, agent) = (starter.project.as_str(), starter.agent.as_str());
        let until_ms: Option<i64> = self.read(|sql, path| {
            sql.query_row(
                "SELECT MIN(created_ms) FROM sessions WHERE started_project = ?1 AND started_agent = ?2
                 AND (created_ms > ?3 OR (created_ms = ?3 AND rowid > (SELECT rowid FROM sessions WHERE id = ?4)))",
                params![project, agent, from_ms, id],
                |r| r.get(0),
            )
            .optional()
            .at(path)
            .map(Option::flatten)
        })?;
        notes.until = until_ms.map(|ms| iso_8601(ms, "Z"));
        let end = until_ms.unwrap_or(i64::MAX);

        let (tasks, more) = self.read(|sql, path| {
            let mut stmt = sql
                .prepare(
                    "SELECT task, COUNT(*) FROM memory_events
                     WHERE project = ?1 AND author = ?2 AND created_ms >= ?3 AND created_ms < ?4
                     GROUP BY task ORDER BY MAX(created_ms) DESC, task LIMIT ?5",
                )
                .at(path)?;
            let rows = stmt
                .query_map(params![project, agent, from_ms, end, MAX_NOTE_TASKS as i64 + 1], |r| {
                    Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?))
                })
                .at(path)?;
            let mut tasks = rows.collect::<Result<Vec<_>, _>>().at(path)?;
            let more = tasks.len() > MAX_NOTE_TASKS;
            tasks.truncate(MAX_NOTE_TASKS);
            Ok((tasks, more))
        })?;
        notes.memory_truncated = more;
        for (task, count) in tasks {
            let Some(view) = self.memory_task(project, &task)?.view else { continue };
            let mut events = self.read(|sql, path| {
                let mut stmt = sql
                    .prepare(&format!(
                        "{SELECT_EVENT} WHERE project = ?1 AND task = ?2 AND author = ?3
                         AND created_ms >= ?4 AND created_ms < ?5 ORDER BY seq DESC LIMIT ?6"
                    ))
                    .at(path)?;
                events_of(&mut stmt, params![project, task, agent, from_ms, end, MAX_NOTE_EVENTS as i64], path, &task)
            })?;
            events.reverse();
            for event in &mut events {
                if let Some((cut, _)) = event.payload.char_indices().nth(MAX_NOTE_PAYLOAD_CHARS) {
                    event.payload.truncate(cut);
                    event.truncated = true;
                }
            }
            notes.memory.push(MemoryNotes { view, events, events_in_window: count.max(0) as u64 });
        }

        let open: Vec<(String, i64)> = self.read(|sql, path| {
            let mut stmt = sql
                .prepare(
                    "SELECT thread, task_id FROM agent_tasks WHERE project = ?1 AND agent = ?2
                     AND created_ms < ?4 AND (completed_ms IS NULL OR completed_ms >= ?3) ORDER BY thread, task_id",
                )
                .at(path)?;
            let rows =
                stmt.query_map(params![project, agent, from_ms, end], |r| Ok((r.get(0)?, r.get(1)?))).at(path)?;
            rows.collect::<Result<Vec<_>, _>>().at(path)
        })?;
        let mut threads: Vec<&str> = open.iter().map(|(thread, _)| thread.as_str()).collect();
        threads.dedup();
        for thread in threads {
            let ids: Vec<u64> = open.iter().filter(|(t, _)| t == thread).map(|(_, id)| *id as u64).collect();
            let t = Thread { project, agent, name: thread };
            let tasks = self.read(|sql, path| checklists::all(sql, path, t))?;
            let tasks = tasks.into_iter().filter(|task| ids.contains(&task.task_id)).collect();
            notes.checklists.push(ChecklistNotes { thread: thread.to_string(), tasks });
        }
        Ok(notes)
    }
}
