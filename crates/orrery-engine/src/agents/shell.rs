//! The `shell.run` agent (issue 3): runs a command or a program as a supervised process
//! ([`crate::process`]) and turns its exit, its outputs file and its progress file into an
//! [`AgentOutcome`].
//!
//! Params (an object of param name to value; a null value counts as absent, other params such
//! as `execution_mode` are ignored):
//! - `command` (string, run by `/bin/sh -c`) or `argv` (non-empty list of strings): exactly one.
//! - `cwd` (string): the working directory; a relative one is taken from the engine's own.
//! - `env` (object of string to string): added to the minimal environment.
//! - `timeout_s` (number > 0): the group is stopped (TERM, grace, KILL) when it runs longer.
//! - `log_cap_bytes` (integer > 0): at most this many bytes of output go to the attempt's
//!   log; the rest is dropped and one note at the end of the log says how much (default: the
//!   runner's, [`ShellAttempt::log_cap`], else [`crate::process::default_log_cap`]). A
//!   capped log is named in a failure's details (`log_capped`) and reported by
//!   [`ShellEnd::log`].
//!
//! Anything else is a `TOOL_BINDING_ERROR` naming the param (and the key, for `env`), reported
//! before anything runs.
//!
//! The process sees, besides `env`:
//! - `ORRERY_INPUTS`: a JSON file holding the object of all resolved inputs;
//! - `ORRERY_INPUT_<NAME>` for each input: the name upper-cased with every character other
//!   than an ASCII letter or digit replaced by `_`; a string value as is, any other value as
//!   compact JSON (`null`, `42`, `[1,2]`). Two inputs that map to one variable (`a-b` and
//!   `a_b`) are a binding error rather than one silently hiding the other;
//! - `ORRERY_OUTPUTS`: a file it may write a JSON object to. Absent, the outputs are only
//!   `exit_code`; present, its keys are the outputs, beside `exit_code` (the real exit code
//!   wins over a key of that name); anything but a JSON object fails the task (`TOOL_FAILURE`);
//! - `ORRERY_PROGRESS`: a file it may append progress lines to ([`super::progress`]);
//! - `ORRERY_RUN_ID` and `ORRERY_SESSION_ID`: the attempt's run id and its session's id, when
//!   the runner gives them (it does): a task may key its own idempotent work on them, and
//!   recovery finds by them the processes a crashed runner left behind, recorded or not.
//!
//! `env` may not set any of these variables (a binding error): the agent's files would be lost.
//! The three files share the attempt's stem: `{stem}.inputs.json`, `{stem}.outputs.json` and
//! `{stem}.progress.jsonl` ([`INPUTS_FILE`], [`OUTPUTS_FILE`], [`PROGRESS_FILE`]); the
//! process's supervisor appends the durable record of its exit, named by the stem, to the
//! folder's records file ([`crate::process::supervisor::RECORDS_FILE`]), which a recovery after
//! the runner died reads ([`adopt`]); stale outputs and progress files from an earlier use of
//! the stem are removed first. An attempt with no inputs reads the folder's shared
//! [`NO_INPUTS_FILE`] (`{}`) instead. Few files, no folder per attempt: on a busy file system
//! every inode created costs (ext4's inode allocator dominated the runner's CPU when each
//! attempt had a folder and an inputs file of its own, a fifth of it again while each exit had
//! a record file, and an eighth while each attempt's log was made before its first output).
//!
//! Ends: exit 0 succeeds; a non-zero exit, or death by a signal Orrery did not send, is a
//! `TOOL_FAILURE` whose message ends with the last [`LOG_TAIL_BYTES`] of the log; a process
//! that cannot start (program not found, cwd missing, log unwritable) is a `LAUNCHER_FAILURE`;
//! a timeout is [`AgentOutcome::TimedOut`]; a cancel is [`AgentOutcome::Cancelled`] (130).
//! A process whose exit status is lost (its supervisor died before recording it) is a
//! `TASK_FAILED` whose details hold [`STATUS_LOST`]: its outcome cannot be known.

