//! Supervised child processes: what the `shell.run` agent runs (issue 3, COMPAT.md section 6).
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
//! - stdout and stderr are the same open file (the attempt's log, opened in append mode), so
//!   their interleaving is exactly the order of the writes and there is no pipe to drain: a
//!   grandchild that keeps the file open cannot hold anything up. stdin is `/dev/null`.
//! - The environment is minimal: only [`INHERITED_ENV`] is taken from the engine's own, then
//!   the spec's variables are added (and win).
//! - The leader is reaped here and only here: no zombie of ours is left. Grandchildren orphaned
//!   by the leader's exit belong to init, which reaps them (an init that does not, as in some
//!   containers, leaves zombies that run nothing; group checks here ignore them).
//!
//! How: the standard library's `process_group(0)` and `libc::killpg`, with no process-wrapping
//! crate. The one thing a wrapper would not give is the order needed to signal a group safely:
//! the leader's exit is observed without reaping it, which leaves it a zombie, so its pid
//! (the group id) cannot be reused by an unrelated process while the rest of the group is being
//! signalled; only then is it reaped. The exit is seen through a pidfd on tokio's reactor (the
//! runtime needs its IO driver: `enable_all`), or, on kernels before 5.3, by `waitid(WNOWAIT)`
//! on a small thread per process. Linux only for now: start times and group members are read
//! from `/proc`.

mod procfs;

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{oneshot, Notify};

/// How long a stopped group gets between SIGTERM and SIGKILL unless the spec says otherwise.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(5);

/// The only variables a child inherits from the engine's environment (when they are set
/// there). Everything else it sees comes from [`ProcessSpec::env`]. `PATH` falls back to
/// [`FALLBACK_PATH`] when the engine has none, so that `/bin/sh -c 'ls'` still works.
pub const INHERITED_ENV: &[&str] = &["PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "USER"];

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
    /// The attempt's log: created (with its parent directories) if missing, appended to.
    pub log_path: PathBuf,
    /// Measured from the spawn; on expiry the group is stopped and the attempt is
    /// [`Exit::TimedOut`].
    pub timeout: Option<Duration>,
    /// Between SIGTERM and SIGKILL when a group is stopped.
    pub grace: Duration,
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
    let found = procfs::with_env(name, value);
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
        left = procfs::with_env(name, value);
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

/// Starts `spec` as the leader of a new process group, under supervision. Must be called
/// within a tokio runtime.
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
    let log = open_log(&spec.log_path)
        .map_err(|source| ProcessError::LogUnwritable { path: spec.log_path.clone(), source })?;
    let log_for_stderr =
        log.try_clone().map_err(|source| ProcessError::LogUnwritable { path: spec.log_path.clone(), source })?;

    let mut command = Command::new(&program);
    command
        .args(&argv[1..])
        .env_clear()
        .envs(minimal_env())
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log_for_stderr)
        .process_group(0);
    if let Some(cwd) = &spec.cwd {
        command.current_dir(cwd);
    }
    let started = Instant::now();
    let child = command.spawn().map_err(|source| spawn_error(&spec, program, source))?;
    let pid = child.id();
    // The std handle is dropped without waiting: it neither kills nor reaps, and reaping is
    // this module's job (below), done only once the group has been dealt with.
    drop(child);

    let supervise = || -> io::Result<(u64, oneshot::Receiver<()>)> {
        let start_time = procfs::read_stat(pid as i32)?.start_time;
        Ok((start_time, watch_leader_exit(pid)?))
    };
    let (start_time, leader_exited) = match supervise() {
        Ok(ok) => ok,
        Err(source) => {
            // Nothing may be left running behind an error.
            kill_group(pid as i32, libc::SIGKILL);
            reap(pid as i32);
            return Err(ProcessError::Supervision { pid, source });
        }
    };

    let canceller = Canceller { request: Arc::new(CancelRequest::default()) };
    let (finished_tx, finished_rx) = oneshot::channel();
    let request = canceller.request.clone();
    let deadline = spec.timeout.map(|timeout| started + timeout);
    tokio::spawn(async move {
        let finished = supervise_group(pid as i32, leader_exited, request, deadline, spec.grace, started).await;
        // The handle may have been dropped; the process was supervised to its end anyway.
        let _ = finished_tx.send(finished);
    });

    Ok(Supervised { pid, start_time, canceller, finished: finished_rx })
}

fn open_log(path: &std::path::Path) -> io::Result<File> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(parent)?;
    }
    OpenOptions::new().create(true).append(true).open(path)
}

fn minimal_env() -> Vec<(&'static str, std::ffi::OsString)> {
    let mut env: Vec<_> =
        INHERITED_ENV.iter().filter_map(|&name| std::env::var_os(name).map(|value| (name, value))).collect();
    if !env.iter().any(|(name, _)| *name == "PATH") {
        env.push(("PATH", FALLBACK_PATH.into()));
    }
    env
}

fn spawn_error(spec: &ProcessSpec, program: String, source: io::Error) -> ProcessError {
    match source.kind() {
        // The cwd was checked before the spawn, but may have vanished since.
        io::ErrorKind::NotFound if spec.cwd.as_ref().is_some_and(|cwd| !cwd.is_dir()) => {
            ProcessError::CwdMissing { cwd: spec.cwd.clone().unwrap_or_default() }
        }
        io::ErrorKind::NotFound => ProcessError::ProgramNotFound { program },
        io::ErrorKind::PermissionDenied => ProcessError::ProgramNotExecutable { program },
        _ => ProcessError::Spawn { program, source },
    }
}

