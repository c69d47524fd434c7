//! The `shell.run` agent with real `/bin/sh` processes in temp dirs: outputs and inputs files,
//! input variables, binding errors, failures with the tail of the log, launcher failures,
//! timeout, cancel, progress lines, and the registry of task types.
//!
//! No time is asserted; [`HANG`] only turns a hang into a failure.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use orrery_blueprint::ErrorCode;
use orrery_engine::agents::progress::{ProgressEvent, ProgressLine, StepState};
use orrery_engine::agents::shell::{self, ShellAttempt, Started, LOG_TAIL_BYTES};
use orrery_engine::agents::{self, AgentOutcome, TaskError};
use serde_json::{json, Map, Value};

const HANG: Duration = Duration::from_secs(20);

struct Fixture {
    dir: tempfile::TempDir,
}

impl Fixture {
    fn new() -> Self {
        Fixture { dir: tempfile::tempdir().expect("a temp dir") }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn attempt(&self, params: Value, inputs: Value) -> ShellAttempt {
        let mut attempt =
            ShellAttempt::new(object(params), object(inputs), self.path("attempt-1"), self.path("logs/attempt-1.log"));
        // Cancel and timeout stop `sleep` with SIGTERM; the grace only bounds a stubborn child.
        attempt.grace = Duration::from_secs(2);
        attempt
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.path("logs/attempt-1.log")).unwrap_or_default()
    }
}

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("test params and inputs are objects, got {other}"),
    }
}

/// Runs an attempt to its end, collecting its progress events.
async fn run(attempt: ShellAttempt) -> (AgentOutcome, Vec<ProgressEvent>) {
    let mut events = Vec::new();
    let outcome = tokio::time::timeout(HANG, shell::run(attempt, |_| {}, |e| events.push(e)))
        .await
        .expect("the attempt should have ended long before the hang bound");
    (outcome, events)
}

fn succeeded(outcome: AgentOutcome) -> Map<String, Value> {
    match outcome {
        AgentOutcome::Succeeded { outputs, exit_code } => {
            assert_eq!(exit_code, Some(0), "a success is an exit with code 0");
            outputs
        }
        other => panic!("the task should have succeeded, got {other:?}"),
    }
}

fn failed(outcome: AgentOutcome) -> (TaskError, Option<i32>) {
    match outcome {
        AgentOutcome::Failed { error, exit_code } => (error, exit_code),
        other => panic!("the task should have failed, got {other:?}"),
    }
}

fn assert_binding_error(error: &TaskError, param: &str, mentions: &str) {
    assert_eq!(error.code, ErrorCode::ToolBindingError, "a bad param is a binding error: {error}");
    assert_eq!(
        error.details.as_ref().and_then(|d| d.get("param")),
        Some(&json!(param)),
        "the error's details should name param {param:?}: {error:?}"
    );
    assert!(error.message.contains(mentions), "the message should mention {mentions:?}: {}", error.message);
}

