use orrery_store::FailureCode;
use orrery_store::{
    Event, EventData, EventKind, EventPayload, NewEvent, SessionState, SessionStateChanged, MAX_EVENT_PAYLOAD_BYTES,
};
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::Fixture;

fn note(n: usize) -> NewEvent {
    crate::note(n.to_string())
}

#[test]
fn seqs_stay_gapless_when_two_handles_append_at_once() {
    let mut fixture = Fixture::open();
    let session = fixture.session();
    let per_writer = 150;
    let writers: Vec<_> = (0..2)
        .map(|w| {
            let mut store = fixture.second_handle();
            let id = session.id.clone();
            std::thread::spawn(move || {
                (0..per_writer)
                    .map(|i| {
                        store
                            .append_event(&id, &note(w * 1000 + i), None)
                            .expect("append succeeds under contention")
                            .seq
                    })
                    .collect::<Vec<u64>>()
            })
        })
        .collect();
    let mut seqs: Vec<u64> = writers.into_iter().flat_map(|h| h.join().unwrap()).collect();
    seqs.sort_unstable();
    let expected: Vec<u64> = (2..=(1 + 2 * per_writer as u64)).collect();
    assert_eq!(seqs, expected, "each writer got distinct seqs, together 2..=N without gaps");

    let mut stored = Vec::new();
    let mut after = 0;
    loop {
        let page = fixture.store.events_after(&session.id, after, 200).unwrap();
        let Some(last) = page.last() else { break };
        after = last.seq;
        stored.extend(page.into_iter().map(|e| e.seq));
    }
    assert_eq!(stored, (1..=(1 + 2 * per_writer as u64)).collect::<Vec<_>>(), "the log reads back gapless, in order");
}

#[test]
fn events_are_read_in_pages_of_at_most_200() {
    let mut fixture = Fixture::open();
    let session = fixture.session();
    for i in 0..449 {
        fixture.store.append_event(&session.id, &note(i), None).unwrap();
    }
    let first = fixture.store.events_after(&session.id, 0, 200).unwrap();
    assert_eq!((first.len(), first[0].seq, first[199].seq), (200, 1, 200));
    let second = fixture.store.events_after(&session.id, 200, 200).unwrap();
    assert_eq!((second.len(), second[0].seq), (200, 201));
    let third = fixture.store.events_after(&session.id, 400, 200).unwrap();
    assert_eq!(third.len(), 50, "the rest");
    assert!(fixture.store.events_after(&session.id, 450, 200).unwrap().is_empty(), "nothing after the end");
    assert_eq!(fixture.store.events_after(&session.id, 0, 1).unwrap().len(), 1);
}

#[test]
fn a_page_limit_outside_1_to_200_is_invalid() {
    let mut fixture = Fixture::open();
    let session = fixture.session();
    for limit in [0, 201, u32::MAX] {
        let err = fixture.store.events_after(&session.id, 0, limit).unwrap_err();
        assert_eq!(err.code(), FailureCode::InvalidArgument, "limit {limit}");
        assert!(err.to_string().contains(&limit.to_string()), "names the limit: {err}");
    }
}

