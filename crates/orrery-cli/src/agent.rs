//! `orrery agent --broker URL`: Orrery's built-in agents offered on an MQTT broker.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use orrery_broker::BrokerAddress;
use orrery_engine::broker::agent::{self, AgentNote, AgentOptions};
use orrery_engine::broker::matches_pattern;

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
        None => std::env::temp_dir().join(format!("orrery-agent-{id}")),
    };
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
            _ = tokio::signal::ctrl_c() => Ok(0),
        }
    })
}
