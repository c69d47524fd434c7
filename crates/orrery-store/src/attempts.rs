//! The attempts (task runs) made at the task nodes of a session ([`crate::nodes`]).
//!
//! Each attempt is one row with a fresh `run_id`; every later write about it is conditional on
//! `state = 'running'`, so a stale or unknown run id is refused and changes nothing. A node has
//! at most one running attempt.

use std::path::{Path, PathBuf};

use rusqlite::{params, OptionalExtension};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::SqliteResultExt;
use crate::event_data::EventData;
use crate::events::{append, Event};
use crate::lineage::InputSource;
use crate::nodes::set_node_state;
use crate::records::{
    split_node, Attempt, AttemptState, Outcome, ProcessEnvironment, ProcessIdentity, RunId, ScopeIteration, TaskState,
};
use crate::refusals::{require_session, stale};
use crate::{Store, StoreError, Tx};

/// What is known when an attempt begins.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NewAttempt {
    pub agent: String,
    pub log_path: Option<PathBuf>,
    pub inputs: Option<Value>,
    pub process: Option<ProcessIdentity>,
    /// Where the inputs were read from, for lineage ([`Store::lineage`]).
    #[serde(default)]
    pub input_sources: Vec<InputSource>,
    /// The iteration of each looping scope that holds the task, the outermost first.
    #[serde(default)]
    pub iterations: Vec<ScopeIteration>,
    /// Begun before Orrery saw it (a mirror's task that ran on its server before the mirror
    /// followed): see [`Attempt::times_unknown`].
    #[serde(default)]
    pub times_unknown: bool,
}

/// Everything that lands with a settled attempt, in one transaction: the outcome, optionally
/// the node's new state and the session data its outputs write. (FF edges may hold a node's
/// completion back, so the node state is the engine's call.)
#[derive(Debug, Clone, PartialEq)]
pub struct Settlement {
    pub outcome: Outcome,
    pub node_state: Option<TaskState>,
    /// `(blueprint instance, key, value)` written to session data.
    pub data: Vec<(String, String, Value)>,
}

impl From<Outcome> for Settlement {
    fn from(outcome: Outcome) -> Self {
        Settlement { outcome, node_state: None, data: Vec::new() }
    }
}

impl Store {
    /// Starts a new attempt at a node with a fresh run id; the node becomes RUNNING. Refused
    /// while the node has another running attempt.
    pub fn begin_attempt(
        &mut self,
        session_id: &str,
        node: &str,
        new: &NewAttempt,
    ) -> Result<(Attempt, Vec<Event>), StoreError> {
        let run_id = RunId(self.ids.run_id());
        self.begin_attempt_as(run_id, session_id, node, new)
    }

    /// [`Store::begin_attempt`] under a run id taken beforehand from [`Store::id_source`]: a
    /// runner that starts the attempt's process before the store has written it names the
    /// process by it.
    pub fn begin_attempt_as(
        &mut self,
        run_id: RunId,
        session_id: &str,
        node: &str,
        new: &NewAttempt,
    ) -> Result<(Attempt, Vec<Event>), StoreError> {
        if new.agent.is_empty() {
            return Err(StoreError::invalid(format!("attempt at node {node:?} needs an agent")));
        }
        self.write(|tx| {
            require_session(tx.sql, tx.path, session_id)?;
            let exists = tx
                .sql
                .prepare_cached("SELECT 1 FROM task_nodes WHERE session_id = ?1 AND node = ?2")
                .and_then(|mut s| s.exists([session_id, node]))
                .at(tx.path)?;
            if !exists {
                return Err(StoreError::not_found("task node", format!("{session_id}/{node}")));
            }
            let running: Option<String> = tx
                .sql
                .prepare_cached(
                    "SELECT run_id FROM task_runs
                     WHERE session_id = ?1 AND node = ?2 AND state = 'running'",
                )
                .and_then(|mut s| s.query_row([session_id, node], |r| r.get(0)).optional())
                .at(tx.path)?;
            if let Some(run_id) = running {
                return Err(StoreError::invalid(format!(
                    "node {node:?} of session {session_id:?} already has a running attempt {run_id:?}"
                )));
            }
            let attempt: u32 = tx
                .sql
                .prepare_cached(
                    "SELECT COALESCE(MAX(attempt), 0) + 1 FROM task_runs
                     WHERE session_id = ?1 AND node = ?2",
                )
                .and_then(|mut s| s.query_row([session_id, node], |r| r.get(0)))
                .at(tx.path)?;
            let (instance, task) = split_node(node);
            let run = Attempt {
                run_id,
                session_id: session_id.to_string(),
                node: node.to_string(),
                instance: instance.to_string(),
                task: task.to_string(),
                attempt,
                state: AttemptState::Running,
                agent: new.agent.clone(),
                started_ms: tx.now_ms,
                finished_ms: None,
                exit_code: None,
                error: None,
                process: new.process,
                log_path: new.log_path.clone(),
                inputs: new.inputs.clone(),
                outputs: None,
                iterations: new.iterations.clone(),
                times_unknown: new.times_unknown,
                environment: None,
            };
            tx.sql
                .prepare_cached(
                    "INSERT INTO task_runs (run_id, session_id, node, attempt, state, agent,
                         started_ms, pid, process_start_time, log_path, inputs_json, iterations_json,
                         times_unknown)
                     VALUES (?1, ?2, ?3, ?4, 'running', ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
                )
                .and_then(|mut s| {
                    s.execute(params![
                        run.run_id.as_str(),
                        session_id,
                        node,
                        attempt,
                        run.agent,
                        run.started_ms,
                        run.process.map(|p| p.pid),
                        run.process.map(|p| p.start_time as i64),
                        run.log_path.as_ref().map(|p| p.to_string_lossy().into_owned()),
                        run.inputs.as_ref().map(Value::to_string),
                        iterations_json(&run.iterations),
                        run.times_unknown,
                    ])
                })
                .at(tx.path)?;
            record_input_sources(tx, session_id, &run, &new.input_sources)?;
            let mut events = Vec::new();
            events.extend(set_node_state(tx, session_id, node, TaskState::Running)?);
            events.push(append(tx, session_id, Some(&run.run_id), EventData::AttemptStarted(run.clone()))?);
            Ok((run, events))
        })
    }

