//! The session runner end to end: real blueprints with `shell.run` tasks (real `/bin/sh`
//! processes) on a real SQLite file in a temporary directory.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use orrery_blueprint::{Blueprint, SessionState, TaskState};
use orrery_engine::runner::{run_session, RunError, RunOptions, RunReport, SessionControl};
use orrery_store::{Event, SessionFilter, Store};
use serde_json::{json, Map, Value};
use tokio::sync::broadcast;

mod common;
use common::*;

struct Ran {
    report: RunReport,
    store: Store,
    events: Vec<Event>,
}

impl Fixture {
    async fn try_run(
        &self,
        root: &Blueprint,
        others: &[&Blueprint],
        max_parallel: usize,
    ) -> Result<(RunReport, Vec<Event>), RunError> {
        let (valid, library) = valid(root, others);
        let (sender, mut receiver) = broadcast::channel(10_000);
        let options = RunOptions {
            max_parallel,
            work_dir: self.path("work"),
            events: Some(sender),
            control: None,
            broker: None,
            retry: None,
            started_by: None,
            file: None,
            breakpoints: Vec::new(),
            hold_on_failure: false,
            simulation: None,
        };
        // A hang guard only: nothing here should take more than a few seconds.
        let report =
            tokio::time::timeout(Duration::from_secs(60), run_session(&self.db(), valid, library, Map::new(), options))
                .await
                .expect("the session ended in time")?;
        let mut events = Vec::new();
        while let Ok(e) = receiver.try_recv() {
            events.push(Event::clone(&e));
        }
        Ok((report, events))
    }

    /// Starts `root` (no library) in the background with `control`; the events come on the
    /// returned receiver as they are committed.
    fn spawn(
        &self,
        root: &Blueprint,
        control: &SessionControl,
    ) -> (tokio::task::JoinHandle<Result<RunReport, RunError>>, broadcast::Receiver<Arc<Event>>) {
        let (valid, library) = valid(root, &[]);
        let (options, receiver) = self.options(Some(control));
        let db = self.db();
        let handle = tokio::spawn(async move { run_session(&db, valid, library, Map::new(), options).await });
        (handle, receiver)
    }

    async fn run(&self, root: &Blueprint, others: &[&Blueprint], max_parallel: usize) -> Ran {
        let (report, events) = self.try_run(root, others, max_parallel).await.expect("the session runs");
        Ran { report, store: Store::open(&self.db()).expect("the store opens"), events }
    }
}

impl Ran {
    fn data(&self, instance: &str, key: &str) -> Option<Value> {
        self.store.data_value(&self.report.session_id, instance, key).expect("data reads")
    }

    fn node_state(&self, node: &str) -> TaskState {
        self.store.task_node(&self.report.session_id, node).expect("the node exists").state
    }

    fn attempt(&self, node: &str) -> orrery_store::Attempt {
        let attempts = self.store.attempts(&self.report.session_id).expect("attempts read");
        let mut of_node: Vec<_> = attempts.into_iter().filter(|a| a.node == node).collect();
        assert_eq!(of_node.len(), 1, "one attempt at {node}");
        of_node.pop().unwrap()
    }

    fn assert_completed(&self) {
        assert_eq!(self.report.state, SessionState::Completed, "the session failed: {:?}", self.report.error);
        let session = self.store.session(&self.report.session_id).expect("the session reads");
        assert_eq!(session.state, SessionState::Completed);
    }
}

