//! The fast path for loading: a well-formed plain blueprint deserialized straight into the
//! model, without building a JSON tree first. It gives up (returns `Err`) at the first thing
//! that is not plainly well-formed (a schema violation, a null, a duplicate key, the deprecated
//! IO `type`, an envelope), and `load` then reads the file the careful way, which reports
//! every problem with its place. Both paths must give the same blueprint: the tests and the
//! fuzz target check that.

use crate::model::*;
use crate::skim::Structure;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Why the fast path gave up; only ever used to fall back.
pub(crate) type GiveUp = serde_json::Error;

/// The blueprint, and where each of its tasks begins in `text` (the byte of its `{`).
///
/// The top-level object and the list of tasks are read here, each value in them by serde_json
/// from where it begins, so that the place of each task is known and a large list can be read
/// from both ends of it at once ([`read_tasks`]).
pub(crate) fn load_plain(text: &str) -> Result<(Blueprint, Vec<usize>), GiveUp> {
    let mut r = Reading { text, at: 0 };
    if !r.take(b'{') {
        return Err(give_up("not an object"));
    }
    let mut extra = Extra::new();
    let (mut id, mut name, mut version, mut description, mut tasks) = (None, None, None, None, None);
    if !r.take(b'}') {
        loop {
            // A key with an escape is the careful path's.
            let key: &str = r.value()?;
            if !r.take(b':') {
                return Err(give_up("a colon is missing"));
            }
            let again = match key {
                "id" => id.replace(r.value::<String>()?).is_some(),
                "name" => name.replace(r.value::<String>()?).is_some(),
                "version" => version.replace(r.value::<String>()?).is_some(),
                "description" => description.replace(r.value::<String>()?).is_some(),
                "tasks" => tasks.replace(read_tasks(&mut r)?).is_some(),
                "dtype" => return Err(give_up("an envelope or a dtype: the careful path decides")),
                _ => extra.insert(key.to_string(), r.value::<Value>()?).is_some(),
            };
            if again {
                return Err(give_up("duplicate key"));
            }
            if r.take(b'}') {
                break;
            }
            if !r.take(b',') {
                return Err(give_up("a comma is missing"));
            }
        }
    }
    r.skip_ws();
    if r.at != text.len() {
        return Err(give_up("text after the blueprint"));
    }
    let (tasks, starts) = tasks.unwrap_or_default();
    let blueprint =
        Blueprint { id: required(id)?, name: required(name)?, version: required(version)?, description, tasks, extra };
    Ok((blueprint, starts))
}

/// A place in the text of [`load_plain`].
struct Reading<'de> {
    text: &'de str,
    at: usize,
}

