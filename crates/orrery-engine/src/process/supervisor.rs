//! The supervisor: a small process between the engine and each task process, so that the
//! task's outcome survives the engine's death (issue 16, item 3).
//!
//! The engine's spawner forks it (`spawner.rs`; the engine itself when there is none), with no
//! exec: it works the same in `orrery`, `orrery serve`, the desktop app and a test binary. It
//! starts the task (a `clone` that shares its memory until the exec, as vfork does), copies the
//! task's output from a pipe to the attempt's log (up to the log cap; the log is created at the
//! first byte of output, so a task that writes nothing leaves no file), and when the task's
//! leader exits it records that exit: one line ([`ExitRecord`]) appended to its folder's
//! records file ([`RECORDS_FILE`]) in a single write, named by the attempt's stem and run id,
//! after the line the engine appended as it started the process ([`record_start`]: an earlier
//! record under the stem is never taken for this one's). No file is created per task: creating
//! and renaming one was about a fifth of all CPU on a fan-out of `true` tasks (ext4 without a
//! journal). Each line begins and ends with a newline: a line a crash cut short stays alone and
//! does not spoil the next. The line is not fsynced: it must outlive the
//! engine's death, which the page cache does, not a power cut, which kills the task too (a task
//! whose record a power cut lost is `unknown` and runs again, as the store's
//! `Synchronous::Normal` writes of an attempt's process). The engine, while it lives, is told
//! everything over a status pipe and settles from it; recovery reads the record. When the
//! engine dies the supervisor goes on alone; a later runner reads the record, or adopts the
//! task while its supervisor lives.
//!
//! Rules, because it is the child of a fork of a multi-threaded process:
//! - it calls only async-signal-safe functions (raw system calls: `clone`, `execve`, `poll`,
//!   `read`, `write`, `waitid`, `waitpid`, `open`, `fstat`, `close`, `dup2`, `memfd_create`,
//!   `rt_sigaction`, `clock_gettime`, `_exit`), never allocates, formats or panics: everything it
//!   needs (paths, argv, environment, the copy buffer, the task child's stack) is prepared
//!   beforehand ([`Prepared`]);
//! - first thing, it resets every signal to its default (a handler of the engine's would run
//!   here on closed descriptors), ignores SIGPIPE (the engine's end of the status pipe may be
//!   gone), leads a process group of its own (a Ctrl-C to the terminal's group does not reach
//!   it), points its stdin, stdout and stderr at `/dev/null` (it must not keep the engine's
//!   terminal or pipe open) and closes every other descriptor it inherited but its own;
//! - it is a subreaper (`PR_SET_CHILD_SUBREAPER`): a process of the task's tree whose parent
//!   ends becomes its child, not init's, so the engine finds what is left of the task's group
//!   by reading down its tree rather than every process of the system; those orphans go to
//!   init when it ends;
//! - while it lives it holds a memory file named by its log ([`log_mark`]): how recovery tells
//!   which attempt a supervisor runs once the task's leader has exited (a zombie's environment,
//!   which names its run, cannot be read) and before its record is written, whether or not the
//!   task wrote a log;
//! - the task's leader is reaped only once the record is written and the engine has let go
//!   (it closed the control pipe, or died): until then the leader is a zombie, so its pid, which
//!   is also its process group id, cannot be reused while the engine signals the group; and
//!   whoever sees the leader gone knows its record was written, if it ever will be;
//! - when the leader exits and nothing else of the task is left (its output at its end, the
//!   leader its only child), it writes the record at once, before it tells the engine of the
//!   exit: the engine has no group to stop and settles without another word of it (a cancel
//!   it sends after that is not in the record: the leader had ended by itself). Otherwise the
//!   record waits until the engine has stopped what is left and let go.
//!
//! Messages on the status pipe, 17 bytes each (a tag and two little-endian i64): `P pid` the
//! task runs (its exec succeeded); `F phase errno` it could not start (nothing is left running
//! and the supervisor ends); `X kind value` the leader exited (kind 0: exit code, 1: signal);
//! `L written dropped` what the log took; `R errno` the record was written (0) or not. `L` and
//! `R` come before `X` when nothing of the task was left at its leader's exit, else after. On the
//! control pipe the engine writes one byte before it stops the group on purpose, `C` (a
//! cancel) or `T` (a timeout), which the record keeps (`stopped`): a recovery must not take a
//! process its runner killed for one that failed by itself.

use std::ffi::CString;
use std::io;
use std::path::Path;

/// The name a supervisor gives itself (`/proc/PID/comm`): how recovery knows a live task
/// process still has its supervisor (its parent).
pub const SUPERVISOR_NAME: &str = "orrery-supervis";

pub(super) const MSG_LEN: usize = 17;
pub(super) const TAG_STARTED: u8 = b'P';
pub(super) const TAG_FAILED: u8 = b'F';
pub(super) const TAG_EXITED: u8 = b'X';
pub(super) const TAG_LOG: u8 = b'L';
pub(super) const TAG_RECORDED: u8 = b'R';

/// What the engine writes on the control pipe before it stops the group on purpose.
pub(super) const CONTROL_CANCEL: u8 = b'C';
pub(super) const CONTROL_TIMEOUT: u8 = b'T';

/// Where a start failed (the first value of `F`).
pub(super) const PHASE_SETUP: i64 = 1;
pub(super) const PHASE_CWD: i64 = 2;
pub(super) const PHASE_EXEC: i64 = 3;

/// The name of the memory file a supervisor holds while it lives, shown in `/proc/PID/fd` as
/// `/memfd:NAME (deleted)` (see the module notes): `orrery-log-` and a hash of its log's
/// absolute path (FNV-1a, 64 bits: a path can be longer than a name; the same in every build,
/// so that a later runner knows an earlier one's supervisors).
pub(super) fn log_mark(log: &[u8]) -> CString {
    let hash = log.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
    CString::new(format!("orrery-log-{hash:016x}")).unwrap_or_default()
}

