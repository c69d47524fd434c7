//! `orrery publish`, `orrery servers` and `orrery remote`: antikythera servers, through the
//! facade's jobs (`publish_blueprints`, `list_servers`, `save_server`, `remove_server`, the
//! `remote_*` jobs), so the CLI and the app keep one list of servers (in the task store) and
//! work with them alike.
//!
//! `publish` exits 0 when every blueprint is on the server, 1 when one is invalid or refused
//! (nothing after it is sent), 2 when the server cannot be asked or the arguments are wrong.

use crate::cli::ReportFormat;
use crate::face::call;
use anyhow::Result;
use orrery_api::{Envelope, FailureCode};
use serde_json::{json, Value};
use std::path::PathBuf;

/// A failed job's message on stderr; its exit code: 2 when the server or a file cannot be
/// used or the arguments are wrong, 1 when the server refused what was asked.
pub(crate) fn failed(envelope: &Envelope) -> u8 {
    eprintln!("orrery: {}", envelope.answer.as_str().unwrap_or("the job failed"));
    match envelope.failure().map(|f| f.code) {
        Some(
            FailureCode::InvalidArgument
            | FailureCode::NotFound
            | FailureCode::Io
            | FailureCode::Unreachable
            | FailureCode::Remote,
        ) => 2,
        _ => 1,
    }
}

pub fn publish(
    server: &str,
    token: Option<String>,
    force: bool,
    files: &[PathBuf],
    db: Option<PathBuf>,
    format: ReportFormat,
) -> Result<u8> {
    let arguments = json!({"server": server, "token": token, "files": files, "force": force});
    let envelope = call(db, "publish_blueprints", arguments)?;
    if !envelope.success {
        return Ok(failed(&envelope));
    }
    let answer = &envelope.answer;
    if matches!(format, ReportFormat::Json) {
        println!("{}", serde_json::to_string_pretty(answer)?);
    } else {
        println!("{}", answer["server"].as_str().unwrap_or(server));
        for b in answer["blueprints"].as_array().into_iter().flatten() {
            let outcome = b["outcome"].as_str().unwrap_or("?").replace('_', " ");
            let id = b["blueprint_id"].as_str().filter(|id| !id.is_empty()).unwrap_or("?");
            let beside = if b["given"] == true { String::new() } else { " (called by a blueprint given)".to_string() };
            println!("  {outcome:<9} {id}  {}{beside}", b["file"].as_str().unwrap_or(""));
            if b["outcome"] != "uploaded" {
                if let Some(message) = b["message"].as_str() {
                    println!("            {message}");
                }
            }
            for p in b["problems"].as_array().into_iter().flatten() {
                let task = p["task_id"].as_str().map(|t| format!("task {t}: ")).unwrap_or_default();
                println!("            - {task}{}", p["message"].as_str().unwrap_or(""));
            }
        }
    }
    if answer["all_uploaded"] == true {
        return Ok(0);
    }
    // The server could not be asked: as for any unreachable server.
    let failed = answer["blueprints"].as_array().into_iter().flatten().any(|b| b["outcome"] == "failed");
    Ok(if failed { 2 } else { 1 })
}

/// What `orrery servers` does.
pub enum ServersAction {
    List,
    Add { name: String, url: String, token: Option<String> },
    Remove { name: String },
}

pub fn servers(action: ServersAction, db: Option<PathBuf>, format: ReportFormat) -> Result<u8> {
    let (job, arguments) = match &action {
        ServersAction::List => ("list_servers", json!({})),
        ServersAction::Add { name, url, token } => ("save_server", json!({"name": name, "url": url, "token": token})),
        ServersAction::Remove { name } => ("remove_server", json!({"name": name})),
    };
    let envelope = call(db, job, arguments)?;
    if !envelope.success {
        return Ok(failed(&envelope));
    }
    if matches!(format, ReportFormat::Json) {
        println!("{}", serde_json::to_string_pretty(&envelope.answer)?);
        return Ok(0);
    }
    match action {
        ServersAction::List => {
            for s in envelope.answer.as_array().into_iter().flatten() {
                let token = if s["has_token"] == true { "  (token)" } else { "" };
                println!("{:<16} {}{token}", s["name"].as_str().unwrap_or(""), s["url"].as_str().unwrap_or(""));
            }
        }
        ServersAction::Add { name, .. } => {
            println!("saved server {name}: {}", envelope.answer["url"].as_str().unwrap_or(""))
        }
        ServersAction::Remove { name } => {
            if envelope.answer["removed"] != true {
                eprintln!("orrery: no server named {name}");
                return Ok(1);
            }
            println!("removed server {name}");
        }
    }
    Ok(0)
}

