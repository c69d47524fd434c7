//! The checklist of one attempt: named steps reported by the task's process (issue 3,
//! docs/format.md §7).
//!
//! Rules (the reasons are in the crate notes):
//! - a step is created by the first report that names it and keeps that position;
//! - a lower percentage than the step's current one is ignored (the answer says so), never an
//!   error; a percentage above 100 is an invalid argument;
//! - a done step stays done (later reports about it are ignored);
//! - at most one step is in progress: starting another auto-completes the previous one;
//! - only a running attempt takes reports (a stale run id is refused);
//! - settling an attempt as succeeded marks every step done; crash recovery marks the step
//!   left in progress `unknown` with [`Store::mark_unknown_in_progress`].

use rusqlite::{params, OptionalExtension};
use serde::{Deserialize, Serialize};

use crate::error::SqliteResultExt;
use crate::event_data::{EventData, ProgressChanged};
use crate::events::{append, last_seq_of_run, Event};
use crate::records::{AttemptState, RunId, StepState};
use crate::refusals::stale;
use crate::{Store, StoreError, Tx};

/// How many steps the resume view shows.
pub const RESUME_VIEW_STEPS: usize = 50;

/// One line of progress: `{"step": NAME, "state": ..., "percentage": 0-100}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProgressReport {
    pub step: String,
    pub state: StepState,
    #[serde(default)]
    pub percentage: Option<u8>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Step {
    pub position: u32,
    pub name: String,
    pub state: StepState,
    pub percentage: Option<u8>,
    /// The event that recorded the step as done.
    pub result_event_seq: Option<u64>,
    pub updated_ms: i64,
}

/// What a report did.
#[derive(Debug, Clone, PartialEq)]
pub struct ProgressUpdate {
    /// The step as stored after the report.
    pub step: Step,
    /// The step that was in progress and was completed because this one started.
    pub auto_completed: Option<String>,
    /// Set when part of the report was ignored (a lower percentage, a report about a done step).
    pub ignored: Option<String>,
    /// The `progress` event, when anything changed.
    pub event: Option<Event>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepCounts {
    pub pending: u32,
    pub in_progress: u32,
    pub done: u32,
    pub unknown: u32,
}

/// A bounded view to resume from: the attempt's state, the first 50 steps, counts per state
/// over all steps, and the seq of the last event about the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProgressView {
    pub run_id: RunId,
    pub session_id: String,
    pub node: String,
    pub attempt_state: AttemptState,
    pub steps: Vec<Step>,
    pub total_steps: u32,
    pub counts: StepCounts,
    pub last_event_seq: Option<u64>,
}