/// The file of a folder's exit records, a line each (see the module notes).
pub const RECORDS_FILE: &str = "exits.jsonl";

/// The exit record of builds before [`RECORDS_FILE`]: a file of its own, `STEM.exit`, still
/// read so that a run such a build left behind recovers.
const OLD_RECORD_SUFFIX: &str = ".exit";

/// The durable record of a leader's exit (see the module notes).
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
pub struct ExitRecord {
    pub version: u32,
    /// The name of the attempt's stem (its files' common prefix) whose exit it is; absent from
    /// the records of older builds, one file per stem.
    #[serde(default)]
    pub attempt: Option<String>,
    /// The leader's pid.
    pub leader: u32,
    /// Its exit code when it exited by itself.
    pub code: Option<i32>,
    /// The signal that ended it, otherwise.
    pub signal: Option<i32>,
    /// When the supervisor saw it exit, in milliseconds since the epoch.
    pub ended_ms: i64,
    /// Bytes of output written to the log, and dropped past the cap.
    pub log_bytes: u64,
    pub log_dropped: u64,
    pub log_cap: u64,
    /// `"cancelled"` or `"timed_out"` when the engine stopped the group on purpose.
    #[serde(default)]
    pub stopped: Option<String>,
    /// Whose exit it is ([`crate::process::ProcessSpec::record_id`]: the attempt's run id): a
    /// record another attempt left under the same name is not taken for this one's.
    #[serde(default)]
    pub run_id: Option<String>,
}

impl ExitRecord {
    /// Whether the record is the exit of `run_id`'s process (a record naming none is).
    fn is_of(&self, run_id: &str) -> bool {
        self.run_id.as_deref().is_none_or(|id| id == run_id)
    }
}

/// The records file and the name of the attempt whose files are named `stem`.
fn record_place(stem: &Path) -> io::Result<(std::path::PathBuf, String)> {
    let stem = std::path::absolute(stem)?;
    let name = stem.file_name().and_then(|n| n.to_str()).map(str::to_string);
    let name = name.ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "an attempt's stem names no file"))?;
    Ok((stem.with_file_name(RECORDS_FILE), name))
}

/// The names a line of the records file carries: `,"attempt":"...","run_id":"..."` (each
/// when known).
fn names(attempt: Option<&str>, run_id: Option<&str>) -> String {
    let field = |key: &str, value: Option<&str>| {
        value.map(|v| format!(",\"{key}\":{}", serde_json::Value::String(v.to_string()))).unwrap_or_default()
    };
    field("attempt", attempt) + &field("run_id", run_id)
}

/// Says in the records file that a process is started under `stem` (as `run_id`): from now on,
/// until its exit is recorded, an earlier record under that name is not taken for its own (a
/// stem is used again when a runner died before it stored the attempt it had started).
pub fn record_start(stem: &Path, run_id: Option<&str>) -> io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let (path, name) = record_place(stem)?;
    let line = format!("\n{{\"version\":2{},\"began\":true}}\n", names(Some(&name), run_id));
    let mut file = std::fs::OpenOptions::new().append(true).create(true).custom_flags(libc::O_NOFOLLOW).open(path)?;
    // One write: appends of whole lines do not interleave.
    file.write_all(line.as_bytes())
}

/// The exit record of the process started under `stem` (as `run_id` when given): the last line
/// of its folder's records file that names it, unless that line says a process was started
/// since (then `Ok(None)`); else the record file an older build wrote for it. `Ok(None)` when
/// there is none (yet); a line that names it but is no record is an error naming the file.
pub fn read_record(stem: &Path, run_id: Option<&str>) -> Result<Option<ExitRecord>, String> {
    let (path, name) =
        record_place(stem).map_err(|e| format!("cannot place the exit record of {}: {e}", stem.display()))?;
    let named = names(Some(&name), None);
    let run = names(None, run_id);
    let wanted = |line: &[u8]| {
        contains(line, &named.as_bytes()[1..]) && (run.is_empty() || contains(line, &run.as_bytes()[1..]))
    };
    let line = match last_line(&path, LINE_BLOCK, wanted) {
        Ok(line) => line,
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(format!("cannot read the exit record {}: {e}", path.display())),
    };
    let (path, line) = match line {
        Some(line) => {
            #[derive(serde::Deserialize)]
            struct Began {
                began: bool,
            }
            if serde_json::from_slice::<Began>(&line).is_ok_and(|line| line.began) {
                return Ok(None);
            }
            (path, line)
        }
        None => {
            let mut old = stem.as_os_str().to_owned();
            old.push(OLD_RECORD_SUFFIX);
            let old = std::path::PathBuf::from(old);
            match std::fs::read(&old) {
                Ok(bytes) => (old, bytes),
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
                Err(e) => return Err(format!("cannot read the exit record {}: {e}", old.display())),
            }
        }
    };
    let record: ExitRecord = serde_json::from_slice(&line)
        .map_err(|e| format!("the exit record {} is not a valid record: {e}", path.display()))?;
    if record.code.is_none() == record.signal.is_none() {
        return Err(format!("the exit record {} names neither an exit code nor a signal", path.display()));
    }
    Ok(Some(record).filter(|record| run_id.is_none_or(|id| record.is_of(id))))
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|window| window == needle)
}

/// How much of a records file is read at a time, from its end; also the longest line taken (a
/// record is some hundreds of bytes: a longer line is not one).
const LINE_BLOCK: usize = 64 * 1024;

