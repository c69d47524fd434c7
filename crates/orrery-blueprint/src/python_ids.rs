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
use crate::scope;
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
        fn items<'a>(v: Option<&'a Value>, key: &str) -> &'a [Value] {
            v.and_then(|v| v.get(key)).and_then(Value::as_array).map_or(&[], Vec::as_slice)
        }
        fn data(v: &Value) -> Option<&Value> {
            v.get("data")
        }
        let mut strings = HashSet::new();
        for task in items(data(blueprint), "tasks").iter().filter_map(data) {
            let ids = items(Some(task), "depends_on").iter().filter_map(data).filter_map(|d| d.get("id"));
            for id in ids.chain(task.get("id")).chain(task.get("scope_end")) {
                if let Value::String(s) = id {
                    strings.insert(s.clone());
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
    /// it builds the blueprint's scopes, skipping a scope whose end task's id is falsy), with why:
    /// ids of mixed kinds, or `None` among others.
    pub(crate) fn unsortable_scope(&self, blueprint: &Blueprint) -> Option<(String, String)> {
        if self.kinds.values().all(|k| *k == Kind::Str) {
            return None;
        }
        let kind = |i: &usize| self.kinds.get(blueprint.tasks[*i].id.as_str()).copied().unwrap_or(Kind::Str);
        for span in scope::scopes(blueprint).into_iter().filter(|s| !self.falsy(&blueprint.tasks[s.end].id)) {
            let kinds: HashSet<Kind> = span.members.iter().map(kind).collect();
            if span.members.len() > 1 && (kinds.contains(&Kind::None) || kinds.len() > 1) {
                let start = blueprint.tasks[span.start].id.to_string();
                let why = format!(
                    "the server sorts the ids of the tasks of scope '{start}' and cannot compare them: {}",
                    if kinds.contains(&Kind::None) { "null is one of them" } else { "strings and numbers" }
                );
                return Some((start, why));
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
