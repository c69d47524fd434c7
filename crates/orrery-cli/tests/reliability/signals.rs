//! Item 4: SIGTERM and SIGHUP of the runner (`orrery run`, `resume`, `recover`) behave as
//! Ctrl-C: the tasks are stopped (TERM, grace, KILL; a grandchild too), the session is
//! `stopped` in the store, no process of the session is left (the process table is scanned for
//! its `ORRERY_SESSION_ID`), the exit code is 130, and `orrery resume` completes it. Before the
//! fix the runner died at once, its `sleep`s ran on, and the session showed `interrupted`.
//! `ORRERY_RELIABILITY_BIN=PATH` runs the same checks against another build of `orrery`.

use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A guard against a hung runner: no assertion depends on it.
const HANG: Duration = Duration::from_secs(120);

/// The `orrery` under test: this build's, or the one `ORRERY_RELIABILITY_BIN` names (to measure
/// a build from before a fix with the same test).
fn orrery() -> PathBuf {
    std::env::var_os("ORRERY_RELIABILITY_BIN").map_or_else(|| env!("CARGO_BIN_EXE_orrery").into(), PathBuf::from)
}

struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("signals-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }
    fn db(&self) -> PathBuf {
        self.0.join("store.db")
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Two tasks in parallel, each counting its runs in a file: `a` execs `sleep 30`, `b` is a
/// shell that waits for a `sleep 30` it spawned (a grandchild of the runner). Both sleep until
/// the file `go` exists (see [`resume_to_completion`]), then succeed at once.
fn write_blueprint(dir: &Path) -> PathBuf {
    let count = |task: &str| format!("n=$(cat {task}.count 2>/dev/null || echo 0); echo $((n+1)) > {task}.count; ");
    let a = format!("{}echo started; [ -f go ] || exec sleep 30", count("a"));
    let b = format!("{}[ -f go ] || {{ sleep 30 & wait; }}", count("b"));
    let blueprint = serde_json::json!({"id": "sig", "name": "sig", "version": "1.0", "tasks": [
        {"id": "start", "type": "system.start"},
        {"id": "a", "type": "shell.run", "params": [{"name": "command", "value": a}], "depends_on": [{"id": "start"}]},
        {"id": "b", "type": "shell.run", "params": [{"name": "command", "value": b}], "depends_on": [{"id": "start"}]},
        {"id": "end", "type": "system.end", "depends_on": [{"id": "a"}, {"id": "b"}]}]});
    let path = dir.join("sig.json");
    std::fs::write(&path, blueprint.to_string()).unwrap();
    path
}

/// The pids of the live processes whose environment holds `ORRERY_SESSION_ID=session`.
fn processes_of(session: &str) -> Vec<u32> {
    let wanted = format!("ORRERY_SESSION_ID={session}");
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        // A process that ended meanwhile, or a zombie (its environment is gone), is not live.
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else { continue };
        if environ.split(|b| *b == 0).any(|var| var == wanted.as_bytes()) {
            found.push(pid);
        }
    }
    found
}

/// An `orrery` runner command (`--format json`), its stdout lines read on a thread.
struct Runner {
    child: Option<Child>,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Runner {
    fn start(dir: &Path, args: &[&str]) -> Runner {
        Runner::start_as(dir, args, &["--format", "json"])
    }

    /// `args`, then `format`.
    fn start_as(dir: &Path, args: &[&str], format: &[&str]) -> Runner {
        let mut child = Command::new(orrery())
            .args(args)
            .args(format)
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Runner { child: Some(child), lines, seen: Vec::new() }
    }

    /// The session's id, from its first event (or from the envelope `orrery job` prints).
    fn session(&mut self) -> String {
        loop {
            if let Some(id) = self.seen.iter().find_map(|l| {
                let event: Value = serde_json::from_str(l).ok()?;
                event["session_id"].as_str().map(str::to_string)
            }) {
                return id;
            }
            if let Ok(envelope) = serde_json::from_str::<Value>(&self.seen.join("\n")) {
                if let Some(id) = envelope["answer"]["session_id"].as_str() {
                    return id.to_string();
                }
            }
            let line = self.lines.recv_timeout(HANG).expect("the runner printed no event");
            self.seen.push(line);
        }
    }

    /// Waits until this runner started both tasks (their `attempt_started` events) when
    /// `started`, then until `count` processes of `session` run (the two tasks' sleeps and `b`'s
    /// shell).
    fn wait_for_processes(&mut self, session: &str, count: usize, started_here: bool) {
        let started = |seen: &[String], node: &str| {
            seen.iter().any(|l| {
                let event: Value = serde_json::from_str(l).unwrap_or(Value::Null);
                event["kind"] == "attempt_started" && event["payload"]["value"]["node"] == node
            })
        };
        while started_here && !(started(&self.seen, "sig.a") && started(&self.seen, "sig.b")) {
            let line =
                self.lines.recv_timeout(HANG).unwrap_or_else(|_| panic!("the tasks never started: {:?}", self.seen));
            self.seen.push(line);
        }
        let began = Instant::now();
        while processes_of(session).len() < count {
            assert!(began.elapsed() < HANG, "the tasks never ran: {:?}", self.seen);
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Sends `signal` (`-TERM`, `-HUP`), then waits for the exit: its code, stderr, and the
    /// time from the signal to the exit.
    fn signal(mut self, signal: &str) -> (Option<i32>, String, Duration) {
        let mut child = self.child.take().unwrap();
        let sent_at = Instant::now();
        let sent = Command::new("kill").args([signal, &child.id().to_string()]).status().unwrap();
        assert!(sent.success());
        let began = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            assert!(began.elapsed() < HANG, "the runner did not exit after {signal}");
            std::thread::sleep(Duration::from_millis(20));
        };
        let took = sent_at.elapsed();
        let mut stderr = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
        (status.code(), stderr, took)
    }

    /// Waits for the exit (the session ends by itself): its code and stderr.
    fn finish(mut self) -> (Option<i32>, String) {
        let mut child = self.child.take().unwrap();
        let began = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            assert!(began.elapsed() < HANG, "the runner never ended");
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut stderr = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
        (status.code(), stderr)
    }

    fn kill(mut self) {
        let mut child = self.child.take().unwrap();
        child.kill().unwrap();
        child.wait().unwrap();
    }
}

impl Drop for Runner {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The session's state and its tasks' states, from `orrery status --format json`.
fn status(s: &Scratch, session: &str) -> (String, Value) {
    let o = Command::new(orrery())
        .args(["status", session, "--db", s.db().to_str().unwrap(), "--format", "json"])
        .output()
        .unwrap();
    let status: Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stderr)));
    (status["session"]["state"].as_str().unwrap_or("").to_string(), status)
}

/// Signals a runner whose two tasks run, and checks that it stopped the session cleanly.
/// `started_here`: the runner starts the tasks (not when it adopts or replaces those a killed
/// runner left).
fn stop_with(s: &Scratch, mut runner: Runner, signal: &str, what: &str, started_here: bool) -> String {
    // Its first event: the runner watches the signals by then.
    let session = runner.session();
    runner.wait_for_processes(&session, 3, started_here);
    let before = processes_of(&session).len();
    let (code, stderr, took) = runner.signal(signal);
    println!("{what}: {signal} with {before} processes of the session running: exit {code:?} after {took:?}");
    assert_eq!(code, Some(130), "{what}: exit as for Ctrl-C; stderr: {stderr}");
    let left = processes_of(&session);
    assert!(left.is_empty(), "{what}: processes of session {session} left after {signal}: {left:?}");
    let (state, full) = status(s, &session);
    assert_eq!(state, "stopped", "{what}: {full}");
    if !what.starts_with("orrery job") {
        assert!(stderr.contains(&format!("session {session} stopped")), "{what}: {stderr}");
    }
    session
}

/// `orrery resume`, the tasks no longer sleeping, completes the session.
fn resume_to_completion(s: &Scratch, session: &str) {
    std::fs::write(s.0.join("go"), "").unwrap();
    let db = s.db();
    let runner = Runner::start(&s.0, &["resume", session, "--db", db.to_str().unwrap()]);
    let (code, stderr) = runner.finish();
    assert_eq!(code, Some(0), "resume completes it: {stderr}");
    assert_eq!(status(s, session).0, "completed");
    for task in ["a", "b"] {
        let runs = std::fs::read_to_string(s.0.join(format!("{task}.count"))).unwrap();
        println!("task {task} ran {} times", runs.trim());
    }
}

#[test]
fn sigterm_then_sighup_stop_run_and_resume_like_ctrl_c_and_resume_completes() {
    let s = Scratch::new("term-hup");
    let blueprint = write_blueprint(&s.0);
    let db = s.db();
    let db = db.to_str().unwrap();
    let run = Runner::start(&s.0, &["run", "--db", db, blueprint.to_str().unwrap()]);
    let session = stop_with(&s, run, "-TERM", "orrery run", true);
    let resume = Runner::start(&s.0, &["resume", &session, "--db", db]);
    let again = stop_with(&s, resume, "-HUP", "orrery resume", true);
    assert_eq!(again, session);
    resume_to_completion(&s, &session);
}

#[test]
fn sighup_stops_run_and_sigterm_stops_recover() {
    let s = Scratch::new("hup-recover");
    let blueprint = write_blueprint(&s.0);
    let db = s.db();
    let db = db.to_str().unwrap();
    let run = Runner::start(&s.0, &["run", "--db", db, blueprint.to_str().unwrap()]);
    let session = stop_with(&s, run, "-HUP", "orrery run", true);
    // Resume it, then kill the runner outright: the session is interrupted, for `recover`.
    let mut resume = Runner::start(&s.0, &["resume", &session, "--db", db]);
    resume.wait_for_processes(&session, 3, true);
    resume.kill();
    let listed = Command::new(orrery()).args(["sessions", "--db", db]).output().unwrap();
    let listed = String::from_utf8_lossy(&listed.stdout).to_string();
    assert!(
        listed.lines().any(|l| l.starts_with(&session) && l.contains("interrupted")),
        "SIGKILL leaves it interrupted: {listed}"
    );
    // The tasks SIGKILL left running still run: `recover` adopts them (or stops them and starts
    // them again), and its stop must end them all the same.
    let recover = Runner::start(&s.0, &["recover", "--db", db]);
    let recovered = stop_with(&s, recover, "-TERM", "orrery recover", false);
    assert_eq!(recovered, session);
    resume_to_completion(&s, &session);
}

#[test]
fn sigterm_stops_a_session_orrery_job_runs() {
    let s = Scratch::new("job");
    let blueprint = write_blueprint(&s.0);
    let db = s.db();
    let arguments = serde_json::json!({ "file": blueprint }).to_string();
    let job = Runner::start_as(&s.0, &["job", "start_session", &arguments, "--db", db.to_str().unwrap()], &[]);
    let session = stop_with(&s, job, "-TERM", "orrery job start_session", false);
    resume_to_completion(&s, &session);
}

#[test]
fn sigterm_and_sighup_end_logs_follow_with_130_as_ctrl_c_does() {
    let s = Scratch::new("logs");
    let blueprint = write_blueprint(&s.0);
    let db = s.db();
    let db = db.to_str().unwrap();
    let mut run = Runner::start(&s.0, &["run", "--db", db, blueprint.to_str().unwrap()]);
    let session = run.session();
    run.wait_for_processes(&session, 3, true);
    for signal in ["-TERM", "-HUP"] {
        // It printed the log's first line: it follows (and watches the signals) by then.
        let follow = Runner::start_as(&s.0, &["logs", &session, "a", "--follow", "--db", db], &[]);
        let line = follow.lines.recv_timeout(HANG).expect("the follower printed nothing");
        assert_eq!(line, "started");
        let (code, stderr, took) = follow.signal(signal);
        println!("orrery logs --follow: {signal}: exit {code:?} after {took:?}");
        assert_eq!(code, Some(130), "{signal}: {stderr}");
    }
    stop_with(&s, run, "-TERM", "orrery run", true);
}
