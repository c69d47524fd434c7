//! The fast path for loading: a well-formed plain blueprint deserialized straight into the
//! model, without building a JSON tree first. It gives up (returns `Err`) at the first thing
//! that is not plainly well-formed (a schema violation, a null, a duplicate key, the deprecated
//! IO `type`, an envelope), and `load` then reads the file the careful way, which reports
//! every problem with its place. Both paths must give the same blueprint: the tests and the
//! fuzz target check that.

use crate::model::*;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;
use std::fmt;

/// Why the fast path gave up; only ever used to fall back.
pub(crate) type GiveUp = serde_json::Error;

/// The blueprint, and where each of its tasks begins in `text` (the byte of its `{`; `None` for
/// a task whose first key is not as written, being escaped, or that has none).
pub(crate) fn load_plain(text: &str) -> Result<(Blueprint, Vec<Option<usize>>), GiveUp> {
    let mut de = serde_json::Deserializer::from_str(text);
    let read = de.deserialize_map(BlueprintVisitor { text })?;
    de.end()?;
    Ok(read)
}

fn give_up<E: de::Error>(why: &str) -> E {
    E::custom(why)
}

/// Keys are matched without allocating; unknown ones are kept as strings.
enum Key<'de> {
    Known(&'static str),
    Other(std::borrow::Cow<'de, str>),
}

/// Reads a key: what it is, and the key in the text when it is written there as it is.
struct KeySeed(&'static [&'static str]);

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = (Key<'de>, Option<&'de str>);
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(KeyVisitor(self.0))
    }
}

struct KeyVisitor(&'static [&'static str]);

impl<'de> Visitor<'de> for KeyVisitor {
    type Value = (Key<'de>, Option<&'de str>);
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a key")
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(match self.0.iter().find(|k| **k == v) {
            Some(k) => (Key::Known(k), Some(v)),
            None => (Key::Other(v.into()), Some(v)),
        })
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(match self.0.iter().find(|k| **k == v) {
            Some(k) => (Key::Known(k), None),
            None => (Key::Other(v.to_string().into()), None),
        })
    }
}

/// Reads the keys of an object, refusing a key seen twice (the careful path keeps the last).
struct Keys<'a, 'de, A> {
    map: A,
    known: &'static [&'static str],
    seen: u32,
    extra: &'a mut Extra,
    /// The object's first key as written in the text (not when it was escaped), once read.
    first: Option<Option<&'de str>>,
}

impl<'a, 'de, A: MapAccess<'de>> Keys<'a, 'de, A> {
    fn new(map: A, known: &'static [&'static str], extra: &'a mut Extra) -> Self {
        Keys { map, known, seen: 0, extra, first: None }
    }

    /// The next known key; unknown keys go into `extra` on the way.
    fn next(&mut self) -> Result<Option<&'static str>, A::Error> {
        loop {
            let Some((key, written)) = self.map.next_key_seed(KeySeed(self.known))? else { return Ok(None) };
            self.first.get_or_insert(written);
            match key {
                Key::Known(k) => {
                    let bit = 1 << self.known.iter().position(|x| *x == k).expect("a known key");
                    if self.seen & bit != 0 {
                        return Err(give_up("duplicate key"));
                    }
                    self.seen |= bit;
                    return Ok(Some(k));
                }
                Key::Other(k) => {
                    let value: Value = self.map.next_value()?;
                    if self.extra.insert(k.into_owned(), value).is_some() {
                        return Err(give_up("duplicate key"));
                    }
                }
            }
        }
    }
    fn value<T: Deserialize<'de>>(&mut self) -> Result<T, A::Error> {
        self.map.next_value()
    }
    fn seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, A::Error> {
        self.map.next_value_seed(seed)
    }
}

fn required<T, E: de::Error>(v: Option<T>) -> Result<T, E> {
    v.ok_or_else(|| give_up("a required key is missing"))
}

/// A list whose items come from a seed, each made into a `T` by the function.
struct ListOf<S, F>(S, F);