use orrery_blueprint::load::kind_of;
use std::fs;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::Duration;

use orrery_blueprint::ErrorCode;
use serde_json::{json, Map, Value};

use super::progress::{ProgressEvent, ProgressFollower};
use super::{AgentOutcome, TaskError};
use crate::process::{
    self, Canceller, Exit, Finished, LogSummary, ProcessError, ProcessSpec, Program, CANCELLED_EXIT_CODE,
    DEFAULT_GRACE, TIMED_OUT_EXIT_CODE,
};

/// The task type this agent runs.
pub const TYPE: &str = orrery_blueprint::TaskType::SHELL;

pub const INPUTS_FILE: &str = "inputs.json";
pub const OUTPUTS_FILE: &str = "outputs.json";
pub const PROGRESS_FILE: &str = "progress.jsonl";
/// The key, in a failure's details, saying that the process's exit status was lost (its
/// outcome cannot be known; a runner runs such a task again).
pub const STATUS_LOST: &str = "exit_status_lost";
/// The inputs file of every attempt with no inputs, in the stem's folder: `{}`.
pub const NO_INPUTS_FILE: &str = "no-inputs.json";

/// `{stem}.{suffix}`.
pub fn attempt_file(stem: &Path, suffix: &str) -> PathBuf {
    let mut name = stem.as_os_str().to_owned();
    name.push(".");
    name.push(suffix);
    PathBuf::from(name)
}

pub const INPUTS_VAR: &str = "ORRERY_INPUTS";
pub const OUTPUTS_VAR: &str = "ORRERY_OUTPUTS";
pub const PROGRESS_VAR: &str = "ORRERY_PROGRESS";
/// The session's id: recovery stops every process left behind by its session's crashed runner.
pub const SESSION_ID_VAR: &str = "ORRERY_SESSION_ID";
/// The attempt's `run_id`: names the attempt to the task, and lets recovery find a process
/// its crashed runner never recorded.
pub const RUN_ID_VAR: &str = "ORRERY_RUN_ID";
pub const INPUT_VAR_PREFIX: &str = "ORRERY_INPUT_";

/// How much of the end of the log a failure quotes.
pub const LOG_TAIL_BYTES: usize = 4096;

/// How often the progress file is read while the process runs.
pub const PROGRESS_POLL: Duration = Duration::from_millis(75);

/// One attempt at a `shell.run` task.
#[derive(Debug, Clone)]
pub struct ShellAttempt {
    /// The task's params by name.
    pub params: Map<String, Value>,
    /// The task's resolved inputs by name.
    pub inputs: Map<String, Value>,
    /// The stem of the inputs, outputs and progress files (see the module notes); its folder
    /// is created if missing.
    pub stem: PathBuf,
    /// The attempt's log (stdout and stderr interleaved); created if missing, appended to.
    pub log_path: PathBuf,
    /// Between SIGTERM and SIGKILL on cancel and timeout.
    pub grace: Duration,
    /// Given to the process as `ORRERY_RUN_ID` when set.
    pub run_id: Option<String>,
    /// Given to the process as `ORRERY_SESSION_ID` when set.
    pub session_id: Option<String>,
    /// The log cap unless the params say `log_cap_bytes`; `None`: the process default.
    pub log_cap: Option<u64>,
}

impl ShellAttempt {
    pub fn new(
        params: Map<String, Value>,
        inputs: Map<String, Value>,
        stem: impl Into<PathBuf>,
        log_path: impl Into<PathBuf>,
    ) -> Self {
        ShellAttempt {
            params,
            inputs,
            stem: stem.into(),
            log_path: log_path.into(),
            grace: DEFAULT_GRACE,
            run_id: None,
            session_id: None,
            log_cap: None,
        }
    }
}

/// The process is running: what the runner records (pid and start time name it across a
/// crash) and the handle to cancel it.
#[derive(Debug, Clone)]
pub struct Started {
    pub pid: u32,
    pub start_time: u64,
    pub canceller: Canceller,
    /// What it was started with; none for a process adopted after a crash.
    pub environment: Option<orrery_store::ProcessEnvironment>,
}

