//! Acting on a running session: cancel a task, pause, requests from other processes, and the
//! runner's lease. Real `shell.run` processes on a real SQLite file.

use std::sync::Arc;
use std::time::Duration;

use orrery_blueprint::{Blueprint, SessionState, TaskState};
use orrery_engine::runner::{resume_session, run_session, RunError, RunReport, SessionControl};
use orrery_store::{AttemptState, Event, Request, Store, StoreError};
use serde_json::Map;
use tokio::sync::broadcast;

mod common;
use common::*;

fn spawn(
    fx: &Fixture,
    root: &Blueprint,
    control: &SessionControl,
) -> (tokio::task::JoinHandle<Result<RunReport, RunError>>, broadcast::Receiver<Arc<Event>>) {
    let (valid, library) = valid(root, &[]);
    let (options, receiver) = fx.options(Some(control));
    let db = fx.db();
    (tokio::spawn(async move { run_session(&db, valid, library, Map::new(), options).await }), receiver)
}

async fn ended(handle: tokio::task::JoinHandle<Result<RunReport, RunError>>) -> RunReport {
    tokio::time::timeout(Duration::from_secs(30), handle)
        .await
        .expect("the session ended in time")
        .expect("the runner task ends")
        .expect("the session runs")
}

fn attempts(store: &Store, session: &str, node: &str) -> Vec<orrery_store::Attempt> {
    store.attempts(session).expect("attempts read").into_iter().filter(|a| a.node == node).collect()
}

fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| !matches!(s.rsplit(')').next().and_then(|r| r.split_whitespace().next()), Some("Z" | "X")))
        .unwrap_or(false)
}

