//! Session data as tasks read and write it (docs/format.md §4), as pure functions over one
//! blueprint instance's key/value map. The session runner stores what these return.
//!
//! - An input reads `data[get_from or name]`; when that is absent or null and the input has no
//!   `get_from`, its literal `value` is used. An expanded dynamic composite reads the entry of
//!   its own element from an aggregated `{element_id: value}` map.
//! - A finished task writes every output, declared or returned, to `data[set_to or name]`: the
//!   returned value, else the declared default, else null. A skipped task writes its declared
//!   defaults (or null). A failed task writes nothing.
//! - A condition sees, later entries winning: the task's params, its resolved inputs, the
//!   dynamic element, the instance's context, then all of the instance's session data. A while
//!   condition sees the context and the session data only.
//! - A static composite's resolved inputs enter its inner instance by input name; its outputs
//!   come out from inner key `name` to outer key `set_to or name`. A dynamic composite's
//!   outputs accumulate as `{element_id: value}`.

use orrery_blueprint::condition::Namespace;
use orrery_blueprint::Task;
use serde_json::{Map, Value};

/// One blueprint instance's session data.
pub type Data = Map<String, Value>;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DataError {
    #[error("task '{task}': input '{input}' of an expanded dynamic composite must read a map keyed by element id, found {found}")]
    NotAggregated { task: String, input: String, found: String },
    #[error("task '{task}': input '{input}' has no value for element '{element_id}' (was the task that produces it skipped?)")]
    ElementMissing { task: String, input: String, element_id: String },
}

/// The element an expanded dynamic composite runs for.
pub fn element_of(task: &Task) -> Option<&Map<String, Value>> {
    task.param_value("blueprint")?.get("dynamic")?.get("element")?.as_object()
}

/// Resolves a task's inputs from its instance's data.
pub fn resolve_inputs(task: &Task, data: &Data) -> Result<Map<String, Value>, DataError> {
    let element_id = element_of(task).and_then(|e| e.get("element_id")).and_then(Value::as_str);
    let mut inputs = Map::new();
    for input in &task.inputs {
        let name = &input.io.name;
        let found = data.get(input.source_key()).filter(|v| !v.is_null());
        let value = match (found, &input.io.value) {
            (None, Some(literal)) if input.get_from.as_deref().is_none_or(str::is_empty) => literal.clone(),
            (found, _) => match element_id {
                None => found.cloned().unwrap_or(Value::Null),
                Some(element_id) => match found {
                    Some(Value::Object(per_element)) => {
                        per_element.get(element_id).cloned().ok_or_else(|| DataError::ElementMissing {
                            task: task.id.to_string(),
                            input: name.to_string(),
                            element_id: element_id.to_string(),
                        })?
                    }
                    other => {
                        return Err(DataError::NotAggregated {
                            task: task.id.to_string(),
                            input: name.to_string(),
                            found: other.map_or_else(|| "nothing".to_string(), Value::to_string),
                        })
                    }
                },
            },
        };
        inputs.insert(name.to_string(), value);
    }
    Ok(inputs)
}

