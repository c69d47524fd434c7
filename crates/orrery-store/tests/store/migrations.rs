use orrery_store::migrations::{create_at_version, MIGRATIONS, SCHEMA_VERSION};
use orrery_store::FailureCode;
use orrery_store::{NewSession, Store};
use serde_json::json;

use crate::Fixture;

#[test]
fn an_empty_file_is_migrated_to_the_newest_schema() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("empty.db");
    std::fs::write(&path, b"").unwrap();
    let store = Store::open(&path).expect("an empty file is a database with no schema yet");
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION, "every migration ran");
    store.check_integrity().expect("the new schema passes integrity_check");
}

#[test]
fn a_missing_file_and_its_folders_are_created() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a/b/c/orrery.db");
    let store = Store::open(&path).expect("missing parent folders are created");
    assert!(path.exists(), "the database file exists after open");
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
}

#[test]
fn many_connections_opening_a_new_file_at_once_all_get_the_store() {
    for round in 0..20 {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("new.db");
        let barrier = std::sync::Arc::new(std::sync::Barrier::new(8));
        let opening: Vec<_> = (0..8)
            .map(|_| {
                let (path, barrier) = (path.clone(), barrier.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    Store::open(&path).map(|s| s.schema_version().unwrap())
                })
            })
            .collect();
        for opened in opening {
            let version = opened.join().unwrap().unwrap_or_else(|e| panic!("round {round}: {e} ({})", e.code()));
            assert_eq!(version, SCHEMA_VERSION);
        }
    }
}

#[test]
fn reopening_is_a_no_op_and_keeps_the_data() {
    let mut fixture = Fixture::open();
    let session = fixture.session();
    let before = fixture.store.last_event_seq(&session.id).unwrap();
    let fixture = fixture.reopen();
    assert_eq!(fixture.store.schema_version().unwrap(), SCHEMA_VERSION);
    assert_eq!(fixture.store.session(&session.id).unwrap(), session, "the session survives reopening");
    assert_eq!(fixture.store.last_event_seq(&session.id).unwrap(), before, "reopening appended nothing");
}

#[test]
fn a_database_at_every_earlier_version_upgrades_to_the_newest() {
    assert_eq!(MIGRATIONS.len() as u32, SCHEMA_VERSION);
    for version in 0..SCHEMA_VERSION {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(format!("v{version}.db"));
        create_at_version(&path, version).expect("an old database can be built");
        let conn = rusqlite::Connection::open(&path).unwrap();
        let at: u32 = conn.pragma_query_value(None, "user_version", |r| r.get(0)).unwrap();
        assert_eq!(at, version, "the fixture database is at version {version}");
        drop(conn);

        let mut store = Store::open(&path).unwrap_or_else(|e| panic!("a version {version} database must upgrade: {e}"));
        assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION, "upgraded from {version}");
        store.check_integrity().expect("the upgraded database passes integrity_check");
        let hash = store.put_blueprint_version("b", "{}").unwrap();
        store
            .create_session(
                &NewSession {
                    blueprint_hash: hash,
                    name: "n".into(),
                    params: json!({}),
                    restarted_from: None,
                    started_by: None,
                    file: None,
                    simulation: None,
                },
                None,
            )
            .expect("the upgraded schema takes writes");
    }
}

#[test]
fn a_migration_that_fails_leaves_the_database_at_the_version_it_had() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.db");
    create_at_version(&path, 18).expect("a version 18 database");
    // What migration 21 creates is already there: 19 and 20 apply, 21 cannot.
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch("CREATE TABLE data_history (x)").unwrap();
    drop(conn);
    let err = Store::open(&path).expect_err("migration 21 fails");
    assert_eq!(err.code(), FailureCode::Migration);
    assert!(err.to_string().contains("0021_data_history"), "the message names the migration: {err}");
    let conn = rusqlite::Connection::open(&path).unwrap();
    let version: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0)).unwrap();
    assert_eq!(version, 18, "the version it had");
    let edits: i64 =
        conn.query_row("SELECT count(*) FROM sqlite_master WHERE name = 'data_edits'", [], |r| r.get(0)).unwrap();
    assert_eq!(edits, 0, "nothing of migrations 19 and 20 is left");
}

#[test]
fn a_database_newer_than_the_code_is_refused_with_a_migration_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("future.db");
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.pragma_update(None, "user_version", SCHEMA_VERSION + 1).unwrap();
    drop(conn);
    let err = Store::open(&path).expect_err("a newer schema must not be guessed at");
    assert_eq!(err.code(), FailureCode::Migration);
    assert!(err.to_string().contains("future.db"), "the message names the file: {err}");
    assert!(err.to_string().contains("newer"), "the message says why: {err}");
}

#[test]
fn events_written_before_version_3_get_their_global_order_by_time() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v2.db");
    create_at_version(&path, 2).expect("a version 2 database");
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        "INSERT INTO blueprint_versions (hash, blueprint_id, canonical_json, created_ms) VALUES ('h', 'b', '{}', 1);
         INSERT INTO sessions (id, blueprint_hash, blueprint_id, name, state, params_json, created_ms)
             VALUES ('s1', 'h', 'b', 'one', 'pending', '{}', 1), ('s2', 'h', 'b', 'two', 'pending', '{}', 2);
         INSERT INTO events (session_id, seq, time_ms, kind, run_id, payload) VALUES
             ('s1', 1, 10, 'session_created', NULL, '{}'),
             ('s2', 1, 5, 'session_created', NULL, '{}'),
             ('s1', 2, 20, 'note', NULL, '{}');",
    )
    .expect("rows of version 2");
    drop(conn);

    let mut store = Store::open(&path).expect("version 2 upgrades");
    let events = store.events_since(0, 200).unwrap();
    let order: Vec<(&str, u64, u64)> = events.iter().map(|e| (e.session_id.as_str(), e.seq, e.global_seq)).collect();
    assert_eq!(order, [("s2", 1, 1), ("s1", 1, 2), ("s1", 2, 3)]);
    assert_eq!(
        events[2].payload,
        orrery_store::EventPayload::Unknown { kind: "note".into(), value: json!({}) },
        "a kind this build does not know is kept as it was stored"
    );
    let next = store.append_event("s2", &crate::note("after"), None);
    assert_eq!(next.unwrap().global_seq, 4, "new events go on after the numbered ones");
}
