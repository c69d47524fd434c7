//! Batches: several writes in one transaction, committed (and only then visible) at once.

use orrery_store::{ErrorRecord, Outcome, Settlement, StoreError, Synchronous, TaskState};
use serde_json::json;

use crate::{shell_attempt, Fixture};

fn succeeded() -> Settlement {
    Settlement {
        outcome: Outcome::Succeeded { exit_code: Some(0), outputs: json!({}) },
        node_state: Some(TaskState::Succeeded),
        data: Vec::new(),
    }
}

#[test]
fn writes_of_a_batch_are_seen_by_other_connections_only_once_committed() {
    let mut fixture = Fixture::open();
    let (session, run_id) = fixture.running_attempt();
    let other = fixture.second_handle();

    fixture.store.begin_batch(Synchronous::Full).unwrap();
    assert!(fixture.store.in_batch());
    fixture.store.settle_attempt(&run_id, succeeded()).unwrap();
    fixture.store.set_task_states(&session.id, &[("hello.next", TaskState::Pending)]).unwrap();
    // The batch reads its own writes...
    assert_eq!(fixture.store.task_node(&session.id, "hello.greet").unwrap().state, TaskState::Succeeded);
    // ...nobody else does yet.
    assert_eq!(other.task_node(&session.id, "hello.greet").unwrap().state, TaskState::Running);
    assert!(other.task_node(&session.id, "hello.next").is_err());

    fixture.store.commit_batch().unwrap();
    assert!(!fixture.store.in_batch());
    assert_eq!(other.task_node(&session.id, "hello.greet").unwrap().state, TaskState::Succeeded);
    assert_eq!(other.task_node(&session.id, "hello.next").unwrap().state, TaskState::Pending);
    // Event numbers stay gapless across the writes of one batch.
    let seqs: Vec<u64> = other.events_after(&session.id, 0, 200).unwrap().iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>());
}

#[test]
fn a_write_that_fails_inside_a_batch_undoes_only_itself() {
    let mut fixture = Fixture::open();
    let (session, run_id) = fixture.running_attempt();
    fixture.store.begin_batch(Synchronous::Full).unwrap();
    fixture.store.settle_attempt(&run_id, succeeded()).unwrap();
    let again = fixture.store.settle_attempt(
        &run_id,
        Settlement {
            outcome: Outcome::Failed {
                exit_code: Some(1),
                error: ErrorRecord { code: "TASK_FAILED".into(), message: "late".into(), details: None },
            },
            node_state: Some(TaskState::Failed),
            data: vec![("hello".into(), "k".into(), json!(1))],
        },
    );
    assert!(matches!(again, Err(StoreError::StaleRun { .. })), "{again:?}");
    fixture.store.commit_batch().unwrap();

    let fixture = fixture.reopen();
    assert_eq!(fixture.store.task_node(&session.id, "hello.greet").unwrap().state, TaskState::Succeeded);
    assert_eq!(fixture.store.data_value(&session.id, "hello", "k").unwrap(), None);
}

#[test]
fn a_batch_never_committed_leaves_nothing_behind() {
    let mut fixture = Fixture::open();
    let (session, run_id) = fixture.running_attempt();
    let before = fixture.store.events_after(&session.id, 0, 200).unwrap().len();
    fixture.store.begin_batch(Synchronous::Full).unwrap();
    fixture.store.settle_attempt(&run_id, succeeded()).unwrap();
    fixture.store.begin_attempt(&session.id, "hello.greet", &shell_attempt()).unwrap();
    // The owner dies before the commit.
    let fixture = fixture.reopen();
    assert_eq!(fixture.store.events_after(&session.id, 0, 200).unwrap().len(), before);
    assert_eq!(fixture.store.task_node(&session.id, "hello.greet").unwrap().state, TaskState::Running);
    assert_eq!(fixture.store.attempts(&session.id).unwrap().len(), 1);
}

