//! Who drives a session (its runner's lease), and what other processes ask of that runner.
//!
//! - **Lease.** A runner takes a session's lease before it drives it and lets go when it ends.
//!   The lease names the runner (a token) and its process (pid plus start time). Taking a lease
//!   another live runner holds is refused ([`StoreError::Leased`]); the caller says what "live"
//!   means (the engine asks the OS: the store knows no processes), so a lease left behind by a
//!   crashed runner is taken over.
//! - **Requests.** Another process cannot reach a runner's memory; it leaves a request in the
//!   store ([`Store::request`]: stop, pause, cancel a task, answer a prompt, let go of a task
//!   held at a breakpoint, set a value of its data while one is held). The runner reads
//!   the open ones ([`Store::open_requests`]), acts, and marks each handled with what came of it.

use rusqlite::{params, OptionalExtension};
use serde_json::Value;

use crate::error::SqliteResultExt;
use crate::refusals::require_session;
use crate::{ProcessIdentity, Store, StoreError};

/// The runner driving a session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    /// Names the runner, unique per runner (two runners of one process have different tokens).
    pub token: String,
    /// The process the runner lives in.
    pub process: ProcessIdentity,
}

/// What a request asks of a session's runner.
#[derive(Debug, Clone, PartialEq)]
pub enum Request {
    /// Cancel what runs and end the session `stopped`.
    Stop,
    /// Start nothing new; let what runs finish; then end `stopped`.
    Pause,
    /// Cancel the running attempt of a task (node key or task id).
    Cancel { task: String },
    /// Answer the prompt of a task (node key or task id).
    Answer { task: String, value: Value },
    /// Let go of a task held at a breakpoint (node key or task id; `None`: every held task):
    /// `"continue"`, `"step"` or `"skip"`.
    Release { task: Option<String>, how: String },
    /// Set a value of the session's data while a task is held at a breakpoint, on behalf of
    /// `by` (an instance id; `None`: the root's).
    SetData { instance: Option<String>, key: String, value: Value, by: String },
    /// Set a breakpoint of the running session at a task (node key or task id): `"before"` or
    /// `"after"`; `None` clears it.
    Breakpoint { task: String, at: Option<String> },
}

impl Request {
    fn kind(&self) -> &'static str {
        match self {
            Request::Stop => "stop",
            Request::Pause => "pause",
            Request::Cancel { .. } => "cancel",
            Request::Answer { .. } => "answer",
            Request::Release { .. } => "release",
            Request::SetData { .. } => "set_data",
            Request::Breakpoint { .. } => "breakpoint",
        }
    }
}

/// A request not yet handled.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenRequest {
    pub id: i64,
    pub request: Request,
    pub created_ms: i64,
}

impl Store {
    /// Takes the lease of `session_id` for `lease`, unless another runner holds it and
    /// `holder_is_alive` says its process lives: then [`StoreError::Leased`]. Returns the lease
    /// it replaced (a runner that is gone), if any.
    pub fn acquire_lease(
        &mut self,
        session_id: &str,
        lease: &Lease,
        holder_is_alive: impl Fn(&ProcessIdentity) -> bool,
    ) -> Result<Option<Lease>, StoreError> {
        self.write(|tx| {
            require_session(tx.sql, tx.path, session_id)?;
            let holder = read_lease(tx.sql, tx.path, session_id)?;
            if let Some(holder) = &holder {
                if holder.token != lease.token && holder_is_alive(&holder.process) {
                    return Err(StoreError::Leased { session_id: session_id.to_string(), pid: holder.process.pid });
                }
            }
            tx.sql
                .execute(
                    "UPDATE sessions SET runner_token = ?2, runner_pid = ?3, runner_start_time = ?4 WHERE id = ?1",
                    params![session_id, lease.token, lease.process.pid, lease.process.start_time as i64],
                )
                .at(tx.path)?;
            Ok(holder.filter(|h| h.token != lease.token))
        })
    }

    /// Lets go of the lease of `session_id` if `token` holds it (a lease taken over meanwhile is
    /// left alone).
    pub fn release_lease(&mut self, session_id: &str, token: &str) -> Result<(), StoreError> {
        self.write(|tx| {
            tx.sql
                .execute(
                    "UPDATE sessions SET runner_token = NULL, runner_pid = NULL, runner_start_time = NULL
                     WHERE id = ?1 AND runner_token = ?2",
                    params![session_id, token],
                )
                .at(tx.path)?;
            Ok(())
        })
    }

    /// The lease of `session_id`, if a runner holds it (or held it and crashed).
    pub fn lease(&self, session_id: &str) -> Result<Option<Lease>, StoreError> {
        self.read(|conn, path| {
            require_session(conn, path, session_id)?;
            read_lease(conn, path, session_id)
        })
    }

