//! Task ids in an envelope, as the server compares them (docs/format.md §1.2). The server's
//! models take any JSON value as a task's `id`, a dependency's `id` or a `scope_end`, and compare
//! them as the Python values they are: `1`, `1.0` and `true` are one id, `5` and `"5"` two, `null`
//! is `None`; a list or an object cannot go into the set of ids (`TypeError`), and the ids of a
//! scope's tasks are sorted, which fails when they mix strings with numbers or hold `None`.
//!
//! Orrery's ids are strings. An envelope's id that is not a string is read as one text for all
//! the values Python finds equal (the integer's digits for an integral number or a boolean, the
//! float's shortest text otherwise, `None`), and never as the text of a string id of the same
//! file: two ids are then equal as Orrery compares them exactly when the server finds them equal.

use crate::model::Blueprint;
use serde_json::Value;
use std::collections::{HashMap, HashSet};

/// The kind of Python value an id is, as far as comparing ids goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    Str,
    Number,
    None,
}

/// The ids of one envelope file: the string ids it holds, and the kind of every id read.
#[derive(Debug, Default)]
pub(crate) struct Ids {
    strings: HashSet<String>,
    kinds: HashMap<String, Kind>,
}

/// Why an id cannot be read: a list or an object, which Python cannot hash.
pub(crate) struct Unhashable;

impl Ids {
    /// The string ids of an envelope blueprint's tasks, their dependencies and scope ends.
    pub(crate) fn of(blueprint: &Value) -> Self {
        let data = |v: &Value| v.get("data").cloned().unwrap_or(Value::Null);
        let mut strings = HashSet::new();
        let tasks = data(blueprint).get("tasks").and_then(Value::as_array).cloned().unwrap_or_default();
        for task in tasks.iter().map(data) {
            let deps = task.get("depends_on").and_then(Value::as_array).cloned().unwrap_or_default();
            let ids = deps.iter().map(data).filter_map(|d| d.get("id").cloned());
            for id in ids.chain(task.get("id").cloned()).chain(task.get("scope_end").cloned()) {
                if let Value::String(s) = id {
                    strings.insert(s);
                }
            }
        }
        Ids { strings, kinds: HashMap::new() }
    }

    /// The id Orrery reads for a JSON value (the module's doc).
    pub(crate) fn read(&mut self, value: &Value) -> Result<String, Unhashable> {
        let (mut text, kind) = match value {
            Value::String(s) => (s.clone(), Kind::Str),
            Value::Null => ("None".to_string(), Kind::None),
            Value::Bool(b) => (u8::from(*b).to_string(), Kind::Number),
            Value::Number(n) => (number_text(n), Kind::Number),
            Value::Array(_) | Value::Object(_) => return Err(Unhashable),
        };
        if kind != Kind::Str {
            while self.strings.contains(&text) {
                text.push_str(" (not a string)");
            }
        }
        self.kinds.insert(text.clone(), kind);
        Ok(text)
    }

    /// Whether Python finds the id read as `id` false: `""`, `0` or `None`.
    pub(crate) fn falsy(&self, id: &str) -> bool {
        match self.kinds.get(id) {
            Some(Kind::Str) | None => id.is_empty(),
            Some(Kind::Number) => id == "0",
            Some(Kind::None) => true,
        }
    }