/// The last line of the file at `path` that is `wanted`, read backwards `block` bytes at a time:
/// the lines looked for are the newest, so a long session's records cost what was written since
/// the process looked for started, and memory stays within two blocks however long the file.
/// A line longer than `block` is passed over.
fn last_line(path: &Path, block: usize, wanted: impl Fn(&[u8]) -> bool) -> io::Result<Option<Vec<u8>>> {
    use std::os::unix::fs::FileExt;
    let file = std::fs::File::open(path)?;
    let mut end = file.metadata()?.len();
    // The part read so far of the line that ends where the last block began; `skipping` when
    // that line is longer than a block.
    let mut carry: Vec<u8> = Vec::new();
    let mut skipping = false;
    while end > 0 {
        let start = end.saturating_sub(block as u64);
        let mut bytes = vec![0; (end - start) as usize];
        file.read_exact_at(&mut bytes, start)?;
        end = start;
        let Some(first) = bytes.iter().position(|&b| b == b'\n') else {
            if !skipping {
                bytes.extend_from_slice(&carry);
                carry = bytes;
            }
            if carry.len() > block {
                carry.clear();
                skipping = true;
            }
            continue;
        };
        // The block's last line goes on into the carried part.
        let mut lines = bytes[first + 1..].rsplit(|&b| b == b'\n');
        if let Some(last) = lines.next() {
            let line = [last, &carry].concat();
            if !skipping && line.len() <= block && wanted(&line) {
                return Ok(Some(line));
            }
        }
        if let Some(line) = lines.find(|line| wanted(line)) {
            return Ok(Some(line.to_vec()));
        }
        carry = bytes[..first].to_vec();
        skipping = false;
    }
    Ok((!skipping && !carry.is_empty() && wanted(&carry)).then_some(carry))
}

/// Everything the supervisor and the task's child need, prepared before the fork.
pub(super) struct Prepared {
    pub program: CString,
    /// Owned here; `argv_ptrs` points into them.
    pub argv: Vec<CString>,
    pub argv_ptrs: Vec<*const libc::c_char>,
    /// Owned here; `envp_ptrs` points into them.
    pub envp: Vec<CString>,
    pub envp_ptrs: Vec<*const libc::c_char>,
    pub cwd: Option<CString>,
    /// The attempt's log, created at the task's first output.
    pub log: CString,
    /// The name of the memory file the supervisor holds while it lives ([`log_mark`]).
    pub mark: CString,
    /// The records file the exit is appended to.
    pub record: Option<CString>,
    /// The record's names: `,"attempt":"...","run_id":"..."` (each when known).
    pub record_names: Vec<u8>,
    pub log_cap: u64,
    /// The task gets back the transparent huge pages its engine turned off for itself
    /// (`process::without_huge_pages`).
    pub huge_pages_back: bool,
    /// Empty until [`Prepared::with_buffers`] or given.
    pub buffers: Buffers,
}

/// The memory the supervisor copies and formats in (it cannot allocate) and the task's child's
/// stack until its exec. Their bytes are never read before they are written: the spawner lends
/// the same to every supervisor it forks (each has its own copy), zeroed once.
#[derive(Default)]
pub(super) struct Buffers {
    pub buf: Vec<u8>,
    pub scratch: Vec<u8>,
    pub stack: Vec<u8>,
}

impl Buffers {
    pub fn new() -> Buffers {
        Buffers {
            buf: vec![0; 64 * 1024],
            // The record's line: its names are a file name (at most 255 bytes) and a run id,
            // escaped.
            scratch: vec![0; 2048],
            stack: vec![0; 256 * 1024],
        }
    }
}

// SAFETY: the raw pointers point into the CStrings the struct owns; it is only moved, never
// shared across threads while in use.
unsafe impl Send for Prepared {}

fn cstring(bytes: impl Into<Vec<u8>>) -> io::Result<CString> {
    CString::new(bytes).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL byte in a path or argument"))
}

impl Prepared {
    /// What runs `spec` with the program found for it (`program`), its `argv` and its whole
    /// environment.
    pub fn new(
        program: &Path,
        argv: &[String],
        env: &[(std::ffi::OsString, std::ffi::OsString)],
        spec: &super::ProcessSpec,
    ) -> io::Result<Prepared> {
        use std::os::unix::ffi::{OsStrExt, OsStringExt};
        let program = cstring(program.as_os_str().as_bytes())?;
        let argv: Vec<CString> = argv.iter().map(|a| cstring(a.as_bytes())).collect::<io::Result<_>>()?;
        let envp: Vec<CString> = env
            .iter()
            .map(|(k, v)| {
                let mut entry = k.as_bytes().to_vec();
                entry.push(b'=');
                entry.extend_from_slice(v.as_bytes());
                cstring(entry)
            })
            .collect::<io::Result<_>>()?;
        let cwd = spec.cwd.as_ref().map(|c| cstring(c.as_os_str().as_bytes())).transpose()?;
        let log = cstring(std::path::absolute(&spec.log_path)?.into_os_string().into_vec())?;
        let (record, record_names) = match &spec.exit_record {
            None => (None, Vec::new()),
            Some(stem) => {
                let (path, name) = record_place(stem)?;
                let names = names(Some(&name), spec.record_id.as_deref()).into_bytes();
                (Some(cstring(path.as_os_str().as_bytes())?), names)
            }
        };
        let mut prepared = Prepared::assemble(program, argv, envp, cwd, log, record, record_names, spec.log_cap);
        prepared.huge_pages_back = super::HUGE_PAGES_BACK.load(std::sync::atomic::Ordering::Relaxed);
        Ok(prepared)
    }

    /// The parts, with the null-terminated pointer arrays into argv and envp and the log's mark;
    /// no buffers yet.
    #[allow(clippy::too_many_arguments)]
    fn assemble(
        program: CString,
        argv: Vec<CString>,
        envp: Vec<CString>,
        cwd: Option<CString>,
        log: CString,
        record: Option<CString>,
        record_names: Vec<u8>,
        log_cap: u64,
    ) -> Prepared {
        let pointers = |items: &[CString]| -> Vec<*const libc::c_char> {
            items.iter().map(|a| a.as_ptr()).chain([std::ptr::null()]).collect()
        };
        Prepared {
            argv_ptrs: pointers(&argv),
            envp_ptrs: pointers(&envp),
            program,
            argv,
            envp,
            cwd,
            mark: log_mark(log.as_bytes()),
            log,
            record,
            record_names,
            log_cap,
            huge_pages_back: false,
            buffers: Buffers::default(),
        }
    }

