//! Sessions: one run of one blueprint version, with its state, parameters, times and last
//! error. Ids come from the store's [`crate::IdSource`], so two runs of one blueprint never
//! share an identity.

use std::collections::BTreeMap;
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};

use rusqlite::{params, OptionalExtension};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::error::SqliteResultExt;
use crate::event_data::{EventData, SessionCreated, SessionStateChanged};
use crate::events::{append, Event};
use crate::idempotency::Retry;
use crate::records::{ErrorRecord, RemoteLink, SessionState};
use crate::refusals::require_session;
use crate::{Store, StoreError, Tx};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NewSession {
    /// A stored blueprint version ([`Store::put_blueprint_version`]).
    pub blueprint_hash: String,
    pub name: String,
    pub params: Value,
    /// The session this one runs over again (a restart): the lineage between sessions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restarted_from: Option<String>,
    /// Who asked for it through the facade.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_by: Option<Starter>,
    /// The blueprint file it was started from (a restart keeps its origin's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<PathBuf>,
    /// A run without processes, and what it simulates; `None`: a real run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub simulation: Option<Simulation>,
}

/// What a simulated session (a run without processes) makes of its tasks. Each task that would
/// start a process, ask a person or reach an agent succeeds at once instead, its outputs taken
/// from, in order: the values set for it here, its outputs in `outputs_from`, its declared
/// defaults. Conditions, scopes, loops, composites and fan-out are evaluated for real.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Simulation {
    /// Outputs set for tasks, by task id (that task in every instance) or node key
    /// (`"{instance}.{task}"`): `{"fetch": {"count": 3}}`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub outputs: BTreeMap<String, Map<String, Value>>,
    /// Tasks that fail instead, by task id or node key.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fail: Vec<SimulatedFailure>,
    /// A past session of the blueprint whose outputs the tasks take (a task run several times
    /// takes its outputs of each time in turn, the last one again once they run out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outputs_from: Option<String>,
    /// Each task takes as long as it took in `outputs_from` (without: at once).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub durations: bool,
}

/// A task a simulation fails.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SimulatedFailure {
    /// A task id or a node key.
    pub task: String,
    /// How many of its attempts fail, at least 1 (a retry from failure, or a step where it
    /// holds, then succeeds); every one when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempts: Option<NonZeroU32>,
}

/// The caller that started a session: a project and the agent (or person) acting in it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Starter {
    pub project: String,
    pub agent: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Session {
    pub id: String,
    pub blueprint_hash: String,
    pub blueprint_id: String,
    pub name: String,
    pub state: SessionState,
    pub params: Value,
    pub created_ms: i64,
    /// When it first started running.
    pub started_ms: Option<i64>,
    /// When it last entered completed, failed or stopped; cleared when it runs again.
    pub finished_ms: Option<i64>,
    pub last_error: Option<ErrorRecord>,
    /// The session this one runs over again, when it is a restart (and that session is kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restarted_from: Option<String>,
    /// The session of an antikythera server this one mirrors ([`Store::link_remote`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote: Option<RemoteLink>,
    /// Who started it through the facade; `None` for sessions stored before Orrery kept it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_by: Option<Starter>,
    /// The blueprint file it was started from, absolute (a restart keeps its origin's); `None`
    /// for sessions stored before Orrery kept it, mirrors, and blueprints given as text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<PathBuf>,
    /// A run without processes ([`Simulation`]); `None`: a real run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub simulation: Option<Simulation>,
}

/// Which sessions [`Store::sessions`] lists, newest first.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SessionFilter {
    pub state: Option<SessionState>,
    pub blueprint_id: Option<String>,
    pub limit: Option<u32>,
}

impl Store {
    /// Creates a pending session and its `session_created` event (seq 1).
    pub fn create_session(&mut self, new: &NewSession, request_id: Option<&str>) -> Result<Session, StoreError> {
        self.write_once(request_id, "create_session", new, |tx| insert_session(tx, new))
    }

