//! Flattening sessions: composites, nesting, dynamic expansion and the ways it can fail.

use orrery_blueprint::{load, Blueprint, DependencyType, Library, ValidBlueprint};
use orrery_engine::plan::{build, PlanError, SessionPlan};
use serde_json::{json, Map, Value};

fn bp(value: Value) -> Blueprint {
    load(&value.to_string()).expect("the test blueprint loads").blueprint
}

/// start -> work (a composite or a plain task) -> end.
fn calling(id: &str, work: Value) -> Blueprint {
    bp(json!({"id": id, "name": id, "version": "1.0", "tasks": [
        {"id": "start", "type": "system.start"},
        work,
        {"id": "end", "type": "system.end", "depends_on": [{"id": "work"}]}
    ]}))
}

fn composite(target: Value) -> Value {
    json!({"id": "work", "type": "system.composite", "params": [{"name": "blueprint", "value": target}], "depends_on": [{"id": "start"}]})
}

fn leaf(id: &str) -> Blueprint {
    calling(id, json!({"id": "work", "type": "shell.run", "depends_on": [{"id": "start"}]}))
}

fn plan_of(root: &Blueprint, others: &[&Blueprint], params: Value) -> Result<SessionPlan, PlanError> {
    let library: Library = std::iter::once(root).chain(others.iter().copied()).collect();
    let valid = ValidBlueprint::new(root.clone(), &library).expect("the root is valid");
    let Value::Object(params) = params else { panic!("params are an object") };
    build(&valid, &library, &params)
}

fn predecessors(plan: &SessionPlan, key: &str) -> Vec<(String, DependencyType)> {
    let node = plan.node(key).unwrap_or_else(|| panic!("no node {key}"));
    plan.graph.nodes[node].predecessors.iter().map(|&(p, t)| (plan.graph.nodes[p].key.clone(), t)).collect()
}

#[test]
fn a_static_composite_wraps_its_inner_instance_with_ss_and_ff_edges() {
    let root = calling("root", composite(json!({"static": "inner"})));
    let plan = plan_of(&root, &[&leaf("inner")], json!({})).unwrap();
    let keys: Vec<&str> = plan.graph.nodes.iter().map(|n| n.key.as_str()).collect();
    assert_eq!(keys, ["root.start", "root.work", "root.end", "inner_work.start", "inner_work.work", "inner_work.end"]);
    assert_eq!(predecessors(&plan, "inner_work.start"), [("root.work".to_string(), DependencyType::SS)]);
    assert_eq!(
        predecessors(&plan, "root.work"),
        [("root.start".to_string(), DependencyType::FS), ("inner_work.end".to_string(), DependencyType::FF)]
    );
    assert_eq!(plan.instances[1].caller, Some((0, 1)));
}

#[test]
fn one_inner_blueprint_reached_twice_gets_two_instances_that_never_collide() {
    // Two mids each call `inner` from a task named "work": the reference names both instances
    // inner_work and they collide; Orrery keeps them apart.
    let mid_a = calling("mid_a", composite(json!({"static": "inner"})));
    let mid_b = calling("mid_b", composite(json!({"static": "inner"})));
    let root = bp(json!({"id": "root", "name": "root", "version": "1.0", "tasks": [
        {"id": "start", "type": "system.start"},
        {"id": "a", "type": "system.composite", "params": [{"name": "blueprint", "value": {"static": "mid_a"}}], "depends_on": [{"id": "start"}]},
        {"id": "b", "type": "system.composite", "params": [{"name": "blueprint", "value": {"static": "mid_b"}}], "depends_on": [{"id": "start"}]},
        {"id": "end", "type": "system.end", "depends_on": [{"id": "a"}, {"id": "b"}]}
    ]}));
    let inner = leaf("inner");
    let plan = plan_of(&root, &[&mid_a, &mid_b, &inner], json!({})).unwrap();
    let ids: Vec<&str> = plan.instances.iter().map(|i| i.id.as_str()).collect();
    assert_eq!(ids, ["root", "mid_a_a", "mid_b_b", "inner_work", "inner_work~2"]);
    assert_eq!(plan.graph.nodes.len(), 4 + 3 + 3 + 3 + 3);
}