/// The params, validated: what [`run`] executes.
#[derive(Debug, Clone, PartialEq)]
pub struct ShellParams {
    pub program: Program,
    pub cwd: Option<PathBuf>,
    pub env: Vec<(String, String)>,
    /// In seconds, as given.
    pub timeout_s: Option<f64>,
    /// `log_cap_bytes`, as given.
    pub log_cap: Option<u64>,
}

/// Validates the params; a `TOOL_BINDING_ERROR` names the param at fault.
pub fn bind_params(params: &Map<String, Value>) -> Result<ShellParams, TaskError> {
    let get = |name: &str| params.get(name).filter(|v| !v.is_null());
    let program = match (get("command"), get("argv")) {
        (Some(_), Some(_)) => {
            return Err(TaskError::binding("command", "shell.run takes either 'command' or 'argv', not both"))
        }
        (None, None) => {
            return Err(TaskError::binding(
                "command",
                "shell.run needs a 'command' (a string for /bin/sh -c) or an 'argv' (a list of strings)",
            ))
        }
        (Some(Value::String(command)), None) => Program::Shell(command.clone()),
        (Some(other), None) => {
            return Err(TaskError::binding(
                "command",
                format!("param 'command' must be a string, found {}", shown(other)),
            ))
        }
        (None, Some(Value::Array(items))) if !items.is_empty() => {
            let mut argv = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                match item {
                    Value::String(s) => argv.push(s.clone()),
                    other => {
                        return Err(TaskError::binding(
                            "argv",
                            format!("param 'argv' must hold strings only; item {i} is {}", shown(other)),
                        ))
                    }
                }
            }
            Program::Argv(argv)
        }
        (None, Some(other)) => {
            return Err(TaskError::binding(
                "argv",
                format!("param 'argv' must be a non-empty list of strings, found {}", shown(other)),
            ))
        }
    };
    let (param, has_nul) = match &program {
        Program::Shell(command) => ("command", command.contains('\0')),
        Program::Argv(argv) => ("argv", argv.iter().any(|a| a.contains('\0'))),
    };
    if has_nul {
        return Err(TaskError::binding(param, format!("param '{param}' contains a NUL character")));
    }

    let cwd = match get("cwd") {
        None => None,
        Some(Value::String(cwd)) if !cwd.is_empty() => Some(PathBuf::from(cwd)),
        Some(other) => {
            return Err(TaskError::binding(
                "cwd",
                format!("param 'cwd' must be a non-empty string, found {}", shown(other)),
            ))
        }
    };

    let mut env = Vec::new();
    match get("env") {
        None => {}
        Some(Value::Object(vars)) => {
            for (name, value) in vars {
                let Value::String(value) = value else {
                    return Err(env_error(
                        name,
                        format!("param 'env': the value of '{name}' must be a string, found {}", shown(value)),
                    ));
                };
                if name.is_empty() || name.contains(['=', '\0']) {
                    return Err(env_error(
                        name,
                        format!("param 'env': '{name}' is not a valid variable name (empty, or holds '=' or NUL)"),
                    ));
                }
                if value.contains('\0') {
                    return Err(env_error(
                        name,
                        format!("param 'env': the value of '{name}' contains a NUL character"),
                    ));
                }
                env.push((name.clone(), value.clone()));
            }
        }
        Some(other) => {
            return Err(TaskError::binding(
                "env",
                format!("param 'env' must be an object of strings, found {}", shown(other)),
            ))
        }
    }

    let timeout_s = match get("timeout_s") {
        None => None,
        Some(value) => match value.as_f64() {
            Some(s) if s > 0.0 && Duration::try_from_secs_f64(s).is_ok() => Some(s),
            _ => {
                return Err(TaskError::binding(
                    "timeout_s",
                    format!("param 'timeout_s' must be a positive number of seconds, found {}", shown(value)),
                ))
            }
        },
    };

    let log_cap = match get("log_cap_bytes") {
        None => None,
        Some(value) => match value.as_u64() {
            Some(bytes) if bytes > 0 => Some(bytes),
            _ => {
                return Err(TaskError::binding(
                    "log_cap_bytes",
                    format!("param 'log_cap_bytes' must be a whole number of bytes > 0, found {}", shown(value)),
                ))
            }
        },
    };

    Ok(ShellParams { program, cwd, env, timeout_s, log_cap })
}