impl<'de, S: DeserializeSeed<'de> + Copy, F: Fn(S::Value) -> T, T> DeserializeSeed<'de> for ListOf<S, F> {
    type Value = Vec<T>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de, S: DeserializeSeed<'de> + Copy, F: Fn(S::Value) -> T, T> Visitor<'de> for ListOf<S, F> {
    type Value = Vec<T>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        // Most lists hold one item: it gets a list of its own size at once.
        let Some(first) = seq.next_element_seed(self.0)? else { return Ok(Vec::new()) };
        let first = (self.1)(first);
        let Some(second) = seq.next_element_seed(self.0)? else { return Ok(vec![first]) };
        let mut out = vec![first, (self.1)(second)];
        while let Some(item) = seq.next_element_seed(self.0)? {
            out.push((self.1)(item));
        }
        // A list grows by doubling: its spare room would be much of the model.
        out.shrink_to_fit();
        Ok(out)
    }
}

/// The tasks, and where each begins in `text` (see [`load_plain`]).
#[derive(Clone, Copy)]
struct TasksSeed<'de> {
    text: &'de str,
}

impl<'de> DeserializeSeed<'de> for TasksSeed<'de> {
    type Value = (Vec<Task>, Vec<Option<usize>>);
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for TasksSeed<'de> {
    type Value = (Vec<Task>, Vec<Option<usize>>);
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of tasks")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        // The tasks are gathered a block at a time, then moved once into a list of their
        // number: a list grown by doubling would copy them some twice over, into fresh memory
        // each time, and keep room for up to as many again.
        const BLOCK: usize = 1024;
        let (mut blocks, mut block, mut starts) = (Vec::new(), Vec::new(), Vec::new());
        while let Some((task, first_key)) = seq.next_element_seed(TaskSeed)? {
            if block.len() == BLOCK {
                blocks.push(std::mem::replace(&mut block, Vec::with_capacity(BLOCK)));
            }
            block.push(task);
            // The key's quote, after the object's `{` and only whitespace.
            let quote = first_key.map(|k| k.as_ptr() as usize - self.text.as_ptr() as usize - 1);
            starts.push(quote.map(|q| self.text[..q].trim_end_matches([' ', '\t', '\n', '\r']).len() - 1));
        }
        let mut tasks = Vec::with_capacity(blocks.len() * BLOCK + block.len());
        for block in blocks {
            tasks.extend(block);
        }
        tasks.extend(block);
        starts.shrink_to_fit();
        Ok((tasks, starts))
    }
}

struct BlueprintVisitor<'de> {
    text: &'de str,
}

impl<'de> Visitor<'de> for BlueprintVisitor<'de> {
    type Value = (Blueprint, Vec<Option<usize>>);
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a blueprint")
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        let mut extra = Extra::new();
        let mut keys = Keys::new(map, &["id", "name", "version", "description", "tasks", "dtype"], &mut extra);
        let (mut id, mut name, mut version, mut description) = (None, None, None, None);
        let (mut tasks, mut starts) = (Vec::new(), Vec::new());
        while let Some(k) = keys.next()? {
            match k {
                "id" => id = Some(keys.value()?),
                "name" => name = Some(keys.value()?),
                "version" => version = Some(keys.value()?),
                "description" => description = Some(keys.value()?),
                "tasks" => (tasks, starts) = keys.seed(TasksSeed { text: self.text })?,
                _ => return Err(give_up("an envelope or a dtype: the careful path decides")),
            }
        }
        let blueprint = Blueprint {
            id: required(id)?,
            name: required(name)?,
            version: required(version)?,
            description,
            tasks,
            extra,
        };
        Ok((blueprint, starts))
    }
}

#[derive(Clone, Copy)]
struct TaskSeed;

