//! docs/format.md §4 ("Running"), rule by rule, on real blueprints: `shell.run` tasks (real
//! `/bin/sh` processes) on a real SQLite store in a temporary directory, driven through the
//! public API ([`run_session`], [`resume_session`], the interventions) and checked from what
//! the store recorded (attempt times, node states, session data, scope counters, events).
//!
//! Each rule of the section maps to the test that covers it. Rules an earlier engine test already
//! covers are not tested again here; `this file` marks the new ones.
//!
//! | Rule of section 4 | Covered by |
//! |---|---|
//! | One flattened graph, nodes `"{blueprint}.{task}"`; composite edges `C -> I.start` (SS), `I.end -> C` (FF) | plan: `plan.rs::a_static_composite_wraps_its_inner_instance_with_ss_and_ff_edges`; run: this file `the_composite_starts_before_its_inner_start_and_finishes_after_its_inner_end` |
//! | FS: start after the predecessor SUCCEEDED or SKIPPED | `runner.rs::a_finish_to_start_successor_starts_only_after_its_predecessor_finished`; SKIPPED: this file `a_skipped_task_satisfies_fs_ss_and_ff_and_writes_its_defaults_or_null` |
//! | SS: start once the predecessor is RUNNING, SUCCEEDED or SKIPPED | `runner.rs::a_start_to_start_successor_runs_while_its_predecessor_is_still_running`; SKIPPED: this file (as above) |
//! | FF: completion held until the FF predecessors are SUCCEEDED or SKIPPED | this file `a_finish_to_finish_task_completes_only_after_its_predecessor_finished` |
//! | SF (Orrery only): B may finish only after A started | this file `a_start_to_finish_task_finishes_only_after_its_predecessor_started` |
//! | Dispatch resolves inputs, then the condition; false: SKIPPED; downstream still runs; skipped writes output defaults (or null) | default + downstream: `runner.rs::a_false_condition_skips_its_task_which_still_writes_its_declared_default`; null, SS/FF: this file `a_skipped_task_satisfies_fs_ss_and_ff_and_writes_its_defaults_or_null` |
//! | A skipped composite skips its inner tasks; a skipped scope start skips its scope | pure: `scopes.rs::a_skipped_composite_skips_*`, `a_skipped_scope_start_skips_*`; run: this file `a_skipped_composite_and_a_skipped_scope_start_skip_what_they_hold_and_downstream_runs` |
//! | Condition language (asteval subset, `bool()` of the result) | `orrery-blueprint` condition tests (not a runner rule) |
//! | Condition namespace: params, inputs, element, context, session data, later wins | pure: `data.rs` unit test; run: this file `a_condition_sees_params_then_inputs_then_element_then_context_then_session_data` |
//! | An unknown name in a condition fails the session with TASK_DISPATCH_FAILED | null value: `runner.rs::a_condition_that_cannot_be_evaluated_fails_the_session_with_task_dispatch_failed`; unknown name: this file `a_condition_naming_a_value_not_yet_in_session_data_fails_the_session_with_task_dispatch_failed` |
//! | Session data is per session and per blueprint instance (a condition sees its own instance's data) | this file `a_condition_in_an_inner_instance_sees_that_instances_session_data_not_the_callers`, `two_sessions_of_one_blueprint_run_at_once_without_crossing_data` |
//! | Inputs read `data[get_from or name]`, literal `value` when null and no `get_from` | `get_from`: `runner.rs::a_linear_blueprint_*`; the rest: this file `inputs_read_get_from_or_name_and_fall_back_to_their_literal_only_without_get_from` |
//! | Outputs go to `data[set_to or name]`: returned, else default, else null; undeclared returned keys too; a failed task writes nothing | this file `outputs_land_under_set_to_or_name_returned_then_default_then_null_and_a_failed_task_writes_nothing` |
//! | Scopes loop only when their end task succeeds | this file `a_failed_scope_end_does_not_loop`, `a_skipped_scope_end_does_not_loop_and_downstream_runs` |
//! | retry: body runs `1 + retries` times; counter = extra runs | `runner.rs::a_retry_scope_with_two_retries_runs_its_body_three_times` |
//! | while: stop at `max_iterations - 1` iterations with a true condition | `runner.rs::a_while_scope_with_three_max_iterations_*` (3); max 1: this file `a_while_scope_with_max_iterations_one_runs_its_body_once` |
//! | while: loop while the condition on session data holds; a loop resets scope tasks to PENDING, keeps session data | this file `a_while_scope_loops_on_session_data_which_a_loop_keeps_while_its_tasks_go_back_to_pending` |
//! | while: the condition sees session data plus context only (not params) | this file `a_while_condition_does_not_see_the_scope_tasks_params` and `a_while_condition_inside_a_dynamic_instance_sees_its_element_context` |
//! | while: evaluation error fails with SCOPE_CONDITION_ERROR | `runner.rs::a_while_condition_that_cannot_be_evaluated_fails_the_session` |
//! | A loop resets nested scopes' counters; `scope_iterations[start id]` | pure: `scopes.rs::when_an_outer_scope_loops_*`; run: this file `when_an_outer_scope_loops_the_nested_scope_counter_is_reset_*`; counter: `runner.rs` retry/while tests |
//! | Static composite: instance `"{blueprint}_{task}"`, inputs in by name, outputs out to `set_to or name` | `runner.rs::a_static_composite_runs_its_inner_blueprint_*`; input with `get_from` and a literal input: this file `a_static_composite_copies_its_inputs_in_by_input_name_and_its_outputs_out_under_set_to` |
//! | Dynamic composite: FS chain `T_0..T_{n-1}`, context `{element_id, ...}`, outputs `{element_id: value}` | plan: `plan.rs::a_dynamic_composite_expands_*`; run: this file `a_dynamic_composite_runs_one_inner_instance_per_element_in_a_chain_and_accumulates_outputs`, `a_failed_dynamic_session_resumes_from_the_failed_element_*` |
//! | A FAILED task fails the session and records `last_task_error` | `runner.rs::a_failing_task_fails_the_session_with_tool_failure_*`; with a run in flight: this file `a_failed_session_records_its_error_and_resuming_it_reruns_only_what_did_not_succeed` |
//! | Starting a failed session again resets FAILED/RUNNING/READY to PENDING and resumes | `recovery.rs::a_failed_session_is_retried_from_its_failure`; with a cancelled run: this file (as above) |
//! | Intervention: reset a task (with downstream, clearing outputs) | `interventions.rs::resetting_a_task_with_downstream_*`, `resetting_a_single_task_*`; keeping outputs: this file `resetting_a_task_with_downstream_without_clearing_keeps_its_session_data` |
//! | Intervention: skip a task (PENDING -> SKIP_REQUESTED -> SKIPPED) | `interventions.rs::skipping_the_task_a_stopped_session_was_waiting_on_*`; defaults written for downstream: this file `a_skip_requested_task_is_skipped_when_it_would_dispatch_*` |
//! | Intervention: reset a scope | `interventions.rs::resetting_a_scope_clears_its_counter_and_runs_its_body_again` |
//! | Interventions only while not running | `interventions.rs::a_running_session_is_refused_until_it_is_stopped` |
//! | Agents over MQTT, EXCLUSIVE/COMPETITIVE, NO_AGENT_CLAIMED | against the reference's agents and broker: `tests/compat/tests/agents.rs` (the wire against the reference's bytes: `orrery-broker/tests/reference_bytes.rs`); without a broker, unknown types are refused before a session exists: `runner.rs::an_unknown_task_type_*` |
//! | Weakness not copied: an agent that dies after claiming | `tests/compat/tests/agents.rs::a_killed_agent_times_out_*` (silence limit, retried or `AGENT_TIMEOUT`) |
//! | Weaknesses not copied: scope counters per instance; two runs of one blueprint never cross-talk | `scopes.rs::one_inner_blueprint_used_twice_*`; this file `two_sessions_of_one_blueprint_run_at_once_without_crossing_data` |

