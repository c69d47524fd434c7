//! Item 5: a local denial of service without the token. `orrery serve` runs with a descriptor
//! limit of 2,048 (set in the child before it starts: soft and hard, so that it cannot raise
//! it; lower if this process's own hard limit is), a session runs (`wait` sleeps 4 s, then `write` starts and writes a file), and 20,000
//! idle TCP connections are opened to the server while a few clients send their request heads
//! one byte a second. Before the fix the server took descriptors until it had none, `write`
//! failed with `Too many open files`, and the slow clients were never closed. Now: the
//! session completes, the slow clients are closed by the server's header timeout, and once the
//! flood goes `GET /jobs` answers (the time is printed).
//!
//! The flood is held by forked children of this test (each within the test's own descriptor
//! limit; a child does nothing but open sockets, report how many, and wait), so that it does
//! not depend on one process holding 20,000 descriptors. `ORRERY_RELIABILITY_BIN=PATH` runs the
//! same checks against another build of `orrery`.

use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddrV4, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A guard against a hang: no assertion depends on it.
const HANG: Duration = Duration::from_secs(120);
/// The server's descriptor limit (soft and hard).
const SERVER_LIMIT: u64 = 2048;
/// The idle connections of the flood.
const FLOOD: usize = 20_000;
const SLOW_CLIENTS: usize = 3;

fn orrery() -> PathBuf {
    std::env::var_os("ORRERY_RELIABILITY_BIN").map_or_else(|| env!("CARGO_BIN_EXE_orrery").into(), PathBuf::from)
}

struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("connections-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `orrery serve` with its descriptor limit at [`SERVER_LIMIT`]; killed if the test fails.
struct Serving {
    child: Child,
    addr: SocketAddrV4,
    token: String,
    stderr: std::sync::mpsc::Receiver<String>,
}

impl Serving {
    fn start(dir: &Path) -> Serving {
        let mut command = Command::new(orrery());
        command
            .args(["serve", "--port", "0", "--db", dir.join("store.db").to_str().unwrap()])
            .current_dir(dir)
            .env("ORRERY_TOKEN", "a-token-for-the-flood-test")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // At most this process's own hard limit, which an unprivileged child cannot exceed.
        let mut own = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        // SAFETY: getrlimit only writes the struct given.
        unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut own) };
        let server_limit = (SERVER_LIMIT as libc::rlim_t).min(own.rlim_max);
        // SAFETY: setrlimit is async-signal-safe; nothing else runs between fork and exec.
        unsafe {
            command.pre_exec(move || {
                let limit = libc::rlimit { rlim_cur: server_limit, rlim_max: server_limit };
                if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let mut child = command.spawn().unwrap();
        let mut line = String::new();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        stdout.read_line(&mut line).unwrap();
        // The rest of stdout is drained, so that the server never blocks on it.
        std::thread::spawn(move || std::io::copy(&mut stdout, &mut std::io::sink()));
        let words: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(words.get(3), Some(&"token"), "{line}");
        let addr = words[2].strip_prefix("http://").unwrap().parse().unwrap();
        let (tx, stderr) = std::sync::mpsc::channel();
        let err = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        Serving { child, addr, token: words[4].to_string(), stderr }
    }

    /// One request on a connection of its own (`Connection: close`): the status and the body.
    fn request(&self, method: &str, path: &str, body: &str) -> std::io::Result<(u16, String)> {
        let mut stream = TcpStream::connect(self.addr)?;
        stream.set_read_timeout(Some(HANG))?;
        let text = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\nConnection: close\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            self.addr,
            self.token,
            body.len()
        );
        stream.write_all(text.as_bytes())?;
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer)?;
        let answer = String::from_utf8_lossy(&answer).into_owned();
        let status =
            answer.split_whitespace().nth(1).and_then(|s| s.parse().ok()).ok_or_else(|| {
                std::io::Error::new(std::io::ErrorKind::UnexpectedEof, format!("no answer: {answer:?}"))
            })?;
        let body = answer.split_once("\r\n\r\n").map_or("", |(_, b)| b).to_string();
        Ok((status, body))
    }

    fn stderr_lines(&self) -> Vec<String> {
        self.stderr.try_iter().collect()
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        // SIGTERM first, so that it stops its session's processes; then make sure.
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGTERM);
        }
        let began = Instant::now();
        while began.elapsed() < Duration::from_secs(30) {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Idle TCP connections to `addr`, held by forked children until [`Flood::end`].
struct Flood {
    children: Vec<(libc::pid_t, libc::c_int)>,
    opened: usize,
}

impl Flood {
    fn open(addr: SocketAddrV4, count: usize) -> Flood {
        // This process's soft limit up to its hard one; the children inherit it.
        let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        unsafe {
            assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit), 0);
            limit.rlim_cur = limit.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
        let highest = usize::try_from(limit.rlim_cur).unwrap_or(usize::MAX).min(1 << 20);
        let per_child = (highest.saturating_sub(64)).clamp(1, 10_000);
        let sockaddr = libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: addr.port().to_be(),
            sin_addr: libc::in_addr { s_addr: u32::from(*addr.ip()).to_be() },
            sin_zero: [0; 8],
        };
        let mut flood = Flood { children: Vec::new(), opened: 0 };
        let mut left = count;
        while left > 0 {
            let this = left.min(per_child);
            let done = count - left;
            left -= this;
            let mut report = [0 as libc::c_int; 2];
            let mut stop = [0 as libc::c_int; 2];
            // SAFETY: the child calls only async-signal-safe functions (close, socket, connect,
            // write, read, _exit) on memory prepared before the fork.
            unsafe {
                assert_eq!(libc::pipe(report.as_mut_ptr()), 0);
                assert_eq!(libc::pipe(stop.as_mut_ptr()), 0);
                let pid = libc::fork();
                assert!(pid >= 0, "fork failed");
                if pid == 0 {
                    // Only the two pipe ends it needs: a copy of another test's pipe held here
                    // would keep that test from seeing its end of file.
                    for fd in 3..highest as libc::c_int {
                        if fd != report[1] && fd != stop[0] {
                            libc::close(fd);
                        }
                    }
                    let mut opened: u32 = 0;
                    for i in 0..this {
                        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_NONBLOCK, 0);
                        if fd < 0 {
                            break;
                        }
                        // From 127.0.0.2, .3, ... (1,000 each), the port chosen at connect:
                        // 20,000 connections from one address make each connect search a
                        // nearly full range of ephemeral ports.
                        let k = done + i;
                        let source = libc::sockaddr_in {
                            sin_family: libc::AF_INET as libc::sa_family_t,
                            sin_port: 0,
                            sin_addr: libc::in_addr { s_addr: (0x7f00_0002u32 + (k / 1000) as u32).to_be() },
                            sin_zero: [0; 8],
                        };
                        let one: libc::c_int = 1;
                        libc::setsockopt(
                            fd,
                            libc::IPPROTO_IP,
                            libc::IP_BIND_ADDRESS_NO_PORT,
                            &one as *const libc::c_int as *const libc::c_void,
                            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
                        );
                        libc::bind(
                            fd,
                            &source as *const libc::sockaddr_in as *const libc::sockaddr,
                            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
                        );
                        let connected = libc::connect(
                            fd,
                            &sockaddr as *const libc::sockaddr_in as *const libc::sockaddr,
                            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
                        );
                        if connected == 0 || *libc::__errno_location() == libc::EINPROGRESS {
                            opened += 1;
                        } else {
                            libc::close(fd);
                        }
                    }
                    libc::write(report[1], &opened as *const u32 as *const libc::c_void, 4);
                    let mut byte = 0u8;
                    libc::read(stop[0], &mut byte as *mut u8 as *mut libc::c_void, 1);
                    libc::_exit(0);
                }
                libc::close(report[1]);
                libc::close(stop[0]);
                let mut opened: u32 = 0;
                let n = libc::read(report[0], &mut opened as *mut u32 as *mut libc::c_void, 4);
                assert_eq!(n, 4, "a flood child did not report");
                libc::close(report[0]);
                flood.opened += opened as usize;
                flood.children.push((pid, stop[1]));
            }
        }
        flood
    }

    /// Closes every connection: the children exit.
    fn end(&mut self) {
        for (pid, stop) in self.children.drain(..) {
            unsafe {
                libc::close(stop);
                let mut status = 0;
                libc::waitpid(pid, &mut status, 0);
            }
        }
    }
}

impl Drop for Flood {
    fn drop(&mut self) {
        self.end();
    }
}