impl Store {
    /// Applies one progress report to a running attempt; see the module rules.
    pub fn report_progress(&mut self, run_id: &RunId, report: &ProgressReport) -> Result<ProgressUpdate, StoreError> {
        if report.step.is_empty() {
            return Err(StoreError::invalid(format!("a progress step of run {run_id} needs a name")));
        }
        if report.percentage.is_some_and(|p| p > 100) {
            return Err(StoreError::invalid(format!(
                "percentage {} of step {:?} is above 100",
                report.percentage.unwrap_or_default(),
                report.step
            )));
        }
        self.write(|tx| {
            let session_id: Option<String> = tx
                .sql
                .query_row(
                    "SELECT session_id FROM task_runs WHERE run_id = ?1 AND state = 'running'",
                    [run_id.as_str()],
                    |r| r.get(0),
                )
                .optional()
                .at(tx.path)?;
            let Some(session_id) = session_id else { return Err(stale(tx.sql, run_id)) };

            let current = step(tx, run_id, &report.step)?;
            let mut ignored = None;
            let mut auto_completed = None;
            let (mut state, mut percentage, position) = match &current {
                Some(s) => (s.state, s.percentage, s.position),
                None => {
                    let next: u32 = tx
                        .sql
                        .query_row(
                            "SELECT COALESCE(MAX(position) + 1, 0) FROM progress_steps WHERE run_id = ?1",
                            [run_id.as_str()],
                            |r| r.get(0),
                        )
                        .at(tx.path)?;
                    (StepState::Pending, None, next)
                }
            };
            if state == StepState::Done && current.is_some() {
                ignored = Some(format!("step {:?} is already done", report.step));
            } else {
                match (percentage, report.percentage) {
                    (Some(old), Some(new)) if new < old => {
                        ignored =
                            Some(format!("percentage {new} of step {:?} is below its {old}; kept {old}", report.step));
                    }
                    (_, Some(new)) => percentage = Some(new),
                    (_, None) => {}
                }
                if report.state == StepState::InProgress {
                    auto_completed = complete_other_in_progress(tx, run_id, &report.step)?;
                }
                state = report.state;
                if state == StepState::Done {
                    percentage = Some(100);
                }
            }
            let changed = match &current {
                None => true,
                Some(s) => s.state != state || s.percentage != percentage,
            };
            let event = if changed || auto_completed.is_some() {
                let data = ProgressChanged {
                    step: report.step.clone(),
                    state,
                    percentage,
                    auto_completed: auto_completed.clone(),
                };
                Some(append(tx, &session_id, Some(run_id), EventData::Progress(data))?)
            } else {
                None
            };
            let result_event_seq = match (&current, state, &event) {
                (_, StepState::Done, Some(e)) if current.as_ref().is_none_or(|s| s.state != StepState::Done) => {
                    Some(e.seq)
                }
                (Some(s), _, _) => s.result_event_seq,
                _ => None,
            };
            if changed {
                tx.sql
                    .execute(
                        "INSERT INTO progress_steps (run_id, position, name, state, percentage,
                             result_event_seq, updated_ms)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
                         ON CONFLICT (run_id, name) DO UPDATE SET state = ?4, percentage = ?5,
                             result_event_seq = ?6, updated_ms = ?7",
                        params![
                            run_id.as_str(),
                            position,
                            report.step,
                            state.as_str(),
                            percentage,
                            result_event_seq.map(|s| s as i64),
                            tx.now_ms
                        ],
                    )
                    .at(tx.path)?;
            }
            let step = step(tx, run_id, &report.step)?.ok_or_else(|| StoreError::Corrupt {
                path: tx.path.to_path_buf(),
                detail: format!("step {:?} of run {run_id} vanished while written", report.step),
            })?;
            Ok(ProgressUpdate { step, auto_completed, ignored, event })
        })
    }

    /// Marks the steps a crash left in progress as `unknown`; returns how many. Works on a run
    /// in any state, since recovery may settle the attempt before or after.
    pub fn mark_unknown_in_progress(&mut self, run_id: &RunId) -> Result<u32, StoreError> {
        self.write(|tx| {
            let exists = tx
                .sql
                .prepare_cached("SELECT 1 FROM task_runs WHERE run_id = ?1")
                .and_then(|mut s| s.exists([run_id.as_str()]))
                .at(tx.path)?;
            if !exists {
                return Err(StoreError::not_found("run", run_id.as_str()));
            }
            let n = tx
                .sql
                .execute(
                    "UPDATE progress_steps SET state = 'unknown', updated_ms = ?2
                     WHERE run_id = ?1 AND state = 'in_progress'",
                    params![run_id.as_str(), tx.now_ms],
                )
                .at(tx.path)?;
            Ok(n as u32)
        })
    }

    /// Every step of a run, in order.
    pub fn steps(&self, run_id: &RunId) -> Result<Vec<Step>, StoreError> {
        self.attempt(run_id)?;
        self.read(|conn, path| steps_of(conn, path, run_id, None))
    }

    /// The bounded resume view of one attempt.
    pub fn progress_view(&self, run_id: &RunId) -> Result<ProgressView, StoreError> {
        let attempt = self.attempt(run_id)?;
        self.read(|conn, path| {
            let steps = steps_of(conn, path, run_id, Some(RESUME_VIEW_STEPS))?;
            let mut counts = StepCounts::default();
            let mut stmt =
                conn.prepare("SELECT state, COUNT(*) FROM progress_steps WHERE run_id = ?1 GROUP BY state").at(path)?;
            let rows =
                stmt.query_map([run_id.as_str()], |r| Ok((r.get::<_, String>(0)?, r.get::<_, u32>(1)?))).at(path)?;
            for row in rows {
                let (state, n) = row.at(path)?;
                match StepState::parse(&state) {
                    Some(StepState::Pending) => counts.pending = n,
                    Some(StepState::InProgress) => counts.in_progress = n,
                    Some(StepState::Done) => counts.done = n,
                    Some(StepState::Unknown) => counts.unknown = n,
                    None => return Err(corrupt_step(path, run_id, &state)),
                }
            }
            Ok(ProgressView {
                run_id: run_id.clone(),
                session_id: attempt.session_id,
                node: attempt.node,
                attempt_state: attempt.state,
                steps,
                total_steps: counts.pending + counts.in_progress + counts.done + counts.unknown,
                counts,
                last_event_seq: last_seq_of_run(conn, path, run_id.as_str())?,
            })
        })
    }
}

