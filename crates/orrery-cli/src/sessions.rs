//! `orrery sessions` and `orrery status SESSION`: what the task store knows, through the jobs
//! `list_sessions` and `get_session` (`--format json` prints their answers). Exit 0 printed, 1
//! an unknown session, 2 a store that cannot be read.

use crate::cli::ReportFormat;
use crate::face::{self, Report};
use crate::live::render;
use anyhow::Result;
use orrery_api::{SessionListing, SessionView};
use serde_json::json;
use std::path::PathBuf;

fn duration(from: Option<i64>, to: Option<i64>) -> String {
    match (from, to) {
        (Some(a), Some(b)) => format!("{:.1}s", (b - a) as f64 / 1000.0),
        (Some(_), None) => "running".into(),
        _ => "-".into(),
    }
}

/// What `session_timing` says of a session against its blueprint's past runs: its time left
/// while it runs, else its critical path and the tasks slower than usual. Nothing when it cannot
/// say (no past run, a store that cannot answer): the status stands without it.
fn print_timing(db: Option<PathBuf>, session: &str) -> Result<()> {
    let envelope = face::call(db, "session_timing", json!({ "session_id": session }))?;
    let Some(timing) = envelope.success.then_some(envelope.answer) else { return Ok(()) };
    let past = timing["past_runs"].as_u64().unwrap_or(0);
    let names = |v: &serde_json::Value| -> Vec<String> {
        v.as_array().into_iter().flatten().filter_map(|n| n.as_str().map(String::from)).collect()
    };
    if let Some(left) = timing["remaining_ms"].as_i64() {
        let overdue = names(&timing["overdue"]);
        let unknown = timing["unknown"].as_u64().unwrap_or(0);
        let about = if !overdue.is_empty() && left < 1000 {
            format!("longer than usual ({} past its usual)", overdue.join(", "))
        } else {
            let least = if unknown > 0 { "at least " } else { "" };
            format!("{least}about {}", render::duration(left, true))
        };
        let never = if unknown > 0 { format!("; {unknown} task(s) to run never ran before") } else { String::new() };
        println!("left      {about} (from {past} past run{}{never})", if past == 1 { "" } else { "s" });
        return Ok(());
    }
    let critical = names(&timing["critical_path"]);
    if critical.is_empty() {
        return Ok(());
    }
    println!("critical  {}", critical.join(" -> "));
    for t in timing["tasks"].as_array().into_iter().flatten().filter(|t| t["slow"] == true) {
        let (took, usual) = (t["took_ms"].as_i64().unwrap_or(0), t["usual_ms"].as_i64().unwrap_or(0));
        println!(
            "slow      {} took {}, usually {} (median of {} past runs)",
            t["node"].as_str().unwrap_or("?"),
            render::duration(took, true),
            render::duration(usual, true),
            t["runs"]
        );
    }
    Ok(())
}

pub fn sessions(db: Option<PathBuf>, format: ReportFormat) -> Result<u8> {
    let listed: Vec<SessionListing> = match face::report(face::call(db, "list_sessions", json!({}))?, format)? {
        Ok(Report::Text(listed)) => listed,
        Ok(Report::Done) => return Ok(0),
        Err(code) => return Ok(code),
    };
    println!("{:<38} {:<24} {:<11} {:>9}", "SESSION", "BLUEPRINT", "STATE", "DURATION");
    for l in &listed {
        let s = &l.session;
        // Running with no live runner: it crashed; `orrery recover` goes on with it.
        let state = if l.interrupted { "interrupted" } else { s.state.as_str() };
        let simulated = if s.simulation.is_some() { "  simulated" } else { "" };
        let took = duration(s.started_ms, s.finished_ms);
        println!("{:<38} {:<24} {:<11} {took:>9}{simulated}", s.id, s.blueprint_id, state);
    }
    let interrupted = listed.iter().filter(|l| l.interrupted).count();
    if interrupted > 0 {
        eprintln!("orrery: {interrupted} interrupted session(s): orrery recover goes on with them");
    }
    Ok(0)
}

pub fn status(session: &str, db: Option<PathBuf>, format: ReportFormat) -> Result<u8> {
    let envelope = face::call(db.clone(), "get_session", json!({ "session_id": session }))?;
    let view: SessionView = match face::report(envelope, format)? {
        Ok(Report::Text(view)) => view,
        Ok(Report::Done) => return Ok(0),
        Err(code) => return Ok(code),
    };
    let s = &view.session;
    println!("session   {} ({})", s.id, s.blueprint_id);
    println!("state     {} after {}", s.state.as_str(), duration(s.started_ms, s.finished_ms));
    if let Some(e) = &s.last_error {
        println!("error     {}: {}", e.code, e.message);
    }
    if let Some(remote) = &s.remote {
        println!("runs on   {} as session {}", remote.url, remote.session_id);
    }
    if let Some(simulation) = &s.simulation {
        let from = simulation.outputs_from.as_deref().map(|f| format!(", outputs from {f}")).unwrap_or_default();
        println!("simulated no process started{from}");
    }
    if let Some(origin) = &s.restarted_from {
        println!("restarts  {origin}");
    }
    if !view.restarts.is_empty() {
        let ids: Vec<&str> = view.restarts.iter().map(|r| r.id.as_str()).collect();
        println!("restarted as {}", ids.join(", "));
    }
    print_timing(db, &s.id)?;
    println!();
    for n in &view.tasks {
        let mine: Vec<_> = view.attempts.iter().filter(|a| a.node == n.node).collect();
        let tries = mine.len();
        // Where in its loops the latest attempt ran, the outermost first.
        let passes: Vec<String> = mine
            .last()
            .map(|a| a.iterations.iter().map(|i| format!("{} #{}", i.name, i.iteration)).collect())
            .unwrap_or_default();
        let passes = if passes.is_empty() { String::new() } else { format!(", in {}", passes.join(" > ")) };
        println!("{:<10} {} ({tries} attempt{}{passes})", n.state.as_str(), n.node, if tries == 1 { "" } else { "s" });
    }
    Ok(0)
}
