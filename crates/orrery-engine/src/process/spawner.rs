//! The spawner: a small process that forks the supervisors, so that the engine never forks
//! itself for a task (issue 22).
//!
//! Forking the engine copied its page tables (tens of MB mapped), made each page the engine
//! wrote while a supervisor lived a copy-on-write fault, and the supervisor's own fork of the
//! task copied them again before its exit tore them down: about half of the CPU of a chain of
//! 1,000 `true` tasks (perf). So the engine starts, once, a process of its own binary
//! (`/proc/self/exe`, small as it has just started), and asks it for each supervisor: the
//! request is what the supervisor needs ([`Prepared::to_wire`]) with its descriptors (the
//! status pipe's write end, the control pipe's read end) over a Unix socket; the answer is
//! the supervisor's pid, which the engine does not wait for ([`Asking::unanswered`]). The rest
//! is unchanged: the supervisor runs the same code, talks to the
//! engine over the same pipes and records the exit the same way, and the status pipe stays the
//! one way the engine learns whether a task started.
//!
//! - The binary becomes the spawner before `main`: a function in `.init_array` finds
//!   [`SOCKET_VAR`] in the environment and serves on that descriptor instead of returning (so it
//!   works in `orrery`, the desktop app and test binaries alike). The engine checks it did with
//!   a greeting before it asks for anything.
//! - The spawner leads a process group of its own (a Ctrl-C at the terminal is the engine's to
//!   handle), holds nothing of the engine's open but the socket (stdin, stdout and stderr are
//!   `/dev/null`: a reader of the engine's output is not kept waiting by it), lets the kernel
//!   reap the supervisors (SIGCHLD ignored; a supervisor resets it for its task) and ends when
//!   the socket closes: the engine ended or died. Supervisors go on without it, as they go on
//!   without the engine.
//! - When the spawner cannot be started or has gone, the engine forks supervisors itself, as
//!   before. `ORRERY_SPAWNER=off` asks for that (the benchmark's column without it).

use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use super::supervisor::{self, Prepared};

/// The variable that makes a process the spawner, serving on the descriptor it names.
pub const SOCKET_VAR: &str = "ORRERY_SPAWNER_SOCKET";

/// What the spawner says first.
const GREETING: &[u8] = b"orrery-spawner 2";

/// The largest request: what does not fit is spawned by the engine itself.
const MAX_REQUEST: usize = 128 * 1024;

/// How long the engine waits for the spawner's greeting or answer before it does without it.
pub(super) const PATIENCE: Duration = Duration::from_secs(10);

/// The descriptors of a request: status pipe (write end), control pipe (read end).
const FDS: usize = 2;

#[used]
#[link_section = ".init_array"]
static BECOME_SPAWNER: extern "C" fn(libc::c_int, *const *const libc::c_char, *const *const libc::c_char) =
    become_spawner;

/// Runs before `main` (glibc passes the environment): serves as the spawner and exits when
/// [`SOCKET_VAR`] names a socket; returns at once otherwise.
extern "C" fn become_spawner(_argc: libc::c_int, _argv: *const *const libc::c_char, envp: *const *const libc::c_char) {
    if envp.is_null() {
        return;
    }
    let prefix = SOCKET_VAR.as_bytes();
    let mut at = envp;
    // SAFETY: glibc's environment: a null-terminated array of NUL-terminated strings.
    unsafe {
        while !(*at).is_null() {
            let entry = std::ffi::CStr::from_ptr(*at).to_bytes();
            if let Some(value) = entry.strip_prefix(prefix).and_then(|rest| rest.strip_prefix(b"=")) {
                let fd = std::str::from_utf8(value).ok().and_then(|v| v.parse::<RawFd>().ok());
                let mut stat: libc::stat = std::mem::zeroed();
                if let Some(fd) = fd.filter(|&fd| libc::fstat(fd, &mut stat) == 0) {
                    if stat.st_mode & libc::S_IFMT == libc::S_IFSOCK {
                        serve(fd);
                    }
                }
                return;
            }
            at = at.add(1);
        }
    }
}