/// `ORRERY_INPUT_<NAME>` for a name: upper-cased, anything but an ASCII letter or digit → `_`.
pub fn input_variable_name(input: &str) -> String {
    let mut name = String::with_capacity(INPUT_VAR_PREFIX.len() + input.len());
    name.push_str(INPUT_VAR_PREFIX);
    name.extend(input.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_uppercase() } else { '_' }));
    name
}

/// The `ORRERY_INPUT_<NAME>` variables of the inputs, in input order.
pub fn input_variables(inputs: &Map<String, Value>) -> Result<Vec<(String, String)>, TaskError> {
    let mut vars: Vec<(String, String)> = Vec::with_capacity(inputs.len());
    let mut owners: Vec<&str> = Vec::with_capacity(inputs.len());
    for (input, value) in inputs {
        let name = input_variable_name(input);
        if let Some(i) = vars.iter().position(|(n, _)| *n == name) {
            return Err(TaskError::new(
                ErrorCode::ToolBindingError,
                format!("inputs '{}' and '{input}' would both be passed as {name}; rename one of them", owners[i]),
            )
            .with_details(json!({ "inputs": [owners[i], input], "variable": name })));
        }
        let text = match value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        if text.contains('\0') {
            return Err(TaskError::new(
                ErrorCode::ToolBindingError,
                format!("input '{input}' contains a NUL character and cannot be passed as {name}"),
            )
            .with_details(json!({ "input": input, "variable": name })));
        }
        vars.push((name, text));
        owners.push(input);
    }
    Ok(vars)
}

/// How an attempt ended, with what its log took.
#[derive(Debug)]
pub struct ShellEnd {
    pub outcome: AgentOutcome,
    /// None when no process ran.
    pub log: Option<LogSummary>,
}

/// Runs one attempt to its end. `on_started` is called once the process runs, before it is
/// waited for (not at all when it cannot start); a cancel requested earlier should be applied
/// there (a cancel right after the spawn is not lost). `on_progress` gets every progress line
/// and warning, in order, on this task.
pub async fn run(
    attempt: ShellAttempt,
    on_started: impl FnOnce(Started),
    on_progress: impl FnMut(ProgressEvent),
) -> AgentOutcome {
    run_attempt(attempt, on_started, on_progress).await.outcome
}

