//! Supervised child processes: what the `shell.run` agent runs (issue 3, docs/format.md §6).
//!
//! Rules this module owns:
//! - Every process leads its own process group (`setpgid(0, 0)` at spawn), so a signal to the
//!   group reaches everything it started that did not leave the group on purpose (`setsid`).
//! - Cancel and timeout stop the group: SIGTERM, up to `grace` for every member to exit, then
//!   SIGKILL. A cancelled attempt is [`Exit::Cancelled`] (exit code 130).
//! - When the leader exits on its own while other members of its group still run (`sleep 60 &
//!   exit 0`), they are stopped the same way (TERM, grace, KILL) before [`Supervised::wait`]
//!   returns: an attempt is over only when nothing it started is left. The [`Exit`] is still
//!   the leader's own; [`Finished::group`] says what had to be done to the rest.
//! - stdout and stderr are the same pipe, read by the process's supervisor (below), which
//!   appends what comes to the attempt's log, so their interleaving is exactly the order of
//!   the writes. The log is created at the first byte of output: a process that writes nothing
//!   leaves no file (readers take a missing log for an empty one), and starting one creates no
//!   inode. The supervisor never waits for the pipe's end: a grandchild that keeps it open
//!   cannot hold anything up. stdin is `/dev/null`.
//! - **Log cap.** The supervisor writes at most [`ProcessSpec::log_cap`] bytes of output to
//!   the log ([`DEFAULT_LOG_CAP`], 1 GiB, unless [`set_default_log_cap`] or the spec says
//!   otherwise); the rest is read and dropped, and one note at the end of the log says how much
//!   ([`Finished::log`] too).
//! - The environment is minimal: only [`INHERITED_ENV`] is taken from the engine's own (or from
//!   what an embedder gave [`inherit_from`]), then the spec's variables are added (and win).
//! - **The supervisor** ([`supervisor`]): each process is started by a small process of its
//!   own, forked from the engine, that waits for it and records its exit durably
//!   ([`ProcessSpec::exit_record`], a line of its folder's [`supervisor::RECORDS_FILE`]), so that
//!   its outcome survives the engine's death: recovery reads the record, or, while the
//!   supervisor lives, waits for it ([`adopt`]). The engine, while it lives, learns the outcome
//!   from what the supervisor tells it. The supervisor reaps the leader only once
//!   the engine has done with its group (or is gone); the engine reaps the supervisor. No
//!   zombie of ours is left. Grandchildren orphaned by the leader's exit belong to init, which
//!   reaps them (an init that does not, as in some containers, leaves zombies that run
//!   nothing; group checks here ignore them).
//!
//! How: a raw `fork` (no exec, so it works in every binary the engine runs in: `orrery`, the
//! app, a test) whose child calls only async-signal-safe functions, and `libc::killpg`, with no
//! process-wrapping crate. The order needed to signal a group safely: the leader's exit is
//! observed without reaping it, which leaves it a zombie, so its pid (the group id) cannot be
//! reused by an unrelated process while the rest of the group is being signalled; only then is
//! it reaped. The supervisor sees the exit through a pidfd (or, on kernels before 5.3, by
//! `waitid(WNOWAIT)` every 50 ms) and tells the engine over a pipe on tokio's reactor (the
//! runtime needs its IO driver: `enable_all`). Linux only for now: start times and group
//! members are read from `/proc`.

mod procfs;
mod spawner;
pub mod supervisor;

use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use tokio::sync::{oneshot, Notify};

/// How long a stopped group gets between SIGTERM and SIGKILL unless the spec says otherwise.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(5);

/// The log cap of a process whose spec does not change it, unless [`set_default_log_cap`]
/// did: 1 GiB, more than any normal task writes.
pub const DEFAULT_LOG_CAP: u64 = 1 << 30;

static LOG_CAP: AtomicU64 = AtomicU64::new(DEFAULT_LOG_CAP);

/// Sets the log cap that [`ProcessSpec::new`] gives (for this process: `orrery run --log-cap`).
pub fn set_default_log_cap(bytes: u64) {
    LOG_CAP.store(bytes, Ordering::Relaxed);
}

/// The log cap [`ProcessSpec::new`] gives.
pub fn default_log_cap() -> u64 {
    LOG_CAP.load(Ordering::Relaxed)
}

/// Whether the tasks are to get back the transparent huge pages [`without_huge_pages`] turned off.
static HUGE_PAGES_BACK: AtomicBool = AtomicBool::new(false);

/// Turns transparent huge pages off for this process and the processes of its own it starts
/// (the spawner, the supervisors), not for the tasks, which get them back before their exec.
/// A process that allocates and frees steadily, as the engine does, has the system zero a whole
/// 2-MiB page at the first touch of each region its allocator hands out again (mimalloc asks for
/// huge pages on its memory): a run of 1,000 `true` tasks spent a sixth of its CPU zeroing them,
/// and peaked at twice the memory. Nothing is changed when huge pages were already off: the
/// tasks then inherit that as before. The switch is the kernel's per-process one
/// (`PR_SET_THP_DISABLE`), which children inherit across fork and exec.
pub fn without_huge_pages() {
    // SAFETY: prctl with these arguments reads, then sets, a flag of this process.
    let turned_off = unsafe {
        libc::prctl(libc::PR_GET_THP_DISABLE, 0, 0, 0, 0) == 0 && libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) == 0
    };
    if turned_off {
        HUGE_PAGES_BACK.store(true, Ordering::Relaxed);
    }
}

/// Values of [`INHERITED_ENV`] variables that a child takes instead of the engine's own.
type Inherited = Box<dyn Fn() -> Vec<(String, std::ffi::OsString)> + Send + Sync>;
static INHERITED: OnceLock<Inherited> = OnceLock::new();

/// From now on each child takes the [`INHERITED_ENV`] variables `values` answers (asked at every
/// spawn; it may wait until they are known) instead of the engine's own, and the engine's own
/// for the others. For an embedder that learns them after threads started, when changing its
/// own environment would race with them: the desktop app asks the user's login shell in the
/// background as it starts. Only the first call counts.
pub fn inherit_from(values: impl Fn() -> Vec<(String, std::ffi::OsString)> + Send + Sync + 'static) {
    let _ = INHERITED.set(Box::new(values));
}

