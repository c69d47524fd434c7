//! The refusals of a write or a read that names a session or an attempt it cannot act on: the
//! session does not exist, the run is not running. Each table's module refuses the same way;
//! apart from the sessions and attempts modules because those append events, and the journal
//! refuses too.

use std::path::Path;

use rusqlite::{Connection, OptionalExtension};

use crate::error::SqliteResultExt;
use crate::records::RunId;
use crate::StoreError;

/// The error for a read or a write about a session `id` that this store does not hold.
pub(crate) fn require_session(conn: &Connection, path: &Path, id: &str) -> Result<(), StoreError> {
    let found =
        conn.prepare_cached("SELECT 1 FROM sessions WHERE id = ?1").and_then(|mut s| s.exists([id])).at(path)?;
    if found {
        Ok(())
    } else {
        Err(StoreError::not_found("session", id))
    }
}

/// The error for a write refused because `run_id` is not running (or does not exist).
pub(crate) fn stale(conn: &Connection, run_id: &RunId) -> StoreError {
    let state: Option<String> = conn
        .query_row("SELECT state FROM task_runs WHERE run_id = ?1", [run_id.as_str()], |r| r.get(0))
        .optional()
        .unwrap_or(None);
    match state {
        Some(state) => StoreError::StaleRun { run_id: run_id.to_string(), state },
        None => StoreError::StaleRun { run_id: run_id.to_string(), state: "unknown to this store".into() },
    }
}