#[test]
fn a_long_payload_is_cut_at_a_character_boundary_and_keeps_the_full_hash() {
    let mut fixture = Fixture::open();
    let session = fixture.session();
    let text = "ü".repeat(50_000); // 100,000 bytes of two-byte characters
    let event = crate::note(text);
    let EventData::Notification(shown) = &event.data else { unreachable!("a note is a notification") };
    let full = serde_json::to_string(shown).unwrap();
    let appended = fixture.store.append_event(&session.id, &event, None).unwrap();
    let stored = fixture.store.events_after(&session.id, 1, 1).unwrap().remove(0);
    assert_eq!(stored, appended, "what was announced is what is stored");
    assert_eq!(stored.kind(), "notification", "a cut event keeps its kind");
    let EventPayload::Cut { prefix, full_len, full_sha256, .. } = stored.payload else {
        panic!("a payload over {MAX_EVENT_PAYLOAD_BYTES} bytes must be cut")
    };
    assert!(prefix.len() <= MAX_EVENT_PAYLOAD_BYTES && prefix.len() > MAX_EVENT_PAYLOAD_BYTES - 4);
    assert!(full.starts_with(&prefix), "the prefix is the start of the full text");
    assert_eq!(full_len, full.len() as u64);
    let expected: String = Sha256::digest(full.as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(full_sha256, expected, "the hash is of the full text");
}

#[test]
fn a_payload_at_the_limit_is_kept_whole() {
    let mut fixture = Fixture::open();
    let session = fixture.session();
    let EventData::Notification(empty) = crate::note("").data else { unreachable!("a note is a notification") };
    // The stored text is the data's JSON: with this message, exactly the limit.
    let around = serde_json::to_string(&empty).unwrap().len();
    let event = crate::note("a".repeat(MAX_EVENT_PAYLOAD_BYTES - around));
    let appended = fixture.store.append_event(&session.id, &event, None).unwrap();
    assert_eq!(appended.payload, EventPayload::Whole(Box::new(event.data.clone())), "exactly the limit is not over it");
    let stored = fixture.store.events_after(&session.id, 1, 1).unwrap().remove(0);
    assert_eq!(stored.data(), Some(&event.data));
}

/// Rows as an older or newer Orrery left them, written with plain SQLite.
fn put_rows(fixture: &Fixture, session_id: &str, rows: &[(u64, &str, &str)]) {
    let conn = rusqlite::Connection::open(fixture.path()).unwrap();
    for (seq, kind, payload) in rows {
        conn.execute(
            "INSERT INTO events (session_id, seq, time_ms, kind, run_id, payload, global_seq)
             VALUES (?1, ?2, 0, ?3, NULL, ?4, (SELECT MAX(global_seq) + 1 FROM events))",
            rusqlite::params![session_id, *seq as i64, kind, payload],
        )
        .unwrap();
    }
}

#[test]
fn rows_of_an_unknown_kind_or_shape_are_read_as_they_were_stored_and_kept() {
    let mut fixture = Fixture::open();
    let session = fixture.session();
    put_rows(
        &fixture,
        &session.id,
        &[
            (2, "breakpoint_hit", r#"{"node":"hello.greet"}"#),
            (3, "session_state_changed", r#"{"state":"dreaming"}"#),
            (4, "session_state_changed", r#"{"state":"running"}"#),
        ],
    );
    let events = fixture.store.events_after(&session.id, 1, 200).unwrap();
    let payloads: Vec<&EventPayload> = events.iter().map(|e| &e.payload).collect();
    assert_eq!(
        payloads,
        [
            &EventPayload::Unknown { kind: "breakpoint_hit".into(), value: json!({"node": "hello.greet"}) },
            &EventPayload::Unknown { kind: "session_state_changed".into(), value: json!({"state": "dreaming"}) },
            &EventPayload::Whole(Box::new(EventData::SessionStateChanged(SessionStateChanged {
                state: SessionState::Running,
                error: None
            }))),
        ],
        "an unknown kind and a shape its kind does not read are kept; an older row without `error` reads"
    );
    let wire = serde_json::to_value(&events[0]).unwrap();
    assert_eq!(wire["kind"], "breakpoint_hit", "{wire}");
    assert_eq!(wire["payload"], json!({"form": "whole", "value": {"node": "hello.greet"}}), "passed on as stored");
    assert_eq!(serde_json::from_value::<Event>(wire).unwrap(), events[0], "and read back the same");
}

#[test]
fn the_wire_shape_is_the_stored_one_kind_beside_a_whole_or_cut_payload() {
    let mut fixture = Fixture::open();
    let session = fixture.session();
    let state = fixture.store.set_session_state(&session.id, SessionState::Running, None, None).unwrap();
    let wire = serde_json::to_value(&state).unwrap();
    assert_eq!(
        wire,
        json!({
            "session_id": session.id, "seq": 2, "global_seq": 2, "time_ms": state.time_ms,
            "kind": "session_state_changed", "run_id": null,
            "payload": {"form": "whole", "value": {"state": "running", "error": null}},
        })
    );
    assert_eq!(serde_json::from_value::<Event>(wire).unwrap(), state);
    let cut = fixture.store.append_event(&session.id, &crate::note("x".repeat(70_000)), None).unwrap();
    let wire = serde_json::to_value(&cut).unwrap();
    assert_eq!((&wire["kind"], &wire["payload"]["form"]), (&json!("notification"), &json!("cut")), "{wire}");
    assert_eq!(serde_json::from_value::<Event>(wire).unwrap(), cut);
}

#[test]
fn the_latest_event_of_a_kind_is_found_by_its_kind() {
    let mut fixture = Fixture::open();
    let session = fixture.session();
    fixture.store.append_event(&session.id, &note(1), None).unwrap();
    let last = fixture.store.append_event(&session.id, &note(2), None).unwrap();
    assert_eq!(fixture.store.last_event_of(&session.id, EventKind::Notification).unwrap(), Some(last));
    assert_eq!(fixture.store.last_event_of(&session.id, EventKind::PromptWaiting).unwrap(), None);
    let names: Vec<&str> = EventKind::ALL.iter().map(|k| k.as_str()).collect();
    assert!(names.iter().all(|n| EventKind::from_name(n).is_some_and(|k| k.as_str() == *n)), "{names:?}");
}

#[test]
fn an_event_for_an_unknown_session_is_not_found() {
    let mut fixture = Fixture::open();
    let err = fixture.store.append_event("ghost", &note(1), None).unwrap_err();
    assert_eq!(err.code(), FailureCode::NotFound);
    assert!(err.to_string().contains("ghost"));
}

#[test]
fn every_sessions_events_share_one_gapless_global_order_to_resume_from() {
    let mut fixture = Fixture::open();
    let a = fixture.session();
    let b = fixture.session();
    fixture.store.append_event(&a.id, &note(1), None).unwrap();
    fixture.store.append_event(&b.id, &note(2), None).unwrap();
    let last = fixture.store.append_event(&a.id, &note(3), None).unwrap();

    let all = fixture.second_handle().events_since(0, 200).unwrap();
    let globals: Vec<u64> = all.iter().map(|e| e.global_seq).collect();
    assert_eq!(globals, (1..=all.len() as u64).collect::<Vec<_>>(), "gapless, in commit order");
    assert_eq!(all.last(), Some(&last), "what a write returns is what is read back");
    assert_eq!(fixture.store.last_global_seq().unwrap(), last.global_seq);
    // A client that saw up to the second-to-last event misses exactly the last one.
    assert_eq!(fixture.store.events_since(last.global_seq - 1, 200).unwrap(), vec![last.clone()]);
    assert!(fixture.store.events_since(last.global_seq, 200).unwrap().is_empty());
    assert!(fixture.store.events_since(0, 0).is_err(), "limits stay within 1..=200");
    // Per-session reads carry the same numbers.
    let of_a = fixture.store.events_after(&a.id, 0, 200).unwrap();
    assert!(of_a.iter().all(|e| all.contains(e)));
}

#[test]
fn the_schema_is_a_union_with_one_member_per_kind_each_whole_or_cut() {
    let schema = schemars::schema_for!(Event).to_value();
    let members = schema["allOf"][1]["oneOf"].as_array().expect("the kinds are a union");
    let kinds: Vec<&str> = members.iter().map(|m| m["properties"]["kind"]["const"].as_str().unwrap()).collect();
    let known: Vec<&str> = EventKind::ALL.iter().map(|k| k.as_str()).collect();
    assert_eq!(kinds, known, "every kind, in declaration order");
    let forms = &members[0]["properties"]["payload"]["oneOf"];
    assert_eq!(forms[0]["properties"]["form"]["const"], "whole", "{forms}");
    assert_eq!(forms[1]["$ref"], "#/$defs/EventCut", "{forms}");
    assert_eq!(schema["$defs"]["EventCut"]["properties"]["form"]["const"], "cut");
}