/// [`run`], saying also what the log took.
pub async fn run_attempt(
    attempt: ShellAttempt,
    on_started: impl FnOnce(Started),
    mut on_progress: impl FnMut(ProgressEvent),
) -> ShellEnd {
    let failed = |error: TaskError| ShellEnd { outcome: AgentOutcome::Failed { error, exit_code: None }, log: None };
    let params = match bind_params(&attempt.params) {
        Ok(params) => params,
        Err(error) => return failed(error),
    };
    let input_vars = match input_variables(&attempt.inputs) {
        Ok(vars) => vars,
        Err(error) => return failed(error),
    };
    let files = match prepare_files(&attempt) {
        Ok(files) => files,
        Err(error) => return failed(error),
    };

    let mut env = params.env.clone();
    let agent_vars = [
        (INPUTS_VAR.to_string(), files.inputs.display().to_string()),
        (OUTPUTS_VAR.to_string(), files.outputs.display().to_string()),
        (PROGRESS_VAR.to_string(), files.progress.display().to_string()),
    ];
    let run_id = attempt.run_id.as_ref().map(|id| (RUN_ID_VAR.to_string(), id.clone()));
    let session_id = attempt.session_id.as_ref().map(|id| (SESSION_ID_VAR.to_string(), id.clone()));
    for (name, value) in agent_vars.into_iter().chain(run_id).chain(session_id).chain(input_vars) {
        if params.env.iter().any(|(n, _)| *n == name) {
            return failed(env_error(
                &name,
                format!(
                    "param 'env' may not set {name}: shell.run sets it for the task's inputs, outputs and progress"
                ),
            ));
        }
        env.push((name, value));
    }

    let spec = ProcessSpec {
        program: params.program.clone(),
        cwd: params.cwd.clone(),
        env,
        log_path: attempt.log_path.clone(),
        timeout: params.timeout_s.map(Duration::from_secs_f64),
        grace: attempt.grace,
        exit_record: Some(files.stem.clone()),
        log_cap: params.log_cap.or(attempt.log_cap).unwrap_or_else(process::default_log_cap),
        record_id: attempt.run_id.clone(),
    };
    let supervised = match process::spawn(spec).await {
        Ok(supervised) => supervised,
        Err(error) => return failed(launcher_failure(&error)),
    };
    on_started(Started {
        pid: supervised.pid(),
        start_time: supervised.start_time(),
        canceller: supervised.canceller(),
        environment: supervised.environment().cloned(),
    });

    let mut follower = ProgressFollower::new(&files.progress);
    let wait = supervised.wait();
    tokio::pin!(wait);
    let finished = loop {
        tokio::select! {
            finished = &mut wait => break finished,
            _ = tokio::time::sleep(PROGRESS_POLL) => follower.poll(&mut on_progress),
        }
    };
    follower.finish(&mut on_progress);
    let outcome = outcome_of(&finished, params.timeout_s, &attempt.log_path, &files.outputs);
    ShellEnd { outcome, log: Some(finished.log) }
}

/// An attempt whose runner died while its process ran (see [`crate::runner::recovery`]).
#[derive(Debug, Clone)]
pub struct Adoption {
    /// The task's params by name (for what a timeout says).
    pub params: Map<String, Value>,
    /// The attempt's stem: its exit record and outputs file are read beside it.
    pub stem: PathBuf,
    pub log_path: PathBuf,
    pub run_id: String,
    /// The process (pid, start time), if it may still run.
    pub leader: Option<(u32, u64)>,
    pub grace: Duration,
    /// When the attempt started (ms since the epoch): its `timeout_s` runs from there.
    pub started_ms: Option<i64>,
}

/// The attempt's stem from its log path (`{stem}.log`).
pub fn stem_of_log(log_path: &Path) -> Option<PathBuf> {
    let name = log_path.file_name()?.to_str()?;
    Some(log_path.with_file_name(name.strip_suffix(".log")?))
}

/// Goes on with an attempt a dead runner left (see [`Adoption`]): waits for its exit record
/// and turns it into an outcome exactly as [`run`] does (its outputs file read, its log kept).
/// `on_started` is called at once when its process may still run (a cancel stops it).
pub async fn adopt(adoption: Adoption, on_started: impl FnOnce(Started)) -> ShellEnd {
    let stem = std::path::absolute(&adoption.stem).unwrap_or(adoption.stem.clone());
    let outputs = attempt_file(&stem, OUTPUTS_FILE);
    let tag = (RUN_ID_VAR.to_string(), adoption.run_id.clone());
    let timeout_s = bind_params(&adoption.params).ok().and_then(|p| p.timeout_s);
    // What is left of its timeout (none left: it expires at once).
    let deadline = timeout_s.zip(adoption.started_ms).map(|(seconds, started_ms)| {
        let now_ms =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64);
        let left_ms = (started_ms as f64 + seconds * 1000.0 - now_ms as f64).max(0.0);
        std::time::Instant::now() + Duration::from_millis(left_ms.min(1e15) as u64)
    });
    let supervised = process::adopt(adoption.leader, stem, adoption.grace, tag, deadline);
    if let Some((pid, start_time)) = adoption.leader {
        on_started(Started { pid, start_time, canceller: supervised.canceller(), environment: None });
    }
    let finished = supervised.wait().await;
    ShellEnd { outcome: outcome_of(&finished, timeout_s, &adoption.log_path, &outputs), log: Some(finished.log) }
}