    /// [`Store::create_session`] for a client's request that may come again (a job's
    /// `request_id`): the session and the request's answer land in one transaction, and the
    /// same request again answers the session it made.
    pub fn create_session_for(&mut self, new: &NewSession, retry: Option<&Retry>) -> Result<Session, StoreError> {
        match retry {
            None => self.write(|tx| insert_session(tx, new)),
            Some(r) => self.write_once(Some(&r.id), &r.operation, &r.arguments, |tx| insert_session(tx, new)),
        }
    }

    pub fn session(&self, id: &str) -> Result<Session, StoreError> {
        self.conn
            .query_row(&format!("{SELECT_SESSION} WHERE id = ?1"), [id], session_row)
            .optional()
            .at(&self.path)?
            .ok_or_else(|| StoreError::not_found("session", id))?
            .into_session(&self.path)
    }

    pub fn sessions(&self, filter: &SessionFilter) -> Result<Vec<Session>, StoreError> {
        let mut stmt = self
            .conn
            .prepare(&format!(
                "{SELECT_SESSION} WHERE (?1 IS NULL OR state = ?1) AND (?2 IS NULL OR blueprint_id = ?2)
                 ORDER BY created_ms DESC, rowid DESC LIMIT ?3"
            ))
            .at(&self.path)?;
        let limit = filter.limit.map(i64::from).unwrap_or(-1);
        let rows = stmt
            .query_map(params![filter.state.map(SessionState::as_str), filter.blueprint_id, limit], session_row)
            .at(&self.path)?;
        rows.map(|r| r.at(&self.path).and_then(|raw| raw.into_session(&self.path))).collect()
    }

    /// Marks session `id` as the mirror of session `link.session_id` on the server `link.url`.
    /// A remote session has one mirror: linking a second is refused (`invalid_argument`).
    pub fn link_remote(&mut self, id: &str, link: &RemoteLink) -> Result<(), StoreError> {
        self.write(|tx| {
            let changed = tx
                .sql
                .execute(
                    "UPDATE sessions SET remote_url = ?2, remote_session = ?3 WHERE id = ?1",
                    params![id, link.url, link.session_id],
                )
                .map_err(|e| match e {
                    rusqlite::Error::SqliteFailure(f, _) if f.code == rusqlite::ErrorCode::ConstraintViolation => {
                        StoreError::invalid(format!("session {} of {} has a mirror already", link.session_id, link.url))
                    }
                    e => StoreError::sqlite(tx.path, e),
                })?;
            if changed == 0 {
                return Err(StoreError::not_found("session", id));
            }
            Ok(())
        })
    }

    /// The times a mirror's server gives its session: when it started and when it ended (`None`
    /// while it runs, or when the server does not say). Refused for a session that mirrors
    /// nothing: a local session's times are its runner's.
    pub fn set_mirror_times(&mut self, id: &str, started_ms: i64, finished_ms: Option<i64>) -> Result<(), StoreError> {
        self.write(|tx| {
            require_session(tx.sql, tx.path, id)?;
            let changed = tx
                .sql
                .execute(
                    "UPDATE sessions SET started_ms = ?2, finished_ms = ?3 WHERE id = ?1 AND remote_url IS NOT NULL",
                    params![id, started_ms, finished_ms],
                )
                .at(tx.path)?;
            if changed == 0 {
                return Err(StoreError::invalid(format!("session {id:?} mirrors no server's session")));
            }
            Ok(())
        })
    }

    /// The local mirror of a server's session, if there is one.
    pub fn mirror_of(&self, link: &RemoteLink) -> Result<Option<Session>, StoreError> {
        let raw = self.read(|conn, path| {
            conn.query_row(
                &format!("{SELECT_SESSION} WHERE remote_url = ?1 AND remote_session = ?2"),
                params![link.url, link.session_id],
                session_row,
            )
            .optional()
            .at(path)
        })?;
        raw.map(|r| r.into_session(&self.path)).transpose()
    }