    /// The attempt `number` (default: the latest) of `task` in a session, `task` being a node
    /// key or a task id of the root blueprint; `Ok(Err(why))` when there is none (an unknown
    /// session or task, a task that has not run, no such attempt), in words for a person.
    pub fn find_attempt(
        &self,
        session_id: &str,
        task: &str,
        number: Option<u32>,
    ) -> Result<Result<Attempt, String>, StoreError> {
        let session = match self.session(session_id) {
            Ok(s) => s,
            Err(StoreError::NotFound { .. }) => {
                return Ok(Err(format!("no session '{session_id}' in {}", self.path().display())))
            }
            Err(e) => return Err(e),
        };
        let nodes = self.task_nodes(session_id)?;
        let attempts = self.attempts(session_id)?;
        let known = |key: &str| nodes.iter().any(|n| n.node == key) || attempts.iter().any(|a| a.node == key);
        let root_key = format!("{}.{task}", session.blueprint_id);
        let node = if known(task) {
            task.to_string()
        } else if known(&root_key) {
            root_key
        } else {
            return Ok(Err(format!(
                "session {session_id} has no task '{task}' (name it \"{{instance}}.{{task}}\" or by a task id of the root blueprint)"
            )));
        };
        let mut mine: Vec<Attempt> = attempts.into_iter().filter(|a| a.node == node).collect();
        mine.sort_by_key(|a| a.attempt);
        let found = match number {
            None => mine.pop().ok_or_else(|| format!("task {node} of session {session_id} has not run yet")),
            Some(n) => mine
                .into_iter()
                .find(|a| a.attempt == n)
                .ok_or_else(|| format!("task {node} of session {session_id} has no attempt {n}")),
        };
        // Read whole: the list leaves environments out.
        Ok(match found {
            Ok(listed) => Ok(self.attempt(&listed.run_id)?),
            Err(why) => Err(why),
        })
    }

    /// Records the process of a running attempt once it has been spawned, and what it was
    /// started with (none: what is recorded stays, as for a process adopted after a crash).
    pub fn set_attempt_process(
        &mut self,
        run_id: &RunId,
        process: ProcessIdentity,
        environment: Option<&ProcessEnvironment>,
    ) -> Result<(), StoreError> {
        let environment = environment.map(|e| serde_json::to_string(e).unwrap_or_default());
        self.write(|tx| {
            let changed = tx
                .sql
                .prepare_cached(
                    "UPDATE task_runs SET pid = ?2, process_start_time = ?3,
                     environment_json = COALESCE(?4, environment_json)
                     WHERE run_id = ?1 AND state = 'running'",
                )
                .and_then(|mut s| {
                    s.execute(params![run_id.as_str(), process.pid, process.start_time as i64, environment])
                })
                .at(tx.path)?;
            if changed == 0 {
                return Err(stale(tx.sql, run_id));
            }
            Ok(())
        })
    }

