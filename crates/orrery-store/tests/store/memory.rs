//! Agents' task memory: tasks by name per project, events in order with long payloads cut,
//! steps by name, the bounded resume view, request ids per project, and all of it durable.

use orrery_store::{
    FailureCode, MemoryEventKind, MemoryStepKind, MemoryStepState, NewMemoryEvent, StepUpdate, MAX_PAYLOAD_CHARS,
};

use crate::Fixture;

fn note(text: &str) -> NewMemoryEvent {
    NewMemoryEvent { kind: MemoryEventKind::Note, role: None, name: None, payload: text.to_string() }
}

fn step(name: &str, state: MemoryStepState) -> StepUpdate {
    StepUpdate { name: name.into(), state, kind: MemoryStepKind::Other, result_event_seq: None }
}

#[test]
fn a_task_is_created_once_per_name_and_goal_and_its_events_are_numbered_in_order() {
    let mut fx = Fixture::open();
    let created = fx.store.create_memory_task("p", "agent-a", "deploy", "ship 1.2", None).unwrap();
    assert_eq!((created.author.as_str(), created.event_seq, created.status.as_str()), ("agent-a", 0, "open"));
    let again = fx.store.create_memory_task("p", "agent-b", "deploy", "ship 1.2", None).unwrap();
    assert_eq!(again, created, "the same name and goal: the existing task");
    let other = fx.store.create_memory_task("p", "agent-a", "deploy", "ship 2.0", None).unwrap_err();
    assert_eq!(other.code(), FailureCode::TaskExists);
    assert_eq!(fx.store.create_memory_task("q", "agent-a", "deploy", "ship 2.0", None).unwrap().project_id, "q");

    for i in 1..=5 {
        let recorded = fx.store.record_memory_event("p", "agent-a", "deploy", &note(&format!("n{i}")), None).unwrap();
        assert_eq!(recorded.seq, i);
    }
    let page = fx.store.memory_events("p", "deploy", 1, 2).unwrap();
    let seqs: Vec<u64> = page.events.iter().map(|e| e.seq).collect();
    assert_eq!((seqs, page.next_after_seq, page.truncated), (vec![2, 3], Some(3), true));
    let rest = fx.store.memory_events("p", "deploy", 3, 200).unwrap();
    assert_eq!((rest.events.len(), rest.truncated, rest.next_after_seq), (2, false, None));
    assert_eq!(rest.events[1].payload, "n5");
    assert!(fx.store.memory_events("q", "deploy", 0, 50).unwrap().events.is_empty(), "q's task has none");
    let missing = fx.store.memory_events("p", "nope", 0, 50).unwrap();
    assert!(!missing.found && missing.events.is_empty());
    for limit in [0, 201] {
        assert_eq!(fx.store.memory_events("p", "deploy", 0, limit).unwrap_err().code(), FailureCode::InvalidArgument);
    }
    let refused = fx.store.record_memory_event("p", "agent-a", "nope", &note("x"), None).unwrap_err();
    assert_eq!(refused.code(), FailureCode::TaskNotFound);
}

#[test]
fn a_long_payload_keeps_its_start_its_length_and_the_hash_of_the_whole() {
    let mut fx = Fixture::open();
    fx.store.create_memory_task("p", "a", "t", "g", None).unwrap();
    let long: String = "é".repeat(MAX_PAYLOAD_CHARS + 10);
    let recorded = fx.store.record_memory_event("p", "a", "t", &note(&long), None).unwrap();
    assert!(recorded.truncated);
    assert_eq!(recorded.payload_sha256, orrery_store::canonical::sha256_hex(&long));
    let event = &fx.store.memory_events("p", "t", 0, 1).unwrap().events[0];
    assert_eq!(event.payload.chars().count(), MAX_PAYLOAD_CHARS, "cut by characters, not bytes");
    assert!(event.truncated);
    let short = fx.store.record_memory_event("p", "a", "t", &note("short"), None).unwrap();
    assert!(!short.truncated);
}