/// On success every step is done (issue 3).
pub(crate) fn complete_all_steps(tx: &Tx<'_>, run_id: &RunId) -> Result<(), StoreError> {
    tx.sql
        .prepare_cached(
            "UPDATE progress_steps SET state = 'done', percentage = 100, updated_ms = ?2
             WHERE run_id = ?1 AND state != 'done'",
        )
        .and_then(|mut s| s.execute(params![run_id.as_str(), tx.now_ms]))
        .at(tx.path)?;
    Ok(())
}

fn complete_other_in_progress(tx: &Tx<'_>, run_id: &RunId, starting: &str) -> Result<Option<String>, StoreError> {
    tx.sql
        .query_row(
            "UPDATE progress_steps SET state = 'done', percentage = 100, updated_ms = ?3
             WHERE run_id = ?1 AND state = 'in_progress' AND name != ?2
             RETURNING name",
            params![run_id.as_str(), starting, tx.now_ms],
            |r| r.get(0),
        )
        .optional()
        .at(tx.path)
}

fn step(tx: &Tx<'_>, run_id: &RunId, name: &str) -> Result<Option<Step>, StoreError> {
    tx.sql
        .query_row(&format!("{SELECT_STEP} WHERE run_id = ?1 AND name = ?2"), [run_id.as_str(), name], step_row)
        .optional()
        .at(tx.path)?
        .map(|raw| raw.into_step(tx.path, run_id))
        .transpose()
}

fn steps_of(
    conn: &rusqlite::Connection,
    path: &std::path::Path,
    run_id: &RunId,
    limit: Option<usize>,
) -> Result<Vec<Step>, StoreError> {
    let mut stmt = conn.prepare(&format!("{SELECT_STEP} WHERE run_id = ?1 ORDER BY position LIMIT ?2")).at(path)?;
    let limit = limit.map(|l| l as i64).unwrap_or(-1);
    let rows = stmt.query_map(params![run_id.as_str(), limit], step_row).at(path)?;
    rows.map(|r| r.at(path).and_then(|raw| raw.into_step(path, run_id))).collect()
}

const SELECT_STEP: &str = "SELECT position, name, state, percentage, result_event_seq, updated_ms FROM progress_steps";

struct RawStep {
    position: u32,
    name: String,
    state: String,
    percentage: Option<u8>,
    result_event_seq: Option<i64>,
    updated_ms: i64,
}

fn step_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<RawStep> {
    Ok(RawStep {
        position: row.get(0)?,
        name: row.get(1)?,
        state: row.get(2)?,
        percentage: row.get(3)?,
        result_event_seq: row.get(4)?,
        updated_ms: row.get(5)?,
    })
}

impl RawStep {
    fn into_step(self, path: &std::path::Path, run_id: &RunId) -> Result<Step, StoreError> {
        let state = StepState::parse(&self.state).ok_or_else(|| corrupt_step(path, run_id, &self.state))?;
        Ok(Step {
            position: self.position,
            name: self.name,
            state,
            percentage: self.percentage,
            result_event_seq: self.result_event_seq.map(|s| s as u64),
            updated_ms: self.updated_ms,
        })
    }
}

fn corrupt_step(path: &std::path::Path, run_id: &RunId, state: &str) -> StoreError {
    StoreError::Corrupt { path: path.to_path_buf(), detail: format!("a step of run {run_id} has state {state:?}") }
}