/// The outcome of a finished process (see the module notes).
fn outcome_of(finished: &Finished, timeout_s: Option<f64>, log_path: &Path, outputs_file: &Path) -> AgentOutcome {
    let code = finished.exit.code();
    let capped = finished
        .log
        .is_capped()
        .then(|| json!({"log_capped": {"cap_bytes": finished.log.cap, "dropped_bytes": finished.log.dropped}}));
    let with_cap = |mut details: Value| {
        if let (Value::Object(d), Some(Value::Object(c))) = (&mut details, capped.clone()) {
            d.extend(c);
        }
        details
    };
    match finished.exit {
        Exit::Cancelled => AgentOutcome::Cancelled { exit_code: CANCELLED_EXIT_CODE },
        Exit::TimedOut => {
            let seconds = timeout_s.unwrap_or_default();
            AgentOutcome::TimedOut {
                error: tool_failure(
                    format!("the process timed out after {seconds} s and was stopped"),
                    log_path,
                    with_cap(json!({ "timeout_s": seconds })),
                ),
                exit_code: TIMED_OUT_EXIT_CODE,
            }
        }
        Exit::Signalled { signal: 0 } => {
            let mut error = tool_failure(
                "the process ended but its exit status was lost: its outcome cannot be known".into(),
                log_path,
                with_cap(json!({ STATUS_LOST: true })),
            );
            error.code = ErrorCode::TaskFailed;
            AgentOutcome::Failed { error, exit_code: None }
        }
        Exit::Signalled { signal } => AgentOutcome::Failed {
            error: tool_failure(
                format!("the process was killed by signal {signal}"),
                log_path,
                with_cap(json!({ "signal": signal, "exit_code": code })),
            ),
            exit_code: Some(code),
        },
        Exit::Exited { code } if code != 0 => AgentOutcome::Failed {
            error: tool_failure(
                format!("the process exited with code {code}"),
                log_path,
                with_cap(json!({ "exit_code": code })),
            ),
            exit_code: Some(code),
        },
        Exit::Exited { code } => match read_outputs(outputs_file) {
            Ok(mut outputs) => {
                outputs.insert("exit_code".into(), Value::from(code));
                AgentOutcome::Succeeded { outputs, exit_code: Some(code) }
            }
            Err(mut error) => {
                error.details = error.details.map(with_cap);
                AgentOutcome::Failed { error, exit_code: Some(code) }
            }
        },
    }
}

struct AttemptFiles {
    /// Absolute: names the exit's record too.
    stem: PathBuf,
    inputs: PathBuf,
    outputs: PathBuf,
    progress: PathBuf,
}

/// Creates the attempt directory, writes the inputs file and removes stale outputs and
/// progress files. Paths are absolute: the process may run in another directory.
fn prepare_files(attempt: &ShellAttempt) -> Result<AttemptFiles, TaskError> {
    let launcher = |what: String, e: io::Error| TaskError::new(ErrorCode::LauncherFailure, format!("{what}: {e}"));
    let stem = std::path::absolute(&attempt.stem)
        .map_err(|e| launcher(format!("cannot resolve the attempt's files {}", attempt.stem.display()), e))?;
    if let Some(dir) = stem.parent() {
        fs::create_dir_all(dir)
            .map_err(|e| launcher(format!("cannot create the attempt's folder {}", dir.display()), e))?;
    }
    let mut files = AttemptFiles {
        inputs: attempt_file(&stem, INPUTS_FILE),
        outputs: attempt_file(&stem, OUTPUTS_FILE),
        progress: attempt_file(&stem, PROGRESS_FILE),
        stem: stem.clone(),
    };
    if attempt.inputs.is_empty() {
        // One shared `{}` per folder rather than a file per attempt.
        files.inputs = stem.with_file_name(NO_INPUTS_FILE);
        if !fs::symlink_metadata(&files.inputs).is_ok_and(|m| m.is_file() && m.len() == 2) {
            write_own_file(&files.inputs, b"{}")
                .map_err(|e| launcher(format!("cannot write the inputs file {}", files.inputs.display()), e))?;
        }
    } else {
        let text = Value::Object(attempt.inputs.clone()).to_string();
        write_own_file(&files.inputs, text.as_bytes())
            .map_err(|e| launcher(format!("cannot write the inputs file {}", files.inputs.display()), e))?;
    }
    for stale in [&files.outputs, &files.progress] {
        match fs::remove_file(stale) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(launcher(format!("cannot remove the stale file {}", stale.display()), e)),
        }
    }
    Ok(files)
}

