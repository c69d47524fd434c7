use orrery_store::FailureCode;
use orrery_store::{
    AttemptState, ErrorRecord, EventData, NewAttempt, Outcome, ProcessEnvironment, ProcessIdentity, RunId,
    ScopeIteration, Settlement, TaskState,
};
use serde_json::json;

use crate::{count_rows, shell_attempt, Fixture, START_MS};

#[test]
fn an_attempt_gets_a_fresh_run_id_and_makes_its_node_running() {
    let mut fixture = Fixture::open();
    let (session, run_id) = fixture.running_attempt();
    assert_eq!(run_id.as_str(), "run-1");
    let attempt = fixture.store.attempt(&run_id).unwrap();
    assert_eq!(attempt.attempt, 1);
    assert_eq!(attempt.state, AttemptState::Running);
    assert_eq!(attempt.inputs, Some(json!({"who": "world"})));
    assert_eq!(fixture.store.task_node(&session.id, "hello.greet").unwrap().state, TaskState::Running);
    let kinds: Vec<String> =
        fixture.store.events_after(&session.id, 0, 200).unwrap().iter().map(|e| e.kind().to_string()).collect();
    assert_eq!(kinds, ["session_created", "task_state_changed", "task_state_changed", "attempt_started"]);
}

#[test]
fn a_node_with_a_running_attempt_refuses_a_second_one() {
    let mut fixture = Fixture::open();
    let (session, _) = fixture.running_attempt();
    let err = fixture.store.begin_attempt(&session.id, "hello.greet", &shell_attempt()).unwrap_err();
    assert_eq!(err.code(), FailureCode::InvalidArgument);
    assert!(err.to_string().contains("run-1"), "names the running attempt: {err}");
}

#[test]
fn an_attempt_at_an_unknown_node_is_not_found() {
    let mut fixture = Fixture::open();
    let session = fixture.session();
    let err = fixture.store.begin_attempt(&session.id, "hello.nope", &shell_attempt()).unwrap_err();
    assert_eq!(err.code(), FailureCode::NotFound);
    assert!(err.to_string().contains("hello.nope"));
}

#[test]
fn settling_lands_outcome_data_and_node_state_together() {
    let mut fixture = Fixture::open();
    let (session, run_id) = fixture.running_attempt();
    fixture.clock.advance(7);
    let events = fixture
        .store
        .settle_attempt(
            &run_id,
            Settlement {
                outcome: Outcome::Succeeded { exit_code: Some(0), outputs: json!({"greeting": "hi"}) },
                node_state: Some(TaskState::Succeeded),
                data: vec![("hello".into(), "greeting".into(), json!("hi"))],
            },
        )
        .unwrap();
    let kinds: Vec<&str> = events.iter().map(|e| e.kind()).collect();
    assert_eq!(kinds, ["attempt_settled", "data_updated", "task_state_changed"]);
    let attempt = fixture.store.attempt(&run_id).unwrap();
    assert_eq!(attempt.state, AttemptState::Succeeded);
    assert_eq!(attempt.finished_ms, Some(START_MS + 7));
    assert_eq!(attempt.exit_code, Some(0));
    assert_eq!(attempt.outputs, Some(json!({"greeting": "hi"})));
    assert_eq!(fixture.store.data_value(&session.id, "hello", "greeting").unwrap(), Some(json!("hi")));
    assert_eq!(fixture.store.task_node(&session.id, "hello.greet").unwrap().state, TaskState::Succeeded);
}

