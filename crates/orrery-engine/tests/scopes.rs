//! Scope execution rules: loops (retry, while with max_iterations), nested counters, scopes of
//! inner blueprints used twice, skip cascades, and the intervention "reset a scope".

use orrery_blueprint::{load, Blueprint, Library, ValidBlueprint};
use orrery_engine::plan::{build, SessionPlan};
use orrery_engine::scheduler::NodeState;
use orrery_engine::scopes::{
    apply_skip, decide_scope_end, reset_scope, skip_cascade, Policy, ScopeDecision, ScopeId, ScopeIndex,
    SCOPE_CONDITION_ERROR,
};
use serde_json::{json, Value};

fn bp(value: Value) -> Blueprint {
    load(&value.to_string()).expect("the test blueprint loads").blueprint
}

fn plan_of(root: &Blueprint, others: &[&Blueprint]) -> SessionPlan {
    let library: Library = std::iter::once(root).chain(others.iter().copied()).collect();
    let valid = ValidBlueprint::new(root.clone(), &library).expect("the root is valid");
    build(&valid, &library, &Default::default()).expect("the plan builds")
}

fn node(plan: &SessionPlan, key: &str) -> usize {
    plan.node(key).unwrap_or_else(|| panic!("no node {key}"))
}

fn keys(plan: &SessionPlan, nodes: &[usize]) -> Vec<String> {
    let mut out: Vec<String> = nodes.iter().map(|&n| plan.graph.nodes[n].key.clone()).collect();
    out.sort();
    out
}

fn task(id: &str, after: &str) -> Value {
    json!({"id": id, "type": "shell.run", "params": [{"name": "command", "value": "true"}], "depends_on": [{"id": after}]})
}

fn composite(id: &str, inner: &str, after: &str) -> Value {
    json!({"id": id, "type": "system.composite", "params": [{"name": "blueprint", "value": {"static": inner}}], "depends_on": [{"id": after}]})
}

/// `id`: start -> loop_start (opening a scope with `policy`) -> body -> loop_end -> end.
fn looping(id: &str, policy: Value) -> Blueprint {
    let mut start = task("loop_start", "start");
    start["scope_start"] = policy;
    let mut end = task("loop_end", "body");
    end["scope_end"] = json!("loop_start");
    bp(json!({"id": id, "name": id, "version": "1.0", "tasks": [
        {"id": "start", "type": "system.start"},
        start,
        task("body", "loop_start"),
        end,
        {"id": "end", "type": "system.end", "depends_on": [{"id": "loop_end"}]}
    ]}))
}

/// Runs the end-of-scope decision as a runner would, returning the number of loops before the
/// scope continued (and the final counter).
fn loops_until_continue(index: &ScopeIndex, scope: ScopeId, condition: impl Fn(u32) -> bool) -> u32 {
    let mut counter = 0;
    for _ in 0..100 {
        match decide_scope_end(index, scope, counter, || Ok(condition(counter))) {
            ScopeDecision::Continue => return counter,
            ScopeDecision::Loop { iterations, .. } => {
                assert_eq!(iterations, counter + 1, "the counter counts extra runs");
                counter = iterations;
            }
            other => panic!("unexpected decision {other:?}"),
        }
    }
    panic!("the scope never stopped looping")
}

#[test]
fn a_retry_scope_with_two_retries_loops_twice_then_continues() {
    let plan = plan_of(&looping("root", json!({"retry_policy": {"retries": 2}})), &[]);
    let index = ScopeIndex::new(&plan);
    let scope = index.started_by(node(&plan, "root.loop_start")).expect("loop_start opens a scope");
    assert_eq!(scope.policy, Policy::Retry { retries: 2 });
    assert_eq!(scope.end, node(&plan, "root.loop_end"));
    assert_eq!(index.ended_by(scope.end).map(|s| s.id), Some(scope.id));
    assert_eq!(keys(&plan, &scope.members), ["root.body", "root.loop_end", "root.loop_start"]);
    // The condition is never asked for a retry scope.
    assert_eq!(loops_until_continue(&index, scope.id, |_| panic!("a retry scope evaluated a condition")), 2);
    match decide_scope_end(&index, scope.id, 0, || Ok(false)) {
        ScopeDecision::Loop { reset, reset_counters, .. } => {
            assert_eq!(keys(&plan, &reset), ["root.body", "root.loop_end", "root.loop_start"]);
            assert!(reset_counters.is_empty());
        }
        other => panic!("expected a loop, got {other:?}"),
    }
}