impl<'de> Reading<'de> {
    fn skip_ws(&mut self) {
        let bytes = self.text.as_bytes();
        while matches!(bytes.get(self.at), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    /// Takes `byte` when it comes next, after any whitespace.
    fn take(&mut self, byte: u8) -> bool {
        self.skip_ws();
        let next = self.text.as_bytes().get(self.at) == Some(&byte);
        self.at += usize::from(next);
        next
    }

    /// The value that comes next, after any whitespace.
    fn value<T: Deserialize<'de>>(&mut self) -> Result<T, GiveUp> {
        let mut values = serde_json::Deserializer::from_str(&self.text[self.at..]).into_iter::<T>();
        let value = values.next().unwrap_or_else(|| Err(give_up("a value is missing")))?;
        self.at += values.byte_offset();
        Ok(value)
    }
}

/// From this much text after the list's `[`, the list of tasks is read from both ends at once.
const READ_APART_FROM: usize = 1 << 20;

/// The list of tasks at `r`, and where each begins. A long list is read by two threads: the
/// first from the list's start; the second skips tasks by their strings and brackets alone
/// ([`Structure`]: about a fifth of the cost of reading them) to the first that begins past
/// 9/16 of the list, so that both finish together, says where, and reads from there. When the
/// first comes to that very place, the second has read the rest of the list as the first would
/// have; should it go past it (the text is no JSON, say, and the skipping went astray), the
/// first reads on alone and the second's work is dropped. Either way the tasks are those one
/// thread reads.
fn read_tasks(r: &mut Reading<'_>) -> Result<(Vec<Task>, Vec<usize>), GiveUp> {
    if !r.take(b'[') {
        return Err(give_up("the tasks are not a list"));
    }
    if r.take(b']') {
        return Ok((Vec::new(), Vec::new()));
    }
    let read_alone = |r: &mut Reading<'_>| Ok(read_until(r, None, None)?.0.into_lists(None));
    if r.text.len() - r.at < READ_APART_FROM {
        return read_alone(r);
    }
    let (first_task, middle) = (r.at, r.at + (r.text.len() - r.at) / 16 * 9);
    let (from, passed) = (AtomicUsize::new(usize::MAX), AtomicBool::new(false));
    let text = r.text;
    std::thread::scope(|s| {
        let second = crate::threads::spawn(s, || {
            let at = task_from(text, first_task, middle).ok_or_else(|| give_up("no task past the middle"))?;
            from.store(at, Ordering::Release);
            let mut r = Reading { text, at };
            read_until(&mut r, None, Some(&passed)).map(|(tasks, _)| (tasks, r.at))
        });
        let Some(second) = second else { return read_alone(r) };
        let first = read_until(r, Some((&from, &passed)), None);
        match first {
            Ok((first, true)) => {
                let (second, end) = second.join().expect("reading tasks does not panic")?;
                r.at = end;
                Ok(first.into_lists(Some(second)))
            }
            Ok((first, false)) => {
                passed.store(true, Ordering::Relaxed);
                Ok(first.into_lists(None))
            }
            Err(e) => {
                passed.store(true, Ordering::Relaxed);
                Err(e)
            }
        }
    })
}

/// Reads tasks up to the list's `]` (the second thread: until `stop` is set), or up to the
/// place in `until` once it is said (the first thread: true when it came to that place between
/// two tasks; it sets the flag when it went past it).
fn read_until(
    r: &mut Reading<'_>,
    until: Option<(&AtomicUsize, &AtomicBool)>,
    stop: Option<&AtomicBool>,
) -> Result<(Gathered, bool), GiveUp> {
    let mut gathered = if stop.is_none() { Gathered::first(r.text.len() - r.at) } else { Gathered::default() };
    loop {
        r.skip_ws();
        if let Some((place, passed)) = until {
            let place = place.load(Ordering::Acquire);
            if r.at == place {
                return Ok((gathered, true));
            }
            if place != usize::MAX && r.at > place {
                passed.store(true, Ordering::Relaxed);
            }
        }
        if stop.is_some_and(|stop| stop.load(Ordering::Relaxed)) {
            return Err(give_up("the other thread read these tasks"));
        }
        let start = r.at;
        let TaskAt(task) = r.value()?;
        gathered.push(task, start);
        if r.take(b']') {
            return Ok((gathered, false));
        }
        if !r.take(b',') {
            return Err(give_up("a comma is missing"));
        }
    }
}

/// Where the first task of the list whose first task is at `at` that begins at `from` or after
/// begins: after a comma outside any string and bracket of the list's tasks, and any
/// whitespace. `None` when the list ends (or a bracket closes it) first.
fn task_from(text: &str, at: usize, from: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut depth = 0usize;
    for p in Structure::new(bytes, at) {
        match bytes[p] {
            b'{' | b'[' => depth += 1,
            b',' if depth == 0 => {
                let mut next = Reading { text, at: p + 1 };
                next.skip_ws();
                if next.at >= from {
                    return Some(next.at);
                }
            }
            b',' => {}
            _ => depth = depth.checked_sub(1)?,
        }
    }
    None
}

/// Tasks as they are read. The reader from the list's start puts them straight into the list
/// the blueprint keeps, with room made, once a sample is read, for as many tasks as the rest of
/// the text seems to hold: room never written to is never touched, and costs no memory. The
/// second reader's tasks are kept a block at a time and moved once, after the first's. A list
/// grown by doubling would copy its tasks some twice over, into fresh memory each time, and a
/// list made at the end would hold every task twice for a while (24 MB at 100,000 tasks).
#[derive(Default)]
struct Gathered {
    tasks: Vec<Task>,
    blocks: Vec<Vec<Task>>,
    starts: Vec<usize>,
    /// The first reader's: its tasks go straight into `tasks`.
    straight: bool,
    /// The bytes from the first reader's first task to the text's end, until room is made.
    to_size: Option<usize>,
}

impl Gathered {
    const BLOCK: usize = 1024;
    /// The tasks read before the list's room is judged.
    const SAMPLE: usize = 256;