/// Writes a file of the attempt's folder afresh. The bytes go to a new file created
/// exclusively (never through a link) beside `path`, renamed over whatever is there: a symlink or
/// a FIFO a task left in its folder is replaced, never followed, and attempts writing the same
/// file at once each leave a whole one.
fn write_own_file(path: &Path, bytes: &[u8]) -> io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    use std::sync::atomic::{AtomicU64, Ordering};
    static WRITES: AtomicU64 = AtomicU64::new(0);
    let mut name = std::ffi::OsString::from(".");
    name.push(path.file_name().unwrap_or_default());
    name.push(format!(".{}.{}.tmp", std::process::id(), WRITES.fetch_add(1, Ordering::Relaxed)));
    let tmp = path.with_file_name(name);
    let written = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&tmp)
        .and_then(|mut file| file.write_all(bytes))
        .and_then(|()| fs::rename(&tmp, path));
    if written.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    written
}

/// The outputs the process wrote; none when it wrote no file.
fn read_outputs(path: &Path) -> Result<Map<String, Value>, TaskError> {
    let failure =
        |message: String, details: Value| TaskError::new(ErrorCode::ToolFailure, message).with_details(details);
    // A regular file only, of at most 128 MiB: a FIFO or `/dev/zero` put there by the task
    // fails it, never hangs or exhausts the runner.
    let bytes = match orrery_blueprint::fsio::read_limited(path, orrery_blueprint::fsio::BLUEPRINT_LIMIT) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Map::new()),
        Err(e) => {
            return Err(failure(
                format!("cannot read the outputs file {}: {e}", path.display()),
                json!({ "file": path.display().to_string() }),
            ))
        }
    };
    match orrery_blueprint::json::from_slice::<Value>(&bytes) {
        Ok(Value::Object(outputs)) => Ok(outputs),
        Ok(other) => Err(failure(
            format!(
                "the outputs file {} must hold a JSON object of output names to values, found {}",
                path.display(),
                kind_of(&other)
            ),
            json!({ "file": path.display().to_string() }),
        )),
        Err(e) => Err(failure(
            format!(
                "the outputs file {} is not valid JSON: {e} (it must hold a JSON object of output names to values)",
                path.display()
            ),
            json!({ "file": path.display().to_string(), "line": e.line(), "column": e.column() }),
        )),
    }
}

/// A `TOOL_FAILURE` whose message ends with the end of the log.
fn tool_failure(what: String, log_path: &Path, mut details: Value) -> TaskError {
    let tail = log_tail(log_path, LOG_TAIL_BYTES);
    if let Value::Object(d) = &mut details {
        d.insert("log_path".into(), Value::String(log_path.display().to_string()));
    }
    let message = match tail.as_deref().map(str::trim_end) {
        Some("") | None => format!("{what}; it wrote no output"),
        Some(tail) => format!("{what}; the end of its output:\n{tail}"),
    };
    TaskError::new(ErrorCode::ToolFailure, message).with_details(details)
}

/// The last `limit` bytes of the log, starting at a character boundary (invalid bytes are
/// replaced). `None` when the log cannot be read.
pub fn log_tail(path: &Path, limit: usize) -> Option<String> {
    let mut file = orrery_blueprint::fsio::open_regular_file(path).ok()?;
    let len = file.metadata().ok()?.len();
    let start = len.saturating_sub(limit as u64);
    file.seek(SeekFrom::Start(start)).ok()?;
    let mut bytes = Vec::with_capacity(limit);
    file.take(limit as u64).read_to_end(&mut bytes).ok()?;
    // A cut inside a character leaves up to 3 continuation bytes (10xxxxxx) at the front.
    let skip = if start > 0 { bytes.iter().take(3).take_while(|&&b| b & 0xC0 == 0x80).count() } else { 0 };
    Some(String::from_utf8_lossy(&bytes[skip..]).into_owned())
}

