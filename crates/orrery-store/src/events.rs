//! The append-only event log of a session: what the engine announces, in commit order.
//!
//! `seq` is gapless per session: it is computed as `MAX(seq) + 1` inside the write lock (every
//! write is `BEGIN IMMEDIATE`) and the primary key `(session_id, seq)` refuses a duplicate.
//! Events are never updated or deleted (except with their session). `global_seq` orders every
//! session's events together, the same way (`MAX + 1` under the write lock, unique): the order
//! in which they were committed, which a client following the whole store resumes from
//! ([`Store::events_since`]).

use std::borrow::Cow;

use rusqlite::{params, Connection, OptionalExtension};
use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::canonical::sha256_hex;
use crate::error::SqliteResultExt;
use crate::event_data::{EventData, EventKind};
use crate::records::RunId;
use crate::{Store, StoreError, Tx};

/// Payloads longer than this (in bytes of JSON text) are cut; the event keeps the full text's
/// length and sha256.
pub const MAX_EVENT_PAYLOAD_BYTES: usize = 64 * 1024;

/// The largest page [`Store::events_after`] returns (docs/format.md §7: 1..200).
pub const MAX_PAGE_LIMIT: u32 = 200;

/// An event of a session's log. On the wire (and in `serde`) it keeps the store's shape:
/// `{session_id, seq, global_seq, time_ms, kind, run_id, payload}`, the payload being
/// `{"form": "whole", "value": <the kind's data>}` or, for one longer than 64 KiB,
/// `{"form": "cut", "prefix", "full_len", "full_sha256"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(from = "WireEvent", into = "WireEvent")]
pub struct Event {
    pub session_id: String,
    pub seq: u64,
    /// Its place among every session's events of the store: 1, 2, 3... in commit order.
    pub global_seq: u64,
    pub time_ms: i64,
    pub run_id: Option<RunId>,
    pub payload: EventPayload,
}

/// What an event says, as far as this build can read it.
#[derive(Debug, Clone, PartialEq)]
pub enum EventPayload {
    /// Boxed: every slot of a broadcast channel of events is as large as an event, so an
    /// event stays small (16,384 slots a channel) whatever the largest kind's data.
    Whole(Box<EventData>),
    /// The first bytes of the JSON text (cut at a character boundary, so not valid JSON), with
    /// the length and sha256 of the full text.
    Cut { kind: String, prefix: String, full_len: u64, full_sha256: String },
    /// A kind this build does not know, or JSON its kind's data does not read: an older or
    /// newer Orrery wrote it. Kept as it is, never dropped.
    Unknown { kind: String, value: Value },
}

impl Event {
    /// The kind's name, as the store keeps it.
    pub fn kind(&self) -> &str {
        match &self.payload {
            EventPayload::Whole(data) => data.kind().as_str(),
            EventPayload::Cut { kind, .. } | EventPayload::Unknown { kind, .. } => kind,
        }
    }

    /// Its data, when whole and of a kind this build reads.
    pub fn data(&self) -> Option<&EventData> {
        match &self.payload {
            EventPayload::Whole(data) => Some(data.as_ref()),
            EventPayload::Cut { .. } | EventPayload::Unknown { .. } => None,
        }
    }
}

/// An event a caller appends.
#[derive(Debug, Clone, PartialEq)]
pub struct NewEvent {
    pub run_id: Option<RunId>,
    pub data: EventData,
}

/// [`Event`] as the wire and the database carry it.
#[derive(Serialize, Deserialize)]
struct WireEvent {
    session_id: String,
    seq: u64,
    global_seq: u64,
    time_ms: i64,
    kind: String,
    run_id: Option<RunId>,
    payload: WirePayload,
}

#[derive(Serialize, Deserialize)]
#[serde(tag = "form", rename_all = "snake_case")]
enum WirePayload {
    Whole { value: Value },
    Cut { prefix: String, full_len: u64, full_sha256: String },
}

impl WirePayload {
    fn read(self, kind: String) -> EventPayload {
        match self {
            WirePayload::Whole { value } => match EventData::from_parts(&kind, &value) {
                Some(data) => EventPayload::Whole(Box::new(data)),
                None => EventPayload::Unknown { kind, value },
            },
            WirePayload::Cut { prefix, full_len, full_sha256 } => {
                EventPayload::Cut { kind, prefix, full_len, full_sha256 }
            }
        }
    }
}

impl From<WireEvent> for Event {
    fn from(w: WireEvent) -> Event {
        Event {
            session_id: w.session_id,
            seq: w.seq,
            global_seq: w.global_seq,
            time_ms: w.time_ms,
            run_id: w.run_id,
            payload: w.payload.read(w.kind),
        }
    }
}

impl From<Event> for WireEvent {
    fn from(e: Event) -> WireEvent {
        let (kind, payload) = match e.payload {
            EventPayload::Whole(data) => {
                let (kind, value) = data.to_parts();
                (kind.to_string(), WirePayload::Whole { value })
            }
            EventPayload::Cut { kind, prefix, full_len, full_sha256 } => {
                (kind, WirePayload::Cut { prefix, full_len, full_sha256 })
            }
            EventPayload::Unknown { kind, value } => (kind, WirePayload::Whole { value }),
        };
        WireEvent {
            session_id: e.session_id,
            seq: e.seq,
            global_seq: e.global_seq,
            time_ms: e.time_ms,
            kind,
            run_id: e.run_id,
            payload,
        }
    }
}