/// The only variables a child inherits from the engine's environment (when they are set
/// there): where its tools are, who and where the user is, and the whole locale. Everything
/// else it sees comes from [`ProcessSpec::env`]. `PATH` falls back to [`FALLBACK_PATH`] when the
/// engine has none, so that `/bin/sh -c 'ls'` still works.
pub const INHERITED_ENV: &[&str] = &[
    "PATH",
    "HOME",
    "TMPDIR",
    "USER",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_ADDRESS",
    "LC_COLLATE",
    "LC_CTYPE",
    "LC_IDENTIFICATION",
    "LC_MEASUREMENT",
    "LC_MESSAGES",
    "LC_MONETARY",
    "LC_NAME",
    "LC_NUMERIC",
    "LC_PAPER",
    "LC_TELEPHONE",
    "LC_TIME",
];

/// `PATH` for the child when the engine's environment has none.
pub const FALLBACK_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// What a [`Exit::Cancelled`] attempt records as its exit code (128 + SIGINT, as a shell does).
pub const CANCELLED_EXIT_CODE: i32 = 130;

/// What a [`Exit::TimedOut`] attempt records as its exit code (as coreutils `timeout` does).
pub const TIMED_OUT_EXIT_CODE: i32 = 124;

/// What to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Program {
    /// A program and its arguments, executed directly (the program is looked up in the
    /// child's `PATH` when it has no `/`).
    Argv(Vec<String>),
    /// A command line run by `/bin/sh -c`. A missing command inside it is the shell's exit
    /// code 127, not a spawn error.
    Shell(String),
}

#[derive(Debug, Clone)]
pub struct ProcessSpec {
    pub program: Program,
    /// The working directory; the engine's own when `None`.
    pub cwd: Option<PathBuf>,
    /// Added to the minimal environment ([`INHERITED_ENV`]); a name given here wins.
    pub env: Vec<(String, String)>,
    /// The attempt's log: its parent directories made at the spawn, the file itself created at
    /// the first byte of output (a process that writes nothing leaves none), appended to.
    pub log_path: PathBuf,
    /// Measured from the spawn; on expiry the group is stopped and the attempt is
    /// [`Exit::TimedOut`].
    pub timeout: Option<Duration>,
    /// Between SIGTERM and SIGKILL when a group is stopped.
    pub grace: Duration,
    /// The attempt's stem (its files' common prefix): the supervisor records the leader's exit
    /// durably under its name in the folder's records file (see [`supervisor`]). `None`: no
    /// record (the exit is known only while this process lives).
    pub exit_record: Option<PathBuf>,
    /// At most this many bytes of output go to the log (see the module notes).
    pub log_cap: u64,
    /// Written into the record as its `run_id` (the attempt's), and required of it when the
    /// exit is read back ([`adopt`]): a record another attempt left under the name is not this
    /// one's.
    pub record_id: Option<String>,
}

impl ProcessSpec {
    /// A spec with no cwd, no extra environment, no timeout and the default grace.
    pub fn new(program: Program, log_path: impl Into<PathBuf>) -> Self {
        ProcessSpec {
            program,
            cwd: None,
            env: Vec::new(),
            log_path: log_path.into(),
            timeout: None,
            grace: DEFAULT_GRACE,
            exit_record: None,
            log_cap: default_log_cap(),
            record_id: None,
        }
    }

    /// A command line for `/bin/sh -c`.
    pub fn shell(command: impl Into<String>, log_path: impl Into<PathBuf>) -> Self {
        Self::new(Program::Shell(command.into()), log_path)
    }

    /// A program and its arguments.
    pub fn argv<S: Into<String>>(argv: impl IntoIterator<Item = S>, log_path: impl Into<PathBuf>) -> Self {
        Self::new(Program::Argv(argv.into_iter().map(Into::into).collect()), log_path)
    }

    fn argv_to_run(&self) -> Vec<String> {
        match &self.program {
            Program::Argv(argv) => argv.clone(),
            Program::Shell(command) => vec!["/bin/sh".into(), "-c".into(), command.clone()],
        }
    }
}

/// Why a process could not be started. Nothing was left running when this is returned.
#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    #[error("no program to run: the argument list is empty")]
    EmptyArgv,
    #[error("program not found: {program}")]
    ProgramNotFound { program: String },
    #[error("program is not executable (permission denied): {program}")]
    ProgramNotExecutable { program: String },
    #[error("working directory does not exist or is not a directory: {}", cwd.display())]
    CwdMissing { cwd: PathBuf },
    #[error("invalid environment variable {name:?}: names must be non-empty without '=' or NUL, values without NUL")]
    InvalidEnv { name: String },
    #[error("cannot write the log file {}: {source}", path.display())]
    LogUnwritable { path: PathBuf, source: io::Error },
    #[error("cannot start {program}: {source}")]
    Spawn { program: String, source: io::Error },
    #[error("cannot supervise process {pid}: {source}")]
    Supervision { pid: u32, source: io::Error },
}

/// How an attempt ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// The leader exited by itself with this code.
    Exited { code: i32 },
    /// The leader was ended by a signal that Orrery did not send. Signal 0 means its status
    /// was lost: something else in this process reaped it (`waitpid(-1)`), which it must not.
    Signalled { signal: i32 },
    /// [`Canceller::cancel`] was called while the leader ran; whatever the leader then did.
    Cancelled,
    /// The timeout expired while the leader ran; whatever the leader then did.
    TimedOut,
}

impl Exit {
    /// The exit code to record: the leader's own, `128 + signal`, [`CANCELLED_EXIT_CODE`] or
    /// [`TIMED_OUT_EXIT_CODE`].
    pub fn code(&self) -> i32 {
        match *self {
            Exit::Exited { code } => code,
            Exit::Signalled { signal } => 128 + signal,
            Exit::Cancelled => CANCELLED_EXIT_CODE,
            Exit::TimedOut => TIMED_OUT_EXIT_CODE,
        }
    }