/// The names a task's condition sees.
pub fn condition_namespace(
    task: &Task,
    inputs: &Map<String, Value>,
    context: &Map<String, Value>,
    data: &Data,
) -> Namespace {
    let mut ns = Namespace::new();
    ns.extend(task.params.iter().map(|p| (p.io.name.clone(), p.io.value.clone().unwrap_or(Value::Null))));
    ns.extend(inputs.iter().map(|(k, v)| (k.clone(), v.clone())));
    if let Some(element) = element_of(task) {
        ns.extend(element.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    ns.extend(context.iter().map(|(k, v)| (k.clone(), v.clone())));
    ns.extend(data.iter().map(|(k, v)| (k.clone(), v.clone())));
    ns
}

/// The names a scope's while condition sees.
pub fn while_namespace(context: &Map<String, Value>, data: &Data) -> Namespace {
    let mut ns = Namespace::new();
    ns.extend(context.iter().map(|(k, v)| (k.clone(), v.clone())));
    ns.extend(data.iter().map(|(k, v)| (k.clone(), v.clone())));
    ns
}

/// What a task that finished (with the outputs it returned) or was skipped (`None`) writes.
/// Declared outputs first, in order; then returned keys nobody declared.
pub fn outputs_to_write(task: &Task, returned: Option<&Map<String, Value>>) -> Vec<(String, Value)> {
    let mut out = Vec::with_capacity(task.outputs.len());
    for o in &task.outputs {
        let value = returned
            .and_then(|r| r.get(o.io.name.as_str()))
            .cloned()
            .or_else(|| o.io.value.clone())
            .unwrap_or(Value::Null);
        out.push((o.target_key().to_string(), value));
    }
    if let Some(returned) = returned {
        for (k, v) in returned {
            if !task.outputs.iter().any(|o| o.io.name == *k) {
                out.push((k.clone(), v.clone()));
            }
        }
    }
    out
}

/// What a composite's inner instance starts with: its resolved inputs, by input name.
pub fn composite_inputs(inputs: &Map<String, Value>) -> Vec<(String, Value)> {
    inputs.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
}

/// What a composite writes to its own instance once its inner instance ended: each output read
/// from the inner key `name`; for an expanded dynamic composite, merged into the
/// `{element_id: value}` map already in `outer`.
pub fn composite_outputs(task: &Task, inner: &Data, outer: &Data) -> Vec<(String, Value)> {
    task.outputs
        .iter()
        .map(|o| {
            let value = inner.get(o.io.name.as_str()).cloned().unwrap_or(Value::Null);
            per_element(task, o.target_key().to_string(), value, outer)
        })
        .collect()
}

/// What a skipped task writes: each declared output's default, or null. An expanded dynamic
/// composite merges it into the `{element_id: value}` map already in `outer`, as its run would
/// have: a skipped element keeps what the elements before it gathered.
pub fn skipped_outputs(task: &Task, outer: &Data) -> Vec<(String, Value)> {
    task.outputs
        .iter()
        .map(|o| per_element(task, o.target_key().to_string(), o.io.value.clone().unwrap_or(Value::Null), outer))
        .collect()
}

/// `(key, value)`, or for an expanded dynamic composite `(key, outer[key] with
/// {element_id: value} merged in)`.
fn per_element(task: &Task, key: String, value: Value, outer: &Data) -> (String, Value) {
    let Some(element_id) = element_of(task).and_then(|e| e.get("element_id")).and_then(Value::as_str) else {
        return (key, value);
    };
    let mut accumulated = match outer.get(&key) {
        Some(Value::Object(m)) => m.clone(),
        _ => Map::new(),
    };
    accumulated.insert(element_id.to_string(), value);
    (key, Value::Object(accumulated))
}

#[cfg(test)]
mod tests {
    use super::*;
    use orrery_blueprint::load;
    use serde_json::json;

    fn task(value: Value) -> Task {
        let bp = json!({"id": "b", "name": "b", "version": "1.0", "tasks": [value]});
        load(&bp.to_string()).unwrap().blueprint.tasks.remove(0)
    }

    fn data(value: Value) -> Data {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn inputs_read_their_key_and_fall_back_to_their_literal_only_without_get_from() {
        let t = task(json!({"id": "t", "type": "x.y", "inputs": [
            {"name": "a", "value": 1},
            {"name": "b", "value": 2, "get_from": "src"},
            {"name": "c"},
            {"name": "d", "value": 4}
        ]}));
        let got = resolve_inputs(&t, &data(json!({"a": null, "src": null, "d": 40}))).unwrap();
        assert_eq!(Value::Object(got), json!({"a": 1, "b": null, "c": null, "d": 40}));
    }

    #[test]
    fn an_expanded_dynamic_composite_reads_its_own_elements_entry() {
        let t = task(json!({"id": "X_1", "type": "system.composite", "inputs": [{"name": "part"}],
            "params": [{"name": "blueprint", "value": {"dynamic": {"blueprint_id": "i", "sequencer": "basic_sequencer", "element": {"element_id": "e2"}}}}]}));
        let got = resolve_inputs(&t, &data(json!({"part": {"e1": "a", "e2": "b"}}))).unwrap();
        assert_eq!(got["part"], json!("b"));
        let missing = resolve_inputs(&t, &data(json!({"part": {"e1": "a"}}))).unwrap_err();
        assert!(matches!(missing, DataError::ElementMissing { .. }), "{missing}");
        let flat = resolve_inputs(&t, &data(json!({"part": 3}))).unwrap_err();
        assert!(flat.to_string().contains("found 3"), "{flat}");
    }

    #[test]
    fn finished_tasks_write_returned_then_default_then_null_and_undeclared_keys_too() {
        let t = task(json!({"id": "t", "type": "x.y", "outputs": [
            {"name": "a", "value": 1, "set_to": "alias"},
            {"name": "b", "value": 2},
            {"name": "c"}
        ]}));
        let returned = data(json!({"b": 20, "extra": true}));
        assert_eq!(
            outputs_to_write(&t, Some(&returned)),
            [
                ("alias".into(), json!(1)),
                ("b".into(), json!(20)),
                ("c".into(), Value::Null),
                ("extra".into(), json!(true))
            ]
        );
        assert_eq!(outputs_to_write(&t, None).len(), 3, "a skipped task writes its declared defaults");
    }

    #[test]
    fn a_condition_sees_params_inputs_element_context_then_data_later_winning() {
        let t = task(
            json!({"id": "t", "type": "x.y", "params": [{"name": "n", "value": "param"}, {"name": "p", "value": 1}]}),
        );
        let inputs = data(json!({"n": "input", "i": 2}));
        let ns = condition_namespace(&t, &inputs, &data(json!({"n": "context"})), &data(json!({"d": 3})));
        assert_eq!(ns.get("n"), Some(&json!("context")));
        assert_eq!((ns.get("p"), ns.get("i"), ns.get("d")), (Some(&json!(1)), Some(&json!(2)), Some(&json!(3))));
        let ns = condition_namespace(&t, &inputs, &Map::new(), &data(json!({"n": "data"})));
        assert_eq!(ns.get("n"), Some(&json!("data")), "session data wins over everything");
        let w = while_namespace(&Map::new(), &data(json!({"d": 3})));
        assert_eq!((w.get("p"), w.get("d")), (None, Some(&json!(3))), "a while condition sees no params");
    }

    #[test]
    fn composite_outputs_come_out_under_their_outer_name_and_accumulate_per_element() {
        let static_c =
            task(json!({"id": "C", "type": "system.composite", "outputs": [{"name": "r", "set_to": "result"}]}));
        assert_eq!(composite_outputs(&static_c, &data(json!({"r": 7})), &Map::new()), [("result".into(), json!(7))]);
        let dynamic_c = task(json!({"id": "C_1", "type": "system.composite", "outputs": [{"name": "r"}],
            "params": [{"name": "blueprint", "value": {"dynamic": {"blueprint_id": "i", "sequencer": "basic_sequencer", "element": {"element_id": "e2"}}}}]}));
        let outer = data(json!({"r": {"e1": 1}}));
        assert_eq!(
            composite_outputs(&dynamic_c, &data(json!({"r": 2})), &outer),
            [("r".into(), json!({"e1": 1, "e2": 2}))]
        );
    }
}
