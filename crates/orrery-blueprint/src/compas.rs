//! What COMPAS's JSON decoder (compas 2.15.1, `DataDecoder.object_hook`) makes of an object
//! with a `dtype` key. The server reads every upload through it, plain files too, so each such
//! object anywhere in a file is decoded, innermost first, and the first that fails refuses the
//! upload:
//!
//! - `dtype` is a string `module/Class` (one `/`); `inheritance`, when given and not null, is a
//!   list of more such strings, tried in order after `dtype` (`cls_from_dtype`);
//! - the first of them whose module imports and has the class is the class; none is a refusal;
//! - `data` must be there (`o["data"]`), and the class rebuilds itself from it;
//! - `guid`, when not null, must be a string `uuid.UUID` reads.
//!
//! Orrery knows every class the server's environment exposes, by every dtype that names it
//! (`compas_classes.tsv`, generated from antikythera-sdk 0.5.1 and its COMPAS packages by
//! `tests/compat/compas_classes.py`: `antikythera.models.blueprints/Task` is the same class as
//! `antikythera.models/Task`, `compas.geometry/Point` as `compas.geometry.point/Point`).

use crate::span::{render_path, Segment};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::OnceLock;

/// How a class is built from an envelope's `data`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Built {
    /// `Class(*data)`: Point and Vector.
    Sequence,
    /// Its own `__from_data__`, reading an object of its fields.
    Mapping,
    /// `Class(**data)`: its constructor's arguments, comma-separated, and whether it takes any
    /// other (`**kwargs`).
    Arguments { required: &'static str, optional: &'static str, open: bool },
}

impl Built {
    /// The table's second column: `sequence`, `mapping` or `required;optional[;**]`.
    fn parse(column: &'static str) -> Built {
        match column {
            "sequence" => Built::Sequence,
            "mapping" => Built::Mapping,
            arguments => {
                let mut parts = arguments.split(';');
                let (required, optional) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
                Built::Arguments { required, optional, open: parts.next() == Some("**") }
            }
        }
    }
}

/// A class the server's decoder can build, as `compas_classes.tsv` describes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Class {
    /// Where the class is defined: `compas.geometry.point.Point`.
    pub name: &'static str,
    built: Built,
    /// Its `__data__` is `Data`'s, which raises: the server cannot store it.
    abstract_data: bool,
}

impl Class {
    /// The model's class name (`Task`), for one of antikythera's blueprint models.
    pub fn model(self) -> Option<&'static str> {
        self.name.strip_prefix("antikythera.models.blueprints.")
    }

    /// The dtype Orrery writes for the class (`antikythera.models/Task`), for a model.
    pub fn model_dtype(self) -> Option<String> {
        self.model().map(|name| format!("antikythera.models/{name}"))
    }

    /// Why `Class(**data)` fails, if the class is built so and it does: a required argument
    /// missing, or one the constructor does not take.
    fn constructor_refusal(self, data: &serde_json::Map<String, Value>) -> Option<String> {
        let Built::Arguments { required, optional, open } = self.built else { return None };
        let class = self.name.rsplit('.').next().unwrap_or(self.name);
        if let Some(missing) = required.split(',').find(|k| !k.is_empty() && !data.contains_key(*k)) {
            return Some(format!("{class}() is missing its argument '{missing}'"));
        }
        let takes = |k: &str| open || required.split(',').chain(optional.split(',')).any(|a| a == k);
        data.keys().find(|k| !takes(k)).map(|k| format!("{class}() takes no argument '{k}'"))
    }
}

/// Why the constructor of the class `object` names refuses its data, if it does.
pub fn arguments_refusal(object: &serde_json::Map<String, Value>) -> Option<String> {
    let class = resolve(object.get("dtype")?, object.get("inheritance")).ok()?;
    match object.get("data") {
        Some(Value::Object(data)) => class.constructor_refusal(data),
        _ => None,
    }
}

/// Every dtype the server's decoder resolves, and the class it names.
fn classes() -> &'static HashMap<&'static str, Class> {
    static TABLE: OnceLock<HashMap<&'static str, Class>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut table = HashMap::new();
        for line in include_str!("compas_classes.tsv").lines().filter(|l| !l.starts_with('#')) {
            let mut fields = line.split('\t');
            let (Some(name), Some(built), Some(stored), Some(dtypes)) =
                (fields.next(), fields.next(), fields.next(), fields.next())
            else {
                continue;
            };
            let class = Class { name, built: Built::parse(built), abstract_data: stored == "abstract" };
            table.extend(dtypes.split(' ').map(|dtype| (dtype, class)));
        }
        table
    })
}