    /// Settles a running attempt: conditional on `state = 'running'`, so a stale or unknown
    /// run id is refused and nothing changes. Returns the events appended, in order.
    pub fn settle_attempt(
        &mut self,
        run_id: &RunId,
        settlement: impl Into<Settlement>,
    ) -> Result<Vec<Event>, StoreError> {
        let settlement = settlement.into();
        let outcome = &settlement.outcome;
        let (exit_code, error, outputs) = match outcome {
            Outcome::Succeeded { exit_code, outputs } => (*exit_code, None, Some(outputs)),
            Outcome::Failed { exit_code, error } => (*exit_code, Some(error), None),
            Outcome::Cancelled { exit_code } => (*exit_code, None, None),
            Outcome::Skipped => (None, None, None),
            Outcome::Unknown { error } => (None, Some(error), None),
        };
        self.write(|tx| {
            let settled = tx
                .sql
                .prepare_cached(&format!(
                    "UPDATE task_runs SET state = ?2, finished_ms = ?3, exit_code = ?4,
                         error_json = ?5, outputs_json = ?6
                     WHERE run_id = ?1 AND state = 'running'
                     RETURNING {ATTEMPT_COLUMNS}"
                ))
                .and_then(|mut s| {
                    s.query_row(
                        params![
                            run_id.as_str(),
                            outcome.state().as_str(),
                            tx.now_ms,
                            exit_code,
                            error.map(|e| serde_json::to_string(e).unwrap_or_default()),
                            outputs.map(Value::to_string),
                        ],
                        attempt_row,
                    )
                    .optional()
                })
                .at(tx.path)?;
            let Some(settled) = settled else {
                return Err(stale(tx.sql, run_id));
            };
            let settled = settled.into_attempt(tx.path)?;
            let (session_id, node) = (settled.session_id.clone(), settled.node.clone());
            if outcome.state() == AttemptState::Succeeded {
                crate::progress::complete_all_steps(tx, run_id)?;
            }
            let mut events = vec![append(tx, &session_id, Some(run_id), EventData::AttemptSettled(settled))?];
            if !settlement.data.is_empty() {
                events.push(crate::data::put_data_in(tx, &session_id, &settlement.data, Some(run_id))?);
            }
            if let Some(state) = settlement.node_state {
                events.extend(set_node_state(tx, &session_id, &node, state)?);
            }
            Ok(events)
        })
    }

    pub fn attempt(&self, run_id: &RunId) -> Result<Attempt, StoreError> {
        self.conn
            .query_row(
                &format!("SELECT {ATTEMPT_COLUMNS} FROM task_runs WHERE run_id = ?1"),
                [run_id.as_str()],
                attempt_row,
            )
            .optional()
            .at(&self.path)?
            .ok_or_else(|| StoreError::not_found("run", run_id.as_str()))?
            .into_attempt(&self.path)
    }

    /// Every attempt of a session, in the order they started: the timeline. Without their
    /// environments ([`Attempt::environment`]): [`Store::attempt`] reads one whole.
    pub fn attempts(&self, session_id: &str) -> Result<Vec<Attempt>, StoreError> {
        self.read(|conn, path| {
            require_session(conn, path, session_id)?;
            let mut stmt = conn
                .prepare(&format!(
                    "SELECT {LISTED_COLUMNS} FROM task_runs WHERE session_id = ?1 ORDER BY started_ms, rowid"
                ))
                .at(path)?;
            let rows = stmt.query_map([session_id], attempt_row).at(path)?;
            rows.map(|r| r.at(path).and_then(|raw| raw.into_attempt(path))).collect()
        })
    }

    /// Every attempt still marked running, in any session: what crash recovery must settle.
    pub fn running_attempts(&self) -> Result<Vec<Attempt>, StoreError> {
        let mut stmt = self
            .conn
            .prepare(&format!(
                "SELECT {ATTEMPT_COLUMNS} FROM task_runs WHERE state = 'running' ORDER BY started_ms, rowid"
            ))
            .at(&self.path)?;
        let rows = stmt.query_map([], attempt_row).at(&self.path)?;
        rows.map(|r| r.at(&self.path).and_then(|raw| raw.into_attempt(&self.path))).collect()
    }
}

