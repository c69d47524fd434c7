//! Item 1: a burst of `start_session` while 500 clients follow `/events`. Every request is
//! answered, none `busy`, and every session that started is driven to its end.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

const TOKEN: &str = "reliability-load-token-0123456789";
const FOLLOWERS: usize = 500;
const STARTS: usize = 200;

/// `orrery serve` on a free port; killed when dropped.
struct Serving {
    child: Child,
    addr: String,
}

impl Serving {
    fn start(db: &Path, dir: &Path) -> Serving {
        let mut child = Command::new(env!("CARGO_BIN_EXE_orrery"))
            .args(["serve", "--port", "0", "--db", db.to_str().unwrap()])
            .current_dir(dir)
            .env("ORRERY_TOKEN", TOKEN)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("orrery serve starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let addr = line
            .split_whitespace()
            .find_map(|word| word.strip_prefix("http://"))
            .unwrap_or_else(|| panic!("no address in {line:?}"))
            .to_string();
        Serving { child, addr }
    }

    /// A job's envelope.
    fn job(&self, name: &str, arguments: Value) -> Value {
        let body = json!({ "arguments": arguments }).to_string();
        let mut stream = TcpStream::connect(&self.addr).expect("the server accepts");
        stream.set_read_timeout(Some(Duration::from_secs(300))).unwrap();
        let head = format!(
            "POST /jobs/{name} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {TOKEN}\r\nConnection: close\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            self.addr,
            body.len()
        );
        stream.write_all(head.as_bytes()).unwrap();
        let mut reply = Vec::new();
        stream.read_to_end(&mut reply).unwrap();
        let text = String::from_utf8_lossy(&reply);
        let (head, body) = text.split_once("\r\n\r\n").unwrap_or_else(|| panic!("no answer to {name}: {text}"));
        assert!(head.starts_with("HTTP/1.1 200"), "{name}: {head}\n{body}");
        // Answers are short enough to come whole; a chunked one is unchunked here.
        let body = if head.to_ascii_lowercase().contains("transfer-encoding: chunked") {
            unchunk(body)
        } else {
            body.to_string()
        };
        serde_json::from_str(&body).unwrap_or_else(|e| panic!("{name}: {e}: {body}"))
    }

    /// Opens `/events` and reads it to the end on a thread of its own, counting the bytes.
    fn follow(&self, read: Arc<AtomicU64>) {
        let mut stream = TcpStream::connect(&self.addr).expect("the server accepts a follower");
        let head = format!("GET /events HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {TOKEN}\r\n\r\n", self.addr);
        stream.write_all(head.as_bytes()).unwrap();
        std::thread::Builder::new()
            .stack_size(64 * 1024)
            .spawn(move || {
                let mut buffer = [0u8; 16 * 1024];
                while let Ok(n @ 1..) = stream.read(&mut buffer) {
                    read.fetch_add(n as u64, Ordering::Relaxed);
                }
            })
            .unwrap();
    }
}

impl Serving {
    /// The CPU time (user and system) the server has used so far, from `/proc/PID/stat`.
    fn cpu_seconds(&self) -> f64 {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.child.id())).unwrap_or_default();
        // The fields after the command's closing parenthesis; utime and stime are the 14th and
        // 15th of the whole line, in clock ticks.
        let fields: Vec<&str> = stat.rsplit_once(')').map_or("", |(_, rest)| rest).split_whitespace().collect();
        let ticks: f64 = fields.get(11..13).map_or(0.0, |f| f.iter().filter_map(|t| t.parse::<f64>().ok()).sum());
        // SAFETY: sysconf has no preconditions.
        ticks / unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn unchunk(body: &str) -> String {
    let mut out = String::new();
    let mut rest = body;
    while let Some((size, after)) = rest.split_once("\r\n") {
        let size = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if size == 0 {
            break;
        }
        out.push_str(&after[..size]);
        rest = &after[size + 2..];
    }
    out
}

fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("reliability-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn a_burst_of_starts_with_500_followers_queues_and_every_session_ends() {
    let dir = scratch("load");
    let blueprint = dir.join("burst.json");
    let flow = json!({"id": "burst", "name": "burst", "version": "1.0", "tasks": [
        {"id": "start", "type": "system.start"},
        {"id": "work", "type": "shell.run", "depends_on": [{"id": "start"}],
         "params": [{"name": "command", "value": "echo working"}]},
        {"id": "more", "type": "shell.run", "depends_on": [{"id": "work"}],
         "params": [{"name": "command", "value": "echo more"}]},
        {"id": "end", "type": "system.end", "depends_on": [{"id": "more"}]}
    ]});
    std::fs::write(&blueprint, flow.to_string()).unwrap();
    let serving = Arc::new(Serving::start(&dir.join("orrery.db"), &dir));

    let read = Arc::new(AtomicU64::new(0));
    for _ in 0..FOLLOWERS {
        serving.follow(Arc::clone(&read));
    }

    let began = Instant::now();
    let all_at_once = Arc::new(Barrier::new(STARTS));
    let starts: Vec<_> = (0..STARTS)
        .map(|_| {
            let (serving, all_at_once, file) = (Arc::clone(&serving), Arc::clone(&all_at_once), blueprint.clone());
            std::thread::spawn(move || {
                all_at_once.wait();
                serving.job("start_session", json!({"file": file}))
            })
        })
        .collect();
    let answers: Vec<Value> = starts.into_iter().map(|t| t.join().expect("a start thread")).collect();
    let answered_in = began.elapsed();
    let failed: Vec<&Value> = answers.iter().filter(|a| a["success"] != true).collect();
    assert!(failed.is_empty(), "{} of {STARTS} starts failed, the first: {}", failed.len(), failed[0]);

    let mut not_ended = Vec::new();
    for answer in &answers {
        let session = answer["answer"]["session_id"].as_str().expect("a session id").to_string();
        let waited = serving.job("wait_session", json!({"session_id": session, "timeout_s": 300}));
        let state = waited["answer"]["session"]["state"].clone();
        if state != "completed" {
            not_ended.push(format!("{session}: {state} {}", waited["answer"]["session"]["last_error"]));
        }
    }
    eprintln!(
        "load: {STARTS} starts with {FOLLOWERS} followers answered in {:.1} s, all ended in {:.1} s; the \
         server used {:.1} s of CPU; the followers read {} KiB",
        answered_in.as_secs_f64(),
        began.elapsed().as_secs_f64(),
        serving.cpu_seconds(),
        read.load(Ordering::Relaxed) / 1024
    );
    assert!(not_ended.is_empty(), "{} sessions did not complete: {not_ended:#?}", not_ended.len());
    let _ = std::fs::remove_dir_all(&dir);
}