    pub fn is_success(&self) -> bool {
        *self == Exit::Exited { code: 0 }
    }
}

/// What stopping the process group took, once the leader had exited or was asked to stop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GroupCleanup {
    /// No member was left to stop.
    NotNeeded,
    /// SIGTERM was sent and every member exited within the grace period.
    Terminated,
    /// Some member outlived the grace period and was sent SIGKILL.
    Killed,
    /// Even after SIGKILL these members did not exit in time (a process stuck in the kernel,
    /// uninterruptible). They are reported, not waited for.
    Stuck { pids: Vec<u32> },
}

/// The end of an attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finished {
    pub exit: Exit,
    /// From spawn until the leader was reaped and its group was empty.
    pub duration: Duration,
    pub group: GroupCleanup,
    /// What the log took.
    pub log: LogSummary,
}

/// What the supervisor wrote to the log and what the cap dropped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LogSummary {
    pub written: u64,
    pub dropped: u64,
    pub cap: u64,
}

impl LogSummary {
    fn of(record: &supervisor::ExitRecord) -> LogSummary {
        LogSummary { written: record.log_bytes, dropped: record.log_dropped, cap: record.log_cap }
    }

    /// Some output was dropped past the cap.
    pub fn is_capped(&self) -> bool {
        self.dropped > 0
    }
}

impl supervisor::ExitRecord {
    /// The leader's exit as the record has it (a stop on purpose as such).
    pub fn exit(&self) -> Exit {
        match self.stopped.as_deref() {
            Some("cancelled") => return Exit::Cancelled,
            Some("timed_out") => return Exit::TimedOut,
            _ => {}
        }
        match (self.code, self.signal) {
            (Some(code), _) => Exit::Exited { code },
            (None, Some(signal)) => Exit::Signalled { signal },
            (None, None) => Exit::Signalled { signal: 0 },
        }
    }
}

/// A running process and its group, supervised by a tokio task of its own: cancel and
/// timeout take effect, and the process is reaped, whether or not anyone awaits
/// [`Supervised::wait`]. Dropping this handle does not stop the process.
#[derive(Debug)]
pub struct Supervised {
    pid: u32,
    start_time: u64,
    canceller: Canceller,
    finished: oneshot::Receiver<Finished>,
    /// What it was started with; unknown for a process adopted after a crash.
    environment: Option<orrery_store::ProcessEnvironment>,
}

impl Supervised {
    /// The leader's pid, which is also its process group id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The leader's start time in clock ticks since boot (`/proc/<pid>/stat` field 22). With
    /// the pid, it names this process across pid reuse: see [`is_alive`].
    pub fn start_time(&self) -> u64 {
        self.start_time
    }

    pub fn canceller(&self) -> Canceller {
        self.canceller.clone()
    }

    /// The program, working directory and environment it was started with (see [`spawn`]).
    pub fn environment(&self) -> Option<&orrery_store::ProcessEnvironment> {
        self.environment.as_ref()
    }

    /// Waits until the leader has exited, been reaped, and no member of its group is left.
    pub async fn wait(self) -> Finished {
        self.finished.await.expect("the supervisor task always sends its result before it ends")
    }
}

/// Asks a supervised process to stop: SIGTERM to its group, the grace period, then SIGKILL.
/// Cloneable and cheap; asking twice, or after the process ended, does nothing more.
#[derive(Debug, Clone)]
pub struct Canceller {
    request: Arc<CancelRequest>,
}

#[derive(Debug, Default)]
struct CancelRequest {
    requested: AtomicBool,
    notify: Notify,
}

impl Canceller {
    pub fn cancel(&self) {
        if !self.request.requested.swap(true, Ordering::SeqCst) {
            // The supervisor is the only waiter; notify_one keeps a permit if it is not
            // waiting yet, so a cancel right after spawn is not lost.
            self.request.notify.notify_one();
        }
    }

    pub fn is_cancel_requested(&self) -> bool {
        self.request.requested.load(Ordering::SeqCst)
    }
}