/// A client that sends a request head one byte a second, for ever; answers how long the server
/// let it (`None`: never closed within [`HANG`]).
fn slow_client(addr: SocketAddrV4) -> std::thread::JoinHandle<Option<Duration>> {
    let mut stream = TcpStream::connect(addr).unwrap();
    std::thread::spawn(move || {
        let began = Instant::now();
        let head = format!("GET /jobs HTTP/1.1\r\nHost: {addr}\r\nX-Slow: ");
        let mut bytes = head.bytes().chain(std::iter::repeat(b'a'));
        stream.set_read_timeout(Some(Duration::from_millis(1000))).unwrap();
        while began.elapsed() < HANG {
            let byte = bytes.next().unwrap();
            if stream.write_all(&[byte]).is_err() {
                return Some(began.elapsed());
            }
            // Closed by the server: end of file (or a reset) instead of a timeout.
            let mut buffer = [0u8; 256];
            match stream.read(&mut buffer) {
                Ok(0) => return Some(began.elapsed()),
                Ok(_) => {}
                Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
                Err(_) => return Some(began.elapsed()),
            }
        }
        None
    })
}

fn status_of(dir: &Path, session: &str) -> Value {
    let o = Command::new(orrery())
        .args(["status", session, "--db", dir.join("store.db").to_str().unwrap(), "--format", "json"])
        .output()
        .unwrap();
    serde_json::from_slice(&o.stdout).unwrap_or(Value::Null)
}

#[test]
fn twenty_thousand_idle_connections_harm_no_running_task_and_the_api_answers_once_they_go() {
    let s = Scratch::new("flood");
    let blueprint = s.0.join("flood.json");
    let written = s.0.join("written");
    let blueprint_text = serde_json::json!({"id": "flood", "name": "flood", "version": "1.0", "tasks": [
        {"id": "start", "type": "system.start"},
        {"id": "wait", "type": "shell.run", "depends_on": [{"id": "start"}],
         "params": [{"name": "command", "value": "sleep 4"}]},
        {"id": "write", "type": "shell.run", "depends_on": [{"id": "wait"}],
         "params": [{"name": "command", "value": format!("echo done > {}", written.display())}]},
        {"id": "end", "type": "system.end", "depends_on": [{"id": "write"}]}]});
    std::fs::write(&blueprint, blueprint_text.to_string()).unwrap();
    let serving = Serving::start(&s.0);

    let slow: Vec<_> = (0..SLOW_CLIENTS).map(|_| slow_client(serving.addr)).collect();
    let arguments = serde_json::json!({"arguments": {"file": blueprint}}).to_string();
    let (code, body) = serving.request("POST", "/jobs/start_session", &arguments).unwrap();
    assert_eq!(code, 200, "{body}");
    let started: Value = serde_json::from_str(&body).unwrap();
    let session = started["answer"]["session_id"].as_str().unwrap_or_else(|| panic!("{body}")).to_string();

    let began = Instant::now();
    let mut flood = Flood::open(serving.addr, FLOOD);
    println!("{} idle connections opened in {:?} by {} processes", flood.opened, began.elapsed(), flood.children.len());
    assert!(flood.opened >= FLOOD, "only {} of {FLOOD} connections opened", flood.opened);

    // The session goes on while the flood holds: read from the store by another process.
    let state = loop {
        let status = status_of(&s.0, &session);
        let state = status["session"]["state"].as_str().unwrap_or("").to_string();
        if !matches!(state.as_str(), "" | "pending" | "running") {
            break (state, status);
        }
        assert!(began.elapsed() < HANG, "the session never ended: {status}");
        std::thread::sleep(Duration::from_millis(200));
    };
    println!("session {} {} {:?} after the flood began", session, state.0, began.elapsed());
    assert_eq!(state.0, "completed", "{}\nserver: {:?}", state.1, serving.stderr_lines());
    assert_eq!(std::fs::read_to_string(&written).unwrap(), "done\n");

    for (i, client) in slow.into_iter().enumerate() {
        let closed = client.join().unwrap();
        println!("slow-header client {i}: closed by the server after {closed:?}");
        assert!(closed.is_some(), "slow-header client {i} was never closed");
    }

    flood.end();
    let gone = Instant::now();
    let mut attempts = 0;
    let code = loop {
        attempts += 1;
        match serving.request("GET", "/jobs", "") {
            Ok((code, _)) => break code,
            Err(e) => {
                assert!(gone.elapsed() < HANG, "the API never answered again: {e}");
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    };
    println!("GET /jobs answered {code} {:?} after the flood went ({attempts} attempt(s))", gone.elapsed());
    assert_eq!(code, 200);
    for line in serving.stderr_lines() {
        println!("server: {line}");
    }
}
