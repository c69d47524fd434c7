//! The facade end to end: jobs called by name with JSON arguments, real blueprints with real
//! `/bin/sh` tasks on a real SQLite store in a temp dir.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use orrery_api::{Api, ApiOptions, CallError, Envelope, EventData};
use serde_json::{json, Value};

struct Fixture {
    dir: tempfile::TempDir,
    api: Api,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().expect("a temp dir");
        let api = Api::new(ApiOptions { db: dir.path().join("orrery.db"), work_dir: None, max_parallel: Some(2) });
        Fixture { dir, api }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Writes a blueprint file of `tasks` (start and end added around them, in a chain after
    /// `start`, the end after the last).
    fn blueprint(&self, id: &str, tasks: Vec<Value>) -> PathBuf {
        let mut all = vec![json!({"id": "start", "type": "system.start"})];
        let last = tasks.last().and_then(|t| t["id"].as_str()).unwrap_or("start").to_string();
        all.extend(tasks);
        all.push(json!({"id": "end", "type": "system.end", "depends_on": [{"id": last}]}));
        let path = self.path(&format!("{id}.json"));
        let text = json!({"id": id, "name": id, "version": "1.0", "tasks": all}).to_string();
        std::fs::write(&path, text).unwrap();
        path
    }

    async fn ok(&self, job: &str, arguments: Value) -> Value {
        let envelope = self.call(job, arguments).await;
        assert!(envelope.success, "{job} failed: {envelope:?}");
        envelope.answer
    }

    async fn call(&self, job: &str, arguments: Value) -> Envelope {
        tokio::time::timeout(Duration::from_secs(60), self.api.call(job, arguments))
            .await
            .expect("the job answered in time")
            .unwrap_or_else(|e| panic!("{job} was refused: {e}"))
    }
}

/// Waits for the event `kind` about `node`.
async fn wait_for(
    events: &mut tokio::sync::broadcast::Receiver<std::sync::Arc<orrery_store::Event>>,
    kind: &str,
    node: &str,
) {
    loop {
        let event = events.recv().await.expect("events");
        let wire = serde_json::to_value(&*event).expect("an event serializes");
        if event.kind() == kind && wire["payload"]["value"]["node"] == node {
            return;
        }
    }
}

fn sh(id: &str, command: &str, after: &str) -> Value {
    json!({"id": id, "type": "shell.run", "params": [{"name": "command", "value": command}], "depends_on": [{"id": after}]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_catalogue_names_every_job_with_the_schemas_of_its_arguments_and_answer() {
    let fx = Fixture::new();
    let jobs = fx.api.jobs();
    let names: Vec<&str> = jobs.iter().map(|j| j.name).collect();
    for expected in [
        "list_installed_task_definitions",
        "get_task_definition",
        "list_task_types",
        "get_task_type",
        "validate_blueprint",
        "blueprint_scopes",
        "start_session",
        "get_session",
        "cancel_task",
        "answer_prompt",
        "read_session_data",
    ] {
        assert!(names.contains(&expected), "{expected} missing from {names:?}");
    }
    let start = jobs.iter().find(|j| j.name == "start_session").unwrap();
    assert_eq!(start.arguments["required"], json!(["file"]), "{}", start.arguments);
    assert!(start.arguments["properties"]["params"].is_object());
    assert_eq!(start.answer["properties"]["session_id"]["type"], "string");
    let mut unique = names.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), names.len(), "job names are unique");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_job_and_arguments_that_break_the_schema_are_refused_before_running() {
    let fx = Fixture::new();
    assert_eq!(fx.api.call("nope", json!({})).await, Err(CallError::UnknownJob { name: "nope".into() }));
    for (arguments, says) in [
        (json!({}), "missing field `session_id`"),
        (json!({"session_id": 5}), "invalid type"),
        (json!({"session_id": "x", "extra": 1}), "unknown field `extra`"),
    ] {
        match fx.api.call("get_session", arguments).await {
            Err(CallError::InvalidArguments { job, message }) => {
                assert_eq!(job, "get_session");
                assert!(message.contains(says), "{message}");
            }
            other => panic!("expected a refusal saying {says:?}, got {other:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_business_failure_is_an_answer_with_a_readable_message_and_a_stable_code() {
    let fx = Fixture::new();
    let envelope = fx.call("get_session", json!({"session_id": "no-such"})).await;
    assert!(!envelope.success);
    assert_eq!(envelope.metadata["error"], "not_found");
    assert_eq!(envelope.metadata["job"], "get_session");
    assert!(envelope.answer.as_str().unwrap().contains("no-such"), "{}", envelope.answer);

    let envelope = fx.call("get_task_type", json!({"name": "nope.tool"})).await;
    assert!(!envelope.success);
    assert!(envelope.answer.as_str().unwrap().contains("shell.run"), "names the known types: {}", envelope.answer);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn task_definitions_come_with_schemas_that_what_their_agents_really_read_and_write_fits() {
    let fx = Fixture::new();
    let all = fx.ok("list_task_types", Value::Null).await;
    let mut schemas = HashMap::new();
    for summary in all.as_array().unwrap() {
        let name = summary["name"].as_str().unwrap();
        let definition = fx.ok("get_task_type", json!({"name": name})).await;
        for which in ["params_schema", "inputs_schema", "outputs_schema"] {
            let schema = &definition[which];
            assert_eq!(schema["type"], "object", "{name} {which}: {schema}");
            let validator = jsonschema::validator_for(schema).unwrap_or_else(|e| panic!("{name} {which}: {e}"));
            schemas.insert((name.to_string(), which), validator);
        }
    }
    assert!(schemas.contains_key(&("shell.run".to_string(), "params_schema")));

    let mut shell = sh("work", r#"printf '{"count": 3}' > "$ORRERY_OUTPUTS""#, "start");
    shell["inputs"] = json!([{"name": "when", "get_from": "process_start_time"}]);
    shell["outputs"] = json!([{"name": "count"}]);
    let notify = json!({"id": "tell", "type": "user_interaction.notify", "depends_on": [{"id": "work"}],
        "params": [{"name": "level", "value": "success"}], "inputs": [{"name": "message", "get_from": "count"}]});
    let show = json!({"id": "show", "type": "user_interaction.user_output", "depends_on": [{"id": "tell"}],
        "inputs": [{"name": "count"}]});
    let file = fx.blueprint("fits", vec![shell, notify, show]);
    let id = fx.ok("start_session", json!({"file": file})).await["session_id"].as_str().unwrap().to_string();
    let ended = fx.ok("wait_session", json!({"session_id": id, "timeout_s": 30})).await;
    assert_eq!(ended["session"]["state"], "completed", "{ended}");
    let view = fx.ok("get_session", json!({"session_id": id})).await;
    let attempts = view["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 5);
    for attempt in attempts {
        let agent = attempt["agent"].as_str().unwrap().to_string();
        for (which, value) in [("inputs_schema", &attempt["inputs"]), ("outputs_schema", &attempt["outputs"])] {
            let value = if value.is_null() { json!({}) } else { value.clone() };
            let errors: Vec<String> =
                schemas[&(agent.clone(), which)].iter_errors(&value).map(|e| e.to_string()).collect();
            assert!(errors.is_empty(), "{agent} {which} does not fit {value}: {errors:?}");
        }
    }
    let shell_outputs = &attempts.iter().find(|a| a["agent"] == "shell.run").unwrap()["outputs"];
    let tight = &schemas[&("shell.run".to_string(), "outputs_schema")];
    assert!(!tight.is_valid(&json!({"count": 3})), "exit_code is required: {shell_outputs}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blueprints_are_validated_and_formatted_from_text_or_files() {
    let fx = Fixture::new();
    let orphan = json!({"id": "b", "name": "b", "version": "1.0", "tasks": [
        {"id": "start", "type": "system.start"}, {"id": "lost", "type": "system.sleep"},
        {"id": "end", "type": "system.end", "depends_on": [{"id": "start"}]}]});
    let reports = fx.ok("validate_blueprint", json!({"text": orphan.to_string()})).await;
    assert_eq!(reports[0]["valid"], false);
    assert_eq!(reports[0]["diagnostics"][0]["code"], "orphan-task");
    assert_eq!(reports[0]["diagnostics"][0]["task_id"], "lost");

    let good = fx.blueprint("good", vec![sh("a", "true", "start")]);
    let reports = fx.ok("validate_blueprint", json!({"files": [good]})).await;
    assert_eq!(reports[0]["valid"], true, "{reports}");

    let neither = fx.call("validate_blueprint", json!({})).await;
    assert!(!neither.success);
    assert_eq!(neither.metadata["error"], "invalid_argument");

    let text = std::fs::read_to_string(&good).unwrap();
    let formatted = fx.ok("format_blueprint", json!({"text": text})).await;
    assert_eq!(formatted["changed"], true, "a compact file is not canonical");
    let again = fx.ok("format_blueprint", json!({"text": formatted["text"]})).await;
    assert_eq!(again["changed"], false, "canonical text is a fixed point");
    // An envelope is edited as plain JSON and written back as an envelope.
    let enveloped = fx.ok("format_blueprint", json!({"text": text, "to": "compas"})).await;
    assert!(enveloped["text"].as_str().unwrap().contains("\"dtype\""), "{enveloped}");
    let plain = fx.ok("format_blueprint", json!({"text": enveloped["text"], "to": "antikythera"})).await;
    assert_eq!(plain["text"], formatted["text"], "the round trip keeps the blueprint");

    // Export: the canonical text for a server, plain or in the COMPAS envelope; refused with
    // the errors when the server would refuse it.
    let plain = fx.ok("export_blueprint", json!({"text": text})).await;
    assert_eq!(plain["text"], formatted["text"], "plain export is the canonical text");
    let compas = fx.ok("export_blueprint", json!({"text": text, "to": "compas"})).await;
    let envelope: Value = serde_json::from_str(compas["text"].as_str().unwrap()).unwrap();
    assert_eq!(envelope["dtype"], "antikythera.models/Blueprint", "{envelope}");
    let refused = fx.call("export_blueprint", json!({"text": orphan.to_string()})).await;
    assert_eq!((refused.success, refused.metadata["error"].as_str()), (false, Some("invalid_blueprint")));
    let why = refused.answer.as_str().unwrap();
    assert!(why.contains("server would refuse it") && why.contains("lost"), "{why}");

    // What the editor offers a task: names produced upstream, and its own.
    let mut a = sh("a", "true", "start");
    a["outputs"] = json!([{"name": "n"}]);
    let mut b = sh("b", "true", "a");
    b["inputs"] = json!([{"name": "m", "get_from": "n"}]);
    let wired = std::fs::read_to_string(fx.blueprint("wired", vec![a, b])).unwrap();
    let names = fx.ok("task_names", json!({"text": wired, "task_id": "b"})).await;
    assert_eq!(names["produced"], json!([{"key": "n", "producers": ["a"], "upstream": true}]));
    assert_eq!(names["own"], json!(["command", "m"]));
    let none = fx.call("task_names", json!({"text": wired, "task_id": "zz"})).await;
    assert_eq!(none.metadata["error"], "not_found");
}

/// The antikythera corpus: `ORRERY_CORPUS`, or the repository's `tests/compat/corpus`.
fn corpus_file(name: &str) -> PathBuf {
    let dir = std::env::var_os("ORRERY_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/compat/corpus"));
    dir.join(name)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_editor_gets_every_scope_with_its_policy_its_members_and_the_scope_around_it() {
    let fx = Fixture::new();
    let after = |id: &str| json!([{"id": id}]);
    let text = json!({"id": "nested", "name": "nested", "version": "1.0", "tasks": [
        {"id": "start", "type": "system.start"},
        {"id": "outer", "type": "system.sleep", "depends_on": after("start"),
         "scope_start": {"retry_policy": {"retries": 2, "backoff": {"constant_ms": 250}}}},
        {"id": "inner", "type": "system.sleep", "depends_on": after("outer"),
         "scope_start": {"name": "loop", "while_policy": {"condition": "n > 0", "max_iterations": 5}}},
        {"id": "body", "type": "system.sleep", "depends_on": after("inner"), "scope_start": {}, "scope_end": "body"},
        {"id": "inner_end", "type": "system.sleep", "depends_on": after("body"), "scope_end": "inner"},
        {"id": "outer_end", "type": "system.sleep", "depends_on": after("inner_end"), "scope_end": "outer"},
        {"id": "gate", "type": "system.sleep", "depends_on": after("outer_end"), "condition": "ok", "scope_start": {}},
        {"id": "gate_end", "type": "system.sleep", "depends_on": after("gate"), "scope_end": "gate"},
        {"id": "open", "type": "system.sleep", "depends_on": after("gate_end"), "scope_start": {}},
        {"id": "end", "type": "system.end", "depends_on": after("open")}]})
    .to_string();
    let scopes = fx.ok("blueprint_scopes", json!({"text": text})).await;
    assert_eq!(
        scopes,
        json!([
            {"start": "outer", "end": "outer_end", "policy": "retry", "retries": 2, "backoff_ms": 250,
             "members": ["outer", "inner", "body", "inner_end", "outer_end"], "depth": 0},
            {"start": "inner", "end": "inner_end", "name": "loop", "policy": "while", "condition": "n > 0",
             "max_iterations": 5, "members": ["inner", "body", "inner_end"], "parent": "outer", "depth": 1},
            // A task may open and close its own scope: the reference's validation allows it.
            {"start": "body", "end": "body", "policy": "skip", "members": ["body"], "parent": "inner", "depth": 2},
            // A skip scope carries its start task's condition: false, and the whole scope is skipped.
            {"start": "gate", "end": "gate_end", "policy": "skip", "condition": "ok",
             "members": ["gate", "gate_end"], "depth": 0},
            // No task closes it: it is still shown where it begins, and validation says why.
            {"start": "open", "end": null, "policy": "skip", "members": ["open"], "depth": 0},
        ]),
        "every scope in the order of the tasks that open them"
    );
    let reports = fx.ok("validate_blueprint", json!({"text": text})).await;
    let codes: Vec<(&Value, &Value)> =
        reports[0]["diagnostics"].as_array().unwrap().iter().map(|d| (&d["code"], &d["task_id"])).collect();
    assert!(codes.contains(&(&json!("scope-unclosed"), &json!("open"))), "the problems panel explains it: {codes:?}");

    // The reference's own scope examples and the example a new user opens first.
    let example = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/assembly.json");
    for (file, expected) in [
        (
            corpus_file("scope_retry.json"),
            json!({"start": "scope_open", "end": "scope_close", "policy": "retry",
            "retries": 3, "backoff_ms": 500, "members": ["scope_open", "measure", "assemble", "scope_close"], "depth": 0}),
        ),
        (
            corpus_file("scope_skip.json"),
            json!({"start": "scope_open", "end": "scope_close", "policy": "skip",
            "condition": "needs_processing", "members": ["scope_open", "do_work", "scope_close"], "depth": 0}),
        ),
        (
            corpus_file("scope_while.json"),
            json!({"start": "scope_open", "end": "scope_close", "policy": "while",
            "condition": "elements_remaining > 0", "max_iterations": 10,
            "members": ["scope_open", "pick_element", "place_element", "scope_close"], "depth": 0}),
        ),
        (
            example,
            json!({"start": "pick", "end": "check", "name": "placement loop", "policy": "while",
            "condition": "elements_remaining > 0", "max_iterations": 10, "members": ["pick", "place", "check"], "depth": 0}),
        ),
    ] {
        let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let scopes = fx.ok("blueprint_scopes", json!({"text": text})).await;
        assert_eq!(scopes, json!([expected]), "{}", file.display());
    }

    let unreadable = fx.call("blueprint_scopes", json!({"text": "{\"tasks\": ["})).await;
    assert_eq!((unreadable.success, unreadable.metadata["error"].as_str()), (false, Some("invalid_blueprint")));
    assert!(!unreadable.answer.as_str().unwrap().is_empty(), "the failure says why: {}", unreadable.answer);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_started_through_the_facade_runs_in_the_background_and_is_read_back() {
    let fx = Fixture::new();
    let mut a = sh("a", r#"printf '{"n": 41}' > "$ORRERY_OUTPUTS""#, "start");
    a["outputs"] = json!([{"name": "n"}]);
    let mut b = sh("b", r#"printf '{"m": %s}' $((ORRERY_INPUT_N + 1)) > "$ORRERY_OUTPUTS""#, "a");
    b["inputs"] = json!([{"name": "n"}]);
    b["outputs"] = json!([{"name": "m"}]);
    let file = fx.blueprint("flow", vec![a, b]);
    let mut events = fx.api.subscribe();

    let started = fx.ok("start_session", json!({"file": file})).await;
    let id = started["session_id"].as_str().unwrap().to_string();
    let waited = fx.ok("wait_session", json!({"session_id": id, "timeout_s": 30})).await;
    assert_eq!(waited["ended"], true);
    assert_eq!(waited["session"]["state"], "completed");

    let view = fx.ok("get_session", json!({"session_id": id})).await;
    assert_eq!(view["driven"], false, "its runner let go");
    let states: Vec<&str> = view["tasks"].as_array().unwrap().iter().map(|t| t["state"].as_str().unwrap()).collect();
    assert!(states.iter().all(|s| *s == "SUCCEEDED"), "{states:?}");
    assert_eq!(view["attempts"].as_array().unwrap().len(), 4);
    let data = fx.ok("read_session_data", json!({"session_id": id})).await;
    assert_eq!(data["flow"]["m"], 42, "{data}");
    // The log of an attempt, by byte windows.
    let log = fx.ok("read_attempt_log", json!({"session_id": id, "task": "a", "offset": 0})).await;
    assert_eq!(
        (log["node"].as_str(), log["attempt"].as_u64(), log["running"].as_bool()),
        (Some("flow.a"), Some(1), Some(false))
    );
    assert_eq!(log["window"]["start_offset"], 0);
    assert_eq!(log["window"]["next_offset"], log["window"]["file_size"]);
    let none = fx.call("read_attempt_log", json!({"session_id": id, "task": "start"})).await;
    assert!(!none.success && none.answer.as_str().unwrap().contains("only shell.run tasks"), "{none:?}");
    let unknown = fx.call("read_attempt_log", json!({"session_id": id, "task": "zzz"})).await;
    assert_eq!(unknown.metadata["error"], "not_found");
    let listed = fx.ok("list_sessions", json!({"state": "completed"})).await;
    assert_eq!(listed[0]["id"], id.as_str());

    let mut live = Vec::new();
    while let Ok(event) = events.try_recv() {
        assert_eq!(event.session_id, id);
        // Transient log growth is not stored; the rest is read back below.
        if !matches!(event.data(), Some(EventData::LogGrew(_))) {
            live.push(event);
        }
    }
    assert_eq!(live.first().map(|e| e.kind()), Some("session_created"));
    assert!(live.iter().any(|e| matches!(e.data(), Some(EventData::AttemptSettled(_)))));
    // What a client that saw the first three events missed, read back from the store: the rest.
    let missed = fx.ok("read_events", json!({"after": live[2].global_seq})).await;
    let globals: Vec<u64> =
        missed["events"].as_array().unwrap().iter().map(|e| e["global_seq"].as_u64().unwrap()).collect();
    assert_eq!(globals, live[3..].iter().map(|e| e.global_seq).collect::<Vec<_>>());
    assert_eq!(missed["last_global_seq"], live.last().unwrap().global_seq);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_blueprint_or_a_missing_file_does_not_start() {
    let fx = Fixture::new();
    let missing = fx.call("start_session", json!({"file": fx.path("none.json")})).await;
    assert!(!missing.success);
    assert_eq!(missing.metadata["error"], "not_found");
    let bad = fx.path("bad.json");
    std::fs::write(&bad, json!({"id": "bad", "name": "bad", "version": "1.0", "tasks": []}).to_string()).unwrap();
    let invalid = fx.call("start_session", json!({"file": bad})).await;
    assert!(!invalid.success);
    assert_eq!(invalid.metadata["error"], "invalid_blueprint");
    let listed = fx.ok("list_sessions", json!({})).await;
    assert_eq!(listed, json!([]), "no session was created");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_waits_for_answer_prompt_and_a_running_task_can_be_cancelled() {
    let fx = Fixture::new();
    let ask = json!({"id": "ask", "type": "user_prompt.confirm", "depends_on": [{"id": "start"}],
        "params": [{"name": "message", "value": "Go on?"}, {"name": "options", "value": ["Yes", "No"]}],
        "outputs": [{"name": "result", "set_to": "decision"}]});
    let slow = sh("slow", "sleep 30", "ask");
    let file = fx.blueprint("asking", vec![ask, slow]);
    let mut events = fx.api.subscribe();
    let id = fx.ok("start_session", json!({"file": file})).await["session_id"].as_str().unwrap().to_string();

    tokio::time::timeout(Duration::from_secs(20), wait_for(&mut events, "prompt_waiting", "asking.ask"))
        .await
        .expect("the prompt");
    // The list of runs says who waits for an answer.
    let listed = fx.ok("list_sessions", json!({})).await;
    assert_eq!((listed[0]["waiting"].clone(), listed[0]["interrupted"].clone()), (json!(["asking.ask"]), json!(false)));
    assert_eq!(fx.ok("get_session", json!({"session_id": id})).await["waiting"], json!(["asking.ask"]));
    let answered = fx.ok("answer_prompt", json!({"session_id": id, "task": "ask", "value": "Yes"})).await;
    assert_eq!(answered["outcome"], "answer given to ask");
    tokio::time::timeout(Duration::from_secs(20), wait_for(&mut events, "attempt_started", "asking.slow"))
        .await
        .expect("slow runs");

    let refused = fx.call("cancel_task", json!({"session_id": id, "task": "ask"})).await;
    assert!(!refused.success);
    assert!(refused.answer.as_str().unwrap().contains("not running"), "{refused:?}");
    let cancelled = fx.ok("cancel_task", json!({"session_id": id, "task": "slow"})).await;
    assert_eq!(cancelled["outcome"], "cancelling asking.slow");
    let waited = fx.ok("wait_session", json!({"session_id": id, "timeout_s": 30})).await;
    assert_eq!(waited["session"]["state"], "failed");
    let data = fx.ok("read_session_data", json!({"session_id": id, "instance": "asking"})).await;
    assert_eq!(data["asking"]["decision"], "Yes");

    // The failed task is reset, the session resumed through the facade, and stopped.
    let reset = fx.ok("reset_task", json!({"session_id": id, "task": "slow"})).await;
    assert_eq!(reset["tasks"][0]["to"], "PENDING");
    fx.ok("resume_session", json!({"session_id": id})).await;
    tokio::time::timeout(Duration::from_secs(20), wait_for(&mut events, "attempt_started", "asking.slow"))
        .await
        .expect("again");
    assert_eq!(fx.ok("stop_session", json!({"session_id": id})).await["outcome"], "stopping");
    let waited = fx.ok("wait_session", json!({"session_id": id, "timeout_s": 30})).await;
    assert_eq!(waited["session"]["state"], "stopped");
    fx.api.wait_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lineage_follows_outputs_into_inputs_across_a_composite() {
    let fx = Fixture::new();
    let mut work = sh("work", r#"printf '{"m": %s}' $((ORRERY_INPUT_N * 2)) > "$ORRERY_OUTPUTS""#, "start");
    work["inputs"] = json!([{"name": "n"}]);
    work["outputs"] = json!([{"name": "m"}]);
    fx.blueprint("inner", vec![work]);
    let mut a = sh("a", r#"printf '{"n": 21}' > "$ORRERY_OUTPUTS""#, "start");
    a["outputs"] = json!([{"name": "n"}]);
    let c = json!({"id": "c", "type": "system.composite", "depends_on": [{"id": "a"}],
        "params": [{"name": "blueprint", "value": {"static": "inner"}}],
        "inputs": [{"name": "n"}], "outputs": [{"name": "m"}]});
    let mut b = sh("b", "true", "c");
    b["inputs"] = json!([{"name": "m"}]);
    let file = fx.blueprint("outer", vec![a, c, b]);

    let id = fx.ok("start_session", json!({"file": file})).await["session_id"].as_str().unwrap().to_string();
    let waited = fx.ok("wait_session", json!({"session_id": id, "timeout_s": 30})).await;
    assert_eq!(waited["session"]["state"], "completed", "{waited}");

    let lineage = fx.ok("get_lineage", json!({"session_id": id})).await;
    let edge = |node: &str, input: &str| -> Value {
        lineage["inputs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["node"] == node && l["input"] == input)
            .cloned()
            .unwrap_or_else(|| panic!("no lineage for {node}.{input}: {lineage}"))
    };
    assert_eq!(edge("outer.c", "n")["source"]["node"], "outer.a");
    assert_eq!(edge("inner_c.work", "n")["source"]["node"], "outer.c", "the composite handed its input in");
    assert_eq!(edge("inner_c.work", "n")["instance"], "inner_c");
    assert_eq!(edge("outer.b", "m")["source"]["node"], "outer.c", "the composite handed its output out");
    assert_eq!(edge("outer.b", "m")["value_sha256"], orrery_store::canonical::sha256_hex("42"));
    let instances = lineage["instances"].as_array().unwrap();
    assert_eq!(instances[0]["id"], "outer");
    assert_eq!(instances[0]["composite"], Value::Null);
    assert_eq!(instances[1]["id"], "inner_c");
    assert_eq!(instances[1]["composite"], "outer.c");

    // A run view draws the versions the session ran, even after the files change.
    std::fs::write(&file, "{}").unwrap();
    let ran = fx.ok("get_session_blueprints", json!({"session_id": id})).await;
    let root: Value = serde_json::from_str(ran["root"]["text"].as_str().unwrap()).unwrap();
    assert_eq!((root["id"].clone(), root["tasks"].as_array().unwrap().len()), (json!("outer"), 5));
    assert_eq!(ran["root"]["hash"], orrery_store::canonical::sha256_hex(ran["root"]["text"].as_str().unwrap()));
    let inner: Vec<&str> =
        ran["inner"].as_array().unwrap().iter().map(|b| b["blueprint_id"].as_str().unwrap()).collect();
    assert_eq!(inner, ["inner"]);
    assert_eq!(ran["instances"], lineage["instances"]);
    let missing = fx.call("get_session_blueprints", json!({"session_id": "nope"})).await;
    assert!(!missing.success);
    assert_eq!(missing.metadata["error"], "not_found", "{missing:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn named_tasks_of_the_job_protocol_run_as_sessions_with_a_fresh_run_each_time() {
    let fx = Fixture::new();
    let mut a = sh("a", r#"printf '{"n": 7}' > "$ORRERY_OUTPUTS""#, "start");
    a["outputs"] = json!([{"name": "n"}]);
    let text = std::fs::read_to_string(fx.blueprint("nightly", vec![a])).unwrap();
    let saved = fx.ok("save_blueprint", json!({"text": text})).await;
    assert_eq!((saved["blueprint_id"].as_str(), saved["valid"].as_bool()), (Some("nightly"), Some(true)));
    let stored = fx.ok("list_blueprints", json!({})).await;
    assert_eq!(stored[0]["versions"][0]["hash"], saved["hash"]);

    let definition = fx.ok("get_task_definition", json!({"task": "nightly"})).await;
    assert_eq!((definition["source"].as_str(), definition["task_type"].as_str()), (Some("plugin"), Some("blueprint")));
    let submit = json!({"task": "nightly", "task_name": "run-1", "day": "monday"});
    let first = fx.ok("submit", submit.clone()).await;
    assert_eq!(first, json!({"task_id": "blueprint#nightly#run-1", "run_id": first["run_id"], "task": "nightly"}));
    let run = first["run_id"].as_str().unwrap().to_string();
    let done = fx.ok("wait_task", json!({"task_id": "blueprint#nightly#run-1", "run_id": run})).await;
    assert_eq!(done["state"], "succeeded", "{done}");
    assert_eq!(done["config"], json!({"task_name": "run-1", "source_tasks": "", "day": "monday"}));
    assert_eq!(done["result"]["n"], 7, "a blueprint's result is its session data: {done}");
    let context = fx.ok("get_task_context", json!({"task_id": "blueprint#nightly#run-1"})).await;
    assert_eq!((context["metadata_exists"].as_bool(), context["status"]["run_id"].as_str()), (Some(true), Some(&*run)));
    let log = fx.ok("read_task_log", json!({"task_id": "blueprint#nightly#run-1", "offset": 0})).await;
    let log = log["content"].as_str().unwrap();
    assert!(log.contains("nightly.a attempt 1 succeeded") && log.ends_with("session completed\n"), "{log}");

    // Resubmitting a finished task starts a new run; the old run id is stale from then on.
    let second = fx.ok("submit", submit).await;
    assert_ne!(second["run_id"], run.as_str());
    let stale = fx.call("wait_task", json!({"task_id": "blueprint#nightly#run-1", "run_id": run})).await;
    assert_eq!((stale.success, stale.metadata["error"].as_str()), (false, Some("stale_run")));
    assert!(stale.answer.as_str().unwrap().starts_with("ValueError: Task run changed"), "{stale:?}");
    let second_run = second["run_id"].as_str().unwrap().to_string();
    fx.ok("wait_task", json!({"task_id": "blueprint#nightly#run-1", "run_id": second_run, "poll_interval": 0.05}))
        .await;
    let cancelled = fx.ok("cancel", json!({"task_id": "blueprint#nightly#run-1"})).await;
    assert_eq!(cancelled, false, "cancelling a finished run is a successful no-op");
    assert_eq!(fx.ok("list_task_ids", json!({})).await, json!(["blueprint#nightly#run-1"]));
    assert_eq!(
        fx.ok("delete_tasks", json!({"task_ids": ["blueprint#nightly#run-1", "none#x#y"]})).await,
        json!(["blueprint#nightly#run-1"])
    );
    assert_eq!(fx.ok("list_task_statuses", json!({})).await, json!([]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_single_task_of_a_registered_type_is_submitted_refused_while_active_and_cancelled() {
    let fx = Fixture::new();
    let submit = json!({"task": "shell.run", "task_name": "slow", "command": "sleep 30"});
    let first = fx.ok("submit", submit.clone()).await;
    let (task, run) = ("shell#shell.run#slow", first["run_id"].as_str().unwrap().to_string());
    let again = fx.call("submit", submit).await;
    assert_eq!((again.success, again.metadata["error"].as_str()), (false, Some("refused")));
    assert!(again.answer.as_str().unwrap().starts_with("FileExistsError: Active Task already exists"), "{again:?}");
    assert_eq!(fx.ok("delete_tasks", json!({"task_ids": [task]})).await, json!([]), "an active task is skipped");
    let graph = fx.ok("get_task_graph", json!({"task_id": task})).await;
    assert_eq!(graph["nodes"][0]["provisional"], true, "its run has not ended: {graph}");

    assert_eq!(fx.ok("cancel", json!({"task_id": task})).await, true);
    let done = fx.call("wait_task", json!({"task_id": task, "run_id": run})).await;
    assert_eq!((done.success, done.metadata["error"].as_str()), (false, Some("task_failed")), "{done:?}");
    assert_eq!((done.answer["state"].as_str(), done.answer["exit_code"].as_i64()), (Some("cancelled"), Some(130)));
    let statuses = fx.ok("list_task_statuses", json!({})).await;
    assert_eq!(statuses[0]["state"], "cancelled");

    for (arguments, code, says) in [
        (
            json!({"task": "shell.run", "task_name": "bad name!", "command": "true"}),
            "invalid_argument",
            "ValidationError",
        ),
        (json!({"task": "shell.run", "task_name": "x".repeat(33), "command": "true"}), "invalid_argument", "1-32"),
        (
            json!({"task": "shell.run", "command": "true", "colour": "red"}),
            "invalid_argument",
            "\"colour\" is not an input",
        ),
        (json!({"task": "shell.run"}), "invalid_argument", "needs one of the inputs command or argv"),
        (json!({"task": "nope.tool"}), "not_found", "ValueError: Unknown Task: nope.tool. Available: shell.run"),
        (json!({"task": "submitted_shell_run"}), "not_found", "Unknown Task"),
    ] {
        let refused = fx.call("submit", arguments).await;
        assert_eq!((refused.success, refused.metadata["error"].as_str()), (false, Some(code)), "{refused:?}");
        assert!(refused.answer.as_str().unwrap().contains(says), "{refused:?}");
    }
    let unknown = fx.call("status", json!({"task_id": "shell#shell.run#none"})).await;
    assert_eq!(
        (unknown.metadata["error"].as_str(), unknown.answer.as_str()),
        (Some("not_found"), Some("KeyError: 'shell#shell.run#none'"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tasks_log_is_read_by_windows_and_its_graph_follows_source_tasks_both_ways() {
    let fx = Fixture::new();
    let upstream = fx.ok("submit", json!({"task": "shell.run", "task_name": "up", "command": "echo héllo"})).await;
    let (up, run) = ("shell#shell.run#up", upstream["run_id"].as_str().unwrap().to_string());
    fx.ok("wait_task", json!({"task_id": up, "run_id": run})).await;
    let window = fx.ok("read_task_log", json!({"task_id": up, "offset": 0})).await;
    assert_eq!(window["content"], "héllo\n");
    assert_eq!(window["next_offset"], 7, "byte offsets: é is two bytes");
    let status = fx.ok("status", json!({"task_id": up})).await;
    assert!(status["log_path"].as_str().unwrap().ends_with(".log"), "{status}");
    assert_eq!(status["result"]["exit_code"], 0, "a single task's result is its outputs: {status}");

    // An anonymous task, coming from the first and from one never submitted.
    let down =
        json!({"task": "shell.run", "command": "true", "source_tasks": "shell#shell.run#up, shell#shell.run#gone"});
    let handle = fx.ok("submit", down).await;
    let (down, down_run) = (handle["task_id"].as_str().unwrap().to_string(), handle["run_id"].as_str().unwrap());
    let name = down.strip_prefix("shell#shell.run#").unwrap();
    assert!(name.len() == 18 && name.bytes().all(|b| b.is_ascii_alphanumeric()), "a made-up name: {name}");
    fx.ok("wait_task", json!({"task_id": down, "run_id": down_run})).await;
    // Asked from the upstream task, the graph reaches its child and the child's other parent.
    let graph = fx.ok("get_task_graph", json!({"task_id": up})).await;
    let nodes: Vec<(&str, bool, bool)> = graph["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| (n["task_id"].as_str().unwrap(), n["missing"].as_bool().unwrap(), n["provisional"].as_bool().unwrap()))
        .collect();
    assert_eq!(nodes, [("shell#shell.run#gone", true, false), (up, false, false), (down.as_str(), false, false)]);
    assert_eq!((graph["root_id"].as_str(), graph["selected_id"].as_str()), (Some("shell#shell.run#gone"), Some(up)));
    assert_eq!(graph["edges"], json!([{"from": "shell#shell.run#gone", "to": down}, {"from": up, "to": down}]));
    let context = fx.ok("get_task_context", json!({"task_id": down})).await;
    assert_eq!(context["relations"]["direct_upstream"], json!(["shell#shell.run#gone", up]));
    assert_eq!(context["relations"]["missing"], json!(["shell#shell.run#gone"]));
    let context = fx.ok("get_task_context", json!({"task_id": up})).await;
    assert_eq!(context["relations"]["direct_downstream"], json!([down]));
    let unknown = fx.call("get_task_graph", json!({"task_id": "shell#shell.run#none"})).await;
    assert_eq!(unknown.metadata["error"], "not_found");
}

/// Every item of a stream, until it ends.
async fn drain(items: &mut tokio::sync::mpsc::Receiver<orrery_api::StreamItem>) -> Vec<orrery_api::StreamItem> {
    let mut all = Vec::new();
    while let Some(item) = tokio::time::timeout(Duration::from_secs(60), items.recv()).await.expect("an item in time") {
        all.push(item);
    }
    all
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_task_gives_its_progress_log_bytes_and_artifacts_then_its_result_and_ends() {
    use orrery_api::{StreamItem, Streamed};
    let fx = Fixture::new();
    let mut a = sh(
        "a",
        r#"for i in 1 2 3; do echo "line $i é"; sleep 0.2; done; printf '{"n": 7}' > "$ORRERY_OUTPUTS""#,
        "start",
    );
    a["outputs"] = json!([{"name": "n"}]);
    let text = std::fs::read_to_string(fx.blueprint("streamed", vec![a])).unwrap();
    fx.ok("save_blueprint", json!({"text": text})).await;
    fx.ok("submit", json!({"task": "streamed", "task_name": "s"})).await;

    let Ok(Streamed::Items(mut items)) = fx.api.stream_task(json!({"task_id": "blueprint#streamed#s"})).await else {
        panic!("the stream opens")
    };
    let all = drain(&mut items).await;
    let kinds: Vec<&str> = all.iter().map(StreamItem::kind).collect();
    assert_eq!(kinds.last(), Some(&"result"), "the result comes last: {kinds:?}");
    let StreamItem::Result(result) = all.last().unwrap() else { unreachable!() };
    assert_eq!(result.state, "succeeded");
    let progress: Vec<String> = all
        .iter()
        .filter_map(|i| match i {
            StreamItem::Progress(event) => Some(event["kind"].as_str().unwrap_or("?").to_string()),
            _ => None,
        })
        .collect();
    assert_eq!(progress.first().map(String::as_str), Some("session_created"), "from the start of the run");
    assert!(progress.iter().any(|k| k == "attempt_settled"), "{progress:?}");
    // The log arrives whole and in order, byte offsets chained.
    let mut log = String::new();
    let mut next = 0;
    for item in &all {
        if let StreamItem::Log(chunk) = item {
            assert_eq!((chunk.node.as_str(), chunk.start_offset), ("streamed.a", next), "chunks follow each other");
            next = chunk.next_offset;
            log.push_str(&chunk.content);
        }
    }
    assert_eq!(log, "line 1 é\nline 2 é\nline 3 é\n");
    let artifacts: Vec<(&str, &str, &Value)> = all
        .iter()
        .filter_map(|i| match i {
            StreamItem::Artifact(a) => Some((a.instance.as_str(), a.key.as_str(), &a.value)),
            _ => None,
        })
        .collect();
    assert!(artifacts.contains(&("streamed", "n", &json!(7))), "{artifacts:?}");

    // Opened again after the end, the stream replays the whole run.
    let Ok(Streamed::Items(mut again)) = fx.api.stream_task(json!({"task_id": "blueprint#streamed#s"})).await else {
        panic!("the stream opens again")
    };
    let replayed = drain(&mut again).await;
    let without_logs = |items: &[StreamItem]| -> Vec<String> {
        items.iter().filter(|i| i.kind() != "log").map(|i| serde_json::to_string(i).unwrap()).collect()
    };
    assert_eq!(without_logs(&replayed), without_logs(&all), "the same items (logs may come in other chunks)");
    let replayed_log: String = replayed
        .iter()
        .filter_map(|i| match i {
            StreamItem::Log(chunk) => Some(chunk.content.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(replayed_log, log);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_refuses_an_unknown_task_and_a_client_that_goes_away_does_not_cancel_the_task() {
    use orrery_api::Streamed;
    let fx = Fixture::new();
    let submit = json!({"task": "shell.run", "task_name": "t", "command": "echo begun; sleep 1; echo done"});
    let run = fx.ok("submit", submit).await["run_id"].as_str().unwrap().to_string();
    let task = "shell#shell.run#t";
    match fx.api.stream_task(json!({"task_id": "shell#shell.run#none"})).await {
        Ok(Streamed::Refused(envelope)) => assert_eq!(envelope.metadata["error"], "not_found"),
        other => panic!("an unknown task is refused, got {other:?}"),
    }
    for refused in
        [json!({"task_id": task, "run_id": run}), json!({"task_id": task, "poll_interval": 0}), json!({"task_id": ""})]
    {
        assert!(
            matches!(fx.api.stream_task(refused.clone()).await, Err(CallError::InvalidArguments { .. })),
            "{refused} breaks the schema"
        );
    }

    let Ok(Streamed::Items(mut items)) = fx.api.stream_task(json!({"task_id": task})).await else {
        panic!("the stream opens")
    };
    items.recv().await.expect("a first item");
    drop(items);
    // Called as an ordinary job, it waits for the end and answers the status.
    let done = fx.ok("stream_task", json!({"task_id": task, "poll_interval": 0.1})).await;
    assert_eq!(
        (done["state"].as_str(), done["run_id"].as_str()),
        (Some("succeeded"), Some(&*run)),
        "ran to its end: {done}"
    );
    let window = fx.ok("read_task_log", json!({"task_id": task, "offset": 0})).await;
    assert_eq!(window["content"], "begun\ndone\n");
    let failing = fx.ok("submit", json!({"task": "shell.run", "task_name": "f", "command": "exit 3"})).await;
    let streamed = fx.call("stream_task", json!({"task_id": failing["task_id"]})).await;
    assert_eq!((streamed.success, streamed.answer["exit_code"].as_i64()), (false, Some(3)), "{streamed:?}");
}

/// A task that prints nothing leaves no log file (its supervisor makes it at the first output):
/// its status still names where the log goes, and every window of it reads as an empty log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_log_of_a_task_that_printed_nothing_reads_as_an_empty_log() {
    let fx = Fixture::new();
    let run =
        fx.ok("submit", json!({"task": "shell.run", "task_name": "quiet", "command": "true"})).await["run_id"].clone();
    let task = "shell#shell.run#quiet";
    let done = fx.ok("wait_task", json!({"task_id": task, "run_id": run, "poll_interval": 0.1})).await;
    assert_eq!(done["state"], "succeeded", "{done}");
    let path = done["log_path"].as_str().unwrap();
    assert!(!path.is_empty() && !std::path::Path::new(path).exists(), "{done}");
    for (offset, reset) in [(-1, false), (0, false), (5, true)] {
        let window = fx.ok("read_task_log", json!({"task_id": task, "offset": offset})).await;
        let seen = (window["content"].as_str(), window["file_size"].as_u64(), window["reset"].as_bool());
        assert_eq!(seen, (Some(""), Some(0), Some(reset)), "offset {offset}: {window}");
        assert_eq!(
            (window["has_more_before"].as_bool(), window["has_more_after"].as_bool()),
            (Some(false), Some(false))
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_attempts_log_growth_is_announced_on_the_event_stream_without_being_stored() {
    let fx = Fixture::new();
    let a = sh("a", "for i in 1 2 3 4; do echo line $i; sleep 0.4; done", "start");
    let file = fx.blueprint("chatty", vec![a]);
    let mut events = fx.api.subscribe();
    let id = fx.ok("start_session", json!({"file": file})).await["session_id"].as_str().unwrap().to_string();
    fx.ok("wait_session", json!({"session_id": id, "timeout_s": 30})).await;
    fx.api.wait_all().await;

    let mut sizes = Vec::new();
    let mut carried = String::new();
    let mut last_stored = 0;
    while let Ok(event) = events.try_recv() {
        let Some(EventData::LogGrew(grew)) = event.data() else {
            last_stored = event.global_seq;
            continue;
        };
        assert_eq!((grew.node.as_str(), event.seq), ("chatty.a", 0), "transient: {event:?}");
        assert_eq!(event.global_seq, last_stored, "it carries the last stored event's global_seq");
        sizes.push(grew.file_size);
        // Small growth comes with its bytes, each piece where the last one ended.
        let (from, text) = (grew.from.expect("from"), grew.text.as_deref().expect("text"));
        assert_eq!(from, carried.len() as u64, "{grew:?}");
        carried.push_str(text);
    }
    assert_eq!(carried, "line 1\nline 2\nline 3\nline 4\n", "the events carried the whole log");
    assert!(sizes.len() >= 2, "the log was seen growing while the task ran: {sizes:?}");
    assert!(sizes.windows(2).all(|w| w[0] < w[1]), "sizes only grow: {sizes:?}");
    let window = fx.ok("read_attempt_log", json!({"session_id": id, "task": "a"})).await;
    assert_eq!(sizes.last().copied(), window["window"]["file_size"].as_u64(), "the last one is the final size");
    let stored = fx.ok("read_events", json!({"after": 0})).await;
    assert!(stored["events"].as_array().unwrap().iter().all(|e| e["kind"] != "log_grew"), "log growth is not stored");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn of_submissions_racing_for_one_task_name_exactly_one_wins_within_and_across_processes() {
    let fx = Fixture::new();
    // A second facade on the same store shares nothing in memory with the first: another process.
    let other = Api::new(ApiOptions { db: fx.path("orrery.db"), work_dir: None, max_parallel: Some(2) });
    // Each name submitted three times by each facade at once.
    let names: Vec<String> = (0..8).map(|i| format!("race-{i}")).collect();
    let mut racing = Vec::new();
    for name in &names {
        for i in 0..6 {
            let api = if i % 2 == 0 { fx.api.clone() } else { other.clone() };
            let submit = json!({"task": "shell.run", "task_name": name, "command": "sleep 30"});
            racing.push((name.clone(), tokio::spawn(async move { api.call("submit", submit).await.unwrap() })));
        }
    }
    let mut won: HashMap<String, Vec<String>> = HashMap::new();
    for (name, answer) in racing {
        let envelope = answer.await.unwrap();
        if envelope.success {
            won.entry(name).or_default().push(envelope.answer["run_id"].as_str().unwrap().to_string());
        } else {
            assert_eq!(envelope.metadata["error"], "refused", "a loser is refused: {envelope:?}");
        }
    }
    for name in &names {
        let runs = &won[name];
        assert_eq!(runs.len(), 1, "one submission of {name} wins: {runs:?}");
        let status = fx.ok("status", json!({"task_id": format!("shell#shell.run#{name}")})).await;
        assert_eq!(status["run_id"], runs[0].as_str(), "the winner's run is the task's current run");
    }
    // A run a loser had started is stopped: only the winners' still run.
    let winners: Vec<&String> = won.values().flatten().collect();
    for api in [&fx.api, &other] {
        for session in api.running_sessions() {
            if !winners.contains(&&session) {
                let ended = api.call("wait_session", json!({"session_id": session, "timeout_s": 30})).await.unwrap();
                assert_eq!(ended.answer["session"]["state"], "stopped", "{ended:?}");
            }
        }
    }
    let running = fx.ok("list_sessions", json!({"state": "running"})).await;
    assert_eq!(running.as_array().unwrap().len(), names.len(), "{running}");
    for name in won.keys() {
        fx.ok("cancel", json!({"task_id": format!("shell#shell.run#{name}")})).await;
    }
    fx.api.wait_all().await;
    other.wait_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blueprint_file_is_written_canonical_and_atomically_and_its_layout_kept_beside_it() {
    let fx = Fixture::new();
    let file = fx.blueprint("drawn", vec![sh("a", "true", "start")]);
    let compact = std::fs::read_to_string(&file).unwrap();
    let written = fx.ok("write_blueprint_file", json!({"file": file, "text": compact})).await;
    assert_eq!(written["changed"], true, "a compact file becomes canonical");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), written["text"].as_str().unwrap());
    let again = fx.ok("write_blueprint_file", json!({"file": file, "text": compact})).await;
    assert_eq!(again["changed"], false, "the same blueprint: the same bytes, not rewritten");
    let broken = fx.call("write_blueprint_file", json!({"file": file, "text": "{\"id\": "})).await;
    assert_eq!(broken.metadata["error"], "invalid_blueprint");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), written["text"].as_str().unwrap(), "the file is untouched");
    let leftovers: Vec<_> = std::fs::read_dir(fx.dir.path())
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .filter(|n| n.contains("orrery-tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");

    let none = fx.ok("read_layout", json!({"file": file})).await;
    assert_eq!((none["found"].as_bool(), none["positions"].clone()), (Some(false), json!({})));
    let positions = json!({"start": {"x": 0.4, "y": -10.6}, "a": {"x": 200, "y": 15}, "end": {"x": 400, "y": 0}});
    fx.ok("save_layout", json!({"file": file, "positions": positions})).await;
    let layout_file = fx.path("drawn.json.layout");
    assert_eq!(
        std::fs::read_to_string(&layout_file).unwrap(),
        "{\n    \"orrery_layout\": 1,\n    \"positions\": {\n        \"a\": [200, 15],\n        \"end\": [400, 0],\n        \"start\": [0, -11]\n    }\n}\n",
        "sorted, whole pixels, one task per line"
    );
    let read = fx.ok("read_layout", json!({"file": file})).await;
    assert_eq!(read["found"], true);
    assert_eq!(read["positions"]["start"], json!({"x": 0.0, "y": -11.0}));
    assert_eq!(read["direction"], "down", "a layout without a direction flows down");
    // Laid out left to right: the layout keeps the direction for the next automatic layout.
    fx.ok("save_layout", json!({"file": file, "positions": positions, "direction": "right"})).await;
    assert!(std::fs::read_to_string(&layout_file).unwrap().contains("\n    \"direction\": \"right\",\n"));
    assert_eq!(fx.ok("read_layout", json!({"file": file})).await["direction"], "right");
    // A direction the layout does not know is refused before anything is written.
    for wrong in [json!("up"), json!("Right"), json!(1), json!(null)] {
        let refused =
            fx.api.call("save_layout", json!({"file": file, "positions": positions, "direction": wrong})).await;
        assert!(matches!(refused, Err(CallError::InvalidArguments { .. })), "{wrong}: {refused:?}");
    }
    assert_eq!(fx.ok("read_layout", json!({"file": file})).await["direction"], "right", "the layout is as it was");
    // The editor's breakpoints are kept there too, on one line; none: no line.
    let breakpoints = json!({"a": "before", "end": "after"});
    fx.ok("save_layout", json!({"file": file, "positions": positions, "breakpoints": breakpoints})).await;
    let text = std::fs::read_to_string(&layout_file).unwrap();
    assert!(text.contains("\n    \"breakpoints\": {\"a\": \"before\", \"end\": \"after\"},\n"), "{text}");
    assert_eq!(fx.ok("read_layout", json!({"file": file})).await["breakpoints"], breakpoints);
    let refused =
        fx.api.call("save_layout", json!({"file": file, "positions": {}, "breakpoints": {"a": "never"}})).await;
    assert!(matches!(refused, Err(CallError::InvalidArguments { .. })), "{refused:?}");
    fx.ok("save_layout", json!({"file": file, "positions": positions})).await;
    assert!(!std::fs::read_to_string(&layout_file).unwrap().contains("breakpoints"));
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        written["text"].as_str().unwrap(),
        "the blueprint is untouched"
    );

    for (text, says) in [
        ("{\n  \"orrery_layout\": 1,\n  \"positions\": {\"a\": [1]}\n}", "the position of task \"a\" is not [x, y]"),
        ("{\n  \"orrery_layout\": 9, \"positions\": {}}", "layout version 9 is newer"),
        ("{\"positions\": {}}", "not an Orrery layout"),
        ("{\n\n  \"orrery_layout\": 1,,\n}", "line 3"),
        (
            "{\"orrery_layout\": 1, \"direction\": \"up\", \"positions\": {}}",
            "\"direction\" is \"down\" or \"right\", not \"up\"",
        ),
        (
            "{\"orrery_layout\": 1, \"breakpoints\": {\"a\": \"during\"}, \"positions\": {}}",
            "the breakpoint of task \"a\" is \"before\" or \"after\", not \"during\"",
        ),
    ] {
        std::fs::write(&layout_file, text).unwrap();
        let refused = fx.call("read_layout", json!({"file": file})).await;
        assert_eq!(refused.metadata["error"], "invalid_layout", "{text}");
        let answer = refused.answer.as_str().unwrap();
        assert!(answer.contains(says) && answer.contains("drawn.json.layout"), "{text}: {answer}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blueprint_being_edited_is_checked_with_the_blueprints_of_its_folder_as_its_library() {
    let fx = Fixture::new();
    fx.blueprint("inner", vec![sh("work", "true", "start")]);
    std::fs::write(fx.path("broken.json"), "{ not json").unwrap();
    std::fs::write(fx.path("notes.txt"), "not a blueprint").unwrap();
    let call = json!({"id": "outer", "type": "system.composite", "depends_on": [{"id": "start"}],
        "params": [{"name": "blueprint", "value": {"static": "inner"}}]});
    let outer = std::fs::read_to_string(fx.blueprint("outer", vec![call])).unwrap();

    let alone = fx.ok("validate_blueprint", json!({"text": outer})).await;
    assert_eq!(alone[0]["diagnostics"][0]["code"], "composite-target-missing", "{alone}");
    // As the text of outer.json: inner.json beside it is found; its own saved copy is not a
    // duplicate of it.
    let beside = fx.ok("validate_blueprint", json!({"text": outer, "file": fx.path("outer.json")})).await;
    assert_eq!(beside.as_array().unwrap().len(), 1, "only its own report: {beside}");
    assert_eq!(beside[0]["diagnostics"], json!([]), "{beside}");
    let nowhere = fx.ok("validate_blueprint", json!({"text": outer, "file": "/no/such/folder/x.json"})).await;
    assert_eq!(nowhere[0]["diagnostics"][0]["code"], "composite-target-missing");

    let files = fx.ok("list_blueprint_files", json!({"folder": fx.dir.path()})).await;
    let listed: Vec<(&str, u64)> = files
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["blueprint_id"].as_str().unwrap(), f["tasks"].as_u64().unwrap()))
        .collect();
    assert_eq!(listed, [("inner", 3), ("outer", 3)], "by path; what does not load is left out");
    assert_eq!(fx.ok("list_blueprint_files", json!({"folder": "/no/such/folder"})).await, json!([]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_runs_are_compared_task_by_task_and_by_the_session_data_that_differs() {
    let fx = Fixture::new();
    let value = fx.path("value.txt");
    let flag = fx.path("flag.txt");
    let mut a = sh("a", &format!(r#"printf '{{"n": %s}}' "$(cat {})" > "$ORRERY_OUTPUTS""#, value.display()), "start");
    a["outputs"] = json!([{"name": "n"}]);
    let b = sh("b", "true", "a");
    let c = sh("c", &format!("test -e {}", flag.display()), "b");
    let file = fx.blueprint("twice", vec![a, b, c]);
    let run = |n: &str| {
        std::fs::write(&value, n).unwrap();
        async {
            let id = fx.ok("start_session", json!({"file": file})).await["session_id"].as_str().unwrap().to_string();
            fx.ok("wait_session", json!({"session_id": id, "timeout_s": 30})).await;
            id
        }
    };
    let first = run("1").await;
    std::fs::write(&flag, "").unwrap();
    let second = run("2").await;

    let compared = fx.ok("compare_sessions", json!({"a": first, "b": second})).await;
    assert_eq!(compared["same_blueprint"], true);
    assert_eq!((compared["a"]["state"].as_str(), compared["b"]["state"].as_str()), (Some("failed"), Some("completed")));
    let differs: Vec<(&str, bool)> = compared["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["node"].as_str().unwrap(), t["differs"].as_bool().unwrap()))
        .collect();
    assert_eq!(
        differs,
        [("twice.a", true), ("twice.b", false), ("twice.c", true), ("twice.end", true), ("twice.start", false)],
        "times do not count; a's output, c's and end's states do: {compared}"
    );
    let c = &compared["tasks"][2];
    assert_eq!((c["a"]["state"].as_str(), c["b"]["state"].as_str()), (Some("FAILED"), Some("SUCCEEDED")));
    assert_eq!(compared["data"], json!([{"instance": "twice", "key": "n", "a": 1, "b": 2}]), "{compared}");
    let unknown = fx.call("compare_sessions", json!({"a": first, "b": "nope"})).await;
    assert_eq!(unknown.metadata["error"], "not_found");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_and_the_session_it_runs_again_point_at_each_other() {
    let fx = Fixture::new();
    let file = fx.blueprint("again", vec![sh("a", "true", "start")]);
    let first = fx.ok("start_session", json!({"file": file})).await["session_id"].as_str().unwrap().to_string();
    fx.ok("wait_session", json!({"session_id": first, "timeout_s": 30})).await;
    let restart = fx.ok("restart_session", json!({"session_id": first})).await;
    let second = restart["session_id"].as_str().unwrap().to_string();
    assert_ne!(second, first, "a restart is a new session");
    fx.ok("wait_session", json!({"session_id": second, "timeout_s": 30})).await;

    let old = fx.ok("get_session", json!({"session_id": first})).await;
    let new = fx.ok("get_session", json!({"session_id": second})).await;
    assert_eq!(new["session"]["restarted_from"], first.as_str(), "the restart names what it runs again");
    assert!(old["session"].get("restarted_from").is_none(), "the first run restarts nothing: {old}");
    let restarts: Vec<&str> = old["restarts"].as_array().unwrap().iter().map(|s| s["id"].as_str().unwrap()).collect();
    assert_eq!(restarts, [second.as_str()], "the first run lists its restart");
    assert_eq!(old["restarts"][0]["state"], "completed");
    assert_eq!(new["restarts"], json!([]));
    let unknown = fx.call("restart_session", json!({"session_id": "nope"})).await;
    assert_eq!(unknown.metadata["error"], "not_found", "{unknown:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_run_retried_with_its_fixed_file_keeps_what_it_finished_and_runs_the_rest() {
    let fx = Fixture::new();
    let runs_of_a = fx.path("a.log");
    let mut a =
        sh("a", &format!(r#"echo ran >> {}; printf '{{"n": 7}}' > "$ORRERY_OUTPUTS""#, runs_of_a.display()), "start");
    a["outputs"] = json!([{"name": "n"}]);
    let tasks = |b_command: &str, a: &Value| vec![a.clone(), sh("b", b_command, "a"), sh("c", "true", "b")];
    let file = fx.blueprint("fix", tasks("exit 3", &a));
    let first = fx.ok("start_session", json!({"file": file})).await["session_id"].as_str().unwrap().to_string();
    assert_eq!(
        fx.ok("wait_session", json!({"session_id": first, "timeout_s": 30})).await["session"]["state"],
        "failed"
    );
    let view = fx.ok("get_session", json!({"session_id": first})).await;
    assert_eq!(view["session"]["file"], file.to_str().unwrap(), "a run keeps the file it was started from");

    let same = fx.ok("blueprint_changes", json!({"session_id": first})).await;
    assert_eq!((same["summary"].as_str(), &same["problem"]), (Some("no change"), &Value::Null), "{same}");
    fx.blueprint("fix", tasks("true", &a));
    let changed = fx.ok("blueprint_changes", json!({"session_id": first})).await;
    assert_eq!(changed["summary"], "b: command changed", "{changed}");
    assert_eq!(changed["changes"]["changed"], json!([{"task": "b", "fields": ["command"]}]));

    // Retry with the saved file: a is kept with its data, b and what follows run.
    let retry = fx.ok("restart_session", json!({"session_id": first, "saved": true, "keep_done": true})).await;
    let second = retry["session_id"].as_str().unwrap().to_string();
    assert_eq!(
        fx.ok("wait_session", json!({"session_id": second, "timeout_s": 30})).await["session"]["state"],
        "completed"
    );
    let view = fx.ok("get_session", json!({"session_id": second})).await;
    assert_eq!(view["session"]["restarted_from"], first.as_str());
    assert_eq!(view["session"]["file"], file.to_str().unwrap());
    let ran: Vec<&str> = view["attempts"].as_array().unwrap().iter().map(|t| t["task"].as_str().unwrap()).collect();
    assert_eq!(ran, ["b", "c", "end"], "start and a are kept, not run: {view}");
    assert_eq!((state_of(&view, "a"), state_of(&view, "b")), (json!("SUCCEEDED"), json!("SUCCEEDED")));
    assert_eq!(std::fs::read_to_string(&runs_of_a).unwrap(), "ran\n", "a ran once, in the first run");
    let data = fx.ok("read_session_data", json!({"session_id": second, "instance": "fix"})).await;
    assert_eq!(data["fix"]["n"], 7, "a's output is kept: {data}");

    // A changed task is not kept, nor anything after it; without keep_done nothing is.
    let mut a2 = a.clone();
    // Only the output changes: the log's path (a temporary folder) may hold a 7 too.
    a2["params"][0]["value"] = json!(a["params"][0]["value"].as_str().unwrap().replace(r#""n": 7"#, r#""n": 8"#));
    fx.blueprint("fix", tasks("exit 3", &a2));
    let third = fx.ok("restart_session", json!({"session_id": first, "saved": true, "keep_done": true})).await;
    let third = third["session_id"].as_str().unwrap().to_string();
    assert_eq!(
        fx.ok("wait_session", json!({"session_id": third, "timeout_s": 30})).await["session"]["state"],
        "failed"
    );
    let view = fx.ok("get_session", json!({"session_id": third})).await;
    let ran: Vec<&str> = view["attempts"].as_array().unwrap().iter().map(|t| t["task"].as_str().unwrap()).collect();
    assert_eq!(ran, ["a", "b"], "{view}");
    let over =
        fx.ok("restart_session", json!({"session_id": second})).await["session_id"].as_str().unwrap().to_string();
    assert_eq!(
        fx.ok("wait_session", json!({"session_id": over, "timeout_s": 30})).await["session"]["state"],
        "completed",
        "the versions it ran"
    );
    assert_eq!(std::fs::read_to_string(&runs_of_a).unwrap().lines().count(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_from_a_task_keeps_what_came_before_it_and_runs_it_and_what_follows_again() {
    let fx = Fixture::new();
    let log = fx.path("runs.log");
    let note = |what: &str| format!("echo {what} >> {}", log.display());
    let mut a = sh("a", &format!(r#"{}; printf '{{"n": 7}}' > "$ORRERY_OUTPUTS""#, note("a")), "start");
    a["outputs"] = json!([{"name": "n"}]);
    let mut b = sh("b", &note("b $ORRERY_INPUT_N"), "a");
    b["inputs"] = json!([{"name": "n"}]);
    let side = sh("side", &note("side"), "start");
    let c = json!({"id": "c", "type": "shell.run", "params": [{"name": "command", "value": note("c")}],
        "depends_on": [{"id": "b"}, {"id": "side"}]});
    let file = fx.blueprint("chain", vec![a, b, side, c]);
    let first = fx.ok("start_session", json!({"file": file})).await["session_id"].as_str().unwrap().to_string();
    assert_eq!(
        fx.ok("wait_session", json!({"session_id": first, "timeout_s": 30})).await["session"]["state"],
        "completed"
    );
    let before = std::fs::read_to_string(&log).unwrap();

    let from = fx.ok("restart_session", json!({"session_id": first, "from": "b"})).await;
    let second = from["session_id"].as_str().unwrap().to_string();
    assert_eq!(
        fx.ok("wait_session", json!({"session_id": second, "timeout_s": 30})).await["session"]["state"],
        "completed"
    );
    let view = fx.ok("get_session", json!({"session_id": second})).await;
    assert_eq!(view["session"]["restarted_from"], first.as_str());
    let ran: Vec<&str> = view["attempts"].as_array().unwrap().iter().map(|t| t["task"].as_str().unwrap()).collect();
    assert_eq!(ran, ["b", "c", "end"], "start, a and side are kept: {view}");
    let after = std::fs::read_to_string(&log).unwrap();
    assert_eq!(&after[before.len()..], "b 7\nc\n", "b ran again on a's kept output, then c; nothing before b did");
    let lineage = fx.ok("get_lineage", json!({"session_id": second})).await;
    let n = lineage["inputs"].as_array().unwrap().iter().find(|l| l["node"] == "chain.b" && l["input"] == "n");
    let n = n.unwrap_or_else(|| panic!("no lineage for b's n: {lineage}"));
    assert_eq!(n["source"]["node"], "chain.a", "{n}");
    let old = fx.ok("get_session", json!({"session_id": first})).await;
    let a_ran = old["attempts"].as_array().unwrap().iter().find(|t| t["task"] == "a").unwrap();
    assert_eq!(n["source"]["run_id"], a_ran["run_id"], "the value comes from the first session's attempt: {n}");

    // A node key names the task too; a task the blueprint lacks starts nothing.
    let by_key = fx.ok("restart_session", json!({"session_id": first, "from": "chain.c"})).await;
    let third = by_key["session_id"].as_str().unwrap().to_string();
    fx.ok("wait_session", json!({"session_id": third, "timeout_s": 30})).await;
    let view = fx.ok("get_session", json!({"session_id": third})).await;
    let ran: Vec<&str> = view["attempts"].as_array().unwrap().iter().map(|t| t["task"].as_str().unwrap()).collect();
    assert_eq!(ran, ["c", "end"], "{view}");
    let sessions = fx.ok("list_sessions", json!({})).await;
    let unknown = fx.call("restart_session", json!({"session_id": first, "from": "nope"})).await;
    assert!(!unknown.success);
    assert_eq!(unknown.metadata["error"], "not_found", "{unknown:?}");
    assert!(unknown.answer.as_str().unwrap_or_default().contains("no task 'nope'"), "{unknown:?}");
    assert_eq!(fx.ok("list_sessions", json!({})).await, sessions, "no session was started");
}

/// The state of task `task` in a `get_session` answer.
fn state_of(view: &Value, task: &str) -> Value {
    view["tasks"].as_array().unwrap().iter().find(|t| t["task"] == task).unwrap()["state"].clone()
}

/// Waits until session `id` holds exactly `held` (`(node, at)` pairs) at its breakpoints.
async fn held(fx: &Fixture, id: &str, held: &[(&str, &str)]) -> Value {
    let want: Vec<Value> = held.iter().map(|(node, at)| json!({"node": node, "at": at})).collect();
    for _ in 0..300 {
        let view = fx.ok("get_session", json!({"session_id": id})).await;
        if view["held"] == json!(want) {
            return view;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("session {id} never held {held:?}: {}", fx.ok("get_session", json!({"session_id": id})).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_breakpoint_holds_its_task_while_the_rest_goes_on_until_continue_step_or_skip() {
    let fx = Fixture::new();
    let log = fx.path("runs.log");
    let note = |what: &str| format!("echo {what} >> {}", log.display());
    let side = sh("side", &note("side"), "start");
    let c = json!({"id": "c", "type": "shell.run", "params": [{"name": "command", "value": note("c")}],
        "depends_on": [{"id": "b"}, {"id": "side"}]});
    let file = fx.blueprint("held", vec![sh("a", &note("a"), "start"), sh("b", &note("b"), "a"), side, c]);
    let lines = || std::fs::read_to_string(&log).unwrap_or_default().lines().map(str::to_string).collect::<Vec<_>>();

    // Held before b: a and side run, b and c do not.
    let started = fx.ok("start_session", json!({"file": file, "breakpoints": [{"task": "b"}]})).await;
    let id = started["session_id"].as_str().unwrap().to_string();
    let view = held(&fx, &id, &[("held.b", "before")]).await;
    assert_eq!(view["session"]["state"], "running");
    assert_eq!(state_of(&view, "b"), "PENDING");
    for _ in 0..100 {
        if state_of(&fx.ok("get_session", json!({"session_id": id})).await, "side") == "SUCCEEDED" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut ran = lines();
    ran.sort();
    assert_eq!(ran, ["a", "side"], "what does not depend on b goes on");

    // Nothing else is held; a step runs b and holds after it: c does not start.
    let refused = fx.call("continue_session", json!({"session_id": id, "task": "c"})).await;
    assert!(!refused.success, "{refused:?}");
    assert_eq!(refused.metadata["error"], "refused");
    assert!(refused.answer.as_str().unwrap().contains("not held"), "{refused:?}");
    let step = fx.ok("continue_session", json!({"session_id": id, "task": "b", "how": "step"})).await;
    assert_eq!(step["outcome"], "stepping held.b");
    let view = held(&fx, &id, &[("held.b", "after")]).await;
    assert_eq!(state_of(&view, "b"), "SUCCEEDED");
    assert_eq!(state_of(&view, "c"), "PENDING");
    assert!(!lines().contains(&"c".to_string()));
    let skip_after = fx.call("continue_session", json!({"session_id": id, "how": "skip"})).await;
    assert!(!skip_after.success && skip_after.answer.as_str().unwrap().contains("after it ended"), "{skip_after:?}");
    fx.ok("continue_session", json!({"session_id": id})).await;
    let waited = fx.ok("wait_session", json!({"session_id": id, "timeout_s": 30})).await;
    assert_eq!(waited["session"]["state"], "completed");
    assert_eq!(lines().last().map(String::as_str), Some("c"));
    let view = fx.ok("get_session", json!({"session_id": id})).await;
    assert_eq!(view["held"], json!([]));

    // Skipped where it holds: b never runs, c does.
    std::fs::remove_file(&log).unwrap();
    let started =
        fx.ok("start_session", json!({"file": file, "breakpoints": [{"task": "held.b", "at": "before"}]})).await;
    let id = started["session_id"].as_str().unwrap().to_string();
    held(&fx, &id, &[("held.b", "before")]).await;
    fx.ok("continue_session", json!({"session_id": id, "task": "b", "how": "skip"})).await;
    fx.ok("wait_session", json!({"session_id": id, "timeout_s": 30})).await;
    let view = fx.ok("get_session", json!({"session_id": id})).await;
    assert_eq!((state_of(&view, "b"), view["session"]["state"].clone()), (json!("SKIPPED"), json!("completed")));
    assert!(!lines().contains(&"b".to_string()) && lines().contains(&"c".to_string()), "{:?}", lines());

    // Held after the last task: the session does not end before it is let go.
    let started = fx.ok("start_session", json!({"file": file, "breakpoints": [{"task": "c", "at": "after"}]})).await;
    let id = started["session_id"].as_str().unwrap().to_string();
    held(&fx, &id, &[("held.c", "after")]).await;
    assert_eq!(fx.ok("get_session", json!({"session_id": id})).await["session"]["state"], "running");
    fx.ok("continue_session", json!({"session_id": id, "task": "held.c"})).await;
    assert_eq!(
        fx.ok("wait_session", json!({"session_id": id, "timeout_s": 30})).await["session"]["state"],
        "completed"
    );

    // A breakpoint at a task the blueprint lacks starts nothing.
    let sessions = fx.ok("list_sessions", json!({})).await;
    let unknown =
        fx.call("start_session", json!({"file": file, "breakpoints": [{"task": "nope", "at": "after"}]})).await;
    assert_eq!(unknown.metadata["error"], "not_found", "{unknown:?}");
    assert!(unknown.answer.as_str().unwrap().contains("no task 'nope' to hold at"), "{unknown:?}");
    assert_eq!(fx.ok("list_sessions", json!({})).await, sessions);
    let odd = fx.api.call("start_session", json!({"file": file, "breakpoints": [{"task": "b", "at": "during"}]})).await;
    let odd = odd.err().expect("an unknown place is refused").to_string();
    assert!(odd.contains("unknown variant `during`, expected `before` or `after`"), "{odd}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_that_holds_on_failure_lets_the_failed_task_run_again_be_skipped_or_fail_the_session() {
    let fx = Fixture::new();
    let flag = fx.path("fixed");
    let log = fx.path("c.log");
    let b = sh("b", &format!("test -f {} || exit 3", flag.display()), "start");
    let file = fx.blueprint("hf", vec![b, sh("c", &format!("echo c >> {}", log.display()), "b")]);
    let start = || async {
        let started = fx.ok("start_session", json!({"file": file, "hold_on_failure": true})).await;
        started["session_id"].as_str().unwrap().to_string()
    };

    // Failed, held: the session goes on running; a step runs b again, which fails again and holds.
    let id = start().await;
    let view = held(&fx, &id, &[("hf.b", "failure")]).await;
    assert_eq!((view["session"]["state"].clone(), state_of(&view, "b")), (json!("running"), json!("FAILED")));
    fx.ok("continue_session", json!({"session_id": id, "how": "step"})).await;
    for _ in 0..200 {
        let view = fx.ok("get_session", json!({"session_id": id})).await;
        if view["attempts"].as_array().unwrap().iter().filter(|a| a["task"] == "b").count() == 2
            && view["held"] != json!([])
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    held(&fx, &id, &[("hf.b", "failure")]).await;
    // Fixed outside, stepped: b succeeds and holds after it; continue lets c run.
    std::fs::write(&flag, "").unwrap();
    fx.ok("continue_session", json!({"session_id": id, "task": "b", "how": "step"})).await;
    held(&fx, &id, &[("hf.b", "after")]).await;
    fx.ok("continue_session", json!({"session_id": id})).await;
    assert_eq!(
        fx.ok("wait_session", json!({"session_id": id, "timeout_s": 30})).await["session"]["state"],
        "completed"
    );
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "c\n");

    // Let it fail: the session fails with b's error, c never runs.
    std::fs::remove_file(&flag).unwrap();
    let id = start().await;
    held(&fx, &id, &[("hf.b", "failure")]).await;
    fx.ok("continue_session", json!({"session_id": id})).await;
    let ended = fx.ok("wait_session", json!({"session_id": id, "timeout_s": 30})).await;
    assert_eq!(ended["session"]["state"], "failed");
    let error = &ended["session"]["last_error"];
    assert_eq!(
        (&error["code"], &error["details"]["exit_code"]),
        (&json!("TOOL_FAILURE"), &json!(3)),
        "b's own: {ended}"
    );
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "c\n");

    // Skipped: what follows runs.
    let id = start().await;
    held(&fx, &id, &[("hf.b", "failure")]).await;
    fx.ok("continue_session", json!({"session_id": id, "how": "skip"})).await;
    assert_eq!(
        fx.ok("wait_session", json!({"session_id": id, "timeout_s": 30})).await["session"]["state"],
        "completed"
    );
    let view = fx.ok("get_session", json!({"session_id": id})).await;
    assert_eq!(state_of(&view, "b"), "SKIPPED");
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "c\nc\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_held_before_it_starts_shows_the_inputs_it_is_about_to_read() {
    let fx = Fixture::new();
    let mut a = sh("a", r#"printf '{"n": 7, "other": "x"}' > "$ORRERY_OUTPUTS""#, "start");
    a["outputs"] = json!([{"name": "n"}, {"name": "other"}]);
    let got = fx.path("got.txt");
    let mut b = sh("b", &format!("echo $ORRERY_INPUT_M > {}", got.display()), "a");
    b["inputs"] = json!([{"name": "m", "get_from": "n"}, {"name": "k", "value": 3}, {"name": "none"}]);
    let file = fx.blueprint("tin", vec![a, b]);
    let started = fx.ok("start_session", json!({"file": file, "breakpoints": [{"task": "b"}]})).await;
    let id = started["session_id"].as_str().unwrap().to_string();
    held(&fx, &id, &[("tin.b", "before")]).await;

    let reads = fx.ok("task_inputs", json!({"session_id": id, "task": "b"})).await;
    assert_eq!((&reads["node"], &reads["instance"]), (&json!("tin.b"), &json!("tin")), "{reads}");
    assert_eq!(reads["inputs"], json!({"m": 7, "k": 3, "none": null}), "{reads}");
    assert_eq!(reads["problem"], Value::Null);
    assert_eq!((&reads["data"]["n"], &reads["data"]["other"]), (&json!(7), &json!("x")), "{reads}");
    let unknown = fx.call("task_inputs", json!({"session_id": id, "task": "nope"})).await;
    assert_eq!(unknown.metadata["error"], "not_found", "{unknown:?}");

    // Changed while held: b runs with the new value, and lineage names the edit, not a.
    let set = fx.ok("set_session_data", json!({"session_id": id, "key": "n", "value": 8})).await;
    assert_eq!(set["outcome"], "set tin.n");
    let elsewhere =
        fx.call("set_session_data", json!({"session_id": id, "instance": "nope", "key": "n", "value": 1})).await;
    assert!(elsewhere.answer.as_str().unwrap().contains("no blueprint instance nope"), "{elsewhere:?}");
    assert_eq!(fx.ok("task_inputs", json!({"session_id": id, "task": "b"})).await["inputs"]["m"], 8);
    fx.ok("continue_session", json!({"session_id": id})).await;
    assert_eq!(
        fx.ok("wait_session", json!({"session_id": id, "timeout_s": 30})).await["session"]["state"],
        "completed"
    );
    assert_eq!(std::fs::read_to_string(&got).unwrap(), "8\n");
    let lineage = fx.ok("get_lineage", json!({"session_id": id})).await;
    let m = lineage["inputs"].as_array().unwrap().iter().find(|l| l["node"] == "tin.b" && l["input"] == "m").unwrap();
    assert_eq!((&m["source"], &m["edit"]["by"]), (&Value::Null, &json!("user")), "{m}");
    let events = fx.ok("read_events", json!({"after": 0})).await;
    let edited: Vec<&Value> =
        events["events"].as_array().unwrap().iter().filter(|e| e["kind"] == "data_edited").collect();
    assert_eq!(edited.len(), 1, "{events}");
    let edit = &edited[0]["payload"]["value"];
    assert_eq!(
        (&edit["old"], &edit["new"], &edit["key"], &edit["by"]),
        (&json!(7), &json!(8), &json!("n"), &json!("user"))
    );
    assert_eq!(edit["id"], m["edit"]["id"]);
    // An ended session holds nothing: its data is not set.
    let ended = fx.call("set_session_data", json!({"session_id": id, "key": "n", "value": 9})).await;
    assert!(!ended.success, "{ended:?}");
    assert_eq!(fx.ok("read_session_data", json!({"session_id": id})).await["tin"]["n"], 8);

    // A running session that holds nothing: refused too.
    let slow = fx.blueprint("slow", vec![sh("wait", "sleep 30", "start")]);
    let id = fx.ok("start_session", json!({"file": slow})).await["session_id"].as_str().unwrap().to_string();
    for _ in 0..200 {
        if !fx.ok("get_session", json!({"session_id": id})).await["attempts"].as_array().unwrap().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let refused = fx.call("set_session_data", json!({"session_id": id, "key": "n", "value": 1})).await;
    assert_eq!(refused.metadata["error"], "refused", "{refused:?}");
    assert!(refused.answer.as_str().unwrap().contains("only while a task is held"), "{refused:?}");
    fx.ok("stop_session", json!({"session_id": id})).await;
    fx.ok("wait_session", json!({"session_id": id, "timeout_s": 30})).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_with_a_file_that_cannot_run_or_without_one_is_refused_with_the_reason() {
    let fx = Fixture::new();
    let file = fx.blueprint("once", vec![sh("a", "true", "start")]);
    let first = fx.ok("start_session", json!({"file": file})).await["session_id"].as_str().unwrap().to_string();
    fx.ok("wait_session", json!({"session_id": first, "timeout_s": 30})).await;
    let refused = |envelope: Envelope| {
        (envelope.metadata["error"].as_str().unwrap_or("").to_string(), envelope.answer.to_string())
    };

    let (code, says) =
        refused(fx.call("restart_session", json!({"session_id": first, "saved": true, "file": file})).await);
    assert_eq!(code, "invalid_argument", "{says}");
    let missing = fx.path("gone.json");
    let (code, says) = refused(fx.call("restart_session", json!({"session_id": first, "file": missing})).await);
    assert_eq!(code, "not_found", "{says}");
    assert!(says.contains("gone.json"), "{says}");
    std::fs::write(
        &file,
        r#"{"id": "once", "name": "once", "version": "1.0", "tasks": [{"id": "a", "type": "shell.run"}]}"#,
    )
    .unwrap();
    let (code, says) = refused(fx.call("restart_session", json!({"session_id": first, "saved": true})).await);
    assert_eq!(code, "invalid_blueprint", "{says}");
    let changes = fx.ok("blueprint_changes", json!({"session_id": first})).await;
    assert!(changes["problem"].as_str().is_some_and(|p| !p.is_empty()), "the file's first error: {changes}");
    assert!(changes["summary"].as_str().unwrap().contains("removed start"), "{changes}");

    // A session stored without its file (an older store, a blueprint given as text).
    let mut store = orrery_store::Store::open(&fx.path("orrery.db")).unwrap();
    let hash = store.session(&first).unwrap().blueprint_hash;
    let new = orrery_store::NewSession {
        blueprint_hash: hash,
        name: "no file".into(),
        params: json!({}),
        restarted_from: None,
        started_by: None,
        file: None,
        simulation: None,
    };
    let bare = store.create_session(&new, None).unwrap();
    for (job, arguments) in [
        ("restart_session", json!({"session_id": bare.id, "saved": true})),
        ("blueprint_changes", json!({"session_id": bare.id})),
    ] {
        let (code, says) = refused(fx.call(job, arguments).await);
        assert_eq!(code, "invalid_argument", "{job}: {says}");
        assert!(says.contains("keeps no blueprint file"), "{job}: {says}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_left_running_by_a_crash_is_listed_as_interrupted() {
    let fx = Fixture::new();
    let text = std::fs::read_to_string(fx.blueprint("left", vec![sh("a", "true", "start")])).unwrap();
    // What a runner killed mid-run leaves: a running session, no live runner holding it.
    let mut store = orrery_store::Store::open(&fx.path("orrery.db")).unwrap();
    let hash = store.put_blueprint_version("left", &text).unwrap();
    let new = orrery_store::NewSession {
        blueprint_hash: hash,
        name: "left".into(),
        params: json!({}),
        restarted_from: None,
        started_by: None,
        file: None,
        simulation: None,
    };
    let session = store.create_session(&new, None).unwrap();
    store.set_session_state(&session.id, orrery_blueprint::SessionState::Running, None, None).unwrap();
    let listed = fx.ok("list_sessions", json!({})).await;
    assert_eq!((listed[0]["id"].as_str(), listed[0]["interrupted"].as_bool()), (Some(session.id.as_str()), Some(true)));
    assert_eq!(listed[0]["waiting"], json!([]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_attempts_details_carry_its_checklist_live_and_when_done() {
    let fx = Fixture::new();
    let command = r#"echo '{"step": "fetch", "state": "in_progress", "percentage": 40}' >> "$ORRERY_PROGRESS"
        sleep 1; echo '{"step": "build", "state": "in_progress", "percentage": 10}' >> "$ORRERY_PROGRESS"; exit 3"#;
    let file = fx.blueprint("steps", vec![sh("a", command, "start")]);
    let id = fx.ok("start_session", json!({"file": file})).await["session_id"].as_str().unwrap().to_string();
    let live = loop {
        let details = fx.ok("get_attempt", json!({"session_id": id, "task": "a"})).await;
        if !details["steps"].as_array().unwrap().is_empty() {
            break details;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(
        (live["steps"][0]["name"].as_str(), live["steps"][0]["state"].as_str()),
        (Some("fetch"), Some("in_progress"))
    );
    assert_eq!(live["steps"][0]["percentage"], 40);
    assert_eq!(live["attempt"]["state"], "running");
    fx.ok("wait_session", json!({"session_id": id, "timeout_s": 30})).await;

    let done = fx.ok("get_attempt", json!({"session_id": id, "task": "a", "attempt": 1})).await;
    let steps: Vec<(&str, &str)> = done["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["name"].as_str().unwrap(), s["state"].as_str().unwrap()))
        .collect();
    assert_eq!(
        steps,
        [("fetch", "done"), ("build", "in_progress")],
        "starting build completed fetch; it failed in build"
    );
    assert_eq!(
        (done["attempt"]["exit_code"].as_i64(), done["attempt"]["error"]["code"].as_str()),
        (Some(3), Some("TOOL_FAILURE"))
    );
    assert!(done["duration_ms"].as_i64().unwrap() >= 1000, "{done}");
    // What the process was started with: a command runs in the shell, on the facade's PATH.
    let environment = &done["attempt"]["environment"];
    assert_eq!(environment["program"], "/bin/sh", "{environment}");
    assert_eq!(environment["variables"]["PATH"].as_str(), std::env::var("PATH").ok().as_deref(), "{environment}");
    let names = environment["variables"].as_object().unwrap();
    assert!(names.keys().all(|n| !n.starts_with("ORRERY_")), "Orrery's own variables are left out: {environment}");
    // The list of every attempt leaves it out: a third of a shell task's row, shown by no list.
    let view = fx.ok("get_session", json!({"session_id": id})).await;
    let listed = view["attempts"].as_array().unwrap().iter().find(|a| a["task"] == "a").unwrap();
    assert!(listed.get("environment").is_none() && listed["exit_code"] == 3, "{listed}");
    let none = fx.call("get_attempt", json!({"session_id": id, "task": "a", "attempt": 2})).await;
    assert_eq!(none.metadata["error"], "not_found");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_job_that_changes_something_takes_a_request_id_and_answers_a_retry_without_doing_it_again() {
    let fx = Fixture::new();
    let writes: Vec<&str> = fx.api.jobs().into_iter().filter(|j| j.writes).map(|j| j.name).collect();
    for expected in [
        "start_session",
        "resume_session",
        "restart_session",
        "stop_session",
        "pause_session",
        "cancel_task",
        "skip_task",
        "reset_task",
        "answer_prompt",
        "submit",
        "cancel",
        "delete_tasks",
        "save_blueprint",
        "write_blueprint_file",
        "save_layout",
        "publish_blueprints",
    ] {
        assert!(writes.contains(&expected), "{expected} is a write: {writes:?}");
    }
    for job in fx.api.jobs() {
        let takes = job.arguments["properties"].get("request_id").is_some();
        assert_eq!(takes, job.writes, "{}: a request id exactly where it writes", job.name);
    }

    // Written, then changed on disk by someone else: the same request again answers what it
    // answered and leaves the file alone.
    let file = fx.blueprint("drawn", vec![sh("a", "true", "start")]);
    let text = std::fs::read_to_string(&file).unwrap();
    let write = json!({"file": file, "text": text, "request_id": "w-1"});
    let first = fx.ok("write_blueprint_file", write.clone()).await;
    std::fs::write(&file, "edited since").unwrap();
    let again = fx.call("write_blueprint_file", write).await;
    assert_eq!((again.success, &again.answer), (true, &first), "{again:?}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "edited since", "not written twice");
    let other = fx.call("write_blueprint_file", json!({"file": file, "text": "{}", "request_id": "w-1"})).await;
    assert_eq!((other.success, other.metadata["error"].as_str()), (false, Some("request_id_reused")), "{other:?}");
    // A failure is not kept: the request may be sent again once what it needs is there.
    let layout = json!({"file": fx.path("missing/drawn.json"), "positions": {}, "request_id": "l-1"});
    assert!(!fx.call("save_layout", layout.clone()).await.success);
    std::fs::create_dir_all(fx.path("missing")).unwrap();
    assert!(fx.call("save_layout", layout).await.success, "after a failure the same request runs");

    // Sent twice at once, it runs once: the second waits for the first and answers its answer.
    let racing: Vec<_> = (0..4)
        .map(|_| {
            let api = fx.api.clone();
            let save = json!({"file": file, "positions": {"a": {"x": 1, "y": 2}}, "request_id": "l-2"});
            tokio::spawn(async move { api.call("save_layout", save).await.unwrap() })
        })
        .collect();
    let mut answers = Vec::new();
    for r in racing {
        let envelope = r.await.unwrap();
        assert!(envelope.success, "{envelope:?}");
        answers.push(envelope.answer);
    }
    assert!(answers.windows(2).all(|w| w[0] == w[1]), "{answers:?}");

    for (request_id, says) in [(json!(""), "1 to 64"), (json!("x".repeat(65)), "1 to 64"), (json!(7), "a string")] {
        let refused = fx.api.call("stop_session", json!({"session_id": "s", "request_id": request_id})).await;
        match refused {
            Err(CallError::InvalidArguments { message, .. }) => assert!(message.contains(says), "{message}"),
            other => panic!("{request_id} is refused before the job runs: {other:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_submit_sent_twice_at_once_with_one_request_id_starts_one_run_and_both_answer_it() {
    let fx = Fixture::new();
    for name in [json!("twice"), Value::Null] {
        let submit =
            json!({"task": "shell.run", "task_name": name, "command": "sleep 0.2", "request_id": format!("r-{name}")});
        let racing: Vec<_> = (0..3)
            .map(|_| {
                let (api, submit) = (fx.api.clone(), submit.clone());
                tokio::spawn(async move { api.call("submit", submit).await.unwrap() })
            })
            .collect();
        let mut handles = Vec::new();
        for r in racing {
            let envelope = r.await.unwrap();
            assert!(envelope.success, "{name}: {envelope:?}");
            handles.push(envelope.answer);
        }
        assert!(handles.windows(2).all(|w| w[0] == w[1]), "{name}: one handle for all: {handles:?}");
    }
    let tasks = fx.ok("list_task_ids", json!({})).await;
    assert_eq!(tasks.as_array().unwrap().len(), 2, "one task each: {tasks}");
    fx.api.wait_all().await;
    let sessions = fx.ok("list_sessions", json!({})).await;
    assert_eq!(sessions.as_array().unwrap().len(), 2, "one run each: {sessions}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_simulated_run_starts_no_process_is_marked_everywhere_and_restarts_simulated() {
    let fx = Fixture::new();
    let log = fx.path("ran.log");
    let mut a = sh("a", &format!(r#"echo a >> {}; printf '{{"n": 1}}' > "$ORRERY_OUTPUTS""#, log.display()), "start");
    a["outputs"] = json!([{"name": "n", "value": 0}]);
    let mut b = sh("b", &format!("echo b >> {}", log.display()), "a");
    b["inputs"] = json!([{"name": "n"}]);
    b["condition"] = json!("n > 5");
    let file = fx.blueprint("sim", vec![a, b]);
    let simulate = json!({"outputs": {"a": {"n": 9}}});
    let started = fx.ok("start_session", json!({"file": file, "simulate": simulate})).await;
    let id = started["session_id"].as_str().unwrap().to_string();
    let ended = fx.ok("wait_session", json!({"session_id": id, "timeout_s": 30})).await;
    assert_eq!(ended["session"]["state"], "completed");
    assert_eq!(ended["session"]["simulation"], simulate);
    let view = fx.ok("get_session", json!({"session_id": id})).await;
    assert_eq!(state_of(&view, "b"), "SUCCEEDED", "n = 9 set for a: b's condition holds");
    assert!(view["attempts"].as_array().unwrap().iter().all(|a| a["log_path"].is_null() && a["process"].is_null()));
    assert!(!log.exists(), "no process ran");
    let listed = fx.ok("list_sessions", json!({})).await;
    assert_eq!(listed[0]["simulation"], simulate);

    // Its restart is simulated too; a real run is not marked.
    let again = fx.ok("restart_session", json!({"session_id": id, "from": "b"})).await;
    let again = fx.ok("wait_session", json!({"session_id": again["session_id"], "timeout_s": 30})).await;
    assert_eq!((&again["session"]["state"], &again["session"]["simulation"]), (&json!("completed"), &simulate));
    let real = fx.ok("start_session", json!({"file": file})).await;
    let real = fx.ok("wait_session", json!({"session_id": real["session_id"], "timeout_s": 30})).await;
    assert!(real["session"].get("simulation").is_none(), "{real}");
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "a\n", "the real run skipped b (n = 1)");

    // A task or a past session it names that does not exist: not_found, and nothing starts.
    for simulate in [
        json!({"fail": [{"task": "nope"}]}),
        json!({"outputs_from": "no-such-session"}),
        json!({"outputs": {"x.y": {}}}),
    ] {
        let refused = fx.call("start_session", json!({"file": file, "simulate": simulate})).await;
        assert_eq!(refused.metadata["error"], "not_found", "{simulate}: {refused:?}");
    }
    let bad = fx.api.call("start_session", json!({"file": file, "simulate": {"fail": ["a"]}})).await.unwrap_err();
    assert!(bad.to_string().contains("SimulatedFailure"), "a failure names its task in an object: {bad}");
    let none = json!({"file": file, "simulate": {"fail": [{"task": "a", "attempts": 0}]}});
    let none = fx.api.call("start_session", none).await.unwrap_err().to_string();
    assert!(none.contains("nonzero"), "a task failing none of its attempts is no failure: {none}");
    assert_eq!(fx.ok("list_sessions", json!({})).await.as_array().unwrap().len(), 3);
}

/// Starts a session with these arguments: its id.
async fn run(fx: &Fixture, args: Value) -> String {
    fx.ok("start_session", args).await["session_id"].as_str().unwrap().to_string()
}

/// Waits for session `id` to complete.
async fn wait(fx: &Fixture, id: &str) {
    let ended = fx.ok("wait_session", json!({"session_id": id, "timeout_s": 30})).await;
    assert_eq!(ended["session"]["state"], "completed", "{ended}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_timing_sets_each_task_against_its_usual_and_finds_the_critical_path_and_the_time_left() {
    let fx = Fixture::new();
    let pace = fx.path("pace");
    std::fs::write(&pace, "0.3").unwrap();
    // a then b (as slow as `pace` says) on one branch; c, short, on the other.
    let a = sh("a", "sleep 0.2", "start");
    let b = sh("b", &format!("sleep $(cat {})", pace.display()), "a");
    let c = sh("c", "sleep 0.05", "start");
    let end = json!({"id": "end", "type": "system.end", "depends_on": [{"id": "b"}, {"id": "c"}]});
    let file = fx.path("timed.json");
    let text = json!({"id": "timed", "name": "timed", "version": "1.0",
        "tasks": [{"id": "start", "type": "system.start"}, a, b, c, end]});
    std::fs::write(&file, text.to_string()).unwrap();
    let task = |timing: &Value, node: &str| {
        timing["tasks"].as_array().unwrap().iter().find(|t| t["node"] == node).unwrap().clone()
    };

    let first = run(&fx, json!({"file": file})).await;
    wait(&fx, &first).await;
    let timing = fx.ok("session_timing", json!({"session_id": first})).await;
    assert_eq!((&timing["past_runs"], timing.get("remaining_ms")), (&json!(0), None), "{timing}");
    assert_eq!(timing["critical_path"], json!(["timed.start", "timed.a", "timed.b", "timed.end"]));
    assert!(task(&timing, "timed.b")["took_ms"].as_i64().unwrap() >= 300);
    assert!(task(&timing, "timed.b").get("usual_ms").is_none());

    for _ in 0..2 {
        let id = run(&fx, json!({"file": file})).await;
        wait(&fx, &id).await;
    }
    // A simulation is no past of a real run.
    let simulated = run(&fx, json!({"file": file, "simulate": {}})).await;
    wait(&fx, &simulated).await;

    // Held before b: the time left is at least b's usual, and b's 0.3 s are on the critical path.
    let held_run = run(&fx, json!({"file": file, "breakpoints": [{"task": "b"}]})).await;
    held(&fx, &held_run, &[("timed.b", "before")]).await;
    let timing = fx.ok("session_timing", json!({"session_id": held_run})).await;
    assert_eq!((&timing["past_runs"], &timing["unknown"]), (&json!(3), &json!(0)), "{timing}");
    let usual_b = task(&timing, "timed.b")["usual_ms"].as_i64().unwrap();
    assert!(usual_b >= 300, "{timing}");
    assert_eq!(task(&timing, "timed.b")["runs"], 3);
    assert!(timing["remaining_ms"].as_i64().unwrap() >= usual_b, "{timing}");
    assert_eq!(timing["critical_path"].as_array().unwrap().last(), Some(&json!("timed.end")));
    assert!(timing["critical_path"].as_array().unwrap().contains(&json!("timed.b")));
    assert_eq!(timing["overdue"], json!([]));

    // Let go, b runs far slower than usual: past its usual it is overdue, then marked slow.
    std::fs::write(&pace, "1.5").unwrap();
    fx.ok("continue_session", json!({"session_id": held_run})).await;
    let mut overdue = json!(null);
    for _ in 0..100 {
        overdue = fx.ok("session_timing", json!({"session_id": held_run})).await["overdue"].clone();
        if overdue != json!([]) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(overdue, json!(["timed.b"]));
    wait(&fx, &held_run).await;
    let timing = fx.ok("session_timing", json!({"session_id": held_run})).await;
    assert!(timing.get("remaining_ms").is_none(), "ended: {timing}");
    assert_eq!(task(&timing, "timed.b")["slow"], true, "{timing}");
    assert_eq!(task(&timing, "timed.a")["slow"], false);
    assert_eq!(task(&timing, "timed.b")["usual_ms"].as_i64().unwrap(), usual_b);

    let missing = fx.call("session_timing", json!({"session_id": "no-such-session"})).await;
    assert_eq!(missing.metadata["error"], "not_found", "{missing:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_history_has_every_state_each_task_and_the_session_went_through_and_every_value_written() {
    let fx = Fixture::new();
    let mut a = sh("a", r#"printf '{"n": 7}' > "$ORRERY_OUTPUTS""#, "start");
    a["outputs"] = json!([{"name": "n"}]);
    let mut b = sh("b", r#"printf '{"n": 8}' > "$ORRERY_OUTPUTS""#, "a");
    b["outputs"] = json!([{"name": "n"}]);
    let end = json!({"id": "end", "type": "system.end", "depends_on": [{"id": "b"}]});
    let file = fx.path("hist.json");
    let text = json!({"id": "hist", "name": "hist", "version": "1.0",
        "tasks": [{"id": "start", "type": "system.start"}, a, b, end]});
    std::fs::write(&file, text.to_string()).unwrap();
    let id = run(&fx, json!({"file": file})).await;
    wait(&fx, &id).await;

    let history = fx.ok("session_history", json!({"session_id": id})).await;
    let view = fx.ok("get_session", json!({"session_id": id})).await;
    let nodes: Vec<&str> = history["nodes"].as_array().unwrap().iter().map(|n| n.as_str().unwrap()).collect();
    let states_of = |node: &str| -> Vec<String> {
        let at = nodes.iter().position(|n| *n == node).unwrap();
        let changes = history["changes"].as_array().unwrap();
        changes.iter().filter(|c| c["node"] == at).map(|c| c["state"].as_str().unwrap().to_string()).collect()
    };
    for node in ["hist.a", "hist.b"] {
        let states = states_of(node);
        assert_eq!(states.first().map(String::as_str), Some("PENDING"), "{node}: {states:?}");
        assert!(states.iter().any(|s| s == "RUNNING"), "{node}: {states:?}");
        assert_eq!(states.last().map(String::as_str), Some("SUCCEEDED"), "{node}: {states:?}");
    }
    let session: Vec<&str> =
        history["session"].as_array().unwrap().iter().map(|c| c["state"].as_str().unwrap()).collect();
    assert_eq!(session.last(), Some(&"completed"), "{session:?}");
    // n as a wrote it, then as b did, each naming its attempt, at its attempt's end.
    let run_of = |node: &str| view["attempts"].as_array().unwrap().iter().find(|a| a["node"] == node).unwrap().clone();
    let writes: Vec<&Value> = history["data"].as_array().unwrap().iter().filter(|w| w["key"] == "n").collect();
    assert_eq!(writes.iter().map(|w| &w["value"]).collect::<Vec<_>>(), [&json!(7), &json!(8)], "{history}");
    for (write, node) in writes.iter().zip(["hist.a", "hist.b"]) {
        let attempt = run_of(node);
        assert_eq!(write["run_id"], attempt["run_id"]);
        assert!(write["at"].as_i64().unwrap() >= attempt["started_ms"].as_i64().unwrap());
    }

    let missing = fx.call("session_history", json!({"session_id": "no-such-session"})).await;
    assert_eq!(missing.metadata["error"], "not_found", "{missing:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_attempts_log_is_read_as_it_was_at_a_moment() {
    let fx = Fixture::new();
    let talk = sh("talk", "echo one; sleep 0.8; echo two", "start");
    let end = json!({"id": "end", "type": "system.end", "depends_on": [{"id": "talk"}]});
    let file = fx.path("talk.json");
    let text = json!({"id": "talk", "name": "talk", "version": "1.0", "tasks": [{"id": "start", "type": "system.start"}, talk, end]});
    std::fs::write(&file, text.to_string()).unwrap();
    let id = run(&fx, json!({"file": file})).await;
    wait(&fx, &id).await;
    let view = fx.ok("get_session", json!({"session_id": id})).await;
    let attempt = view["attempts"].as_array().unwrap().iter().find(|a| a["node"] == "talk.talk").unwrap().clone();
    let (started, finished) = (attempt["started_ms"].as_i64().unwrap(), attempt["finished_ms"].as_i64().unwrap());
    let at = |until: i64| {
        let fx = &fx;
        let id = id.clone();
        async move { fx.ok("read_attempt_log", json!({"session_id": id, "task": "talk", "until_ms": until})).await }
    };
    let middle = at(started + 400).await;
    assert_eq!(middle["window"]["content"], "one\n", "{middle}");
    assert_eq!(middle["until_size"], 4);
    let before = at(started - 1).await;
    assert_eq!((&before["window"]["content"], &before["until_size"]), (&json!(""), &json!(0)));
    let ended = at(finished).await;
    assert_eq!(ended["window"]["content"], "one\ntwo\n");
    assert!(ended.get("until_size").is_none(), "{ended}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_runs_alone_with_its_inputs_from_a_past_run_or_typed_in_and_nothing_else_runs() {
    let fx = Fixture::new();
    let log = fx.path("ran.log");
    let note = |what: &str| format!("echo {what} >> '{}'", log.display());
    let mut a = sh("a", &format!(r#"{}; printf '{{"n": 7}}' > "$ORRERY_OUTPUTS""#, note("a")), "start");
    a["outputs"] = json!([{"name": "n"}]);
    let mut b = sh("b", &note("b $ORRERY_INPUT_N"), "a");
    b["inputs"] = json!([{"name": "n"}]);
    let (c, side) = (sh("c", &note("c"), "b"), sh("side", &note("side"), "start"));
    let end = json!({"id": "end", "type": "system.end", "depends_on": [{"id": "c"}, {"id": "side"}]});
    let file = fx.path("alone.json");
    let text = json!({"id": "alone", "name": "alone", "version": "1.0",
        "tasks": [{"id": "start", "type": "system.start"}, a, b, c, side, end]});
    std::fs::write(&file, text.to_string()).unwrap();
    let first = run(&fx, json!({"file": file})).await;
    wait(&fx, &first).await;
    std::fs::write(&log, "").unwrap();

    // b alone, its n as the first run's a wrote it: only b runs; what it waits for is done,
    // the rest skipped.
    let started = fx.ok("run_task_alone", json!({"file": file, "task": "b", "inputs_from": first})).await;
    let alone = started["session_id"].as_str().unwrap().to_string();
    wait(&fx, &alone).await;
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "b 7\n");
    let view = fx.ok("get_session", json!({"session_id": alone})).await;
    assert_eq!(view["session"]["name"], "alone · b alone");
    let ran: Vec<&str> = view["attempts"].as_array().unwrap().iter().map(|t| t["task"].as_str().unwrap()).collect();
    assert_eq!(ran, ["b"], "{view}");
    let state =
        |task: &str| view["tasks"].as_array().unwrap().iter().find(|t| t["task"] == task).unwrap()["state"].clone();
    let states: Vec<Value> = ["start", "a", "b", "c", "side", "end"].iter().map(|t| state(t)).collect();
    let want = ["SUCCEEDED", "SUCCEEDED", "SUCCEEDED", "SKIPPED", "SKIPPED", "SKIPPED"];
    assert_eq!(states, want.map(|s| json!(s)));
    let lineage = fx.ok("get_lineage", json!({"session_id": alone})).await;
    let n = lineage["inputs"].as_array().unwrap().iter().find(|l| l["input"] == "n").unwrap().clone();
    let old = fx.ok("get_session", json!({"session_id": first})).await;
    let a_ran = old["attempts"].as_array().unwrap().iter().find(|t| t["task"] == "a").unwrap();
    assert_eq!(n["source"]["run_id"], a_ran["run_id"], "from the first run's attempt: {n}");

    // Typed in: the user's edit, which lineage names.
    let typed = fx.ok("run_task_alone", json!({"file": file, "task": "alone.b", "inputs": {"n": 9}})).await;
    let typed = typed["session_id"].as_str().unwrap().to_string();
    wait(&fx, &typed).await;
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "b 7\nb 9\n");
    let lineage = fx.ok("get_lineage", json!({"session_id": typed})).await;
    let n = lineage["inputs"].as_array().unwrap().iter().find(|l| l["input"] == "n").unwrap().clone();
    assert_eq!((&n["source"], &n["edit"]["by"]), (&Value::Null, &json!("user")), "{n}");

    // Refused, naming what is wrong, and nothing starts.
    let simulated = run(&fx, json!({"file": file, "simulate": {}})).await;
    wait(&fx, &simulated).await;
    for (args, error, says) in [
        (json!({"task": "nope"}), "not_found", "no task 'nope' to run alone"),
        (json!({"task": "b", "inputs": {"zz": 1}}), "not_found", "task alone.b has no input 'zz'"),
        (json!({"task": "b", "inputs_from": simulated}), "refused", "is a simulation"),
        (json!({"task": "b", "inputs_from": "no-such-session"}), "not_found", "no-such-session"),
    ] {
        let mut args = args;
        args["file"] = json!(file);
        let refused = fx.call("run_task_alone", args.clone()).await;
        assert_eq!(refused.metadata["error"], error, "{args}: {refused:?}");
        assert!(refused.answer.as_str().unwrap().contains(says), "{args}: {refused:?}");
    }
    let listed = fx.ok("list_sessions", json!({})).await;
    assert_eq!(listed.as_array().unwrap().len(), 4, "only the four runs above: {listed}");
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "b 7\nb 9\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_breakpoint_is_set_and_cleared_while_the_session_runs() {
    let fx = Fixture::new();
    let log = fx.path("runs.log");
    let note = |what: &str| format!("echo {what} >> '{}'", log.display());
    let file =
        fx.blueprint("live", vec![sh("a", &note("a"), "start"), sh("b", &note("b"), "a"), sh("c", &note("c"), "b")]);
    let started = fx.ok("start_session", json!({"file": file, "breakpoints": [{"task": "a"}]})).await;
    let id = started["session_id"].as_str().unwrap().to_string();
    let view = held(&fx, &id, &[("live.a", "before")]).await;
    assert_eq!(view["breakpoints"], json!([{"node": "live.a", "at": "before"}]), "the run's breakpoints: {view}");

    // Set after b and before c while it runs; a's cleared: the run holds after b only.
    let set = fx.ok("set_breakpoint", json!({"session_id": id, "task": "b", "at": "after"})).await;
    assert_eq!(set["outcome"], "b holds after it ends");
    fx.ok("set_breakpoint", json!({"session_id": id, "task": "live.c", "at": "before"})).await;
    let cleared = fx.ok("set_breakpoint", json!({"session_id": id, "task": "c"})).await;
    assert_eq!(cleared["outcome"], "the breakpoint of c is cleared");
    let cleared = fx.ok("set_breakpoint", json!({"session_id": id, "task": "a"})).await;
    assert_eq!(cleared["outcome"], "the breakpoint of a is cleared");
    let view = fx.ok("get_session", json!({"session_id": id})).await;
    assert_eq!(view["breakpoints"], json!([{"node": "live.b", "at": "after"}]), "{view}");
    assert_eq!(view["held"], json!([{"node": "live.a", "at": "before"}]), "a held now stays held: {view}");
    fx.ok("continue_session", json!({"session_id": id})).await;
    held(&fx, &id, &[("live.b", "after")]).await;
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "a\nb\n");

    let unknown = fx.call("set_breakpoint", json!({"session_id": id, "task": "nope", "at": "before"})).await;
    assert_eq!(unknown.metadata["error"], "refused", "{unknown:?}");
    assert!(unknown.answer.as_str().unwrap().contains("no task nope"), "{unknown:?}");
    let bad =
        fx.api.call("set_breakpoint", json!({"session_id": id, "task": "c", "at": "sometime"})).await.unwrap_err();
    assert!(bad.to_string().contains("unknown variant `sometime`, expected `before` or `after`"), "{bad}");
    fx.ok("continue_session", json!({"session_id": id})).await;
    wait(&fx, &id).await;
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "a\nb\nc\n");
}