/// The spawner's life (see the module notes). Never returns.
unsafe fn serve(socket: RawFd) -> ! {
    libc::prctl(libc::PR_SET_NAME, c"orrery-spawner".as_ptr() as libc::c_ulong, 0, 0, 0);
    libc::setpgid(0, 0);
    libc::signal(libc::SIGCHLD, libc::SIG_IGN);
    libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    libc::signal(libc::SIGINT, libc::SIG_IGN);
    let devnull = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC);
    for fd in 0..3 {
        libc::dup2(devnull, fd);
    }
    libc::fcntl(socket, libc::F_SETFD, libc::FD_CLOEXEC);
    if libc::write(socket, GREETING.as_ptr().cast(), GREETING.len()) < 0 {
        libc::_exit(1);
    }
    let mut request = vec![0u8; MAX_REQUEST];
    // Lent to each supervisor forked: not made (and zeroed) again for every request.
    let mut buffers = supervisor::Buffers::new();
    loop {
        let (n, fds) = match receive(socket, &mut request) {
            Ok(Some(got)) => got,
            Ok(None) => libc::_exit(0),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => libc::_exit(1),
        };
        let answer: i64 = match (fds.len() == FDS).then(|| Prepared::from_wire(&request[..n])).flatten() {
            None => -(libc::EINVAL as i64),
            Some(mut prepared) => {
                let fd = |i: usize| fds[i].as_raw_fd();
                let kept = supervisor::Fds { devnull, status: fd(0), control: fd(1) };
                prepared.buffers = std::mem::take(&mut buffers);
                let forked = libc::fork();
                if forked == 0 {
                    // SAFETY: its own copy of what was received; it never returns.
                    supervisor::run(&mut prepared, kept);
                }
                buffers = std::mem::take(&mut prepared.buffers);
                match forked {
                    pid if pid < 0 => -(io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO) as i64),
                    pid => pid as i64,
                }
            }
        };
        drop(fds);
        let bytes = answer.to_le_bytes();
        if libc::write(socket, bytes.as_ptr().cast(), bytes.len()) < 0 {
            libc::_exit(1);
        }
    }
}

/// Room for the control message of a request's descriptors.
fn control_space() -> usize {
    // SAFETY: CMSG_SPACE is a pure computation.
    unsafe { libc::CMSG_SPACE((FDS * std::mem::size_of::<RawFd>()) as u32) as usize }
}

/// A message of one buffer and a control buffer; both must outlive its use.
fn message(iov: &mut libc::iovec, control: &mut [u8]) -> libc::msghdr {
    // SAFETY: a zeroed msghdr is valid; its pointers are set to the buffers given.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = control.len();
    msg
}

/// One message and the descriptors that came with it; `None` at the socket's end.
fn receive(socket: RawFd, buf: &mut [u8]) -> io::Result<Option<(usize, Vec<OwnedFd>)>> {
    let mut control = vec![0u8; control_space()];
    let mut iov = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
    let mut msg = message(&mut iov, &mut control);
    // SAFETY: msg points at buffers that outlive the call.
    let n = unsafe { libc::recvmsg(socket, &mut msg, libc::MSG_CMSG_CLOEXEC) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut fds = Vec::new();
    // SAFETY: walking the control messages the kernel wrote into `control`.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_RIGHTS {
                let data = libc::CMSG_DATA(cmsg).cast::<RawFd>();
                let count = ((*cmsg).cmsg_len as usize - libc::CMSG_LEN(0) as usize) / std::mem::size_of::<RawFd>();
                for i in 0..count {
                    fds.push(OwnedFd::from_raw_fd(data.add(i).read_unaligned()));
                }
            }
            cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
        }
    }
    if n == 0 && fds.is_empty() {
        return Ok(None);
    }
    if msg.msg_flags & (libc::MSG_TRUNC | libc::MSG_CTRUNC) != 0 {
        // Not a whole request: refused (the descriptors that came are closed).
        return Ok(Some((0, Vec::new())));
    }
    Ok(Some((n as usize, fds)))
}

/// The engine's end of its spawner.
struct Spawner {
    /// `None` once it has gone (then supervisors are forked by the engine).
    asking: Mutex<Option<Asking>>,
    pid: libc::pid_t,
}

struct Asking {
    socket: OwnedFd,
    /// When each request not answered yet was sent, oldest first. The engine does not wait for
    /// an answer (the fork it waits for takes 0.1-0.6 ms, longer when the cores are busy): the
    /// supervisor's pid comes with its first message, and whether the task started is the
    /// status pipe's to tell. Answers are taken as they come, before the next request.
    unanswered: VecDeque<Instant>,
}