    /// The first reader's, the list at the text's `bytes` last bytes.
    fn first(bytes: usize) -> Gathered {
        Gathered { straight: true, to_size: Some(bytes), ..Gathered::default() }
    }

    fn push(&mut self, task: Task, start: usize) {
        self.starts.push(start);
        if self.straight {
            self.tasks.push(task);
            if self.tasks.len() == Self::SAMPLE {
                self.make_room();
            }
            return;
        }
        match self.blocks.last_mut() {
            Some(block) if block.len() < Self::BLOCK => block.push(task),
            _ => {
                let mut block = Vec::with_capacity(if self.blocks.is_empty() { 16 } else { Self::BLOCK });
                block.push(task);
                self.blocks.push(block);
            }
        }
    }

    /// Room for the tasks the sample says the rest of the text holds, and an eighth more; never
    /// more than four bytes of room a byte of text (a file of small tasks then large ones), and
    /// none when the system will not give it (the list then grows as it must).
    fn make_room(&mut self) {
        let Some(bytes) = self.to_size.take() else { return };
        let sampled = (self.starts[Self::SAMPLE - 1] - self.starts[0]).max(1);
        let expected = bytes.saturating_mul(Self::SAMPLE - 1) / sampled / 8 * 9;
        let most = bytes.saturating_mul(4) / size_of::<Task>().max(1);
        let _ = self.tasks.try_reserve_exact(expected.min(most).saturating_sub(self.tasks.len()));
    }

    /// The tasks of `self` (the first reader's) then of `more` (the second's), and where each
    /// begins.
    fn into_lists(self, more: Option<Gathered>) -> (Vec<Task>, Vec<usize>) {
        let (mut tasks, mut starts) = (self.tasks, self.starts);
        if let Some(more) = more {
            tasks.reserve_exact(more.starts.len());
            more.blocks.into_iter().for_each(|block| tasks.extend(block));
            starts.extend(more.starts);
        }
        // The room not filled handed back (mimalloc leaves a list where it is when less than
        // half of it is handed back).
        tasks.shrink_to_fit();
        starts.shrink_to_fit();
        (tasks, starts)
    }
}

fn give_up<E: de::Error>(why: &str) -> E {
    E::custom(why)
}

/// Keys are matched without allocating; unknown ones are kept as strings.
enum Key<'de> {
    Known(&'static str),
    Other(std::borrow::Cow<'de, str>),
}

struct KeySeed(&'static [&'static str]);

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Key<'de>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Key<'de>, D::Error> {
        d.deserialize_str(KeyVisitor(self.0))
    }
}

struct KeyVisitor(&'static [&'static str]);

impl<'de> Visitor<'de> for KeyVisitor {
    type Value = Key<'de>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a key")
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
        Ok(match self.0.iter().find(|k| **k == v) {
            Some(k) => Key::Known(k),
            None => Key::Other(v.into()),
        })
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Key<'de>, E> {
        Ok(match self.0.iter().find(|k| **k == v) {
            Some(k) => Key::Known(k),
            None => Key::Other(v.to_string().into()),
        })
    }
}

/// Reads the keys of an object, refusing a key seen twice (the careful path keeps the last).
struct Keys<'a, A> {
    map: A,
    known: &'static [&'static str],
    seen: u32,
    extra: &'a mut Extra,
}

