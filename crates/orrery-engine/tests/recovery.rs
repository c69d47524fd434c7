//! Resuming sessions from the store alone ([`resume_session`]): after a stop, after a failure
//! (retry from failure), after a crash that left an attempt `running` whose process is gone or
//! still alive, and for a composite whose inner blueprint is read back from the store.

use std::time::Duration;

use orrery_blueprint::{Blueprint, SessionState, TaskState};
use orrery_engine::runner::{resume_session, run_session, RunError, RunReport, SessionControl};
use orrery_store::{AttemptState, NewAttempt, ProcessIdentity, ProgressReport, StepState, StoreError};
use serde_json::{json, Map};

mod common;
use common::*;

impl Fixture {
    /// Runs `root` (with `others` as its library) to its end without a stop.
    async fn run(&self, root: &Blueprint, others: &[&Blueprint]) -> RunReport {
        let (valid, library) = valid(root, others);
        let (options, _) = self.options(None);
        tokio::time::timeout(Duration::from_secs(60), run_session(&self.db(), valid, library, Map::new(), options))
            .await
            .expect("the session ended in time")
            .expect("the session runs")
    }

    /// Runs `root` and stops it once `node` has started.
    async fn run_and_stop_at(&self, root: &Blueprint, others: &[&Blueprint], node: &str) -> RunReport {
        let (valid, library) = valid(root, others);
        let control = SessionControl::new();
        let (options, mut receiver) = self.options(Some(&control));
        let db = self.db();
        let handle = tokio::spawn(async move { run_session(&db, valid, library, Map::new(), options).await });
        wait_for_attempt(&mut receiver, node).await;
        control.stop();
        let report = tokio::time::timeout(Duration::from_secs(30), handle)
            .await
            .expect("the session stopped in time")
            .expect("the runner did not panic")
            .expect("the session ran");
        assert_eq!(report.state, SessionState::Stopped);
        report
    }

    async fn resume(&self, session_id: &str) -> Result<RunReport, RunError> {
        let (options, _) = self.options(None);
        tokio::time::timeout(Duration::from_secs(60), resume_session(&self.db(), session_id, options))
            .await
            .expect("the resumed session ended in time")
    }

    fn attempt_states(&self, session_id: &str, node: &str) -> Vec<AttemptState> {
        let attempts = self.store().attempts(session_id).expect("attempts read");
        attempts.into_iter().filter(|a| a.node == node).map(|a| a.state).collect()
    }
}

