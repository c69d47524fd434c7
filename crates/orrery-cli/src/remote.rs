//! `orrery publish` and `orrery servers`: antikythera servers, through the facade's jobs
//! (`publish_blueprints`, `list_servers`, `save_server`, `remove_server`), so the CLI and the
//! app keep one list of servers (in the task store) and publish alike.
//!
//! `publish` exits 0 when every blueprint is on the server, 1 when one is invalid or refused
//! (nothing after it is sent), 2 when the server cannot be asked or the arguments are wrong.

use crate::ReportFormat;
use anyhow::{Context, Result};
use orrery_api::{Api, ApiOptions, Envelope};
use serde_json::{json, Value};
use std::path::PathBuf;

/// Calls one job in this process: its envelope.
fn call(db: Option<PathBuf>, name: &str, arguments: Value) -> Result<Envelope> {
    let db = crate::db_path(db)?;
    let runtime = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    runtime.block_on(async move {
        let api = Api::new(ApiOptions { db, work_dir: None, max_parallel: None });
        api.call(name, arguments).await.map_err(|e| anyhow::anyhow!("{e}"))
    })
}

/// A failed job's message on stderr; its exit code.
fn failed(envelope: &Envelope) -> u8 {
    eprintln!("orrery: {}", envelope.answer.as_str().unwrap_or("the job failed"));
    match envelope.metadata["error"].as_str() {
        Some("invalid_argument" | "not_found" | "io") => 2,
        Some("unreachable" | "remote") => 2,
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