/// A task, and its first key as written in the text.
impl<'de> DeserializeSeed<'de> for TaskSeed {
    type Value = (Task, Option<&'de str>);
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for TaskSeed {
    type Value = (Task, Option<&'de str>);
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a task")
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        const KNOWN: &[&str] = &[
            "id",
            "type",
            "description",
            "condition",
            "scope_start",
            "scope_end",
            "inputs",
            "outputs",
            "params",
            "depends_on",
            "state",
        ];
        let mut extra = Extra::new();
        let mut keys = Keys::new(map, KNOWN, &mut extra);
        let (mut id, mut task_type, mut description, mut condition, mut scope_start, mut scope_end, mut state) =
            (None, None, None, None, None, None, None);
        let (mut inputs, mut outputs, mut params, mut depends_on) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        while let Some(k) = keys.next()? {
            match k {
                "id" => id = Some(keys.value()?),
                "type" => task_type = Some(TaskType(keys.value()?)),
                "description" => description = Some(keys.value()?),
                "condition" => condition = Some(keys.value()?),
                "scope_start" => scope_start = Some(keys.seed(ScopeStartSeed)?),
                "scope_end" => scope_end = Some(keys.value()?),
                "inputs" => {
                    inputs = keys.seed(ListOf(IoSeed("get_from"), |(io, get_from)| TaskInput { io, get_from }))?
                }
                "outputs" => outputs = keys.seed(ListOf(IoSeed("set_to"), |(io, set_to)| TaskOutput { io, set_to }))?,
                "params" => params = keys.seed(ListOf(IoSeed(""), |(io, _)| TaskParam { io }))?,
                "depends_on" => depends_on = keys.seed(ListOf(DependencySeed, |dependency| dependency))?,
                _ => {
                    let s: String = keys.value()?;
                    state = Some(
                        TaskState::parse(&s)
                            .filter(|s| s.in_schema())
                            .ok_or_else(|| give_up("a state outside the schema"))?,
                    );
                }
            }
        }
        let first_key = keys.first.flatten();
        drop(keys);
        if extra.contains_key("dtype") {
            return Err(give_up("a task with a dtype: the careful path decides"));
        }
        let task = Task {
            id: required(id)?,
            task_type: required(task_type)?,
            description,
            condition,
            scope_start: scope_start.map(Box::new),
            scope_end,
            inputs,
            outputs,
            params,
            depends_on,
            state,
            extra,
        };
        Ok((task, first_key))
    }
}

/// An IO item; the seed names its link key (`get_from`, `set_to`, or none for params).
#[derive(Clone, Copy)]
struct IoSeed(&'static str);

impl<'de> DeserializeSeed<'de> for IoSeed {
    type Value = (Io, Option<String>);
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for IoSeed {
    type Value = (Io, Option<String>);
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an IO item")
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        let known: &'static [&'static str] = match self.0 {
            "get_from" => &["name", "value", "type_hint", "description", "get_from", "type"],
            "set_to" => &["name", "value", "type_hint", "description", "set_to", "type"],
            _ => &["name", "value", "type_hint", "description", "type"],
        };
        let mut extra = Extra::new();
        let mut keys = Keys::new(map, known, &mut extra);
        let (mut name, mut value, mut type_hint, mut description, mut link) = (None, None, None, None, None);
        while let Some(k) = keys.next()? {
            match k {
                "name" => name = Some(keys.value()?),
                "value" => value = Some(keys.value::<Value>()?).filter(|v| !v.is_null()),
                "type_hint" => type_hint = Some(keys.value()?),
                "description" => description = Some(keys.value()?),
                // The deprecated alias earns a warning with its place: the careful path.
                "type" => return Err(give_up("deprecated IO type")),
                _ => link = Some(keys.value()?),
            }
        }
        drop(keys);
        // An empty link is the same as none, and the careful path drops it on save too.
        Ok((Io { name: required(name)?, value, type_hint, description, extra }, link))
    }
}

#[derive(Clone, Copy)]
struct DependencySeed;

impl<'de> DeserializeSeed<'de> for DependencySeed {
    type Value = Dependency;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Dependency, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for DependencySeed {
    type Value = Dependency;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a dependency")
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Dependency, A::Error> {
        let mut extra = Extra::new();
        let mut keys = Keys::new(map, &["id", "type"], &mut extra);
        let (mut id, mut dep_type) = (None, DependencyType::FS);
        while let Some(k) = keys.next()? {
            match k {
                "id" => id = Some(keys.value()?),
                _ => {
                    let s: &str = keys.value()?;
                    dep_type = DependencyType::parse(s).ok_or_else(|| give_up("an unknown dependency type"))?;
                }
            }
        }
        drop(keys);
        Ok(Dependency { id: required(id)?, dep_type, extra })
    }
}

#[derive(Clone, Copy)]
struct ScopeStartSeed;

impl<'de> DeserializeSeed<'de> for ScopeStartSeed {
    type Value = ScopeStart;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<ScopeStart, D::Error> {
        d.deserialize_map(self)
    }
}

/// The policies, as the schema closes them: any other key sends the file the careful way.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRetry {
    retries: u64,
    #[serde(default)]
    backoff: Option<Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWhile {
    condition: String,
    #[serde(default)]
    max_iterations: Option<u64>,
}

impl<'de> Visitor<'de> for ScopeStartSeed {
    type Value = ScopeStart;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a scope_start")
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<ScopeStart, A::Error> {
        let mut extra = Extra::new();
        let mut keys = Keys::new(map, &["name", "retry_policy", "while_policy"], &mut extra);
        let mut scope = ScopeStart::default();
        while let Some(k) = keys.next()? {
            match k {
                "name" => scope.name = Some(keys.value()?),
                "retry_policy" => {
                    let r: RawRetry = keys.value()?;
                    let backoff = match r.backoff {
                        None => None,
                        Some(Value::Object(mut m)) => {
                            let constant_ms = match m.shift_remove("constant_ms") {
                                None => None,
                                Some(v) => Some(v.as_u64().ok_or_else(|| give_up("an odd constant_ms"))?),
                            };
                            Some(Backoff { constant_ms, extra: m.into_iter().collect() })
                        }
                        Some(_) => return Err(give_up("a backoff that is not an object")),
                    };
                    scope.retry_policy = Some(RetryPolicy { retries: r.retries, backoff });
                }
                _ => {
                    let w: RawWhile = keys.value()?;
                    if w.max_iterations == Some(0) {
                        return Err(give_up("max_iterations below 1"));
                    }
                    scope.while_policy = Some(WhilePolicy { condition: w.condition, max_iterations: w.max_iterations });
                }
            }
        }
        drop(keys);
        if !extra.is_empty() {
            return Err(give_up("scope_start is closed"));
        }
        Ok(scope)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RICH: &str = r#"{"id": "b", "name": "B", "version": "1.0", "x-top": [1, {"k": 2.50}],
      "tasks": [
        {"id": "start", "type": "system.start", "state": "PENDING"},
        {"id": "s", "type": "system.sleep", "description": "d", "condition": "n > 1",
         "scope_start": {"name": "loop", "retry_policy": {"retries": 2, "backoff": {"constant_ms": 5, "jitter": 1}},
                         "while_policy": {"condition": "n > 0", "max_iterations": 3}},
         "inputs": [{"name": "n", "value": 1e400, "type_hint": "int", "get_from": "m"}],
         "outputs": [{"name": "m", "value": null, "set_to": ""}],
         "params": [{"name": "p", "value": {"z": 1, "a": [true, null]}, "unit": "mm"}],
         "depends_on": [{"id": "start", "type": "SS", "note": 1}], "x-task": "kept"},
        {"id": "end", "type": "system.end", "scope_end": "s", "depends_on": [{"id": "s"}]}]}"#;

    #[test]
    fn a_well_formed_file_with_every_feature_takes_the_fast_path_to_the_same_blueprint() {
        let (fast, _) = load_plain(RICH).expect("the fast path reads it");
        let careful = crate::load::load_carefully(RICH).expect("the careful path reads it");
        assert_eq!(fast, careful.blueprint);
        assert_eq!(
            fast.tasks[1].inputs[0].io.value.as_ref().unwrap().to_string(),
            "1e+400",
            "numbers beyond f64 are kept exactly"
        );
    }

    #[test]
    fn a_loaded_blueprint_keeps_no_spare_room_in_its_lists() {
        let text = r#"{"id": "b", "name": "B", "version": "1.0", "tasks": [
            {"id": "start", "type": "system.start", "outputs": [{"name": "a"}, {"name": "b"}, {"name": "c"}]},
            {"id": "t", "type": "x.y", "inputs": [{"name": "a"}], "params": [{"name": "p", "value": 1}],
             "depends_on": [{"id": "start"}]},
            {"id": "end", "type": "system.end", "depends_on": [{"id": "t"}]}]}"#;
        let (fast, _) = load_plain(text).expect("the fast path reads it");
        let careful = crate::load::load_carefully(text).expect("the careful path reads it").blueprint;
        for bp in [&fast, &careful] {
            assert_eq!(bp.tasks.capacity(), bp.tasks.len());
            for t in &bp.tasks {
                let rooms = [
                    (t.inputs.capacity(), t.inputs.len()),
                    (t.outputs.capacity(), t.outputs.len()),
                    (t.params.capacity(), t.params.len()),
                    (t.depends_on.capacity(), t.depends_on.len()),
                ];
                assert!(rooms.iter().all(|(room, len)| room == len), "task {}: {rooms:?}", t.id);
            }
        }
    }

    #[test]
    fn a_blueprint_of_many_blocks_of_tasks_loads_whole_and_in_order() {
        let tasks: Vec<serde_json::Value> = (0..2 * 1024 + 5)
            .map(|i| serde_json::json!({"id": format!("t{i}"), "type": "x.y", "outputs": [{"name": format!("o{i}")}]}))
            .collect();
        let text = serde_json::json!({"id": "b", "name": "B", "version": "1.0", "tasks": tasks}).to_string();
        let (fast, starts) = load_plain(&text).expect("the fast path reads it");
        assert_eq!(fast, crate::load::load_carefully(&text).unwrap().blueprint);
        assert_eq!((fast.tasks.len(), fast.tasks.capacity(), starts.len()), (2053, 2053, 2053));
        assert!(starts
            .iter()
            .zip(&fast.tasks)
            .all(|(s, t)| text[s.unwrap()..].starts_with(&format!("{{\"id\":\"{}\"", t.id))));
    }

    #[test]
    fn each_task_is_found_at_its_brace_unless_its_first_key_is_escaped() {
        let text = "{\"id\": \"b\", \"name\": \"B\", \"version\": \"1.0\", \"tasks\": [\r\n\t{ \r\n\t \"id\": \"start\", \"type\": \"system.start\"},\
                    {\"type\": \"x.y\", \"id\": \"a\"},{\"\\u0069d\": \"e\", \"type\": \"x.y\"},\n  {\"x-k\": 1, \"id\": \"k\", \"type\": \"x.y\"}]}";
        let (bp, starts) = load_plain(text).expect("the fast path reads it");
        assert_eq!(bp.tasks.len(), 4);
        let braces: Vec<usize> = text.match_indices(['{']).map(|(i, _)| i).skip(1).collect();
        assert_eq!(starts, [Some(braces[0]), Some(braces[1]), None, Some(braces[3])]);
        assert_eq!(bp.tasks[3].extra.len(), 1, "an unknown first key is kept");
    }

    #[test]
    fn anything_unusual_is_left_to_the_careful_path() {
        for odd in [
            r#"{"id": "b", "name": "B", "version": "1.0", "id": "again"}"#,
            r#"{"id": "b", "name": "B", "version": "1.0", "description": null}"#,
            r#"{"id": "b", "name": "B", "version": "1.0", "tasks": [{"id": "t", "type": "x.y", "inputs": [{"name": "i", "type": "int"}]}]}"#,
            r#"{"id": "b", "name": "B", "version": "1.0", "tasks": [{"id": "t", "type": "x.y", "depends_on": [{"id": "a", "type": "XX"}]}]}"#,
            r#"{"id": "b", "name": "B", "version": "1.0", "tasks": [{"id": "t", "type": "x.y", "scope_start": {"retry_policy": {"retries": 1.0}}}]}"#,
            r#"{"id": "b", "name": "B", "version": "1.0", "tasks": [{"id": "t", "type": "x.y", "scope_start": {"colour": 1}}]}"#,
            r#"{"dtype": "antikythera.models/Blueprint", "data": {}}"#,
            r#"{"id": "b", "name": "B"}"#,
        ] {
            assert!(load_plain(odd).is_err(), "the fast path must give up on {odd}");
        }
    }
}