/// Stops the process group of a process this process did not start (a runner that crashed
/// left it behind), known by its leader's pid and start time: SIGTERM,
/// up to [`DEFAULT_GRACE`] for the leader to end, then SIGKILL to the group
/// (members that ignore SIGTERM), then up to a few seconds more for the leader to be gone.
pub async fn terminate_group(pid: u32, start_time: u64) {
    let Ok(pgid) = i32::try_from(pid) else { return };
    if pgid <= 1 {
        return;
    }
    let gone = || !is_alive(pid, start_time);
    // SAFETY: killpg only sends a signal; the group is the one the recorded leader created.
    unsafe { libc::killpg(pgid, libc::SIGTERM) };
    let deadline = tokio::time::Instant::now() + DEFAULT_GRACE;
    while !gone() && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // SAFETY: as above; a group already empty answers ESRCH, which changes nothing.
    unsafe { libc::killpg(pgid, libc::SIGKILL) };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while !gone() && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Stops every process whose environment holds `name=value` (a task's [`crate::agents::shell::RUN_ID_VAR`]),
/// however it was started and whatever group it is in: SIGTERM, up to [`DEFAULT_GRACE`], then
/// SIGKILL to those left, and one more search for processes they forked meanwhile. How many
/// were found.
pub async fn terminate_tagged(name: &str, value: &str) -> usize {
    terminate_tagged_except(name, value, "", &[]).await
}

/// [`terminate_tagged`], sparing the processes whose environment holds `except=V` for any V
/// of `values` (the attempts a recovery adopts).
pub async fn terminate_tagged_except(name: &str, value: &str, except: &str, values: &[String]) -> usize {
    let found = procfs::with_env_except(name, value, except, values);
    if found.is_empty() {
        return 0;
    }
    let signal_all = |processes: &[(i32, u64)], signal| {
        for &(pid, start_time) in processes {
            if is_alive(pid as u32, start_time) {
                // SAFETY: kill only sends a signal, to a process identified by pid and start time.
                unsafe { libc::kill(pid, signal) };
            }
        }
    };
    signal_all(&found, libc::SIGTERM);
    let all_gone = |processes: &[(i32, u64)]| processes.iter().all(|&(p, s)| !is_alive(p as u32, s));
    let deadline = tokio::time::Instant::now() + DEFAULT_GRACE;
    while !all_gone(&found) && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut left: Vec<(i32, u64)> = found.clone();
    for _ in 0..2 {
        signal_all(&left, libc::SIGKILL);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while !all_gone(&left) && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        left = procfs::with_env_except(name, value, except, values);
        if left.is_empty() {
            break;
        }
    }
    found.len()
}

/// True only if a process with this pid exists, has not exited (a zombie has), and started at
/// `start_time`: a pid reused by another process after a crash is not taken for the old one.
pub fn is_alive(pid: u32, start_time: u64) -> bool {
    let Ok(pid) = i32::try_from(pid) else {
        return false;
    };
    if pid <= 0 {
        return false;
    }
    match procfs::read_stat(pid) {
        Ok(stat) => stat.start_time == start_time && !stat.has_exited(),
        Err(_) => false,
    }
}

/// This process, named as [`is_alive`] checks it: its pid and start time.
pub fn current_process() -> io::Result<(u32, u64)> {
    let pid = std::process::id();
    Ok((pid, procfs::read_stat(pid as i32)?.start_time))
}

/// Starts `spec` as the leader of a new process group, under a supervisor process of its own
/// ([`supervisor`]): it survives this process, copies the output to the log and records the
/// exit durably ([`ProcessSpec::exit_record`]). Must be called within a tokio runtime.
pub async fn spawn(spec: ProcessSpec) -> Result<Supervised, ProcessError> {
    let argv = spec.argv_to_run();
    let Some(program) = argv.first().cloned() else {
        return Err(ProcessError::EmptyArgv);
    };
    if let Some(cwd) = &spec.cwd {
        if !cwd.is_dir() {
            return Err(ProcessError::CwdMissing { cwd: cwd.clone() });
        }
    }
    for (name, value) in &spec.env {
        if name.is_empty() || name.contains(['=', '\0']) || value.contains('\0') {
            return Err(ProcessError::InvalidEnv { name: name.clone() });
        }
    }
    check_log_place(&spec.log_path)
        .map_err(|source| ProcessError::LogUnwritable { path: spec.log_path.clone(), source })?;
    let env = child_env(&spec.env);
    let resolved = resolve_program(&program, &env, spec.cwd.as_deref())?;
    let environment = environment_of(&resolved, spec.cwd.as_deref(), &env);
    let spawn_failed = |source: io::Error| ProcessError::Spawn { program: program.clone(), source };
    if let Some(stem) = &spec.exit_record {
        // An earlier use of the name recorded there is not this process's exit.
        supervisor::record_start(stem, spec.record_id.as_deref()).map_err(spawn_failed)?;
    }
    let prepared = supervisor::Prepared::new(&resolved, &argv, &env, &spec).map_err(spawn_failed)?;
    let started = Instant::now();
    let mut link = Link::fork(prepared).map_err(spawn_failed)?;
    let first = match tokio::time::timeout(spawner::PATIENCE, link.next()).await {
        Ok(first) => first,
        Err(_) => {
            // A spawner that has not forked the supervisor by now is given up on: its end
            // closes the status pipe unless a supervisor holds it.
            spawner::give_up_if_late();
            link.next().await
        }
    };
    let pid = match first {
        Some((supervisor::TAG_STARTED, pid, _)) => pid as u32,
        Some((supervisor::TAG_FAILED, phase, errno)) => {
            link.finish().await;
            let source = io::Error::from_raw_os_error(errno as i32);
            return Err(match (phase, errno as i32) {
                (supervisor::PHASE_CWD, _) => ProcessError::CwdMissing { cwd: spec.cwd.clone().unwrap_or_default() },
                (supervisor::PHASE_EXEC, libc::ENOENT) => ProcessError::ProgramNotFound { program },
                (supervisor::PHASE_EXEC, libc::EACCES) => ProcessError::ProgramNotExecutable { program },
                _ => ProcessError::Spawn { program, source },
            });
        }
        _ => {
            let pid = link.supervisor as u32;
            link.finish().await;
            let source = io::Error::other("the supervisor process ended before the task started");
            return Err(ProcessError::Supervision { pid, source });
        }
    };
    // The leader stays at least a zombie of the supervisor until the control pipe closes.
    let start_time = match procfs::read_stat(pid as i32) {
        Ok(stat) => stat.start_time,
        Err(source) => {
            // Nothing may be left running behind an error.
            kill_group(pid as i32, libc::SIGKILL);
            link.finish().await;
            return Err(ProcessError::Supervision { pid, source });
        }
    };

    let canceller = Canceller { request: Arc::new(CancelRequest::default()) };
    let (finished_tx, finished_rx) = oneshot::channel();
    let request = canceller.request.clone();
    let deadline = spec.timeout.map(|timeout| started + timeout);
    tokio::spawn(async move {
        let finished = supervise_group(link, pid as i32, request, deadline, &spec, started).await;
        // The handle may have been dropped; the process was supervised to its end anyway.
        let _ = finished_tx.send(finished);
    });

    Ok(Supervised { pid, start_time, canceller, finished: finished_rx, environment: Some(environment) })
}

/// Waits for a task process that a runner which died left behind, still under its supervisor,
/// through its exit record (see [`supervisor`]; `stem` is the attempt's, as
/// [`ProcessSpec::exit_record`]): the [`Finished`] of the record once it is written. `leader`
/// is the process (pid, start time) when it may still run; none when only the record is left to
/// read. A cancel stops its group (SIGTERM, `grace`, SIGKILL) and waits
/// for the record all the same; so does `deadline` (the attempt's timeout, from its start),
/// whose expiry makes the exit [`Exit::TimedOut`]. After the record, every process still carrying `tag`
/// (`name=value` in its environment: the attempt's run id) is stopped, as [`terminate_tagged`].
/// No record and no leader left: the exit is [`Exit::Signalled`] with signal 0 (lost). A record
/// of another run id than the tag's value is not this process's (see [`ProcessSpec::record_id`]).
pub fn adopt(
    leader: Option<(u32, u64)>,
    stem: PathBuf,
    grace: Duration,
    tag: (String, String),
    deadline: Option<Instant>,
) -> Supervised {
    let canceller = Canceller { request: Arc::new(CancelRequest::default()) };
    let request = canceller.request.clone();
    let (finished_tx, finished_rx) = oneshot::channel();
    let (pid, start_time) = leader.unwrap_or((0, 0));
    tokio::spawn(async move {
        let started = Instant::now();
        let present = |pid: u32, start_time: u64| {
            leader.is_some() && procfs::read_stat(pid as i32).is_ok_and(|s| s.start_time == start_time)
        };
        let signal = |signal| {
            // Alive or a zombie of its supervisor: the group id is still the leader's.
            if present(pid, start_time) {
                kill_group(pid as i32, signal);
            }
        };
        let mut cancelled = false;
        let mut timed_out = false;
        let mut kill_at: Option<Instant> = None;
        let timeout = async {
            match deadline {
                Some(deadline) => tokio::time::sleep_until(deadline.into()).await,
                None => std::future::pending().await,
            }
        };
        tokio::pin!(timeout);
        let read = || supervisor::read_record(&stem, Some(&tag.1));
        let record = loop {
            match read() {
                Ok(Some(record)) => break Some(record),
                Ok(None) => {}
                Err(_) => break None,
            }
            if !present(pid, start_time) {
                // Gone: its supervisor wrote the record before reaping it, if it ever did.
                break read().ok().flatten();
            }
            if kill_at.is_some_and(|at| Instant::now() >= at) {
                signal(libc::SIGKILL);
                kill_at = None;
            }
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(50)) => {}
                _ = request.notify.notified(), if !cancelled => {
                    cancelled = true;
                    signal(libc::SIGTERM);
                    kill_at = kill_at.or(Some(Instant::now() + grace));
                }
                _ = &mut timeout, if !timed_out && !cancelled => {
                    timed_out = true;
                    signal(libc::SIGTERM);
                    kill_at = Some(Instant::now() + grace);
                }
            }
        };
        let left = terminate_tagged(&tag.0, &tag.1).await;
        let group = if left == 0 { GroupCleanup::NotNeeded } else { GroupCleanup::Terminated };
        let (exit, log) = match record {
            _ if cancelled => (Exit::Cancelled, record.as_ref().map(LogSummary::of).unwrap_or_default()),
            _ if timed_out => (Exit::TimedOut, record.as_ref().map(LogSummary::of).unwrap_or_default()),
            Some(record) => (record.exit(), LogSummary::of(&record)),
            None => (Exit::Signalled { signal: 0 }, LogSummary::default()),
        };
        let _ = finished_tx.send(Finished { exit, duration: started.elapsed(), group, log });
    });
    Supervised { pid, start_time, canceller, finished: finished_rx, environment: None }
}

