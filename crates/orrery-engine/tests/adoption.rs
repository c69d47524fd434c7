//! Recovery with supervisors (issue 16, item 3): a `shell.run` attempt whose runner died is
//! settled from its exit record when its process finished meanwhile, adopted (waited for, not
//! killed) while its supervisor still runs it, stopped like any run when the resumed session
//! is stopped, and run again only when its outcome cannot be known (an unreadable record).
//!
//! The runner's death is real for the process: the attempt's process is started by
//! [`shell::run`] on a runtime of its own, which is then dropped, so nothing of the engine
//! watches it any more; only its supervisor does.

use std::path::PathBuf;
use std::time::Duration;

use orrery_blueprint::{Blueprint, SessionState};
use orrery_engine::agents::{shell, AgentOutcome};
use orrery_engine::process::supervisor;
use orrery_engine::runner::{resume_session, run_session, RunError, RunReport, SessionControl};
use orrery_store::{AttemptState, NewAttempt, ProcessIdentity, RunId};
use serde_json::{json, Map};

mod common;
use common::*;

/// `t1` appends `one`; `t2` appends `two` once `go` exists, else sleeps.
fn two_tasks(fx: &Fixture) -> Blueprint {
    let ran = fx.path("ran.txt");
    let t1 = sh("t1", &format!("echo one >> '{}'", ran.display()), "start");
    let t2 = sh(
        "t2",
        &format!("if [ -f '{}' ]; then echo two >> '{}'; else sleep 30; fi", fx.path("go").display(), ran.display()),
        "t1",
    );
    blueprint("root", vec![start(), t1, t2, end("t2")])
}

/// Runs the session and stops it once `root.t2` started: a session with t1 done.
async fn stopped_at_t2(fx: &Fixture, root: &Blueprint) -> String {
    let (valid, library) = valid(root, &[]);
    let control = SessionControl::new();
    let (options, mut receiver) = fx.options(Some(&control));
    let db = fx.db();
    let handle = tokio::spawn(async move { run_session(&db, valid, library, Map::new(), options).await });
    wait_for_attempt(&mut receiver, "root.t2").await;
    control.stop();
    let report = tokio::time::timeout(Duration::from_secs(30), handle).await.unwrap().unwrap().unwrap();
    assert_eq!(report.state, SessionState::Stopped);
    report.session_id
}

/// What a runner that died mid-attempt leaves: the attempt `running` with its log path and
/// process, the session `running`, and the process still under its supervisor, which nothing
/// else watches. The attempt's stem.
fn crash_during(fx: &Fixture, session_id: &str, command: &str) -> (RunId, PathBuf, Option<(u32, u64)>) {
    crash(fx, session_id, command, false)
}