    /// With the buffers the supervisor copies and formats in (it cannot allocate): made only
    /// where it is forked.
    pub fn with_buffers(mut self) -> Prepared {
        self.buffers = Buffers::new();
        self
    }

    /// What the spawner is sent: each field as a little-endian u32 length and its bytes (the
    /// program, argv and envp as a count then their items, the cwd, the log, the record and its
    /// names), the log cap as a u64, then whether the task gets its huge pages back as a byte;
    /// an absent cwd or record is an empty field. The mark (made from the log) and the buffers
    /// are not sent.
    pub fn to_wire(&self) -> Vec<u8> {
        fn field(out: &mut Vec<u8>, bytes: &[u8]) {
            out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
            out.extend_from_slice(bytes);
        }
        let mut out = Vec::with_capacity(4096);
        field(&mut out, self.program.as_bytes());
        for list in [&self.argv, &self.envp] {
            out.extend_from_slice(&(list.len() as u32).to_le_bytes());
            for item in list.iter() {
                field(&mut out, item.as_bytes());
            }
        }
        field(&mut out, self.cwd.as_ref().map_or(&[][..], |c| c.as_bytes()));
        field(&mut out, self.log.as_bytes());
        field(&mut out, self.record.as_ref().map_or(&[][..], |r| r.as_bytes()));
        field(&mut out, &self.record_names);
        out.extend_from_slice(&self.log_cap.to_le_bytes());
        out.push(u8::from(self.huge_pages_back));
        out
    }

    /// What [`Prepared::to_wire`] wrote, without buffers; `None` for anything else.
    pub fn from_wire(mut wire: &[u8]) -> Option<Prepared> {
        fn take<'a>(wire: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
            let (head, rest) = wire.split_at_checked(n)?;
            *wire = rest;
            Some(head)
        }
        fn number(wire: &mut &[u8]) -> Option<usize> {
            Some(u32::from_le_bytes(take(wire, 4)?.try_into().ok()?) as usize)
        }
        fn field<'a>(wire: &mut &'a [u8]) -> Option<&'a [u8]> {
            let n = number(wire)?;
            take(wire, n)
        }
        fn list(wire: &mut &[u8]) -> Option<Vec<CString>> {
            let n = number(wire)?;
            // Each item takes 4 bytes at least: a count beyond that is a lie, not an allocation.
            if n > wire.len() / 4 {
                return None;
            }
            (0..n).map(|_| CString::new(field(wire)?).ok()).collect()
        }
        let optional = |bytes: &[u8]| if bytes.is_empty() { Ok(None) } else { CString::new(bytes).map(Some) };
        let program = CString::new(field(&mut wire)?).ok()?;
        let argv = list(&mut wire)?;
        let envp = list(&mut wire)?;
        let cwd = optional(field(&mut wire)?).ok()?;
        let log = CString::new(field(&mut wire)?).ok()?;
        let record = optional(field(&mut wire)?).ok()?;
        let record_names = field(&mut wire)?.to_vec();
        let log_cap = u64::from_le_bytes(take(&mut wire, 8)?.try_into().ok()?);
        let huge_pages_back = match take(&mut wire, 1)? {
            [0] => false,
            [1] => true,
            _ => return None,
        };
        if !wire.is_empty() || argv.is_empty() || log.is_empty() {
            return None;
        }
        let mut prepared = Prepared::assemble(program, argv, envp, cwd, log, record, record_names, log_cap);
        prepared.huge_pages_back = huge_pages_back;
        Some(prepared)
    }
}

/// The descriptors the supervisor keeps (all opened by the engine with `O_CLOEXEC`).
#[derive(Clone, Copy)]
pub(super) struct Fds {
    pub devnull: i32,
    pub status: i32,
    pub control: i32,
}

// ---- everything below runs in the forked supervisor or the task's child: no allocation ----

fn errno() -> i32 {
    // SAFETY: __errno_location returns this thread's errno slot.
    unsafe { *libc::__errno_location() }
}

unsafe fn write_all(fd: i32, mut data: &[u8]) -> bool {
    while !data.is_empty() {
        let n = libc::write(fd, data.as_ptr().cast(), data.len());
        if n < 0 {
            if errno() == libc::EINTR {
                continue;
            }
            return false;
        }
        data = &data[n as usize..];
    }
    true
}

unsafe fn send(fd: i32, tag: u8, a: i64, b: i64) {
    let mut msg = [0u8; MSG_LEN];
    msg[0] = tag;
    msg[1..9].copy_from_slice(&a.to_le_bytes());
    msg[9..17].copy_from_slice(&b.to_le_bytes());
    // The engine may be gone (EPIPE, SIGPIPE ignored): nothing to do about it.
    write_all(fd, &msg);
}

/// Closes every descriptor but `keep` (at most 8, any order).
unsafe fn close_all_except(keep: &[i32]) {
    let mut sorted = [0i32; 8];
    let n = keep.len().min(8);
    sorted[..n].copy_from_slice(&keep[..n]);
    // Insertion sort: no allocation.
    for i in 1..n {
        let mut j = i;
        while j > 0 && sorted[j - 1] > sorted[j] {
            sorted.swap(j - 1, j);
            j -= 1;
        }
    }
    let mut from: u32 = 0;
    for &fd in &sorted[..n] {
        let fd = fd as u32;
        if fd > from {
            close_range(from, fd - 1);
        }
        from = fd + 1;
    }
    close_range(from, u32::MAX);
}

unsafe fn close_range(first: u32, last: u32) {
    if libc::syscall(libc::SYS_close_range, first, last, 0) == 0 {
        return;
    }
    // Kernels before 5.9: one by one, up to the descriptor limit.
    let mut limit: libc::rlimit = std::mem::zeroed();
    let max =
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 { limit.rlim_cur.min(1 << 20) as u32 } else { 1024 };
    let mut fd = first;
    while fd <= last && fd < max {
        libc::close(fd as i32);
        fd += 1;
    }
}