#[test]
fn data_copied_into_a_restart_keeps_the_attempt_that_wrote_it() {
    let mut fixture = Fixture::open();
    let (session, run_id) = fixture.running_attempt();
    let settlement = Settlement {
        outcome: Outcome::Succeeded { exit_code: Some(0), outputs: json!({"greeting": "hi"}) },
        node_state: Some(TaskState::Succeeded),
        data: vec![("hello".into(), "greeting".into(), json!("hi"))],
    };
    fixture.store.settle_attempt(&run_id, settlement).unwrap();
    fixture.store.put_data(&session.id, "hello", &[("given", json!(2))]).unwrap();
    let writers = fixture.store.data_writers(&session.id).unwrap();
    assert_eq!(
        writers,
        [
            ("hello".to_string(), "given".to_string(), None),
            ("hello".to_string(), "greeting".to_string(), Some(run_id.clone())),
        ]
    );

    let restart = fixture.session();
    let keys = [("hello".to_string(), "greeting".to_string()), ("hello".to_string(), "never".to_string())];
    let event = fixture.store.copy_data(&session.id, &restart.id, &keys).unwrap();
    let wire = serde_json::to_value(&event).unwrap();
    assert_eq!(wire["payload"]["value"]["keys"], json!({"hello": ["greeting"]}), "a key it lacks is left out");
    assert_eq!(fixture.store.instance_data(&restart.id, "hello").unwrap().len(), 1);
    let copied = fixture.store.data_writers(&restart.id).unwrap();
    assert_eq!(copied, [("hello".to_string(), "greeting".to_string(), Some(run_id))], "lineage names the old attempt");
    for (from, to) in [("nope", restart.id.as_str()), (session.id.as_str(), "nope")] {
        let err = fixture.store.copy_data(from, to, &keys).unwrap_err();
        assert!(err.to_string().contains("nope"), "{err}");
    }
}

#[test]
fn a_stale_run_id_is_refused_and_changes_nothing() {
    let mut fixture = Fixture::open();
    let (session, run_id) = fixture.running_attempt();
    fixture
        .store
        .settle_attempt(
            &run_id,
            Settlement {
                outcome: Outcome::Succeeded { exit_code: Some(0), outputs: json!({}) },
                node_state: Some(TaskState::Succeeded),
                data: vec![],
            },
        )
        .unwrap();
    let seq_before = fixture.store.last_event_seq(&session.id).unwrap();
    let late = Settlement {
        outcome: Outcome::Failed {
            exit_code: Some(1),
            error: ErrorRecord { code: "TOOL_FAILURE".into(), message: "late".into(), details: None },
        },
        node_state: Some(TaskState::Failed),
        data: vec![("hello".into(), "greeting".into(), json!("overwritten"))],
    };
    let err = fixture.store.settle_attempt(&run_id, late.clone()).unwrap_err();
    assert_eq!(err.code(), FailureCode::StaleRun);
    assert!(
        err.to_string().contains("run-1") && err.to_string().contains("succeeded"),
        "says which run and why: {err}"
    );
    let attempt = fixture.store.attempt(&run_id).unwrap();
    assert_eq!(attempt.state, AttemptState::Succeeded, "the first settlement stands");
    assert_eq!(attempt.error, None);
    assert_eq!(fixture.store.task_node(&session.id, "hello.greet").unwrap().state, TaskState::Succeeded);
    assert_eq!(fixture.store.data_value(&session.id, "hello", "greeting").unwrap(), None, "no data was written");
    assert_eq!(fixture.store.last_event_seq(&session.id).unwrap(), seq_before, "no event was appended");

    let unknown = fixture.store.settle_attempt(&RunId::from("run-404"), late).unwrap_err();
    assert_eq!(unknown.code(), FailureCode::StaleRun, "an unknown run id is refused the same way");
    let process =
        fixture.store.set_attempt_process(&run_id, ProcessIdentity { pid: 1, start_time: 2 }, None).unwrap_err();
    assert_eq!(process.code(), FailureCode::StaleRun, "every write about a run is keyed on it");
}

#[test]
fn a_new_attempt_after_a_failure_is_numbered_and_listed_in_the_timeline() {
    let mut fixture = Fixture::open();
    let (session, first) = fixture.running_attempt();
    fixture.store.settle_attempt(&first, Outcome::Cancelled { exit_code: Some(130) }).unwrap();
    fixture.clock.advance(1);
    let (second, _) = fixture.store.begin_attempt(&session.id, "hello.greet", &shell_attempt()).unwrap();
    assert_eq!(second.attempt, 2);
    assert_ne!(second.run_id, first, "every attempt has its own run id");
    let timeline = fixture.store.attempts(&session.id).unwrap();
    assert_eq!(
        timeline.iter().map(|a| (a.attempt, a.state)).collect::<Vec<_>>(),
        vec![(1, AttemptState::Cancelled), (2, AttemptState::Running)]
    );
    assert_eq!(timeline[0].exit_code, Some(130));
}