    /// The sessions that restart `id` (run it over again), oldest first.
    pub fn restarts_of(&self, id: &str) -> Result<Vec<Session>, StoreError> {
        let mut stmt = self
            .conn
            .prepare(&format!("{SELECT_SESSION} WHERE restarted_from = ?1 ORDER BY created_ms, rowid"))
            .at(&self.path)?;
        let rows = stmt.query_map([id], session_row).at(&self.path)?;
        rows.map(|r| r.at(&self.path).and_then(|raw| raw.into_session(&self.path))).collect()
    }

    /// Moves a session to `state`, recording `error` as its last error when given, and appends
    /// a `session_state_changed` event. Running again (a resume, a retry from failure) clears
    /// the last error: it described a run that is over (the event log keeps it).
    pub fn set_session_state(
        &mut self,
        id: &str,
        state: SessionState,
        error: Option<&ErrorRecord>,
        request_id: Option<&str>,
    ) -> Result<Event, StoreError> {
        let args = json!({"session_id": id, "state": state, "error": error});
        self.write_once(request_id, "set_session_state", &args, |tx| {
            require_session(tx.sql, tx.path, id)?;
            let error_json = error.map(|e| serde_json::to_string(e).unwrap_or_default());
            let (started, finished) = match state {
                SessionState::Running => (Some(tx.now_ms), None),
                SessionState::Completed | SessionState::Failed | SessionState::Stopped => (None, Some(tx.now_ms)),
                SessionState::Pending => (None, None),
            };
            tx.sql
                .execute(
                    "UPDATE sessions SET state = ?2,
                         started_ms = COALESCE(started_ms, ?3),
                         finished_ms = ?4,
                         last_error_json = CASE WHEN ?2 = 'running' THEN ?5 ELSE COALESCE(?5, last_error_json) END
                     WHERE id = ?1",
                    params![id, state.as_str(), started, finished, error_json],
                )
                .at(tx.path)?;
            let data = SessionStateChanged { state, error: error.cloned() };
            append(tx, id, None, EventData::SessionStateChanged(data))
        })
    }
}

/// A new pending session and its `session_created` event (seq 1).
fn insert_session(tx: &Tx<'_>, new: &NewSession) -> Result<Session, StoreError> {
    let blueprint_id: String = tx
        .sql
        .query_row("SELECT blueprint_id FROM blueprint_versions WHERE hash = ?1", [&new.blueprint_hash], |r| r.get(0))
        .optional()
        .at(tx.path)?
        .ok_or_else(|| StoreError::not_found("blueprint version", &new.blueprint_hash))?;
    if let Some(origin) = &new.restarted_from {
        let known: bool = tx
            .sql
            .query_row("SELECT EXISTS (SELECT 1 FROM sessions WHERE id = ?1)", [origin], |r| r.get(0))
            .at(tx.path)?;
        if !known {
            return Err(StoreError::not_found("session", origin));
        }
    }
    let session = Session {
        id: tx.ids.session_id(),
        blueprint_hash: new.blueprint_hash.clone(),
        blueprint_id,
        name: new.name.clone(),
        state: SessionState::Pending,
        params: new.params.clone(),
        created_ms: tx.now_ms,
        started_ms: None,
        finished_ms: None,
        last_error: None,
        restarted_from: new.restarted_from.clone(),
        remote: None,
        started_by: new.started_by.clone(),
        file: new.file.clone(),
        simulation: new.simulation.clone(),
    };
    tx.sql
            .execute(
                "INSERT INTO sessions (id, blueprint_hash, blueprint_id, name, state, params_json, created_ms, restarted_from,
                                       started_project, started_agent, file, simulation_json)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
                params![
                    session.id,
                    session.blueprint_hash,
                    session.blueprint_id,
                    session.name,
                    session.state.as_str(),
                    session.params.to_string(),
                    session.created_ms,
                    session.restarted_from,
                    session.started_by.as_ref().map(|s| &s.project),
                    session.started_by.as_ref().map(|s| &s.agent),
                    session.file.as_deref().map(Path::to_string_lossy),
                    session.simulation.as_ref().map(|s| json!(s).to_string())
                ],
            )
            .at(tx.path)?;
    append(
        tx,
        &session.id,
        None,
        EventData::SessionCreated(SessionCreated {
            blueprint_hash: session.blueprint_hash.clone(),
            blueprint_id: session.blueprint_id.clone(),
            name: session.name.clone(),
            restarted_from: session.restarted_from.clone(),
        }),
    )?;
    Ok(session)
}

