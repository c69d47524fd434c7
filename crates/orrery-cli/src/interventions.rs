//! `orrery skip SESSION TASK`, `orrery reset SESSION TASK [--downstream] [--clear-outputs]` and
//! `orrery reset-scope SESSION SCOPE_START`: interventions on a session that is not running (the
//! jobs `skip_task`, `reset_task`, `reset_scope`); `orrery resume SESSION` then goes on with it.
//! Each prints what changed (`--format json`: the job's answer). A mirror of a server's session
//! is changed by its server, as from the app.
//!
//! `orrery cancel SESSION [TASK]`, `orrery pause SESSION` and `orrery answer SESSION TASK VALUE`
//! act on a session that runs, in this or another process (the jobs `cancel_task`,
//! `stop_session`, `pause_session`, `answer_prompt`): they print what its runner made of the
//! request.
//!
//! Exit 0 done, 1 refused (the session's or task's state, an unknown session, task or scope, a
//! runner gone, no answer in time), 2 bad arguments or a store that cannot be used.

use crate::cli::ReportFormat;
use crate::face::{self, Report};
use anyhow::Result;
use orrery_api::{Done, InterventionView};
use serde_json::{json, Value};
use std::path::PathBuf;

pub fn skip(session: &str, task: &str, db: Option<PathBuf>, format: ReportFormat) -> Result<u8> {
    intervene(db, "skip_task", json!({"session_id": session, "task": task}), format)
}

pub fn reset(
    session: &str,
    task: &str,
    downstream: bool,
    clear_outputs: bool,
    db: Option<PathBuf>,
    format: ReportFormat,
) -> Result<u8> {
    let arguments =
        json!({"session_id": session, "task": task, "downstream": downstream, "clear_outputs": clear_outputs});
    intervene(db, "reset_task", arguments, format)
}

pub fn reset_scope(session: &str, scope_start: &str, db: Option<PathBuf>, format: ReportFormat) -> Result<u8> {
    intervene(db, "reset_scope", json!({"session_id": session, "scope_start": scope_start}), format)
}

fn intervene(db: Option<PathBuf>, job: &str, arguments: Value, format: ReportFormat) -> Result<u8> {
    let done: InterventionView = match face::report(face::call(db, job, arguments)?, format)? {
        Ok(Report::Text(done)) => done,
        Ok(Report::Done) => return Ok(0),
        Err(code) => return Ok(code),
    };
    if done.tasks.is_empty() {
        println!("nothing changed");
    }
    for c in &done.tasks {
        println!("{:<15} {} (was {})", c.to.as_str(), c.node, c.from.as_str());
    }
    for (instance, key) in &done.cleared_data {
        println!("data null       {instance}.{key}");
    }
    for (instance, key) in &done.cleared_counters {
        println!("counter 0       {key} ({instance})");
    }
    if done.session_before != done.session_after {
        println!("session         {} (was {})", done.session_after.as_str(), done.session_before.as_str());
    }
    eprintln!("orrery: continue with: orrery resume {}", done.session_id);
    Ok(0)
}

pub fn cancel(session: &str, task: Option<&str>, db: Option<PathBuf>, format: ReportFormat) -> Result<u8> {
    match task {
        Some(task) => ask(db, "cancel_task", json!({"session_id": session, "task": task}), format),
        None => ask(db, "stop_session", json!({"session_id": session}), format),
    }
}

pub fn pause(session: &str, db: Option<PathBuf>, format: ReportFormat) -> Result<u8> {
    ask(db, "pause_session", json!({"session_id": session}), format)
}

pub fn continue_session(
    session: &str,
    task: Option<&str>,
    how: &str,
    db: Option<PathBuf>,
    format: ReportFormat,
) -> Result<u8> {
    ask(db, "continue_session", json!({"session_id": session, "task": task, "how": how}), format)
}

/// `orrery break SESSION TASK[:before|:after]`, or `--clear`: the job `set_breakpoint`.
pub fn set_breakpoint(session: &str, task: &str, clear: bool, db: Option<PathBuf>, format: ReportFormat) -> Result<u8> {
    let (task, at) = match task.rsplit_once(':') {
        Some((task, at @ ("before" | "after"))) => (task, Some(at)),
        _ => (task, Some("before")),
    };
    let at = if clear { None } else { at };
    ask(db, "set_breakpoint", json!({"session_id": session, "task": task, "at": at}), format)
}

pub fn answer_prompt(session: &str, task: &str, value: &str, db: Option<PathBuf>, format: ReportFormat) -> Result<u8> {
    let value = orrery_blueprint::json::from_str(value).unwrap_or_else(|_| Value::String(value.to_string()));
    ask(db, "answer_prompt", json!({"session_id": session, "task": task, "value": value}), format)
}

fn ask(db: Option<PathBuf>, job: &str, arguments: Value, format: ReportFormat) -> Result<u8> {
    let done: Done = match face::report(face::call(db, job, arguments)?, format)? {
        Ok(Report::Text(done)) => done,
        Ok(Report::Done) => return Ok(0),
        Err(code) => return Ok(code),
    };
    println!("{}", done.outcome);
    Ok(0)
}
