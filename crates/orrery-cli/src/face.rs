//! How the commands that work on the task store reach it: through the facade
//! ([`orrery_api`]), in this process, with the same jobs and answers as HTTP and the app.
//! `--format json` prints a job's answer as the job gives it.

use crate::cli::ReportFormat;
use anyhow::{Context, Result};
use orrery_api::{Api, ApiOptions, Envelope, FailureCode};
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::path::PathBuf;

/// The facade over the store at `db` (see [`crate::db_path`]).
pub(crate) fn api(db: Option<PathBuf>, max_parallel: Option<usize>) -> Result<Api> {
    Ok(Api::new(ApiOptions { db: crate::db_path(db)?, work_dir: None, max_parallel }))
}

pub(crate) fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Runtime::new().context("cannot start the async runtime")
}

/// The runtime of a command that runs a session in this process: one worker (and the blocking
/// pool, where commits wait for the disk). The runner's work is one sequence; a second worker
/// only took turns with the first, every wake-up crossing threads, while the tasks wanted the
/// cores (a 1,000-task fan-out at -j2: 5-8% faster with one). Output goes through
/// [`on_own_thread`], so a terminal or pipe that takes no more of it never holds the worker.
pub(crate) fn engine_runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

/// Runs `work` to its end on a thread of its own (with a runtime of its own): the receiver
/// answers once it has.
pub(crate) fn on_own_thread(
    name: &str,
    work: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<tokio::sync::oneshot::Receiver<()>> {
    let (done, ended) = tokio::sync::oneshot::channel();
    let runtime =
        tokio::runtime::Builder::new_current_thread().enable_all().build().context("cannot start the async runtime")?;
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            runtime.block_on(work);
            let _ = done.send(());
        })
        .with_context(|| format!("cannot start the {name} thread"))?;
    Ok(ended)
}

/// Calls job `name` in this process and waits for its envelope.
pub(crate) fn call(db: Option<PathBuf>, name: &str, arguments: Value) -> Result<Envelope> {
    let api = api(db, None)?;
    runtime()?.block_on(async move { api.call(name, arguments).await.map_err(|e| anyhow::anyhow!("{e}")) })
}

/// A job's answer as `T` on success; on a failure, its message on stderr and the exit code
/// ([`refused`]) as the error.
pub(crate) fn answer<T: DeserializeOwned>(envelope: Envelope) -> Result<Result<T, u8>> {
    if !envelope.success {
        return Ok(Err(refused(&envelope)));
    }
    let job = envelope.metadata["job"].as_str().unwrap_or("").to_string();
    let answer = serde_json::from_value(envelope.answer).with_context(|| format!("job {job}: unexpected answer"))?;
    Ok(Ok(answer))
}

/// A failed job's message on stderr and its exit code: 1 when the job refused what was asked
/// (an unknown session, task or attempt, a state that does not allow it, an invalid
/// blueprint), 2 when the store, a file or the arguments could not be used.
pub(crate) fn refused(envelope: &Envelope) -> u8 {
    eprintln!("orrery: {}", envelope.answer.as_str().unwrap_or("the job failed"));
    envelope.failure().map_or(2, |failure| exit_code(failure.code))
}

/// The exit code of a failure with code `code` (see [`refused`]).
pub(crate) fn exit_code(code: FailureCode) -> u8 {
    match code {
        FailureCode::NotFound
        | FailureCode::Refused
        | FailureCode::InvalidBlueprint
        | FailureCode::StaleRun
        | FailureCode::Leased => 1,
        _ => 2,
    }
}

/// What a command reports of a job's envelope: with `--format json` the answer is printed as
/// the job gives it (`Done`); in text the answer as `T`, to be printed by the command.
pub(crate) enum Report<T> {
    Text(T),
    Done,
}

/// The [`Report`] of `envelope`, or the exit code of its failure ([`refused`]).
pub(crate) fn report<T: DeserializeOwned>(envelope: Envelope, format: ReportFormat) -> Result<Result<Report<T>, u8>> {
    if let (ReportFormat::Json, true) = (format, envelope.success) {
        println!("{}", serde_json::to_string_pretty(&envelope.answer)?);
        return Ok(Ok(Report::Done));
    }
    Ok(answer(envelope)?.map(Report::Text))
}