#[test]
fn running_attempts_with_their_processes_are_listed_for_recovery() {
    let mut fixture = Fixture::open();
    let (_, run_id) = fixture.running_attempt();
    let identity = ProcessIdentity { pid: 4242, start_time: 987_654_321 };
    let environment = ProcessEnvironment {
        program: "/usr/bin/make".into(),
        cwd: "/w".into(),
        variables: [("PATH".to_string(), "/opt/tools/bin:/usr/bin".to_string())].into(),
    };
    fixture.store.set_attempt_process(&run_id, identity, Some(&environment)).unwrap();
    // Adopted again after a crash: what it was started with is not known then, and stays.
    fixture.store.set_attempt_process(&run_id, identity, None).unwrap();
    let other = fixture.session();
    fixture
        .store
        .set_task_states(&other.id, &[("hello.a", TaskState::Pending), ("hello.b", TaskState::Pending)])
        .unwrap();
    let (b, _) = fixture.store.begin_attempt(&other.id, "hello.b", &shell_attempt()).unwrap();
    fixture.store.settle_attempt(&b.run_id, Outcome::Skipped).unwrap();
    let fixture = fixture.reopen();
    let running = fixture.store.running_attempts().unwrap();
    assert_eq!(running.len(), 1, "only the unsettled attempt: {running:?}");
    assert_eq!(running[0].run_id, run_id);
    assert_eq!(running[0].process, Some(identity), "pid and start time survive a restart");
    assert_eq!(running[0].environment, Some(environment), "so does what it was started with");
}

#[test]
fn task_states_are_upserted_and_unchanged_states_are_not_announced() {
    let mut fixture = Fixture::open();
    let s = fixture.session();
    let events = fixture
        .store
        .set_task_states(&s.id, &[("hello.start", TaskState::Pending), ("hello.end", TaskState::Pending)])
        .unwrap();
    assert_eq!(events.len(), 2);
    assert_eq!(
        fixture.store.set_task_state(&s.id, "hello.start", TaskState::Pending).unwrap(),
        None,
        "no change, no event"
    );
    let event = fixture
        .store
        .set_task_state(&s.id, "hello.start", TaskState::SkipRequested)
        .unwrap()
        .expect("a change is announced");
    let Some(orrery_store::EventData::TaskStateChanged(changed)) = event.data() else { panic!("{event:?}") };
    assert_eq!(changed.state, TaskState::SkipRequested);
    assert_eq!(changed.previous, Some(TaskState::Pending));
    assert_eq!((changed.blueprint_id.as_str(), changed.task_id.as_str()), ("hello", "start"));
    let nodes = fixture.store.task_nodes(&s.id).unwrap();
    assert_eq!(
        nodes.iter().map(|n| (n.node.as_str(), n.state)).collect::<Vec<_>>(),
        vec![("hello.end", TaskState::Pending), ("hello.start", TaskState::SkipRequested)]
    );
    assert_eq!(count_rows(&fixture.path(), "task_nodes"), 2);
}

#[test]
fn lineage_names_the_attempt_whose_output_each_input_read() {
    use orrery_store::{InputSource, NewAttempt, Settlement};
    let mut fixture = Fixture::open();
    let (session, producer) = fixture.running_attempt();
    fixture
        .store
        .settle_attempt(
            &producer,
            Settlement {
                outcome: Outcome::Succeeded { exit_code: Some(0), outputs: json!({"n": 41}) },
                node_state: Some(TaskState::Succeeded),
                data: vec![("hello".into(), "n".into(), json!(41))],
            },
        )
        .unwrap();
    fixture.store.set_task_states(&session.id, &[("hello.use", TaskState::Pending)]).unwrap();
    let new = NewAttempt {
        agent: "shell.run".into(),
        inputs: Some(json!({"n": 41, "plain": "literal"})),
        input_sources: vec![
            InputSource { input: "n".into(), instance: "hello".into(), key: "n".into() },
            InputSource { input: "plain".into(), instance: "hello".into(), key: "plain".into() },
        ],
        ..NewAttempt::default()
    };
    let (consumer, _) = fixture.store.begin_attempt(&session.id, "hello.use", &new).unwrap();

    let lineage = fixture.second_handle().lineage(&session.id).unwrap();
    assert_eq!(lineage.len(), 2);
    let n = lineage.iter().find(|l| l.input == "n").unwrap();
    assert_eq!(n.run_id, consumer.run_id);
    assert_eq!((n.instance.as_str(), n.key.as_str()), ("hello", "n"));
    let source = n.source.as_ref().expect("a producer");
    assert_eq!((source.run_id.clone(), source.node.as_str(), source.attempt), (producer, "hello.greet", 1));
    assert_eq!(n.value_sha256, orrery_store::canonical::sha256_hex("41"));
    let plain = lineage.iter().find(|l| l.input == "plain").unwrap();
    assert_eq!(plain.source, None, "a literal no attempt wrote");
    assert!(matches!(fixture.store.lineage("nope"), Err(orrery_store::StoreError::NotFound { .. })));
}

