use orrery_store::FailureCode;
use orrery_store::{ErrorRecord, NewSession, SessionFilter, SessionState, TaskState};
use serde_json::json;

use crate::{Fixture, START_MS};

#[test]
fn a_new_session_is_pending_with_its_blueprint_and_params() {
    let mut fixture = Fixture::open();
    let session = fixture.session();
    assert_eq!(session.id, "session-1", "ids come from the injected id source");
    assert_eq!(session.state, SessionState::Pending);
    assert_eq!(session.blueprint_id, "hello");
    assert_eq!(session.params, json!({"n": 1}));
    assert_eq!(session.created_ms, START_MS, "times come from the injected clock");
    assert_eq!(fixture.store.session("session-1").unwrap(), session);
    let events = fixture.store.events_after(&session.id, 0, 10).unwrap();
    assert_eq!(events.len(), 1, "creation is announced once");
    assert_eq!(events[0].kind(), "session_created");
}

#[test]
fn a_session_of_an_unknown_blueprint_version_is_not_found() {
    let mut fixture = Fixture::open();
    let err = fixture
        .store
        .create_session(
            &NewSession {
                blueprint_hash: "abc".into(),
                name: "x".into(),
                params: json!({}),
                restarted_from: None,
                started_by: None,
                file: None,
                simulation: None,
            },
            None,
        )
        .unwrap_err();
    assert_eq!(err.code(), FailureCode::NotFound);
    assert!(err.to_string().contains("abc"), "names the hash: {err}");
}

#[test]
fn an_unknown_session_is_not_found_by_every_reader() {
    let fixture = Fixture::open();
    let err = fixture.store.session("nope").unwrap_err();
    assert_eq!(err.code(), FailureCode::NotFound);
    assert!(err.to_string().contains("nope"), "names the session: {err}");
    assert_eq!(fixture.store.events_after("nope", 0, 10).unwrap_err().code(), FailureCode::NotFound);
    assert_eq!(fixture.store.attempts("nope").unwrap_err().code(), FailureCode::NotFound);
    assert_eq!(fixture.store.task_nodes("nope").unwrap_err().code(), FailureCode::NotFound);
}

#[test]
fn state_changes_record_times_and_the_last_error() {
    let mut fixture = Fixture::open();
    let session = fixture.session();
    fixture.clock.advance(10);
    fixture.store.set_session_state(&session.id, SessionState::Running, None, None).unwrap();
    fixture.clock.advance(10);
    let error = ErrorRecord {
        code: "TASK_FAILED".into(),
        message: "greet failed".into(),
        details: Some(json!({"node": "hello.greet"})),
    };
    let event = fixture.store.set_session_state(&session.id, SessionState::Failed, Some(&error), None).unwrap();
    assert_eq!(event.kind(), "session_state_changed");
    let stored = fixture.store.session(&session.id).unwrap();
    assert_eq!(stored.state, SessionState::Failed);
    assert_eq!(stored.started_ms, Some(START_MS + 10));
    assert_eq!(stored.finished_ms, Some(START_MS + 20));
    assert_eq!(stored.last_error, Some(error.clone()));

    fixture.clock.advance(10);
    fixture.store.set_session_state(&session.id, SessionState::Running, None, None).unwrap();
    let again = fixture.store.session(&session.id).unwrap();
    assert_eq!(again.started_ms, Some(START_MS + 10), "started is the first start");
    assert_eq!(again.finished_ms, None, "running again clears the finish time");
    assert_eq!(again.last_error, None, "running again clears the error of the run that is over");
    fixture.store.set_session_state(&session.id, SessionState::Failed, Some(&error), None).unwrap();
    fixture.store.set_session_state(&session.id, SessionState::Stopped, None, None).unwrap();
    let stopped = fixture.store.session(&session.id).unwrap();
    assert_eq!(stopped.last_error, Some(error), "a later state without an error keeps the last one");
}

#[test]
fn sessions_are_listed_newest_first_and_filtered() {
    let mut fixture = Fixture::open();
    let a = fixture.session();
    fixture.clock.advance(1);
    let b = fixture.session();
    fixture.store.set_session_state(&b.id, SessionState::Running, None, None).unwrap();
    let all = fixture.store.sessions(&SessionFilter::default()).unwrap();
    assert_eq!(all.iter().map(|s| s.id.as_str()).collect::<Vec<_>>(), vec![b.id.as_str(), a.id.as_str()]);
    let running =
        fixture.store.sessions(&SessionFilter { state: Some(SessionState::Running), ..Default::default() }).unwrap();
    assert_eq!(running.len(), 1);
    assert_eq!(running[0].id, b.id);
    let limited = fixture.store.sessions(&SessionFilter { limit: Some(1), ..Default::default() }).unwrap();
    assert_eq!(limited.len(), 1);
    let other =
        fixture.store.sessions(&SessionFilter { blueprint_id: Some("other".into()), ..Default::default() }).unwrap();
    assert!(other.is_empty());
}