/// The kernel's `struct sigaction` (what `rt_sigaction` takes; libc's differs).
#[repr(C)]
struct KernelSigaction {
    handler: libc::sighandler_t,
    flags: libc::c_ulong,
    restorer: usize,
    mask: u64,
}

/// Every signal to its default and none blocked. By the system call itself: glibc's `sigaction`
/// refuses the two signals it keeps for itself (32 and 33), which an engine may have ignored
/// and a task would then inherit ignored.
unsafe fn reset_signals() {
    let default = KernelSigaction { handler: libc::SIG_DFL, flags: 0, restorer: 0, mask: 0 };
    for signal in 1..=64 {
        if signal != libc::SIGKILL && signal != libc::SIGSTOP {
            let none: *mut KernelSigaction = std::ptr::null_mut();
            libc::syscall(libc::SYS_rt_sigaction, signal, &default as *const KernelSigaction, none, 8usize);
        }
    }
    let mut empty: libc::sigset_t = std::mem::zeroed();
    libc::sigemptyset(&mut empty);
    libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
}

fn now_ms() -> i64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid pointer to a timespec owned by this frame.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts.tv_sec * 1000 + ts.tv_nsec / 1_000_000
}

/// Appends `text` to `out` at `*at`; false when it does not fit.
fn put(out: &mut [u8], at: &mut usize, text: &[u8]) -> bool {
    if *at + text.len() > out.len() {
        return false;
    }
    out[*at..*at + text.len()].copy_from_slice(text);
    *at += text.len();
    true
}

fn put_int(out: &mut [u8], at: &mut usize, value: i64) -> bool {
    let mut digits = [0u8; 24];
    let mut n = digits.len();
    let negative = value < 0;
    let mut v = value.unsigned_abs();
    loop {
        n -= 1;
        digits[n] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    if negative {
        n -= 1;
        digits[n] = b'-';
    }
    put(out, at, &digits[n..])
}

/// What the task's child is started with ([`task_child`]).
struct TaskChild<'a> {
    prepared: &'a Prepared,
    out_w: i32,
    error_fd: i32,
}

/// The task's child, on its own stack in the supervisor's memory: it changes only what is its
/// own (its descriptors, signal dispositions and folder are copies) and execs or exits.
extern "C" fn task_child(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the TaskChild of the supervisor's frame, which waits until this execs.
    unsafe {
        let child = &*(arg as *const TaskChild);
        exec_task(child.prepared, child.out_w, child.error_fd)
    }
}

/// The task's child: its own group, default signals, output to the pipe, then exec. Reports
/// a failure as (phase, errno) on `error_fd` and exits 127.
unsafe fn exec_task(p: &Prepared, out_w: i32, error_fd: i32) -> ! {
    libc::setpgid(0, 0);
    // The supervisor reset every signal and its mask before it started this child: only the
    // SIGPIPE it ignores is left to undo (an ignored signal stays ignored across the exec), one
    // call rather than 62.
    libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    let fail = |phase: i64| -> ! {
        let mut msg = [0u8; 16];
        msg[..8].copy_from_slice(&phase.to_le_bytes());
        msg[8..].copy_from_slice(&(errno() as i64).to_le_bytes());
        write_all(error_fd, &msg);
        libc::_exit(127)
    };
    if libc::dup2(out_w, 1) < 0 || libc::dup2(out_w, 2) < 0 {
        fail(PHASE_SETUP);
    }
    close_all_except(&[0, 1, 2, error_fd]);
    if p.huge_pages_back {
        // On the memory this child shares with its supervisor until the exec, which keeps the
        // flag for the task's own: the supervisor, which allocates nothing, loses nothing by it.
        libc::prctl(libc::PR_SET_THP_DISABLE, 0, 0, 0, 0);
    }
    if let Some(cwd) = &p.cwd {
        if libc::chdir(cwd.as_ptr()) != 0 {
            fail(PHASE_CWD);
        }
    }
    libc::execve(p.program.as_ptr(), p.argv_ptrs.as_ptr(), p.envp_ptrs.as_ptr());
    fail(PHASE_EXEC)
}

/// The log as the supervisor writes it: what was written, what the cap dropped.
struct LogCopy<'a> {
    path: &'a CString,
    /// Not opened yet: -1; could not be: -2.
    fd: i32,
    cap: u64,
    written: u64,
    dropped: u64,
    last: u8,
}

impl LogCopy<'_> {
    unsafe fn take(&mut self, data: &[u8]) {
        let room = self.cap.saturating_sub(self.written);
        let n = (data.len() as u64).min(room) as usize;
        if n > 0 && self.write(&data[..n]) {
            self.written += n as u64;
            self.last = data[n - 1];
        }
        self.dropped += (data.len() - n) as u64;
    }

    /// Appends `data`, opening the log the first time: for appending, as a regular file only
    /// (a link or a FIFO left in its place is refused rather than followed or waited on). What
    /// cannot be written is lost, as after a failed write.
    unsafe fn write(&mut self, data: &[u8]) -> bool {
        if self.fd == -1 {
            let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_APPEND | libc::O_NOFOLLOW | libc::O_NONBLOCK;
            let fd = libc::open(self.path.as_ptr(), flags | libc::O_CLOEXEC, 0o666);
            let mut stat: libc::stat = std::mem::zeroed();
            self.fd = if fd < 0 {
                -2
            } else if libc::fstat(fd, &mut stat) != 0 || stat.st_mode & libc::S_IFMT != libc::S_IFREG {
                libc::close(fd);
                -2
            } else {
                fd
            };
        }
        self.fd >= 0 && write_all(self.fd, data)
    }

    /// Reads what the pipe holds now (it is non-blocking); false once it is at its end.
    unsafe fn drain(&mut self, pipe: i32, buf: &mut [u8]) -> bool {
        loop {
            let n = libc::read(pipe, buf.as_mut_ptr().cast(), buf.len());
            if n > 0 {
                self.take(&buf[..n as usize]);
                continue;
            }
            if n == 0 {
                return false;
            }
            return match errno() {
                libc::EINTR => continue,
                libc::EAGAIN => true,
                _ => false,
            };
        }
    }

    /// The one note past the cap: how much was dropped.
    unsafe fn note(&mut self, scratch: &mut [u8]) {
        if self.dropped == 0 {
            return;
        }
        let mut at = 0;
        let ok = (self.last == b'\n' || self.written == 0 || put(scratch, &mut at, b"\n"))
            && put(scratch, &mut at, b"orrery: this attempt's log reached its cap of ")
            && put_int(scratch, &mut at, self.cap as i64)
            && put(scratch, &mut at, b" bytes; the ")
            && put_int(scratch, &mut at, self.dropped as i64)
            && put(scratch, &mut at, b" bytes of output after it were dropped\n");
        if ok {
            self.write(&scratch[..at]);
        }
    }
}