/// `t1` appends `one` to `ran`; `t2` succeeds (appending `two`) once `go` exists and otherwise
/// runs `otherwise`.
fn two_tasks(fx: &Fixture, otherwise: &str) -> Blueprint {
    let ran = fx.path("ran.txt");
    let go = fx.path("go");
    let t1 = sh("t1", &format!("echo one >> '{}'", ran.display()), "start");
    let t2 = sh(
        "t2",
        &format!("if [ -f '{}' ]; then echo two >> '{}'; else {otherwise}; fi", go.display(), ran.display()),
        "t1",
    );
    blueprint("root", vec![start(), t1, t2, end("t2")])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_session_resumes_from_the_store_and_finished_tasks_never_run_again() {
    let fx = Fixture::new();
    let root = two_tasks(&fx, "sleep 30");
    let stopped = fx.run_and_stop_at(&root, &[], "root.t2").await;
    assert_eq!(read(&fx.path("ran.txt")), "one\n");

    std::fs::write(fx.path("go"), "").unwrap();
    let report = fx.resume(&stopped.session_id).await.expect("the session resumes");

    assert_eq!(report.state, SessionState::Completed, "{:?}", report.error);
    assert_eq!(report.session_id, stopped.session_id);
    assert_eq!(read(&fx.path("ran.txt")), "one\ntwo\n", "t1 ran exactly once");
    assert_eq!(fx.attempt_states(&report.session_id, "root.t1"), vec![AttemptState::Succeeded]);
    assert_eq!(
        fx.attempt_states(&report.session_id, "root.t2"),
        vec![AttemptState::Cancelled, AttemptState::Succeeded]
    );
    let attempts = fx.store().attempts(&report.session_id).unwrap();
    let numbers: Vec<u32> = attempts.iter().filter(|a| a.node == "root.t2").map(|a| a.attempt).collect();
    assert_eq!(numbers, vec![1, 2]);
    let log = attempts.iter().find(|a| a.node == "root.t2" && a.attempt == 2).and_then(|a| a.log_path.clone());
    assert_eq!(log, Some(fx.path("work").join(&report.session_id).join("root.t2.attempt-2.log")));
    assert_eq!(fx.store().session(&report.session_id).unwrap().state, SessionState::Completed);

    // A completed session has nothing to resume.
    match fx.resume(&report.session_id).await {
        Err(RunError::NotResumable { state: SessionState::Completed, .. }) => {}
        other => panic!("a completed session was resumed: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_session_is_retried_from_its_failure() {
    let fx = Fixture::new();
    let root = two_tasks(&fx, "exit 3");
    let failed = fx.run(&root, &[]).await;
    assert_eq!(failed.state, SessionState::Failed);

    std::fs::write(fx.path("go"), "").unwrap();
    let report = fx.resume(&failed.session_id).await.expect("the session resumes");

    assert_eq!(report.state, SessionState::Completed, "{:?}", report.error);
    assert_eq!(read(&fx.path("ran.txt")), "one\ntwo\n");
    assert_eq!(fx.attempt_states(&report.session_id, "root.t2"), vec![AttemptState::Failed, AttemptState::Succeeded]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_session_is_a_not_found_error() {
    let fx = Fixture::new();
    let root = two_tasks(&fx, "true");
    fx.run(&root, &[]).await;
    match fx.resume("no-such-session").await {
        Err(RunError::Store(StoreError::NotFound { what: "session", .. })) => {}
        other => panic!("expected not found, got {other:?}"),
    }
}

/// A crash as the store sees it: the session `running`, an attempt `running` with a step in
/// progress, whose process (`process`) is gone or still alive.
fn leave_running(fx: &Fixture, session_id: &str, node: &str, process: Option<ProcessIdentity>) -> orrery_store::RunId {
    let mut store = fx.store();
    let new = NewAttempt { agent: "shell.run".into(), process, ..NewAttempt::default() };
    let (attempt, _) = store.begin_attempt(session_id, node, &new).expect("the attempt begins");
    let report = ProgressReport { step: "half".into(), state: StepState::InProgress, percentage: Some(50) };
    store.report_progress(&attempt.run_id, &report).expect("progress is stored");
    store.set_session_state(session_id, SessionState::Running, None, None).expect("the session is running");
    attempt.run_id
}

/// The start time `/proc/PID/stat` gives (field 22), as the engine records it.
fn start_time(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("the process exists");
    let after_name = &stat[stat.rfind(')').unwrap() + 2..];
    after_name.split_whitespace().nth(19).unwrap().parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_crash_an_attempt_whose_process_is_gone_is_settled_unknown_and_runs_again() {
    let fx = Fixture::new();
    let root = two_tasks(&fx, "sleep 30");
    let stopped = fx.run_and_stop_at(&root, &[], "root.t2").await;
    // A process that existed and is gone: this test's own pid with another start time.
    let gone = ProcessIdentity { pid: std::process::id(), start_time: 1 };
    leave_running(&fx, &stopped.session_id, "root.t2", Some(gone));

    std::fs::write(fx.path("go"), "").unwrap();
    let report = fx.resume(&stopped.session_id).await.expect("the session resumes");

    assert_eq!(report.state, SessionState::Completed, "{:?}", report.error);
    assert_eq!(read(&fx.path("ran.txt")), "one\ntwo\n");
    let states = fx.attempt_states(&report.session_id, "root.t2");
    assert_eq!(states, vec![AttemptState::Cancelled, AttemptState::Unknown, AttemptState::Succeeded]);
    let store = fx.store();
    let unknown =
        store.attempts(&report.session_id).unwrap().into_iter().find(|a| a.state == AttemptState::Unknown).unwrap();
    assert!(unknown.error.is_some());
    let steps = store.steps(&unknown.run_id).unwrap();
    assert_eq!(steps.iter().map(|s| s.state).collect::<Vec<_>>(), vec![StepState::Unknown]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_crash_a_process_still_alive_is_killed_with_its_group_and_settled_cancelled() {
    let fx = Fixture::new();
    let root = two_tasks(&fx, "sleep 30");
    let stopped = fx.run_and_stop_at(&root, &[], "root.t2").await;
    // The orphan of the crashed runner: a shell leading its own group, with a child.
    use std::os::unix::process::CommandExt;
    let mut orphan = std::process::Command::new("/bin/sh")
        .args(["-c", "sleep 30 & sleep 30; wait"])
        .process_group(0)
        .spawn()
        .expect("the orphan starts");
    let pid = orphan.id();
    let identity = ProcessIdentity { pid, start_time: start_time(pid) };
    leave_running(&fx, &stopped.session_id, "root.t2", Some(identity));
    // Reap it from here once killed (a real orphan is reaped by init).
    let reaper = std::thread::spawn(move || orphan.wait());

    std::fs::write(fx.path("go"), "").unwrap();
    let report = fx.resume(&stopped.session_id).await.expect("the session resumes");

    assert_eq!(report.state, SessionState::Completed, "{:?}", report.error);
    reaper.join().unwrap().expect("the orphan was reaped");
    // Killed members are reaped by init (they are not this process's children): give it time.
    let group_exists = || {
        std::process::Command::new("/bin/sh")
            .args(["-c", &format!("kill -0 -{pid} 2>/dev/null")])
            .status()
            .unwrap()
            .success()
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while group_exists() {
        let ps = std::process::Command::new("ps").args(["-o", "pid,pgid,stat,cmd", "-g", &pid.to_string()]).output();
        let ps = ps.map(|o| String::from_utf8_lossy(&o.stdout).into_owned()).unwrap_or_default();
        assert!(std::time::Instant::now() < deadline, "a member of the orphan's group survived:\n{ps}");
        std::thread::sleep(Duration::from_millis(50));
    }
    let states = fx.attempt_states(&report.session_id, "root.t2");
    assert_eq!(states, vec![AttemptState::Cancelled, AttemptState::Cancelled, AttemptState::Succeeded]);
    assert_eq!(read(&fx.path("ran.txt")), "one\ntwo\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_composite_session_resumes_with_its_inner_blueprint_read_from_the_store() {
    let fx = Fixture::new();
    let go = fx.path("go");
    let mut wait = sh(
        "wait",
        &format!("if [ -f '{}' ]; then printf '{{\"v\": 7}}' > \"$ORRERY_OUTPUTS\"; else sleep 30; fi", go.display()),
        "start",
    );
    wait["outputs"] = json!([{"name": "v"}]);
    let inner = blueprint("inner", vec![start(), wait, end("wait")]);
    let composite = json!({"id": "comp", "type": "system.composite",
        "params": [{"name": "blueprint", "value": {"static": "inner"}}],
        "outputs": [{"name": "v", "set_to": "answer"}],
        "depends_on": [{"id": "start"}]});
    let root = blueprint("root", vec![start(), composite, end("comp")]);
    let stopped = fx.run_and_stop_at(&root, &[&inner], "inner_comp.wait").await;

    std::fs::write(&go, "").unwrap();
    // Only the session id: the inner blueprint comes from the store.
    let report = fx.resume(&stopped.session_id).await.expect("the session resumes");

    assert_eq!(report.state, SessionState::Completed, "{:?}", report.error);
    let store = fx.store();
    assert_eq!(store.data_value(&report.session_id, "root", "answer").unwrap(), Some(json!(7)));
    assert_eq!(store.task_node(&report.session_id, "inner_comp.wait").unwrap().state, TaskState::Succeeded);
    assert_eq!(fx.attempt_states(&report.session_id, "inner_comp.start"), vec![AttemptState::Succeeded]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_crash_before_its_process_was_recorded_the_process_is_found_by_its_run_id_and_killed() {
    let fx = Fixture::new();
    let root = two_tasks(&fx, "sleep 30");
    let stopped = fx.run_and_stop_at(&root, &[], "root.t2").await;
    // The runner died after spawning, before recording the process: the attempt names none.
    let run_id = leave_running(&fx, &stopped.session_id, "root.t2", None);
    use std::os::unix::process::CommandExt;
    let pid_file = fx.path("child.pid");
    let mut orphan = std::process::Command::new("/bin/sh")
        .args(["-c", &format!("trap '' TERM; sleep 30 & echo $! > {}; wait", pid_file.display())])
        .env("ORRERY_RUN_ID", run_id.as_str())
        .process_group(0)
        .spawn()
        .expect("the orphan starts");
    let reaper = std::thread::spawn(move || orphan.wait());
    while read(&pid_file).trim().is_empty() {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let child: u32 = read(&pid_file).trim().parse().unwrap();
    let child_start = start_time(child);

    std::fs::write(fx.path("go"), "").unwrap();
    let report = fx.resume(&stopped.session_id).await.expect("the session resumes");

    assert_eq!(report.state, SessionState::Completed, "{:?}", report.error);
    reaper.join().unwrap().expect("the orphan was reaped");
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while std::fs::read_to_string(format!("/proc/{child}/stat")).is_ok_and(|s| {
        let fields: Vec<&str> = s[s.rfind(')').unwrap() + 2..].split_whitespace().collect();
        fields[0] != "Z" && fields[19].parse::<u64>().unwrap() == child_start
    }) {
        assert!(std::time::Instant::now() < deadline, "the orphan's child survived");
        std::thread::sleep(Duration::from_millis(50));
    }
    let states = fx.attempt_states(&report.session_id, "root.t2");
    assert_eq!(states, vec![AttemptState::Cancelled, AttemptState::Cancelled, AttemptState::Succeeded]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_the_crashed_runner_started_before_committing_its_attempt_is_stopped_on_resume() {
    let fx = Fixture::new();
    let root = two_tasks(&fx, "sleep 30");
    let stopped = fx.run_and_stop_at(&root, &[], "root.t2").await;
    // The store knows no attempt of it: only the session's id names it.
    let mut store = fx.store();
    store.set_session_state(&stopped.session_id, SessionState::Running, None, None).unwrap();
    use std::os::unix::process::CommandExt;
    let ready = fx.path("ready");
    let mut orphan = std::process::Command::new("/bin/sh")
        .args(["-c", &format!("trap '' TERM; echo > {}; sleep 30", ready.display())])
        .env("ORRERY_SESSION_ID", &stopped.session_id)
        .process_group(0)
        .spawn()
        .expect("the orphan starts");
    let reaper = std::thread::spawn(move || orphan.wait());
    // It ignores SIGTERM from here on.
    while !ready.exists() {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    std::fs::write(fx.path("go"), "").unwrap();
    let report = fx.resume(&stopped.session_id).await.expect("the session resumes");

    assert_eq!(report.state, SessionState::Completed, "{:?}", report.error);
    let status = reaper.join().unwrap().expect("the orphan was reaped");
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(9), "killed after ignoring SIGTERM: {status:?}");
}
