//! Agents over MQTT (issue 7), against the real thing: Mosquitto, the reference's own agents
//! (`antikythera-agents run`) and its orchestrator server, stood up on loopback by
//! server/serve_reference.py.
//!
//! - Orrery's engine is the orchestrator and the reference's agents execute `reference.*`,
//!   `system.sleep` and `user_interaction.notify` tasks; two sessions of one blueprint run at
//!   once without cross-talk; a COMPETITIVE task is allocated to both launchers and settles once.
//! - A task no agent claims is published again 5 times, then fails with `NO_AGENT_CLAIMED`.
//! - `orrery agent` is killed mid-task: the silence limit acts (the task goes to another agent,
//!   or fails with `AGENT_TIMEOUT` when no retry is left).
//! - The reference server runs a blueprint whose `shell.run` tasks `orrery agent` executes.

mod common;

use common::*;
use orrery_store::Store;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn write_blueprint(dir: &Path, blueprint: &Value) -> PathBuf {
    let file = dir.join(format!("{}.json", blueprint["id"].as_str().unwrap()));
    std::fs::write(&file, serde_json::to_string_pretty(blueprint).unwrap()).unwrap();
    file
}

/// The broker steps recorded for a session (`broker_dispatch` events' payloads), in order.
fn dispatch_steps(db: &Path, session: &str) -> Vec<Value> {
    let store = Store::open(db).unwrap();
    store
        .events_after(session, 0, 200)
        .unwrap()
        .into_iter()
        .filter(|e| e.kind() == "broker_dispatch")
        .map(|e| match e.data() {
            Some(orrery_store::EventData::BrokerDispatch(step)) => serde_json::to_value(step).unwrap(),
            _ => panic!("a cut or unreadable dispatch payload: {:?}", e.payload),
        })
        .collect()
}

/// The session `orrery run --format json` ran (from its `session_created` line).
fn session_of(stdout: &[u8]) -> String {
    String::from_utf8_lossy(stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find_map(|e| e["session_id"].as_str().map(str::to_string))
        .expect("orrery run printed its events")
}

fn run_args<'a>(broker: &'a str, extra: &[&'a str], file: &'a Path) -> Vec<&'a str> {
    let mut args = vec!["run", "--format", "json", "--broker", broker];
    args.extend_from_slice(extra);
    args.push(file.to_str().unwrap());
    args
}

/// `orrery agent`, killed when dropped.
struct Agent(Child);

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_agent(broker: &str, id: &str, work_dir: &Path) -> Agent {
    let child = Command::new(orrery_binary())
        .args(["agent", "--broker", broker, "--id", id, "--type", "shell.run", "--heartbeat", "0.2", "--work-dir"])
        .arg(work_dir)
        .stderr(Stdio::null())
        .spawn()
        .expect("orrery agent starts");
    // Subscribed once it has connected; a moment is plenty on loopback.
    std::thread::sleep(Duration::from_millis(500));
    Agent(child)
}