/// The schema of a cut payload, named once in generated code.
struct CutForm;

impl JsonSchema for CutForm {
    fn schema_name() -> Cow<'static, str> {
        "EventCut".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "A payload longer than 64 KiB: the first bytes of its JSON text (not valid JSON), with the length and sha256 of the whole.",
            "type": "object",
            "properties": {
                "form": {"const": "cut"},
                "prefix": generator.subschema_for::<String>(),
                "full_len": generator.subschema_for::<u64>(),
                "full_sha256": generator.subschema_for::<String>(),
            },
            "required": ["form", "prefix", "full_len", "full_sha256"],
        })
    }
}

/// The wire shape as a union by kind: each kind's payload is its data whole, or cut. An event of
/// a kind this build does not know is not in the union; a reader of it passes it by.
impl JsonSchema for Event {
    fn schema_name() -> Cow<'static, str> {
        // `Event` alone is the DOM's, in the UI's generated code.
        "SessionEvent".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let cut = generator.subschema_for::<CutForm>();
        let kinds: Vec<Value> = crate::event_data::data_schemas(generator)
            .into_iter()
            .map(|(kind, data)| {
                json!({
                    "type": "object",
                    "properties": {
                        "kind": {"const": kind},
                        "payload": {"oneOf": [
                            {
                                "type": "object",
                                "properties": {"form": {"const": "whole"}, "value": data},
                                "required": ["form", "value"],
                            },
                            cut,
                        ]},
                    },
                    "required": ["kind", "payload"],
                })
            })
            .collect();
        json_schema!({
            "description": "An event of a session's log, by kind.",
            "allOf": [
                {
                    "type": "object",
                    "properties": {
                        "session_id": generator.subschema_for::<String>(),
                        "seq": generator.subschema_for::<u64>(),
                        "global_seq": generator.subschema_for::<u64>(),
                        "time_ms": generator.subschema_for::<i64>(),
                        "run_id": generator.subschema_for::<Option<RunId>>(),
                    },
                    "required": ["session_id", "seq", "global_seq", "time_ms"],
                },
                {"oneOf": kinds},
            ],
        })
    }
}

impl Store {
    /// Appends one event to a session's log.
    pub fn append_event(
        &mut self,
        session_id: &str,
        event: &NewEvent,
        request_id: Option<&str>,
    ) -> Result<Event, StoreError> {
        let args = (session_id, &event.run_id, &event.data);
        self.write_once(request_id, "append_event", &args, |tx| {
            crate::refusals::require_session(tx.sql, tx.path, session_id)?;
            append(tx, session_id, event.run_id.as_ref(), event.data.clone())
        })
    }

    /// Up to `limit` (1..=200) events of a session with `seq > after_seq`, oldest first.
    pub fn events_after(&self, session_id: &str, after_seq: u64, limit: u32) -> Result<Vec<Event>, StoreError> {
        if !(1..=MAX_PAGE_LIMIT).contains(&limit) {
            return Err(StoreError::invalid(format!("limit {limit} is outside 1..={MAX_PAGE_LIMIT}")));
        }
        self.read(|conn, path| {
            crate::refusals::require_session(conn, path, session_id)?;
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
    pub fn last_event_of(&self, session_id: &str, kind: EventKind) -> Result<Option<Event>, StoreError> {
        let raw = self.read(|conn, path| {
            conn.prepare_cached(
                "SELECT session_id, seq, time_ms, kind, run_id, payload, full_len, full_sha256, global_seq
                 FROM events WHERE session_id = ?1 AND kind = ?2 ORDER BY seq DESC LIMIT 1",
            )
            .at(path)?
            .query_row(params![session_id, kind.as_str()], event_row)
            .optional()
            .at(path)
        })?;
        raw.map(|r| r.into_event(&self.path)).transpose()
    }

    /// The events of kind `kind` about the attempt `run_id`, oldest first (the first 200).
    pub fn run_events(&self, run_id: &RunId, kind: EventKind) -> Result<Vec<Event>, StoreError> {
        self.read(|conn, path| {
            let mut stmt = conn
                .prepare_cached(
                    "SELECT session_id, seq, time_ms, kind, run_id, payload, full_len, full_sha256, global_seq
                     FROM events WHERE run_id = ?1 AND kind = ?2 ORDER BY seq LIMIT ?3",
                )
                .at(path)?;
            let rows = stmt.query_map(params![run_id.as_str(), kind.as_str(), MAX_PAGE_LIMIT], event_row).at(path)?;
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
            crate::refusals::require_session(conn, path, session_id)?;
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
    run_id: Option<&RunId>,
    data: EventData,
) -> Result<Event, StoreError> {
    let (kind, payload) = data.to_parts();
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
        let payload = EventPayload::Cut {
            kind: kind.to_string(),
            prefix: prefix.clone(),
            full_len: text.len() as u64,
            full_sha256: sha.clone(),
        };
        (prefix, Some(text.len() as i64), Some(sha), payload)
    } else {
        (text, None, None, EventPayload::Whole(Box::new(data)))
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
                WirePayload::Cut { prefix: self.payload, full_len: full_len as u64, full_sha256 }
            }
            _ => WirePayload::Whole {
                value: orrery_blueprint::json::from_str(&self.payload).map_err(|e| StoreError::Corrupt {
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
            run_id: self.run_id.map(RunId::from),
            payload: payload.read(self.kind),
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
