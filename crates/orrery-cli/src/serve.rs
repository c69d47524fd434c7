//! `orrery serve`: the facade's jobs over HTTP on 127.0.0.1 ([`orrery_api::http`]), and MCP
//! over streamable HTTP at `/mcp` (the tools of `orrery mcp`, [`crate::mcp`]), until Ctrl-C.
//!
//! Prints one line on stdout, `orrery serve: http://127.0.0.1:PORT token TOKEN`, once it
//! listens. On SIGINT, SIGTERM or SIGHUP ([`crate::signals`]) it stops accepting, stops every session it runs (they end
//! `stopped`, their processes get SIGTERM, a grace period, then SIGKILL; `orrery resume` goes
//! on with them later), ends the event streams and exits 0: it never leaves processes behind
//! with no runner to settle them. Exit 2 when it cannot start (a store that does not open, a
//! port in use, a token too short).
//!
//! At start it raises the soft limit of open descriptors to the hard one, and serves at most
//! [`orrery_api::http::connection_cap`] of it in connections (a quarter, at least 256, kept for
//! the runner), saying so on stderr.
//!
//! At start it resumes the sessions of the store a crash interrupted (`running` or `pending`
//! with no live runner), as the engine does when it opens a store, saying so on stderr;
//! `--no-recover` leaves them for `orrery recover` or `resume_session`.

use anyhow::{Context, Result};
use orrery_api::http::{ServeConfig, Server};
use orrery_api::{Api, ApiOptions};
use std::io::Write;
use std::path::PathBuf;

pub fn serve(
    port: u16,
    token: Option<String>,
    max_parallel: Option<usize>,
    recover: bool,
    db: Option<PathBuf>,
) -> Result<u8> {
    let db = crate::db_path(db)?;
    let descriptors = raise_descriptor_limit();
    let max_connections = orrery_api::http::connection_cap(descriptors);
    let runtime = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    runtime.block_on(async move {
        let api = Api::new(ApiOptions { db: db.clone(), work_dir: None, max_parallel });
        // The store is asked once now: a wrong path is an error at start, not at the first request.
        let listed = api.call("list_sessions", serde_json::json!({})).await?;
        if !listed.success {
            let why = listed.answer.as_str().unwrap_or("it cannot be read");
            anyhow::bail!("cannot open the task store {}: {why}", db.display());
        }
        let listed: Vec<orrery_api::SessionListing> = serde_json::from_value(listed.answer)?;
        let mut interrupted: Vec<orrery_api::Session> =
            listed.into_iter().filter(|l| recover && l.interrupted).map(|l| l.session).collect();
        interrupted.sort_by_key(|s| s.created_ms);
        let (mcp, stop_mcp) = crate::mcp::http_endpoint(api.clone());
        let mounted = Some(("/mcp", mcp));
        let config = ServeConfig { port, token, max_connections, mounted, ..ServeConfig::default() };
        let server = match Server::start(api.clone(), config).await {
            Ok(server) => server,
            Err(e) => {
                say!("orrery serve: {e}");
                return Ok(2);
            }
        };
        // Watch the signals before telling anyone where to connect: a Ctrl-C right after the
        // line must stop cleanly too.
        let mut stops = crate::signals::watch()?;
        out!("orrery serve: {} token {}", server.url(), server.token());
        std::io::stdout().flush()?;
        say!("orrery serve: store {}; Ctrl-C stops", db.display());
        say!(
            "orrery serve: at most {max_connections} connections at once (descriptor limit {descriptors}, {} kept for \
             the runner)",
            descriptors.saturating_sub(max_connections as u64)
        );
        // Interrupted sessions go on here, while the server already answers.
        tokio::spawn(async move {
            for session in interrupted {
                let answer = api.call("resume_session", serde_json::json!({"session_id": session.id})).await;
                match answer {
                    Ok(envelope) if envelope.success => {
                        say!("orrery serve: resumed interrupted session {}", session.id)
                    }
                    Ok(envelope) => {
                        say!("orrery serve: cannot resume session {}: {}", session.id, envelope.answer)
                    }
                    Err(e) => say!("orrery serve: cannot resume session {}: {e}", session.id),
                }
            }
        });
        let signal = stops.next().await.unwrap_or("the end of the signal watch");
        say!("orrery serve: stopping ({signal})");
        stop_mcp();
        let sessions = server.shutdown().await;
        for id in &sessions {
            say!("orrery serve: stopped session {id}");
        }
        Ok(0)
    })
}

/// Raises the soft limit of open file descriptors (`RLIMIT_NOFILE`) to the hard one, as far as
/// the system lets it, and answers the soft limit now in force (1,024 if it cannot be read).
/// The connection cap is computed from it ([`orrery_api::http::connection_cap`]), keeping the
/// rest for the runner: a flood of clients never takes the descriptors a task needs.
fn raise_descriptor_limit() -> u64 {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit and setrlimit only read and write the struct given.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return 1024;
        }
        if limit.rlim_cur < limit.rlim_max {
            let raised = libc::rlimit { rlim_cur: limit.rlim_max, rlim_max: limit.rlim_max };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                limit = raised;
            }
        }
    }
    limit.rlim_cur as u64
}