/// The supervisor's life (see the module notes). Never returns.
pub(super) unsafe fn run(p: &mut Prepared, fds: Fds) -> ! {
    reset_signals();
    libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    libc::setpgid(0, 0);
    let mut name = [0u8; 16];
    name[..SUPERVISOR_NAME.len()].copy_from_slice(SUPERVISOR_NAME.as_bytes());
    libc::prctl(libc::PR_SET_NAME, name.as_ptr() as libc::c_ulong, 0, 0, 0);
    // The orphans of the task's tree become its children, not init's: the engine looks for
    // what is left of the task's group below this process (`procfs::live_members_below`).
    libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    libc::dup2(fds.devnull, 0);
    libc::dup2(fds.devnull, 1);
    libc::dup2(fds.devnull, 2);
    close_all_except(&[0, 1, 2, fds.status, fds.control]);
    let status = fds.status;
    // Held until it exits (see the module notes); without it only a log already written tells.
    libc::syscall(libc::SYS_memfd_create, p.mark.as_ptr(), libc::MFD_CLOEXEC);

    let mut out = [0i32; 2];
    let mut err = [0i32; 2];
    if libc::pipe2(out.as_mut_ptr(), libc::O_CLOEXEC) != 0 || libc::pipe2(err.as_mut_ptr(), libc::O_CLOEXEC) != 0 {
        send(status, TAG_FAILED, PHASE_SETUP, errno() as i64);
        libc::_exit(1);
    }
    // The task's child shares this process's memory until its exec (vfork's way: this
    // process waits meanwhile), on a stack of its own: no copy of the page tables to make
    // and tear down for a process that execs at once.
    let mut child = TaskChild { prepared: p, out_w: out[1], error_fd: err[1] };
    let top = p.buffers.stack.as_ptr().add(p.buffers.stack.len()) as usize & !15;
    let leader = libc::clone(
        task_child,
        top as *mut libc::c_void,
        libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
        (&mut child as *mut TaskChild).cast(),
    );
    if leader < 0 {
        send(status, TAG_FAILED, PHASE_SETUP, errno() as i64);
        libc::_exit(1);
    }
    libc::close(out[1]);
    libc::close(err[1]);
    // The exec's result: the error pipe closes (exec succeeded) or brings (phase, errno).
    let mut report = [0u8; 16];
    let mut got = 0usize;
    loop {
        let n = libc::read(err[0], report[got..].as_mut_ptr().cast(), 16 - got);
        if n < 0 && errno() == libc::EINTR {
            continue;
        }
        if n <= 0 {
            break;
        }
        got += n as usize;
        if got == 16 {
            break;
        }
    }
    libc::close(err[0]);
    if got == 16 {
        let mut raw = 0;
        libc::waitpid(leader, &mut raw, 0);
        let phase = i64::from_le_bytes(report[..8].try_into().unwrap_or([0; 8]));
        let code = i64::from_le_bytes(report[8..].try_into().unwrap_or([0; 8]));
        send(status, TAG_FAILED, phase, code);
        libc::_exit(1);
    }
    // With its own pid: a spawner's request is not waited for, so its answer is not heard.
    send(status, TAG_STARTED, leader as i64, libc::getpid() as i64);

    let pipe = out[0];
    libc::fcntl(pipe, libc::F_SETFL, libc::fcntl(pipe, libc::F_GETFL) | libc::O_NONBLOCK);
    let pidfd = libc::syscall(libc::SYS_pidfd_open, leader, 0) as i32;
    let mut log = LogCopy { path: &p.log, fd: -1, cap: p.log_cap, written: 0, dropped: 0, last: b'\n' };
    // Where the record goes (none: not kept), under which names, whose exit it is.
    let whose = (p.record.as_ref(), &p.record_names[..], leader);
    let mut pipe_open = true;
    let mut control_open = true;
    // (kind, value, when): kind 0 an exit code, 1 a signal.
    let mut exited: Option<(i64, i64, i64)> = None;
    // 1: the engine cancelled it, 2: its timeout expired.
    let mut stopped = 0;
    let mut recorded = false;
    loop {
        if exited.is_some() && !control_open {
            break;
        }
        let mut polled = [libc::pollfd { fd: -1, events: libc::POLLIN, revents: 0 }; 3];
        if pipe_open {
            polled[0].fd = pipe;
        }
        if control_open {
            polled[1].fd = fds.control;
        }
        if exited.is_none() && pidfd >= 0 {
            polled[2].fd = pidfd;
        }
        // Without a pidfd (kernels before 5.3) the leader is looked at every 50 ms.
        let timeout = if exited.is_none() && pidfd < 0 { 50 } else { -1 };
        let n = libc::poll(polled.as_mut_ptr(), 3, timeout);
        if n < 0 && errno() != libc::EINTR {
            // Cannot happen with valid descriptors; do not spin.
            libc::usleep(50_000);
        }
        if pipe_open && polled[0].revents != 0 {
            pipe_open = log.drain(pipe, &mut p.buffers.buf);
        }
        if control_open && polled[1].revents != 0 {
            let mut bytes = [0u8; 16];
            let n = libc::read(fds.control, bytes.as_mut_ptr().cast(), bytes.len());
            if n == 0 || (n < 0 && errno() != libc::EINTR && errno() != libc::EAGAIN) {
                control_open = false;
            }
            for &byte in &bytes[..n.max(0) as usize] {
                match byte {
                    CONTROL_CANCEL => stopped = 1,
                    CONTROL_TIMEOUT if stopped == 0 => stopped = 2,
                    _ => {}
                }
            }
        }
        if exited.is_none() {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            let rc = libc::waitid(
                libc::P_PID,
                leader as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
            );
            if rc == 0 && info.si_pid() == leader {
                let (kind, value) = match info.si_code {
                    libc::CLD_EXITED => (0, info.si_status() as i64),
                    _ => (1, info.si_status() as i64),
                };
                let ended = now_ms();
                exited = Some((kind, value, ended));
                if pipe_open {
                    pipe_open = log.drain(pipe, &mut p.buffers.buf);
                }
                // Nothing of the task is left to stop (its output is at its end, the leader is
                // this subreaper's only child): the record is written before the engine hears
                // of the exit, which it can then settle at once.
                if !pipe_open && leader_alone(leader, &mut p.buffers.scratch) {
                    record(&mut p.buffers.scratch, status, &mut log, whose, (kind, value, stopped), ended);
                    recorded = true;
                }
                send(status, TAG_EXITED, kind, value);
            } else if rc != 0 && errno() == libc::ECHILD {
                // Not ours any more (cannot happen: only this process reaps it).
                exited = Some((1, 0, now_ms()));
                send(status, TAG_EXITED, 1, 0);
            }
        }
    }
    if !recorded {
        if pipe_open {
            log.drain(pipe, &mut p.buffers.buf);
        }
        let (kind, value, ended) = exited.unwrap_or((1, 0, now_ms()));
        record(&mut p.buffers.scratch, status, &mut log, whose, (kind, value, stopped), ended);
    }
    // Only now: whoever finds the leader gone knows the record was written.
    let mut raw = 0;
    while libc::waitpid(leader, &mut raw, 0) < 0 && errno() == libc::EINTR {}
    libc::_exit(0)
}

