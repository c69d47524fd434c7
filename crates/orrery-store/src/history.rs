//! A session's history, to look at it as it stood at any moment (docs/format.md §4, "Time
//! travel"): every change of its tasks' states and of its own, from the event log, and every
//! value its data held, from `data_history` (schema 21: a session from before keeps each key's
//! last value only). Compact, because a run of 10,000 tasks changes states some 40,000 times:
//! nodes are named once and the changes refer to them by index.

use std::collections::HashMap;

use orrery_blueprint::{SessionState, TaskState};
use rusqlite::params;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::SqliteResultExt;
use crate::refusals::require_session;
use crate::{Store, StoreError};

/// What [`Store::history`] answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionHistory {
    /// The task nodes the changes name (`{instance}.{task}`), by index.
    pub nodes: Vec<String>,
    /// Every change of a task's state, in commit order.
    pub changes: Vec<StateChange>,
    /// Every change of the session's own state, in commit order.
    pub session: Vec<SessionChange>,
    /// Every value written to the session's data, in commit order.
    pub data: Vec<DataWrite>,
}

/// A task's state changed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StateChange {
    /// When, ms since the epoch.
    pub at: i64,
    /// The event's sequence number in its session.
    pub seq: u64,
    /// Its node: an index into [`SessionHistory::nodes`].
    pub node: u32,
    pub state: TaskState,
}

/// The session's state changed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionChange {
    pub at: i64,
    pub seq: u64,
    pub state: SessionState,
}

/// A value written to the session's data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DataWrite {
    pub at: i64,
    pub instance: String,
    pub key: String,
    pub value: Value,
    /// The attempt whose outputs wrote it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// The person's edit that set it (`data_edited`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edit_id: Option<i64>,
}

impl Store {
    /// The history of session `session_id` (see the module notes).
    pub fn history(&self, session_id: &str) -> Result<SessionHistory, StoreError> {
        self.read(|conn, path| {
            require_session(conn, path, session_id)?;
            let mut history =
                SessionHistory { nodes: Vec::new(), changes: Vec::new(), session: Vec::new(), data: Vec::new() };
            let mut index: HashMap<String, u32> = HashMap::new();
            // The payloads of state changes are small: never cut, read in place.
            let mut stmt = conn
                .prepare_cached(
                    "SELECT time_ms, seq, kind, json_extract(payload, '$.node'), json_extract(payload, '$.state')
                     FROM events
                     WHERE session_id = ?1 AND kind IN ('task_state_changed', 'session_state_changed')
                       AND full_len IS NULL
                     ORDER BY seq",
                )
                .at(path)?;
            let mut rows = stmt.query(params![session_id]).at(path)?;
            while let Some(row) = rows.next().at(path)? {
                let (at, seq, kind): (i64, i64, String) =
                    (row.get(0).at(path)?, row.get(1).at(path)?, row.get(2).at(path)?);
                let state: Option<String> = row.get(4).at(path)?;
                let Some(state) = state else { continue };
                let seq = seq as u64;
                if kind == "session_state_changed" {
                    if let Some(state) = SessionState::parse(&state) {
                        history.session.push(SessionChange { at, seq, state });
                    }
                    continue;
                }
                let (Some(node), Some(state)) = (row.get::<_, Option<String>>(3).at(path)?, TaskState::parse(&state))
                else {
                    continue;
                };
                let next = history.nodes.len() as u32;
                let node = *index.entry(node).or_insert_with_key(|name| {
                    history.nodes.push(name.clone());
                    next
                });
                history.changes.push(StateChange { at, seq, node, state });
            }
            let mut stmt = conn
                .prepare_cached(
                    "SELECT time_ms, instance, key, value_json, run_id, edit_id FROM data_history
                     WHERE session_id = ?1 ORDER BY id",
                )
                .at(path)?;
            let mut rows = stmt.query(params![session_id]).at(path)?;
            while let Some(row) = rows.next().at(path)? {
                let text: String = row.get(3).at(path)?;
                let write = DataWrite {
                    at: row.get(0).at(path)?,
                    instance: row.get(1).at(path)?,
                    key: row.get(2).at(path)?,
                    value: orrery_blueprint::json::from_str(&text).unwrap_or(Value::String(text)),
                    run_id: row.get(4).at(path)?,
                    edit_id: row.get(5).at(path)?,
                };
                // A value set by a person is written, then named its edit: one write.
                match history.data.last_mut() {
                    Some(last)
                        if last.at == write.at
                            && last.instance == write.instance
                            && last.key == write.key
                            && last.value == write.value =>
                    {
                        *last = write
                    }
                    _ => history.data.push(write),
                }
            }
            Ok(history)
        })
    }
}