/// Whether the live or zombie process (pid, start time) is the task of a live supervisor
/// ([`supervisor::SUPERVISOR_NAME`] is its parent): then its exit will be recorded.
pub fn has_supervisor(pid: u32, start_time: u64) -> bool {
    let Ok(stat) = procfs::read_stat(pid as i32) else { return false };
    if stat.start_time != start_time || stat.ppid <= 1 {
        return false;
    }
    let parent_alive = procfs::read_stat(stat.ppid).is_ok_and(|p| !p.has_exited());
    parent_alive
        && fs::read_to_string(format!("/proc/{}/comm", stat.ppid))
            .is_ok_and(|comm| comm.trim_end() == supervisor::SUPERVISOR_NAME)
}

/// The leader of the process group tagged `name=value` that a live supervisor runs (see
/// [`has_supervisor`]): how recovery finds a task whose start its runner never recorded.
pub fn supervised_leader(name: &str, value: &str) -> Option<(u32, u64)> {
    procfs::with_env(name, value).into_iter().map(|(pid, start_time)| (pid as u32, start_time)).find(
        |&(pid, start_time)| {
            // SAFETY: getpgid has no memory-safety preconditions.
            (unsafe { libc::getpgid(pid as i32) }) == pid as i32 && has_supervisor(pid, start_time)
        },
    )
}

/// The live supervisor of the attempt whose log is `log`, and its task's leader, alive or a
/// zombie (pid, start time): how recovery finds a task whose leader has just exited, whose
/// environment can no longer be read, while its record is being written. A supervisor holds the
/// memory file named by its log's mark until it ends ([`supervisor::log_mark`]); one of a build
/// before the mark, the log itself.
pub fn supervisor_of_log(log: &std::path::Path) -> Option<((u32, u64), Option<(u32, u64)>)> {
    use std::os::unix::ffi::OsStrExt;
    let absolute = std::path::absolute(log).ok()?;
    let mark = supervisor::log_mark(absolute.as_os_str().as_bytes());
    let marked = std::path::PathBuf::from(format!("/memfd:{} (deleted)", mark.to_str().ok()?));
    let opened = fs::canonicalize(log).ok();
    let entries = fs::read_dir("/proc").ok()?;
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else { continue };
        let is_supervisor = fs::read_to_string(format!("/proc/{pid}/comm"))
            .is_ok_and(|comm| comm.trim_end() == supervisor::SUPERVISOR_NAME);
        if !is_supervisor {
            continue;
        }
        let Ok(fds) = fs::read_dir(format!("/proc/{pid}/fd")) else { continue };
        let held = |target: std::path::PathBuf| target == marked || opened.as_ref() == Some(&target);
        if !fds.flatten().any(|fd| fs::read_link(fd.path()).is_ok_and(held)) {
            continue;
        }
        let Ok(stat) = procfs::read_stat(pid) else { continue };
        if stat.has_exited() {
            continue;
        }
        // Its first child: the others are orphans of the task's tree (it is a subreaper).
        let leader = procfs::children_of(pid).into_iter().min_by_key(|&(p, s)| (s, p)).map(|(p, s)| (p as u32, s));
        return Some(((pid as u32, stat.start_time), leader));
    }
    None
}