fn lines(path: &Path) -> usize {
    std::fs::read_to_string(path).map(|t| t.lines().count()).unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_linear_blueprint_completes_and_outputs_flow_into_the_next_tasks_inputs() {
    let fx = Fixture::new();
    let seen = fx.path("b_inputs.json");
    let mut a = sh("a", r#"printf '{"greeting": "hello"}' > "$ORRERY_OUTPUTS""#, "start");
    a["outputs"] = json!([{"name": "greeting", "set_to": "message"}]);
    let mut b = sh("b", &format!(r#"cp "$ORRERY_INPUTS" '{}'"#, seen.display()), "a");
    b["inputs"] = json!([{"name": "text", "get_from": "message"}]);
    let root = blueprint("root", vec![start(), a, b, end("b")]);

    let ran = fx.run(&root, &[], 2).await;

    ran.assert_completed();
    let inputs: Value = serde_json::from_str(&std::fs::read_to_string(&seen).expect("b wrote its inputs")).unwrap();
    assert_eq!(inputs, json!({"text": "hello"}));
    assert_eq!(ran.data("root", "message"), Some(json!("hello")));
    for node in ["root.start", "root.a", "root.b", "root.end"] {
        assert_eq!(ran.node_state(node), TaskState::Succeeded, "{node}");
    }
    // Observers saw exactly what was committed, in order, ending with the completion.
    let seqs: Vec<u64> = ran.events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>(), "every event, gapless");
    let stored = ran.store.events_after(&ran.report.session_id, 0, 200).expect("events read");
    assert_eq!(stored, ran.events);
    let last = ran.events.last().expect("events were sent");
    assert_eq!(last.kind(), "session_state_changed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finish_to_start_successor_starts_only_after_its_predecessor_finished() {
    let fx = Fixture::new();
    let root = blueprint("root", vec![start(), sh("a", "sleep 0.3", "start"), sh("b", "true", "a"), end("b")]);

    let ran = fx.run(&root, &[], 4).await;

    ran.assert_completed();
    let (a, b) = (ran.attempt("root.a"), ran.attempt("root.b"));
    let a_finished = a.finished_ms.expect("a finished");
    assert!(b.started_ms >= a_finished, "b started at {} before a finished at {a_finished}", b.started_ms);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_start_to_start_successor_runs_while_its_predecessor_is_still_running() {
    let fx = Fixture::new();
    let marker = fx.path("marker");
    // A only ends once B has run: it would time out (and fail) if B waited for A to finish.
    let mut a = sh("a", &format!("while [ ! -f '{}' ]; do sleep 0.05; done", marker.display()), "start");
    a["params"].as_array_mut().unwrap().push(json!({"name": "timeout_s", "value": 20}));
    let b = json!({"id": "b", "type": "shell.run", "params": [{"name": "command", "value": format!("touch '{}'", marker.display())}],
        "depends_on": [{"id": "a", "type": "SS"}]});
    let root = blueprint(
        "root",
        vec![start(), a, b, json!({"id": "end", "type": "system.end", "depends_on": [{"id": "a"}, {"id": "b"}]})],
    );

    let ran = fx.run(&root, &[], 2).await;

    ran.assert_completed();
    let (a, b) = (ran.attempt("root.a"), ran.attempt("root.b"));
    assert!(b.started_ms < a.finished_ms.unwrap(), "b ran while a was running");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_false_condition_skips_its_task_which_still_writes_its_declared_default() {
    let fx = Fixture::new();
    let ran_file = fx.path("skipped_task_ran");
    let after = fx.path("after_ran");
    let mut a = sh("a", &format!("touch '{}'", ran_file.display()), "start");
    a["condition"] = json!("1 > 2");
    a["outputs"] = json!([{"name": "result", "value": "default-value"}]);
    let root = blueprint("root", vec![start(), a, sh("c", &format!("touch '{}'", after.display()), "a"), end("c")]);

    let ran = fx.run(&root, &[], 2).await;

    ran.assert_completed();
    assert!(!ran_file.exists(), "the skipped task never ran");
    assert!(after.exists(), "the task after the skipped one ran");
    assert_eq!(ran.node_state("root.a"), TaskState::Skipped);
    assert_eq!(ran.data("root", "result"), Some(json!("default-value")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_task_fails_the_session_with_tool_failure_and_later_tasks_never_run() {
    let fx = Fixture::new();
    let later = fx.path("later_ran");
    let root = blueprint(
        "root",
        vec![
            start(),
            sh("a", "echo boom; exit 3", "start"),
            sh("b", &format!("touch '{}'", later.display()), "a"),
            end("b"),
        ],
    );

    let ran = fx.run(&root, &[], 2).await;

    assert_eq!(ran.report.state, SessionState::Failed);
    let error = ran.report.error.clone().expect("the failure is reported");
    assert_eq!(error.code, "TOOL_FAILURE");
    assert!(error.message.contains("boom"), "{}", error.message);
    let session = ran.store.session(&ran.report.session_id).unwrap();
    assert_eq!(session.state, SessionState::Failed);
    assert_eq!(session.last_error.map(|e| e.code), Some(orrery_blueprint::ErrorCode::ToolFailure.into()));
    assert_eq!(ran.node_state("root.a"), TaskState::Failed);
    assert_eq!(ran.node_state("root.b"), TaskState::Pending);
    assert!(!later.exists(), "the task after the failure never ran");
    assert_eq!(ran.attempt("root.a").exit_code, Some(3));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_task_type_is_refused_before_any_session_exists() {
    let fx = Fixture::new();
    let root = blueprint(
        "root",
        vec![start(), json!({"id": "weld", "type": "robot.weld", "depends_on": [{"id": "start"}]}), end("weld")],
    );

    match fx.try_run(&root, &[], 2).await {
        Err(RunError::UnknownTaskTypes { unknown, known }) => {
            assert_eq!(unknown, ["robot.weld"]);
            assert!(known.iter().any(|k| k == "shell.run"), "{known:?}");
        }
        other => panic!("expected the unknown type to be refused, got {other:?}"),
    }
    // Nothing was written: the store was never even opened.
    assert!(
        !fx.db().exists() || Store::open(&fx.db()).unwrap().sessions(&SessionFilter::default()).unwrap().is_empty()
    );
}

/// start -> loop_start (opening a scope with `policy`) -> body (appends a line) -> loop_end -> end.
fn looping(policy: Value, file: &Path) -> Blueprint {
    let mut loop_start = sh("loop_start", "true", "start");
    loop_start["scope_start"] = policy;
    let mut loop_end = sh("loop_end", "true", "body");
    loop_end["scope_end"] = json!("loop_start");
    blueprint(
        "root",
        vec![
            start(),
            loop_start,
            sh("body", &format!("echo run >> '{}'", file.display()), "loop_start"),
            loop_end,
            end("loop_end"),
        ],
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_scope_with_two_retries_runs_its_body_three_times() {
    let fx = Fixture::new();
    let file = fx.path("runs");
    let ran = fx.run(&looping(json!({"retry_policy": {"retries": 2}}), &file), &[], 2).await;

    ran.assert_completed();
    assert_eq!(lines(&file), 3);
    let counter = ran.store.scope_iterations(&ran.report.session_id, "root", "root.loop_start").unwrap();
    assert_eq!(counter, 2, "the counter counts the extra runs");
    let body: Vec<_> =
        ran.store.attempts(&ran.report.session_id).unwrap().into_iter().filter(|a| a.node == "root.body").collect();
    assert_eq!(body.iter().map(|a| a.attempt).collect::<Vec<_>>(), [1, 2, 3]);
    for a in &body {
        let log = a.log_path.clone().expect("a shell attempt has a log");
        // Its own name each; the body writes nothing, so no file (a log is made at the first output).
        assert!(log.ends_with(format!("root.body.attempt-{}.log", a.attempt)), "{}", log.display());
        assert!(!log.exists(), "{}", log.display());
    }
}

/// Each attempt names the pass of every looping scope around its task, the outermost first, as
/// the counters stood when it began; a skip scope is no loop and is not named.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_attempt_records_the_iteration_of_every_loop_around_its_task() {
    let fx = Fixture::new();
    let mut outer = sh("outer", "true", "start");
    outer["scope_start"] = json!({"name": "Rounds", "retry_policy": {"retries": 1}});
    let mut inner = sh("inner", "true", "outer");
    inner["scope_start"] = json!({"while_policy": {"condition": "True", "max_iterations": 3}});
    let mut plain = sh("plain", "true", "inner");
    plain["scope_start"] = json!({});
    let mut plain_end = sh("plain_end", "true", "plain");
    plain_end["scope_end"] = json!("plain");
    let mut inner_end = sh("inner_end", "true", "plain_end");
    inner_end["scope_end"] = json!("inner");
    let mut outer_end = sh("outer_end", "true", "inner_end");
    outer_end["scope_end"] = json!("outer");
    let root = blueprint("root", vec![start(), outer, inner, plain, plain_end, inner_end, outer_end, end("outer_end")]);

    let ran = fx.run(&root, &[], 2).await;

    ran.assert_completed();
    let attempts = ran.store.attempts(&ran.report.session_id).unwrap();
    let passes = |node: &str| -> Vec<Vec<(String, String, u32)>> {
        attempts
            .iter()
            .filter(|a| a.node == node)
            .map(|a| a.iterations.iter().map(|i| (i.scope.clone(), i.name.clone(), i.iteration)).collect())
            .collect()
    };
    let it = |scope: &str, name: &str, n: u32| (scope.to_string(), name.to_string(), n);
    assert_eq!(passes("root.start"), [Vec::new()], "outside every loop");
    assert_eq!(passes("root.outer"), [vec![it("outer", "Rounds", 1)], vec![it("outer", "Rounds", 2)]]);
    let inner_passes: Vec<_> = (1..=2)
        .flat_map(|round| (1..=3).map(move |pass| vec![it("outer", "Rounds", round), it("inner", "inner", pass)]))
        .collect();
    assert_eq!(passes("root.plain"), inner_passes, "the skip scope adds nothing; the inner counter restarts");
    assert_eq!(passes("root.inner_end"), inner_passes);
    let a = attempts.iter().find(|a| a.node == "root.plain_end").unwrap();
    assert_eq!((a.instance.as_str(), a.task.as_str()), ("root", "plain_end"));
    assert_eq!(a.iterations[0].instance, "root");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_while_scope_with_three_max_iterations_and_a_true_condition_runs_three_times() {
    let fx = Fixture::new();
    let file = fx.path("runs");
    let ran =
        fx.run(&looping(json!({"while_policy": {"condition": "True", "max_iterations": 3}}), &file), &[], 2).await;

    ran.assert_completed();
    assert_eq!(lines(&file), 3);
    assert_eq!(ran.store.scope_iterations(&ran.report.session_id, "root", "root.loop_start").unwrap(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_while_condition_that_cannot_be_evaluated_fails_the_session() {
    let fx = Fixture::new();
    let file = fx.path("runs");
    // `count` is declared (so the blueprint validates) but comes out null: `None > 0` raises.
    let mut root = looping(json!({"while_policy": {"condition": "count > 0", "max_iterations": 3}}), &file);
    root.tasks.iter_mut().find(|t| t.id == "body").unwrap().outputs = null_outputs(&["count"]);
    let ran = fx.run(&root, &[], 2).await;

    assert_eq!(ran.report.state, SessionState::Failed);
    assert_eq!(ran.report.error.as_ref().map(|e| e.code.as_str()), Some("SCOPE_CONDITION_ERROR"));
    assert_eq!(lines(&file), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_static_composite_runs_its_inner_blueprint_and_its_output_comes_out_under_set_to() {
    let fx = Fixture::new();
    let mut double = sh("double", r#"printf '{"doubled": %s}' $((ORRERY_INPUT_N * 2)) > "$ORRERY_OUTPUTS""#, "start");
    double["inputs"] = json!([{"name": "n"}]);
    double["outputs"] = json!([{"name": "doubled"}]);
    let inner = blueprint("inner", vec![start(), double, end("double")]);
    let mut produce = sh("produce", r#"printf '{"n": 21}' > "$ORRERY_OUTPUTS""#, "start");
    produce["outputs"] = json!([{"name": "n"}]);
    let composite = json!({"id": "comp", "type": "system.composite",
        "params": [{"name": "blueprint", "value": {"static": "inner"}}],
        "inputs": [{"name": "n"}],
        "outputs": [{"name": "doubled", "set_to": "answer"}],
        "depends_on": [{"id": "produce"}]});
    let root = blueprint("root", vec![start(), produce, composite, end("comp")]);

    let ran = fx.run(&root, &[&inner], 2).await;

    ran.assert_completed();
    assert_eq!(ran.data("inner_comp", "n"), Some(json!(21)), "the composite's inputs entered the inner instance");
    assert_eq!(ran.data("inner_comp", "doubled"), Some(json!(42)));
    assert_eq!(ran.data("root", "answer"), Some(json!(42)));
    assert_eq!(ran.node_state("inner_comp.double"), TaskState::Succeeded);
    assert_eq!(ran.node_state("root.comp"), TaskState::Succeeded);
}

/// The outputs of a task declared with `names` and no values (they come out null).
fn null_outputs(names: &[&str]) -> Vec<orrery_blueprint::TaskOutput> {
    let outputs: Vec<Value> = names.iter().map(|n| json!({"name": n})).collect();
    bp(json!({"id": "x", "name": "x", "version": "1.0", "tasks": [{"id": "start", "type": "system.start", "outputs": outputs}]}))
        .tasks
        .remove(0)
        .outputs
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_condition_that_cannot_be_evaluated_fails_the_session_with_task_dispatch_failed() {
    let fx = Fixture::new();
    let ran_file = fx.path("ran");
    let mut a = sh("a", "true", "start");
    a["outputs"] = json!([{"name": "count"}]);
    let mut b = sh("b", &format!("touch '{}'", ran_file.display()), "a");
    b["condition"] = json!("count > 0");
    let mut root = blueprint("root", vec![start(), a, b, end("b")]);
    root.tasks[1].outputs = null_outputs(&["count"]);

    let ran = fx.run(&root, &[], 2).await;

    assert_eq!(ran.report.state, SessionState::Failed);
    assert_eq!(ran.report.error.as_ref().map(|e| e.code.as_str()), Some("TASK_DISPATCH_FAILED"));
    assert!(!ran_file.exists());
    // The failure is an attempt of its own, with the error, for the timeline.
    let b = ran.attempt("root.b");
    assert_eq!(b.state, orrery_store::AttemptState::Failed);
    assert_eq!(b.error.as_ref().map(|e| e.code.as_str()), Some("TASK_DISPATCH_FAILED"));
    assert!(b.error.as_ref().is_some_and(|e| e.message.contains("count > 0")), "{b:?}");
    assert_eq!(ran.node_state("root.b"), TaskState::Failed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_parallel_one_runs_independent_shell_tasks_one_at_a_time() {
    let fx = Fixture::new();
    let root = blueprint(
        "root",
        vec![
            start(),
            sh("a", "sleep 0.2", "start"),
            sh("b", "sleep 0.2", "start"),
            json!({"id": "end", "type": "system.end", "depends_on": [{"id": "a"}, {"id": "b"}]}),
        ],
    );

    let ran = fx.run(&root, &[], 1).await;

    ran.assert_completed();
    let (a, b) = (ran.attempt("root.a"), ran.attempt("root.b"));
    let (first, second) = if a.started_ms <= b.started_ms { (a, b) } else { (b, a) };
    assert!(second.started_ms >= first.finished_ms.unwrap(), "the two processes overlapped");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sleep_task_succeeds_after_its_duration() {
    let fx = Fixture::new();
    let nap = json!({"id": "nap", "type": "system.sleep", "params": [{"name": "duration", "value": 0.1}], "depends_on": [{"id": "start"}]});
    let root = blueprint("root", vec![start(), nap, end("nap")]);

    let ran = fx.run(&root, &[], 1).await;

    ran.assert_completed();
    let nap = ran.attempt("root.nap");
    assert!(nap.finished_ms.unwrap() >= nap.started_ms + 100);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failure_cancels_the_tasks_still_running_and_settles_them_as_cancelled() {
    let fx = Fixture::new();
    let root = blueprint(
        "root",
        vec![
            start(),
            sh("a", "sleep 0.2; exit 1", "start"),
            sh("slow", "sleep 30", "start"),
            json!({"id": "end", "type": "system.end", "depends_on": [{"id": "a"}, {"id": "slow"}]}),
        ],
    );

    let ran = fx.run(&root, &[], 2).await;

    assert_eq!(ran.report.state, SessionState::Failed);
    assert_eq!(ran.report.error.as_ref().map(|e| e.code.as_str()), Some("TOOL_FAILURE"));
    let slow = ran.attempt("root.slow");
    assert_eq!(slow.state, orrery_store::AttemptState::Cancelled);
    assert_eq!(ran.node_state("root.slow"), TaskState::Pending, "an interrupted task would run again");
    let pid = slow.process.expect("the process was recorded").pid;
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists()
            || std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default().contains(") Z")
    );
}

/// Stops a session once `node` runs; returns its report, the store and the stop's duration.
async fn stop_when_running(fx: &Fixture, root: &Blueprint, node: &str) -> (Ran, Duration) {
    let control = SessionControl::new();
    let (handle, mut receiver) = fx.spawn(root, &control);
    wait_for_attempt(&mut receiver, node).await;
    let asked = std::time::Instant::now();
    control.stop();
    let report = tokio::time::timeout(Duration::from_secs(30), handle)
        .await
        .expect("the session stopped in time")
        .expect("the runner did not panic")
        .expect("the session ran");
    let took = asked.elapsed();
    let mut events = Vec::new();
    while let Ok(e) = receiver.try_recv() {
        events.push(Event::clone(&e));
    }
    (Ran { report, store: Store::open(&fx.db()).expect("the store opens"), events }, took)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_cancels_the_running_process_settles_it_cancelled_and_the_session_ends_stopped() {
    let fx = Fixture::new();
    let marker = fx.path("later-ran");
    let root = blueprint(
        "root",
        vec![
            start(),
            sh("slow", "sleep 30", "start"),
            sh("later", &format!("touch '{}'", marker.display()), "slow"),
            end("later"),
        ],
    );

    let (ran, took) = stop_when_running(&fx, &root, "root.slow").await;

    assert_eq!(ran.report.state, SessionState::Stopped);
    assert_eq!(ran.report.error, None);
    assert!(took < Duration::from_secs(10), "the stop took {took:?}");
    let session = ran.store.session(&ran.report.session_id).expect("the session reads");
    assert_eq!(session.state, SessionState::Stopped);
    let slow = ran.attempt("root.slow");
    assert_eq!(slow.state, orrery_store::AttemptState::Cancelled);
    assert_eq!(slow.exit_code, Some(130));
    assert_eq!(ran.node_state("root.slow"), TaskState::Pending, "a resume would run it again");
    let process = slow.process.expect("the process was recorded");
    assert!(!orrery_engine::process::is_alive(process.pid, process.start_time), "the process is gone");
    assert!(!marker.exists(), "the later task never ran");
    let attempts = ran.store.attempts(&ran.report.session_id).expect("attempts read");
    assert!(attempts.iter().all(|a| a.node != "root.later"), "no attempt at the later task");
    assert_eq!(ran.node_state("root.later"), TaskState::Pending);
    // What was committed was announced, ending with the stop.
    let stored = ran.store.events_after(&ran.report.session_id, 0, 200).expect("events read");
    assert_eq!(stored.last(), ran.events.last());
    let Some(orrery_store::EventData::SessionStateChanged(last)) = stored.last().expect("events").data() else {
        panic!("the last event is the session's state: {stored:?}")
    };
    assert_eq!(last.state, orrery_store::SessionState::Stopped);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_aborts_a_sleep_task_and_a_stop_after_the_end_does_nothing() {
    let fx = Fixture::new();
    let nap = json!({"id": "nap", "type": "system.sleep", "params": [{"name": "duration", "value": 30}], "depends_on": [{"id": "start"}]});
    let root = blueprint("root", vec![start(), nap, end("nap")]);

    let (ran, took) = stop_when_running(&fx, &root, "root.nap").await;

    assert_eq!(ran.report.state, SessionState::Stopped);
    assert!(took < Duration::from_secs(5), "the stop took {took:?}");
    let nap = ran.attempt("root.nap");
    assert_eq!(nap.state, orrery_store::AttemptState::Cancelled);
    assert_eq!(nap.exit_code, None, "no process, no exit code");
    assert_eq!(ran.node_state("root.nap"), TaskState::Pending);

    // A session that already ended is not touched by a late stop.
    let control = SessionControl::new();
    let quick = blueprint("quick", vec![start(), sh("a", "true", "start"), end("a")]);
    let (handle, _receiver) = fx.spawn(&quick, &control);
    let report = handle.await.expect("no panic").expect("the session ran");
    control.stop();
    assert!(control.is_stop_requested());
    assert_eq!(report.state, SessionState::Completed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_requested_before_the_run_stops_the_session_before_any_task_starts() {
    let fx = Fixture::new();
    let marker = fx.path("ran");
    let root = blueprint("root", vec![start(), sh("a", &format!("touch '{}'", marker.display()), "start"), end("a")]);
    let control = SessionControl::new();
    control.stop();

    let (handle, _receiver) = fx.spawn(&root, &control);
    let report = handle.await.expect("no panic").expect("the session ran");

    assert_eq!(report.state, SessionState::Stopped);
    assert!(!marker.exists());
    let store = Store::open(&fx.db()).expect("the store opens");
    assert!(store.attempts(&report.session_id).expect("attempts read").is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_lines_become_the_attempts_steps_in_order_all_done_after_success() {
    let fx = Fixture::new();
    let command = r#"
        p() { printf '%s\n' "$1" >> "$ORRERY_PROGRESS"; }
        p '{"step": "fetch", "state": "in_progress"}'
        sleep 0.1
        p '{"step": "build", "state": "in_progress", "percentage": 40}'
        p 'not json at all'
        sleep 0.1
        p '{"step": "test", "state": "in_progress", "percentage": 10}'
    "#;
    let root = blueprint("root", vec![start(), sh("work", command, "start"), end("work")]);

    let ran = fx.run(&root, &[], 2).await;

    ran.assert_completed();
    let work = ran.attempt("root.work");
    let steps = ran.store.steps(&work.run_id).expect("steps read");
    let names: Vec<&str> = steps.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["fetch", "build", "test"]);
    assert!(steps.iter().all(|s| s.state == orrery_store::StepState::Done), "{steps:?}");
    // Each report was committed, then announced, in order with everything else.
    let progress: Vec<&Event> = ran.events.iter().filter(|e| e.kind() == "progress").collect();
    assert!(progress.len() >= 3, "{progress:?}");
    assert!(progress.iter().all(|e| e.run_id.as_ref() == Some(&work.run_id)));
    let stored = ran.store.events_after(&ran.report.session_id, 0, 200).expect("events read");
    assert_eq!(stored, ran.events);
    // The malformed line is reported in the attempt's log.
    let log = std::fs::read_to_string(work.log_path.expect("a shell attempt has a log")).expect("the log reads");
    assert!(log.lines().any(|l| l.starts_with("orrery: progress file")), "{log}");
}

/// Transitions are committed in batches (one commit per round of decisions); an event still
/// reaches observers only once its batch is committed: read from another connection the moment
/// it arrives, it is already there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_event_is_committed_before_an_observer_sees_it() {
    let fx = Fixture::new();
    let mut tasks = vec![start()];
    for i in 0..6 {
        tasks.push(sh(&format!("t{i}"), "true", "start"));
    }
    let after: Vec<Value> = (0..6).map(|i| json!({"id": format!("t{i}")})).collect();
    tasks.push(json!({"id": "end", "type": "system.end", "depends_on": after}));
    let root = blueprint("fan", tasks);
    let control = SessionControl::new();
    let (handle, mut receiver) = fx.spawn(&root, &control);
    let observer = fx.store();
    let mut checked = 0;
    loop {
        match receiver.recv().await {
            Ok(event) => {
                let stored = observer.events_after(&event.session_id, event.seq - 1, 1).expect("events read");
                assert_eq!(stored.first(), Some(&*event), "announced before it was committed");
                checked += 1;
                if matches!(event.data(), Some(orrery_store::EventData::SessionStateChanged(s))
                    if s.state == orrery_store::SessionState::Completed)
                {
                    break;
                }
            }
            Err(e) => panic!("the observer fell behind or the runner is gone: {e}"),
        }
    }
    let report = handle.await.expect("the runner task ends").expect("the session runs");
    assert_eq!(report.state, SessionState::Completed);
    assert!(checked > 30, "only {checked} events");
}

/// A scope whose end is reached while a member still runs (it started its successor through
/// an SS edge): the loop cuts that run short and settles it `cancelled`; nothing is left
/// `running` in the store.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scope_that_loops_while_a_member_still_runs_cancels_that_run_and_settles_it() {
    let fx = Fixture::new();
    let mut head = sh("head", "true", "start");
    head["scope_start"] = json!({"retry_policy": {"retries": 1}});
    let slow = sh("slow", "sleep 0.5", "head");
    let mut tail = json!({"id": "tail", "type": "shell.run", "scope_end": "head",
        "params": [{"name": "command", "value": "true"}], "depends_on": [{"id": "slow", "type": "SS"}]});
    tail["scope_end"] = json!("head");
    let root = blueprint("root", vec![start(), head, slow, tail, end("tail")]);

    let ran = fx.run(&root, &[], 2).await;

    ran.assert_completed();
    let attempts = ran.store.attempts(&ran.report.session_id).unwrap();
    let slow: Vec<_> = attempts.iter().filter(|a| a.node == "root.slow").map(|a| a.state).collect();
    use orrery_store::AttemptState::{Cancelled, Succeeded};
    assert_eq!(slow, [Cancelled, Succeeded], "the first pass's run was cut short by the loop");
    assert!(ran.store.running_attempts().unwrap().is_empty(), "no attempt is left running");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shell_task_sees_its_attempts_run_id() {
    let fx = Fixture::new();
    let file = fx.path("run_id");
    let root = blueprint(
        "root",
        vec![start(), sh("t", &format!("printf %s \"$ORRERY_RUN_ID\" > '{}'", file.display()), "start"), end("t")],
    );
    let ran = fx.run(&root, &[], 2).await;
    ran.assert_completed();
    assert_eq!(read(&file), ran.attempt("root.t").run_id.as_str());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_work_dir_that_cannot_be_created_fails_the_task_naming_the_folder() {
    let fx = Fixture::new();
    // A file where the work dir's folder should be: no folder can be made under it.
    std::fs::write(fx.path("work"), "not a folder").unwrap();
    let root = blueprint("root", vec![start(), sh("t", "true", "start"), end("t")]);
    let ran = fx.run(&root, &[], 2).await;
    assert_eq!(ran.report.state, SessionState::Failed);
    let error = ran.report.error.clone().expect("the task's error");
    assert_eq!(error.code, "LAUNCHER_FAILURE");
    assert!(error.message.contains("cannot create the attempt's folder"), "{}", error.message);
    let folder = fx.path("work").join(&ran.report.session_id);
    assert!(error.message.contains(&folder.display().to_string()), "{}", error.message);
    assert_eq!(ran.node_state("root.t"), TaskState::Failed);
}

/// A new session made for a client's request ([`RunOptions::retry`]) is made once: the same
/// request run again finds the session the first made and runs nothing (`AlreadyStarted`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_started_for_a_request_is_not_started_twice() {
    let fx = Fixture::new();
    let root = blueprint("root", vec![start(), sh("t", "true", "start"), end("t")]);
    let retry = orrery_store::Retry {
        id: "req-1".into(),
        operation: "start_session".into(),
        arguments: json!({"file": "root.json"}),
    };
    let db = fx.db();
    let run = || {
        let (valid, library) = valid(&root, &[]);
        let options = RunOptions {
            max_parallel: 2,
            work_dir: fx.path("work"),
            events: None,
            control: None,
            broker: None,
            retry: Some(retry.clone()),
            started_by: None,
            file: None,
            breakpoints: Vec::new(),
            hold_on_failure: false,
            simulation: None,
        };
        run_session(&db, valid, library, Map::new(), options)
    };
    let first = run().await.expect("the first run completes");
    assert_eq!(first.state, SessionState::Completed);
    match run().await {
        Err(RunError::AlreadyStarted { request_id, session_id }) => {
            assert_eq!((request_id.as_str(), session_id.as_str()), ("req-1", first.session_id.as_str()));
        }
        other => panic!("expected AlreadyStarted, got {other:?}"),
    }
    let store = Store::open(&fx.db()).unwrap();
    assert_eq!(store.sessions(&SessionFilter::default()).unwrap().len(), 1);
    let attempts = store.attempts(&first.session_id).unwrap();
    assert_eq!(attempts.iter().filter(|a| a.node == "root.t").count(), 1, "the task ran once");
}