/// The end of the log (the cap's note) and the record: `L`, the record appended to `file` (none:
/// not kept) under `names` as the leader's, `R`.
unsafe fn record(
    scratch: &mut [u8],
    status: i32,
    log: &mut LogCopy,
    (file, names, leader): (Option<&CString>, &[u8], i32),
    exit: (i64, i64, i32),
    ended: i64,
) {
    log.note(scratch);
    send(status, TAG_LOG, log.written as i64, log.dropped as i64);
    let recorded = match file {
        Some(path) => write_record(scratch, path, names, leader, exit, ended, log),
        None => 0,
    };
    send(status, TAG_RECORDED, recorded as i64, 0);
}

/// Whether the leader is this process's only child, so nothing else of the task's tree is left:
/// it is a subreaper, every orphan of the tree is its child. False when its children cannot be
/// listed (a kernel without `/proc/PID/task/TID/children`).
unsafe fn leader_alone(leader: i32, scratch: &mut [u8]) -> bool {
    let mut expected = [0u8; 24];
    let mut want = 0;
    if !(put_int(&mut expected, &mut want, leader as i64) && put(&mut expected, &mut want, b" ")) {
        return false;
    }
    let fd = libc::open(c"/proc/thread-self/children".as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
    if fd < 0 {
        return false;
    }
    let mut got = 0;
    let whole = loop {
        if got == scratch.len() {
            break false;
        }
        match libc::read(fd, scratch[got..].as_mut_ptr().cast(), scratch.len() - got) {
            0 => break true,
            n if n > 0 => got += n as usize,
            _ if errno() == libc::EINTR => {}
            _ => break false,
        }
    };
    libc::close(fd);
    whole && scratch[..got] == expected[..want]
}

/// Appends the record to the records file in one write (no fsync: see the module notes); 0 or
/// the errno of what failed.
#[allow(clippy::too_many_arguments)]
unsafe fn write_record(
    scratch: &mut [u8],
    path: &CString,
    names: &[u8],
    leader: i32,
    (kind, value, stopped): (i64, i64, i32),
    ended: i64,
    log: &LogCopy,
) -> i32 {
    let stopped: &[u8] = match stopped {
        1 => b",\"stopped\":\"cancelled\"",
        2 => b",\"stopped\":\"timed_out\"",
        _ => b"",
    };
    let mut at = 0;
    let ok = put(scratch, &mut at, b"\n{\"version\":2")
        && put(scratch, &mut at, names)
        && put(scratch, &mut at, b",\"leader\":")
        && put_int(scratch, &mut at, leader as i64)
        && put(scratch, &mut at, if kind == 0 { b",\"code\":" } else { b",\"signal\":" })
        && put_int(scratch, &mut at, value)
        && put(scratch, &mut at, b",\"ended_ms\":")
        && put_int(scratch, &mut at, ended)
        && put(scratch, &mut at, b",\"log_bytes\":")
        && put_int(scratch, &mut at, log.written as i64)
        && put(scratch, &mut at, b",\"log_dropped\":")
        && put_int(scratch, &mut at, log.dropped as i64)
        && put(scratch, &mut at, b",\"log_cap\":")
        && put_int(scratch, &mut at, log.cap as i64)
        && put(scratch, &mut at, stopped)
        && put(scratch, &mut at, b"}\n");
    if !ok {
        return libc::E2BIG;
    }
    let fd = libc::open(
        path.as_ptr(),
        libc::O_WRONLY | libc::O_APPEND | libc::O_CREAT | libc::O_CLOEXEC | libc::O_NOFOLLOW,
        0o644,
    );
    if fd < 0 {
        return errno();
    }
    let written = write_all(fd, &scratch[..at]);
    let e = errno();
    libc::close(fd);
    if written {
        0
    } else {
        e
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RECORD: &str = r#"{"version":2,"attempt":"a.attempt-1","run_id":"r1","leader":7,"code":0,"ended_ms":1,"log_bytes":0,"log_dropped":0,"log_cap":9}"#;

    #[test]
    fn the_last_line_naming_the_attempt_is_its_record_and_a_line_cut_short_spoils_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let stem = dir.path().join("a.attempt-1");
        assert_eq!(read_record(&stem, None), Ok(None), "no records file yet");
        let later = RECORD.replace(r#""run_id":"r1""#, r#""run_id":"r2""#).replace(r#""code":0"#, r#""code":4"#);
        let other = RECORD.replace("a.attempt-1", "a.attempt-10");
        // A line a crash cut short, then whole lines (each begins and ends with a newline).
        let text = format!("\n{{\"version\":2,\"attem\n{RECORD}\n\n{later}\n\n{other}\n");
        std::fs::write(dir.path().join(RECORDS_FILE), text).unwrap();
        let record = read_record(&stem, None).unwrap().unwrap();
        assert_eq!((record.run_id.as_deref(), record.code, record.leader), (Some("r2"), Some(4), 7));
        assert_eq!(read_record(&stem, Some("r1")).unwrap().unwrap().code, Some(0), "an earlier run's own");
        assert_eq!(read_record(&stem, Some("r3")), Ok(None), "no line of that run");
        assert_eq!(read_record(&dir.path().join("a.attempt-2"), None), Ok(None), "another stem has none");
        assert_eq!(read_record(&dir.path().join("a.attempt-10"), None).unwrap().unwrap().code, Some(0));
    }

    #[test]
    fn a_process_started_under_the_name_hides_the_records_before_it_until_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let stem = dir.path().join("a.attempt-1");
        std::fs::write(dir.path().join(RECORDS_FILE), format!("\n{RECORD}\n")).unwrap();
        record_start(&stem, Some("r2")).unwrap();
        assert_eq!(read_record(&stem, None), Ok(None), "r2 runs: r1's exit is not its");
        assert_eq!(read_record(&stem, Some("r2")), Ok(None));
        assert_eq!(read_record(&stem, Some("r1")).unwrap().unwrap().code, Some(0), "r1's own is still there");
        let mine = RECORD.replace(r#""run_id":"r1""#, r#""run_id":"r2""#).replace(r#""code":0"#, r#""code":5"#);
        std::fs::OpenOptions::new()
            .append(true)
            .open(dir.path().join(RECORDS_FILE))
            .and_then(|mut f| std::io::Write::write_all(&mut f, format!("\n{mine}\n").as_bytes()))
            .unwrap();
        assert_eq!(read_record(&stem, None).unwrap().unwrap().code, Some(5));
    }

    #[test]
    fn a_file_read_backwards_block_by_block_gives_the_last_wanted_line_as_a_whole_read_would() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lines");
        // Lines of 0 to 30 bytes, some empty, some wanted (holding an `x`), in a pseudo-random mix.
        let mut seed = 7u64;
        let mut next = move |n: u64| {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 33) % n
        };
        for case in 0..200 {
            let lines: Vec<String> =
                (0..next(40)).map(|_| (0..next(31)).map(|_| if next(9) == 0 { 'x' } else { 'a' }).collect()).collect();
            let text = lines.join("\n") + if next(2) == 0 { "\n" } else { "" };
            std::fs::write(&path, &text).unwrap();
            let wanted = |line: &[u8]| line.contains(&b'x');
            let whole = text.as_bytes().split(|&b| b == b'\n').rev().find(|l| wanted(l)).map(<[u8]>::to_vec);
            for block in [31, 32, 45, 64, 1000] {
                assert_eq!(last_line(&path, block, wanted).unwrap(), whole, "case {case}, block {block}: {text:?}");
            }
        }
        // A line longer than a block is no record, wherever it lies.
        let long = format!("{}x{}", "a".repeat(100), "a".repeat(100));
        let cases = [
            (format!("xa\n{long}\nb"), Some(&b"xa"[..])),
            (format!("b\nxa\n{long}"), Some(b"xa")),
            (format!("{long}\nb"), None),
            (long.clone(), None),
        ];
        for (text, expected) in cases {
            std::fs::write(&path, &text).unwrap();
            let found = last_line(&path, 64, |line: &[u8]| line.contains(&b'x')).unwrap();
            assert_eq!(found.as_deref(), expected, "{text}");
        }
    }

    #[test]
    fn a_line_naming_the_attempt_that_is_no_record_is_an_error_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(RECORDS_FILE);
        std::fs::write(&path, format!("\n{}\n", &RECORD[..RECORD.len() - 20])).unwrap();
        let error = read_record(&dir.path().join("a.attempt-1"), Some("r1")).unwrap_err();
        assert!(error.contains(&path.display().to_string()) && error.contains("not a valid record"), "{error}");
        std::fs::write(&path, format!("\n{}\n", RECORD.replace(r#""code":0,"#, ""))).unwrap();
        let error = read_record(&dir.path().join("a.attempt-1"), None).unwrap_err();
        assert!(error.contains("names neither an exit code nor a signal"), "{error}");
    }

    #[test]
    fn a_record_file_of_an_older_build_is_read_when_no_line_names_the_attempt() {
        let dir = tempfile::tempdir().unwrap();
        let old = r#"{"version":1,"leader":7,"signal":9,"ended_ms":1,"log_bytes":0,"log_dropped":0,"log_cap":9,"run_id":"r0"}"#;
        std::fs::write(dir.path().join("a.attempt-1.exit"), old).unwrap();
        let record = read_record(&dir.path().join("a.attempt-1"), Some("r0")).unwrap().unwrap();
        assert_eq!((record.signal, record.attempt, record.run_id.as_deref()), (Some(9), None, Some("r0")));
        assert_eq!(read_record(&dir.path().join("a.attempt-1"), Some("r1")), Ok(None), "another run's");
        std::fs::write(dir.path().join(RECORDS_FILE), format!("\n{RECORD}\n")).unwrap();
        assert_eq!(
            read_record(&dir.path().join("a.attempt-1"), None).unwrap().unwrap().code,
            Some(0),
            "the line first"
        );
    }
}
