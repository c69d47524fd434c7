//! The notes beside a session: what the agent that started it wrote from its creation until
//! the same agent's next session, task memory and checklists, bounded, nobody else's.

use orrery_store::{
    MemoryEventKind, NewMemoryEvent, NewSession, Session, Starter, Thread, MAX_NOTE_EVENTS, MAX_NOTE_PAYLOAD_CHARS,
    MAX_NOTE_TASKS,
};
use serde_json::json;

use crate::Fixture;

fn note(text: &str) -> NewMemoryEvent {
    NewMemoryEvent { kind: MemoryEventKind::Note, role: None, name: None, payload: text.to_string() }
}

fn started_by(fx: &mut Fixture, project: &str, agent: &str) -> Session {
    let hash = fx.store.put_blueprint_version("hello", r#"{"id":"hello","name":"Hello","version":"1.0"}"#).unwrap();
    let starter = Starter { project: project.into(), agent: agent.into() };
    let new = NewSession {
        blueprint_hash: hash,
        name: "run".into(),
        params: json!({}),
        restarted_from: None,
        started_by: Some(starter),
        file: None,
        simulation: None,
    };
    fx.store.create_session(&new, None).unwrap()
}

fn payloads(notes: &orrery_store::MemoryNotes) -> Vec<&str> {
    notes.events.iter().map(|e| e.payload.as_str()).collect()
}

#[test]
fn a_sessions_notes_are_its_agents_writes_until_that_agent_starts_another() {
    let mut fx = Fixture::open();
    fx.store.create_memory_task("p", "claude", "deploy", "ship 1.2", None).unwrap();
    fx.store.record_memory_event("p", "claude", "deploy", &note("before"), None).unwrap();
    fx.clock.advance(1_000);
    let first = started_by(&mut fx, "p", "claude");
    assert_eq!(first.started_by, Some(Starter { project: "p".into(), agent: "claude".into() }));
    assert_eq!(fx.store.session(&first.id).unwrap().started_by, first.started_by, "kept in the store");
    fx.clock.advance(1_000);
    fx.store.record_memory_event("p", "claude", "deploy", &note("during the first"), None).unwrap();
    fx.store.record_memory_event("p", "other-agent", "deploy", &note("someone else's"), None).unwrap();
    fx.store.record_memory_event("q", "claude", "deploy-q", &note("another project"), None).unwrap_err();
    let main = Thread { project: "p", agent: "claude", name: "main" };
    fx.store.add_agent_task(main, "run the tests", None, &["start".into()], None).unwrap();
    fx.store.start_agent_task(main, 1, None).unwrap();
    // Another agent's session in the same project does not end the window.
    fx.clock.advance(1_000);
    started_by(&mut fx, "p", "other-agent");
    fx.store.record_memory_event("p", "claude", "deploy", &note("after the run ended"), None).unwrap();
    fx.clock.advance(1_000);
    let second = started_by(&mut fx, "p", "claude");
    fx.clock.advance(1_000);
    fx.store.record_memory_event("p", "claude", "deploy", &note("during the second"), None).unwrap();

    let notes = fx.store.session_notes(&first.id).unwrap();
    assert_eq!(notes.until.as_deref(), Some(orrery_store::iso_8601(second.created_ms, "Z").as_str()));
    assert_eq!(notes.memory.len(), 1);
    let deploy = &notes.memory[0];
    assert_eq!((deploy.view.task_name.as_str(), deploy.view.goal.as_str()), ("deploy", "ship 1.2"));
    assert_eq!(payloads(deploy), ["during the first", "after the run ended"]);
    assert_eq!(deploy.events_in_window, 2);
    assert_eq!(notes.checklists.len(), 1);
    assert_eq!(notes.checklists[0].thread, "main");
    assert_eq!(notes.checklists[0].tasks[0].title, "run the tests");

    let later = fx.store.session_notes(&second.id).unwrap();
    assert_eq!(later.until, None, "the agent's latest session: open");
    assert_eq!(payloads(&later.memory[0]), ["during the second"]);
    assert_eq!(later.checklists[0].tasks.len(), 1, "the task still in progress is open in the second window too");
}

#[test]
fn a_checklist_task_shows_where_it_was_open_and_a_session_without_a_starter_has_no_notes() {
    let mut fx = Fixture::open();
    let main = Thread { project: "p", agent: "a", name: "main" };
    fx.store.add_agent_task(main, "done before", None, &[], None).unwrap();
    fx.store.start_agent_task(main, 1, None).unwrap();
    fx.store.complete_agent_task(main, 1, "fine", None).unwrap();
    fx.clock.advance(1_000);
    let session = started_by(&mut fx, "p", "a");
    fx.clock.advance(1_000);
    fx.store.add_agent_task(Thread { name: "side", ..main }, "added during", None, &[], None).unwrap();
    let notes = fx.store.session_notes(&session.id).unwrap();
    let titles: Vec<(&str, &str)> = notes
        .checklists
        .iter()
        .flat_map(|c| c.tasks.iter().map(move |t| (c.thread.as_str(), t.title.as_str())))
        .collect();
    assert_eq!(titles, [("side", "added during")], "a task completed before the session is not shown");

    let old = fx.session();
    let none = fx.store.session_notes(&old.id).unwrap();
    assert!(none.started_by.is_none() && none.memory.is_empty() && none.checklists.is_empty());
    assert!(fx.store.session_notes("session-404").is_err());
}

#[test]
fn the_notes_are_bounded_in_tasks_events_and_payloads() {
    let mut fx = Fixture::open();
    let session = started_by(&mut fx, "p", "a");
    for t in 0..MAX_NOTE_TASKS + 2 {
        let name = format!("t{t:02}");
        fx.store.create_memory_task("p", "a", &name, "g", None).unwrap();
        fx.store.record_memory_event("p", "a", &name, &note("x"), None).unwrap();
        fx.clock.advance(1);
    }
    for i in 0..MAX_NOTE_EVENTS + 5 {
        fx.store.record_memory_event("p", "a", "t00", &note(&format!("e{i}")), None).unwrap();
    }
    fx.store.record_memory_event("p", "a", "t00", &note(&"é".repeat(MAX_NOTE_PAYLOAD_CHARS + 1)), None).unwrap();
    let notes = fx.store.session_notes(&session.id).unwrap();
    assert_eq!(notes.memory.len(), MAX_NOTE_TASKS);
    assert!(notes.memory_truncated);
    let t00 = &notes.memory[0];
    assert_eq!(t00.view.task_name, "t00", "the task written to last comes first");
    assert_eq!(t00.events.len(), MAX_NOTE_EVENTS);
    assert_eq!(t00.events_in_window, (MAX_NOTE_EVENTS + 7) as u64);
    let last = t00.events.last().unwrap();
    assert!(last.truncated && last.payload.chars().count() == MAX_NOTE_PAYLOAD_CHARS, "cut by characters");
    assert_eq!(t00.events[0].payload, "e6", "the window's last events, oldest first");
}
