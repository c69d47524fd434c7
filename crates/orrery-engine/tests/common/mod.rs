//! Fixtures the runner's integration tests share: small blueprints built from JSON, a temp
//! folder holding the store and the work directory, and waiting for an attempt to start; and,
//! for the process tests, a sleeping task and who forked its supervisor.
#![allow(dead_code)] // each test binary uses its own subset

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use orrery_blueprint::{load, Blueprint, Library, ValidBlueprint};
use orrery_engine::process::{spawn, Exit, ProcessSpec, Program, Supervised};
use orrery_engine::runner::{RunOptions, SessionControl};
use orrery_store::{Event, Store};
use serde_json::{json, Value};
use tokio::sync::broadcast;

pub fn bp(value: Value) -> Blueprint {
    load(&value.to_string()).expect("the test blueprint loads").blueprint
}

/// A shell task running `command` after `after` (FS).
pub fn sh(id: &str, command: &str, after: &str) -> Value {
    json!({"id": id, "type": "shell.run", "params": [{"name": "command", "value": command}], "depends_on": [{"id": after}]})
}

pub fn blueprint(id: &str, tasks: Vec<Value>) -> Blueprint {
    bp(json!({"id": id, "name": id, "version": "1.0", "tasks": tasks}))
}

pub fn start() -> Value {
    json!({"id": "start", "type": "system.start"})
}

pub fn end(after: &str) -> Value {
    json!({"id": "end", "type": "system.end", "depends_on": [{"id": after}]})
}

/// A while loop counting to 3 after `start`: `loop_start` (while `count < 3`, at most 10 times),
/// `body` (appends `body` to `ran`, runs `then`, and outputs `count` one more than its input,
/// 0 at first) and `loop_end`.
pub fn counting_loop(ran: &Path, then: &str) -> Vec<Value> {
    let command = format!(
        r#"echo body >> '{}'; {then}; printf '{{"count": %s}}' $((ORRERY_INPUT_COUNT + 1)) > "$ORRERY_OUTPUTS""#,
        ran.display()
    );
    let mut body = sh("body", &command, "loop_start");
    body["inputs"] = json!([{"name": "count", "value": 0}]);
    body["outputs"] = json!([{"name": "count"}]);
    let mut loop_start = sh("loop_start", "true", "start");
    loop_start["scope_start"] = json!({"while_policy": {"condition": "count < 3", "max_iterations": 10}});
    let mut loop_end = sh("loop_end", "true", "body");
    loop_end["scope_end"] = json!("loop_start");
    vec![loop_start, body, loop_end]
}

pub fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// `root` validated against itself and `others`, and the library a run takes.
pub fn valid(root: &Blueprint, others: &[&Blueprint]) -> (ValidBlueprint, Vec<Blueprint>) {
    let library: Vec<Blueprint> = std::iter::once(root.clone()).chain(others.iter().map(|b| (*b).clone())).collect();
    let valid = {
        let lib: Library = library.iter().collect();
        ValidBlueprint::new(root.clone(), &lib).expect("the root is valid")
    };
    (valid, library)
}

/// Waits (at most 20 s) for the `attempt_started` event of `node`.
pub async fn wait_for_attempt(receiver: &mut broadcast::Receiver<Arc<Event>>, node: &str) -> Arc<Event> {
    let wait = async {
        loop {
            let event = receiver.recv().await.expect("the session is still running");
            if matches!(event.data(), Some(orrery_store::EventData::AttemptStarted(s)) if s.node == node) {
                return event;
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(20), wait).await.expect("the attempt started in time")
}

/// A temp folder with the store (`orrery.db`) and the work directory (`work/`).
pub struct Fixture {
    pub dir: tempfile::TempDir,
}

impl Fixture {
    pub fn new() -> Fixture {
        Fixture { dir: tempfile::tempdir().expect("a temp dir") }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub fn db(&self) -> PathBuf {
        self.path("orrery.db")
    }

    pub fn store(&self) -> Store {
        Store::open(&self.db()).expect("the store opens")
    }

    /// Options for a run with two slots, every event on the returned receiver.
    pub fn options(&self, control: Option<&SessionControl>) -> (RunOptions, broadcast::Receiver<Arc<Event>>) {
        let (sender, receiver) = broadcast::channel(10_000);
        let options = RunOptions {
            max_parallel: 2,
            work_dir: self.path("work"),
            events: Some(sender),
            control: control.cloned(),
            broker: None,
            retry: None,
            started_by: None,
            file: None,
            breakpoints: Vec::new(),
            hold_on_failure: false,
            simulation: None,
        };
        (options, receiver)
    }
}

pub fn parent_of(pid: u32) -> u32 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    text[text.rfind(')').unwrap() + 1..].split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Who forked the supervisor of a running task: the spawner or this process.
pub fn forked_by(task: &Supervised) -> u32 {
    parent_of(parent_of(task.pid()))
}

/// A task running `sleep 30` with `env`, its log in `dir`, once it has exec'd `sleep` (before,
/// it shares its supervisor's memory).
pub async fn sleeper(dir: &Path, name: &str, env: Vec<(String, String)>) -> Supervised {
    let mut spec = ProcessSpec::new(Program::Argv(vec!["sleep".into(), "30".into()]), dir.join(format!("{name}.log")));
    spec.env = env;
    let task = spawn(spec).await.expect("the task starts");
    let until = std::time::Instant::now() + Duration::from_secs(10);
    while read(Path::new(&format!("/proc/{}/comm", task.pid()))).trim() != "sleep" {
        assert!(std::time::Instant::now() < until, "the task did not exec");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    task
}

/// A [`sleeper`] whose supervisor the spawner forked, not this process; and the spawner's pid.
pub async fn sleeper_from_the_spawner(dir: &Path, name: &str) -> (Supervised, u32) {
    let task = sleeper(dir, name, vec![]).await;
    let spawner = forked_by(&task);
    assert_ne!(spawner, std::process::id(), "a supervisor from the spawner");
    (task, spawner)
}

/// Waits (10 s at most) until process `pid` has ended: gone, or a zombie.
pub async fn process_ended(pid: u32) {
    let until = std::time::Instant::now() + Duration::from_secs(10);
    while std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.contains(") Z ")) {
        assert!(std::time::Instant::now() < until, "process {pid} did not end");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Cancels `task` and waits for it to stop.
pub async fn stopped(task: Supervised) {
    task.canceller().cancel();
    let finished = tokio::time::timeout(Duration::from_secs(20), task.wait()).await.expect("it stops");
    assert_eq!(finished.exit, Exit::Cancelled);
}
