//! `orrery serve`: the facade's jobs over HTTP on 127.0.0.1 ([`orrery_api::http`]), until
//! Ctrl-C.
//!
//! Prints one line on stdout, `orrery serve: http://127.0.0.1:PORT token TOKEN`, once it
//! listens. On SIGINT or SIGTERM it stops accepting, stops every session it runs (they end
//! `stopped`, their processes get SIGTERM, a grace period, then SIGKILL; `orrery resume` goes
//! on with them later), ends the event streams and exits 0: it never leaves processes behind
//! with no runner to settle them. Exit 2 when it cannot start (a store that does not open, a
//! port in use, a token too short).
//!
//! At start it resumes the sessions of the store a crash interrupted (`running` or `pending`
//! with no live runner), as the engine does when it opens a store, saying so on stderr;
//! `--no-recover` leaves them for `orrery recover` or `resume_session`.

use anyhow::{Context, Result};
use orrery_api::http::{ServeConfig, Server};
use orrery_api::{Api, ApiOptions};
use std::io::Write;
use std::path::PathBuf;
use tokio::signal::unix::{signal, SignalKind};

pub fn serve(
    port: u16,
    token: Option<String>,
    max_parallel: Option<usize>,
    recover: bool,
    db: Option<PathBuf>,
) -> Result<u8> {
    let db = crate::db_path(db)?;
    // Open the store once now: a wrong path is an error at start, not at the first request.
    let store =
        orrery_store::Store::open(&db).with_context(|| format!("cannot open the task store {}", db.display()))?;
    let interrupted = if recover { orrery_engine::runner::interrupted_sessions(&store)? } else { Vec::new() };
    drop(store);
    let runtime = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    runtime.block_on(async move {
        let api = Api::new(ApiOptions { db: db.clone(), work_dir: None, max_parallel });
        let config = ServeConfig { port, token, ..ServeConfig::default() };
        let server = match Server::start(api.clone(), config).await {
            Ok(server) => server,
            Err(e) => {
                eprintln!("orrery serve: {e}");
                return Ok(2);
            }
        };
        // Watch the signals before telling anyone where to connect: a Ctrl-C right after the
        // line must stop cleanly too.
        let mut interrupt = signal(SignalKind::interrupt()).context("cannot watch SIGINT")?;
        let mut terminate = signal(SignalKind::terminate()).context("cannot watch SIGTERM")?;
        println!("orrery serve: {} token {}", server.url(), server.token());
        std::io::stdout().flush()?;
        eprintln!("orrery serve: store {}; Ctrl-C stops", db.display());
        // Interrupted sessions go on here, while the server already answers.
        tokio::spawn(async move {
            for session in interrupted {
                let answer = api.call("resume_session", serde_json::json!({"session_id": session.id})).await;
                match answer {
                    Ok(envelope) if envelope.success => {
                        eprintln!("orrery serve: resumed interrupted session {}", session.id)
                    }
                    Ok(envelope) => {
                        eprintln!("orrery serve: cannot resume session {}: {}", session.id, envelope.answer)
                    }
                    Err(e) => eprintln!("orrery serve: cannot resume session {}: {e}", session.id),
                }
            }
        });
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
        }
        eprintln!("orrery serve: stopping");
        let sessions = server.shutdown().await;
        for id in &sessions {
            eprintln!("orrery serve: stopped session {id}");
        }
        Ok(0)
    })
}
