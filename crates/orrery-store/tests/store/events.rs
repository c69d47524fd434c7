use orrery_store::{EventPayload, NewEvent, MAX_EVENT_PAYLOAD_BYTES};
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::Fixture;

fn note(n: usize) -> NewEvent {
    NewEvent { kind: "note".into(), run_id: None, payload: json!({"n": n}) }
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
        assert_eq!(err.code(), "invalid_argument", "limit {limit}");
        assert!(err.to_string().contains(&limit.to_string()), "names the limit: {err}");
    }
}

#[test]
fn a_long_payload_is_cut_at_a_character_boundary_and_keeps_the_full_hash() {
    let mut fixture = Fixture::open();
    let session = fixture.session();
    let text = "ü".repeat(50_000); // 100,000 bytes of two-byte characters
    let payload = json!({"log": text});
    let full = payload.to_string();
    let appended =
        fixture.store.append_event(&session.id, &NewEvent { kind: "log".into(), run_id: None, payload }, None).unwrap();
    let stored = fixture.store.events_after(&session.id, 1, 1).unwrap().remove(0);
    assert_eq!(stored, appended, "what was announced is what is stored");
    let EventPayload::Cut { prefix, full_len, full_sha256 } = stored.payload else {
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
    // `"` + text + `"` is exactly the limit.
    let payload = json!("a".repeat(MAX_EVENT_PAYLOAD_BYTES - 2));
    let event = fixture
        .store
        .append_event(&session.id, &NewEvent { kind: "log".into(), run_id: None, payload: payload.clone() }, None)
        .unwrap();
    assert_eq!(event.payload, EventPayload::Whole { value: payload });
}

#[test]
fn an_event_for_an_unknown_session_is_not_found() {
    let mut fixture = Fixture::open();
    let err = fixture.store.append_event("ghost", &note(1), None).unwrap_err();
    assert_eq!(err.code(), "not_found");
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