#[test]
fn a_dynamic_composite_expands_into_a_chain_one_instance_per_element() {
    let root = bp(json!({"id": "root", "name": "root", "version": "1.0", "tasks": [
        {"id": "start", "type": "system.start"},
        {"id": "work", "type": "system.composite", "description": "place",
         "params": [{"name": "blueprint", "value": {"dynamic": {"blueprint_id": "inner", "sequencer": "basic_sequencer"}}}],
         "depends_on": [{"id": "start"}]},
        {"id": "end", "type": "system.end", "depends_on": [{"id": "work", "type": "FF"}]}
    ]}));
    let params = json!({"elements": {"work": ["beam-0001-aaaa", {"element_id": "beam-0002-bbbb", "length": 3}]}});
    let plan = plan_of(&root, &[&leaf("inner")], params).unwrap();
    assert_eq!(predecessors(&plan, "root.work_0")[0], ("root.start".to_string(), DependencyType::FS));
    assert_eq!(predecessors(&plan, "root.work_1")[0], ("root.work_0".to_string(), DependencyType::FS));
    assert_eq!(
        predecessors(&plan, "root.end"),
        [("root.work_1".to_string(), DependencyType::FF)],
        "the dependency keeps its type"
    );
    let ids: Vec<&str> = plan.instances.iter().map(|i| i.id.as_str()).collect();
    assert_eq!(ids, ["root", "inner_work_0_beam-000", "inner_work_1_beam-000"]);
    assert_eq!(plan.instances[2].context.get("length"), Some(&json!(3)), "the element is the context");
    let (_, task) = &plan.tasks[plan.node("root.work_1").unwrap()];
    assert_eq!(task.description.as_deref(), Some("place - beam-0002-bbbb"));
}

#[test]
fn a_dynamic_composite_over_no_elements_keeps_the_order_of_the_rest() {
    let root = bp(json!({"id": "root", "name": "root", "version": "1.0", "tasks": [
        {"id": "start", "type": "system.start"},
        {"id": "work", "type": "system.composite",
         "params": [{"name": "blueprint", "value": {"dynamic": {"blueprint_id": "inner", "sequencer": "basic_sequencer"}}}],
         "depends_on": [{"id": "start"}]},
        {"id": "end", "type": "system.end", "depends_on": [{"id": "work"}]}
    ]}));
    let plan = plan_of(&root, &[&leaf("inner")], json!({"elements": {"root.work": []}})).unwrap();
    assert_eq!(plan.graph.nodes.len(), 2);
    assert_eq!(predecessors(&plan, "root.end"), [("root.start".to_string(), DependencyType::FS)]);
}

#[test]
fn what_cannot_be_planned_is_refused_with_the_node_named() {
    let dynamic = |target: &str| {
        calling("root", composite(json!({"dynamic": {"blueprint_id": target, "sequencer": "basic_sequencer"}})))
    };
    let missing = plan_of(&dynamic("inner"), &[&leaf("inner")], json!({})).unwrap_err();
    assert!(matches!(missing, PlanError::ElementsMissing { ref node } if node == "root.work"), "{missing}");
    let bad = plan_of(&dynamic("inner"), &[&leaf("inner")], json!({"elements": {"work": [5]}})).unwrap_err();
    assert!(matches!(bad, PlanError::ElementInvalid { index: 0, .. }), "{bad}");

    let root = calling("root", composite(json!({"static": "ghost"})));
    let ghost = plan_of(&root, &[], json!({})).unwrap_err();
    assert!(ghost.to_string().contains("'ghost'"), "{ghost}");

    let broken_inner =
        bp(json!({"id": "inner", "name": "i", "version": "1.0", "tasks": [{"id": "start", "type": "system.start"}]}));
    let root = calling("root", composite(json!({"static": "inner"})));
    let invalid = plan_of(&root, &[&broken_inner], json!({})).unwrap_err();
    assert!(matches!(invalid, PlanError::InnerBlueprintInvalid { .. }), "{invalid}");
}

#[test]
fn a_cycle_of_calls_through_inner_blueprints_is_refused() {
    let a = calling("a", composite(json!({"static": "b"})));
    let b = calling("b", composite(json!({"static": "a"})));
    let library: Library = [&a, &b].into_iter().collect();
    // Validation names the cycle when both are given; planning refuses it regardless.
    let valid = ValidBlueprint::new(a.clone(), &Library::new()).expect("alone, a only warns that b is missing");
    let err = build(&valid, &library, &Map::new()).unwrap_err();
    assert!(matches!(err, PlanError::InnerBlueprintInvalid { .. }), "{err}");
    assert!(err.to_string().contains("b -> a -> b"), "the loop is spelled out: {err}");
}
