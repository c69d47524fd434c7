//! `orrery skip SESSION TASK`, `orrery reset SESSION TASK [--downstream] [--clear-outputs]` and
//! `orrery reset-scope SESSION SCOPE_START`: interventions on a session that is not running
//! ([`orrery_engine::interventions`]); `orrery resume SESSION` then goes on with it. Each prints
//! what changed. Exit 0 done, 1 refused (the session's or task's state, an unknown session,
//! task or scope), 2 bad arguments or a store that cannot be used.
//!
//! `orrery cancel SESSION [TASK]`, `orrery pause SESSION` and `orrery answer SESSION TASK VALUE`
//! act on a session that runs, in this or another process ([`orrery_engine::requests`]): they
//! print what its runner made of the request. Exit 0 done, 1 refused (not running, its runner
//! gone, no such running task, no answer in time), 2 a store that cannot be used.

use crate::ReportFormat;
use anyhow::Result;
use orrery_engine::interventions::{self, Intervention, InterventionError};
use orrery_engine::requests;
use orrery_store::Request;
use serde_json::json;
use std::path::PathBuf;
use std::time::Duration;

pub fn skip(session: &str, task: &str, db: Option<PathBuf>, format: ReportFormat) -> Result<u8> {
    let db = crate::db_path(db)?;
    report(interventions::skip_task(&db, session, task), "skip", format)
}

pub fn reset(
    session: &str,
    task: &str,
    downstream: bool,
    clear_outputs: bool,
    db: Option<PathBuf>,
    format: ReportFormat,
) -> Result<u8> {
    let db = crate::db_path(db)?;
    report(interventions::reset_task(&db, session, task, downstream, clear_outputs), "reset", format)
}

pub fn reset_scope(session: &str, scope_start: &str, db: Option<PathBuf>, format: ReportFormat) -> Result<u8> {
    let db = crate::db_path(db)?;
    report(interventions::reset_scope(&db, session, scope_start), "reset-scope", format)
}

fn report(outcome: Result<Intervention, InterventionError>, action: &str, format: ReportFormat) -> Result<u8> {
    let done = match outcome {
        Ok(done) => done,
        Err(e) if e.is_refusal() => {
            eprintln!("orrery: {e}");
            return Ok(1);
        }
        Err(e) => return Err(e.into()),
    };
    match format {
        ReportFormat::Json => {
            let answer = json!({
                "action": action,
                "session_id": done.session_id,
                "session_state": {"before": done.session_before.as_str(), "after": done.session_after.as_str()},
                "tasks": done.nodes.iter().map(|c| json!({"node": c.node, "from": c.from.as_str(), "to": c.to.as_str()})).collect::<Vec<_>>(),
                "cleared_data": done.cleared_data.iter().map(|(i, k)| json!({"instance": i, "key": k})).collect::<Vec<_>>(),
                "cleared_counters": done.cleared_counters.iter().map(|(i, k)| json!({"instance": i, "scope": k})).collect::<Vec<_>>(),
            });
            println!("{}", serde_json::to_string_pretty(&answer)?);
        }
        ReportFormat::Text => {
            if done.nodes.is_empty() {
                println!("nothing changed");
            }
            for c in &done.nodes {
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
        }
    }
    Ok(0)
}

/// How long `cancel`, `pause` and `answer` wait for the runner to say what it did.
const REQUEST_WAIT: Duration = Duration::from_secs(10);

pub fn cancel(session: &str, task: Option<&str>, db: Option<PathBuf>, format: ReportFormat) -> Result<u8> {
    let request = match task {
        Some(task) => Request::Cancel { task: task.to_string() },
        None => Request::Stop,
    };
    ask(session, &request, db, format)
}

pub fn pause(session: &str, db: Option<PathBuf>, format: ReportFormat) -> Result<u8> {
    ask(session, &Request::Pause, db, format)
}

pub fn answer(session: &str, task: &str, value: &str, db: Option<PathBuf>, format: ReportFormat) -> Result<u8> {
    let value = serde_json::from_str(value).unwrap_or_else(|_| serde_json::Value::String(value.to_string()));
    ask(session, &Request::Answer { task: task.to_string(), value }, db, format)
}

fn ask(session: &str, request: &Request, db: Option<PathBuf>, format: ReportFormat) -> Result<u8> {
    let db = crate::db_path(db)?;
    let outcome = match requests::ask(&db, session, request, REQUEST_WAIT) {
        Ok(outcome) => outcome,
        Err(e) if !e.is_refusal() => return Err(e.into()),
        Err(e) => {
            match format {
                ReportFormat::Json => {
                    println!("{}", json!({"session_id": session, "done": false, "error": e.to_string()}))
                }
                ReportFormat::Text => eprintln!("orrery: {e}"),
            }
            return Ok(1);
        }
    };
    let refused = outcome.starts_with("refused");
    match format {
        ReportFormat::Json => println!("{}", json!({"session_id": session, "done": !refused, "outcome": outcome})),
        ReportFormat::Text if refused => eprintln!("orrery: {outcome}"),
        ReportFormat::Text => println!("{outcome}"),
    }
    Ok(if refused { 1 } else { 0 })
}
