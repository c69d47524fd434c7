//! `orrery sessions` and `orrery status SESSION`: what the task store knows, read-only.

use crate::ReportFormat;
use anyhow::{Context, Result};
use orrery_store::{SessionFilter, Store};
use std::path::PathBuf;

/// The task store a read-only command uses, opened: read-only when this process may not write
/// it (another user's store, a read-only folder), so it can still be listed and inspected.
pub(crate) fn open(db: Option<PathBuf>) -> Result<Store> {
    let path = crate::db_path(db)?;
    match Store::open(&path) {
        Err(e) if e.code() == orrery_store::FailureCode::ReadOnly => Store::open_read_only(&path),
        opened => opened,
    }
    .with_context(|| format!("cannot open the task store {}", path.display()))
}

fn duration(from: Option<i64>, to: Option<i64>) -> String {
    match (from, to) {
        (Some(a), Some(b)) => format!("{:.1}s", (b - a) as f64 / 1000.0),
        (Some(_), None) => "running".into(),
        _ => "-".into(),
    }
}

pub fn sessions(db: Option<PathBuf>, format: ReportFormat) -> Result<u8> {
    let store = open(db)?;
    let sessions = store.sessions(&SessionFilter::default())?;
    match format {
        ReportFormat::Json => println!("{}", serde_json::to_string_pretty(&sessions)?),
        ReportFormat::Text => {
            println!("{:<38} {:<24} {:<11} {:>9}", "SESSION", "BLUEPRINT", "STATE", "DURATION");
            let interrupted: Vec<String> =
                orrery_engine::runner::interrupted_sessions(&store)?.into_iter().map(|s| s.id).collect();
            for s in &sessions {
                // Running with no live runner: it crashed; `orrery recover` goes on with it.
                let state = if interrupted.contains(&s.id) { "interrupted" } else { s.state.as_str() };
                println!(
                    "{:<38} {:<24} {:<11} {:>9}",
                    s.id,
                    s.blueprint_id,
                    state,
                    duration(s.started_ms, s.finished_ms)
                );
            }
            if !interrupted.is_empty() {
                eprintln!("orrery: {} interrupted session(s): orrery recover goes on with them", interrupted.len());
            }
        }
    }
    Ok(0)
}

pub fn status(session: &str, db: Option<PathBuf>, format: ReportFormat) -> Result<u8> {
    let store = open(db)?;
    let s = match store.session(session) {
        Ok(s) => s,
        Err(e) if e.code() == orrery_store::FailureCode::NotFound => {
            eprintln!("orrery: no session '{session}' in {}", store.path().display());
            return Ok(1);
        }
        Err(e) => return Err(e.into()),
    };
    let nodes = store.task_nodes(session)?;
    let attempts = store.attempts(session)?;
    let restarts: Vec<String> = store.restarts_of(session)?.into_iter().map(|r| r.id).collect();
    match format {
        ReportFormat::Json => {
            let answer = serde_json::json!({"session": s, "tasks": nodes, "attempts": attempts, "restarts": restarts});
            println!("{}", serde_json::to_string_pretty(&answer)?);
        }
        ReportFormat::Text => {
            println!("session   {} ({})", s.id, s.blueprint_id);
            println!("state     {} after {}", s.state.as_str(), duration(s.started_ms, s.finished_ms));
            if let Some(e) = &s.last_error {
                println!("error     {}: {}", e.code, e.message);
            }
            if let Some(remote) = &s.remote {
                println!("runs on   {} as session {}", remote.url, remote.session_id);
            }
            if let Some(origin) = &s.restarted_from {
                println!("restarts  {origin}");
            }
            if !restarts.is_empty() {
                println!("restarted as {}", restarts.join(", "));
            }
            println!();
            for n in &nodes {
                let tries = attempts.iter().filter(|a| a.node == n.node).count();
                println!("{:<10} {} ({tries} attempt{})", n.state.as_str(), n.node, if tries == 1 { "" } else { "s" });
            }
        }
    }
    Ok(0)
}