/// The class an object's `dtype` (and `inheritance`) resolve to, or why the decoder refuses it.
pub fn resolve(dtype: &Value, inheritance: Option<&Value>) -> Result<Class, String> {
    let mut chain = vec![dtype];
    match inheritance {
        None | Some(Value::Null) => {}
        Some(Value::Array(more)) => chain.extend(more),
        Some(other) => return Err(format!("'inheritance' must be a list of dtypes, found {other}")),
    }
    for candidate in &chain {
        let Value::String(text) = candidate else {
            return Err(format!("a dtype must be a string 'module/Class', found {candidate}"));
        };
        if text.matches('/').count() != 1 {
            return Err(format!("the dtype '{text}' is not of the form 'module/Class'"));
        }
        if let Some(class) = classes().get(text.as_str()) {
            return Ok(*class);
        }
    }
    Err(match chain.as_slice() {
        [only] => format!("no class {only} on the server: it has no such module or the module no such class"),
        _ => format!(
            "no class of the inheritance chain on the server: {}",
            Value::Array(chain.into_iter().cloned().collect())
        ),
    })
}

/// Why `uuid.UUID(guid)` fails for an envelope's `guid`, if it does (null is no guid).
pub fn guid_refusal(guid: &Value) -> Option<String> {
    let text = match guid {
        Value::Null => return None,
        Value::String(s) => s,
        other => return Some(format!("'guid' must be a UUID string, found {other}")),
    };
    let hex = text.replace("urn:", "").replace("uuid:", "");
    let hex = hex.trim_matches(['{', '}']).replace('-', "");
    let ok = hex.chars().count() == 32 && python_hex_int(&hex);
    (!ok).then(|| format!("'guid' {guid} is not a UUID (32 hexadecimal digits)"))
}

/// The zero of every run of ten Unicode decimal digits (`str.isdecimal`, Unicode 14 as in
/// CPython 3.11): `int()` reads any of them as the digit it is.
const DECIMAL_ZEROS: &[u32] = &[
    0x30, 0x660, 0x6F0, 0x7C0, 0x966, 0x9E6, 0xA66, 0xAE6, 0xB66, 0xBE6, 0xC66, 0xCE6, 0xD66, 0xDE6, 0xE50, 0xED0,
    0xF20, 0x1040, 0x1090, 0x17E0, 0x1810, 0x1946, 0x19D0, 0x1A80, 0x1A90, 0x1B50, 0x1BB0, 0x1C40, 0x1C50, 0xA620,
    0xA8D0, 0xA900, 0xA9D0, 0xA9F0, 0xAA50, 0xABF0, 0xFF10, 0x104A0, 0x10D30, 0x11066, 0x110F0, 0x11136, 0x111D0,
    0x112F0, 0x11450, 0x114D0, 0x11650, 0x116C0, 0x11730, 0x118E0, 0x11950, 0x11C50, 0x11D50, 0x11DA0, 0x16A60,
    0x16AC0, 0x16B50, 0x1D7CE, 0x1D7D8, 0x1D7E2, 0x1D7EC, 0x1D7F6, 0x1E140, 0x1E2F0, 0x1E950, 0x1FBF0,
];

fn is_decimal(c: char) -> bool {
    DECIMAL_ZEROS.iter().any(|&zero| (zero..zero + 10).contains(&(c as u32)))
}

/// Whether `int(text, 16)` reads `text` (no `-` is left to make it negative).
fn python_hex_int(text: &str) -> bool {
    let t = text.trim();
    let t = t.strip_prefix('+').unwrap_or(t);
    let t =
        t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")).map_or(t, |rest| rest.strip_prefix('_').unwrap_or(rest));
    let mut previous_digit = false;
    for c in t.chars() {
        match c {
            '_' if previous_digit => previous_digit = false,
            c if c.is_ascii_hexdigit() || is_decimal(c) => previous_digit = true,
            _ => return false,
        }
    }
    previous_digit
}

/// Whether `Point(*data)` builds: two to four arguments (x, y, z, name), the first three
/// numbers `float()` takes (a dict gives its keys, a string its characters).
fn point_data(data: &Value) -> bool {
    let number = |v: &Value| match v {
        Value::Number(_) | Value::Bool(_) => true,
        Value::String(s) => s.trim().replace('_', "").parse::<f64>().is_ok(),
        _ => false,
    };
    let items: Vec<Value> = match data {
        Value::Array(items) => items.clone(),
        Value::Object(map) => map.keys().map(|k| Value::String(k.clone())).collect(),
        Value::String(s) => s.chars().map(|c| Value::String(c.to_string())).collect(),
        _ => return false,
    };
    (2..=4).contains(&items.len()) && items.iter().take(3).all(number)
}

/// Why the decoder refuses one object with a `dtype` key, if it does: its class does not
/// resolve, it has no `data`, data its class cannot be built from (constructor arguments
/// missing or unknown), a class whose data the server cannot store, or a `guid` that is not a
/// UUID.
pub fn refusal(object: &serde_json::Map<String, Value>) -> Option<String> {
    refusal_with(object, true)
}