/// The engine's end of a supervisor: its pid, its status pipe, the control pipe it watches.
struct Link {
    /// 0 when the spawner did not say.
    supervisor: i32,
    /// Whether it is this process's child to reap (else the spawner's, which the kernel reaps).
    reap: bool,
    status: tokio::net::unix::pipe::Receiver,
    pending: Vec<u8>,
    eof: bool,
    /// What the log took, (written, dropped), as `L` said.
    log: (u64, u64),
    /// Whether `R` came: the record is written, and when it came before `X`, nothing of the
    /// task's tree was left when its leader exited (see [`supervisor`]).
    recorded: bool,
    /// Closed (dropped) when the engine has done with the group: the supervisor may then reap.
    control: Option<std::os::fd::OwnedFd>,
}

fn pipe_cloexec() -> io::Result<(std::os::fd::OwnedFd, std::os::fd::OwnedFd)> {
    use std::os::fd::FromRawFd;
    let mut fds = [0i32; 2];
    // SAFETY: a valid pointer to two ints.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created and are owned by nothing else.
    Ok(unsafe { (std::os::fd::OwnedFd::from_raw_fd(fds[0]), std::os::fd::OwnedFd::from_raw_fd(fds[1])) })
}

impl Link {
    fn fork(mut prepared: supervisor::Prepared) -> io::Result<Link> {
        use std::os::fd::AsRawFd;
        use std::os::unix::ffi::OsStringExt;
        let (status_r, status_w) = pipe_cloexec()?;
        let (control_r, control_w) = pipe_cloexec()?;
        if prepared.cwd.is_none() {
            // The engine's folder, which the spawner's may no longer be.
            prepared.cwd =
                std::env::current_dir().ok().and_then(|d| std::ffi::CString::new(d.into_os_string().into_vec()).ok());
        }
        let link = |supervisor: i32, reap: bool| -> io::Result<Link> {
            let status = tokio::net::unix::pipe::Receiver::from_owned_fd(status_r)?;
            Ok(Link {
                supervisor,
                reap,
                status,
                pending: Vec::new(),
                eof: false,
                log: (0, 0),
                recorded: false,
                control: Some(control_w),
            })
        };
        let fds = [status_w.as_raw_fd(), control_r.as_raw_fd()];
        if let spawner::Spawned::Asked = spawner::spawn(&prepared, fds) {
            drop((status_w, control_r));
            // Its pid comes with its first message.
            return link(0, false);
        }
        let mut prepared = prepared.with_buffers();
        let devnull = OpenOptions::new().read(true).write(true).open("/dev/null")?;
        let fds = supervisor::Fds {
            devnull: devnull.as_raw_fd(),
            status: status_w.as_raw_fd(),
            control: control_r.as_raw_fd(),
        };
        // SAFETY: the child calls only async-signal-safe functions (see `supervisor`) and
        // never returns.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            // SAFETY: in the child, on its own copy of what was prepared.
            unsafe { supervisor::run(&mut prepared, fds) }
        }
        if pid < 0 {
            return Err(io::Error::last_os_error());
        }
        drop((status_w, control_r, devnull));
        link(pid, true)
    }

    /// The next message of the supervisor; `None` once it closed its end (it ended).
    async fn next(&mut self) -> Option<(u8, i64, i64)> {
        loop {
            if self.pending.len() >= supervisor::MSG_LEN {
                let msg: Vec<u8> = self.pending.drain(..supervisor::MSG_LEN).collect();
                let a = i64::from_le_bytes(msg[1..9].try_into().unwrap_or_default());
                let b = i64::from_le_bytes(msg[9..17].try_into().unwrap_or_default());
                match msg[0] {
                    supervisor::TAG_LOG => self.log = (a as u64, b as u64),
                    supervisor::TAG_RECORDED => self.recorded = true,
                    supervisor::TAG_STARTED if b > 0 => self.supervisor = b as i32,
                    _ => {}
                }
                return Some((msg[0], a, b));
            }
            if self.eof {
                return None;
            }
            let mut buf = [0u8; 256];
            match self.status.try_read(&mut buf) {
                Ok(0) => self.eof = true,
                Ok(n) => self.pending.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if self.status.readable().await.is_err() {
                        self.eof = true;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => self.eof = true,
            }
        }
    }

    /// Writes one byte on the control pipe (see [`supervisor`]).
    fn tell(&self, byte: u8) {
        use std::os::fd::AsRawFd;
        if let Some(control) = &self.control {
            // SAFETY: a valid descriptor and a one-byte buffer; a pipe takes it at once.
            unsafe { libc::write(control.as_raw_fd(), [byte].as_ptr().cast(), 1) };
        }
    }

    /// The leader's exit (kind 0: code, 1: signal); `None` if the supervisor ended first.
    async fn leader_exit(&mut self) -> Option<(i64, i64)> {
        loop {
            match self.next().await? {
                (supervisor::TAG_EXITED, kind, value) => return Some((kind, value)),
                _ => continue,
            }
        }
    }

    /// Lets the supervisor go, reads what it says until the record is written (or it ended),
    /// and reaps it when it is this process's child: (written, dropped) of the log.
    async fn finish(&mut self) -> (u64, u64) {
        self.control = None;
        // After `R` it only reaps the leader and exits. The spawner's supervisors are reaped
        // by the kernel, so nothing is left to wait for.
        while (self.reap || !self.recorded) && self.next().await.is_some() {}
        if self.reap {
            // It closed its status pipe by exiting: this waits a moment at most.
            let mut status = 0;
            loop {
                // SAFETY: a valid pointer to a c_int owned by this frame.
                let rc = unsafe { libc::waitpid(self.supervisor, &mut status, libc::WNOHANG) };
                if rc == self.supervisor || (rc < 0 && io::Error::last_os_error().raw_os_error() != Some(libc::EINTR)) {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        }
        self.log
    }
}

/// The child's environment: [`INHERITED_ENV`] from the engine's, then the spec's (which win).
fn child_env(extra: &[(String, String)]) -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
    let mut env: Vec<(std::ffi::OsString, std::ffi::OsString)> =
        minimal_env().into_iter().map(|(k, v)| (std::ffi::OsString::from(k), v)).collect();
    for (name, value) in extra {
        match env.iter_mut().find(|(k, _)| k == name.as_str()) {
            Some(entry) => entry.1 = value.into(),
            None => env.push((name.into(), value.into())),
        }
    }
    env
}

/// The program to exec: as given when it holds a `/` (relative to the working directory),
/// else the first executable file of that name in the child's `PATH`.
fn resolve_program(
    program: &str,
    env: &[(std::ffi::OsString, std::ffi::OsString)],
    cwd: Option<&std::path::Path>,
) -> Result<PathBuf, ProcessError> {
    use std::os::unix::ffi::OsStrExt;
    if program.contains('/') {
        return Ok(PathBuf::from(program));
    }
    let path = env.iter().find(|(k, _)| k == "PATH").map(|(_, v)| v.clone()).unwrap_or_else(|| FALLBACK_PATH.into());
    let mut denied = false;
    for dir in std::env::split_paths(&path) {
        let dir = if dir.as_os_str().is_empty() { PathBuf::from(".") } else { dir };
        let candidate = dir.join(program);
        let on_disk = match cwd {
            Some(cwd) if candidate.is_relative() => cwd.join(&candidate),
            _ => candidate.clone(),
        };
        if !on_disk.is_file() {
            continue;
        }
        let Ok(c_path) = std::ffi::CString::new(on_disk.as_os_str().as_bytes()) else { continue };
        // SAFETY: a valid NUL-terminated path.
        if unsafe { libc::access(c_path.as_ptr(), libc::X_OK) } == 0 {
            return Ok(candidate);
        }
        denied = true;
    }
    let program = program.to_string();
    Err(if denied { ProcessError::ProgramNotExecutable { program } } else { ProcessError::ProgramNotFound { program } })
}

/// Makes the log's folder and checks that the supervisor will be able to create or append to
/// the log: what is there must be a regular file this process may write, or nothing in a folder
/// it may write in. The supervisor opens it itself, at the first output, as [`open_append`].
fn check_log_place(path: &std::path::Path) -> io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let folder = path.parent().filter(|p| !p.as_os_str().is_empty());
    if let Some(folder) = folder {
        fs::create_dir_all(folder)?;
    }
    let (place, mode) = match fs::symlink_metadata(path) {
        Ok(meta) if meta.is_file() => (path, libc::W_OK),
        Ok(_) => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} is not a regular file", path.display()),
            ))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            (folder.unwrap_or(std::path::Path::new(".")), libc::W_OK | libc::X_OK)
        }
        Err(e) => return Err(e),
    };
    let place = std::ffi::CString::new(place.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL byte in the log's path"))?;
    // SAFETY: a valid NUL-terminated path.
    if unsafe { libc::access(place.as_ptr(), mode) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Opens a log of Orrery's own for appending, as a regular file only: a link or a FIFO left in
/// its place (a task may leave either in its folder) is refused rather than followed or
/// waited on.
pub(crate) fn open_append(path: &std::path::Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)?;
    if !file.metadata()?.is_file() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("{} is not a regular file", path.display())));
    }
    Ok(file)
}

