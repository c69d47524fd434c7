//! `orrery logs SESSION TASK`: the log of one attempt of a task, whole, as one byte window, or
//! followed while the attempt runs.
//!
//! - TASK is a node key (`{instance}.{task}`) or a task id of the root blueprint; the attempt is
//!   the latest unless `--attempt N` names one.
//! - Without `--offset` or `--limit`, the whole log is printed, read in windows of
//!   [`orrery_logs::MAX_LIMIT`] bytes (memory bounded whatever its size); `--format json` prints
//!   each window as one JSON line.
//! - With `--offset N` and/or `--limit N`, one window (docs/format.md §6): text prints its
//!   content, json the whole window object. `--limit` alone reads the tail (offset -1).
//! - `--follow` prints what is there (from `--offset` when given, -1 meaning the tail window's
//!   start), then what is appended, until the attempt is settled in the store and its log is
//!   drained, or Ctrl-C (exit 130). `--format json` prints one JSON line per chunk
//!   (`{"kind": "chunk", "content", "start_offset", "next_offset"}`) or reset
//!   (`{"kind": "reset"}`); in text a reset is said on standard error.
//!
//! Exit 0 printed, 1 an unknown session, task or attempt, or an attempt with no log (only shell
//! tasks write one), 2 bad arguments (such as an offset below -1) or a store or log that cannot
//! be read.

use crate::ReportFormat;
use anyhow::{Context, Result};
use orrery_logs::{read_window, FollowOptions, LogEvent, MAX_LIMIT};
use orrery_store::{Attempt, AttemptState, Store};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How often `--follow` asks the store whether the attempt has settled.
const SETTLED_POLL: Duration = Duration::from_millis(200);

pub struct LogsArgs {
    pub session: String,
    pub task: String,
    pub attempt: Option<u32>,
    pub follow: bool,
    pub offset: Option<i64>,
    pub limit: Option<u64>,
    pub db: Option<PathBuf>,
    pub format: ReportFormat,
}

pub fn logs(args: LogsArgs) -> Result<u8> {
    let store = crate::sessions::open(args.db.clone())?;
    let attempt = match store.find_attempt(&args.session, &args.task, args.attempt)? {
        Ok(attempt) => attempt,
        Err(refusal) => {
            eprintln!("orrery: {refusal}");
            return Ok(1);
        }
    };
    let Some(path) = attempt.log_path.clone() else {
        eprintln!(
            "orrery: attempt {} of task {} has no log (only shell tasks write one; it ran on {})",
            attempt.attempt, attempt.node, attempt.agent
        );
        return Ok(1);
    };
    if args.follow {
        let start = match args.offset {
            Some(-1) => window(&path, -1, args.limit)?.start_offset,
            Some(o) => {
                // Refuse an offset below -1 as a window read would.
                window(&path, o, args.limit)?;
                o as u64
            }
            None => 0,
        };
        return follow(store, &attempt, &path, start, args.format);
    }
    let mut out = std::io::stdout().lock();
    if args.offset.is_some() || args.limit.is_some() {
        let w = window(&path, args.offset.unwrap_or(-1), args.limit)?;
        match args.format {
            ReportFormat::Text => out.write_all(w.content.as_bytes())?,
            ReportFormat::Json => writeln!(out, "{}", serde_json::to_string_pretty(&w)?)?,
        }
        out.flush()?;
        return Ok(0);
    }
    let mut offset = 0;
    loop {
        let w = window(&path, offset as i64, Some(MAX_LIMIT))?;
        match args.format {
            ReportFormat::Text => out.write_all(w.content.as_bytes())?,
            ReportFormat::Json => writeln!(out, "{}", serde_json::to_string(&w)?)?,
        }
        // A window that does not move on (the file shrank under us) ends the read too.
        if !w.has_more_after || w.next_offset == offset {
            break;
        }
        offset = w.next_offset;
    }
    out.flush()?;
    Ok(0)
}

fn window(path: &Path, offset: i64, limit: Option<u64>) -> Result<orrery_logs::Window> {
    Ok(read_window(path, offset, limit)?)
}

fn follow(store: Store, attempt: &Attempt, path: &Path, start: u64, format: ReportFormat) -> Result<u8> {
    let runtime =
        tokio::runtime::Builder::new_current_thread().enable_all().build().context("cannot start the async runtime")?;
    let run_id = attempt.run_id.clone();
    runtime.block_on(async move {
        let (settled_tx, mut settled_rx) = tokio::sync::oneshot::channel::<Result<()>>();
        // The store is polled on a thread of its own: SQLite calls block.
        std::thread::spawn(move || {
            let outcome = loop {
                match store.attempt(&run_id) {
                    Ok(a) if a.state != AttemptState::Running => break Ok(()),
                    Ok(_) => std::thread::sleep(SETTLED_POLL),
                    Err(e) => break Err(anyhow::Error::from(e).context("cannot read the attempt's state")),
                }
            };
            let _ = settled_tx.send(outcome);
        });
        let (done_tx, done_rx) = tokio::sync::oneshot::channel::<()>();
        let done = async move {
            let _ = done_rx.await;
        };
        let mut follower = orrery_logs::follow_until(path, start, FollowOptions::default(), done);
        let mut done_tx = Some(done_tx);
        let mut out = std::io::stdout();
        loop {
            tokio::select! {
                event = follower.next() => match event {
                    None => return Ok(0),
                    Some(Err(e)) => return Err(e.into()),
                    Some(Ok(event)) => print_event(&mut out, &event, format)?,
                },
                settled = &mut settled_rx, if done_tx.is_some() => {
                    settled.context("the store poller ended")??;
                    if let Some(tx) = done_tx.take() {
                        let _ = tx.send(());
                    }
                }
                _ = crate::signals::stop() => return Ok(130),
            }
        }
    })
}

fn print_event(out: &mut impl Write, event: &LogEvent, format: ReportFormat) -> Result<()> {
    match (format, event) {
        (ReportFormat::Json, event) => writeln!(out, "{}", serde_json::to_string(event)?)?,
        (ReportFormat::Text, LogEvent::Chunk(c)) => out.write_all(c.content.as_bytes())?,
        (ReportFormat::Text, LogEvent::Reset) => {
            eprintln!("orrery: the log was truncated or replaced; reading the new one from its start")
        }
    }
    out.flush()?;
    Ok(())
}