#[test]
fn a_while_scope_with_max_iterations_ten_and_a_true_condition_loops_nine_times() {
    let plan = plan_of(&looping("root", json!({"while_policy": {"condition": "True", "max_iterations": 10}})), &[]);
    let index = ScopeIndex::new(&plan);
    let scope = index.started_by(node(&plan, "root.loop_start")).unwrap().id;
    // The reference's observed scope_iterations = 9: ten runs in all.
    assert_eq!(loops_until_continue(&index, scope, |_| true), 9);
}

#[test]
fn a_while_scope_stops_as_soon_as_its_condition_is_false() {
    let plan = plan_of(&looping("root", json!({"while_policy": {"condition": "True"}})), &[]);
    let index = ScopeIndex::new(&plan);
    let scope = index.started_by(node(&plan, "root.loop_start")).unwrap().id;
    assert_eq!(decide_scope_end(&index, scope, 0, || Ok(false)), ScopeDecision::Continue);
    // Without max_iterations, it loops as long as the condition holds.
    assert_eq!(loops_until_continue(&index, scope, |counter| counter < 4), 4);
}

#[test]
fn a_while_condition_that_cannot_be_evaluated_fails_the_session() {
    let plan = plan_of(&looping("root", json!({"while_policy": {"condition": "True", "max_iterations": 3}})), &[]);
    let index = ScopeIndex::new(&plan);
    let scope = index.started_by(node(&plan, "root.loop_start")).unwrap().id;
    match decide_scope_end(&index, scope, 0, || Err("name 'missing' is not defined".into())) {
        ScopeDecision::Fail { code, message } => {
            assert_eq!(code, SCOPE_CONDITION_ERROR);
            assert!(message.contains("missing") && message.contains("root.loop_start"), "{message}");
        }
        other => panic!("expected a failure, got {other:?}"),
    }
    // Once max_iterations is reached the condition is not evaluated at all, so it cannot fail.
    assert_eq!(decide_scope_end(&index, scope, 2, || Err("never asked".into())), ScopeDecision::Continue);
}

#[test]
fn a_skip_scope_never_loops() {
    let plan = plan_of(&looping("root", json!({})), &[]);
    let index = ScopeIndex::new(&plan);
    let scope = index.started_by(node(&plan, "root.loop_start")).unwrap();
    assert_eq!(scope.policy, Policy::Skip);
    assert_eq!(decide_scope_end(&index, scope.id, 0, || Ok(true)), ScopeDecision::Continue);
}

/// outer_start -> inner_start -> inner_body -> inner_end -> outer_end, two scopes.
fn nested() -> Blueprint {
    let mut outer_start = task("outer_start", "start");
    outer_start["scope_start"] = json!({"retry_policy": {"retries": 1}});
    let mut inner_start = task("inner_start", "outer_start");
    inner_start["scope_start"] = json!({"retry_policy": {"retries": 3}});
    let mut inner_end = task("inner_end", "inner_body");
    inner_end["scope_end"] = json!("inner_start");
    let mut outer_end = task("outer_end", "inner_end");
    outer_end["scope_end"] = json!("outer_start");
    bp(json!({"id": "root", "name": "root", "version": "1.0", "tasks": [
        {"id": "start", "type": "system.start"},
        outer_start, inner_start, task("inner_body", "inner_start"), inner_end, outer_end,
        {"id": "end", "type": "system.end", "depends_on": [{"id": "outer_end"}]}
    ]}))
}