impl<'de, A: MapAccess<'de>> Keys<'_, A> {
    /// The next known key; unknown keys go into `extra` on the way.
    fn next(&mut self) -> Result<Option<&'static str>, A::Error> {
        loop {
            match self.map.next_key_seed(KeySeed(self.known))? {
                None => return Ok(None),
                Some(Key::Known(k)) => {
                    let bit = 1 << self.known.iter().position(|x| *x == k).expect("a known key");
                    if self.seen & bit != 0 {
                        return Err(give_up("duplicate key"));
                    }
                    self.seen |= bit;
                    return Ok(Some(k));
                }
                Some(Key::Other(k)) => {
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

#[derive(Clone, Copy)]
struct TaskSeed;

impl<'de> DeserializeSeed<'de> for TaskSeed {
    type Value = Task;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Task, D::Error> {
        d.deserialize_map(self)
    }
}

/// A task read on its own, from where it begins ([`Reading::value`]).
struct TaskAt(Task);

impl<'de> Deserialize<'de> for TaskAt {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<TaskAt, D::Error> {
        TaskSeed.deserialize(d).map(TaskAt)
    }
}

impl<'de> Visitor<'de> for TaskSeed {
    type Value = Task;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a task")
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Task, A::Error> {
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
        let mut keys = Keys { map, known: KNOWN, seen: 0, extra: &mut extra };
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
        drop(keys);
        if extra.contains_key("dtype") {
            return Err(give_up("a task with a dtype: the careful path decides"));
        }
        Ok(Task {
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
        })
    }
}

/// An IO item; the seed names its link key (`get_from`, `set_to`, or none for params).
#[derive(Clone, Copy)]
struct IoSeed(&'static str);

impl<'de> DeserializeSeed<'de> for IoSeed {
    type Value = (Io, Option<CompactString>);
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for IoSeed {
    type Value = (Io, Option<CompactString>);
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
        let mut keys = Keys { map, known, seen: 0, extra: &mut extra };
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
        Ok((Io::new(required(name)?, value, type_hint, description, extra), link))
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
        let mut keys = Keys { map, known: &["id", "type"], seen: 0, extra: &mut extra };
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
        let mut keys = Keys { map, known: &["name", "retry_policy", "while_policy"], seen: 0, extra: &mut extra };
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
        assert!(starts.iter().zip(&fast.tasks).all(|(&s, t)| text[s..].starts_with(&format!("{{\"id\":\"{}\"", t.id))));
    }

    /// A blueprint of `n` tasks around `middle` (one task's JSON), long enough to be read from
    /// both ends.
    fn long_around(n: usize, middle: serde_json::Value) -> String {
        let task = |i: usize| {
            serde_json::json!({"id": format!("t{i}"), "type": "x.y", "description": "d".repeat(200),
                "outputs": [{"name": format!("o{i}")}], "depends_on": [{"id": format!("t{}", i / 2)}]})
        };
        let mut tasks: Vec<serde_json::Value> = (0..n).map(task).collect();
        tasks.insert(n / 2, middle);
        let text = serde_json::to_string_pretty(&serde_json::json!({"id": "b", "name": "B", "version": "1.0",
            "tasks": tasks, "x-after": {"k": [1, 2]}}))
        .unwrap();
        assert!(text.len() > READ_APART_FROM);
        text
    }

    /// The fast path gives what the careful one gives, with each task's start.
    fn same_as_careful(text: &str) -> Vec<Task> {
        let (fast, starts) = load_plain(text).expect("the fast path reads it");
        assert_eq!(fast, crate::load::load_carefully(text).unwrap().blueprint);
        assert_eq!((fast.tasks.capacity(), starts.len()), (fast.tasks.len(), fast.tasks.len()));
        for (&start, t) in starts.iter().zip(&fast.tasks) {
            let read: Task = TaskSeed.deserialize(&mut serde_json::Deserializer::from_str(&text[start..])).unwrap();
            assert_eq!(&read, t, "task {} begins at {start}", t.id);
        }
        fast.tasks
    }

    #[test]
    fn a_long_list_read_from_both_ends_is_the_list_one_reader_reads() {
        let plain = long_around(6000, serde_json::json!({"id": "m", "type": "x.y"}));
        assert_eq!(same_as_careful(&plain).len(), 6001);
        // No second thread to be had: one reader reads it all.
        assert_eq!(crate::threads::refused(|| same_as_careful(&plain)).len(), 6001);
        // Half-way is in a string that seems to hold tasks.
        let in_string = "}, {\"id\": \"no\", \"type\": \"x.y\"}, {".repeat(60_000);
        let text = long_around(200, serde_json::json!({"id": "m", "type": "x.y", "description": in_string}));
        assert_eq!(same_as_careful(&text).len(), 201);
        // Half-way is in a list within a task, whose items read as tasks.
        let items: Vec<_> = (0..40_000).map(|i| serde_json::json!({"id": format!("no{i}"), "type": "x.y"})).collect();
        let text = long_around(
            200,
            serde_json::json!({"id": "m", "type": "x.y",
            "params": [{"name": "p", "value": items}]}),
        );
        assert_eq!(same_as_careful(&text).len(), 201);
    }

    #[test]
    fn a_list_whose_first_tasks_are_unlike_the_rest_loads_whole_without_spare_room() {
        let task = |i: usize, description: usize| serde_json::json!({"id": format!("t{i}"), "type": "x.y", "description": "d".repeat(description)});
        let list = |small_first: bool| -> Vec<serde_json::Value> {
            (0..24_000).map(|i| task(i, if (i < 300) == small_first { 0 } else { 200 })).collect()
        };
        for small_first in [true, false] {
            let text =
                serde_json::json!({"id": "b", "name": "B", "version": "1.0", "tasks": list(small_first)}).to_string();
            assert!(text.len() > READ_APART_FROM);
            // Room judged too large, then too small; with one reader and with two.
            assert_eq!(same_as_careful(&text).len(), 24_000);
            assert_eq!(crate::threads::refused(|| same_as_careful(&text)).len(), 24_000);
        }
    }

    #[test]
    fn the_room_made_for_the_list_follows_the_sample_and_never_exceeds_four_bytes_a_byte_of_text() {
        let one: Task =
            TaskSeed.deserialize(&mut serde_json::Deserializer::from_str(r#"{"id": "t", "type": "x.y"}"#)).unwrap();
        let room_after_sample = |bytes: usize, apart: usize| {
            let mut gathered = Gathered::first(bytes);
            (0..Gathered::SAMPLE).for_each(|i| gathered.push(one.clone(), i * apart));
            gathered.tasks.capacity()
        };
        // Tasks 100 bytes apart in 1 MB: some 10,500 of them, and an eighth more.
        let room = room_after_sample(1 << 20, 100);
        assert!((10_485..=11_900).contains(&room), "{room}");
        // Tasks a byte apart would be a million: the room stays within four bytes a byte.
        let room = room_after_sample(1 << 20, 1);
        assert!(room <= 4 * (1 << 20) / size_of::<Task>() && room >= Gathered::SAMPLE, "{room}");
    }

    /// Where the first element at or after `from` of the list whose first element is at `at`
    /// begins, as serde_json reads the elements one after the other.
    fn task_from_read(text: &str, at: usize, from: usize) -> Option<usize> {
        let mut pos = at;
        loop {
            let mut values = serde_json::Deserializer::from_str(&text[pos..]).into_iter::<de::IgnoredAny>();
            values.next()?.ok()?;
            let after = pos + values.byte_offset();
            let comma = after + text[after..].find(|c: char| !c.is_ascii_whitespace())?;
            if !text[comma..].starts_with(',') {
                return None;
            }
            pos = comma + 1 + text[comma + 1..].find(|c: char| !c.is_ascii_whitespace())?;
            if pos >= from {
                return Some(pos);
            }
        }
    }

    proptest::proptest! {
        /// The skip by brackets and commas sixty-four bytes at a time stops where reading the
        /// elements stops, whatever their strings hold.
        #[test]
        fn the_place_past_the_middle_is_where_reading_the_tasks_stops(
            items in proptest::collection::vec(crate::span::tests::json_value(), 1..12),
            pretty in proptest::prelude::any::<bool>(),
            from in proptest::prelude::any::<proptest::sample::Index>(),
        ) {
            let list = serde_json::Value::from(items);
            let text = if pretty { serde_json::to_string_pretty(&list).unwrap() } else { list.to_string() };
            let at = 1 + text[1..].find(|c: char| !c.is_ascii_whitespace()).unwrap();
            let from = from.index(text.len());
            proptest::prop_assert_eq!(task_from(&text, at, from), task_from_read(&text, at, from));
        }
    }

    #[test]
    fn the_first_reader_going_past_the_place_said_reads_on_alone_and_says_so() {
        let text = long_around(6000, serde_json::json!({"id": "m", "type": "x.y"}));
        let list = text.find("\"tasks\": [").unwrap();
        let first_task = list + text[list..].find('{').unwrap();
        // A place in a string half-way, not between two tasks.
        let place = text.len() / 2 + text[text.len() / 2..].find("dddd").unwrap();
        let (from, passed) = (AtomicUsize::new(place), AtomicBool::new(false));
        let mut r = Reading { text: &text, at: first_task };
        let (tasks, came_to_it) = read_until(&mut r, Some((&from, &passed)), None).unwrap();
        assert!(!came_to_it && passed.load(Ordering::Relaxed));
        assert_eq!(tasks.into_lists(None).0, same_as_careful(&text));
        // The second reader stops once told.
        let mut r = Reading { text: &text, at: first_task };
        assert!(read_until(&mut r, None, Some(&passed)).is_err());
    }

    #[test]
    fn a_task_the_fast_path_cannot_read_in_either_half_leaves_the_file_to_the_careful_path() {
        let text = long_around(6000, serde_json::json!({"id": "m", "type": "x.y"}));
        for id in ["t10", "t5000"] {
            // The deprecated IO `type` gets a warning with its place: the careful path's.
            let odd = text.replacen(
                &format!("\"id\": \"{id}\","),
                &format!("\"id\": \"{id}\", \"inputs\": [{{\"name\": \"i\", \"type\": \"int\"}}],"),
                1,
            );
            assert_ne!(odd, text);
            assert!(load_plain(&odd).is_err(), "task {id} is the careful path's");
            let loaded = crate::load::load(&odd).expect("the careful path reads it");
            assert!(loaded.task_starts.is_empty() && !loaded.notes.is_empty(), "{:?}", loaded.notes);
        }
    }

    #[test]
    fn each_task_is_found_at_its_brace() {
        let text = "{\"id\": \"b\", \"name\": \"B\", \"version\": \"1.0\", \"tasks\": [\r\n\t{ \r\n\t \"id\": \"start\", \"type\": \"system.start\"},\
                    {\"type\": \"x.y\", \"id\": \"a\"},{\"\\u0069d\": \"e\", \"type\": \"x.y\"},\n  {\"x-k\": 1, \"id\": \"k\", \"type\": \"x.y\"}]}";
        let (bp, starts) = load_plain(text).expect("the fast path reads it");
        assert_eq!(bp.tasks.len(), 4);
        let braces: Vec<usize> = text.match_indices(['{']).map(|(i, _)| i).skip(1).collect();
        assert_eq!(starts, braces[..4]);
        assert_eq!(bp.tasks[3].extra.len(), 1, "an unknown first key is kept");
    }

    /// serde_json stops at 128 levels; each value here is read from where it begins, so a value
    /// a level or two deeper than the whole file's limit allows is read by the fast path: it
    /// must be what the careful path (which reads on as deep as Python) makes of it.
    #[test]
    fn values_nested_near_the_parsers_limit_load_as_the_careful_path_loads_them() {
        for depth in 120..=132 {
            let deep = format!("{}1{}", "[".repeat(depth), "]".repeat(depth));
            for (at, text) in [
                (
                    "a param",
                    format!(
                        r#"{{"id": "b", "name": "B", "version": "1.0", "tasks": [{{"id": "t", "type": "x.y", "params": [{{"name": "p", "value": {deep}}}]}}]}}"#
                    ),
                ),
                (
                    "the top level",
                    format!(r#"{{"id": "b", "name": "B", "version": "1.0", "x-deep": {deep}, "tasks": []}}"#),
                ),
            ] {
                let careful = crate::load::load_carefully(&text).expect("Python reads it");
                let loaded = crate::load::load(&text).expect("it loads");
                assert_eq!(loaded.blueprint, careful.blueprint, "{depth} levels in {at}");
                assert_eq!(loaded.notes, careful.notes, "{depth} levels in {at}");
            }
        }
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
            r#"{"\u0069d": "b", "name": "B", "version": "1.0"}"#,
            "{\"id\": \"b\", \"name\": \"B\", \"version\": \"1.0\",\x0c\"tasks\": []}",
            r#"{"id": "b", "name": "B"}"#,
        ] {
            assert!(load_plain(odd).is_err(), "the fast path must give up on {odd}");
        }
    }
}