#[tokio::test]
async fn a_json_object_written_to_orrery_outputs_becomes_the_outputs_beside_exit_code() {
    let fx = Fixture::new();
    let attempt =
        fx.attempt(json!({"command": r#"printf '{"answer": 42, "word": "ok"}' > "$ORRERY_OUTPUTS""#}), json!({}));
    let outputs = succeeded(run(attempt).await.0);
    assert_eq!(
        Value::Object(outputs),
        json!({"answer": 42, "word": "ok", "exit_code": 0}),
        "the outputs are the file's keys plus the exit code"
    );
}

#[tokio::test]
async fn without_an_outputs_file_the_only_output_is_exit_code() {
    let fx = Fixture::new();
    let outputs = succeeded(run(fx.attempt(json!({"command": "echo nothing to report"}), json!({}))).await.0);
    assert_eq!(Value::Object(outputs), json!({"exit_code": 0}));
    assert_eq!(fx.log(), "nothing to report\n", "stdout goes to the attempt's log");
}

#[tokio::test]
async fn argv_runs_a_program_directly_in_its_cwd_with_its_env() {
    let fx = Fixture::new();
    let work = fx.path("work");
    std::fs::create_dir(&work).unwrap();
    let script = r#"printf '{"dir": "%s", "greeting": "%s"}' "$(pwd -P)" "$GREETING" > "$ORRERY_OUTPUTS""#;
    let attempt =
        fx.attempt(json!({"argv": ["/bin/sh", "-c", script], "cwd": work, "env": {"GREETING": "hello"}}), json!({}));
    let outputs = succeeded(run(attempt).await.0);
    let work = work.canonicalize().unwrap();
    assert_eq!(outputs.get("dir"), Some(&json!(work.to_str().unwrap())), "the process runs in cwd");
    assert_eq!(outputs.get("greeting"), Some(&json!("hello")), "env reaches the process");
}

#[tokio::test]
async fn inputs_reach_the_process_as_a_json_file_and_as_variables() {
    let fx = Fixture::new();
    let seen = fx.path("seen");
    std::fs::create_dir(&seen).unwrap();
    let attempt = fx.attempt(
        json!({
            "command": r#"cat "$ORRERY_INPUTS" > "$SEEN/inputs.json"
printf '%s\n' "$ORRERY_INPUT_GREETING" "$ORRERY_INPUT_COUNT" "$ORRERY_INPUT_TAGS" "$ORRERY_INPUT_MY_FILE_NAME" "$ORRERY_INPUT_NOTHING" > "$SEEN/vars.txt""#,
            "env": {"SEEN": seen},
        }),
        json!({"greeting": "hello world", "count": 3, "tags": ["a", "b"], "my-file.name": "x", "nothing": null}),
    );
    succeeded(run(attempt).await.0);

    let file = std::fs::read_to_string(seen.join("inputs.json")).expect("the process copied its inputs file");
    assert_eq!(
        file, r#"{"greeting":"hello world","count":3,"tags":["a","b"],"my-file.name":"x","nothing":null}"#,
        "the inputs file is the object of all inputs, in order"
    );
    let vars = std::fs::read_to_string(seen.join("vars.txt")).unwrap();
    assert_eq!(
        vars.lines().collect::<Vec<_>>(),
        ["hello world", "3", r#"["a","b"]"#, "x", "null"],
        "strings arrive raw, other values as compact JSON, names upper-cased with '_' for the rest"
    );
}

#[tokio::test]
async fn two_inputs_that_map_to_one_variable_are_a_binding_error() {
    let fx = Fixture::new();
    let attempt = fx.attempt(json!({"command": "true"}), json!({"a-b": 1, "a_b": 2}));
    let (error, exit_code) = failed(run(attempt).await.0);
    assert_eq!(error.code, ErrorCode::ToolBindingError);
    assert!(error.message.contains("ORRERY_INPUT_A_B"), "the message names the variable: {}", error.message);
    assert_eq!(exit_code, None, "nothing ran");
}

#[tokio::test]
async fn a_non_zero_exit_fails_with_tool_failure_and_the_bounded_tail_of_the_log() {
    let fx = Fixture::new();
    // 40 lines of 100 two-byte characters (201 bytes each), then the last words on stderr: the
    // 4 KiB tail starts inside a character, which must not show as a replacement character.
    let line = "é".repeat(100);
    let command =
        format!("i=0; while [ $i -lt 40 ]; do echo '{line}'; i=$((i+1)); done; echo 'the very last words' >&2; exit 3");
    let (error, exit_code) = failed(run(fx.attempt(json!({"command": command}), json!({}))).await.0);
    assert_eq!(error.code, ErrorCode::ToolFailure);
    assert_eq!(exit_code, Some(3));
    assert!(error.message.contains("exited with code 3"), "the message says how it ended: {}", error.message);
    assert!(
        error.message.ends_with("the very last words"),
        "the message ends with the last line of the output: ...{:?}",
        &error.message[error.message.len().saturating_sub(80)..]
    );
    assert!(
        error.message.len() <= LOG_TAIL_BYTES + 200,
        "the message quotes only the tail of an 8 KiB log, got {} bytes",
        error.message.len()
    );
    assert!(fx.log().len() > 8000, "the whole output is still in the log");
    assert!(!error.message.contains('\u{FFFD}'), "the tail starts at a character boundary");
}

#[tokio::test]
async fn command_and_argv_together_are_a_binding_error() {
    let fx = Fixture::new();
    let attempt = fx.attempt(json!({"command": "true", "argv": ["true"]}), json!({}));
    let (error, exit_code) = failed(run(attempt).await.0);
    assert_binding_error(&error, "command", "not both");
    assert_eq!(exit_code, None);
    assert!(!fx.path("logs/attempt-1.log").exists(), "nothing was started");
}

#[tokio::test]
async fn neither_command_nor_argv_is_a_binding_error() {
    let fx = Fixture::new();
    let (error, _) = failed(run(fx.attempt(json!({"cwd": "/tmp"}), json!({}))).await.0);
    assert_binding_error(&error, "command", "'argv'");
}

#[tokio::test]
async fn an_empty_argv_is_a_binding_error() {
    let fx = Fixture::new();
    let (error, _) = failed(run(fx.attempt(json!({"argv": []}), json!({}))).await.0);
    assert_binding_error(&error, "argv", "non-empty list");
}

#[tokio::test]
async fn a_non_string_env_value_is_a_binding_error_naming_the_key() {
    let fx = Fixture::new();
    let attempt = fx.attempt(json!({"command": "true", "env": {"FINE": "yes", "RETRIES": 3}}), json!({}));
    let (error, _) = failed(run(attempt).await.0);
    assert_binding_error(&error, "env", "'RETRIES'");
    assert_eq!(error.details.as_ref().and_then(|d| d.get("key")), Some(&json!("RETRIES")));
}

#[tokio::test]
async fn env_may_not_replace_the_agent_s_own_variables() {
    let fx = Fixture::new();
    let attempt = fx.attempt(json!({"command": "true", "env": {"ORRERY_OUTPUTS": "/tmp/x"}}), json!({}));
    let (error, _) = failed(run(attempt).await.0);
    assert_binding_error(&error, "env", "ORRERY_OUTPUTS");
}

#[tokio::test]
async fn a_timeout_that_is_not_a_positive_number_is_a_binding_error() {
    let fx = Fixture::new();
    for bad in [json!(0), json!(-1), json!("10")] {
        let (error, _) = failed(run(fx.attempt(json!({"command": "true", "timeout_s": bad}), json!({}))).await.0);
        assert_binding_error(&error, "timeout_s", "positive number");
    }
}

#[tokio::test]
async fn an_outputs_file_holding_a_list_fails_the_task_naming_the_file() {
    let fx = Fixture::new();
    let attempt = fx.attempt(json!({"command": r#"echo '[1,2]' > "$ORRERY_OUTPUTS""#}), json!({}));
    let (error, exit_code) = failed(run(attempt).await.0);
    assert_eq!(error.code, ErrorCode::ToolFailure, "{error}");
    assert_eq!(exit_code, Some(0), "the process itself exited cleanly");
    let file = shell::attempt_file(&fx.path("attempt-1"), shell::OUTPUTS_FILE);
    assert!(error.message.contains(&file.display().to_string()), "the message names the file: {}", error.message);
    assert!(error.message.contains("found an array"), "the message says what was found: {}", error.message);
}

#[tokio::test]
async fn an_outputs_file_that_is_not_json_fails_with_the_line_and_column() {
    let fx = Fixture::new();
    let attempt = fx.attempt(json!({"command": r#"printf '{\n  "a": 1,\n  oops\n}' > "$ORRERY_OUTPUTS""#}), json!({}));
    let (error, _) = failed(run(attempt).await.0);
    assert_eq!(error.code, ErrorCode::ToolFailure);
    assert!(error.message.contains("line 3"), "the message points at the bad line: {}", error.message);
    let details = error.details.expect("details hold the position");
    assert_eq!(details.get("line"), Some(&json!(3)));
    assert!(details.get("column").is_some());
}

#[tokio::test]
async fn a_missing_program_is_a_launcher_failure() {
    let fx = Fixture::new();
    let (error, exit_code) = failed(run(fx.attempt(json!({"argv": ["/no/such"]}), json!({}))).await.0);
    assert_eq!(error.code, ErrorCode::LauncherFailure, "{error}");
    assert!(error.message.contains("/no/such"), "the message names the program: {}", error.message);
    assert_eq!(exit_code, None, "no process ran");
}

#[tokio::test]
async fn a_missing_cwd_is_a_launcher_failure() {
    let fx = Fixture::new();
    let attempt = fx.attempt(json!({"command": "true", "cwd": fx.path("not-there")}), json!({}));
    let (error, _) = failed(run(attempt).await.0);
    assert_eq!(error.code, ErrorCode::LauncherFailure, "{error}");
    assert!(error.message.contains("not-there"), "the message names the directory: {}", error.message);
}

#[tokio::test]
async fn a_task_over_its_timeout_is_stopped_and_reported_as_timed_out() {
    let fx = Fixture::new();
    let attempt = fx.attempt(json!({"command": "echo started; sleep 30", "timeout_s": 0.3}), json!({}));
    match run(attempt).await.0 {
        AgentOutcome::TimedOut { error, exit_code } => {
            assert_eq!(error.code, ErrorCode::ToolFailure);
            assert!(error.message.contains("timed out after 0.3 s"), "the message says when: {}", error.message);
            assert!(error.message.ends_with("started"), "and quotes the output: {}", error.message);
            assert_eq!(exit_code, 124);
        }
        other => panic!("the task should have timed out, got {other:?}"),
    }
}

#[tokio::test]
async fn a_cancelled_task_ends_cancelled_with_130() {
    let fx = Fixture::new();
    let attempt = fx.attempt(json!({"command": "echo ready; sleep 30"}), json!({}));
    let (started_tx, started_rx) = tokio::sync::oneshot::channel::<Started>();
    let task = tokio::spawn(shell::run(attempt, move |started| drop(started_tx.send(started)), |_| {}));
    let started = tokio::time::timeout(HANG, started_rx)
        .await
        .expect("the process should start")
        .expect("on_started is called when the process runs");
    assert!(started.pid > 0);
    let until = Instant::now() + HANG;
    while !fx.log().contains("ready") {
        assert!(Instant::now() < until, "the process never wrote 'ready'");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    started.canceller.cancel();
    let outcome = tokio::time::timeout(HANG, task).await.expect("the cancel should end the attempt").unwrap();
    assert_eq!(outcome, AgentOutcome::Cancelled { exit_code: 130 });
}

#[tokio::test]
async fn progress_lines_arrive_in_order_and_a_malformed_one_is_a_warning() {
    let fx = Fixture::new();
    // The "pack" line is written in two parts with a pause between (only complete lines are
    // read while the process runs) and ends without a newline (taken after the exit).
    let command = r#"p="$ORRERY_PROGRESS"
echo '{"step": "fetch", "state": "in_progress", "percentage": 10}' >> "$p"
echo '{"step": "fetch", "state": "done"}' >> "$p"
echo 'this is not json' >> "$p"
sleep 0.2
echo '{"step": "build", "state": "in_progress", "percentage": 50.5}' >> "$p"
printf '{"step": "pack",' >> "$p"
sleep 0.3
printf ' "state": "done", "percentage": 100}' >> "$p""#;
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = events.clone();
    let outcome = tokio::time::timeout(
        HANG,
        shell::run(fx.attempt(json!({"command": command}), json!({})), |_| {}, move |e| sink.lock().unwrap().push(e)),
    )
    .await
    .expect("no hang");
    succeeded(outcome);

    let events = events.lock().unwrap().clone();
    let report =
        |step: &str, state, percentage| ProgressEvent::Report(ProgressLine { step: step.into(), state, percentage });
    assert_eq!(events.len(), 5, "four reports and one warning: {events:#?}");
    assert_eq!(events[0], report("fetch", StepState::InProgress, Some(10)));
    assert_eq!(events[1], report("fetch", StepState::Done, None));
    match &events[2] {
        ProgressEvent::Warning(warning) => {
            assert_eq!(warning.line, Some(3), "the warning names the line: {warning:?}");
            assert!(warning.message.contains("not JSON"), "and says what is wrong: {warning:?}");
        }
        other => panic!("the malformed third line should be a warning, got {other:?}"),
    }
    assert_eq!(events[3], report("build", StepState::InProgress, Some(50)), "a fraction is rounded down");
    assert_eq!(events[4], report("pack", StepState::Done, Some(100)));
}

#[test]
fn the_registry_lists_shell_run_with_a_schema_that_requires_command_or_argv() {
    let names = agents::known_type_names();
    for name in ["shell.run", "system.start", "system.end", "system.sleep", "system.composite"] {
        assert!(names.contains(&name), "{name} should be a known type: {names:?}");
        assert!(agents::is_known(name));
    }
    assert!(!agents::is_known("user_interaction.nope"), "an unknown type has no agent");

    let shell = agents::known_type("shell.run").expect("shell.run is registered");
    assert!(!shell.description.is_empty());
    let schema = shell.params_schema();
    assert_eq!(
        schema["oneOf"],
        json!([{"required": ["command"]}, {"required": ["argv"]}]),
        "exactly one of command and argv: {schema}"
    );
    for param in ["command", "argv", "cwd", "env", "timeout_s"] {
        assert!(schema["properties"].get(param).is_some(), "the schema describes {param}");
    }
    let sleep = agents::known_type("system.sleep").unwrap().params_schema();
    assert_eq!(sleep["properties"]["duration"]["default"], json!(1));
}

#[test]
fn a_task_error_crosses_boundaries_as_code_message_and_details() {
    let error = TaskError::binding("argv", "param 'argv' must be a list");
    assert_eq!(
        error.to_json(),
        json!({"code": "TOOL_BINDING_ERROR", "message": "param 'argv' must be a list", "details": {"param": "argv"}})
    );
    assert_eq!(error.to_string(), "TOOL_BINDING_ERROR: param 'argv' must be a list");
}

#[tokio::test]
async fn attempts_with_no_inputs_share_one_empty_inputs_file() {
    let fx = Fixture::new();
    let command = json!({"command": r#"printf '%s %s\n' "$ORRERY_INPUTS" "$(cat "$ORRERY_INPUTS")""#});
    for n in 1..=2 {
        let mut attempt = fx.attempt(command.clone(), json!({}));
        attempt.stem = fx.path(&format!("t.attempt-{n}"));
        assert!(matches!(run(attempt).await.0, AgentOutcome::Succeeded { .. }));
    }
    let shared = fx.path(shell::NO_INPUTS_FILE);
    assert_eq!(fx.log(), format!("{0} {{}}\n{0} {{}}\n", shared.display()));
    assert!(!shell::attempt_file(&fx.path("t.attempt-1"), shell::INPUTS_FILE).exists(), "no file of its own");
}