/// [`refusal`], a model's constructor arguments checked only when `arguments`: a loader that
/// reports a missing or unknown argument itself (with its own code and place) leaves them out.
pub fn refusal_with(object: &serde_json::Map<String, Value>, arguments: bool) -> Option<String> {
    let dtype = object.get("dtype")?;
    let class = match resolve(dtype, object.get("inheritance")) {
        Ok(class) => class,
        Err(why) => return Some(why),
    };
    let Some(data) = object.get("data") else {
        return Some(format!("the object of dtype {dtype} has no 'data'"));
    };
    match (class.built, data) {
        (Built::Sequence, data) if !point_data(data) => {
            return Some(format!(
                "{dtype} is built as Class(*data): its data must be [x, y] or [x, y, z] numbers, found {data}"
            ));
        }
        (Built::Sequence, _) => {}
        // Every other class builds itself from a mapping: Class(**data), or its own
        // __from_data__ reading data["..."].
        (_, data) if !data.is_object() => {
            return Some(format!("a {dtype} is built from an object of its fields, found {data}"));
        }
        // A model's arguments are the loader's to report, each where it is.
        (_, Value::Object(data)) if arguments || class.model().is_none() => {
            if let Some(why) = class.constructor_refusal(data) {
                return Some(why);
            }
        }
        _ => {}
    }
    if class.abstract_data {
        return Some(format!(
            "a {dtype} ({}) has no data of its own to store: the server fails on it (HTTP 500)",
            class.name
        ));
    }
    object.get("guid").and_then(guid_refusal)
}

/// Every object within `value` (itself included) that the decoder refuses, by its path below
/// `value`, and why ([`refusal_with`]). Iterative: no nesting overflows a stack.
pub fn refusals(value: &Value, arguments: bool) -> Vec<(Vec<Segment>, String)> {
    enum Step<'a> {
        Key(&'a str),
        Index(usize),
    }
    // Each node: its parent and the step to it from there (none for the root).
    fn path_of(nodes: &[(usize, Option<Step>)], mut node: usize) -> Vec<Segment> {
        let mut steps = Vec::new();
        while let Some(step) = &nodes[node].1 {
            steps.push(match step {
                Step::Key(k) => Segment::Key((*k).into()),
                Step::Index(i) => Segment::Index(*i),
            });
            node = nodes[node].0;
        }
        steps.reverse();
        steps
    }
    let mut nodes: Vec<(usize, Option<Step>)> = vec![(0, None)];
    let mut stack = vec![(value, 0)];
    let mut found = Vec::new();
    while let Some((v, node)) = stack.pop() {
        let children: Box<dyn Iterator<Item = (Step, &Value)>> = match v {
            Value::Object(map) => {
                if let Some(why) = refusal_with(map, arguments) {
                    found.push((path_of(&nodes, node), why));
                }
                Box::new(map.iter().map(|(k, x)| (Step::Key(k), x)))
            }
            Value::Array(items) => Box::new(items.iter().enumerate().map(|(i, x)| (Step::Index(i), x))),
            _ => continue,
        };
        for (step, x) in children.filter(|(_, x)| x.is_object() || x.is_array()) {
            nodes.push((node, Some(step)));
            stack.push((x, nodes.len() - 1));
        }
    }
    found
}

