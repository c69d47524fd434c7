//! `orrery agent --broker URL`: Orrery's built-in agents offered on an MQTT broker; and
//! `orrery broker`: the broker saved for sessions.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};

use crate::cli::{BrokerCommand, ReportFormat};
use crate::remote;
use orrery_api::agent::{self, matches_pattern, AgentNote, AgentOptions};
use orrery_broker::BrokerAddress;

pub fn agent(
    broker: &str,
    id: Option<String>,
    types: Vec<String>,
    work_dir: Option<PathBuf>,
    heartbeat: f64,
) -> Result<u8> {
    let address: BrokerAddress = broker.parse()?;
    if !(heartbeat.is_finite() && heartbeat > 0.0) {
        bail!("--heartbeat must be a number of seconds > 0, got {heartbeat}");
    }
    let offered = agent::offered();
    for pattern in &types {
        if !offered.iter().any(|t| matches_pattern(pattern, t)) {
            bail!("--type {pattern}: no type the agent can offer matches; it can offer {}", offered.join(", "));
        }
    }
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").map(|h| h.trim().to_string()).unwrap_or_default();
    let id =
        id.unwrap_or_else(|| format!("orrery-{}-{}", if host.is_empty() { "host" } else { &host }, std::process::id()));
    let work_dir = match work_dir {
        Some(dir) => dir,
        None => std::env::temp_dir().join(format!("orrery-agent-{}", orrery_blueprint::fsio::file_name(&id))),
    };
    std::fs::create_dir_all(&work_dir).with_context(|| format!("cannot create the work dir {}", work_dir.display()))?;
    let options = AgentOptions {
        id: id.clone(),
        types,
        work_dir: work_dir.clone(),
        heartbeat: Duration::from_secs_f64(heartbeat),
    };
    let offering = options.offering().join(", ");
    let runtime = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    runtime.block_on(async move {
        let mut first = true;
        let served = agent::serve(&address, options, |note| {
            let line = match note {
                AgentNote::Connected if first => {
                    first = false;
                    format!("agent {id} on {address}, offering {offering}; work dir {}", work_dir.display())
                }
                AgentNote::Connected => format!("connected to {address} again"),
                AgentNote::Lost(reason) => format!("lost the broker ({reason}); trying again"),
                AgentNote::Claimed { id, task_type } => format!("claimed {id} ({task_type})"),
                AgentNote::Started { id, task_type } => format!("running {id} ({task_type})"),
                AgentNote::Finished { id, state, error: None } => format!("{id}: {state}"),
                AgentNote::Finished { id, state, error: Some(e) } => format!("{id}: {state}: {e}"),
                AgentNote::Cancelled { id } => format!("{id}: cancelled (another agent's completion was accepted)"),
                AgentNote::Unreadable(what) => format!("ignored a message: {what}"),
            };
            eprintln!("{line}");
        });
        tokio::select! {
            served = served => match served {
                Ok(()) => Ok(0),
                Err(e) => {
                    eprintln!("orrery: {e}");
                    Ok(2)
                }
            },
            _ = crate::signals::stop() => Ok(0),
        }
    })
}

/// `orrery broker [set BROKER [flags] | clear | check [BROKER]]`.
pub fn broker(action: Option<BrokerCommand>, db: Option<PathBuf>, format: ReportFormat) -> Result<u8> {
    let json = matches!(format, ReportFormat::Json);
    let (job, arguments) = match action {
        None => ("broker_settings", json!({})),
        Some(BrokerCommand::Clear) => ("save_broker_settings", json!({})),
        Some(BrokerCommand::Set { broker, policy }) => {
            let args = crate::cli::BrokerArgs { broker: Some(broker), policy };
            let api = crate::face::api(db.clone(), None)?;
            let settings = crate::face::runtime()?.block_on(crate::run::broker_settings(&api, &args))?;
            ("save_broker_settings", serde_json::to_value(settings)?)
        }
        Some(BrokerCommand::Check { broker }) => {
            let broker = match broker {
                Some(b) => b,
                None => {
                    let saved = crate::face::call(db.clone(), "broker_settings", json!({}))?;
                    match saved.answer["broker"].as_str() {
                        Some(b) => b.to_string(),
                        None => bail!("no broker is saved: give one (orrery broker check mqtt://HOST:PORT)"),
                    }
                }
            };
            let envelope = crate::face::call(db, "check_broker", json!({ "broker": broker }))?;
            if !envelope.success {
                return Ok(remote::failed(&envelope));
            }
            let a = &envelope.answer;
            if json {
                println!("{}", serde_json::to_string_pretty(a)?);
            } else if a["reachable"] == true {
                println!("{}: answers", a["broker"].as_str().unwrap_or(""));
            } else {
                eprintln!("orrery: {}", a["message"].as_str().unwrap_or("the broker does not answer"));
            }
            return Ok(if a["reachable"] == true { 0 } else { 2 });
        }
    };
    let envelope = crate::face::call(db, job, arguments)?;
    if !envelope.success {
        return Ok(remote::failed(&envelope));
    }
    let s = &envelope.answer;
    if json {
        println!("{}", serde_json::to_string_pretty(s)?);
        return Ok(0);
    }
    match s["broker"].as_str() {
        None => println!("no broker: tasks run on Orrery's built-in agents"),
        Some(broker) => {
            println!("broker         {broker}");
            let types: Vec<&str> = s["via_broker"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
            println!(
                "via broker     types with no built-in agent{}",
                if types.is_empty() { String::new() } else { format!(", {}", types.join(", ")) }
            );
            let timeout = s["agent_timeout_s"].as_f64().map_or("none".to_string(), |t| format!("{t} s"));
            println!("agent timeout  {timeout}, {} retries", s["agent_retries"]);
            println!("claim wait     {} s, doubling, 5 times", s["claim_wait_s"].as_f64().unwrap_or(2.0));
        }
    }
    Ok(0)
}