/// The lineage rows of a beginning attempt: each input's key, the attempt (or the person's edit)
/// that wrote it (as the data says now) and the sha256 of the value the input got.
fn record_input_sources(
    tx: &Tx<'_>,
    session_id: &str,
    run: &Attempt,
    sources: &[InputSource],
) -> Result<(), StoreError> {
    for source in sources {
        let value = run.inputs.as_ref().and_then(|i| i.get(&source.input)).cloned().unwrap_or(Value::Null);
        let (writer, edit): (Option<String>, Option<i64>) = tx
            .sql
            .prepare_cached(
                "SELECT run_id, edit_id FROM session_data WHERE session_id = ?1 AND instance = ?2 AND key = ?3",
            )
            .and_then(|mut s| {
                s.query_row([session_id, &source.instance, &source.key], |r| Ok((r.get(0)?, r.get(1)?))).optional()
            })
            .at(tx.path)?
            .unwrap_or_default();
        tx.sql
            .prepare_cached(
                "INSERT INTO attempt_inputs (run_id, input, instance, key, source_run_id, value_sha256, source_edit_id)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )
            .and_then(|mut s| {
                s.execute(params![
                    run.run_id.as_str(),
                    source.input,
                    source.instance,
                    source.key,
                    writer,
                    crate::canonical::sha256_hex(&value.to_string()),
                    edit
                ])
            })
            .at(tx.path)?;
    }
    Ok(())
}

/// The columns an [`Attempt`] is read from, in [`attempt_row`]'s order, but its environment.
macro_rules! attempt_columns {
    () => {
        "run_id, session_id, node, attempt, state, agent, started_ms, finished_ms, exit_code,
        error_json, pid, process_start_time, log_path, inputs_json, outputs_json, iterations_json,
        times_unknown"
    };
}

/// The columns of a whole [`Attempt`].
const ATTEMPT_COLUMNS: &str = concat!(attempt_columns!(), ", environment_json");

/// The columns of an [`Attempt`] in a list of them: its environment left unread (a third of a
/// shell task's row, shown only with one attempt's details).
const LISTED_COLUMNS: &str = concat!(attempt_columns!(), ", NULL");

/// How a beginning attempt's iterations are kept: NULL outside loops.
fn iterations_json(iterations: &[ScopeIteration]) -> Option<String> {
    (!iterations.is_empty()).then(|| serde_json::to_string(iterations).unwrap_or_default())
}

struct RawAttempt {
    run_id: String,
    session_id: String,
    node: String,
    attempt: u32,
    state: String,
    agent: String,
    started_ms: i64,
    finished_ms: Option<i64>,
    exit_code: Option<i32>,
    error_json: Option<String>,
    pid: Option<u32>,
    process_start_time: Option<i64>,
    log_path: Option<String>,
    inputs_json: Option<String>,
    outputs_json: Option<String>,
    iterations_json: Option<String>,
    times_unknown: bool,
    environment_json: Option<String>,
}

fn attempt_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<RawAttempt> {
    Ok(RawAttempt {
        run_id: row.get(0)?,
        session_id: row.get(1)?,
        node: row.get(2)?,
        attempt: row.get(3)?,
        state: row.get(4)?,
        agent: row.get(5)?,
        started_ms: row.get(6)?,
        finished_ms: row.get(7)?,
        exit_code: row.get(8)?,
        error_json: row.get(9)?,
        pid: row.get(10)?,
        process_start_time: row.get(11)?,
        log_path: row.get(12)?,
        inputs_json: row.get(13)?,
        outputs_json: row.get(14)?,
        iterations_json: row.get(15)?,
        times_unknown: row.get(16)?,
        environment_json: row.get(17)?,
    })
}

impl RawAttempt {
    fn into_attempt(self, path: &Path) -> Result<Attempt, StoreError> {
        let run_id = self.run_id;
        let corrupt = |what: &str| StoreError::Corrupt {
            path: path.to_path_buf(),
            detail: format!("run {run_id:?} has an unreadable {what}"),
        };
        let json = |text: Option<String>, what: &str| -> Result<Option<Value>, StoreError> {
            text.map(|t| orrery_blueprint::json::from_str(&t).map_err(|_| corrupt(what))).transpose()
        };
        let state = AttemptState::parse(&self.state).ok_or_else(|| corrupt("state"))?;
        let error = match self.error_json {
            Some(t) => Some(orrery_blueprint::json::from_str(&t).map_err(|_| corrupt("error"))?),
            None => None,
        };
        let inputs = json(self.inputs_json, "inputs")?;
        let outputs = json(self.outputs_json, "outputs")?;
        let iterations = match self.iterations_json {
            Some(t) => orrery_blueprint::json::from_str(&t).map_err(|_| corrupt("iterations"))?,
            None => Vec::new(),
        };
        let environment = match self.environment_json {
            Some(t) => Some(orrery_blueprint::json::from_str(&t).map_err(|_| corrupt("environment"))?),
            None => None,
        };
        let (instance, task) = split_node(&self.node);
        let (instance, task) = (instance.to_string(), task.to_string());
        Ok(Attempt {
            run_id: RunId(run_id.clone()),
            session_id: self.session_id,
            node: self.node,
            instance,
            task,
            attempt: self.attempt,
            state,
            agent: self.agent,
            started_ms: self.started_ms,
            finished_ms: self.finished_ms,
            exit_code: self.exit_code,
            error,
            process: match (self.pid, self.process_start_time) {
                (Some(pid), Some(start)) => Some(ProcessIdentity { pid, start_time: start as u64 }),
                _ => None,
            },
            log_path: self.log_path.map(PathBuf::from),
            inputs,
            outputs,
            iterations,
            times_unknown: self.times_unknown,
            environment,
        })
    }
}