use std::path::Path;
use std::time::Duration;

use orrery_blueprint::{Blueprint, SessionState, TaskState};
use orrery_engine::interventions::reset_task;
use orrery_engine::runner::{resume_session, run_session, RunReport};
use orrery_store::{Attempt, AttemptState, EventData, Store};
use serde_json::{json, Map, Value};

mod common;
use common::*;

/// A session that ended, with the store to read it.
struct Ran {
    report: RunReport,
    store: Store,
}

impl Ran {
    fn id(&self) -> &str {
        &self.report.session_id
    }

    fn data(&self, instance: &str, key: &str) -> Option<Value> {
        self.store.data_value(self.id(), instance, key).expect("data reads")
    }

    fn state(&self, node: &str) -> TaskState {
        self.store.task_node(self.id(), node).unwrap_or_else(|e| panic!("node {node}: {e}")).state
    }

    fn attempts(&self, node: &str) -> Vec<Attempt> {
        self.store.attempts(self.id()).expect("attempts read").into_iter().filter(|a| a.node == node).collect()
    }

    /// The one attempt at `node`.
    fn attempt(&self, node: &str) -> Attempt {
        let mut all = self.attempts(node);
        assert_eq!(all.len(), 1, "one attempt at {node}: {all:?}");
        all.pop().unwrap()
    }

    fn finished(&self, node: &str) -> i64 {
        self.attempt(node).finished_ms.unwrap_or_else(|| panic!("{node} finished"))
    }

    fn started(&self, node: &str) -> i64 {
        self.attempt(node).started_ms
    }

    /// Every state `node` went through, in order, from the `task_state_changed` events.
    fn states_of(&self, node: &str) -> Vec<String> {
        let mut events = Vec::new();
        loop {
            let after = events.last().map_or(0, |e: &orrery_store::Event| e.seq);
            let page = self.store.events_after(self.id(), after, 200).expect("events read");
            if page.is_empty() {
                break;
            }
            events.extend(page);
        }
        events
            .iter()
            .filter_map(|e| match e.data() {
                Some(EventData::TaskStateChanged(changed)) if changed.node == node => {
                    Some(changed.state.as_str().to_string())
                }
                _ => None,
            })
            .collect()
    }

    fn assert_completed(&self) {
        assert_eq!(self.report.state, SessionState::Completed, "the session failed: {:?}", self.report.error);
    }

    fn assert_failed_with(&self, code: &str) -> String {
        assert_eq!(self.report.state, SessionState::Failed);
        let error = self.report.error.clone().expect("the failure is reported");
        assert_eq!(error.code, code, "{}", error.message);
        let stored = self.store.session(self.id()).expect("the session reads");
        assert_eq!(stored.state, SessionState::Failed);
        assert_eq!(stored.last_error.as_ref().map(|e| e.code.as_str()), Some(code), "last_task_error is recorded");
        error.message
    }
}

impl Fixture {
    /// Runs `root` with `others` as its library and session `params` to its end.
    async fn run_with(&self, root: &Blueprint, others: &[&Blueprint], params: Value) -> Ran {
        let (valid, library) = valid(root, others);
        let (options, _) = self.options(None);
        let params: Map<String, Value> = params.as_object().cloned().unwrap_or_default();
        let report =
            tokio::time::timeout(Duration::from_secs(60), run_session(&self.db(), valid, library, params, options))
                .await
                .expect("the session ended in time")
                .expect("the session runs");
        Ran { report, store: self.store() }
    }

    async fn run(&self, root: &Blueprint, others: &[&Blueprint]) -> Ran {
        self.run_with(root, others, json!({})).await
    }

    async fn resume(&self, session_id: &str) -> Ran {
        let (options, _) = self.options(None);
        let report = tokio::time::timeout(Duration::from_secs(60), resume_session(&self.db(), session_id, options))
            .await
            .expect("the resumed session ended in time")
            .expect("the session resumes");
        Ran { report, store: self.store() }
    }
}

/// A shell task with explicit dependencies `[(id, type)]`.
fn sh_deps(id: &str, command: &str, deps: &[(&str, &str)]) -> Value {
    let deps: Vec<Value> = deps.iter().map(|(d, t)| json!({"id": d, "type": t})).collect();
    json!({"id": id, "type": "shell.run", "params": [{"name": "command", "value": command}], "depends_on": deps})
}

/// An end task after every task in `after` (FS).
fn end_after(after: &[&str]) -> Value {
    let deps: Vec<Value> = after.iter().map(|d| json!({"id": d})).collect();
    json!({"id": "end", "type": "system.end", "depends_on": deps})
}

/// A shell command writing `outputs` (a JSON object) to the task's outputs file.
fn emit(outputs: Value) -> String {
    format!("printf '%s' '{outputs}' > \"$ORRERY_OUTPUTS\"")
}

fn append(file: &Path, word: &str) -> String {
    format!("echo {word} >> '{}'", file.display())
}

fn count(file: &Path, word: &str) -> usize {
    read(file).lines().filter(|l| *l == word).count()
}

fn add_param(task: &mut Value, name: &str, value: Value) {
    task["params"].as_array_mut().expect("params").push(json!({"name": name, "value": value}));
}

/// A `start -> loop_start -> body -> loop_end -> after` chain where `loop_start` opens a scope
/// with `policy`, `loop_end` closes it.
fn scope_tasks(policy: Value, body: Value) -> Vec<Value> {
    let mut loop_start = sh("loop_start", "true", "start");
    loop_start["scope_start"] = policy;
    let mut loop_end = sh("loop_end", "true", "body");
    loop_end["scope_end"] = json!("loop_start");
    vec![loop_start, body, loop_end]
}