#[test]
fn blueprint_versions_are_content_addressed_and_listed_newest_first() {
    let mut fixture = Fixture::open();
    let first = fixture.store.put_blueprint_version("b", r#"{"v":1}"#).unwrap();
    assert_eq!(first.len(), 64, "a sha256 hex digest");
    fixture.clock.advance(5);
    let second = fixture.store.put_blueprint_version("b", r#"{"v":2}"#).unwrap();
    let again = fixture.store.put_blueprint_version("b", r#"{"v":1}"#).unwrap();
    assert_eq!(again, first, "storing the same text is idempotent");
    let versions = fixture.store.blueprint_versions("b").unwrap();
    assert_eq!(versions.iter().map(|v| v.hash.clone()).collect::<Vec<_>>(), vec![second, first.clone()]);
    assert_eq!(fixture.store.blueprint_version(&first).unwrap().canonical_json, r#"{"v":1}"#);
    assert_eq!(fixture.store.blueprint_version("missing").unwrap_err().code(), FailureCode::NotFound);
    let err = fixture.store.put_blueprint_version("other", r#"{"v":1}"#).unwrap_err();
    assert_eq!(err.code(), FailureCode::InvalidArgument, "one hash names one blueprint");
}

#[test]
fn session_data_is_kept_per_instance_and_written_together() {
    let mut fixture = Fixture::open();
    let s = fixture.session();
    let event = fixture.store.put_data(&s.id, "hello", &[("a", json!(1)), ("b", json!({"x": [1, 2]}))]).unwrap();
    assert_eq!(event.kind(), "data_updated");
    fixture.store.put_data(&s.id, "hello_inner", &[("a", json!("inner"))]).unwrap();
    assert_eq!(fixture.store.data_value(&s.id, "hello", "a").unwrap(), Some(json!(1)));
    assert_eq!(fixture.store.data_value(&s.id, "hello", "zzz").unwrap(), None);
    let all = fixture.store.instance_data(&s.id, "hello").unwrap();
    assert_eq!(all.len(), 2, "the inner instance's data stays apart");
    assert_eq!(all["b"], json!({"x": [1, 2]}));
    fixture.store.put_data(&s.id, "hello", &[("a", json!(null))]).unwrap();
    assert_eq!(fixture.store.data_value(&s.id, "hello", "a").unwrap(), Some(json!(null)), "null is a value");
}

#[test]
fn scope_counters_are_kept_per_instance() {
    let mut fixture = Fixture::open();
    let s = fixture.session();
    assert_eq!(fixture.store.scope_iterations(&s.id, "outer", "loop").unwrap(), 0);
    assert_eq!(fixture.store.increment_scope_iterations(&s.id, "outer", "loop").unwrap(), 1);
    assert_eq!(fixture.store.increment_scope_iterations(&s.id, "outer", "loop").unwrap(), 2);
    assert_eq!(
        fixture.store.increment_scope_iterations(&s.id, "inner_a", "loop").unwrap(),
        1,
        "the same scope id in another instance does not collide"
    );
    fixture.store.set_scope_iterations(&s.id, "outer", "loop", 0).unwrap();
    assert_eq!(fixture.store.scope_iterations(&s.id, "outer", "loop").unwrap(), 0);
    assert_eq!(fixture.store.scope_iterations(&s.id, "inner_a", "loop").unwrap(), 1);
}

#[test]
fn a_submitted_task_points_at_its_current_run_and_can_be_forgotten() {
    let mut fixture = Fixture::open();
    let first = fixture.session();
    let second = fixture.session();
    assert_eq!(fixture.store.submitted_task("blueprint#hello#a").unwrap(), None);
    let put = |store: &mut orrery_store::Store, task: &str, run: &str, replaces: Option<&str>| {
        let config = serde_json::json!({"task_name": "a", "source_tasks": "shell#run#up", "n": run.len()});
        store.put_submitted_task(task, run, &["shell#run#up".to_string()], &config, replaces).unwrap()
    };
    assert!(put(&mut fixture.store, "blueprint#hello#a", &first.id, None).is_some());
    assert!(put(&mut fixture.store, "blueprint#hello#b", &first.id, None).is_some());
    assert_eq!(put(&mut fixture.store, "blueprint#hello#a", &second.id, None), None, "it exists: not replaced");
    let again = put(&mut fixture.store, "blueprint#hello#a", &second.id, Some(&first.id));
    assert_eq!(fixture.second_handle().submitted_task("blueprint#hello#a").unwrap(), again);
    assert_eq!(again.as_ref().map(|t| t.config["n"].clone()), Some(serde_json::json!(second.id.len())));
    assert_eq!(again.map(|t| t.session_id), Some(second.id.clone()));
    // A submitter that saw the first run as current comes too late: the task moved on.
    assert_eq!(put(&mut fixture.store, "blueprint#hello#a", &first.id, Some(&first.id)), None);
    let ids: Vec<String> = fixture.store.submitted_tasks().unwrap().into_iter().map(|t| t.task_id).collect();
    assert_eq!(ids, ["blueprint#hello#a", "blueprint#hello#b"]);
    assert!(fixture.store.delete_submitted_task("blueprint#hello#b").unwrap());
    assert!(!fixture.store.delete_submitted_task("blueprint#hello#b").unwrap(), "gone already");
    assert!(
        fixture.store.put_submitted_task("x#y#z", "no-session", &[], &serde_json::json!({}), None).is_err(),
        "a run is a stored session"
    );
    assert_eq!(fixture.store.blueprint_ids().unwrap(), ["hello"]);
}

#[test]
fn a_restart_records_the_session_it_runs_again_and_is_listed_as_its_restart() {
    let mut fixture = Fixture::open();
    let first = fixture.session();
    let again = |from: &str| NewSession {
        blueprint_hash: first.blueprint_hash.clone(),
        name: first.name.clone(),
        params: first.params.clone(),
        restarted_from: Some(from.to_string()),
        started_by: None,
        file: None,
        simulation: None,
    };
    fixture.clock.advance(5);
    let second = fixture.store.create_session(&again(&first.id), None).unwrap();
    fixture.clock.advance(5);
    let third = fixture.store.create_session(&again(&first.id), None).unwrap();
    let of_second = fixture.store.create_session(&again(&second.id), None).unwrap();

    assert_eq!(fixture.store.session(&second.id).unwrap().restarted_from.as_deref(), Some(first.id.as_str()));
    assert_eq!(first.restarted_from, None, "a session launched on its own restarts nothing");
    let ids = |list: Vec<orrery_store::Session>| list.into_iter().map(|s| s.id).collect::<Vec<_>>();
    assert_eq!(ids(fixture.store.restarts_of(&first.id).unwrap()), [second.id.clone(), third.id], "oldest first");
    assert_eq!(ids(fixture.store.restarts_of(&second.id).unwrap()), [of_second.id]);
    let created = &fixture.store.events_after(&second.id, 0, 1).unwrap()[0];
    let Some(orrery_store::EventData::SessionCreated(data)) = created.data() else { panic!("{created:?}") };
    assert_eq!(data.restarted_from, Some(first.id), "the creation event says what it restarts");
}

#[test]
fn a_restart_of_an_unknown_session_is_not_found_and_creates_nothing() {
    let mut fixture = Fixture::open();
    let first = fixture.session();
    let new = NewSession {
        blueprint_hash: first.blueprint_hash,
        name: "again".into(),
        params: json!({}),
        restarted_from: Some("session-404".into()),
        started_by: None,
        file: None,
        simulation: None,
    };
    let err = fixture.store.create_session(&new, None).unwrap_err();
    assert_eq!(err.code(), FailureCode::NotFound);
    assert!(err.to_string().contains("session-404"), "names the session: {err}");
    assert_eq!(fixture.store.sessions(&SessionFilter::default()).unwrap().len(), 1);
}

#[test]
fn servers_are_kept_by_name_changed_in_place_and_forgotten() {
    let mut fixture = Fixture::open();
    assert!(fixture.store.servers().unwrap().is_empty());
    fixture.store.put_server("lab", "http://10.0.0.5:8000", Some("t0ken")).unwrap();
    fixture.store.put_server("cell", "http://127.0.0.1:8000", None).unwrap();
    fixture.clock.advance(7);
    let changed = fixture.store.put_server("lab", "http://10.0.0.6:8000", None).unwrap();
    assert_eq!(changed.updated_ms, START_MS + 7);
    let all = fixture.store.servers().unwrap();
    let listed: Vec<(&str, &str, Option<&str>)> =
        all.iter().map(|s| (s.name.as_str(), s.url.as_str(), s.token.as_deref())).collect();
    assert_eq!(
        listed,
        [("cell", "http://127.0.0.1:8000", None), ("lab", "http://10.0.0.6:8000", None)],
        "by name; the token cleared"
    );
    assert_eq!(fixture.store.server("lab").unwrap(), Some(changed));
    assert!(fixture.store.remove_server("lab").unwrap());
    assert!(!fixture.store.remove_server("lab").unwrap(), "a second removal finds nothing");
    assert_eq!(fixture.store.server("lab").unwrap(), None);
}

#[test]
fn settings_are_json_by_key_replaced_and_removed() {
    let mut fixture = Fixture::open();
    assert_eq!(fixture.store.setting("broker").unwrap(), None);
    let first = serde_json::json!({"broker": "mqtt://127.0.0.1:1883", "via_broker": ["system.sleep"]});
    fixture.store.put_setting("broker", Some(&first)).unwrap();
    assert_eq!(fixture.store.setting("broker").unwrap(), Some(first));
    let second = serde_json::json!({"broker": "mqtt://10.0.0.9:1883"});
    fixture.store.put_setting("broker", Some(&second)).unwrap();
    assert_eq!(fixture.store.setting("broker").unwrap(), Some(second), "replaced");
    fixture.store.put_setting("broker", None).unwrap();
    assert_eq!(fixture.store.setting("broker").unwrap(), None, "removed");
}

#[test]
fn a_mirror_is_linked_to_its_remote_session_once() {
    let mut fixture = Fixture::open();
    let hash = fixture.store.put_blueprint_version("bp", r#"{"id":"bp"}"#).unwrap();
    let new = || NewSession {
        blueprint_hash: hash.clone(),
        name: "m".into(),
        params: json!({}),
        restarted_from: None,
        started_by: None,
        file: None,
        simulation: None,
    };
    let first = fixture.store.create_session(&new(), None).unwrap();
    let second = fixture.store.create_session(&new(), None).unwrap();
    let link = orrery_store::RemoteLink { url: "http://10.0.0.5:8000".into(), session_id: "abc".into() };
    assert_eq!(fixture.store.mirror_of(&link).unwrap(), None);
    fixture.store.link_remote(&first.id, &link).unwrap();
    let mirror = fixture.store.mirror_of(&link).unwrap().expect("found by its remote session");
    assert_eq!((mirror.id.as_str(), mirror.remote.as_ref()), (first.id.as_str(), Some(&link)));
    assert_eq!(fixture.store.session(&second.id).unwrap().remote, None, "a local session has no link");
    let err = fixture.store.link_remote(&second.id, &link).unwrap_err();
    assert_eq!(err.code(), FailureCode::InvalidArgument);
    assert!(err.to_string().contains("abc"), "{err}");
    assert_eq!(fixture.store.link_remote("nope", &link).unwrap_err().code(), FailureCode::NotFound);
}

#[test]
fn a_mirror_takes_its_servers_times_and_attempts_whose_times_are_unknown_say_so() {
    let mut fixture = Fixture::open();
    let hash = fixture.store.put_blueprint_version("bp", r#"{"id":"bp"}"#).unwrap();
    let new = NewSession {
        blueprint_hash: hash,
        name: "m".into(),
        params: json!({}),
        restarted_from: None,
        started_by: None,
        file: None,
        simulation: None,
    };
    let mirror = fixture.store.create_session(&new, None).unwrap();
    let local = fixture.store.create_session(&new, None).unwrap();
    let link = orrery_store::RemoteLink { url: "http://10.0.0.5:8000".into(), session_id: "abc".into() };
    fixture.store.link_remote(&mirror.id, &link).unwrap();

    fixture.store.set_session_state(&mirror.id, SessionState::Completed, None, None).unwrap();
    fixture.store.set_mirror_times(&mirror.id, 1_000, None).unwrap();
    let read = fixture.store.session(&mirror.id).unwrap();
    assert_eq!((read.started_ms, read.finished_ms), (Some(1_000), None), "ended before it was followed: no end known");
    fixture.store.set_mirror_times(&mirror.id, 1_000, Some(4_500)).unwrap();
    assert_eq!(fixture.store.session(&mirror.id).unwrap().finished_ms, Some(4_500));

    let err = fixture.store.set_mirror_times(&local.id, 1, None).unwrap_err();
    assert_eq!(err.code(), FailureCode::InvalidArgument, "a local session's times are its runner's: {err}");
    assert_eq!(fixture.store.set_mirror_times("nope", 1, None).unwrap_err().code(), FailureCode::NotFound);

    fixture.store.set_task_state(&mirror.id, "bp.a", orrery_store::TaskState::Pending).unwrap();
    fixture.store.set_task_state(&mirror.id, "bp.b", orrery_store::TaskState::Pending).unwrap();
    let early = orrery_store::NewAttempt { agent: "remote".into(), times_unknown: true, ..Default::default() };
    let seen = orrery_store::NewAttempt { agent: "remote".into(), ..Default::default() };
    fixture.store.begin_attempt(&mirror.id, "bp.a", &early).unwrap();
    fixture.store.begin_attempt(&mirror.id, "bp.b", &seen).unwrap();
    let attempts = fixture.store.attempts(&mirror.id).unwrap();
    let flags: Vec<(&str, bool)> = attempts.iter().map(|a| (a.node.as_str(), a.times_unknown)).collect();
    assert_eq!(flags, [("bp.a", true), ("bp.b", false)]);
    let json = serde_json::to_value(&attempts[1]).unwrap();
    assert!(json.get("times_unknown").is_none(), "said only when true: {json}");
}

#[test]
fn the_history_keeps_every_state_change_and_every_value_the_data_held() {
    let mut fixture = Fixture::open();
    let s = fixture.session();
    let store = &mut fixture.store;
    store.set_session_state(&s.id, SessionState::Running, None, None).unwrap();
    store.set_task_states(&s.id, &[("hello.a", TaskState::Pending), ("hello.b", TaskState::Pending)]).unwrap();
    fixture.clock.advance(100);
    store.set_task_states(&s.id, &[("hello.a", TaskState::Succeeded)]).unwrap();
    store.put_data(&s.id, "hello", &[("n", json!(1))]).unwrap();
    fixture.clock.advance(100);
    store.put_data(&s.id, "hello", &[("n", json!(2))]).unwrap();
    store.edit_data(&s.id, "hello", "n", &json!(3), "user").unwrap();
    store.set_task_states(&s.id, &[("hello.b", TaskState::Running)]).unwrap();
    store.set_session_state(&s.id, SessionState::Completed, None, None).unwrap();

    let history = store.history(&s.id).unwrap();
    assert_eq!(history.nodes, ["hello.a", "hello.b"]);
    let changes: Vec<_> = history.changes.iter().map(|c| (c.at - START_MS, c.node, c.state)).collect();
    assert_eq!(
        changes,
        [
            (0, 0, TaskState::Pending),
            (0, 1, TaskState::Pending),
            (100, 0, TaskState::Succeeded),
            (200, 1, TaskState::Running)
        ]
    );
    assert!(history.changes.windows(2).all(|w| w[0].seq < w[1].seq));
    let states: Vec<_> = history.session.iter().map(|c| (c.at - START_MS, c.state)).collect();
    assert_eq!(states, [(0, SessionState::Running), (200, SessionState::Completed)]);
    // Every value n held, in order; the person's edit once, naming its edit.
    let data: Vec<_> =
        history.data.iter().map(|w| (w.at - START_MS, w.key.as_str(), w.value.clone(), w.edit_id.is_some())).collect();
    assert_eq!(data, [(100, "n", json!(1), false), (200, "n", json!(2), false), (200, "n", json!(3), true)]);

    let missing = store.history("no-such-session").unwrap_err();
    assert!(matches!(missing, orrery_store::StoreError::NotFound { .. }), "{missing:?}");
}

#[test]
fn writes_made_as_of_a_time_carry_that_time_and_the_clock_after() {
    let mut fixture = Fixture::open();
    fixture.clock.advance(500);
    // A write queued at START_MS and made 500 ms later (a commit behind a runner) keeps its time.
    let session = fixture.store.as_of(START_MS, crate::first_run);
    assert_eq!(session.created_ms, START_MS);
    let events = fixture.store.events_after(&session.id, 0, 10).unwrap();
    assert_eq!(events[0].time_ms, START_MS, "its event too");
    let later = fixture.session();
    assert_eq!(later.created_ms, START_MS + 500, "the clock's time once as_of returned");
}
