//! Task nodes of a session's flattened graph: a node is `"{blueprint_instance}.{task_id}"` with
//! its antikythera task state, set by the engine and by the attempts made at it. Apart from the
//! attempts because a node's state has its own writers (scheduling, skips, resets) and its own
//! event, `task_state_changed`.

use std::path::Path;

use rusqlite::{params, OptionalExtension};
use serde::{Deserialize, Serialize};

use crate::error::SqliteResultExt;
use crate::event_data::{EventData, TaskStateChanged};
use crate::events::{append, Event};
use crate::records::TaskState;
use crate::refusals::require_session;
use crate::{Store, StoreError, Tx};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TaskNode {
    pub session_id: String,
    /// The node's key, `"{instance}.{task}"`.
    pub node: String,
    /// The blueprint instance the task is in.
    pub instance: String,
    /// The task's id in its blueprint.
    pub task: String,
    pub state: TaskState,
    pub updated_ms: i64,
}

impl Store {
    /// Sets the state of nodes (creating those not seen before), appending one
    /// `task_state_changed` event per node whose state changed, all in one transaction.
    pub fn set_task_states(
        &mut self,
        session_id: &str,
        changes: &[(&str, TaskState)],
    ) -> Result<Vec<Event>, StoreError> {
        if let Some((node, _)) = changes.iter().find(|(node, _)| node.is_empty()) {
            return Err(StoreError::invalid(format!("node name {node:?} is empty")));
        }
        self.write(|tx| {
            require_session(tx.sql, tx.path, session_id)?;
            let mut events = Vec::new();
            for (node, state) in changes {
                if let Some(event) = set_node_state(tx, session_id, node, *state)? {
                    events.push(event);
                }
            }
            Ok(events)
        })
    }

    /// One node's state; see [`Store::set_task_states`]. `None` when it was already so.
    pub fn set_task_state(
        &mut self,
        session_id: &str,
        node: &str,
        state: TaskState,
    ) -> Result<Option<Event>, StoreError> {
        Ok(self.set_task_states(session_id, &[(node, state)])?.pop())
    }

    pub fn task_node(&self, session_id: &str, node: &str) -> Result<TaskNode, StoreError> {
        self.conn
            .query_row(
                "SELECT session_id, node, state, updated_ms FROM task_nodes
                 WHERE session_id = ?1 AND node = ?2",
                [session_id, node],
                node_row,
            )
            .optional()
            .at(&self.path)?
            .ok_or_else(|| StoreError::not_found("task node", format!("{session_id}/{node}")))?
            .into_node(&self.path)
    }

    /// Every node of a session, by name.
    pub fn task_nodes(&self, session_id: &str) -> Result<Vec<TaskNode>, StoreError> {
        self.read(|conn, path| {
            require_session(conn, path, session_id)?;
            let mut stmt = conn
                .prepare(
                    "SELECT session_id, node, state, updated_ms FROM task_nodes
                     WHERE session_id = ?1 ORDER BY node",
                )
                .at(path)?;
            let rows = stmt.query_map([session_id], node_row).at(path)?;
            rows.map(|r| r.at(path).and_then(|raw| raw.into_node(path))).collect()
        })
    }
}

/// Upserts one node's state inside a transaction; an event only when the state changed.
pub(crate) fn set_node_state(
    tx: &Tx<'_>,
    session_id: &str,
    node: &str,
    state: TaskState,
) -> Result<Option<Event>, StoreError> {
    let previous: Option<String> = tx
        .sql
        .prepare_cached("SELECT state FROM task_nodes WHERE session_id = ?1 AND node = ?2")
        .and_then(|mut s| s.query_row([session_id, node], |r| r.get(0)).optional())
        .at(tx.path)?;
    if previous.as_deref() == Some(state.as_str()) {
        return Ok(None);
    }
    tx.sql
        .prepare_cached(
            "INSERT INTO task_nodes (session_id, node, state, updated_ms) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (session_id, node) DO UPDATE SET state = ?3, updated_ms = ?4",
        )
        .and_then(|mut s| s.execute(params![session_id, node, state.as_str(), tx.now_ms]))
        .at(tx.path)?;
    let (instance, task_id) = crate::records::split_node(node);
    let changed = TaskStateChanged {
        node: node.to_string(),
        blueprint_id: instance.to_string(),
        task_id: task_id.to_string(),
        state,
        previous: previous.as_deref().and_then(TaskState::parse),
    };
    append(tx, session_id, None, EventData::TaskStateChanged(changed)).map(Some)
}

struct RawNode {
    session_id: String,
    node: String,
    state: String,
    updated_ms: i64,
}

fn node_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<RawNode> {
    Ok(RawNode { session_id: row.get(0)?, node: row.get(1)?, state: row.get(2)?, updated_ms: row.get(3)? })
}

impl RawNode {
    fn into_node(self, path: &Path) -> Result<TaskNode, StoreError> {
        let state = TaskState::parse(&self.state).ok_or_else(|| StoreError::Corrupt {
            path: path.to_path_buf(),
            detail: format!("node {:?} of session {:?} has state {:?}", self.node, self.session_id, self.state),
        })?;
        let (instance, task) = crate::records::split_node(&self.node);
        let (instance, task) = (instance.to_string(), task.to_string());
        Ok(TaskNode {
            session_id: self.session_id,
            node: self.node,
            instance,
            task,
            state,
            updated_ms: self.updated_ms,
        })
    }
}