/// A task that starts a grandchild, ignores SIGTERM and waits; the grandchild's pid lands in
/// `pid_file`.
fn stubborn(id: &str, pid_file: &std::path::Path) -> serde_json::Value {
    sh(id, &format!("trap '' TERM; sleep 60 & echo $! > {}; wait", pid_file.display()), "start")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_running_task_kills_its_whole_group_fails_it_and_a_resume_runs_it_again() {
    let fx = Fixture::new();
    let pid_file = fx.path("grandchild.pid");
    let root = blueprint("cancel", vec![start(), stubborn("slow", &pid_file), end("slow")]);
    let control = SessionControl::new();
    let (handle, mut receiver) = spawn(&fx, &root, &control);
    wait_for_attempt(&mut receiver, "cancel.slow").await;
    while read(&pid_file).trim().is_empty() {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let grandchild: i32 = read(&pid_file).trim().parse().expect("a pid");
    control.cancel_task("slow");
    let report = ended(handle).await;

    assert_eq!(report.state, SessionState::Failed);
    let error = report.error.expect("the session failed with the task's error");
    assert_eq!(error.code, "TASK_FAILED");
    assert!(error.message.contains("'cancel.slow' was cancelled"), "{}", error.message);
    assert!(!alive(grandchild), "the grandchild that ignored SIGTERM is gone");
    let store = fx.store();
    let slow = attempts(&store, &report.session_id, "cancel.slow");
    assert_eq!(slow.len(), 1);
    assert_eq!(slow[0].state, AttemptState::Cancelled);
    assert_eq!(slow[0].exit_code, Some(130), "a cancelled process exits 130");
    assert_eq!(store.task_node(&report.session_id, "cancel.slow").unwrap().state, TaskState::Failed);

    // Retry from failure runs it again as a new attempt.
    let control = SessionControl::new();
    let (options, mut receiver) = fx.options(Some(&control));
    let (db, session) = (fx.db(), report.session_id.clone());
    let handle = tokio::spawn(async move { resume_session(&db, &session, options).await });
    wait_for_attempt(&mut receiver, "cancel.slow").await;
    control.stop();
    assert_eq!(ended(handle).await.state, SessionState::Stopped);
    let slow = attempts(&store, &report.session_id, "cancel.slow");
    assert_eq!(slow.iter().map(|a| a.attempt).collect::<Vec<_>>(), [1, 2]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_process_cancels_a_task_through_a_request_in_the_store() {
    let fx = Fixture::new();
    let root = blueprint("remote", vec![start(), sh("slow", "sleep 30", "start"), end("slow")]);
    let control = SessionControl::new();
    let (handle, mut receiver) = spawn(&fx, &root, &control);
    let started = wait_for_attempt(&mut receiver, "remote.slow").await;
    // A second handle on the file stands for another `orrery`.
    let mut other = fx.store();
    let refused = other.request(&started.session_id, &Request::Cancel { task: "end".into() }).unwrap();
    let cancel = other.request(&started.session_id, &Request::Cancel { task: "remote.slow".into() }).unwrap();
    let report = ended(handle).await;
    assert_eq!(report.state, SessionState::Failed);
    assert_eq!(other.request_outcome(refused).unwrap().as_deref(), Some("refused: task end is not running"));
    assert_eq!(other.request_outcome(cancel).unwrap().as_deref(), Some("cancelling remote.slow"));
    let slow = attempts(&other, &report.session_id, "remote.slow");
    assert_eq!(slow[0].state, AttemptState::Cancelled);
    assert!(other.open_requests(&report.session_id).unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_request_from_another_process_stops_the_session() {
    let fx = Fixture::new();
    let root = blueprint("halt", vec![start(), sh("slow", "sleep 30", "start"), end("slow")]);
    let control = SessionControl::new();
    let (handle, mut receiver) = spawn(&fx, &root, &control);
    let started = wait_for_attempt(&mut receiver, "halt.slow").await;
    let id = fx.store().request(&started.session_id, &Request::Stop).unwrap();
    let report = ended(handle).await;
    assert_eq!(report.state, SessionState::Stopped);
    assert_eq!(fx.store().request_outcome(id).unwrap().as_deref(), Some("stopping"));
    let slow = attempts(&fx.store(), &report.session_id, "halt.slow");
    assert_eq!(slow[0].state, AttemptState::Cancelled);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_session_lets_its_running_task_finish_starts_nothing_more_and_resumes_from_there() {
    let fx = Fixture::new();
    let log = fx.path("ran.txt");
    let step = |id: &str, after: &str| sh(id, &format!("sleep 0.3; echo {id} >> {}", log.display()), after);
    let root = blueprint("pausing", vec![start(), step("a", "start"), step("b", "a"), end("b")]);
    let control = SessionControl::new();
    let (handle, mut receiver) = spawn(&fx, &root, &control);
    wait_for_attempt(&mut receiver, "pausing.a").await;
    control.pause();
    let report = ended(handle).await;
    assert_eq!(report.state, SessionState::Stopped);
    assert_eq!(read(&log), "a\n", "a finished, b never started");
    let store = fx.store();
    assert_eq!(store.task_node(&report.session_id, "pausing.a").unwrap().state, TaskState::Succeeded);
    assert_eq!(store.task_node(&report.session_id, "pausing.b").unwrap().state, TaskState::Pending);
    assert!(attempts(&store, &report.session_id, "pausing.b").is_empty());

    let (options, _rx) = fx.options(None);
    let resumed = resume_session(&fx.db(), &report.session_id, options).await.expect("it resumes");
    assert_eq!(resumed.state, SessionState::Completed);
    assert_eq!(read(&log), "a\nb\n", "a did not run twice");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_driven_by_a_live_runner_cannot_be_resumed_by_another() {
    let fx = Fixture::new();
    let root = blueprint("busy", vec![start(), sh("slow", "sleep 30", "start"), end("slow")]);
    let control = SessionControl::new();
    let (handle, mut receiver) = spawn(&fx, &root, &control);
    let started = wait_for_attempt(&mut receiver, "busy.slow").await;
    let (options, _rx) = fx.options(None);
    let second = resume_session(&fx.db(), &started.session_id, options).await;
    match second {
        Err(RunError::Store(e @ StoreError::Leased { .. })) => {
            assert!(e.to_string().contains(&std::process::id().to_string()), "{e}")
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    // The first runner was not disturbed.
    let slow = attempts(&fx.store(), &started.session_id, "busy.slow");
    assert_eq!(slow.len(), 1);
    assert_eq!(slow[0].state, AttemptState::Running);
    control.stop();
    assert_eq!(ended(handle).await.state, SessionState::Stopped);
    // Once it let go, the session can be resumed.
    assert_eq!(fx.store().lease(&started.session_id).unwrap(), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_composite_is_not_cancelled_itself_but_its_inner_task_is() {
    let fx = Fixture::new();
    let inner = blueprint("inner", vec![start(), sh("slow", "sleep 30", "start"), end("slow")]);
    let root = blueprint(
        "outer",
        vec![
            start(),
            serde_json::json!({"id": "c", "type": "system.composite", "depends_on": [{"id": "start"}],
                "params": [{"name": "blueprint", "value": {"static": "inner"}}]}),
            end("c"),
        ],
    );
    let (valid, library) = valid(&root, &[&inner]);
    let control = SessionControl::new();
    let (options, mut receiver) = fx.options(Some(&control));
    let db = fx.db();
    let handle = tokio::spawn(async move { run_session(&db, valid, library, Map::new(), options).await });
    let started = wait_for_attempt(&mut receiver, "inner_c.slow").await;
    let mut other = fx.store();
    let composite = other.request(&started.session_id, &Request::Cancel { task: "outer.c".into() }).unwrap();
    let slow = other.request(&started.session_id, &Request::Cancel { task: "inner_c.slow".into() }).unwrap();
    let report = ended(handle).await;
    assert_eq!(report.state, SessionState::Failed);
    assert_eq!(
        other.request_outcome(composite).unwrap().as_deref(),
        Some("refused: outer.c is a composite; cancel the inner task that runs")
    );
    assert_eq!(other.request_outcome(slow).unwrap().as_deref(), Some("cancelling inner_c.slow"));
}