/// Resolves when the process `pid` (our child) has exited, without reaping it: the zombie
/// keeps its pid, and with it the process group id, reserved until [`reap`].
fn watch_leader_exit(pid: u32) -> io::Result<oneshot::Receiver<()>> {
    // A pidfd turns readable when the process exits, without reaping it: no thread needed.
    // Kernels before 5.3 have none; then a thread waits.
    match watch_with_pidfd(pid) {
        Ok(rx) => Ok(rx),
        Err(_) => watch_with_thread(pid),
    }
}

fn watch_with_thread(pid: u32) -> io::Result<oneshot::Receiver<()>> {
    let (tx, rx) = oneshot::channel();
    std::thread::Builder::new().name(format!("orrery-wait-{pid}")).stack_size(64 * 1024).spawn(move || {
        loop {
            // SAFETY: siginfo_t is plain data; waitid writes into it and reads nothing.
            let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
            // SAFETY: a valid pointer to a siginfo_t owned by this frame.
            let rc = unsafe { libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, libc::WEXITED | libc::WNOWAIT) };
            if rc == 0 || io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                // Exited, or no longer our child to wait for (ECHILD): either way over.
                break;
            }
        }
        let _ = tx.send(());
    })?;
    Ok(rx)
}

fn watch_with_pidfd(pid: u32) -> io::Result<oneshot::Receiver<()>> {
    use std::os::fd::{FromRawFd, OwnedFd};
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the descriptor was just created and is owned by nothing else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
    // SAFETY: the AsyncFd owns the OwnedFd, so the descriptor stays open and the same until
    // the AsyncFd is dropped.
    let exited = unsafe { tokio::io::unix::AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE) }
        .map_err(|e| e.into_parts().1)?;
    let (tx, rx) = oneshot::channel();
    tokio::spawn(async move {
        // Readable means exited; an error means the same for our purpose (nothing to wait on).
        let _ = exited.readable().await;
        let _ = tx.send(());
    });
    Ok(rx)
}

#[derive(Debug, Clone, Copy)]
enum StopReason {
    Cancelled,
    TimedOut,
}

async fn supervise_group(
    pgid: i32,
    mut leader_exited: oneshot::Receiver<()>,
    cancel: Arc<CancelRequest>,
    deadline: Option<Instant>,
    grace: Duration,
    started: Instant,
) -> Finished {
    let timeout = async {
        match deadline {
            Some(deadline) => tokio::time::sleep_until(deadline.into()).await,
            None => std::future::pending().await,
        }
    };
    // An exit that lands together with a cancel or the deadline counts as the leader's own.
    let stop = tokio::select! {
        biased;
        _ = &mut leader_exited => None,
        _ = cancel.notify.notified() => Some(StopReason::Cancelled),
        _ = timeout => Some(StopReason::TimedOut),
    };
    let group = stop_group(pgid, grace).await;
    if stop.is_some() {
        // After SIGKILL the leader can only exit (unless stuck in the kernel, and then there
        // is nothing to reap yet either).
        let _ = leader_exited.await;
    }
    let status = reap(pgid);
    let exit = match stop {
        Some(StopReason::Cancelled) => Exit::Cancelled,
        Some(StopReason::TimedOut) => Exit::TimedOut,
        None => status,
    };
    Finished { exit, duration: started.elapsed(), group }
}

/// Stops every live member of the group: SIGTERM, up to `grace` for all to exit, then SIGKILL
/// and a short bounded wait. The leader, if it exited, is a zombie here and does not count.
async fn stop_group(pgid: i32, grace: Duration) -> GroupCleanup {
    if procfs::live_group_members(pgid).is_empty() {
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

/// Reaps our child `pid`, which has exited (so this does not block), and decodes its status.
fn reap(pid: i32) -> Exit {
    let mut status: libc::c_int = 0;
    loop {
        // SAFETY: a valid pointer to a c_int owned by this frame.
        let rc = unsafe { libc::waitpid(pid, &mut status, 0) };
        if rc == pid {
            break;
        }
        if rc == -1 && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
            continue;
        }
        // ECHILD: someone else reaped it; its status is lost.
        return Exit::Signalled { signal: 0 };
    }
    if libc::WIFEXITED(status) {
        Exit::Exited { code: libc::WEXITSTATUS(status) }
    } else {
        Exit::Signalled { signal: libc::WTERMSIG(status) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both ways of seeing a leader's exit leave it a zombie until [`reap`].
    #[tokio::test]
    async fn the_pidfd_and_the_thread_both_see_an_exit_without_reaping_it() {
        for watch in [watch_with_pidfd, watch_with_thread] {
            let child = Command::new("/bin/sh").args(["-c", "exit 3"]).spawn().unwrap();
            let pid = child.id();
            drop(child);
            let exited = watch(pid).expect("the exit can be watched");
            tokio::time::timeout(Duration::from_secs(10), exited).await.expect("seen in time").unwrap();
            let stat = procfs::read_stat(pid as i32).expect("still in the process table");
            assert!(stat.has_exited(), "a zombie, not reaped yet");
            assert!(matches!(reap(pid as i32), Exit::Exited { code: 3 }));
        }
    }
}
