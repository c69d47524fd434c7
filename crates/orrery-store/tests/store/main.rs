//! The store's integration tests: one binary, a real SQLite file in a temp dir for each test.

mod agent_notes;
mod attempts;
mod batch;
mod checklists;
mod control;
mod events;
mod failures;
mod idempotency;
mod memory;
mod migrations;
mod progress;
mod sessions;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use orrery_store::{
    EventData, ManualClock, NewAttempt, NewEvent, NewSession, NotificationShown, RunId, SequentialIds, Session, Store,
    StoreOptions, TaskState,
};
use serde_json::json;

pub const START_MS: i64 = 1_700_000_000_000;

/// A temp dir with `orrery.db` inside, opened with a manual clock and sequential ids.
pub struct Fixture {
    pub dir: tempfile::TempDir,
    pub clock: Arc<ManualClock>,
    pub store: Store,
}

impl Fixture {
    pub fn open() -> Fixture {
        let dir = tempfile::tempdir().expect("a temp dir can be created");
        let clock = Arc::new(ManualClock::new(START_MS));
        let store = Store::open_with(&dir.path().join("orrery.db"), options(&clock)).expect("a fresh store opens");
        Fixture { dir, clock, store }
    }

    pub fn path(&self) -> PathBuf {
        self.dir.path().join("orrery.db")
    }

    /// Another handle (another connection) on the same file.
    pub fn second_handle(&self) -> Store {
        Store::open_with(&self.path(), options(&self.clock)).expect("a second handle opens")
    }

    pub fn reopen(self) -> Fixture {
        let Fixture { dir, clock, store } = self;
        drop(store);
        let store = Store::open_with(&dir.path().join("orrery.db"), options(&clock)).expect("the store reopens");
        Fixture { dir, clock, store }
    }

    /// A session of a stored blueprint version.
    pub fn session(&mut self) -> Session {
        first_run(&mut self.store)
    }

    /// A session with node `hello.greet` and one running attempt at it.
    pub fn running_attempt(&mut self) -> (Session, RunId) {
        let session = self.session();
        self.store.set_task_states(&session.id, &[("hello.greet", TaskState::Pending)]).expect("a node is added");
        let (attempt, _) =
            self.store.begin_attempt(&session.id, "hello.greet", &shell_attempt()).expect("an attempt begins");
        (session, attempt.run_id)
    }
}

/// A session of the stored blueprint version `hello` in `store` ([`Fixture::session`]).
pub fn first_run(store: &mut Store) -> Session {
    let hash = store
        .put_blueprint_version("hello", r#"{"id":"hello","name":"Hello","version":"1.0"}"#)
        .expect("a blueprint version is stored");
    store
        .create_session(
            &NewSession {
                blueprint_hash: hash,
                name: "first run".into(),
                params: json!({"n": 1}),
                restarted_from: None,
                started_by: None,
                file: None,
                simulation: None,
            },
            None,
        )
        .expect("a session is created")
}

pub fn options(clock: &Arc<ManualClock>) -> StoreOptions {
    StoreOptions { clock: clock.clone(), ids: Arc::new(SequentialIds::default()), ..StoreOptions::default() }
}

pub fn shell_attempt() -> NewAttempt {
    NewAttempt {
        agent: "shell".into(),
        log_path: Some(PathBuf::from("/tmp/logs/run.log")),
        inputs: Some(json!({"who": "world"})),
        ..NewAttempt::default()
    }
}

/// An event a caller appends: a display task's message.
pub fn note(message: impl Into<String>) -> NewEvent {
    let shown = NotificationShown {
        node: "hello.show".into(),
        task: "show".into(),
        task_type: "user_interaction.notify".into(),
        title: None,
        message: Some(message.into()),
        level: None,
        values: None,
    };
    NewEvent { run_id: None, data: EventData::Notification(shown) }
}

/// Rows of a table, read with a separate plain connection so the store cannot hide anything.
pub fn count_rows(db: &Path, table: &str) -> i64 {
    let conn = rusqlite::Connection::open(db).expect("the file opens with plain SQLite");
    conn.query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |r| r.get(0)).expect("the table can be counted")
}