    /// The first scope whose tasks' ids the server cannot sort (`sorted()` of its members, when
    /// it builds the blueprint's scopes), with why: ids of mixed kinds, or `None` among others.
    pub(crate) fn unsortable_scope(&self, blueprint: &Blueprint) -> Option<(String, String)> {
        if self.kinds.values().all(|k| *k == Kind::Str) {
            return None;
        }
        let mut successors: HashMap<&str, Vec<&str>> = HashMap::new();
        let mut predecessors: HashMap<&str, Vec<&str>> = HashMap::new();
        let mut ends = HashMap::new();
        for task in &blueprint.tasks {
            for dep in &task.depends_on {
                successors.entry(&dep.id).or_default().push(&task.id);
                predecessors.entry(&task.id).or_default().push(&dep.id);
            }
            if let Some(start) = &task.scope_end {
                ends.insert(start.as_str(), task.id.as_str());
            }
        }
        let reachable = |origin: &str, adjacent: &HashMap<&str, Vec<&str>>| {
            let mut seen: HashSet<String> = HashSet::new();
            let mut queue = vec![origin.to_string()];
            while let Some(id) = queue.pop() {
                if seen.insert(id.clone()) {
                    queue.extend(adjacent.get(id.as_str()).into_iter().flatten().map(|s| s.to_string()));
                }
            }
            seen
        };
        for start in blueprint.tasks.iter().filter(|t| t.scope_start.is_some()) {
            let Some(end) = ends.get(start.id.as_str()).filter(|end| !self.falsy(end)) else { continue };
            let (after, before) = (reachable(&start.id, &successors), reachable(end, &predecessors));
            let members: Vec<&String> = after.intersection(&before).collect();
            let kind = |id: &&String| self.kinds.get(id.as_str()).copied().unwrap_or(Kind::Str);
            let kinds: HashSet<Kind> = members.iter().map(kind).collect();
            let unsortable = members.len() > 1 && (kinds.contains(&Kind::None) || kinds.len() > 1);
            if unsortable {
                let why = format!(
                    "the server sorts the ids of the tasks of scope '{}' and cannot compare them: {}",
                    start.id,
                    if kinds.contains(&Kind::None) { "null is one of them" } else { "strings and numbers" }
                );
                return Some((start.id.clone(), why));
            }
        }
        None
    }
}

/// One text for every number Python finds equal: an integral value as its integer's digits
/// (exact, so `10000000000000001` and `1e16` stay two), any other as its shortest text.
fn number_text(n: &serde_json::Number) -> String {
    if let Some(i) = n.as_i64() {
        return i.to_string();
    }
    if let Some(u) = n.as_u64() {
        return u.to_string();
    }
    let f = n.as_f64().unwrap_or(f64::NAN);
    if f == 0.0 {
        "0".to_string()
    } else if f.is_finite() && f.fract() == 0.0 {
        format!("{f:.0}")
    } else {
        f.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ids_python_finds_equal_read_as_one_and_never_as_a_string_id() {
        let mut ids = Ids::of(&json!({"data": {"tasks": [{"data": {"id": "1"}}, {"data": {"id": "None"}}]}}));
        let mut read = |v: Value| ids.read(&v).ok().unwrap();
        assert_eq!(read(json!(1)), read(json!(1.0)));
        assert_eq!(read(json!(1)), read(json!(true)));
        assert_eq!(read(json!(0)), read(json!(false)));
        assert_eq!(read(json!(0)), read(json!(-0.0)));
        assert_eq!(read(json!(10_000_000_000_000_000u64)), read(json!(1e16)));
        assert_ne!(read(json!(10_000_000_000_000_001u64)), read(json!(1e16)));
        assert_ne!(read(json!(1.5)), read(json!(1)));
        assert_eq!(read(json!("1")), "1");
        assert_ne!(read(json!(1)), "1");
        assert_ne!(read(json!(null)), "None");
        assert_eq!(read(json!("2")), read(json!("2")));
        assert!(ids.read(&json!(["a"])).is_err());
        assert!(ids.read(&json!({"a": 1})).is_err());
    }

    #[test]
    fn falsy_ids_are_python_falsy_ones() {
        let mut ids = Ids::default();
        for (v, falsy) in [
            (json!(""), true),
            (json!(0), true),
            (json!(false), true),
            (json!(null), true),
            (json!("0"), false),
            (json!(2), false),
        ] {
            let id = ids.read(&v).ok().unwrap();
            assert_eq!(ids.falsy(&id), falsy, "{v}");
        }
    }
}