fn wait_for(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < limit, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn orrerys_engine_runs_tasks_on_the_reference_agents_without_cross_talk() {
    let deployment = deploy_with(&["--broker-only", "--agents", "2"]);
    let scratch = scratch_dir("agents-reference");
    let db = scratch.join("orrery.db");
    let demo = corpus_dir().join("reference_agent_demo.json");
    let mixed = write_blueprint(
        &scratch,
        &json!({"id": "mixed", "name": "mixed", "version": "1.0", "tasks": [
            {"id": "start", "type": "system.start"},
            {"id": "nap", "type": "system.sleep", "params": [{"name": "duration", "value": 0.1}],
                "depends_on": [{"id": "start"}]},
            {"id": "race", "type": "reference.wait",
                "params": [{"name": "seconds", "value": 0.5}, {"name": "execution_mode", "value": "COMPETITIVE"}],
                "outputs": [{"name": "cancelled"}], "depends_on": [{"id": "nap"}]},
            {"id": "tell", "type": "user_interaction.notify",
                "inputs": [{"name": "title", "value": "done"}, {"name": "message", "value": "cancelled={cancelled}"},
                           {"name": "cancelled"}],
                "outputs": [{"name": "status"}], "depends_on": [{"id": "race"}]},
            {"id": "end", "type": "system.end", "depends_on": [{"id": "tell"}]},
        ]}),
    );
    let via = ["--via-broker", "system.sleep,user_interaction.*"];

    // Two sessions of one blueprint at once, and a third blueprint beside them.
    let spawn = |file: &Path| {
        Command::new(orrery_binary())
            .args(run_args(&deployment.broker, &via, file))
            .env("ORRERY_DB", &db)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let runs = [spawn(&demo), spawn(&demo), spawn(&mixed)];
    let outputs: Vec<_> = runs.into_iter().map(|c| c.wait_with_output().unwrap()).collect();
    for out in &outputs {
        assert!(
            out.status.success(),
            "{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let sessions: Vec<String> = outputs.iter().map(|o| session_of(&o.stdout)).collect();
    let store = Store::open(&db).unwrap();
    let mut assignments = Vec::new();
    for session in &sessions[..2] {
        let data = store.instance_data(session, "reference-agent-demo").unwrap();
        // assemble bound inputs, params and the context's default as the reference agent does.
        let message = "Antikythera — Reference Agent Demo [demo/unassigned]";
        assert_eq!(data["message"], json!(format!("{message} {message}")));
        assert_eq!(data["detail"], "Generated by the reference agent demo blueprint.");
        assert_eq!(data["cancelled"], false);
        let steps = dispatch_steps(&db, session);
        let allocated: Vec<&Value> = steps.iter().filter(|s| s["step"] == "allocated").collect();
        let nodes: Vec<&str> = allocated.iter().map(|s| s["node"].as_str().unwrap()).collect();
        assert_eq!(
            nodes,
            ["reference-agent-demo.assemble", "reference-agent-demo.wait", "reference-agent-demo.passthrough"]
        );
        assignments.extend(allocated.iter().map(|s| s["assignment"].as_str().unwrap().to_string()));
    }
    assignments.sort();
    assignments.dedup();
    assert_eq!(assignments.len(), 6, "every assignment id is its session's own: {assignments:?}");

    let mixed_session = &sessions[2];
    let data = store.instance_data(mixed_session, "mixed").unwrap();
    assert_eq!(data["status"], "displayed", "notify ran on the reference's user_interaction agent");
    let steps = dispatch_steps(&db, mixed_session);
    let race: Vec<&Value> = steps.iter().filter(|s| s["node"] == "mixed.race" && s["step"] == "allocated").collect();
    assert_eq!(race.len(), 2, "COMPETITIVE: both launchers are allocated the task: {steps:?}");
    assert_ne!(race[0]["agent"], race[1]["agent"]);
    for node in ["mixed.nap", "mixed.tell"] {
        assert!(
            steps.iter().any(|s| s["node"] == node && s["step"] == "allocated"),
            "{node} went to an agent: {steps:?}"
        );
    }
    // The attempt's details (what the app shows) name both launchers.
    let out =
        orrery(&["job", "get_attempt", &json!({"session_id": mixed_session, "task": "mixed.race"}).to_string()], &db);
    let details = json_of(&out);
    let agents: Vec<&Value> = details["answer"]["dispatch"].as_array().unwrap().iter().map(|s| &s["agent"]).collect();
    assert_eq!(agents, [&race[0]["agent"], &race[1]["agent"]], "{details}");
    let attempts = store.attempts(mixed_session).unwrap();
    assert_eq!(attempts.iter().filter(|a| a.node == "mixed.race").count(), 1, "the race settles once");

    // Nobody offers this type: published again 5 times, then NO_AGENT_CLAIMED.
    let nobody = write_blueprint(
        &scratch,
        &json!({"id": "nobody", "name": "nobody", "version": "1.0", "tasks": [
            {"id": "start", "type": "system.start"},
            {"id": "orphan", "type": "nobody.does_this", "depends_on": [{"id": "start"}]},
            {"id": "end", "type": "system.end", "depends_on": [{"id": "orphan"}]},
        ]}),
    );
    let started = Instant::now();
    let out = orrery(&run_args(&deployment.broker, &["--claim-wait", "0.05"], &nobody), &db);
    let took = started.elapsed();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let session = session_of(&out.stdout);
    let ended = store.session(&session).unwrap();
    let error = ended.last_error.expect("the session failed with an error");
    assert_eq!(error.code, "NO_AGENT_CLAIMED");
    assert!(
        error.message.contains("nobody.does_this") && error.message.contains("5 re-publications"),
        "{}",
        error.message
    );
    let republished: Vec<u64> = dispatch_steps(&db, &session).iter().map(|s| s["n"].as_u64().unwrap()).collect();
    assert_eq!(republished, [1, 2, 3, 4, 5]);
    // 0.05 s doubling: 0.05 + 0.1 + 0.2 + 0.4 + 0.8 + 1.6 = 3.15 s before it gives up.
    assert!(took >= Duration::from_millis(3150), "gave up after {took:?}");
}

#[test]
fn a_killed_agent_times_out_and_its_task_goes_to_another_or_fails() {
    let deployment = deploy_with(&["--broker-only"]);
    let scratch = scratch_dir("agents-silent");
    let db = scratch.join("orrery.db");
    let mark = scratch.join("began");
    // The first run marks that it began, then hangs; a run that finds the mark ends at once.
    let blueprint = |retries: u64| {
        json!({"id": format!("silent_{retries}"), "name": "silent", "version": "1.0", "tasks": [
            {"id": "start", "type": "system.start"},
            {"id": "work", "type": "shell.run",
                "params": [
                    {"name": "command", "value": "if [ -e \"$MARK\" ]; then echo again; else touch \"$MARK\"; sleep 8; fi"},
                    {"name": "env", "value": {"MARK": mark.to_str().unwrap()}},
                    {"name": "agent_timeout_s", "value": 1.0},
                    {"name": "agent_retries", "value": retries}],
                "depends_on": [{"id": "start"}]},
            {"id": "end", "type": "system.end", "depends_on": [{"id": "work"}]},
        ]})
    };
    for retries in [1, 0] {
        let _ = std::fs::remove_file(&mark);
        let file = write_blueprint(&scratch, &blueprint(retries));
        let first = start_agent(&deployment.broker, "first", &scratch.join("first"));
        let run = Command::new(orrery_binary())
            .args(run_args(&deployment.broker, &["--via-broker", "shell.run"], &file))
            .env("ORRERY_DB", &db)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        wait_for("the first agent runs the task", Duration::from_secs(10), || mark.exists());
        drop(first); // SIGKILL: no completion, no heartbeat, ever.
        let _second = start_agent(&deployment.broker, "second", &scratch.join("second"));
        let out = run.wait_with_output().unwrap();
        let session = session_of(&out.stdout);
        let steps = dispatch_steps(&db, &session);
        let summary: Vec<String> = steps
            .iter()
            .map(|s| format!("{} {}", s["step"].as_str().unwrap(), s.get("agent").or(s.get("agents")).unwrap()))
            .collect();
        let ended = Store::open(&db).unwrap().session(&session).unwrap();
        if retries == 1 {
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            assert_eq!(summary, ["allocated \"first\"", "silent [\"first\"]", "allocated \"second\""]);
            assert!(steps[1]["assignment"].as_str().unwrap().ends_with("#2"), "sent again under a new id: {steps:?}");
        } else {
            assert_eq!(out.status.code(), Some(1));
            assert_eq!(summary, ["allocated \"first\""]);
            let error = ended.last_error.expect("failed with an error");
            assert_eq!(error.code, "AGENT_TIMEOUT");
            assert_eq!(error.message, "the agent first claimed the task and then said nothing for 1.0 s");
        }
    }
}

#[test]
fn the_reference_server_runs_shell_tasks_on_orrery_agent() {
    let deployment = deploy_with(&["--sys-agents"]);
    let scratch = scratch_dir("agents-server");
    let db = scratch.join("orrery.db");
    let (first_file, second_file) = (scratch.join("first.txt"), scratch.join("second.txt"));
    let file = write_blueprint(
        &scratch,
        &json!({"id": "shell_on_orrery", "name": "shell on orrery", "version": "1.0", "tasks": [
            {"id": "start", "type": "system.start"},
            {"id": "write", "type": "shell.run",
                "inputs": [{"name": "word", "value": "hello"}],
                "params": [
                    {"name": "command", "value": "printf %s \"$ORRERY_INPUT_WORD\" > \"$OUT\"; printf '{\"length\": %s}' ${#ORRERY_INPUT_WORD} > \"$ORRERY_OUTPUTS\""},
                    {"name": "env", "value": {"OUT": first_file.to_str().unwrap()}}],
                "outputs": [{"name": "length"}],
                "depends_on": [{"id": "start"}]},
            {"id": "read", "type": "shell.run",
                "inputs": [{"name": "length"}],
                "params": [
                    {"name": "command", "value": "printf %s \"$ORRERY_INPUT_LENGTH\" > \"$OUT\""},
                    {"name": "env", "value": {"OUT": second_file.to_str().unwrap()}}],
                "depends_on": [{"id": "write"}]},
            {"id": "end", "type": "system.end", "depends_on": [{"id": "read"}]},
        ]}),
    );
    let _agent = start_agent(&deployment.broker, "orrery-shell", &scratch.join("agent"));
    let out = orrery(&["publish", "--server", &deployment.url, file.to_str().unwrap()], &db);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = orrery(
        &["remote", "--server", &deployment.url, "--format", "json", "run", "shell_on_orrery", "--timeout", "60"],
        &db,
    );
    let answer = json_of(&out);
    assert!(out.status.success(), "{answer}\n{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(answer["session"]["state"], "completed", "{answer}");
    // The first task's input reached the process; its output came back to the server's session
    // data and went on as the second task's input.
    assert_eq!(std::fs::read_to_string(&first_file).unwrap(), "hello");
    assert_eq!(std::fs::read_to_string(&second_file).unwrap(), "5");
}