// ---- dependency types -------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finish_to_finish_task_completes_only_after_its_predecessor_finished() {
    let fx = Fixture::new();
    let root = blueprint(
        "root",
        vec![
            start(),
            sh("a", "sleep 0.3", "start"),
            sh_deps("b", "true", &[("start", "FS"), ("a", "FF")]),
            end_after(&["a", "b"]),
        ],
    );

    let ran = fx.run(&root, &[]).await;

    ran.assert_completed();
    assert!(ran.started("root.b") < ran.finished("root.a"), "b started while a was running");
    assert!(
        ran.finished("root.b") >= ran.finished("root.a"),
        "b finished at {} before a at {}",
        ran.finished("root.b"),
        ran.finished("root.a")
    );
    assert_eq!(ran.attempt("root.b").state, AttemptState::Succeeded);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_start_to_finish_task_finishes_only_after_its_predecessor_started() {
    let fx = Fixture::new();
    // a starts only after x (0.3 s); b may start at once but finish only once a started.
    let root = blueprint(
        "root",
        vec![
            start(),
            sh("x", "sleep 0.3", "start"),
            sh("a", "true", "x"),
            sh_deps("b", "true", &[("start", "FS"), ("a", "SF")]),
            end_after(&["a", "b"]),
        ],
    );

    let ran = fx.run(&root, &[]).await;

    ran.assert_completed();
    assert!(ran.started("root.b") < ran.started("root.a"), "b started before a");
    assert!(
        ran.finished("root.b") >= ran.started("root.a"),
        "b finished at {} before a started at {}",
        ran.finished("root.b"),
        ran.started("root.a")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_composite_starts_before_its_inner_start_and_finishes_after_its_inner_end() {
    let fx = Fixture::new();
    let inner = blueprint("inner", vec![start(), sh("slow", "sleep 0.3", "start"), end("slow")]);
    let composite = json!({"id": "c", "type": "system.composite",
        "params": [{"name": "blueprint", "value": {"static": "inner"}}], "depends_on": [{"id": "start"}]});
    let root = blueprint("root", vec![start(), composite, end("c")]);

    let ran = fx.run(&root, &[&inner]).await;

    ran.assert_completed();
    // C -> I.start (SS): the inner start begins once the composite runs.
    assert!(ran.started("root.c") <= ran.started("inner_c.start"));
    // I.end -> C (FF): the composite completes only once the inner end has.
    assert!(ran.finished("inner_c.slow") <= ran.finished("inner_c.end"));
    assert!(
        ran.finished("root.c") >= ran.finished("inner_c.end"),
        "c finished at {} before its inner end at {}",
        ran.finished("root.c"),
        ran.finished("inner_c.end")
    );
    assert!(ran.started("root.end") >= ran.finished("root.c"));
}

// ---- conditions and skips ---------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_skipped_task_satisfies_fs_ss_and_ff_and_writes_its_defaults_or_null() {
    let fx = Fixture::new();
    let ran_file = fx.path("ran");
    let mut s = sh("s", &append(&ran_file, "s"), "start");
    s["condition"] = json!("1 > 2");
    s["outputs"] = json!([{"name": "plain"}, {"name": "with_default", "value": 7, "set_to": "renamed"}]);
    let root = blueprint(
        "root",
        vec![
            start(),
            s,
            sh_deps("fs", &append(&ran_file, "fs"), &[("s", "FS")]),
            sh_deps("ss", &append(&ran_file, "ss"), &[("s", "SS")]),
            sh_deps("ff", &append(&ran_file, "ff"), &[("start", "FS"), ("s", "FF")]),
            end_after(&["fs", "ss", "ff"]),
        ],
    );

    let ran = fx.run(&root, &[]).await;

    ran.assert_completed();
    assert_eq!(ran.state("root.s"), TaskState::Skipped);
    assert!(ran.attempts("root.s").is_empty(), "a skipped task starts no attempt");
    for node in ["root.fs", "root.ss", "root.ff", "root.end"] {
        assert_eq!(ran.state(node), TaskState::Succeeded, "{node}");
    }
    assert_eq!(
        (count(&ran_file, "s"), count(&ran_file, "fs"), count(&ran_file, "ss"), count(&ran_file, "ff")),
        (0, 1, 1, 1)
    );
    assert_eq!(ran.data("root", "plain"), Some(Value::Null), "no default: null is written");
    assert_eq!(ran.data("root", "renamed"), Some(json!(7)), "the default lands under set_to");
    assert_eq!(ran.data("root", "with_default"), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_skipped_composite_and_a_skipped_scope_start_skip_what_they_hold_and_downstream_runs() {
    let fx = Fixture::new();
    let ran_file = fx.path("ran");
    let mut work = sh("work", &append(&ran_file, "inner"), "start");
    work["outputs"] = json!([{"name": "made", "value": "inner-default"}]);
    let inner = blueprint("inner", vec![start(), work, end("work")]);
    let composite = json!({"id": "c", "type": "system.composite", "condition": "False",
        "params": [{"name": "blueprint", "value": {"static": "inner"}}],
        "outputs": [{"name": "r", "value": "none", "set_to": "result"}],
        "depends_on": [{"id": "start"}]});
    let mut tasks = vec![start(), composite];
    let mut body = sh("body", &append(&ran_file, "body"), "loop_start");
    body["outputs"] = json!([{"name": "b", "value": "body-default"}, {"name": "b_null"}]);
    let mut scope = scope_tasks(json!({"retry_policy": {"retries": 2}}), body);
    scope[0]["condition"] = json!("False");
    scope[0]["depends_on"] = json!([{"id": "c"}]);
    tasks.extend(scope);
    tasks.push(sh("after", &append(&ran_file, "after"), "loop_end"));
    tasks.push(end("after"));
    let root = blueprint("root", tasks);

    let ran = fx.run(&root, &[&inner]).await;

    ran.assert_completed();
    for node in
        ["root.c", "inner_c.start", "inner_c.work", "inner_c.end", "root.loop_start", "root.body", "root.loop_end"]
    {
        assert_eq!(ran.state(node), TaskState::Skipped, "{node}");
    }
    assert_eq!(ran.state("root.after"), TaskState::Succeeded);
    assert_eq!(read(&ran_file), "after\n", "only the task after the skipped ones ran");
    assert_eq!(ran.data("root", "result"), Some(json!("none")), "the skipped composite wrote its default");
    assert_eq!(
        ran.data("inner_c", "made"),
        Some(json!("inner-default")),
        "a task skipped by the cascade writes its default"
    );
    assert_eq!(ran.data("root", "b"), Some(json!("body-default")));
    assert_eq!(ran.data("root", "b_null"), Some(Value::Null));
    assert_eq!(
        ran.store.scope_iterations(ran.id(), "root", "root.loop_start").unwrap(),
        0,
        "a skipped scope never loops"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_condition_sees_params_then_inputs_then_element_then_context_then_session_data() {
    let fx = Fixture::new();
    let ran_file = fx.path("ran");
    // Inner instance: `length` param < context; `width` input < context; `color` context < data.
    let paint = {
        let mut t = sh("paint", &emit(json!({"color": "blue"})), "start");
        t["outputs"] = json!([{"name": "color"}]);
        t
    };
    let mut probe = sh("probe", &append(&ran_file, "probe"), "paint");
    add_param(&mut probe, "length", json!("param"));
    add_param(&mut probe, "element_id", json!("param"));
    probe["inputs"] = json!([{"name": "width", "value": "input"}]);
    probe["condition"] = json!("length == 5 and width == 7 and color == 'blue' and element_id == 'e1'");
    let inner = blueprint("inner", vec![start(), paint, probe, end("probe")]);

    // Root: `n1` param only; `n2` param < input; `n3` param < input < data.
    let mut prod = sh("prod", &emit(json!({"src": "input", "n3": "data", "tag": "data"})), "start");
    prod["outputs"] = json!([{"name": "src"}, {"name": "n3"}, {"name": "tag"}]);
    let mut check = sh("check", &append(&ran_file, "check"), "prod");
    for n in ["n1", "n2", "n3"] {
        add_param(&mut check, n, json!("param"));
    }
    check["inputs"] = json!([{"name": "n2", "get_from": "src"}, {"name": "n3", "get_from": "src"}]);
    check["condition"] = json!("n1 == 'param' and n2 == 'input' and n3 == 'data'");
    // The expanded composite: `length` param < element; `tag` param < element < data.
    let each = json!({"id": "each", "type": "system.composite",
        "condition": "length == 5 and tag == 'data'",
        "params": [{"name": "blueprint", "value": {"dynamic": {"blueprint_id": "inner", "sequencer": "basic_sequencer"}}},
                   {"name": "length", "value": "param"}, {"name": "tag", "value": "param"}],
        "depends_on": [{"id": "check"}]});
    let root = blueprint("root", vec![start(), prod, check, each, end("each")]);
    let element = json!({"element_id": "e1", "length": 5, "width": 7, "color": "red", "tag": "element"});

    let ran = fx.run_with(&root, &[&inner], json!({"elements": {"each": [element]}})).await;

    ran.assert_completed();
    assert_eq!(ran.state("root.check"), TaskState::Succeeded, "params < inputs < session data");
    assert_eq!(ran.state("root.each_0"), TaskState::Succeeded, "params < element < session data");
    assert_eq!(ran.state("inner_each_0_e1.probe"), TaskState::Succeeded, "params, inputs < context < session data");
    assert_eq!(read(&ran_file), "check\nprobe\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_condition_naming_a_value_not_yet_in_session_data_fails_the_session_with_task_dispatch_failed() {
    let fx = Fixture::new();
    let ran_file = fx.path("ran");
    // `flag` is declared (so the blueprint validates) by a task that has not ended yet.
    let mut late = sh("late", "sleep 5", "start");
    late["outputs"] = json!([{"name": "flag", "value": true}]);
    let mut b = sh("b", &append(&ran_file, "b"), "a");
    b["condition"] = json!("flag");
    let root = blueprint("root", vec![start(), late, sh("a", "true", "start"), b, end_after(&["b", "late"])]);

    let ran = fx.run(&root, &[]).await;

    let message = ran.assert_failed_with("TASK_DISPATCH_FAILED");
    assert!(message.contains("flag"), "{message}");
    assert_eq!(ran.state("root.b"), TaskState::Failed);
    // The dispatch failure is an attempt of its own; b's command never ran.
    let b = ran.attempts("root.b");
    assert_eq!(b.len(), 1);
    assert_eq!(b[0].state, AttemptState::Failed);
    assert_eq!(b[0].error.as_ref().map(|e| e.code.as_str()), Some("TASK_DISPATCH_FAILED"));
    assert!(!ran_file.exists());
    assert_eq!(ran.attempt("root.late").state, AttemptState::Cancelled);
}

// ---- session data -----------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inputs_read_get_from_or_name_and_fall_back_to_their_literal_only_without_get_from() {
    let fx = Fixture::new();
    let seen = fx.path("inputs.json");
    let mut prod = sh("prod", &emit(json!({"x": 1, "y": null, "z": null})), "start");
    prod["outputs"] = json!([{"name": "x"}, {"name": "y"}, {"name": "z"}]);
    let mut cons = sh("cons", &format!("cp \"$ORRERY_INPUTS\" '{}'", seen.display()), "prod");
    cons["inputs"] = json!([
        {"name": "x", "value": "unused"},           // data[x] = 1
        {"name": "copy", "get_from": "x"},           // data[x] = 1
        {"name": "y", "value": "literal"},           // data[y] null, no get_from: the literal
        {"name": "absent", "value": "literal"},      // nothing in data: the literal
        {"name": "via", "get_from": "z", "value": "not used"}, // null with get_from: null
        {"name": "bare"}                             // nothing, no literal: null
    ]);
    let root = blueprint("root", vec![start(), prod, cons, end("cons")]);

    let ran = fx.run(&root, &[]).await;

    ran.assert_completed();
    let expected = json!({"x": 1, "copy": 1, "y": "literal", "absent": "literal", "via": null, "bare": null});
    let inputs: Value = serde_json::from_str(&read(&seen)).expect("the task wrote its inputs");
    assert_eq!(inputs, expected);
    assert_eq!(ran.attempt("root.cons").inputs, Some(expected), "the attempt records its resolved inputs");
    assert_eq!(ran.data("root", "y"), Some(Value::Null), "resolving an input writes nothing");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outputs_land_under_set_to_or_name_returned_then_default_then_null_and_a_failed_task_writes_nothing() {
    let fx = Fixture::new();
    let mut prod = sh("prod", &emit(json!({"r": "returned", "d": "returned too", "extra": [1, 2]})), "start");
    prod["outputs"] = json!([
        {"name": "r", "set_to": "target", "value": "default"},
        {"name": "d"},
        {"name": "only_default", "value": 3},
        {"name": "nothing"}
    ]);
    let mut bad = sh("bad", &format!("{}; exit 1", emit(json!({"w": "partial"}))), "prod");
    bad["outputs"] = json!([{"name": "w", "value": "w-default"}, {"name": "v", "value": "v-default"}]);
    let root = blueprint("root", vec![start(), prod, bad, end("bad")]);

    let ran = fx.run(&root, &[]).await;

    ran.assert_failed_with("TOOL_FAILURE");
    assert_eq!(ran.data("root", "target"), Some(json!("returned")), "returned, under set_to");
    assert_eq!(ran.data("root", "r"), None, "not under its name when set_to is given");
    assert_eq!(ran.data("root", "d"), Some(json!("returned too")));
    assert_eq!(ran.data("root", "only_default"), Some(json!(3)), "not returned: the default");
    assert_eq!(ran.data("root", "nothing"), Some(Value::Null), "neither: null");
    assert_eq!(ran.data("root", "extra"), Some(json!([1, 2])), "returned but undeclared lands too");
    assert_eq!(ran.state("root.bad"), TaskState::Failed);
    assert_eq!(ran.data("root", "w"), None, "a failed task writes nothing (not what it returned)");
    assert_eq!(ran.data("root", "v"), None, "a failed task writes nothing (not its defaults)");
}

// ---- scopes -----------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_scope_end_does_not_loop() {
    let fx = Fixture::new();
    let ran_file = fx.path("ran");
    let mut tasks = vec![start()];
    let mut scope =
        scope_tasks(json!({"retry_policy": {"retries": 3}}), sh("body", &append(&ran_file, "body"), "loop_start"));
    scope[2]["params"][0]["value"] = json!("exit 2");
    tasks.extend(scope);
    tasks.push(end("loop_end"));
    let root = blueprint("root", tasks);

    let ran = fx.run(&root, &[]).await;

    ran.assert_failed_with("TOOL_FAILURE");
    assert_eq!(count(&ran_file, "body"), 1, "the body ran once: a scope loops only when its end succeeds");
    assert_eq!(ran.store.scope_iterations(ran.id(), "root", "root.loop_start").unwrap(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_while_scope_with_max_iterations_one_runs_its_body_once() {
    let fx = Fixture::new();
    let ran_file = fx.path("ran");
    let mut tasks = vec![start()];
    tasks.extend(scope_tasks(
        json!({"while_policy": {"condition": "True", "max_iterations": 1}}),
        sh("body", &append(&ran_file, "body"), "loop_start"),
    ));
    tasks.push(end("loop_end"));
    let root = blueprint("root", tasks);

    let ran = fx.run(&root, &[]).await;

    ran.assert_completed();
    assert_eq!(count(&ran_file, "body"), 1);
    assert_eq!(ran.store.scope_iterations(ran.id(), "root", "root.loop_start").unwrap(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_while_scope_loops_on_session_data_which_a_loop_keeps_while_its_tasks_go_back_to_pending() {
    let fx = Fixture::new();
    let ran_file = fx.path("ran");
    // The body counts: it reads its own previous output (0 the first time) and adds one.
    let mut body = sh(
        "body",
        &format!(
            "{}; printf '{{\"count\": %s}}' $((ORRERY_INPUT_COUNT + 1)) > \"$ORRERY_OUTPUTS\"",
            append(&ran_file, "body")
        ),
        "loop_start",
    );
    body["inputs"] = json!([{"name": "count", "value": 0}]);
    body["outputs"] = json!([{"name": "count"}]);
    let mut tasks = vec![start()];
    tasks.extend(scope_tasks(json!({"while_policy": {"condition": "count < 3", "max_iterations": 10}}), body));
    tasks.push(end("loop_end"));
    let root = blueprint("root", tasks);

    let ran = fx.run(&root, &[]).await;

    ran.assert_completed();
    assert_eq!(count(&ran_file, "body"), 3, "it stopped once the condition was false, not at max_iterations");
    assert_eq!(ran.data("root", "count"), Some(json!(3)), "each loop kept the session data of the one before");
    assert_eq!(ran.store.scope_iterations(ran.id(), "root", "root.loop_start").unwrap(), 2);
    let inputs: Vec<Value> =
        ran.attempts("root.body").into_iter().map(|a| a.inputs.unwrap()["count"].clone()).collect();
    assert_eq!(inputs, [json!(0), json!(1), json!(2)]);
    for node in ["root.loop_start", "root.body", "root.loop_end"] {
        let states = ran.states_of(node);
        let pending_again = states.windows(2).filter(|w| w[0] == "SUCCEEDED" && w[1] == "PENDING").count();
        assert_eq!(pending_again, 2, "{node} went back to PENDING at each loop: {states:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_while_condition_does_not_see_the_scope_tasks_params() {
    let fx = Fixture::new();
    let ran_file = fx.path("ran");
    // `flag` is a param of the scope's start and end, and a declared output of a task still
    // running when the condition is evaluated: not in session data, so an unknown name.
    let mut late = sh("late", "sleep 5", "start");
    late["outputs"] = json!([{"name": "flag", "value": true}]);
    let mut scope = scope_tasks(
        json!({"while_policy": {"condition": "flag", "max_iterations": 3}}),
        sh("body", &append(&ran_file, "body"), "loop_start"),
    );
    add_param(&mut scope[0], "flag", json!(true));
    add_param(&mut scope[2], "flag", json!(true));
    let mut tasks = vec![start(), late];
    tasks.extend(scope);
    tasks.push(end_after(&["loop_end", "late"]));
    let root = blueprint("root", tasks);

    let ran = fx.run(&root, &[]).await;

    let message = ran.assert_failed_with("SCOPE_CONDITION_ERROR");
    assert!(message.contains("flag"), "{message}");
    assert_eq!(count(&ran_file, "body"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_while_condition_inside_a_dynamic_instance_sees_its_element_context() {
    let fx = Fixture::new();
    let mut body = sh("body", r#"printf '{"done": %s}' $((ORRERY_INPUT_DONE + 1)) > "$ORRERY_OUTPUTS""#, "loop_start");
    body["inputs"] = json!([{"name": "done", "value": 0}]);
    body["outputs"] = json!([{"name": "done"}]);
    let mut tasks = vec![start()];
    tasks.extend(scope_tasks(json!({"while_policy": {"condition": "done < rounds", "max_iterations": 10}}), body));
    // Declares `rounds` (the blueprint validates) but writes it only after the scope.
    let mut report = sh("report", "true", "loop_end");
    report["outputs"] = json!([{"name": "rounds"}]);
    tasks.push(report);
    tasks.push(end("report"));
    let spin = blueprint("spin", tasks);
    let each = json!({"id": "each", "type": "system.composite",
        "params": [{"name": "blueprint", "value": {"dynamic": {"blueprint_id": "spin", "sequencer": "basic_sequencer"}}}],
        "depends_on": [{"id": "start"}]});
    let root = blueprint("root", vec![start(), each, end("each")]);
    let elements = json!([{"element_id": "a", "rounds": 2}, {"element_id": "b", "rounds": 3}]);

    let ran = fx.run_with(&root, &[&spin], json!({"elements": {"each": elements}})).await;

    ran.assert_completed();
    assert_eq!(ran.data("spin_each_0_a", "done"), Some(json!(2)));
    assert_eq!(ran.data("spin_each_1_b", "done"), Some(json!(3)));
    assert_eq!(ran.attempts("spin_each_0_a.body").len(), 2);
    assert_eq!(ran.attempts("spin_each_1_b.body").len(), 3);
    assert_eq!(ran.store.scope_iterations(ran.id(), "spin_each_0_a", "spin_each_0_a.loop_start").unwrap(), 1);
    assert_eq!(ran.store.scope_iterations(ran.id(), "spin_each_1_b", "spin_each_1_b.loop_start").unwrap(), 2);
}

// ---- composites -------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dynamic_composite_runs_one_inner_instance_per_element_in_a_chain_and_accumulates_outputs() {
    let fx = Fixture::new();
    let seen = fx.path("after_inputs.json");
    // Inner: the area of its part (an input entered per element), and a weight that only a
    // heavy element (its context) computes; otherwise the skipped task's default.
    let mut measure = sh(
        "measure",
        r#"printf '{"area": %s}' $((ORRERY_INPUT_SIZE * ORRERY_INPUT_SIZE)) > "$ORRERY_OUTPUTS""#,
        "start",
    );
    measure["inputs"] = json!([{"name": "size"}]);
    measure["outputs"] = json!([{"name": "area"}]);
    let mut weigh = sh("weigh", &emit(json!({"weight": "heavy"})), "measure");
    add_param(&mut weigh, "heavy", json!(false));
    weigh["condition"] = json!("heavy");
    weigh["outputs"] = json!([{"name": "weight", "value": "light"}]);
    let beam = blueprint("beam", vec![start(), measure, weigh, end("weigh")]);

    let mut parts = sh("parts", &emit(json!({"size": {"beam-a": 2, "beam-b": 3}})), "start");
    parts["outputs"] = json!([{"name": "size"}]);
    let each = json!({"id": "each", "type": "system.composite",
        "params": [{"name": "blueprint", "value": {"dynamic": {"blueprint_id": "beam", "sequencer": "basic_sequencer"}}}],
        "inputs": [{"name": "size"}],
        "outputs": [{"name": "area"}, {"name": "weight", "set_to": "weights"}],
        "depends_on": [{"id": "parts"}]});
    let mut after = sh("after", &format!("cp \"$ORRERY_INPUTS\" '{}'", seen.display()), "each");
    after["inputs"] = json!([{"name": "areas", "get_from": "area"}, {"name": "weights"}]);
    let root = blueprint("root", vec![start(), parts, each, after, end("after")]);
    let elements = json!(["beam-a", {"element_id": "beam-b", "heavy": true}]);

    let ran = fx.run_with(&root, &[&beam], json!({"elements": {"each": elements}})).await;

    ran.assert_completed();
    // One inner instance per element, chained FS.
    assert!(ran.started("root.each_1") >= ran.finished("root.each_0"), "each_1 waited for each_0");
    assert!(ran.started("beam_each_1_beam-b.measure") >= ran.finished("root.each_0"));
    assert!(ran.started("root.after") >= ran.finished("root.each_1"));
    assert!(ran.store.task_node(ran.id(), "root.each").is_err(), "the dynamic composite itself is not a node");
    // Each instance got its own part and its own context.
    assert_eq!(ran.data("beam_each_0_beam-a", "size"), Some(json!(2)));
    assert_eq!(ran.data("beam_each_1_beam-b", "size"), Some(json!(3)));
    assert_eq!(ran.state("beam_each_0_beam-a.weigh"), TaskState::Skipped);
    assert_eq!(ran.state("beam_each_1_beam-b.weigh"), TaskState::Succeeded);
    // Outputs accumulate as {element_id: value}.
    assert_eq!(ran.data("root", "area"), Some(json!({"beam-a": 4, "beam-b": 9})));
    assert_eq!(ran.data("root", "weights"), Some(json!({"beam-a": "light", "beam-b": "heavy"})));
    let inputs: Value = serde_json::from_str(&read(&seen)).expect("after wrote its inputs");
    assert_eq!(inputs, json!({"areas": {"beam-a": 4, "beam-b": 9}, "weights": {"beam-a": "light", "beam-b": "heavy"}}));
}

// ---- failure, resume, interventions -----------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_session_records_its_error_and_resuming_it_reruns_only_what_did_not_succeed() {
    let fx = Fixture::new();
    let ran_file = fx.path("ran");
    let go = fx.path("go");
    let flaky =
        format!("{}; sleep 0.2; [ -f '{}' ] || {{ echo boom; exit 1; }}", append(&ran_file, "flaky"), go.display());
    let slow = format!("[ -f '{}' ] || sleep 30; {}", go.display(), append(&ran_file, "slow"));
    let root = blueprint(
        "root",
        vec![
            start(),
            sh("ok", &append(&ran_file, "ok"), "start"),
            sh("slow", &slow, "start"),
            sh("flaky", &flaky, "ok"),
            end_after(&["flaky", "slow"]),
        ],
    );

    let failed = fx.run(&root, &[]).await;

    let message = failed.assert_failed_with("TOOL_FAILURE");
    assert!(message.contains("boom"), "{message}");
    assert_eq!(failed.state("root.ok"), TaskState::Succeeded);
    assert_eq!(failed.state("root.flaky"), TaskState::Failed);
    assert_eq!(failed.attempt("root.slow").state, AttemptState::Cancelled, "the run in flight was cancelled");
    assert_ne!(failed.state("root.slow"), TaskState::Succeeded);

    std::fs::write(&go, "").unwrap();
    let resumed = fx.resume(failed.id()).await;

    resumed.assert_completed();
    assert_eq!(resumed.id(), failed.id());
    assert_eq!(count(&ran_file, "ok"), 1, "what succeeded never ran again");
    assert_eq!(count(&ran_file, "flaky"), 2);
    assert_eq!(count(&ran_file, "slow"), 1, "the cancelled run ran anew (and this time to its end)");
    let flaky_states = resumed.states_of("root.flaky");
    let failed_at = flaky_states.iter().position(|s| s == "FAILED").expect("it failed");
    assert_eq!(flaky_states[failed_at + 1], "PENDING", "a failed task is reset to PENDING: {flaky_states:?}");
    assert_eq!(
        resumed.attempts("root.flaky").iter().map(|a| a.state).collect::<Vec<_>>(),
        [AttemptState::Failed, AttemptState::Succeeded]
    );
    assert_eq!(
        resumed.attempts("root.slow").iter().map(|a| a.state).collect::<Vec<_>>(),
        [AttemptState::Cancelled, AttemptState::Succeeded]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resetting_a_task_with_downstream_without_clearing_keeps_its_session_data() {
    let fx = Fixture::new();
    let ran_file = fx.path("ran");
    let go = fx.path("go");
    let mut t1 = sh("t1", &format!("{}; {}", append(&ran_file, "one"), emit(json!({"x": 5}))), "start");
    t1["outputs"] = json!([{"name": "x", "set_to": "t1x"}]);
    let t2 = sh("t2", &format!("{}; [ -f '{}' ]", append(&ran_file, "two"), go.display()), "t1");
    let root = blueprint("root", vec![start(), t1, t2, end("t2")]);
    let failed = fx.run(&root, &[]).await;
    failed.assert_failed_with("TOOL_FAILURE");

    let done = reset_task(&fx.db(), failed.id(), "t1", true, false).expect("the reset is accepted");

    let nodes: Vec<&str> = done.nodes.iter().map(|c| c.node.as_str()).collect();
    assert_eq!(nodes, ["root.t1", "root.t2", "root.end"]);
    assert!(done.cleared_data.is_empty());
    assert_eq!(failed.data("root", "t1x"), Some(json!(5)), "the outputs stay in session data");
    assert_eq!(failed.state("root.t1"), TaskState::Pending);
    std::fs::write(&go, "").unwrap();
    let resumed = fx.resume(failed.id()).await;
    resumed.assert_completed();
    assert_eq!((count(&ran_file, "one"), count(&ran_file, "two")), (2, 2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_sessions_of_one_blueprint_run_at_once_without_crossing_data() {
    let fx = Fixture::new();
    let mut a = sh("a", r#"sleep 0.2; printf '{"v": "%s"}' "$ORRERY_INPUT_WHO" > "$ORRERY_OUTPUTS""#, "start");
    a["inputs"] = json!([{"name": "who", "get_from": "who"}]);
    a["outputs"] = json!([{"name": "v"}]);
    let mut seed = sh("seed", "true", "start");
    seed["outputs"] = json!([{"name": "who"}]);
    a["depends_on"] = json!([{"id": "seed"}]);
    let root = blueprint("root", vec![start(), seed, a, end("a")]);
    // Two sessions whose `seed` returns different values, run concurrently in one store.
    let (one, two) = {
        let mut r1 = root.clone();
        let mut r2 = root.clone();
        let set = |r: &mut Blueprint, who: &str| {
            let seed = r.tasks.iter_mut().find(|t| t.id == "seed").unwrap();
            seed.params[0].io.value = Some(json!(emit(json!({"who": who}))));
        };
        set(&mut r1, "first");
        set(&mut r2, "second");
        tokio::join!(fx.run(&r1, &[]), fx.run(&r2, &[]))
    };
    one.assert_completed();
    two.assert_completed();
    assert_ne!(one.id(), two.id());
    assert_eq!(one.data("root", "v"), Some(json!("first")));
    assert_eq!(two.data("root", "v"), Some(json!("second")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn when_an_outer_scope_loops_the_nested_scope_counter_is_reset_so_the_nested_body_repeats_in_full() {
    let fx = Fixture::new();
    let ran_file = fx.path("ran");
    let mut o_start = sh("o_start", "true", "start");
    o_start["scope_start"] = json!({"retry_policy": {"retries": 1}});
    let mut i_start = sh("i_start", "true", "o_start");
    i_start["scope_start"] = json!({"retry_policy": {"retries": 1}});
    let mut i_end = sh("i_end", "true", "body");
    i_end["scope_end"] = json!("i_start");
    let mut o_end = sh("o_end", "true", "i_end");
    o_end["scope_end"] = json!("o_start");
    let root = blueprint(
        "root",
        vec![start(), o_start, i_start, sh("body", &append(&ran_file, "body"), "i_start"), i_end, o_end, end("o_end")],
    );

    let ran = fx.run(&root, &[]).await;

    ran.assert_completed();
    assert_eq!(count(&ran_file, "body"), 4, "two outer runs of two inner runs each");
    assert_eq!(ran.store.scope_iterations(ran.id(), "root", "root.o_start").unwrap(), 1);
    assert_eq!(ran.store.scope_iterations(ran.id(), "root", "root.i_start").unwrap(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_static_composite_copies_its_inputs_in_by_input_name_and_its_outputs_out_under_set_to() {
    let fx = Fixture::new();
    let mut label = sh(
        "label",
        r#"printf '{"label": "%s%s"}' "$ORRERY_INPUT_N" "$ORRERY_INPUT_UNIT" > "$ORRERY_OUTPUTS""#,
        "start",
    );
    label["inputs"] = json!([{"name": "n"}, {"name": "unit"}]);
    label["outputs"] = json!([{"name": "label"}]);
    let inner = blueprint("inner", vec![start(), label, end("label")]);
    let mut produce = sh("produce", &emit(json!({"raw": 4})), "start");
    produce["outputs"] = json!([{"name": "raw"}]);
    let composite = json!({"id": "comp", "type": "system.composite",
        "params": [{"name": "blueprint", "value": {"static": "inner"}}],
        "inputs": [{"name": "n", "get_from": "raw"}, {"name": "unit", "value": "cm"}],
        "outputs": [{"name": "label", "set_to": "answer"}],
        "depends_on": [{"id": "produce"}]});
    let root = blueprint("root", vec![start(), produce, composite, end("comp")]);

    let ran = fx.run(&root, &[&inner]).await;

    ran.assert_completed();
    assert_eq!(ran.data("inner_comp", "n"), Some(json!(4)), "entered under the input's name, not its get_from");
    assert_eq!(ran.data("inner_comp", "unit"), Some(json!("cm")), "a literal input enters too");
    assert_eq!(ran.data("inner_comp", "raw"), None);
    assert_eq!(ran.data("inner_comp", "label"), Some(json!("4cm")));
    assert_eq!(ran.data("root", "answer"), Some(json!("4cm")));
    assert_eq!(ran.data("root", "label"), None, "out under set_to only");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_dynamic_session_resumes_from_the_failed_element_and_keeps_the_accumulated_outputs() {
    let fx = Fixture::new();
    let ran_file = fx.path("ran");
    let go = fx.path("go");
    let command = format!(
        "echo $ORRERY_INPUT_N >> '{}'; [ \"$ORRERY_INPUT_N\" != 2 ] || [ -f '{}' ] || exit 1; printf '{{\"sq\": %s}}' $((ORRERY_INPUT_N * ORRERY_INPUT_N)) > \"$ORRERY_OUTPUTS\"",
        ran_file.display(),
        go.display()
    );
    let mut work = sh("work", &command, "start");
    work["inputs"] = json!([{"name": "n"}]);
    work["outputs"] = json!([{"name": "sq"}]);
    let step = blueprint("step", vec![start(), work, end("work")]);
    let mut parts = sh("parts", &emit(json!({"n": {"e1": 1, "e2": 2, "e3": 3}})), "start");
    parts["outputs"] = json!([{"name": "n"}]);
    let each = json!({"id": "each", "type": "system.composite",
        "params": [{"name": "blueprint", "value": {"dynamic": {"blueprint_id": "step", "sequencer": "basic_sequencer"}}}],
        "inputs": [{"name": "n"}], "outputs": [{"name": "sq"}], "depends_on": [{"id": "parts"}]});
    let root = blueprint("root", vec![start(), parts, each, end("each")]);

    let failed = fx.run_with(&root, &[&step], json!({"elements": {"each": ["e1", "e2", "e3"]}})).await;

    failed.assert_failed_with("TOOL_FAILURE");
    assert_eq!(failed.state("step_each_1_e2.work"), TaskState::Failed);
    assert_eq!(failed.data("root", "sq"), Some(json!({"e1": 1})));
    std::fs::write(&go, "").unwrap();
    let resumed = fx.resume(failed.id()).await;

    resumed.assert_completed();
    assert_eq!(read(&ran_file), "1\n2\n2\n3\n", "the first element never ran again");
    assert_eq!(resumed.data("root", "sq"), Some(json!({"e1": 1, "e2": 4, "e3": 9})));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_skip_requested_task_is_skipped_when_it_would_dispatch_and_writes_its_defaults_for_downstream() {
    let fx = Fixture::new();
    let ran_file = fx.path("ran");
    let go = fx.path("go");
    let gate = sh("gate", &format!("[ -f '{}' ]", go.display()), "start");
    let mut t2 = sh("t2", &format!("{}; {}", append(&ran_file, "t2"), emit(json!({"o": "ran"}))), "gate");
    t2["outputs"] = json!([{"name": "o", "value": "default"}]);
    let mut t3 = sh("t3", "printf '%s\\n' \"$ORRERY_INPUT_O\" >> \"$OUT\"", "t2");
    t3["params"].as_array_mut().unwrap().push(json!({"name": "env", "value": {"OUT": ran_file.display().to_string()}}));
    t3["inputs"] = json!([{"name": "o"}]);
    let root = blueprint("root", vec![start(), gate, t2, t3, end("t3")]);
    let failed = fx.run(&root, &[]).await;
    failed.assert_failed_with("TOOL_FAILURE");
    assert_eq!(failed.state("root.t2"), TaskState::Pending);

    let done = orrery_engine::interventions::skip_task(&fx.db(), failed.id(), "t2").expect("the skip is accepted");

    assert_eq!((done.nodes[0].from, done.nodes[0].to), (TaskState::Pending, TaskState::SkipRequested));
    std::fs::write(&go, "").unwrap();
    let resumed = fx.resume(failed.id()).await;
    resumed.assert_completed();
    assert_eq!(resumed.state("root.t2"), TaskState::Skipped);
    assert_eq!(resumed.data("root", "o"), Some(json!("default")));
    assert_eq!(read(&ran_file), "default\n", "t2 never ran; t3 read its default");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_skipped_scope_end_does_not_loop_and_downstream_runs() {
    let fx = Fixture::new();
    let ran_file = fx.path("ran");
    let mut tasks = vec![start()];
    let mut scope =
        scope_tasks(json!({"retry_policy": {"retries": 2}}), sh("body", &append(&ran_file, "body"), "loop_start"));
    scope[2]["condition"] = json!("False");
    tasks.extend(scope);
    tasks.push(sh("after", &append(&ran_file, "after"), "loop_end"));
    tasks.push(end("after"));
    let root = blueprint("root", tasks);

    let ran = fx.run(&root, &[]).await;

    ran.assert_completed();
    assert_eq!(ran.state("root.loop_end"), TaskState::Skipped);
    assert_eq!(read(&ran_file), "body\nafter\n", "a scope loops only when its end task succeeds");
    assert_eq!(ran.store.scope_iterations(ran.id(), "root", "root.loop_start").unwrap(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_condition_in_an_inner_instance_sees_that_instances_session_data_not_the_callers() {
    let fx = Fixture::new();
    // The inner blueprint declares `x` (it validates) only on a task after the condition.
    let mut probe = sh("probe", "true", "start");
    probe["condition"] = json!("x == 1");
    let mut later = sh("later", "true", "probe");
    later["outputs"] = json!([{"name": "x"}]);
    let inner = blueprint("inner", vec![start(), probe, later, end("later")]);
    let mut produce = sh("produce", &emit(json!({"x": 1})), "start");
    produce["outputs"] = json!([{"name": "x"}]);
    let composite = json!({"id": "comp", "type": "system.composite",
        "params": [{"name": "blueprint", "value": {"static": "inner"}}], "depends_on": [{"id": "produce"}]});
    let root = blueprint("root", vec![start(), produce, composite, end("comp")]);

    let ran = fx.run(&root, &[&inner]).await;

    let message = ran.assert_failed_with("TASK_DISPATCH_FAILED");
    assert!(message.contains("inner_comp.probe"), "{message}");
    assert_eq!(ran.data("root", "x"), Some(json!(1)));
    assert_eq!(ran.data("inner_comp", "x"), None);
}

/// "Dynamic composites ... outputs accumulate as `{element_id: value}`" and "a skipped task
/// still writes its declared output defaults (or null)": an expanded element skipped by its
/// condition must not wipe the entries the elements before it accumulated.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_skipped_dynamic_element_keeps_the_outputs_accumulated_by_the_elements_before_it() {
    let fx = Fixture::new();
    let mut work =
        sh("work", r#"printf '{"sq": %s}' $((ORRERY_INPUT_N * ORRERY_INPUT_N)) > "$ORRERY_OUTPUTS""#, "start");
    work["inputs"] = json!([{"name": "n"}]);
    work["outputs"] = json!([{"name": "sq"}]);
    let step = blueprint("step", vec![start(), work, end("work")]);
    let mut parts = sh("parts", r#"printf '%s' '{"n": {"e1": 1, "e2": 2, "e3": 3}}' > "$ORRERY_OUTPUTS""#, "start");
    parts["outputs"] = json!([{"name": "n"}]);
    let each = json!({"id": "each", "type": "system.composite", "condition": "not off",
        "params": [{"name": "blueprint", "value": {"dynamic": {"blueprint_id": "step", "sequencer": "basic_sequencer"}}},
                   {"name": "off", "value": false}],
        "inputs": [{"name": "n"}], "outputs": [{"name": "sq", "value": -1}], "depends_on": [{"id": "parts"}]});
    let root = blueprint("root", vec![start(), parts, each, end("each")]);
    let (valid, library) = valid(&root, &[&step]);
    let (options, _) = fx.options(None);
    let params = json!({"elements": {"each": ["e1", {"element_id": "e2", "off": true}, "e3"]}});
    let params: Map<String, Value> = params.as_object().cloned().unwrap();

    let report = tokio::time::timeout(Duration::from_secs(60), run_session(&fx.db(), valid, library, params, options))
        .await
        .expect("in time")
        .expect("runs");

    assert_eq!(report.state, SessionState::Completed, "{:?}", report.error);
    let sq = fx.store().data_value(&report.session_id, "root", "sq").unwrap().expect("sq was written");
    assert_eq!(sq.get("e1"), Some(&json!(1)), "e1's entry survived the skipped e2: {sq}");
    assert_eq!(sq.get("e3"), Some(&json!(9)), "{sq}");
    assert_eq!(sq.get("e2"), Some(&json!(-1)), "the skipped element's entry is its declared default: {sq}");
}
