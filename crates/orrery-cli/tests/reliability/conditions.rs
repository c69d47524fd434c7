//! Item 2: a condition that builds too much. `len(['a'*262000 + str(i) for i in
//! range(1000000)]) > 0` passes every per-value limit of the evaluator and asks for about
//! 262 GB; before the budgets the runner grew until the allocator aborted it, and the session,
//! with nothing committed, was lost. Now each evaluation has a memory, work and time budget:
//! `orrery run` of a blueprint with such a condition (on a task, on a skip scope's start, as a
//! while scope's condition) ends normally with exit 1, the task (or scope) failed with a
//! message naming the budget, the session `failed` in the store, and the runner's peak RSS
//! (from `wait4`) far below 1 GiB. The child runs under an address-space limit, so that a
//! regression fails the test instead of exhausting the machine's memory.

use serde_json::{json, Value};
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A guard against a hung runner only.
const HANG: Duration = Duration::from_secs(120);
/// The runner's address space is limited to this (a regression then aborts instead of eating
/// the machine's memory).
const ADDRESS_SPACE: u64 = 8 << 30;
const MAX_PEAK_RSS_KIB: i64 = 1 << 20;

struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("conditions-{name}-{}", std::process::id()));
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

fn shell(id: &str, after: &str) -> Value {
    json!({"id": id, "type": "shell.run", "params": [{"name": "command", "value": "true"}],
           "depends_on": [{"id": after}]})
}

/// start -> a task whose condition is `condition` -> end.
fn task_condition(condition: &str) -> Value {
    let mut guarded = shell("guarded", "start");
    guarded["condition"] = json!(condition);
    json!({"id": "bomb", "name": "bomb", "version": "1.0", "tasks": [
        {"id": "start", "type": "system.start"}, guarded, shell("after", "guarded"),
        {"id": "end", "type": "system.end", "depends_on": [{"id": "after"}]}]})
}

/// A skip scope whose start's condition is `condition`.
fn skip_scope(condition: &str) -> Value {
    let mut open = shell("open", "start");
    open["condition"] = json!(condition);
    open["scope_start"] = json!({"name": "guarded scope"});
    let mut close = shell("close", "open");
    close["scope_end"] = json!("open");
    json!({"id": "bomb", "name": "bomb", "version": "1.0", "tasks": [
        {"id": "start", "type": "system.start"}, open, close,
        {"id": "end", "type": "system.end", "depends_on": [{"id": "close"}]}]})
}

/// A while scope whose condition is `condition`.
fn while_scope(condition: &str) -> Value {
    let mut open = shell("open", "start");
    open["scope_start"] = json!({"name": "loop", "while_policy": {"condition": condition, "max_iterations": 3}});
    let mut close = shell("close", "open");
    close["scope_end"] = json!("open");
    json!({"id": "bomb", "name": "bomb", "version": "1.0", "tasks": [
        {"id": "start", "type": "system.start"}, open, close,
        {"id": "end", "type": "system.end", "depends_on": [{"id": "close"}]}]})
}

struct Ran {
    code: Option<i32>,
    signal: Option<i32>,
    stdout: String,
    stderr: String,
    peak_rss_kib: i64,
    took: Duration,
}

/// Runs `orrery ARGS` to its end under the address-space limit; its peak RSS from `wait4`.
fn run_orrery(dir: &Path, args: &[&str]) -> Ran {
    let mut command = Command::new(env!("CARGO_BIN_EXE_orrery"));
    command.args(args).current_dir(dir).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    // SAFETY: setrlimit is async-signal-safe and touches no memory of the parent.
    unsafe {
        command.pre_exec(|| {
            let limit = libc::rlimit { rlim_cur: ADDRESS_SPACE, rlim_max: ADDRESS_SPACE };
            if libc::setrlimit(libc::RLIMIT_AS, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let started = Instant::now();
    let mut child = command.spawn().unwrap();
    let pid = child.id() as libc::pid_t;
    let mut out_pipe = child.stdout.take().unwrap();
    let mut err_pipe = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = out_pipe.read_to_string(&mut text);
        text
    });
    let err = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = err_pipe.read_to_string(&mut text);
        text
    });
    // The hang guard: kill the child if it outlives HANG (wait4 below then returns).
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let guard = std::thread::spawn(move || {
        if done_rx.recv_timeout(HANG).is_err() {
            // SAFETY: signalling a pid this test spawned and has not reaped yet.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            return true;
        }
        false
    });
    let mut status = 0;
    // SAFETY: an all-zero rusage is valid; wait4 fills it in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waiting for our own child, with valid pointers.
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(waited, pid, "wait4: {}", std::io::Error::last_os_error());
    let took = started.elapsed();
    let _ = done_tx.send(());
    assert!(!guard.join().unwrap(), "orrery {args:?} still ran after {HANG:?}");
    let exited = libc::WIFEXITED(status);
    Ran {
        code: exited.then(|| libc::WEXITSTATUS(status)),
        signal: libc::WIFSIGNALED(status).then(|| libc::WTERMSIG(status)),
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
        peak_rss_kib: usage.ru_maxrss,
        took,
    }
}