/// [`crash_during`]; with `cancel_first`, the runner cancels the attempt (as a stop does) and
/// dies once its process is stopped, before it settled the attempt.
fn crash(fx: &Fixture, session_id: &str, command: &str, cancel_first: bool) -> (RunId, PathBuf, Option<(u32, u64)>) {
    let mut store = fx.store();
    let n = store.attempts(session_id).unwrap().iter().filter(|a| a.node == "root.t2").count() + 1;
    let stem = fx.path("work").join(session_id).join(format!("root.t2.attempt-{n}"));
    let log_path = shell::attempt_file(&stem, "log");
    let new = NewAttempt { agent: "shell.run".into(), log_path: Some(log_path.clone()), ..NewAttempt::default() };
    let (attempt, _) = store.begin_attempt(session_id, "root.t2", &new).unwrap();
    store.set_session_state(session_id, SessionState::Running, None, None).unwrap();

    let mut params = Map::new();
    params.insert("command".into(), json!(command));
    let mut shell_attempt = shell::ShellAttempt::new(params, Map::new(), &stem, &log_path);
    shell_attempt.run_id = Some(attempt.run_id.as_str().to_string());
    shell_attempt.session_id = Some(session_id.to_string());
    let (tx, rx) = std::sync::mpsc::channel();
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    runtime.spawn(async move {
        shell::run(
            shell_attempt,
            move |started| {
                let _ = tx.send((started.pid, started.start_time, started.canceller));
            },
            |_| {},
        )
        .await
    });
    let started = rx.recv_timeout(Duration::from_secs(20)).ok();
    let process = started.as_ref().map(|(pid, start_time, _)| (*pid, *start_time));
    if let Some((pid, start_time)) = process {
        store.set_attempt_process(&attempt.run_id, ProcessIdentity { pid, start_time }, None).unwrap();
    }
    if let (true, Some((_, _, canceller))) = (cancel_first, started) {
        canceller.cancel();
        let until = std::time::Instant::now() + Duration::from_secs(20);
        while !matches!(supervisor::read_record(&stem, None), Ok(Some(_))) {
            assert!(std::time::Instant::now() < until, "the cancelled process was recorded");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    // The runner dies: nothing of the engine watches the process any more.
    runtime.shutdown_background();
    (attempt.run_id, stem, process)
}

async fn resume(fx: &Fixture, session_id: &str, control: Option<&SessionControl>) -> Result<RunReport, RunError> {
    let (options, _) = fx.options(control);
    tokio::time::timeout(Duration::from_secs(60), resume_session(&fx.db(), session_id, options))
        .await
        .expect("the resumed session ended in time")
}

fn t2_states(fx: &Fixture, session_id: &str) -> Vec<AttemptState> {
    fx.store().attempts(session_id).unwrap().into_iter().filter(|a| a.node == "root.t2").map(|a| a.state).collect()
}

/// Waits for the exit record of the attempt whose files are named `stem`.
async fn wait_for_record(stem: &std::path::Path) {
    let until = std::time::Instant::now() + Duration::from_secs(20);
    while !matches!(supervisor::read_record(stem, None), Ok(Some(_))) {
        assert!(std::time::Instant::now() < until, "the exit of {} was never recorded", stem.display());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_that_finished_while_no_runner_lived_is_settled_from_its_record() {
    let fx = Fixture::new();
    let root = two_tasks(&fx);
    let session = stopped_at_t2(&fx, &root).await;
    let ran = fx.path("ran.txt");
    let (_, stem, process) = crash_during(&fx, &session, &format!("echo two >> '{}'; echo done", ran.display()));
    assert!(process.is_some());
    wait_for_record(&stem).await;
    // Were it run again, it would write `two` a second time.
    std::fs::write(fx.path("go"), "").unwrap();

    let report = resume(&fx, &session, None).await.expect("the session resumes");

    assert_eq!(report.state, SessionState::Completed, "{:?}", report.error);
    assert_eq!(read(&ran), "one\ntwo\n", "t2 finished once, before the resume");
    assert_eq!(t2_states(&fx, &session), vec![AttemptState::Cancelled, AttemptState::Succeeded]);
    assert_eq!(read(&shell::attempt_file(&stem, "log")), "done\n", "its log is kept");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_still_running_under_its_supervisor_is_adopted_not_killed() {
    let fx = Fixture::new();
    let root = two_tasks(&fx);
    let session = stopped_at_t2(&fx, &root).await;
    let ran = fx.path("ran.txt");
    let go2 = fx.path("go2");
    let command = format!("while [ ! -f '{}' ]; do sleep 0.05; done; echo two >> '{}'", go2.display(), ran.display());
    let (_, _, process) = crash_during(&fx, &session, &command);
    let (pid, start_time) = process.expect("the process started");
    std::fs::write(fx.path("go"), "").unwrap();

    let resumed = {
        let fx_db = fx.db();
        let work = fx.path("work");
        let session = session.clone();
        tokio::spawn(async move {
            let options = orrery_engine::runner::RunOptions {
                max_parallel: 2,
                work_dir: work,
                events: None,
                control: None,
                broker: None,
                retry: None,
                started_by: None,
                file: None,
                breakpoints: Vec::new(),
                hold_on_failure: false,
                simulation: None,
            };
            resume_session(&fx_db, &session, options).await
        })
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(orrery_engine::process::is_alive(pid, start_time), "the adopted process was not killed");
    std::fs::write(&go2, "").unwrap();
    let report = tokio::time::timeout(Duration::from_secs(60), resumed).await.unwrap().unwrap().unwrap();

    assert_eq!(report.state, SessionState::Completed, "{:?}", report.error);
    assert_eq!(read(&ran), "one\ntwo\n", "the adopted attempt finished; nothing ran it again");
    assert_eq!(t2_states(&fx, &session), vec![AttemptState::Cancelled, AttemptState::Succeeded]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_the_resumed_session_stops_an_adopted_process() {
    let fx = Fixture::new();
    let root = two_tasks(&fx);
    let session = stopped_at_t2(&fx, &root).await;
    let (_, _, process) = crash_during(&fx, &session, "trap '' TERM; sleep 30");
    let (pid, start_time) = process.expect("the process started");

    let control = SessionControl::new();
    let resumed = {
        let (options, _) = fx.options(Some(&control));
        let db = fx.db();
        let session = session.clone();
        tokio::spawn(async move { resume_session(&db, &session, options).await })
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(orrery_engine::process::is_alive(pid, start_time), "adopted, still running");
    control.stop();
    let report = tokio::time::timeout(Duration::from_secs(60), resumed).await.unwrap().unwrap().unwrap();

    assert_eq!(report.state, SessionState::Stopped);
    assert!(!orrery_engine::process::is_alive(pid, start_time), "stopped (TERM ignored: KILL after the grace)");
    assert_eq!(t2_states(&fx, &session), vec![AttemptState::Cancelled, AttemptState::Cancelled]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreadable_record_is_an_unknown_outcome_naming_the_file_and_the_task_runs_again() {
    let fx = Fixture::new();
    let root = two_tasks(&fx);
    let session = stopped_at_t2(&fx, &root).await;
    let (_, stem, _) = crash_during(&fx, &session, "true");
    wait_for_record(&stem).await;
    // Its line (the last) cut short after its names, as a crash in the middle of its write would.
    let record = stem.with_file_name(supervisor::RECORDS_FILE);
    let line = std::fs::read_to_string(&record).unwrap();
    let named = line.rfind(r#""leader""#).expect("its line, the last, names the attempt and its run first");
    std::fs::write(&record, &line[..named]).unwrap();
    std::fs::write(fx.path("go"), "").unwrap();

    let report = resume(&fx, &session, None).await.expect("the session resumes");

    assert_eq!(report.state, SessionState::Completed, "{:?}", report.error);
    assert_eq!(t2_states(&fx, &session), vec![AttemptState::Cancelled, AttemptState::Unknown, AttemptState::Succeeded]);
    let unknown =
        fx.store().attempts(&session).unwrap().into_iter().find(|a| a.state == AttemptState::Unknown).unwrap();
    let message = unknown.error.expect("it says why").message;
    assert!(message.contains(&record.display().to_string()) && message.contains("cannot be known"), "{message}");
    assert_eq!(read(&fx.path("ran.txt")), "one\ntwo\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_its_runner_cancelled_before_dying_is_settled_cancelled_and_runs_again() {
    let fx = Fixture::new();
    let root = two_tasks(&fx);
    let session = stopped_at_t2(&fx, &root).await;
    let (_, stem, _) = crash(&fx, &session, "sleep 30", true);
    let record = supervisor::read_record(&stem, None);
    assert_eq!(record.unwrap().unwrap().stopped.as_deref(), Some("cancelled"));
    std::fs::write(fx.path("go"), "").unwrap();

    let report = resume(&fx, &session, None).await.expect("the session resumes");

    assert_eq!(report.state, SessionState::Completed, "{:?}", report.error);
    assert_eq!(
        t2_states(&fx, &session),
        vec![AttemptState::Cancelled, AttemptState::Cancelled, AttemptState::Succeeded]
    );
    assert_eq!(read(&fx.path("ran.txt")), "one\ntwo\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_whose_attempt_never_landed_and_that_finished_is_adopted_from_its_record() {
    let fx = Fixture::new();
    let root = two_tasks(&fx);
    let session = stopped_at_t2(&fx, &root).await;
    let mut store = fx.store();
    store.set_session_state(&session, SessionState::Running, None, None).unwrap();
    // The runner spawned attempt 2 of t2 and died before its commit: the store knows nothing.
    let stem =
        fx.path("work").join(&session).join(format!("{}.attempt-2", orrery_blueprint::fsio::file_name("root.t2")));
    let ran = fx.path("ran.txt");
    let mut params = Map::new();
    params.insert("command".into(), json!(format!("echo two >> '{}'", ran.display())));
    let mut attempt = shell::ShellAttempt::new(params, Map::new(), &stem, shell::attempt_file(&stem, "log"));
    attempt.run_id = Some("a-run-that-never-landed".into());
    attempt.session_id = Some(session.clone());
    let outcome = shell::run(attempt, |_| {}, |_| {}).await;
    assert!(matches!(outcome, AgentOutcome::Succeeded { .. }), "{outcome:?}");
    std::fs::write(fx.path("go"), "").unwrap();

    let report = resume(&fx, &session, None).await.expect("the session resumes");

    assert_eq!(report.state, SessionState::Completed, "{:?}", report.error);
    assert_eq!(read(&ran), "one\ntwo\n", "its process finished: it did not run again");
    assert_eq!(t2_states(&fx, &session), vec![AttemptState::Cancelled, AttemptState::Succeeded]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_adopted_process_still_times_out_from_its_attempt_start() {
    let fx = Fixture::new();
    let t1 = sh("t1", "true", "start");
    let mut t2 = sh("t2", "sleep 30", "t1");
    t2["params"].as_array_mut().unwrap().push(json!({"name": "timeout_s", "value": 1}));
    let root = blueprint("root", vec![start(), t1, t2, end("t2")]);
    let session = stopped_at_t2(&fx, &root).await;
    let (_, _, process) = crash_during(&fx, &session, "sleep 30");
    let (pid, start_time) = process.expect("the process started");

    let began = std::time::Instant::now();
    let report = resume(&fx, &session, None).await.expect("the session resumes");
    eprintln!("the adopted attempt timed out {:?} into the resume", began.elapsed());

    assert_eq!(report.state, SessionState::Failed);
    let error = report.error.expect("why");
    assert!(error.message.contains("timed out after 1 s"), "{error:?}");
    assert!(!orrery_engine::process::is_alive(pid, start_time), "the timed-out process was stopped");
    assert_eq!(t2_states(&fx, &session), vec![AttemptState::Cancelled, AttemptState::Failed]);
}