    /// Leaves a request for the runner of `session_id`; its id.
    pub fn request(&mut self, session_id: &str, request: &Request) -> Result<i64, StoreError> {
        let (task, value) = match request {
            Request::Stop | Request::Pause => (None, None),
            Request::Cancel { task } => (Some(task.as_str()), None),
            Request::Answer { task, value } => (Some(task.as_str()), Some(value.to_string())),
            Request::Release { task, how } => (task.as_deref(), Some(Value::from(how.as_str()).to_string())),
            Request::SetData { instance, key, value, by } => (
                None,
                Some(serde_json::json!({"instance": instance, "key": key, "value": value, "by": by}).to_string()),
            ),
            Request::Breakpoint { task, at } => (Some(task.as_str()), Some(Value::from(at.clone()).to_string())),
        };
        self.write(|tx| {
            require_session(tx.sql, tx.path, session_id)?;
            tx.sql
                .execute(
                    "INSERT INTO session_requests (session_id, kind, node, value_json, created_ms)
                     VALUES (?1, ?2, ?3, ?4, ?5)",
                    params![session_id, request.kind(), task, value, tx.now_ms],
                )
                .at(tx.path)?;
            Ok(tx.sql.last_insert_rowid())
        })
    }

    /// The requests of `session_id` not yet handled, oldest first.
    pub fn open_requests(&self, session_id: &str) -> Result<Vec<OpenRequest>, StoreError> {
        self.read(|conn, path| {
            let mut stmt = conn
                .prepare_cached(
                    "SELECT id, kind, node, value_json, created_ms FROM session_requests
                     WHERE session_id = ?1 AND handled_ms IS NULL ORDER BY id",
                )
                .at(path)?;
            let rows = stmt
                .query_map([session_id], |row| {
                    Ok((
                        row.get::<_, i64>(0)?,
                        row.get::<_, String>(1)?,
                        row.get::<_, Option<String>>(2)?,
                        row.get::<_, Option<String>>(3)?,
                        row.get::<_, i64>(4)?,
                    ))
                })
                .at(path)?;
            let mut open = Vec::new();
            for row in rows {
                let (id, kind, task, value, created_ms) = row.at(path)?;
                let corrupt = || StoreError::Corrupt {
                    path: path.to_path_buf(),
                    detail: format!("session request {id} ({kind}) is malformed"),
                };
                let request = match (kind.as_str(), task, value) {
                    ("stop", _, _) => Request::Stop,
                    ("pause", _, _) => Request::Pause,
                    ("cancel", Some(task), _) => Request::Cancel { task },
                    ("answer", Some(task), Some(value)) => Request::Answer {
                        task,
                        value: orrery_blueprint::json::from_str(&value).map_err(|_| corrupt())?,
                    },
                    ("release", task, Some(how)) => Request::Release {
                        task,
                        how: orrery_blueprint::json::from_str::<String>(&how).map_err(|_| corrupt())?,
                    },
                    ("breakpoint", Some(task), Some(at)) => Request::Breakpoint {
                        task,
                        at: orrery_blueprint::json::from_str::<Option<String>>(&at).map_err(|_| corrupt())?,
                    },
                    ("set_data", _, Some(asked)) => {
                        let asked: Value = orrery_blueprint::json::from_str(&asked).map_err(|_| corrupt())?;
                        let text = |name: &str| asked.get(name).and_then(Value::as_str).map(str::to_string);
                        Request::SetData {
                            instance: text("instance"),
                            key: text("key").ok_or_else(corrupt)?,
                            value: asked.get("value").cloned().ok_or_else(corrupt)?,
                            by: text("by").ok_or_else(corrupt)?,
                        }
                    }
                    _ => return Err(corrupt()),
                };
                open.push(OpenRequest { id, request, created_ms });
            }
            Ok(open)
        })
    }

    /// Marks a request handled, with what came of it (shown to whoever asked).
    pub fn mark_request_handled(&mut self, id: i64, outcome: &str) -> Result<(), StoreError> {
        self.write(|tx| {
            tx.sql
                .execute(
                    "UPDATE session_requests SET handled_ms = ?2, outcome = ?3 WHERE id = ?1 AND handled_ms IS NULL",
                    params![id, tx.now_ms, outcome],
                )
                .at(tx.path)?;
            Ok(())
        })
    }

    /// What came of a request: `None` while it is open.
    pub fn request_outcome(&self, id: i64) -> Result<Option<String>, StoreError> {
        self.read(|conn, path| {
            conn.query_row("SELECT handled_ms, outcome FROM session_requests WHERE id = ?1", [id], |row| {
                Ok((row.get::<_, Option<i64>>(0)?, row.get::<_, Option<String>>(1)?))
            })
            .optional()
            .at(path)?
            .ok_or_else(|| StoreError::not_found("session request", id.to_string()))
            .map(|(handled, outcome)| handled.map(|_| outcome.unwrap_or_default()))
        })
    }
}

fn read_lease(
    conn: &rusqlite::Connection,
    path: &std::path::Path,
    session_id: &str,
) -> Result<Option<Lease>, StoreError> {
    let row = conn
        .query_row(
            "SELECT runner_token, runner_pid, runner_start_time FROM sessions WHERE id = ?1",
            [session_id],
            |row| Ok((row.get::<_, Option<String>>(0)?, row.get::<_, Option<i64>>(1)?, row.get::<_, Option<i64>>(2)?)),
        )
        .at(path)?;
    Ok(match row {
        (Some(token), Some(pid), Some(start_time)) => {
            Some(Lease { token, process: ProcessIdentity { pid: pid as u32, start_time: start_time as u64 } })
        }
        _ => None,
    })
}