impl Asking {
    /// Takes the answers that came; `false` when the spawner has gone, or left a request
    /// unanswered for [`PATIENCE`].
    fn take_answers(&mut self) -> bool {
        let mut answer = [0u8; 8];
        loop {
            // SAFETY: a valid descriptor and a buffer of its length.
            let n = unsafe {
                libc::recv(self.socket.as_raw_fd(), answer.as_mut_ptr().cast(), answer.len(), libc::MSG_DONTWAIT)
            };
            if n == answer.len() as isize {
                self.unanswered.pop_front();
                continue;
            }
            let e = io::Error::last_os_error();
            match n {
                n if n < 0 && e.kind() == io::ErrorKind::Interrupted => continue,
                n if n < 0 && e.kind() == io::ErrorKind::WouldBlock => break,
                _ => return false,
            }
        }
        self.unanswered.front().is_none_or(|sent| sent.elapsed() < PATIENCE)
    }
}

impl Spawner {
    /// Stops asking it: killed, should it still run (its requests not forked yet end with the
    /// status pipes it held: the engine hears the end of a supervisor that never started).
    fn give_up(&self, asking: &mut Option<Asking>) {
        *asking = None;
        // SAFETY: kill has no memory-safety preconditions; the pid is our child's.
        unsafe { libc::kill(self.pid, libc::SIGKILL) };
    }
}

/// What became of a request.
pub(super) enum Spawned {
    /// The spawner has the request (the status pipe tells whether the task started).
    Asked,
    /// No spawner to ask: fork it here.
    Unavailable,
}

/// A request the spawner has not answered for [`PATIENCE`] is given up on: the spawner is
/// killed and later supervisors are forked by the engine. For a wait for a supervisor's first
/// word that took that long (no later request would look).
pub(super) fn give_up_if_late() {
    let Some(Some(spawner)) = SPAWNER.get() else { return };
    let mut asking = spawner.asking.lock().unwrap_or_else(|e| e.into_inner());
    if asking.as_mut().is_some_and(|open| !open.take_answers()) {
        spawner.give_up(&mut asking);
    }
}

static SPAWNER: OnceLock<Option<Spawner>> = OnceLock::new();

/// Asks the spawner for a supervisor of `prepared` with these descriptors (status write end,
/// control read end), without waiting for its answer.
pub(super) fn spawn(prepared: &Prepared, fds: [RawFd; FDS]) -> Spawned {
    let Some(spawner) = SPAWNER.get_or_init(start) else { return Spawned::Unavailable };
    let wire = prepared.to_wire();
    if wire.len() > MAX_REQUEST {
        return Spawned::Unavailable;
    }
    let mut asking = spawner.asking.lock().unwrap_or_else(|e| e.into_inner());
    let Some(open) = asking.as_mut() else { return Spawned::Unavailable };
    if !open.take_answers() {
        spawner.give_up(&mut asking);
        return Spawned::Unavailable;
    }
    if send(open.socket.as_raw_fd(), &wire, &fds).is_err() {
        // Nothing was taken: the spawner has gone.
        *asking = None;
        return Spawned::Unavailable;
    }
    open.unanswered.push_back(Instant::now());
    Spawned::Asked
}

/// `recv` again when a signal interrupts it: with a receive timeout set, the system never
/// restarts it by itself (signal(7)), and a signal to this process is no answer.
fn receive_retrying(socket: RawFd, buf: &mut [u8]) -> isize {
    loop {
        // SAFETY: a valid descriptor and a buffer of its length.
        let n = unsafe { libc::recv(socket, buf.as_mut_ptr().cast(), buf.len(), 0) };
        if n >= 0 || io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
            return n;
        }
    }
}

