//! `orrery jobs` lists the facade's catalogue ([`orrery_api`]); `orrery job NAME [JSON]` calls
//! one job in this process and prints its envelope `{"answer", "success", "metadata"}`.
//!
//! Exit 0 when the job succeeded, 1 when it answered a business failure (`success: false`), 2
//! when it was refused before running (an unknown job, arguments that break its schema) or
//! the arguments are not JSON. A job that starts a session (`start_session`, `resume_session`,
//! `restart_session`) runs it in this process: the envelope is printed at once, then `orrery
//! job` waits for the session to end before it exits. SIGINT, SIGTERM or SIGHUP ends any job
//! with exit 130, and stops the session it runs (`stopped`, resumable). The streaming job `stream_task` prints
//! one JSON line per item (`{"kind", "data"}`) as it comes, and exits 0 after `result`.

use crate::cli::ReportFormat;
use anyhow::{Context, Result};
use orrery_api::{Api, ApiOptions, StreamItem, Streamed};
use std::path::PathBuf;

pub fn jobs(format: ReportFormat) -> Result<u8> {
    // The catalogue does not touch the store.
    let api = Api::new(ApiOptions { db: PathBuf::from("orrery.db"), work_dir: None, max_parallel: None });
    let jobs = api.jobs();
    match format {
        ReportFormat::Json => out!("{}", serde_json::to_string_pretty(&jobs)?),
        ReportFormat::Text => {
            let width = jobs.iter().map(|j| j.name.len()).max().unwrap_or(0);
            for j in &jobs {
                let first = j.description.split(". ").next().unwrap_or(j.description).trim_end_matches('.');
                out!("{:<width$}  {first}", j.name);
            }
        }
    }
    Ok(0)
}

pub fn job(name: &str, arguments: Option<&str>, db: Option<PathBuf>, project: &str, agent: &str) -> Result<u8> {
    let caller = match orrery_api::Caller::new(project, agent) {
        Ok(caller) => caller,
        Err(why) => {
            say!("orrery: {why}");
            return Ok(2);
        }
    };
    let arguments: serde_json::Value = match arguments {
        None => serde_json::Value::Null,
        Some(text) => match orrery_blueprint::json::from_str(text) {
            Ok(value) => value,
            Err(e) => {
                say!("orrery: the arguments of job {name} are not JSON: {e}");
                return Ok(2);
            }
        },
    };
    let db = crate::db_path(db)?;
    // SIGINT, SIGTERM or SIGHUP ends any job (130), and stops a session it runs as `orrery run`
    // does.
    let mut stops = crate::signals::watch()?;
    let runtime = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    runtime.block_on(async move {
        let api = Api::new(ApiOptions { db, work_dir: None, max_parallel: None }).as_caller(caller);
        let called = async {
            if api.jobs().iter().any(|j| j.name == name && j.streams) {
                return stream(&api, arguments).await;
            }
            let envelope = match api.call(name, arguments).await {
                Ok(envelope) => envelope,
                Err(e) => {
                    say!("orrery: {e}");
                    return Ok(2);
                }
            };
            out!("{}", serde_json::to_string_pretty(&envelope)?);
            api.wait_all().await;
            Ok(if envelope.success { 0 } else { 1 })
        };
        tokio::select! {
            code = called => code,
            Some(_) = stops.next() => {
                // As `orrery serve` does: the processes of a session it runs get SIGTERM, a
                // grace, SIGKILL; the session ends `stopped`, for `orrery resume`.
                for id in api.running_sessions() {
                    let _ = api.call("stop_session", serde_json::json!({ "session_id": id })).await;
                }
                api.wait_all().await;
                Ok(130)
            }
        }
    })
}

async fn stream(api: &Api, arguments: serde_json::Value) -> Result<u8> {
    use std::io::Write;
    let mut items = match api.stream_task(arguments).await {
        Ok(Streamed::Items(items)) => items,
        Ok(Streamed::Refused(envelope)) => {
            out!("{}", serde_json::to_string_pretty(&envelope)?);
            return Ok(1);
        }
        Err(e) => {
            say!("orrery: {e}");
            return Ok(2);
        }
    };
    let mut out = std::io::stdout().lock();
    let mut ended = false;
    while let Some(item) = items.recv().await {
        ended = matches!(item, StreamItem::Result(_));
        if writeln!(out, "{}", serde_json::to_string(&item)?).and_then(|_| out.flush()).is_err() {
            break; // the reader went away: the task goes on, as a stream client's leaving means
        }
    }
    Ok(if ended { 0 } else { 1 })
}