#[test]
fn when_an_outer_scope_loops_the_nested_scope_counters_are_reset() {
    let plan = plan_of(&nested(), &[]);
    let index = ScopeIndex::new(&plan);
    let outer = index.started_by(node(&plan, "root.outer_start")).unwrap();
    let inner = index.started_by(node(&plan, "root.inner_start")).unwrap();
    assert_eq!(outer.nested, [inner.id]);
    assert_eq!(inner.enclosing, [outer.id]);
    assert!(inner.nested.is_empty());
    match decide_scope_end(&index, outer.id, 0, || Ok(false)) {
        ScopeDecision::Loop { reset, reset_counters, iterations, .. } => {
            assert_eq!(reset_counters, [inner.id]);
            assert_eq!(iterations, 1);
            assert_eq!(
                keys(&plan, &reset),
                ["root.inner_body", "root.inner_end", "root.inner_start", "root.outer_end", "root.outer_start"]
            );
        }
        other => panic!("expected a loop, got {other:?}"),
    }
    // The inner scope's own loop leaves the outer counter alone.
    match decide_scope_end(&index, inner.id, 0, || Ok(false)) {
        ScopeDecision::Loop { reset, reset_counters, .. } => {
            assert!(reset_counters.is_empty());
            assert_eq!(keys(&plan, &reset), ["root.inner_body", "root.inner_end", "root.inner_start"]);
        }
        other => panic!("expected a loop, got {other:?}"),
    }
    // Resetting the outer scope by hand clears its own counter and the nested one.
    let (nodes, counters) = reset_scope(&index, outer.id).unwrap();
    assert_eq!(nodes, outer.members);
    assert_eq!(counters, [outer.id, inner.id]);
    assert!(reset_scope(&index, ScopeId(node(&plan, "root.inner_body"))).is_none());
}

/// root: start -> wrap_start (retry 1) -> a (composite of `looping`) -> wrap_end -> b (composite
/// of `looping`) -> end.
fn twice() -> (Blueprint, Blueprint) {
    let inner = looping("looping", json!({"retry_policy": {"retries": 1}}));
    let mut wrap_start = task("wrap_start", "start");
    wrap_start["scope_start"] = json!({"retry_policy": {"retries": 1}});
    let mut wrap_end = task("wrap_end", "a");
    wrap_end["scope_end"] = json!("wrap_start");
    let root = bp(json!({"id": "root", "name": "root", "version": "1.0", "tasks": [
        {"id": "start", "type": "system.start"},
        wrap_start,
        composite("a", "looping", "wrap_start"),
        wrap_end,
        composite("b", "looping", "wrap_end"),
        {"id": "end", "type": "system.end", "depends_on": [{"id": "b"}]}
    ]}));
    (root, inner)
}

#[test]
fn one_inner_blueprint_used_twice_gives_two_independent_scopes() {
    let (root, inner) = twice();
    let plan = plan_of(&root, &[&inner]);
    let index = ScopeIndex::new(&plan);
    let a = index.by_key("looping_a.loop_start").expect("the scope inside a");
    let b = index.by_key("looping_b.loop_start").expect("the scope inside b");
    assert_ne!(a.id, b.id);
    assert_eq!(keys(&plan, &a.members), ["looping_a.body", "looping_a.loop_end", "looping_a.loop_start"]);
    assert_eq!(keys(&plan, &b.members), ["looping_b.body", "looping_b.loop_end", "looping_b.loop_start"]);
    // The reference's search escapes through I.end -> C -> I.start and takes in the whole inner
    // instance and the running composite; Orrery's stays inside the instance.
    assert!(!a.members.contains(&node(&plan, "root.a")));
    // Their counters are separate: a at its last run continues, b at its first loops.
    assert_eq!(decide_scope_end(&index, a.id, 1, || Ok(false)), ScopeDecision::Continue);
    match decide_scope_end(&index, b.id, 0, || Ok(false)) {
        ScopeDecision::Loop { reset, .. } => {
            assert!(reset.iter().all(|&n| plan.graph.nodes[n].key.starts_with("looping_b.")), "{reset:?}")
        }
        other => panic!("expected a loop, got {other:?}"),
    }
}