fn orrery_json(dir: &Path, args: &[&str]) -> Value {
    let o = Command::new(env!("CARGO_BIN_EXE_orrery")).args(args).current_dir(dir).output().unwrap();
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!("orrery {args:?}: {e}: {}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
    })
}

/// Runs `blueprint` and checks that it failed cleanly on the condition, naming `budget`.
fn runs_to_a_clean_failure(what: &str, blueprint: Value, failing_node: &str, budget: &[&str]) {
    let s = Scratch::new(what);
    let file = s.0.join("bomb.json");
    std::fs::write(&file, serde_json::to_string_pretty(&blueprint).unwrap()).unwrap();
    let db = s.db();
    let db = db.to_str().unwrap();
    let ran = run_orrery(&s.0, &["run", "--db", db, "--format", "json", file.to_str().unwrap()]);
    println!(
        "{what}: exit {:?} (signal {:?}) after {:?}, peak RSS {} MiB",
        ran.code,
        ran.signal,
        ran.took,
        ran.peak_rss_kib / 1024
    );
    assert_eq!(ran.signal, None, "{what}: the runner must not die: stderr {}", ran.stderr);
    assert_eq!(ran.code, Some(1), "{what}: the run fails normally; stdout {} stderr {}", ran.stdout, ran.stderr);
    assert!(ran.peak_rss_kib < MAX_PEAK_RSS_KIB, "{what}: peak RSS {} KiB", ran.peak_rss_kib);
    let printed = format!("{}{}", ran.stdout, ran.stderr);
    assert!(budget.iter().any(|b| printed.contains(b)), "{what}: the message names the budget {budget:?}: {printed}");

    let sessions = orrery_json(&s.0, &["sessions", "--db", db, "--format", "json"]);
    let list = sessions.as_array().cloned().or_else(|| sessions["sessions"].as_array().cloned()).unwrap_or_default();
    assert_eq!(list.len(), 1, "{what}: one session stored: {sessions}");
    let session = list[0]["id"].as_str().or_else(|| list[0]["session_id"].as_str()).expect("a session id").to_string();
    let status = orrery_json(&s.0, &["status", &session, "--db", db, "--format", "json"]);
    assert_eq!(status["session"]["state"], "failed", "{what}: the store records the session failed: {status}");
    let text = status.to_string();
    assert!(budget.iter().any(|b| text.contains(b)), "{what}: the stored failure names the budget: {status}");
    assert!(text.contains(failing_node), "{what}: the status names {failing_node}: {status}");
}

const MEMORY: &[&str] = &["memory budget of 64 MiB"];
/// What stops the other bombs first may depend on the build's speed (the clock is a budget).
const ANY: &[&str] = &["memory budget of 64 MiB", "work budget of", "time budget of"];

#[test]
fn the_issue_bomb_fails_its_task_and_the_runner_lives() {
    runs_to_a_clean_failure(
        "issue-bomb",
        task_condition("len(['a'*262000 + str(i) for i in range(1000000)]) > 0"),
        "guarded",
        MEMORY,
    );
}

#[test]
fn bombs_of_the_same_class_fail_their_task_scope_or_loop() {
    runs_to_a_clean_failure(
        "lists",
        task_condition("len([list(range(1000000)) for i in range(1000)]) > 0"),
        "guarded",
        ANY,
    );
    runs_to_a_clean_failure(
        "dict-of-strings",
        task_condition("len({i: 'v' * 200000 for i in range(100000)}) > 0"),
        "guarded",
        ANY,
    );
    runs_to_a_clean_failure(
        "nested-loops",
        task_condition("len([1 for i in range(1000000) for j in range(1000000)]) > 0"),
        "guarded",
        ANY,
    );
    runs_to_a_clean_failure(
        "skip-scope",
        skip_scope("len([str(i % 10) * 250000 for i in range(1000000)]) > 0"),
        "open",
        ANY,
    );
    runs_to_a_clean_failure(
        "while-scope",
        while_scope("len([sorted(range(1000000)) for i in range(1000)]) > 0"),
        "open",
        ANY,
    );
}
