use orrery_store::FailureCode;
use orrery_store::{NewSession, SessionState};
use serde_json::{json, Value};

use crate::{count_rows, Fixture};

fn new_session(fixture: &mut Fixture, name: &str) -> NewSession {
    let hash = fixture.store.put_blueprint_version("hello", "{}").unwrap();
    NewSession {
        blueprint_hash: hash,
        name: name.into(),
        params: json!({"b": 2, "a": 1}),
        restarted_from: None,
        started_by: None,
        file: None,
        simulation: None,
    }
}

#[test]
fn the_same_request_id_and_arguments_return_the_stored_answer_without_writing() {
    let mut fixture = Fixture::open();
    let new = new_session(&mut fixture, "once");
    let first = fixture.store.create_session(&new, Some("req-1")).unwrap();
    fixture.clock.advance(100);
    let second = fixture.store.create_session(&new, Some("req-1")).unwrap();
    assert_eq!(second, first, "the stored answer, same id and same time");
    assert_eq!(count_rows(&fixture.path(), "sessions"), 1, "no second session was written");
    assert_eq!(fixture.store.last_event_seq(&first.id).unwrap(), 1, "no second creation event");
}

#[test]
fn arguments_are_compared_canonically_whatever_their_key_order() {
    let mut fixture = Fixture::open();
    let mut new = new_session(&mut fixture, "once");
    let first = fixture.store.create_session(&new, Some("req-1")).unwrap();
    new.params = serde_json::from_str(r#"{"a": 1, "b": 2}"#).unwrap();
    let second = fixture.store.create_session(&new, Some("req-1")).unwrap();
    assert_eq!(second.id, first.id, "the same arguments in another key order are the same request");
}

#[test]
fn the_same_request_id_with_other_arguments_is_refused_and_writes_nothing() {
    let mut fixture = Fixture::open();
    let new = new_session(&mut fixture, "once");
    fixture.store.create_session(&new, Some("req-1")).unwrap();
    let other = NewSession { name: "twice".into(), ..new };
    let err = fixture.store.create_session(&other, Some("req-1")).unwrap_err();
    assert_eq!(err.code(), FailureCode::RequestIdReused);
    assert!(err.to_string().contains("req-1"), "names the request id: {err}");
    assert_eq!(count_rows(&fixture.path(), "sessions"), 1);
}

#[test]
fn a_request_id_used_by_another_operation_is_refused() {
    let mut fixture = Fixture::open();
    let new = new_session(&mut fixture, "once");
    let session = fixture.store.create_session(&new, Some("req-1")).unwrap();
    let err = fixture.store.set_session_state(&session.id, SessionState::Running, None, Some("req-1")).unwrap_err();
    assert_eq!(err.code(), FailureCode::RequestIdReused);
    assert_eq!(fixture.store.session(&session.id).unwrap().state, SessionState::Pending, "nothing changed");
}

#[test]
fn repeated_state_changes_and_events_with_a_request_id_are_written_once() {
    let mut fixture = Fixture::open();
    let session = fixture.session();
    let a = fixture.store.set_session_state(&session.id, SessionState::Running, None, Some("start-1")).unwrap();
    let b = fixture.store.set_session_state(&session.id, SessionState::Running, None, Some("start-1")).unwrap();
    assert_eq!(a, b, "the same event is answered");
    let event = crate::note("hi");
    let c = fixture.store.append_event(&session.id, &event, Some("note-1")).unwrap();
    let d = fixture.store.append_event(&session.id, &event, Some("note-1")).unwrap();
    assert_eq!(c, d);
    assert_eq!(fixture.store.last_event_seq(&session.id).unwrap(), 3, "created, running, note: nothing twice");
    let other = crate::note("bye");
    assert_eq!(
        fixture.store.append_event(&session.id, &other, Some("note-1")).unwrap_err().code(),
        FailureCode::RequestIdReused
    );
}

#[test]
fn the_request_memory_survives_reopening() {
    let mut fixture = Fixture::open();
    let new = new_session(&mut fixture, "once");
    let first = fixture.store.create_session(&new, Some("req-1")).unwrap();
    let mut fixture = fixture.reopen();
    let again = fixture.store.create_session(&new, Some("req-1")).unwrap();
    assert_eq!(again, first);
}

#[test]
fn request_ids_longer_than_64_characters_or_empty_are_invalid() {
    let mut fixture = Fixture::open();
    let new = new_session(&mut fixture, "once");
    let ok = "é".repeat(64);
    fixture.store.create_session(&new, Some(&ok)).expect("64 characters are allowed, counted as characters");
    let long = "x".repeat(65);
    let err = fixture.store.create_session(&new, Some(&long)).unwrap_err();
    assert_eq!(err.code(), FailureCode::InvalidArgument);
    assert_eq!(fixture.store.create_session(&new, Some("")).unwrap_err().code(), FailureCode::InvalidArgument);
    assert_eq!(count_rows(&fixture.path(), "sessions"), 1);
}

#[test]
fn a_failed_write_does_not_consume_its_request_id() {
    let mut fixture = Fixture::open();
    let err = fixture.store.set_session_state("missing", SessionState::Running, None, Some("req-9")).unwrap_err();
    assert_eq!(err.code(), FailureCode::NotFound);
    assert_eq!(count_rows(&fixture.path(), "requests"), 0, "the request row rolled back with the write");
}

/// A job's request (its name and arguments under a request id) makes one session: before, it
/// has no answer; after, the same request answers that session whatever the session it would
/// now make, and other arguments under the id are refused.
#[test]
fn a_job_request_is_answered_by_the_session_it_created() {
    let mut fixture = Fixture::open();
    let retry = orrery_store::Retry {
        id: "job-1".into(),
        operation: "start_session".into(),
        arguments: json!({"file": "a.json"}),
    };
    assert_eq!(fixture.store.answer_of::<orrery_store::Session>(&retry).unwrap(), None);
    let new = new_session(&mut fixture, "once");
    let first = fixture.store.create_session_for(&new, Some(&retry)).unwrap();
    assert_eq!(fixture.store.answer_of(&retry).unwrap(), Some(first.clone()));
    let changed = new_session(&mut fixture, "the file changed since");
    assert_eq!(
        fixture.store.create_session_for(&changed, Some(&retry)).unwrap(),
        first,
        "keyed by the job's arguments"
    );
    assert_eq!(count_rows(&fixture.path(), "sessions"), 1);
    let other = orrery_store::Retry { arguments: json!({"file": "b.json"}), ..retry.clone() };
    let refused = fixture.store.answer_of::<orrery_store::Session>(&other).unwrap_err();
    assert_eq!(refused.code(), FailureCode::RequestIdReused);
    let long = orrery_store::Retry { id: "x".repeat(65), ..retry };
    assert_eq!(
        fixture.store.answer_of::<orrery_store::Session>(&long).unwrap_err().code(),
        FailureCode::InvalidArgument
    );
    assert!(fixture.store.create_session_for(&new, None).is_ok(), "without a request, a session each time");
    assert_eq!(count_rows(&fixture.path(), "sessions"), 2);
}

/// A write made outside the store is journaled after it: the first answer is kept, the same
/// request answers it again, another job or other arguments under its id are refused.
#[test]
fn an_answer_remembered_for_a_request_is_the_one_it_answers_from_then_on() {
    let mut fixture = Fixture::open();
    let retry = orrery_store::Retry {
        id: "stop-1".into(),
        operation: "stop_session".into(),
        arguments: json!({"session_id": "s1"}),
    };
    assert_eq!(fixture.store.remember(&retry, json!({"outcome": "stopping"})).unwrap(), json!({"outcome": "stopping"}));
    let later = fixture.store.remember(&retry, json!({"outcome": "already stopped"})).unwrap();
    assert_eq!(later, json!({"outcome": "stopping"}), "the first answer stays");
    assert_eq!(fixture.second_handle().answer_of::<Value>(&retry).unwrap(), Some(json!({"outcome": "stopping"})));
    for other in [
        orrery_store::Retry { operation: "pause_session".into(), ..retry.clone() },
        orrery_store::Retry { arguments: json!({"session_id": "s2"}), ..retry.clone() },
    ] {
        assert_eq!(fixture.store.remember(&other, json!({})).unwrap_err().code(), FailureCode::RequestIdReused);
    }
    assert_eq!(count_rows(&fixture.path(), "requests"), 1);
}