#[test]
fn a_loop_around_a_composite_resets_its_inner_nodes_and_the_inner_scope_counter() {
    let (root, inner) = twice();
    let plan = plan_of(&root, &[&inner]);
    let index = ScopeIndex::new(&plan);
    let wrap = index.by_key("root.wrap_start").unwrap();
    let a = index.by_key("looping_a.loop_start").unwrap();
    let b = index.by_key("looping_b.loop_start").unwrap();
    assert_eq!(wrap.nested, [a.id], "the scope inside a is nested, the one inside b is not");
    let inner_a = ["looping_a.body", "looping_a.end", "looping_a.loop_end", "looping_a.loop_start", "looping_a.start"];
    assert_eq!(keys(&plan, &wrap.inner_members), inner_a);
    match decide_scope_end(&index, wrap.id, 0, || Ok(false)) {
        ScopeDecision::Loop { reset, inner_reset, reset_counters, .. } => {
            let mut expected: Vec<String> =
                ["root.a", "root.wrap_end", "root.wrap_start"].iter().map(|s| s.to_string()).collect();
            expected.extend(inner_a.iter().map(|s| s.to_string()));
            expected.sort();
            assert_eq!(keys(&plan, &reset), expected);
            assert_eq!(keys(&plan, &inner_reset), inner_a);
            assert_eq!(reset_counters, [a.id]);
            assert!(!reset_counters.contains(&b.id));
        }
        other => panic!("expected a loop, got {other:?}"),
    }
}

fn calling(id: &str, work: Value) -> Blueprint {
    bp(json!({"id": id, "name": id, "version": "1.0", "tasks": [
        {"id": "start", "type": "system.start"},
        work,
        {"id": "end", "type": "system.end", "depends_on": [{"id": "work"}]}
    ]}))
}

#[test]
fn a_skipped_composite_skips_its_inner_instance_and_the_instances_nested_in_it() {
    let leaf = calling("leaf", task("work", "start"));
    let mid = calling("mid", composite("work", "leaf", "start"));
    let root = calling("root", composite("work", "mid", "start"));
    let plan = plan_of(&root, &[&mid, &leaf]);
    let index = ScopeIndex::new(&plan);
    let work = node(&plan, "root.work");
    let skipped = skip_cascade(&plan, &index, work);
    assert_eq!(
        keys(&plan, &skipped),
        ["leaf_work.end", "leaf_work.start", "leaf_work.work", "mid_work.end", "mid_work.start", "mid_work.work"]
    );
    assert!(!skipped.contains(&work), "the skipped node itself is not in its cascade");
    // A plain task drags nothing along.
    assert!(skip_cascade(&plan, &index, node(&plan, "root.start")).is_empty());
    // Applying it leaves finished nodes alone.
    let mut states = vec![NodeState::Pending; plan.graph.nodes.len()];
    states[node(&plan, "mid_work.start")] = NodeState::Succeeded;
    states[node(&plan, "leaf_work.work")] = NodeState::SkipRequested;
    let changed = apply_skip(&mut states, &skipped);
    assert_eq!(changed.len(), 5);
    assert_eq!(states[node(&plan, "mid_work.start")], NodeState::Succeeded);
    assert_eq!(states[node(&plan, "leaf_work.work")], NodeState::Skipped);
    assert_eq!(states[node(&plan, "root.end")], NodeState::Pending);
}

#[test]
fn a_skipped_scope_start_skips_the_rest_of_its_scope_with_inner_nodes() {
    let (root, inner) = twice();
    let plan = plan_of(&root, &[&inner]);
    let index = ScopeIndex::new(&plan);
    let skipped = skip_cascade(&plan, &index, node(&plan, "root.wrap_start"));
    assert_eq!(
        keys(&plan, &skipped),
        [
            "looping_a.body",
            "looping_a.end",
            "looping_a.loop_end",
            "looping_a.loop_start",
            "looping_a.start",
            "root.a",
            "root.wrap_end",
        ]
    );
    // Nothing after the scope's end is touched.
    assert!(!skipped.contains(&node(&plan, "root.b")));
    assert!(!skipped.contains(&node(&plan, "root.end")));
}
