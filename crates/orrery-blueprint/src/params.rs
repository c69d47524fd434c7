//! A task's params judged against its type's params schema ([`crate::task_types`]), so that a
//! param the agent would refuse at run time is found by `orrery validate` and shown by the
//! editor beside the field, from one checker. Only the part of JSON Schema the catalogue uses is
//! read (types, enums, bounds, lengths, items, properties, `required`, `oneOf`/`anyOf`).
//!
//! The reference passes params through unread, so these are Orrery's own errors, never marked as
//! refused by the server. Two params have rules of their own and are left to them:
//! `execution_mode` on any task and everything a composite takes.

use crate::diagnostic::{task_path, Code, Diagnostic};
use crate::model::{Blueprint, Task};
use crate::task_types;
use serde_json::{Map, Value};

/// One diagnostic per param that breaks its schema, and one when alternatives that exclude each
/// other are given together. Tasks of a type Orrery does not know are not judged here: the
/// engine refuses them before a run.
pub(crate) fn check(bp: &Blueprint, out: &mut Vec<Diagnostic>) {
    // Each type's schema, made once: a large blueprint has many tasks of few types.
    let mut schemas: foldhash::HashMap<&str, Option<Value>> = Default::default();
    for (i, t) in bp.tasks.iter().enumerate() {
        if t.task_type.is_composite() {
            continue;
        }
        let schema = schemas
            .entry(t.task_type.as_str())
            .or_insert_with(|| task_types::known_type(t.task_type.as_str()).map(|known| known.params_schema()));
        if let Some(schema) = schema {
            check_task(i, t, schema, out);
        }
    }
}

fn check_task(i: usize, t: &Task, schema: &Value, out: &mut Vec<Diagnostic>) {
    let properties = field(schema, "properties").and_then(Value::as_object);
    let mut given: Vec<(&str, &Value)> = Vec::with_capacity(t.params.len());
    for (j, p) in t.params.iter().enumerate() {
        let Some(value) = &p.io.value else { continue };
        // A repeated name: only the first is used (duplicate-io-name says so), so only it is judged.
        if given.iter().any(|(name, _)| *name == p.io.name) {
            continue;
        }
        given.push((&p.io.name, value));
        if p.io.name == "execution_mode" {
            continue;
        }
        let error = match properties.and_then(|ps| member(ps, p.io.name.as_str())) {
            Some(property) => schema_error(property, value),
            None => match field(schema, "additionalProperties") {
                Some(Value::Bool(false)) => Some((String::new(), format!("{} takes no such param", t.task_type))),
                Some(other @ Value::Object(_)) => schema_error(other, value),
                _ => None,
            },
        };
        if let Some((sub, reason)) = error {
            out.push(
                Diagnostic::error(
                    Code::ParamSchema,
                    format!("{}.params[{j}].value{sub}", task_path(i)),
                    format!("task '{}': param '{}'{sub}: {reason}", t.id, p.io.name),
                )
                .task(&t.id),
            );
        }
    }
    if let Some(reason) = object_error(schema, &given) {
        out.push(
            Diagnostic::error(
                Code::ParamSchema,
                format!("{}.params", task_path(i)),
                format!("task '{}' ({}): {reason}", t.id, t.task_type),
            )
            .task(&t.id),
        );
    }
}

/// Alternatives given together: params a `oneOf` takes one of (the catalogue's branches are
/// lists of required names, and are named as such). A param left out is not judged here: the
/// editor's form marks what is required, and the agent says what it lacks when it runs, so a
/// task just added (a `shell.run` without its command yet) is no error.
fn object_error(schema: &Value, given: &[(&str, &Value)]) -> Option<String> {
    let Some(Value::Array(branches)) = field(schema, "oneOf") else { return None };
    // A branch that only requires names fits when they are all given (no copy of the values).
    let fits = |branch: &Value| match branch.as_object() {
        Some(b) if b.len() == 1 && b.contains_key("required") => {
            names(member(b, "required")).all(|n| given.iter().any(|(name, _)| *name == n))
        }
        _ => {
            let object = given.iter().map(|(name, value)| (name.to_string(), (*value).clone()));
            schema_error(branch, &Value::Object(object.collect::<Map<_, _>>())).is_none()
        }
    };
    if branches.iter().filter(|b| fits(b)).count() < 2 {
        return None;
    }
    let alternatives: Vec<String> =
        branches.iter().flat_map(|b| names(field(b, "required"))).map(|n| format!("'{n}'")).collect();
    Some(format!("takes only one of the params {}", alternatives.join(", ")))
}

