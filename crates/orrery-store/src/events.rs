//! The append-only event log of a session: what the engine announces, in commit order.
//!
//! `seq` is gapless per session: it is computed as `MAX(seq) + 1` inside the write lock (every
//! write is `BEGIN IMMEDIATE`) and the primary key `(session_id, seq)` refuses a duplicate.
//! Events are never updated or deleted (except with their session). `global_seq` orders every
//! session's events together, the same way (`MAX + 1` under the write lock, unique): the order
//! in which they were committed, which a client following the whole store resumes from
//! ([`Store::events_since`]).

use rusqlite::{params, Connection, OptionalExtension};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::attempts::RunId;
use crate::canonical::sha256_hex;
use crate::error::SqliteResultExt;
use crate::{Store, StoreError, Tx};

/// Payloads longer than this (in bytes of JSON text) are cut; the event keeps the full text's
/// length and sha256.
pub const MAX_EVENT_PAYLOAD_BYTES: usize = 64 * 1024;

/// The largest page [`Store::events_after`] returns (docs/format.md §7: 1..200).
pub const MAX_PAGE_LIMIT: u32 = 200;

/// Event kinds the store itself appends; callers may append any other kind.
pub mod kinds {
    pub const SESSION_CREATED: &str = "session_created";
    pub const SESSION_STATE_CHANGED: &str = "session_state_changed";
    pub const TASK_STATE_CHANGED: &str = "task_state_changed";
    pub const ATTEMPT_STARTED: &str = "attempt_started";
    pub const ATTEMPT_SETTLED: &str = "attempt_settled";
    pub const PROGRESS: &str = "progress";
    pub const DATA_UPDATED: &str = "data_updated";
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    pub session_id: String,
    pub seq: u64,
    /// Its place among every session's events of the store: 1, 2, 3... in commit order.
    pub global_seq: u64,
    pub time_ms: i64,
    pub kind: String,
    pub run_id: Option<RunId>,
    pub payload: EventPayload,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "form", rename_all = "snake_case")]
pub enum EventPayload {
    Whole {
        value: Value,
    },
    /// The first bytes of the JSON text (cut at a character boundary, so not valid JSON), with
    /// the length and sha256 of the full text.
    Cut {
        prefix: String,
        full_len: u64,
        full_sha256: String,
    },
}

/// An event a caller appends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewEvent {
    pub kind: String,
    pub run_id: Option<RunId>,
    pub payload: Value,
}

impl Store {
    /// Appends one event to a session's log.
    pub fn append_event(
        &mut self,
        session_id: &str,
        event: &NewEvent,
        request_id: Option<&str>,
    ) -> Result<Event, StoreError> {
        if event.kind.is_empty() {
            return Err(StoreError::invalid("an event needs a kind"));
        }
        let args = (session_id, event);
        self.write_once(request_id, "append_event", &args, |tx| {
            crate::sessions::require_session(tx.sql, tx.path, session_id)?;
            append(tx, session_id, &event.kind, event.run_id.as_ref(), &event.payload)
        })
    }

    /// Up to `limit` (1..=200) events of a session with `seq > after_seq`, oldest first.
    pub fn events_after(&self, session_id: &str, after_seq: u64, limit: u32) -> Result<Vec<Event>, StoreError> {
        if !(1..=MAX_PAGE_LIMIT).contains(&limit) {
            return Err(StoreError::invalid(format!("limit {limit} is outside 1..={MAX_PAGE_LIMIT}")));
        }
        self.read(|conn, path| {
            crate::sessions::require_session(conn, path, session_id)?;
            let mut stmt = conn
                .prepare_cached(
                    "SELECT session_id, seq, time_ms, kind, run_id, payload, full_len, full_sha256, global_seq
                     FROM events WHERE session_id = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3",
                )
                .at(path)?;
            let rows = stmt
                .query_map(params![session_id, after_seq.min(i64::MAX as u64) as i64, limit], event_row)
                .at(path)?;
            rows.map(|r| r.at(path).and_then(|raw| raw.into_event(path))).collect()
        })
    }

    /// The latest event of kind `kind` of a session.
    pub fn last_event_of(&self, session_id: &str, kind: &str) -> Result<Option<Event>, StoreError> {
        let raw = self.read(|conn, path| {
            conn.prepare_cached(
                "SELECT session_id, seq, time_ms, kind, run_id, payload, full_len, full_sha256, global_seq
                 FROM events WHERE session_id = ?1 AND kind = ?2 ORDER BY seq DESC LIMIT 1",
            )
            .at(path)?
            .query_row(params![session_id, kind], event_row)
            .optional()
            .at(path)
        })?;
        raw.map(|r| r.into_event(&self.path)).transpose()
    }

    /// The events of kind `kind` about the attempt `run_id`, oldest first (the first 200).
    pub fn run_events(&self, run_id: &RunId, kind: &str) -> Result<Vec<Event>, StoreError> {
        self.read(|conn, path| {
            let mut stmt = conn
                .prepare_cached(
                    "SELECT session_id, seq, time_ms, kind, run_id, payload, full_len, full_sha256, global_seq
                     FROM events WHERE run_id = ?1 AND kind = ?2 ORDER BY seq LIMIT ?3",
                )
                .at(path)?;
            let rows = stmt.query_map(params![run_id.as_str(), kind, MAX_PAGE_LIMIT], event_row).at(path)?;
            rows.map(|r| r.at(path).and_then(|raw| raw.into_event(path))).collect()
        })
    }