const SELECT_SESSION: &str = "SELECT id, blueprint_hash, blueprint_id, name, state, params_json,
    created_ms, started_ms, finished_ms, last_error_json, restarted_from, remote_url, remote_session,
    started_project, started_agent, file, simulation_json FROM sessions";

struct RawSession {
    id: String,
    blueprint_hash: String,
    blueprint_id: String,
    name: String,
    state: String,
    params_json: String,
    created_ms: i64,
    started_ms: Option<i64>,
    finished_ms: Option<i64>,
    last_error_json: Option<String>,
    restarted_from: Option<String>,
    remote_url: Option<String>,
    remote_session: Option<String>,
    started_project: Option<String>,
    started_agent: Option<String>,
    file: Option<String>,
    simulation_json: Option<String>,
}

fn session_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<RawSession> {
    Ok(RawSession {
        id: row.get(0)?,
        blueprint_hash: row.get(1)?,
        blueprint_id: row.get(2)?,
        name: row.get(3)?,
        state: row.get(4)?,
        params_json: row.get(5)?,
        created_ms: row.get(6)?,
        started_ms: row.get(7)?,
        finished_ms: row.get(8)?,
        last_error_json: row.get(9)?,
        restarted_from: row.get(10)?,
        remote_url: row.get(11)?,
        remote_session: row.get(12)?,
        started_project: row.get(13)?,
        started_agent: row.get(14)?,
        file: row.get(15)?,
        simulation_json: row.get(16)?,
    })
}

impl RawSession {
    fn into_session(self, path: &Path) -> Result<Session, StoreError> {
        let corrupt = |what: &str| StoreError::Corrupt {
            path: path.to_path_buf(),
            detail: format!("session {:?} has an unreadable {what}", self.id),
        };
        let state = SessionState::parse(&self.state).ok_or_else(|| corrupt("state"))?;
        let params = orrery_blueprint::json::from_str(&self.params_json).map_err(|_| corrupt("params"))?;
        let last_error = match &self.last_error_json {
            Some(text) => Some(orrery_blueprint::json::from_str(text).map_err(|_| corrupt("last error"))?),
            None => None,
        };
        let simulation = match &self.simulation_json {
            Some(text) => Some(orrery_blueprint::json::from_str(text).map_err(|_| corrupt("simulation"))?),
            None => None,
        };
        Ok(Session {
            id: self.id,
            blueprint_hash: self.blueprint_hash,
            blueprint_id: self.blueprint_id,
            name: self.name,
            state,
            params,
            created_ms: self.created_ms,
            started_ms: self.started_ms,
            finished_ms: self.finished_ms,
            last_error,
            restarted_from: self.restarted_from,
            remote: match (self.remote_url, self.remote_session) {
                (Some(url), Some(session_id)) => Some(RemoteLink { url, session_id }),
                _ => None,
            },
            started_by: match (self.started_project, self.started_agent) {
                (Some(project), Some(agent)) => Some(Starter { project, agent }),
                _ => None,
            },
            file: self.file.map(PathBuf::from),
            simulation,
        })
    }
}
