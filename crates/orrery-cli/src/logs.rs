//! `orrery logs SESSION TASK`: the log of one attempt of a task, whole, as one byte window, or
//! followed while the attempt runs.
//!
//! - TASK is a node key (`{instance}.{task}`) or a task id of the root blueprint; the attempt is
//!   the latest unless `--attempt N` names one.
//! - Without `--offset` or `--limit`, the whole log is printed, read in windows of
//!   [`orrery_logs::MAX_LIMIT`] bytes (memory bounded whatever its size); `--format json` prints
//!   the answer of the job `read_attempt_log` (the attempt and its window) for each window, one
//!   JSON line each.
//! - With `--offset N` and/or `--limit N`, one window (docs/format.md §6): text prints its
//!   content, json that answer. `--limit` alone reads the tail (offset -1).
//! - `--follow` prints what is there (from `--offset` when given, -1 meaning the tail window's
//!   start), then what is appended, until the attempt is settled in the store and its log is
//!   drained, or Ctrl-C (exit 130). `--format json` prints one JSON line per chunk
//!   (`{"kind": "chunk", "content", "start_offset", "next_offset"}`) or reset
//!   (`{"kind": "reset"}`); in text a reset is said on standard error.
//!
//! Exit 0 printed, 1 an unknown session, task or attempt, or an attempt with no log (only shell
//! tasks write one), 2 bad arguments (such as an offset below -1) or a store or log that cannot
//! be read.

use crate::cli::ReportFormat;
use crate::face::{self, answer};
use anyhow::{Context, Result};
use orrery_api::{Api, AttemptDetails, AttemptLog};
use orrery_logs::{FollowOptions, LogEvent, MAX_LIMIT};
use serde_json::json;
use std::io::Write;
use std::path::PathBuf;
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
    let api = face::api(args.db.clone(), None)?;
    face::runtime()?.block_on(logs_of(api, args))
}

async fn logs_of(api: Api, args: LogsArgs) -> Result<u8> {
    // `read_attempt_log` of the attempt: its window at `offset`, or the exit code of a refusal.
    let window = |offset: i64, limit: Option<u64>, attempt: Option<u32>| {
        let api = api.clone();
        let arguments = json!({"session_id": args.session, "task": args.task, "attempt": attempt,
                               "offset": offset, "limit": limit});
        async move { answer::<AttemptLog>(api.call("read_attempt_log", arguments).await?) }
    };
    let first = match window(args.offset.unwrap_or(-1), args.limit, args.attempt).await? {
        Ok(first) => first,
        Err(code) => return Ok(code),
    };
    if args.follow {
        let start = match args.offset {
            Some(-1) => first.window.start_offset,
            Some(o) => o as u64,
            None => 0,
        };
        return follow(&api, &args, first.attempt, start).await;
    }
    let mut out = std::io::stdout().lock();
    let print = |out: &mut std::io::StdoutLock, log: &AttemptLog, pretty: bool| -> Result<()> {
        match args.format {
            ReportFormat::Text => out.write_all(log.window.content.as_bytes())?,
            ReportFormat::Json if pretty => writeln!(out, "{}", serde_json::to_string_pretty(log)?)?,
            ReportFormat::Json => writeln!(out, "{}", serde_json::to_string(log)?)?,
        }
        Ok(())
    };
    if args.offset.is_some() || args.limit.is_some() {
        print(&mut out, &first, true)?;
        out.flush()?;
        return Ok(0);
    }
    // The whole log, window by window, of the attempt the first answer named.
    let mut offset = 0;
    loop {
        let log = match window(offset as i64, Some(MAX_LIMIT), Some(first.attempt)).await? {
            Ok(log) => log,
            Err(code) => return Ok(code),
        };
        print(&mut out, &log, false)?;
        // A window that does not move on (the file shrank under us) ends the read too.
        if !log.window.has_more_after || log.window.next_offset == offset {
            break;
        }
        offset = log.window.next_offset;
    }
    out.flush()?;
    Ok(0)
}

/// Prints the log from `start` as it grows, until the attempt is settled and its log drained.
async fn follow(api: &Api, args: &LogsArgs, attempt: u32, start: u64) -> Result<u8> {
    // The stop signals are watched before the first line is printed (a `stop()` future first
    // polled after a ready line would leave SIGTERM its default action for a moment).
    let mut stops = crate::signals::watch()?;
    let details = |api: Api| {
        let arguments = json!({"session_id": args.session, "task": args.task, "attempt": attempt});
        async move { answer::<AttemptDetails>(api.call("get_attempt", arguments).await?) }
    };
    let attempt = match details(api.clone()).await? {
        Ok(details) => details.attempt,
        Err(code) => return Ok(code),
    };
    let Some(path) = attempt.log_path.clone() else { unreachable!("read_attempt_log answered a window") };
    let (done_tx, done_rx) = tokio::sync::oneshot::channel::<()>();
    let done = async move {
        let _ = done_rx.await;
    };
    let mut follower = orrery_logs::follow_until(&path, start, FollowOptions::default(), done);
    let mut done_tx = Some(done_tx);
    let mut poll = tokio::time::interval(SETTLED_POLL);
    let mut out = std::io::stdout();
    loop {
        tokio::select! {
            event = follower.next() => match event {
                None => return Ok(0),
                Some(Err(e)) => return Err(e.into()),
                Some(Ok(event)) => print_event(&mut out, &event, args.format)?,
            },
            _ = poll.tick(), if done_tx.is_some() => {
                let settled = match details(api.clone()).await.context("cannot read the attempt's state")? {
                    Ok(details) => details.attempt.state != orrery_api::AttemptState::Running,
                    Err(code) => return Ok(code),
                };
                if settled {
                    if let Some(tx) = done_tx.take() {
                        let _ = tx.send(());
                    }
                }
            }
            Some(_) = stops.next() => return Ok(130),
        }
    }
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