/// What `orrery remote` does.
pub enum RemoteAction {
    Sessions,
    Run { blueprint_id: String, params: Vec<String>, name: Option<String>, timeout: f64 },
    Wait { session: String, timeout: f64, start: bool },
    Control { session: String, action: &'static str },
    Intervene { session: String, action: &'static str, task: String, downstream: bool, clear_outputs: bool },
}

pub fn remote(
    server: &str,
    token: Option<String>,
    action: RemoteAction,
    db: Option<PathBuf>,
    format: ReportFormat,
) -> Result<u8> {
    if server.is_empty() {
        eprintln!("orrery: give --server NAME or --server http://host:port");
        return Ok(2);
    }
    let json = matches!(format, ReportFormat::Json);
    let on = json!({"server": server, "token": token});
    let with = |extra: Value| {
        let mut arguments = on.clone();
        arguments.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        arguments
    };
    match action {
        RemoteAction::Sessions => {
            let envelope = call(db, "remote_sessions", on.clone())?;
            if !envelope.success {
                return Ok(failed(&envelope));
            }
            if json {
                println!("{}", serde_json::to_string_pretty(&envelope.answer)?);
            } else {
                for s in envelope.answer.as_array().into_iter().flatten() {
                    let text = |k: &str| s[k].as_str().unwrap_or("").to_string();
                    println!(
                        "{:<36} {:<24} {:<10} {}",
                        text("session_id"),
                        text("blueprint_id"),
                        text("state"),
                        text("started_at")
                    );
                }
            }
            Ok(0)
        }
        RemoteAction::Control { session, action } => {
            act(db, "remote_control", with(json!({"session_id": session, "action": action})), json)
        }
        RemoteAction::Intervene { session, action, task, downstream, clear_outputs } => {
            let arguments = json!({"session_id": session, "action": action, "task": task, "downstream": downstream, "clear_outputs": clear_outputs});
            act(db, "remote_intervene", with(arguments), json)
        }
        RemoteAction::Run { blueprint_id, params, name, timeout } => {
            let mut given = serde_json::Map::new();
            for p in &params {
                let Some((k, v)) = p.split_once('=') else {
                    eprintln!("orrery: --param wants K=V, got {p:?}");
                    return Ok(2);
                };
                given.insert(k.to_string(), Value::String(v.to_string()));
            }
            // Created pending, started by the wait once the stream is open: every event is seen.
            let arguments = with(json!({"blueprint_id": blueprint_id, "params": given, "name": name, "start": false}));
            let started = call(db.clone(), "remote_run", arguments)?;
            if !started.success {
                return Ok(failed(&started));
            }
            let session = started.answer["session_id"].as_str().unwrap_or("").to_string();
            if !json {
                println!("started {session} on {server}");
            }
            wait(db, with(json!({"session_id": session, "timeout_s": timeout, "start": true})), json)
        }
        RemoteAction::Wait { session, timeout, start } => {
            wait(db, with(json!({"session_id": session, "timeout_s": timeout, "start": start})), json)
        }
    }
}

/// A session action on a server: the server's message.
fn act(db: Option<PathBuf>, job: &str, arguments: Value, json: bool) -> Result<u8> {
    let envelope = call(db, job, arguments)?;
    if !envelope.success {
        return Ok(failed(&envelope));
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&envelope.answer)?);
    } else {
        let text = |k: &str| envelope.answer[k].as_str().unwrap_or("").to_string();
        println!("{}: {}", text("session_id"), text("message"));
    }
    Ok(0)
}

/// Follows a remote session to its end: exit 0 completed, 1 failed or stopped, 3 still going.
fn wait(db: Option<PathBuf>, arguments: Value, json: bool) -> Result<u8> {
    let envelope = call(db, "remote_wait", arguments)?;
    if !envelope.success {
        return Ok(failed(&envelope));
    }
    let answer = &envelope.answer;
    if json {
        println!("{}", serde_json::to_string_pretty(answer)?);
    } else {
        for t in answer["tasks"].as_array().into_iter().flatten() {
            let text = |k: &str| t[k].as_str().unwrap_or("").to_string();
            println!("  {:<10} {}.{}", text("state"), text("blueprint_id"), text("task_id"));
        }
        let session = &answer["session"];
        println!("{} {}", session["session_id"].as_str().unwrap_or(""), session["state"].as_str().unwrap_or(""));
    }
    Ok(match (answer["ended"] == true, answer["session"]["state"].as_str()) {
        (false, _) => 3,
        (true, Some("completed")) => 0,
        _ => 1,
    })
}