/// `schema`'s `key`, found by comparing names: a schema has a few, and hashing each name
/// looked for (a dozen looks a param) cost more than the comparisons.
fn field<'a>(schema: &'a Value, key: &str) -> Option<&'a Value> {
    schema.as_object().and_then(|members| member(members, key))
}

fn member<'a>(members: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    members.iter().find(|(name, _)| *name == key).map(|(_, value)| value)
}

fn names(list: Option<&Value>) -> impl Iterator<Item = &str> {
    list.and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str)
}

/// The names of a JSON value's type, as JSON Schema calls them (a whole number is an integer).
fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0) => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn fits_type(value: &Value, wanted: &str) -> bool {
    let actual = json_type(value);
    actual == wanted || (wanted == "number" && actual == "integer")
}

fn number(schema: &Value, key: &str) -> Option<f64> {
    field(schema, key).and_then(Value::as_f64)
}

fn count(schema: &Value, key: &str) -> Option<usize> {
    field(schema, key).and_then(Value::as_u64).map(|n| n as usize)
}

/// Why `value` does not fit `schema`, or `None` when it does: the place inside the value when
/// it lies deeper (`[1]`, `.HOME`) and the reason. The first reason found is given.
pub fn schema_error(schema: &Value, value: &Value) -> Option<(String, String)> {
    let types: Vec<&str> = match field(schema, "type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(list) => names(Some(list)).collect(),
        None => Vec::new(),
    };
    let here = |reason: String| Some((String::new(), reason));
    if !types.is_empty() && !types.iter().any(|t| fits_type(value, t)) {
        return here(format!("expected {}, found {}", types.join(" or "), json_type(value)));
    }
    if let Some(Value::Array(allowed)) = field(schema, "enum") {
        if !allowed.contains(value) {
            let shown: Vec<String> = allowed.iter().map(Value::to_string).collect();
            return here(format!("expected one of {}, found {value}", shown.join(", ")));
        }
    }
    if let Some(n) = value.as_f64() {
        if let Some(min) = number(schema, "minimum").filter(|&m| n < m) {
            return here(format!("must be at least {min}, found {value}"));
        }
        if let Some(max) = number(schema, "maximum").filter(|&m| n > m) {
            return here(format!("must be at most {max}, found {value}"));
        }
        if let Some(min) = number(schema, "exclusiveMinimum").filter(|&m| n <= m) {
            return here(format!("must be more than {min}, found {value}"));
        }
        if let Some(max) = number(schema, "exclusiveMaximum").filter(|&m| n >= m) {
            return here(format!("must be less than {max}, found {value}"));
        }
    }
    if let Value::String(s) = value {
        let length = s.chars().count();
        if let Some(min) = count(schema, "minLength").filter(|&m| length < m) {
            return here(format!("must have at least {min} character(s)"));
        }
        if let Some(max) = count(schema, "maxLength").filter(|&m| length > m) {
            return here(format!("must have at most {max} character(s)"));
        }
    }
    if let Value::Array(items) = value {
        if let Some(min) = count(schema, "minItems").filter(|&m| items.len() < m) {
            return here(format!("needs at least {min} item(s)"));
        }
        if let Some(max) = count(schema, "maxItems").filter(|&m| items.len() > m) {
            return here(format!("takes at most {max} item(s)"));
        }
        if let Some(item_schema) = field(schema, "items").filter(|s| s.is_object()) {
            for (i, item) in items.iter().enumerate() {
                if let Some((sub, reason)) = schema_error(item_schema, item) {
                    return Some((format!("[{i}]{sub}"), reason));
                }
            }
        }
    }
    if let Value::Object(members) = value {
        for name in names(field(schema, "required")) {
            if !members.contains_key(name) {
                return here(format!("needs {name}"));
            }
        }
        let properties = field(schema, "properties").and_then(Value::as_object);
        for (name, inner) in members {
            let member_schema = match properties.and_then(|ps| member(ps, name)) {
                Some(s) => Some(s),
                None => match field(schema, "additionalProperties") {
                    Some(Value::Bool(false)) => return Some((format!(".{name}"), "is not allowed here".into())),
                    Some(s @ Value::Object(_)) => Some(s),
                    _ => None,
                },
            };
            if let Some((sub, reason)) = member_schema.and_then(|s| schema_error(s, inner)) {
                return Some((format!(".{name}{sub}"), reason));
            }
        }
    }
    let (one, branches) = match (field(schema, "oneOf"), field(schema, "anyOf")) {
        (Some(Value::Array(b)), _) => (true, b),
        (None, Some(Value::Array(b))) => (false, b),
        _ => return None,
    };
    let fitting = branches.iter().filter(|b| schema_error(b, value).is_none()).count();
    match fitting {
        0 => here("fits none of the forms this param takes".into()),
        n if one && n > 1 => here("fits more than one of the forms this param takes".into()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn error(schema: Value, value: Value) -> Option<(String, String)> {
        schema_error(&schema, &value)
    }

    #[test]
    fn a_value_of_the_wrong_type_is_named_with_what_was_found() {
        assert_eq!(
            error(json!({"type": "string"}), json!(3)),
            Some((String::new(), "expected string, found integer".into()))
        );
        assert_eq!(error(json!({"type": "number"}), json!(3)), None, "an integer is a number");
        assert_eq!(error(json!({"type": "integer"}), json!(2.0)), None, "2.0 is a whole number");
    }

    #[test]
    fn a_deeper_fault_gives_its_place_inside_the_value() {
        let argv = json!({"type": "array", "items": {"type": "string"}, "minItems": 1});
        assert_eq!(
            error(argv.clone(), json!(["ls", 1])),
            Some(("[1]".into(), "expected string, found integer".into()))
        );
        assert_eq!(error(argv, json!([])), Some((String::new(), "needs at least 1 item(s)".into())));
        let env = json!({"type": "object", "additionalProperties": {"type": "string"}});
        assert_eq!(error(env, json!({"HOME": true})), Some((".HOME".into(), "expected string, found boolean".into())));
    }

    #[test]
    fn bounds_lengths_and_enums_are_held() {
        assert!(error(json!({"exclusiveMinimum": 0}), json!(0)).is_some());
        assert!(error(json!({"minimum": 0}), json!(0)).is_none());
        assert!(error(json!({"maximum": 10}), json!(11)).is_some());
        assert!(error(json!({"exclusiveMaximum": 10}), json!(10)).is_some());
        assert!(error(json!({"minLength": 2}), json!("é")).is_some(), "characters are counted, not bytes");
        assert!(error(json!({"maxLength": 1}), json!("é")).is_none());
        assert!(error(json!({"maxItems": 1}), json!([1, 2])).is_some());
        assert!(error(json!({"enum": ["a", "b"]}), json!("c")).is_some());
        assert!(error(json!({"type": "object", "required": ["x"]}), json!({})).is_some());
        assert!(error(json!({"properties": {"x": {}}, "additionalProperties": false}), json!({"y": 1})).is_some());
    }

    #[test]
    fn one_of_takes_exactly_one_branch_and_any_of_at_least_one() {
        let one = json!({"oneOf": [{"type": "string"}, {"type": "string", "minLength": 1}]});
        assert_eq!(error(one.clone(), json!("x")).unwrap().1, "fits more than one of the forms this param takes");
        assert_eq!(error(one, json!(1)).unwrap().1, "fits none of the forms this param takes");
        let any = json!({"anyOf": [{"type": "string"}, {"type": "string", "minLength": 1}]});
        assert_eq!(error(any, json!("x")), None);
    }

    #[test]
    fn the_catalogues_schemas_take_what_their_agents_take() {
        let schema = |t: &str, p: &str| task_types::known_type(t).unwrap().params_schema()["properties"][p].clone();
        assert_eq!(error(schema("system.sleep", "duration"), json!(2.5)), None);
        assert_eq!(error(schema("shell.run", "argv"), json!(["ls", "-l"])), None);
        assert_eq!(error(schema("shell.run", "env"), json!({"HOME": "/root"})), None);
        assert_eq!(error(schema("shell.run", "timeout_s"), json!(0)).unwrap().1, "must be more than 0, found 0");
        assert_eq!(
            error(schema("shell.run", "log_cap_bytes"), json!(1.5)).unwrap().1,
            "expected integer, found number"
        );
        assert_eq!(
            error(schema("user_interaction.notify", "level"), json!("loud")).unwrap().1,
            r#"expected one of "info", "success", "warning", "error", found "loud""#
        );
    }
}
