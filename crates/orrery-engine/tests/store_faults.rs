//! The runner when the store refuses it: another process holds the write lock past the busy
//! timeout while a task runs. The session must say why it ended (never `running` with no runner
//! and no word), and retry from failure must finish it.

use std::time::Duration;

use orrery_blueprint::SessionState;
use orrery_engine::runner::{resume_session, run_session};
use orrery_store::AttemptState;
use serde_json::{json, Map};

mod common;
use common::*;

/// Another process's writer (a bare connection: it does not queue with this process's writers)
/// holding the store's write lock for `how_long`, past the 5 s busy timeout.
fn hold_the_write_lock(db: &std::path::Path, how_long: Duration) -> std::thread::JoinHandle<()> {
    let blocker = rusqlite::Connection::open(db).unwrap();
    blocker.execute_batch("BEGIN IMMEDIATE").unwrap();
    std::thread::spawn(move || {
        std::thread::sleep(how_long);
        blocker.execute_batch("ROLLBACK").unwrap();
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runner_the_store_refuses_records_why_on_the_session_and_resume_finishes_it() {
    let fx = Fixture::new();
    let root = blueprint("held", vec![start(), sh("slow", "sleep 1", "start"), end("slow")]);
    let (valid, library) = valid(&root, &[]);
    let (options, mut receiver) = fx.options(None);
    let db = fx.db();
    let run = tokio::spawn(async move { run_session(&db, valid, library, Map::new(), options).await });
    let started = wait_for_attempt(&mut receiver, "held.slow").await;

    // Another process takes the write lock while `slow` runs.
    let holder = hold_the_write_lock(&fx.db(), Duration::from_secs(7));
    let report = tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .expect("the runner ended in time")
        .unwrap()
        .expect("the runner answers a report: it recorded its failure");
    holder.join().unwrap();
    assert_eq!(report.state, SessionState::Failed);
    let error = report.error.expect("the report says why");
    assert!(error.message.contains("could not go on") && error.message.contains("busy"), "{}", error.message);

    let session = fx.store().session(&started.session_id).unwrap();
    assert_eq!(session.state, SessionState::Failed, "the store says it too");
    assert_eq!(session.last_error.as_ref().map(|e| e.message.as_str()), Some(error.message.as_str()));

    let (options, _) = fx.options(None);
    let resumed = tokio::time::timeout(Duration::from_secs(60), resume_session(&fx.db(), &started.session_id, options))
        .await
        .expect("the resume ended in time")
        .expect("the session resumes");
    assert_eq!(resumed.state, SessionState::Completed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_round_the_store_cannot_commit_behind_the_runner_ends_the_session_while_its_task_still_runs() {
    let fx = Fixture::new();
    // `nap` has no process: nothing of it reports to the runner before its end.
    let nap = json!({"id": "nap", "type": "system.sleep", "params": [{"name": "duration", "value": 120}],
        "depends_on": [{"id": "first"}]});
    let root = blueprint("behind", vec![start(), sh("first", "sleep 2", "start"), nap, end("nap")]);
    let (valid, library) = valid(&root, &[]);
    let (options, mut receiver) = fx.options(None);
    let db = fx.db();
    let run = tokio::spawn(async move { run_session(&db, valid, library, Map::new(), options).await });
    let started = wait_for_attempt(&mut receiver, "behind.first").await;

    // While `first` runs (its process recorded: 50 ms after its start), another process's
    // writer takes the lock past the busy timeout: the round that settles `first` and begins
    // `nap` is committed behind the runner, and fails.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let holder = hold_the_write_lock(&fx.db(), Duration::from_secs(7));
    // Not at `nap`'s end, two minutes on: the runner hears of the failed commit from its next
    // read of the store (its poll of requests).
    let report = tokio::time::timeout(Duration::from_secs(40), run)
        .await
        .expect("the runner ended before its task did")
        .unwrap()
        .expect("the runner answers a report: it recorded its failure");
    holder.join().unwrap();
    assert_eq!(report.state, SessionState::Failed);
    let error = report.error.expect("the report says why");
    assert!(error.message.contains("could not go on") && error.message.contains("busy"), "{}", error.message);
    let session = fx.store().session(&started.session_id).unwrap();
    assert_eq!(session.state, SessionState::Failed, "the store says it too");
    // Nothing of the round landed: `first` is still running in the store, for a resume.
    let first = fx.store().attempts(&started.session_id).unwrap();
    assert_eq!(
        first.iter().map(|a| (a.node.as_str(), a.state)).collect::<Vec<_>>(),
        [("behind.start", AttemptState::Succeeded), ("behind.first", AttemptState::Running)]
    );
}