#[test]
fn a_relaxed_commit_does_not_weaken_the_next_ones() {
    let mut fixture = Fixture::open();
    let (session, _) = fixture.running_attempt();
    let synchronous = |fixture: &Fixture| fixture.store.synchronous().unwrap();
    assert_eq!(synchronous(&fixture), Synchronous::Full);
    fixture.store.begin_batch(Synchronous::Normal).unwrap();
    assert_eq!(synchronous(&fixture), Synchronous::Normal);
    fixture.store.set_task_states(&session.id, &[("hello.next", TaskState::Pending)]).unwrap();
    // A write that needs the full level commits the relaxed batch and opens a full one.
    fixture.store.begin_batch(Synchronous::Full).unwrap();
    assert_eq!(synchronous(&fixture), Synchronous::Full);
    assert_eq!(
        fixture.second_handle().task_node(&session.id, "hello.next").unwrap().state,
        TaskState::Pending,
        "the relaxed batch was committed"
    );
    fixture.store.set_task_states(&session.id, &[("hello.last", TaskState::Pending)]).unwrap();
    // A relaxed write joins the open full batch.
    fixture.store.begin_batch(Synchronous::Normal).unwrap();
    assert_eq!(synchronous(&fixture), Synchronous::Full);
    fixture.store.commit_batch().unwrap();
    assert_eq!(synchronous(&fixture), Synchronous::Full);
    let fixture = fixture.reopen();
    assert_eq!(fixture.store.task_node(&session.id, "hello.next").unwrap().state, TaskState::Pending);
}

#[test]
fn commit_without_a_batch_does_nothing_and_begin_twice_keeps_one_batch() {
    let mut fixture = Fixture::open();
    let session = fixture.session();
    fixture.store.commit_batch().unwrap();
    fixture.store.begin_batch(Synchronous::Full).unwrap();
    fixture.store.begin_batch(Synchronous::Full).unwrap();
    fixture.store.set_task_states(&session.id, &[("hello.a", TaskState::Pending)]).unwrap();
    fixture.store.commit_batch().unwrap();
    assert!(!fixture.store.in_batch());
    let other = fixture.second_handle();
    assert_eq!(other.task_node(&session.id, "hello.a").unwrap().state, TaskState::Pending);
}

#[test]
fn a_batch_is_begun_at_once_only_when_nothing_makes_it_wait() {
    let mut fixture = Fixture::open();
    let session = fixture.session();
    let synchronous = |fixture: &Fixture| fixture.store.synchronous().unwrap();
    // Another writer of this process has the turn.
    let mut other = fixture.second_handle();
    other.begin_batch(Synchronous::Full).unwrap();
    assert!(!fixture.store.try_begin_batch(Synchronous::Full).unwrap(), "behind this process's other writer");
    assert!(!fixture.store.in_batch());
    other.commit_batch().unwrap();
    // A connection of its own (another process's, say) holds SQLite's write lock.
    let foreign = rusqlite::Connection::open(fixture.path()).unwrap();
    foreign.execute_batch("BEGIN IMMEDIATE").unwrap();
    assert!(!fixture.store.try_begin_batch(Synchronous::Full).unwrap(), "busy: not waited for");
    assert!(!fixture.store.in_batch());
    assert_eq!(synchronous(&fixture), Synchronous::Full, "nothing changed");
    foreign.execute_batch("ROLLBACK").unwrap();
    // Free: begun at the level asked; a relaxed write joins it, a full one would wait for its
    // commit.
    assert!(fixture.store.try_begin_batch(Synchronous::Normal).unwrap());
    assert_eq!((fixture.store.batch_level(), synchronous(&fixture)), (Some(Synchronous::Normal), Synchronous::Normal));
    assert!(fixture.store.try_begin_batch(Synchronous::Normal).unwrap());
    assert!(!fixture.store.try_begin_batch(Synchronous::Full).unwrap());
    fixture.store.set_task_states(&session.id, &[("hello.a", TaskState::Pending)]).unwrap();
    fixture.store.commit_batch().unwrap();
    assert_eq!(synchronous(&fixture), Synchronous::Full);
    // The busy timeout is as it was: a write waits for a lock let go soon after.
    foreign.execute_batch("BEGIN IMMEDIATE").unwrap();
    let release = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(200));
        foreign.execute_batch("ROLLBACK").unwrap();
    });
    fixture.store.begin_batch(Synchronous::Full).expect("waited for the lock");
    fixture.store.commit_batch().unwrap();
    release.join().unwrap();
    assert_eq!(fixture.second_handle().task_node(&session.id, "hello.a").unwrap().state, TaskState::Pending);
}