/// What a process is started with, as an attempt records it: Orrery's own `ORRERY_*` variables
/// left out (the inputs, outputs and ids every task gets; its inputs are recorded apart).
fn environment_of(
    program: &std::path::Path,
    cwd: Option<&std::path::Path>,
    env: &[(std::ffi::OsString, std::ffi::OsString)],
) -> orrery_store::ProcessEnvironment {
    let cwd = cwd.map(PathBuf::from).or_else(|| std::env::current_dir().ok()).unwrap_or_default();
    let variables = env
        .iter()
        .map(|(name, value)| (name.to_string_lossy().into_owned(), value.to_string_lossy().into_owned()))
        .filter(|(name, _)| !name.starts_with("ORRERY_"))
        .collect();
    orrery_store::ProcessEnvironment {
        program: program.display().to_string(),
        cwd: cwd.display().to_string(),
        variables,
    }
}

fn minimal_env() -> Vec<(&'static str, std::ffi::OsString)> {
    let given = INHERITED.get().map(|values| values()).unwrap_or_default();
    let value =
        |name: &str| given.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone()).or_else(|| std::env::var_os(name));
    let mut env: Vec<_> = INHERITED_ENV.iter().filter_map(|&name| value(name).map(|value| (name, value))).collect();
    if !env.iter().any(|(name, _)| *name == "PATH") {
        env.push(("PATH", FALLBACK_PATH.into()));
    }
    env
}

#[derive(Debug, Clone, Copy)]
enum StopReason {
    Cancelled,
    TimedOut,
}

async fn supervise_group(
    mut link: Link,
    pgid: i32,
    cancel: Arc<CancelRequest>,
    deadline: Option<Instant>,
    spec: &ProcessSpec,
    started: Instant,
) -> Finished {
    let timeout = async {
        match deadline {
            Some(deadline) => tokio::time::sleep_until(deadline.into()).await,
            None => std::future::pending().await,
        }
    };
    let mut leader = None;
    // An exit that lands together with a cancel or the deadline counts as the leader's own.
    let stop = tokio::select! {
        biased;
        exit = link.leader_exit() => { leader = exit; None }
        _ = cancel.notify.notified() => Some(StopReason::Cancelled),
        _ = timeout => Some(StopReason::TimedOut),
    };
    match stop {
        Some(StopReason::Cancelled) => link.tell(supervisor::CONTROL_CANCEL),
        Some(StopReason::TimedOut) => link.tell(supervisor::CONTROL_TIMEOUT),
        None => {}
    }
    // The leader is a zombie of the supervisor until `finish`: the group id is still its own.
    // A record written before the exit was told says nothing of the task's tree was left.
    let group = if stop.is_none() && link.recorded {
        GroupCleanup::NotNeeded
    } else {
        stop_group(pgid, link.supervisor, spec.grace).await
    };
    if stop.is_some() {
        // After SIGKILL the leader can only exit (unless stuck in the kernel).
        leader = link.leader_exit().await;
    }
    let (written, dropped) = link.finish().await;
    let log = LogSummary { written, dropped, cap: spec.log_cap };
    let status = match leader {
        Some((0, code)) => Exit::Exited { code: code as i32 },
        Some((_, signal)) => Exit::Signalled { signal: signal as i32 },
        // The supervisor died before the leader: its status is lost.
        None => Exit::Signalled { signal: 0 },
    };
    let exit = match stop {
        Some(StopReason::Cancelled) => Exit::Cancelled,
        Some(StopReason::TimedOut) => Exit::TimedOut,
        None => status,
    };
    Finished { exit, duration: started.elapsed(), group, log }
}