fn send(socket: RawFd, wire: &[u8], fds: &[RawFd; FDS]) -> io::Result<()> {
    let size = std::mem::size_of_val(fds);
    let mut control = vec![0u8; control_space()];
    let mut iov = libc::iovec { iov_base: wire.as_ptr() as *mut _, iov_len: wire.len() };
    let msg = message(&mut iov, &mut control);
    // SAFETY: the one control message fits the buffer made for it.
    unsafe {
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(size as u32) as usize;
        std::ptr::copy_nonoverlapping(fds.as_ptr(), libc::CMSG_DATA(cmsg).cast::<RawFd>(), FDS);
    }
    loop {
        // SAFETY: msg points at buffers that outlive the call.
        let n = unsafe { libc::sendmsg(socket, &msg, libc::MSG_NOSIGNAL) };
        if n == wire.len() as isize {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if n < 0 && e.kind() == io::ErrorKind::Interrupted {
            continue;
        }
        return Err(if n < 0 { e } else { io::Error::other("a short send") });
    }
}

/// Starts the spawner; `None` when it is turned off or does not start and greet.
fn start() -> Option<Spawner> {
    use std::os::unix::process::CommandExt;
    if std::env::var_os("ORRERY_SPAWNER").is_some_and(|v| v == "off") {
        return None;
    }
    // Keeps the function that makes the binary a spawner in the binary.
    std::hint::black_box(&BECOME_SPAWNER);
    let mut pair = [0; 2];
    // SAFETY: a valid pointer to two ints.
    if unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC, 0, pair.as_mut_ptr()) } != 0
    {
        return None;
    }
    // SAFETY: both were just created and are owned by nothing else.
    let (mine, theirs) = unsafe { (OwnedFd::from_raw_fd(pair[0]), OwnedFd::from_raw_fd(pair[1])) };
    // Inherited at its number: no code between fork and exec, so the standard library spawns
    // without a fork of this process (posix_spawn). Another spawn at this moment may inherit it
    // too, harmlessly: the spawner ends when the engine's end closes.
    // SAFETY: a valid descriptor.
    if unsafe { libc::fcntl(theirs.as_raw_fd(), libc::F_SETFD, 0) } != 0 {
        return None;
    }
    let mut command = std::process::Command::new("/proc/self/exe");
    command
        .arg0("orrery-spawner")
        .env(SOCKET_VAR, theirs.as_raw_fd().to_string())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut child = command.spawn().ok()?;
    drop(theirs);
    let timeout = libc::timeval { tv_sec: PATIENCE.as_secs() as libc::time_t, tv_usec: 0 };
    let mut greeting = [0u8; 32];
    // SAFETY: valid descriptor, option and value.
    unsafe {
        libc::setsockopt(
            mine.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVTIMEO,
            (&timeout as *const libc::timeval).cast(),
            std::mem::size_of::<libc::timeval>() as libc::socklen_t,
        )
    };
    let greeted = receive_retrying(mine.as_raw_fd(), &mut greeting);
    if greeted != GREETING.len() as isize || &greeting[..GREETING.len()] != GREETING {
        let _ = child.kill();
        let _ = child.wait();
        return None;
    }
    let pid = child.id() as libc::pid_t;
    // Reaped when it ends (with the engine, or killed): no zombie is left behind.
    let _ = std::thread::Builder::new().name("orrery-spawner".into()).spawn(move || child.wait());
    Some(Spawner { asking: Mutex::new(Some(Asking { socket: mine, unanswered: VecDeque::new() })), pid })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_reads_back_as_it_was_written_and_anything_else_is_refused() {
        let env = vec![("PATH".into(), "/usr/bin".into()), ("X".into(), "a=b".into())];
        let mut spec = crate::process::ProcessSpec::shell("echo hi", "/tmp/x.attempt-1.log");
        spec.cwd = Some("/tmp".into());
        spec.exit_record = Some("/tmp/x.attempt-1".into());
        spec.record_id = Some("run-1".into());
        spec.log_cap = 77;
        let argv = ["/bin/sh".into(), "-c".into(), "echo hi".into()];
        let mut prepared = Prepared::new(std::path::Path::new("/bin/sh"), &argv, &env, &spec).unwrap();
        prepared.huge_pages_back = true;
        let wire = prepared.to_wire();
        let back = Prepared::from_wire(&wire).expect("reads back");
        assert_eq!(back.to_wire(), wire);
        assert_eq!(back.argv_ptrs.len(), 4);
        assert_eq!(back.envp_ptrs.len(), 3);
        assert_eq!(back.log_cap, 77);
        assert_eq!(back.log.to_bytes(), b"/tmp/x.attempt-1.log");
        assert_eq!(back.mark, prepared.mark);
        assert!(back.huge_pages_back);
        // The last byte says yes or no, nothing else.
        let mut neither = wire.clone();
        *neither.last_mut().unwrap() = 2;
        assert!(Prepared::from_wire(&neither).is_none());
        for cut in 0..wire.len() {
            assert!(Prepared::from_wire(&wire[..cut]).is_none(), "cut at {cut}");
        }
        let mut longer = wire.clone();
        longer.push(0);
        assert!(Prepared::from_wire(&longer).is_none());
        // A count that promises more items than bytes is refused before anything is allocated.
        let mut lying = Vec::new();
        lying.extend_from_slice(&1u32.to_le_bytes());
        lying.push(b'x');
        lying.extend_from_slice(&u32::MAX.to_le_bytes());
        assert!(Prepared::from_wire(&lying).is_none());
    }
}