#[test]
fn steps_are_unique_per_task_counted_by_state_and_their_result_event_must_exist() {
    let mut fx = Fixture::open();
    fx.store.create_memory_task("p", "a", "t", "g", None).unwrap();
    for i in 0..60 {
        fx.store.set_memory_step("p", "t", &step(&format!("s{i:02}"), MemoryStepState::NotStarted), None).unwrap();
    }
    let seq = fx.store.record_memory_event("p", "a", "t", &note("result"), None).unwrap().seq;
    let done = StepUpdate { result_event_seq: Some(seq), ..step("s59", MemoryStepState::Completed) };
    let set = fx.store.set_memory_step("p", "t", &done, None).unwrap();
    assert_eq!((set.state, set.result_event_seq, set.updated_seq), (MemoryStepState::Completed, Some(seq), seq));
    fx.store.set_memory_step("p", "t", &step("s30", MemoryStepState::Unknown), None).unwrap();
    let bad = StepUpdate { result_event_seq: Some(seq + 1), ..step("s01", MemoryStepState::Completed) };
    assert_eq!(fx.store.set_memory_step("p", "t", &bad, None).unwrap_err().code(), FailureCode::EventNotFound);
    let no_task = fx.store.set_memory_step("p", "nope", &step("x", MemoryStepState::Completed), None).unwrap_err();
    assert_eq!(no_task.code(), FailureCode::TaskNotFound);

    let view = fx.store.memory_task("p", "t").unwrap().view.unwrap();
    let shown: usize = view.steps.values().map(Vec::len).sum();
    assert_eq!((shown, view.steps_truncated), (50, true), "the view is bounded");
    assert_eq!(view.steps["unknown"][0].name, "s30", "what resuming must look at comes first");
    assert!(view.steps["completed"].is_empty(), "completed steps are the first left out");
    assert_eq!(view.steps["not_started"].len(), 49);
    let counts: Vec<(&str, u64)> = view.step_counts.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    assert_eq!(counts, [("completed", 1), ("failed", 0), ("in_progress", 0), ("not_started", 58), ("unknown", 1)]);
    assert_eq!(view.last_event_seq, seq);
    let pending = fx.store.memory_steps("p", "t", MemoryStepState::NotStarted).unwrap();
    assert_eq!(pending.len(), 58, "not capped");
    assert!(pending.windows(2).all(|w| w[0].name < w[1].name), "by name");
    assert!(!fx.store.memory_task("p", "nope").unwrap().found);
    assert!(fx.store.memory_steps("p", "nope", MemoryStepState::Completed).unwrap().is_empty());
}

#[test]
fn a_write_with_a_request_id_happens_once_per_project_and_survives_a_reopen() {
    let mut fx = Fixture::open();
    fx.store.create_memory_task("p", "a", "t", "g", Some("c-1")).unwrap();
    fx.store.create_memory_task("q", "a", "t", "g", Some("c-1")).unwrap();
    let first = fx.store.record_memory_event("p", "a", "t", &note("once"), Some("e-1")).unwrap();
    let mut fx = fx.reopen();
    let again = fx.store.record_memory_event("p", "a", "t", &note("once"), Some("e-1")).unwrap();
    assert_eq!(again, first, "the stored answer");
    assert_eq!(fx.store.memory_events("p", "t", 0, 50).unwrap().events.len(), 1, "recorded once");
    let other = fx.store.record_memory_event("p", "a", "t", &note("twice"), Some("e-1")).unwrap_err();
    assert_eq!(other.code(), FailureCode::RequestIdReused);
    let elsewhere = fx.store.record_memory_event("q", "a", "t", &note("twice"), Some("e-1")).unwrap();
    assert_eq!(elsewhere.seq, 1, "another project's request");
    let long = "x".repeat(65);
    assert_eq!(
        fx.store.record_memory_event("p", "a", "t", &note("x"), Some(&long)).unwrap_err().code(),
        FailureCode::InvalidArgument
    );
}