    /// Up to `limit` (1..=200) events of every session with `global_seq > after`, in commit
    /// order: what a client that saw everything up to `after` missed.
    pub fn events_since(&self, after: u64, limit: u32) -> Result<Vec<Event>, StoreError> {
        if !(1..=MAX_PAGE_LIMIT).contains(&limit) {
            return Err(StoreError::invalid(format!("limit {limit} is outside 1..={MAX_PAGE_LIMIT}")));
        }
        self.read(|conn, path| {
            let mut stmt = conn
                .prepare_cached(
                    "SELECT session_id, seq, time_ms, kind, run_id, payload, full_len, full_sha256, global_seq
                     FROM events WHERE global_seq > ?1 ORDER BY global_seq LIMIT ?2",
                )
                .at(path)?;
            let rows = stmt.query_map(params![after.min(i64::MAX as u64) as i64, limit], event_row).at(path)?;
            rows.map(|r| r.at(path).and_then(|raw| raw.into_event(path))).collect()
        })
    }

    /// The highest `global_seq` of the store (0 when it has no event).
    pub fn last_global_seq(&self) -> Result<u64, StoreError> {
        self.read(last_global_seq)
    }

    /// The highest event seq of a session (0 when it has none).
    pub fn last_event_seq(&self, session_id: &str) -> Result<u64, StoreError> {
        self.read(|conn, path| {
            crate::sessions::require_session(conn, path, session_id)?;
            last_seq(conn, path, session_id)
        })
    }
}

pub(crate) fn last_seq(conn: &Connection, path: &std::path::Path, session_id: &str) -> Result<u64, StoreError> {
    let seq: i64 = conn
        .prepare_cached("SELECT COALESCE(MAX(seq), 0) FROM events WHERE session_id = ?1")
        .and_then(|mut s| s.query_row([session_id], |r| r.get(0)))
        .at(path)?;
    Ok(seq as u64)
}

fn last_global_seq(conn: &Connection, path: &std::path::Path) -> Result<u64, StoreError> {
    let seq: i64 = conn
        .prepare_cached("SELECT COALESCE(MAX(global_seq), 0) FROM events")
        .and_then(|mut s| s.query_row([], |r| r.get(0)))
        .at(path)?;
    Ok(seq as u64)
}

/// Appends an event inside the caller's transaction; every announced write goes through here.
pub(crate) fn append(
    tx: &Tx<'_>,
    session_id: &str,
    kind: &str,
    run_id: Option<&RunId>,
    payload: &Value,
) -> Result<Event, StoreError> {
    let seq = last_seq(tx.sql, tx.path, session_id)? + 1;
    let global_seq = last_global_seq(tx.sql, tx.path)? + 1;
    let text = payload.to_string();
    let (stored, full_len, full_sha256, event_payload) = if text.len() > MAX_EVENT_PAYLOAD_BYTES {
        let mut cut = MAX_EVENT_PAYLOAD_BYTES;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        let prefix = text[..cut].to_string();
        let sha = sha256_hex(&text);
        let payload =
            EventPayload::Cut { prefix: prefix.clone(), full_len: text.len() as u64, full_sha256: sha.clone() };
        (prefix, Some(text.len() as i64), Some(sha), payload)
    } else {
        (text, None, None, EventPayload::Whole { value: payload.clone() })
    };
    tx.sql
        .prepare_cached(
            "INSERT INTO events (session_id, seq, time_ms, kind, run_id, payload, full_len, full_sha256, global_seq)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        )
        .and_then(|mut s| {
            s.execute(params![
                session_id,
                seq as i64,
                tx.now_ms,
                kind,
                run_id.map(RunId::as_str),
                stored,
                full_len,
                full_sha256,
                global_seq as i64
            ])
        })
        .at(tx.path)?;
    Ok(Event {
        session_id: session_id.to_string(),
        seq,
        global_seq,
        time_ms: tx.now_ms,
        kind: kind.to_string(),
        run_id: run_id.cloned(),
        payload: event_payload,
    })
}

pub(crate) struct RawEvent {
    session_id: String,
    seq: i64,
    time_ms: i64,
    kind: String,
    run_id: Option<String>,
    payload: String,
    full_len: Option<i64>,
    full_sha256: Option<String>,
    global_seq: i64,
}

pub(crate) fn event_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<RawEvent> {
    Ok(RawEvent {
        session_id: row.get(0)?,
        seq: row.get(1)?,
        time_ms: row.get(2)?,
        kind: row.get(3)?,
        run_id: row.get(4)?,
        payload: row.get(5)?,
        full_len: row.get(6)?,
        full_sha256: row.get(7)?,
        global_seq: row.get(8)?,
    })
}

impl RawEvent {
    pub(crate) fn into_event(self, path: &std::path::Path) -> Result<Event, StoreError> {
        let payload = match (self.full_len, self.full_sha256) {
            (Some(full_len), Some(full_sha256)) => {
                EventPayload::Cut { prefix: self.payload, full_len: full_len as u64, full_sha256 }
            }
            _ => EventPayload::Whole {
                value: serde_json::from_str(&self.payload).map_err(|e| StoreError::Corrupt {
                    path: path.to_path_buf(),
                    detail: format!(
                        "event {} of session {:?} has an unreadable payload: {e}",
                        self.seq, self.session_id
                    ),
                })?,
            },
        };
        Ok(Event {
            session_id: self.session_id,
            seq: self.seq as u64,
            global_seq: self.global_seq as u64,
            time_ms: self.time_ms,
            kind: self.kind,
            run_id: self.run_id.map(RunId::from),
            payload,
        })
    }
}

/// The seq of the last event about one run, if any.
pub(crate) fn last_seq_of_run(
    conn: &Connection,
    path: &std::path::Path,
    run_id: &str,
) -> Result<Option<u64>, StoreError> {
    conn.query_row("SELECT MAX(seq) FROM events WHERE run_id = ?1", [run_id], |r| r.get::<_, Option<i64>>(0))
        .optional()
        .at(path)
        .map(|v| v.flatten().map(|s| s as u64))
}