/// One object within `value` that the decoder refuses, if there is one ([`refusals`]).
pub fn first_refusal(value: &Value) -> Option<(String, String)> {
    let (below, why) = refusals(value, true).into_iter().next()?;
    Some((render_path(&below)[1..].to_string(), why))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_dtype_names_a_class_under_every_module_that_exposes_it() {
        let model = |d: Value| resolve(&d, None).ok().and_then(Class::model);
        assert_eq!(model(json!("antikythera.models/Task")), Some("Task"));
        assert_eq!(model(json!("antikythera.models.blueprints/Task")), Some("Task"));
        assert_eq!(model(json!("antikythera.io/Blueprint")), Some("Blueprint"));
        assert_eq!(model(json!("antikythera.models.tasks/TaskError")), None);
        let point = resolve(&json!("compas.geometry/Point"), None).unwrap();
        assert_eq!((point.name, point.model()), ("compas.geometry.point.Point", None));
        assert_eq!(resolve(&json!("compas.geometry.point/Point"), None), Ok(point));
        let message = resolve(&json!("antikythera.models/TaskAllocationMessage"), None).unwrap();
        assert_eq!((message.name, message.model()), ("antikythera.models.tasks.TaskAllocationMessage", None));
        for refused in [
            json!("antikythera.models/Nope"),
            json!("nonexistent_mod/Task"),
            json!("compas/Nope"),
            json!("compas_nonexistent/Thing"),
            json!("compas/geometry"),
            json!("compas.geometry/Point "),
            json!("Task"),
            json!("a/b/c"),
            json!(3),
        ] {
            assert!(resolve(&refused, None).is_err(), "{refused}");
        }
        let fallback = json!(["antikythera.models/Blueprint"]);
        assert_eq!(
            resolve(&json!("nonexistent_mod/Blueprint"), Some(&fallback)).ok().and_then(Class::model),
            Some("Blueprint")
        );
        assert!(resolve(&json!("antikythera.models/Task"), Some(&json!("antikythera.models/Task"))).is_err());
        assert!(resolve(&json!("nope/X"), Some(&json!([5]))).is_err());
    }

    #[test]
    fn a_model_is_built_from_its_data_as_its_constructor_takes_it() {
        let refused = |v: Value| refusal(v.as_object().unwrap());
        assert_eq!(refused(json!({"dtype": "antikythera.models/Dependency", "data": {"id": "x"}})), None);
        assert!(refused(json!({"dtype": "antikythera.models/Dependency", "data": {"id": "x", "lag": 1}}))
            .unwrap()
            .contains("'lag'"));
        assert!(refused(json!({"dtype": "antikythera.models/Scope", "data": {"id": "x"}}))
            .unwrap()
            .contains("'label'"));
        assert_eq!(
            refused(json!({"dtype": "antikythera.models/Task", "data": {"id": "a", "type": "t", "x-note": 1}})),
            None
        );
        assert!(refused(json!({"dtype": "antikythera.models/Task", "data": null})).is_some());
        assert!(refused(json!({"dtype": "compas.geometry/Point"})).unwrap().contains("no 'data'"));
        assert_eq!(refused(json!({"dtype": "compas.geometry/Point", "data": [1, 2.5, "3"]})), None);
        assert!(refused(json!({"dtype": "compas.geometry/Point", "data": {"id": "s", "label": "x"}})).is_some());
        assert!(refused(json!({"dtype": "compas.geometry/Vector", "data": [1, 2, 3, "n", 5]})).is_some());
        assert!(refused(json!({"dtype": "compas.geometry/Frame", "data": [1, 2, 3]})).is_some());
        assert_eq!(refused(json!({"dtype": "compas.geometry/Frame", "data": {"point": [0, 0, 0]}})), None);
        for abstract_data in ["compas.data/Data", "compas.geometry/Geometry", "compas.geometry/Curve"] {
            assert!(
                refused(json!({"dtype": abstract_data, "data": {}})).unwrap().contains("HTTP 500"),
                "{abstract_data}"
            );
        }
        assert_eq!(refused(json!({"dtype": "compas.colors/Color", "data": {"red": 1, "green": 0, "blue": 0}})), None);
        assert!(refused(json!({"dtype": "compas.geometry/Point", "data": [1, 2, 3], "guid": "x"}))
            .unwrap()
            .contains("guid"));
    }

    #[test]
    fn a_guid_is_what_uuid_reads() {
        for good in [
            json!("6f1c2a9e-3b4d-4e5f-8a6b-7c8d9e0f1a2b"),
            json!("6F1C2A9E3B4D4E5F8A6B7C8D9E0F1A2B"),
            json!("{6f1c2a9e-3b4d-4e5f-8a6b-7c8d9e0f1a2b}"),
            json!("urn:uuid:6f1c2a9e-3b4d-4e5f-8a6b-7c8d9e0f1a2b"),
            json!("0x1c2a9e3b4d4e5f8a6b7c8d9e0f1a2b"),
            json!(format!("1_{}", "c".repeat(30))),
            json!(format!(" {} ", "c".repeat(30))),
            json!(format!("+{}", "f".repeat(31))),
            json!(format!("0X{}", "a".repeat(30))),
            json!(format!("{}\u{FF11}\u{FF12}", "a".repeat(30))),
            json!(null),
        ] {
            assert_eq!(guid_refusal(&good), None, "{good}");
        }
        for bad in [
            json!("zzzzzzzz-3b4d-4e5f-8a6b-7c8d9e0f1a2b"),
            json!("6f1c2a9e-3b4d-4e5f-8a6b-7c8d9e0f1a2"),
            json!(""),
            json!("-f1c2a9e3b4d4e5f8a6b7c8d9e0f1a2b"),
            json!(format!("{}__", "ab".repeat(15))),
            json!(format!("_{}", "a".repeat(31))),
            json!(123),
            json!(false),
            json!(["6f1c2a9e-3b4d-4e5f-8a6b-7c8d9e0f1a2b"]),
        ] {
            assert!(guid_refusal(&bad).is_some(), "{bad}");
        }
    }
}