/// The attempt's row is what its two events carry, as begun and as settled, with the instance,
/// the task and the scope iterations the engine gave.
#[test]
fn the_attempt_events_carry_the_row_with_its_instance_task_and_iterations() {
    let mut fixture = Fixture::open();
    let session = fixture.session();
    fixture.store.set_task_states(&session.id, &[("hello.v1.greet", TaskState::Pending)]).unwrap();
    let rounds =
        ScopeIteration { instance: "hello.v1".into(), scope: "round".into(), name: "Rounds".into(), iteration: 2 };
    let new = NewAttempt { iterations: vec![rounds.clone()], ..shell_attempt() };
    let (begun, events) = fixture.store.begin_attempt(&session.id, "hello.v1.greet", &new).unwrap();
    assert_eq!((begun.instance.as_str(), begun.task.as_str()), ("hello.v1", "greet"), "split at the last dot");
    assert_eq!(begun.iterations, [rounds.clone()]);
    let started = events.iter().find_map(|e| match e.data() {
        Some(EventData::AttemptStarted(a)) => Some(a.clone()),
        _ => None,
    });
    assert_eq!(started.as_ref(), Some(&begun));
    assert_eq!(fixture.store.attempt(&begun.run_id).unwrap(), begun, "read back as it began");

    fixture.clock.advance(3);
    let outcome = Outcome::Failed {
        exit_code: Some(2),
        error: ErrorRecord { code: "TOOL_FAILURE".into(), message: "no".into(), details: None },
    };
    let events = fixture.store.settle_attempt(&begun.run_id, outcome.clone()).unwrap();
    let Some(EventData::AttemptSettled(settled)) = events[0].data() else { panic!("{events:?}") };
    assert_eq!(settled, &fixture.store.attempt(&begun.run_id).unwrap(), "the settled row");
    assert_eq!(
        (settled.state, settled.exit_code, settled.finished_ms),
        (AttemptState::Failed, Some(2), Some(START_MS + 3))
    );
    assert_eq!(settled.iterations, [rounds]);
    assert_eq!(settled.outcome(), Some(outcome), "its outcome, as settled");
    assert_eq!(begun.outcome(), None, "none while it runs");
}

/// An attempt recorded before iterations were (schema 9) reads with none.
#[test]
fn an_attempt_of_an_older_store_reads_with_no_iterations() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v9.db");
    orrery_store::migrations::create_at_version(&path, 9).unwrap();
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        "INSERT INTO blueprint_versions (hash, blueprint_id, canonical_json, created_ms) VALUES ('h', 'b', '{}', 1);
         INSERT INTO sessions (id, blueprint_hash, blueprint_id, name, state, params_json, created_ms)
             VALUES ('s1', 'h', 'b', 'one', 'running', '{}', 1);
         INSERT INTO task_nodes (session_id, node, state, updated_ms) VALUES ('s1', 'b.t', 'RUNNING', 5);
         INSERT INTO task_runs (run_id, session_id, node, attempt, state, agent, started_ms)
             VALUES ('r1', 's1', 'b.t', 1, 'running', 'shell.run', 5);",
    )
    .unwrap();
    drop(conn);
    let store = orrery_store::Store::open(&path).expect("version 9 upgrades");
    let attempt = store.attempt(&RunId::from("r1")).unwrap();
    assert_eq!((attempt.instance.as_str(), attempt.task.as_str(), attempt.iterations.len()), ("b", "t", 0));
}