/// Stops every live member of the group: SIGTERM, up to `grace` for all to exit, then SIGKILL
/// and a short bounded wait. The leader, if it exited, is a zombie here and does not count.
/// Whether any is left is first read below its `supervisor` (0: not known), a subreaper, whose
/// tree holds every process the task started and their orphans ([`procfs::live_members_below`]:
/// a process that joined the group from outside the task's tree, on purpose, is not looked for
/// there); then, when some are, from every process of the system.
async fn stop_group(pgid: i32, supervisor: i32, grace: Duration) -> GroupCleanup {
    let below = procfs::live_members_below(supervisor, pgid);
    if below.unwrap_or_else(|| procfs::live_group_members(pgid)).is_empty() {
        return GroupCleanup::NotNeeded;
    }
    kill_group(pgid, libc::SIGTERM);
    if wait_for_empty_group(pgid, grace).await {
        return GroupCleanup::Terminated;
    }
    kill_group(pgid, libc::SIGKILL);
    // SIGKILL cannot be caught; this only waits for the kernel to finish the job.
    if wait_for_empty_group(pgid, KILL_SETTLE).await {
        return GroupCleanup::Killed;
    }
    let pids = procfs::live_group_members(pgid).into_iter().map(|pid| pid as u32).collect();
    GroupCleanup::Stuck { pids }
}

/// How long members may take to disappear after SIGKILL before they are reported as stuck.
const KILL_SETTLE: Duration = Duration::from_secs(5);

/// Polls `/proc` until no live member is left (true) or `limit` has passed (false). Group
/// exit has no event to wait on; the interval grows from 5 ms to 100 ms so that a quick exit
/// is seen quickly and a slow one costs little.
async fn wait_for_empty_group(pgid: i32, limit: Duration) -> bool {
    let until = Instant::now() + limit;
    let mut interval = Duration::from_millis(5);
    loop {
        if procfs::live_group_members(pgid).is_empty() {
            return true;
        }
        let now = Instant::now();
        if now >= until {
            return false;
        }
        tokio::time::sleep(interval.min(until - now)).await;
        interval = (interval * 2).min(Duration::from_millis(100));
    }
}

fn kill_group(pgid: i32, signal: libc::c_int) {
    // ESRCH (no member left) is the only expected failure, and it means there is nothing
    // to do.
    // SAFETY: killpg has no memory-safety preconditions. pgid is the pid of our own unreaped
    // child, so the group cannot belong to anyone else.
    unsafe {
        libc::killpg(pgid, signal);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A supervisor of `command` recording under `dir/a`, the tags of what it says until the
    /// leader's exit (`X`), the engine not having let go, and the leader's pid.
    async fn until_exit(dir: &std::path::Path, command: &str) -> (Link, Vec<u8>, i32) {
        let mut spec = ProcessSpec::shell(command, dir.join("a.log"));
        spec.exit_record = Some(dir.join("a"));
        supervisor::record_start(&dir.join("a"), None).unwrap();
        let argv = spec.argv_to_run();
        let env = child_env(&spec.env);
        let program = resolve_program(&argv[0], &env, None).unwrap();
        let mut link = Link::fork(supervisor::Prepared::new(&program, &argv, &env, &spec).unwrap()).unwrap();
        let (mut tags, mut leader) = (Vec::new(), 0);
        while let Some((tag, a, _)) = tokio::time::timeout(Duration::from_secs(20), link.next()).await.unwrap() {
            tags.push(tag);
            match tag {
                supervisor::TAG_STARTED => leader = a as i32,
                supervisor::TAG_EXITED => break,
                _ => {}
            }
        }
        (link, tags, leader)
    }

    #[tokio::test]
    async fn a_task_that_leaves_nothing_is_recorded_before_its_exit_is_told() {
        let dir = tempfile::tempdir().unwrap();
        let (mut link, tags, _) = until_exit(dir.path(), "echo out; exit 3").await;
        assert_eq!(tags, b"PLRX", "P, then L and R before X");
        let record = supervisor::read_record(&dir.path().join("a"), None).unwrap().expect("already written");
        assert_eq!((record.code, record.log_bytes), (Some(3), 4));
        assert!(link.control.is_some(), "while the engine still holds the control pipe");
        assert_eq!(link.finish().await, (4, 0));
    }

    #[tokio::test]
    async fn a_task_that_leaves_a_process_is_recorded_once_the_engine_has_let_go() {
        let dir = tempfile::tempdir().unwrap();
        // Its output ends with the leader (the child has let go of it first): only the child is
        // left.
        let ready = dir.path().join("ready");
        let command = format!(
            "(exec >/dev/null 2>&1; touch '{0}'; exec sleep 30) & while [ ! -e '{0}' ]; do sleep 0.01; done",
            ready.display()
        );
        let (mut link, tags, leader) = until_exit(dir.path(), &command).await;
        assert_eq!(tags, b"PX", "the exit is told first: the engine has a group to stop");
        assert_eq!(supervisor::read_record(&dir.path().join("a"), None).unwrap(), None, "not written yet");
        assert!(!matches!(stop_group(leader, link.supervisor, Duration::from_secs(5)).await, GroupCleanup::NotNeeded));
        link.finish().await;
        let record = supervisor::read_record(&dir.path().join("a"), None).unwrap().expect("written at the end");
        assert_eq!(record.code, Some(0));
    }
}