fn launcher_failure(error: &ProcessError) -> TaskError {
    let reason = match error {
        ProcessError::EmptyArgv => "empty_argv",
        ProcessError::ProgramNotFound { .. } => "program_not_found",
        ProcessError::ProgramNotExecutable { .. } => "program_not_executable",
        ProcessError::CwdMissing { .. } => "cwd_missing",
        ProcessError::InvalidEnv { .. } => "invalid_env",
        ProcessError::LogUnwritable { .. } => "log_unwritable",
        ProcessError::Spawn { .. } => "spawn_failed",
        ProcessError::Supervision { .. } => "supervision_failed",
    };
    TaskError::new(ErrorCode::LauncherFailure, format!("the process could not be started: {error}"))
        .with_details(json!({ "reason": reason }))
}

fn env_error(key: &str, message: String) -> TaskError {
    TaskError::new(ErrorCode::ToolBindingError, message).with_details(json!({ "param": "env", "key": key }))
}

/// A value as an error message shows it: short, with its kind.
fn shown(value: &Value) -> String {
    if value.is_null() {
        return "null".into();
    }
    let text = value.to_string();
    if text.chars().count() > 60 {
        let cut: String = text.chars().take(57).collect();
        format!("{} {cut}...", kind_of(value))
    } else {
        format!("{} {text}", kind_of(value))
    }
}

#[cfg(test)]
mod tests {
    use super::write_own_file;
    use crate::process::open_append;
    use std::io::Write;

    fn mkfifo(path: &std::path::Path) {
        assert!(std::process::Command::new("mkfifo").arg(path).status().unwrap().success());
    }

    #[test]
    fn an_inputs_file_replaces_a_link_or_a_fifo_left_in_its_place_and_writes_nowhere_else() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "precious").unwrap();
        let (linked, piped) = (dir.path().join("a.inputs.json"), dir.path().join("b.inputs.json"));
        std::os::unix::fs::symlink(&victim, &linked).unwrap();
        mkfifo(&piped);
        for path in [&linked, &piped] {
            write_own_file(path, b"{\"x\":1}").unwrap();
            assert!(std::fs::symlink_metadata(path).unwrap().is_file(), "{}", path.display());
            assert_eq!(std::fs::read_to_string(path).unwrap(), "{\"x\":1}");
        }
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious", "the link was followed");
    }

    #[test]
    fn attempts_writing_the_same_inputs_file_at_once_each_leave_a_whole_one() {
        let dir = tempfile::tempdir().unwrap();
        let shared = dir.path().join("no-inputs.json");
        std::thread::scope(|threads| {
            for _ in 0..8 {
                threads.spawn(|| {
                    for _ in 0..200 {
                        write_own_file(&shared, b"{}").unwrap();
                    }
                });
            }
        });
        assert_eq!(std::fs::read_to_string(&shared).unwrap(), "{}");
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(left, [std::ffi::OsString::from("no-inputs.json")], "no temporary file is left");
    }

    #[test]
    fn a_log_is_appended_to_but_a_link_or_a_fifo_in_its_place_is_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("task.log");
        open_append(&log).unwrap().write_all(b"one\n").unwrap();
        open_append(&log).unwrap().write_all(b"two\n").unwrap();
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "one\ntwo\n");

        let victim = dir.path().join("victim");
        std::fs::write(&victim, "precious").unwrap();
        let linked = dir.path().join("linked.log");
        std::os::unix::fs::symlink(&victim, &linked).unwrap();
        assert!(open_append(&linked).is_err());
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");

        // Opened for writing without a reader, a FIFO would block the runner for ever.
        let piped = dir.path().join("piped.log");
        mkfifo(&piped);
        assert!(open_append(&piped).is_err());
    }
}
