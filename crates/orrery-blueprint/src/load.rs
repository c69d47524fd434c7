//! Reading a blueprint file, plain JSON or COMPAS envelopes (docs/format.md §1).
//!
//! Loading checks what the reference's JSON schema checks (types, required keys, enums,
//! ranges, the closed `scope_start` object) and reports every violation at once, each with its
//! JSON path, line and column. Anything the schema lets through is loaded, including keys
//! Orrery does not know: they are kept for saving, and validation judges them.

use crate::compas;
use crate::diagnostic::{self, Code, Diagnostic};
use crate::json;
use crate::model::*;
use crate::python_ids::Ids;
use crate::span::{self, render_path, Segment};
use serde_json::{Map, Value};

/// Which of the two encodings a file used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Encoding {
    /// The antikythera blueprint JSON.
    #[default]
    Plain,
    /// COMPAS `{"dtype", "guid", "data"}` envelopes, as the server stores blueprints.
    Compas,
}

impl Encoding {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Plain => "antikythera",
            Self::Compas => "compas",
        }
    }
}

pub const DTYPE_BLUEPRINT: &str = "antikythera.models/Blueprint";
pub const DTYPE_TASK: &str = "antikythera.models/Task";
pub const DTYPE_DEPENDENCY: &str = "antikythera.models/Dependency";
pub const DTYPE_INPUT: &str = "antikythera.models/TaskInput";
pub const DTYPE_OUTPUT: &str = "antikythera.models/TaskOutput";
pub const DTYPE_PARAM: &str = "antikythera.models/TaskParam";
pub const DTYPE_SCOPE: &str = "antikythera.models/Scope";

/// A loaded file: the blueprint, how it was encoded, and what loading noticed on the way
/// (warnings, and the errors of a file whose bytes were not plain UTF-8 or whose JSON only
/// Python reads: the blueprint in it loads, but the file cannot be kept as it is).
#[derive(Debug, Clone)]
pub struct Loaded {
    pub blueprint: Blueprint,
    pub encoding: Encoding,
    pub notes: Vec<Diagnostic>,
    /// Where each task's object begins in the text (the byte of its `{`), when the fast path
    /// read the file: the diagnostics about a task are placed from there, not by a scan of the
    /// whole text. Empty after the careful path.
    pub task_starts: Vec<usize>,
}

/// A file that cannot be loaded, with every problem found.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{}", .diagnostics.first().map(|d| d.message.as_str()).unwrap_or("cannot load the blueprint"))]
pub struct LoadError {
    pub diagnostics: Vec<Diagnostic>,
}

/// Loads a blueprint from text. Diagnostics carry line and column.
pub fn load(text: &str) -> Result<Loaded, LoadError> {
    if let Ok((blueprint, task_starts)) = crate::typed_load::load_plain(text) {
        return Ok(Loaded { blueprint, encoding: Encoding::Plain, notes: Vec::new(), task_starts });
    }
    load_carefully(text)
}

/// The careful path: parse to a JSON tree, then read it reporting every problem.
pub fn load_carefully(text: &str) -> Result<Loaded, LoadError> {
    let mut notes = Vec::new();
    let (value, nonstandard) = match serde_json::from_str::<Value>(text) {
        Ok(v) => (v, None),
        Err(e) if json::is_recursion_limit(&e) => {
            let (value, deep) = read_deep(text)?;
            notes.extend(deep);
            (value, None)
        }
        Err(e) => match python_only_json(text) {
            // Python's json (the reference's parser) takes these; Orrery loads what it can so the
            // rest is still checked, and says why it cannot keep the file as it is.
            Some((v, what)) => (v, Some((e, what))),
            None => {
                let offset = span::offset_of_line_column(text, e.line(), e.column());
                let path = render_path(&span::path_at(text, offset));
                let mut d = Diagnostic::error(Code::JsonSyntax, path, format!("not valid JSON: {e}")).rejected();
                d.line = Some(e.line());
                d.column = Some(e.column());
                return Err(LoadError { diagnostics: vec![d] });
            }
        },
    };
    let result = from_value(value);
    let place = |mut diagnostics: Vec<Diagnostic>| {
        diagnostic::place_all(text, &[], diagnostics.iter_mut().collect());
        diagnostics
    };
    let nonstandard = nonstandard.map(|(e, what)| {
        let mut d = Diagnostic::error(
            Code::JsonNonStandard,
            "$",
            format!("{what} is not JSON (Python's parser takes it, Orrery cannot keep it; saving would lose it): {e}"),
        );
        d.line = Some(e.line());
        d.column = Some(e.column());
        d
    });
    notes.extend(nonstandard);
    match result {
        Ok(mut loaded) => {
            loaded.notes = place(loaded.notes);
            loaded.notes.extend(notes);
            Ok(loaded)
        }
        Err(e) => {
            let mut diagnostics = place(e.diagnostics);
            diagnostics.extend(notes);
            Err(LoadError { diagnostics })
        }
    }
}

/// A text nested deeper than serde_json reads by default, read as deep as Python reads
/// (docs/format.md §1.1): the value, and a warning when only some servers would read it. Deeper
/// than Python reads is the error the server refuses the file for.
fn read_deep(text: &str) -> Result<(Value, Option<Diagnostic>), LoadError> {
    let (depth, at) = json::python_depth(text);
    let (line, column) = span::line_column_at(text, at);
    let found = |severity, message: String| {
        // The place is the line and column: a path as deep as the nesting would be as long.
        let mut d = Diagnostic::new(Code::JsonDepth, severity, "$", message);
        (d.line, d.column, d.byte_offset) = (Some(line), Some(column), Some(at));
        d
    };
    if depth > json::PYTHON_READS {
        let d = found(
            diagnostic::Severity::Error,
            format!(
                "the file nests {depth} levels deep here: Python's json (the server's parser) stops at {} levels with a RecursionError, so the server refuses it",
                json::PYTHON_READS
            ),
        )
        .rejected();
        return Err(LoadError { diagnostics: vec![d] });
    }
    let value = json::from_str_deep::<Value>(text, json::PYTHON_READS).map_err(|e| {
        let mut d = Diagnostic::error(Code::JsonSyntax, "$", format!("not valid JSON: {e}")).rejected();
        (d.line, d.column) = (Some(e.line()), Some(e.column()));
        LoadError { diagnostics: vec![d] }
    })?;
    let warning = (depth > json::SERVER_READS).then(|| {
        found(
            diagnostic::Severity::Warning,
            format!(
                "the file nests {depth} levels deep here: Python's json reads up to {} levels, but a server calls it from deeper in its stack and refused beyond about {} in a measurement; keep values under {} levels",
                json::PYTHON_READS,
                json::SERVER_READS,
                json::SERVER_READS
            ),
        )
    });
    Ok((value, warning))
}

/// Text that only Python's json module reads: `NaN`, `Infinity` and `-Infinity` literals, and
/// lone UTF-16 surrogate escapes. Returns the value with those replaced (null, U+FFFD).
fn python_only_json(text: &str) -> Option<(Value, &'static str)> {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut what = None;
    let mut i = 0;
    let mut in_string = false;
    while i < bytes.len() {
        let rest = &text[i..];
        if in_string {
            if rest.starts_with("\\\\") || rest.starts_with("\\\"") {
                out.push_str(&rest[..2]);
                i += 2;
                continue;
            }
            if let Some(code) =
                rest.strip_prefix("\\u").and_then(|r| r.get(..4)).and_then(|h| u16::from_str_radix(h, 16).ok())
            {
                let high = (0xD800..0xDC00).contains(&code);
                let low = (0xDC00..0xE000).contains(&code);
                let paired = high
                    && rest[6..]
                        .strip_prefix("\\u")
                        .and_then(|r| r.get(..4))
                        .and_then(|h| u16::from_str_radix(h, 16).ok())
                        .is_some_and(|c| (0xDC00..0xE000).contains(&c));
                if (high && !paired) || low {
                    out.push_str("\\ufffd");
                    what = Some("a lone UTF-16 surrogate escape");
                    i += 6;
                    continue;
                }
                let n = if paired { 12 } else { 6 };
                out.push_str(&rest[..n]);
                i += n;
                continue;
            }
            if bytes[i] == b'"' {
                in_string = false;
            }
        } else if bytes[i] == b'"' {
            in_string = true;
        } else {
            let token = ["-Infinity", "Infinity", "NaN"].into_iter().find(|t| rest.starts_with(t));
            if let Some(t) = token {
                out.push_str("null");
                what = Some("a NaN or Infinity literal");
                i += t.len();
                continue;
            }
        }
        let c = rest.chars().next()?;
        out.push(c);
        i += c.len_utf8();
    }
    let what = what?;
    json::from_str_deep(&out, json::PYTHON_READS).ok().map(|v| (v, what))
}

/// The models that have an `id`, which the server reads of a dependency.
const HAS_ID: &[&str] = &["Dependency", "Task", "Scope", "Blueprint"];

/// The models of a task's inputs and params: the server reads their `name` and `value`.
const TASK_IO: &[&str] = &["TaskIO", "TaskInput", "TaskOutput", "TaskParam"];

/// The antikythera model an envelope's dtype names (`Task`), if it names one.
fn model_of(value: &Value) -> Option<&'static str> {
    compas::resolve(value.get("dtype")?, value.get("inheritance")).ok()?.model()
}

/// Whether a JSON value is a COMPAS envelope: an object with both `dtype` and `data`.
fn is_envelope(value: &Value) -> bool {
    value.get("dtype").is_some() && value.get("data").is_some()
}

/// The encoding a text is in, as loading decides it, whether or not the blueprint in it loads:
/// what an editor asks before it converts an envelope to plain JSON to edit it. Text that is not
/// JSON (even the Python-only kind) is plain.
pub fn encoding_of(text: &str) -> Encoding {
    let value =
        json::from_str_deep::<Value>(text, json::PYTHON_READS).ok().or_else(|| python_only_json(text).map(|(v, _)| v));
    match value {
        Some(v) if is_envelope(&v) => Encoding::Compas,
        _ => Encoding::Plain,
    }
}

/// Loads a blueprint from a parsed JSON value (no positions in diagnostics). The value is
/// consumed: its strings and values move into the blueprint instead of being copied.
pub fn from_value(value: Value) -> Result<Loaded, LoadError> {
    let compas = is_envelope(&value);
    let ids = if compas { Ids::of(&value) } else { Ids::default() };
    let mut reader =
        Reader { path: Vec::new(), problems: Vec::new(), notes: Vec::new(), compas, task_id: None, ids, kept: None };
    // The decoder decodes every object with a dtype, wherever it is, before the models read
    // anything; the first it cannot build refuses the upload. A missing or unknown constructor
    // argument of a model is reported as the reader meets it, key by key. One inside a value
    // Orrery keeps as data (an input's, output's or param's value, a key it does not know) does
    // not stop the load: validation reports it on its task, as for a plain file.
    let refused = if compas { compas::refusals(&value, false) } else { Vec::new() };
    if !refused.is_empty() {
        reader.kept = Some(Vec::new());
    }
    let blueprint = reader.blueprint(value);
    let kept = reader.kept.take().unwrap_or_default();
    let refused = refused.into_iter().filter(|(below, _)| !kept.iter().any(|kept| below.starts_with(kept)));
    let refused: Vec<Diagnostic> = refused
        .map(|(below, why)| Diagnostic::error(Code::CompasObject, render_path(&below), why).rejected())
        .collect();
    reader.problems.splice(0..0, refused);
    if let Some((start, why)) = blueprint.as_ref().and_then(|b| reader.ids.unsortable_scope(b)) {
        reader.problems.push(Diagnostic::error(Code::SchemaType, "$", why).task(&start).rejected());
    }
    if reader.problems.is_empty() {
        if let Some(blueprint) = blueprint {
            let encoding = if compas { Encoding::Compas } else { Encoding::Plain };
            return Ok(Loaded { blueprint, encoding, notes: reader.notes, task_starts: Vec::new() });
        }
        let d = Diagnostic::error(Code::NotABlueprint, "$", "the file does not describe a blueprint").rejected();
        reader.problems.push(d);
    }
    Err(LoadError { diagnostics: reader.problems })
}

/// Walks the JSON value, taking each known key out of its object; what is left of an object
/// afterwards is the keys Orrery does not know, still in file order.
struct Reader {
    path: Vec<Segment>,
    problems: Vec<Diagnostic>,
    notes: Vec<Diagnostic>,
    compas: bool,
    task_id: Option<String>,
    /// An envelope's ids, compared as the server compares them.
    ids: Ids,
    /// Where an envelope holds values Orrery keeps as data (IO values, unknown keys), noted
    /// only when it holds a COMPAS object the decoder refuses: one there does not stop the load
    /// (see [`from_value`]).
    kept: Option<Vec<Vec<Segment>>>,
}

type Object = Map<String, Value>;

/// Python's truth of a JSON value: false, 0, "", [], {} and null are false.
fn is_falsy(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(m) => m.is_empty(),
    }
}

/// What a JSON value is, for a message that says what was found instead ("a string", "an
/// array", ...).
pub fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

impl Reader {
    fn here(&self) -> String {
        render_path(&self.path)
    }

    /// A schema violation. Envelopes skip the reference's schema check, so there only a
    /// missing required key (a constructor argument) makes the server refuse.
    ///
    /// In an envelope, a violation the server lets through does not stop the load either: the
    /// value is read as best it can be and the error stays among the notes (so nothing saves
    /// over the file while it holds a value Orrery could not keep).
    fn problem(&mut self, code: Code, message: String) {
        let mut d = Diagnostic::error(code, self.here(), message);
        d.task_id = self.task_id.clone();
        if !self.compas || matches!(code, Code::SchemaRequired | Code::NotABlueprint) {
            self.problems.push(d.rejected());
        } else {
            self.notes.push(d);
        }
    }

    /// A problem that breaks the reference whatever the encoding.
    fn fatal(&mut self, code: Code, message: String) {
        let mut d = Diagnostic::error(code, self.here(), message).rejected();
        d.task_id = self.task_id.clone();
        self.problems.push(d);
    }

    fn in_key<T>(&mut self, key: &str, f: impl FnOnce(&mut Self) -> T) -> T {
        self.path.push(Segment::Key(key.into()));
        let r = f(self);
        self.path.pop();
        r
    }

    fn in_index<T>(&mut self, index: usize, f: impl FnOnce(&mut Self) -> T) -> T {
        self.path.push(Segment::Index(index));
        let r = f(self);
        self.path.pop();
        r
    }

    /// The object of an item, stepping into the `data` of its envelope in COMPAS form (the
    /// path then ends in `data`; `leave` steps back out). An envelope of one of the models
    /// `stands_in` names is read in its place, as the server reads what it needs of it.
    fn enter(&mut self, value: Value, dtype: &str, what: &str, stands_in: &[&str]) -> Option<(Object, bool)> {
        let mut map = match value {
            Value::Object(m) => m,
            other => {
                self.problem(Code::SchemaType, format!("{what} must be an object, found {}", kind_of(&other)));
                return None;
            }
        };
        if !self.compas || !map.contains_key("dtype") {
            return Some((map, false));
        }
        // The decoder built the object before anything looked at it (docs/format.md §1.2):
        // `from_value` reported one it cannot build.
        if compas::refusal_with(&map, false).is_some() {
            return None;
        }
        let class = compas::resolve(&map["dtype"], map.get("inheritance")).ok();
        if class.and_then(compas::Class::model_dtype).as_deref() != Some(dtype) {
            let found = &map["dtype"];
            let stands_in = class.and_then(compas::Class::model).filter(|m| stands_in.contains(m));
            self.in_key("dtype", |r| {
                let read = if stands_in.is_some() { ": the server reads it as one" } else { "" };
                r.problem(
                    Code::SchemaType,
                    format!("expected a COMPAS envelope of dtype '{dtype}', found {found}{read}"),
                )
            });
            stands_in?;
        }
        self.path.push(Segment::Key("data".into()));
        match map.shift_remove("data") {
            Some(Value::Object(data)) => Some((data, true)),
            other => {
                // Only reached for data the decoder took (a model's data is an object).
                let found = other.as_ref().map_or("nothing", kind_of);
                self.problem(Code::SchemaType, format!("expected an object as envelope data, found {found}"));
                self.path.pop();
                None
            }
        }
    }

    /// The keys left in an object, kept as they are.
    fn keep(&mut self, map: Object) -> Extra {
        for key in map.keys() {
            self.note_kept(key);
        }
        map.into_iter().collect()
    }

    /// Notes that `key` of the object at hand is kept as data (when [`Reader::kept`] is noted).
    fn note_kept(&mut self, key: &str) {
        if let Some(kept) = &mut self.kept {
            kept.push(self.path.iter().cloned().chain([Segment::Key(key.into())]).collect());
        }
    }

    fn leave(&mut self, enveloped: bool) {
        if enveloped {
            self.path.pop();
        }
    }

    /// Takes a present, non-null value (in COMPAS form null means absent, as the reference
    /// writes it).
    fn take(&self, map: &mut Object, key: &str) -> Option<Value> {
        match map.shift_remove(key) {
            Some(Value::Null) if self.compas => None,
            other => other,
        }
    }

    fn string(&mut self, map: &mut Object, key: &str) -> Option<String> {
        let value = self.take(map, key)?;
        self.string_value(value, key)
    }

    fn string_value(&mut self, value: Value, key: &str) -> Option<String> {
        match value {
            Value::String(s) => Some(s),
            other => {
                let found = kind_of(&other);
                self.in_key(key, |r| r.problem(Code::SchemaType, format!("'{key}' must be a string, found {found}")));
                self.compas.then(|| if other.is_null() { "None".to_string() } else { other.to_string() })
            }
        }
    }

    fn required_string(&mut self, map: &mut Object, key: &str, what: &str) -> Option<String> {
        // Only a missing argument fails the constructor: null is the Python value None.
        match map.shift_remove(key) {
            None => {
                self.problem(Code::SchemaRequired, format!("{what} has no '{key}'"));
                None
            }
            Some(v) => self.string_value(v, key),
        }
    }

    /// A task's or a dependency's id: a string, or in an envelope any value the server can
    /// hash, read as `python_ids` says.
    fn id(&mut self, map: &mut Object, key: &str, what: &str) -> Option<String> {
        if !self.compas {
            return self.required_string(map, key, what);
        }
        let Some(value) = map.shift_remove(key) else {
            self.problem(Code::SchemaRequired, format!("{what} has no '{key}'"));
            return None;
        };
        self.in_key(key, |r| r.id_value(&value))
    }

    /// [`Self::id`] of a value, at the place of the value.
    fn id_value(&mut self, value: &Value) -> Option<String> {
        let Ok(id) = self.ids.read(value) else {
            let found = kind_of(value);
            self.fatal(Code::SchemaType, format!("an id must be a string, found {found}: the server cannot hash it"));
            return None;
        };
        if !value.is_string() {
            let message = format!("an id must be a string, found {value}: the server compares it as the Python value");
            self.problem(Code::SchemaType, message);
        }
        Some(id)
    }

    fn array(&mut self, map: &mut Object, key: &str) -> Vec<Value> {
        match self.take(map, key) {
            None => Vec::new(),
            Some(Value::Array(items)) => items,
            Some(other) => {
                let found = kind_of(&other);
                self.in_key(key, |r| r.problem(Code::SchemaType, format!("'{key}' must be an array, found {found}")));
                Vec::new()
            }
        }
    }

    /// A JSON-schema integer (a number with no fractional part) at least `min`. `Err` when
    /// present but not acceptable.
    fn integer(&mut self, map: &mut Object, key: &str, min: u64) -> Result<Option<u64>, ()> {
        let Some(value) = self.take(map, key) else { return Ok(None) };
        let parsed = match &value {
            Value::Number(n) => n.as_u64().map(Ok).or_else(|| {
                let f = n.as_f64()?;
                if f.fract() != 0.0 {
                    None
                } else if f < 0.0 {
                    Some(Err(f))
                } else if f <= u64::MAX as f64 {
                    Some(Ok(f as u64))
                } else {
                    None
                }
            }),
            _ => None,
        };
        self.in_key(key, |r| match parsed {
            Some(Ok(n)) if n >= min => Ok(Some(n)),
            Some(_) => {
                r.problem(Code::SchemaRange, format!("'{key}' must be at least {min}, found {value}"));
                Err(())
            }
            None => {
                r.problem(Code::SchemaType, format!("'{key}' must be an integer, found {}", describe(&value)));
                Err(())
            }
        })
    }

    /// Reports every key left in a closed object (the schema allows no others).
    fn closed(&mut self, map: Object, allowed: &str, what: &str) -> bool {
        for k in map.keys() {
            self.in_key(k, |r| r.problem(Code::SchemaUnknownKey, format!("'{what}' allows only {allowed}, not '{k}'")));
        }
        map.is_empty()
    }

    fn blueprint(&mut self, value: Value) -> Option<Blueprint> {
        if !value.is_object() {
            self.problem(Code::NotABlueprint, format!("a blueprint must be a JSON object, found {}", kind_of(&value)));
            return None;
        }
        let (mut map, enveloped) = self.enter(value, DTYPE_BLUEPRINT, "a blueprint", &[])?;
        if self.compas && map.get("id").is_some_and(|id| !id.is_string()) {
            // The server stores and answers the id as a string: another type fails it (500).
            let found = kind_of(&map["id"]);
            self.in_key("id", |r| {
                r.fatal(
                    Code::SchemaType,
                    format!("the blueprint's 'id' must be a string, found {found}: the server fails on it"),
                )
            });
        }
        let id = self.required_string(&mut map, "id", "the blueprint");
        let name = self.required_string(&mut map, "name", "the blueprint");
        let version = if self.compas && map.get("version").is_none_or(Value::is_null) {
            // The reference's Blueprint() defaults the version for envelopes.
            map.shift_remove("version");
            Some("1.0".to_string())
        } else {
            self.required_string(&mut map, "version", "the blueprint")
        };
        let description = self.string(&mut map, "description");
        if self.compas && map.get("tasks").is_some_and(|t| !t.is_array() && !t.is_null()) {
            if is_falsy(&map["tasks"]) {
                // The model takes `tasks or []`: no tasks (an error of Orrery's own, kept).
                let found = map.shift_remove("tasks").unwrap_or_default();
                let message = format!("'tasks' must be an array, found {found}: the server reads it as no tasks");
                self.in_key("tasks", |r| r.problem(Code::SchemaType, message));
            } else {
                self.in_key("tasks", |r| r.fatal(Code::SchemaType, "'tasks' must be an array".into()));
            }
        }
        let items = self.array(&mut map, "tasks");
        let mut tasks = Vec::with_capacity(items.len());
        self.path.push(Segment::Key("tasks".into()));
        for (i, item) in items.into_iter().enumerate() {
            if let Some(task) = self.in_index(i, |r| r.task(item)) {
                tasks.push(task);
            }
        }
        self.path.pop();
        if self.compas {
            // Derived by the reference from the tasks; rebuilt on save. Its envelopes are decoded
            // all the same (`from_value` checked that they decode; here, their arguments).
            if let Some(Value::Array(scopes)) = map.shift_remove("scopes") {
                for (i, scope) in scopes.iter().enumerate() {
                    if let Some(why) = scope.as_object().and_then(compas::arguments_refusal) {
                        self.in_key("scopes", |r| r.in_index(i, |r| r.fatal(Code::CompasObject, why)));
                    }
                }
            }
        }
        let extra = self.keep(map);
        self.leave(enveloped);
        Some(Blueprint { id: id?, name: name?, version: version?, description, tasks, extra })
    }

    fn task(&mut self, value: Value) -> Option<Task> {
        if self.compas && value.get("dtype").is_none() {
            self.fatal(
                Code::SchemaType,
                "in a COMPAS blueprint every task must be an antikythera.models/Task envelope".into(),
            );
            return None;
        }
        if self.compas {
            // The server reads a task's every attribute of each item: only a Task has them all.
            let class = compas::resolve(&value["dtype"], value.get("inheritance"));
            if let Some(found) = class.ok().filter(|c| c.model() != Some("Task")) {
                let message = format!("each task must be a Task, found a {}: the server fails on it", found.name);
                self.in_key("dtype", |r| r.fatal(Code::SchemaType, message));
                return None;
            }
        }
        let (mut map, enveloped) = self.enter(value, DTYPE_TASK, "a task", &[])?;
        let id = self.id(&mut map, "id", "a task");
        self.task_id = id.clone();
        if self.compas {
            self.iterated_lists(&map);
        }
        let task_type = self.required_string(&mut map, "type", "a task");
        let description = self.string(&mut map, "description");
        let condition = match self.take(&mut map, "condition") {
            // Only a string is ever examined: a falsy one is no condition, `true` is Python's True.
            Some(Value::Bool(b)) if self.compas => self.in_key("condition", |r| {
                let message = format!(
                    "'condition' must be a string, found {b}: the server reads it as {}",
                    if b { "True" } else { "no condition" }
                );
                r.problem(Code::SchemaType, message);
                b.then(|| "True".to_string())
            }),
            Some(v) => self.string_value(v, "condition"),
            None => None,
        };
        let scope_start = match self.take(&mut map, "scope_start") {
            None => None,
            // `task.scope_start or {}`: a falsy scope_start of an envelope opens a skip scope.
            Some(v) if self.compas && is_falsy(&v) && !v.is_object() => self.in_key("scope_start", |r| {
                r.problem(
                    Code::SchemaType,
                    format!("'scope_start' must be an object, found {v}: the server takes it as {{}}"),
                );
                Some(ScopeStart::default())
            }),
            Some(v) if self.compas && (!v.is_object() || v.get("dtype").is_some()) => {
                self.in_key("scope_start", |r| {
                    r.fatal(Code::SchemaType, format!("'scope_start' must be an object, found {}", kind_of(&v)))
                });
                None
            }
            Some(v) => self.in_key("scope_start", |r| r.scope_start(v)),
        };
        let scope_end = match self.take(&mut map, "scope_end") {
            // `if not task.scope_end`: a falsy one closes no scope.
            Some(v) if self.compas && is_falsy(&v) => {
                if !v.is_string() {
                    let message = format!("'scope_end' must be a string, found {v}: the server reads it as none");
                    self.in_key("scope_end", |r| r.problem(Code::SchemaType, message));
                }
                None
            }
            Some(v) if self.compas => self.in_key("scope_end", |r| r.id_value(&v)),
            Some(v) => self.string_value(v, "scope_end"),
            None => None,
        };
        let inputs = self.io_list(&mut map, "inputs", DTYPE_INPUT, IoKind::Input);
        let outputs = self.io_list(&mut map, "outputs", DTYPE_OUTPUT, IoKind::Output);
        let params = self.io_list(&mut map, "params", DTYPE_PARAM, IoKind::Param);
        let deps = self.array(&mut map, "depends_on");
        let mut depends_on = Vec::with_capacity(deps.len());
        self.path.push(Segment::Key("depends_on".into()));
        for (i, d) in deps.into_iter().enumerate() {
            if let Some(dep) = self.in_index(i, |r| r.dependency(d)) {
                depends_on.push(dep);
            }
        }
        self.path.pop();
        if self.compas && map.get("state").is_some_and(Value::is_null) {
            self.in_key("state", |r| r.fatal(Code::SchemaEnum, "'state' must be a TaskState, found null".into()));
        }
        let state = match self.take(&mut map, "state") {
            None => None,
            Some(v) => self.in_key("state", |r| match v.as_str().and_then(TaskState::parse) {
                Some(s) if s.in_schema() || r.compas => Some(s),
                // An envelope's state goes through `TaskState(state)`, which refuses anything else.
                _ if r.compas => {
                    r.fatal(Code::SchemaEnum, format!("'state' must be a TaskState (PENDING, READY, RUNNING, SUCCEEDED, FAILED, SKIPPED, UNSPECIFIED); found {v}"));
                    None
                }
                _ => {
                    r.problem(Code::SchemaEnum, format!("'state' must be one of PENDING, READY, RUNNING, SUCCEEDED, FAILED, SKIPPED, UNSPECIFIED; found {v}"));
                    None
                }
            }),
        };
        // The reference writes PENDING into every envelope; it says nothing.
        let state = state.filter(|s| !(self.compas && *s == TaskState::Pending));
        self.task_id = None;
        let extra = self.keep(map);
        self.leave(enveloped);
        Some(Task {
            id: id?.into(),
            task_type: TaskType(task_type?.into()),
            description,
            condition,
            scope_start: scope_start.map(Box::new),
            scope_end: scope_end.map(Into::into),
            inputs: inputs?,
            outputs: outputs?,
            params: params?,
            depends_on,
            state,
            extra,
        })
    }

    /// The lists of an envelope task the server iterates, reading an attribute of each item,
    /// where an item without it fails the upload (docs/format.md §1.2): `outputs` always
    /// (`set_to or name`, hashable: TaskOutputs only), `depends_on` always (`validate()` reads
    /// `.id`), `params` unless the condition is truthy and not a string (`get_param` and the
    /// condition's names read `.name`), `inputs` when the condition (or, for a falsy one, the
    /// `condition` param) is a string. A falsy list is no list; any other value that is not a
    /// list is iterated as it is and fails.
    fn iterated_lists(&mut self, task: &Object) {
        let condition = task.get("condition").filter(|c| !is_falsy(c));
        let param_condition = || {
            let params = task.get("params").and_then(Value::as_array)?;
            let named = params
                .iter()
                .filter_map(|p| p.get("data"))
                .find(|d| d.get("name").and_then(Value::as_str) == Some("condition"))?;
            named.get("value").cloned()
        };
        let reads_names = match condition {
            Some(c) => c.is_string(),
            None => param_condition().is_some_and(|v| v.is_string()),
        };
        // Whatever the decoder built is a compas Data, which has a `name`.
        let is_envelope = |item: &Value| item.get("dtype").is_some() && item.get("data").is_some();
        let has_id = |item: &Value| is_envelope(item) && model_of(item).is_some_and(|m| HAS_ID.contains(&m));
        let is_output = |item: &Value| {
            let data = &item["data"];
            let key = data.get("set_to").filter(|k| !is_falsy(k)).or_else(|| data.get("name"));
            model_of(item) == Some("TaskOutput") && !key.is_some_and(|k| k.is_array() || k.is_object())
        };
        type Fits<'a> = &'a dyn Fn(&Value) -> bool;
        let checks: [(&str, bool, Fits, &str); 4] = [
            ("outputs", true, &is_output, "a TaskOutput envelope (the server reads `set_to or name` of each)"),
            ("depends_on", true, &has_id, "a Dependency, Task, Scope or Blueprint (the server reads the `id` of each)"),
            (
                "params",
                condition.is_none_or(Value::is_string),
                &is_envelope,
                "an envelope (the server reads the `name` of each)",
            ),
            ("inputs", reads_names, &is_envelope, "an envelope (the server reads the `name` of each)"),
        ];
        for (key, iterated, fits, what) in checks {
            let Some(list) = task.get(key).filter(|l| iterated && !is_falsy(l)) else { continue };
            match list {
                Value::Array(items) => {
                    if let Some(i) = items.iter().position(|item| !fits(item)) {
                        self.in_key(key, |r| {
                            r.in_index(i, |r| r.fatal(Code::SchemaType, format!("each item of '{key}' must be {what}")))
                        });
                    }
                }
                other => self.in_key(key, |r| {
                    r.fatal(
                        Code::SchemaType,
                        format!("'{key}' must be a list, found {}: the server iterates it", kind_of(other)),
                    )
                }),
            }
        }
    }

    fn scope_start(&mut self, value: Value) -> Option<ScopeStart> {
        let Value::Object(mut map) = value else {
            self.problem(Code::SchemaType, format!("'scope_start' must be an object, found {}", kind_of(&value)));
            return None;
        };
        let mut ok = true;
        let name = self.string(&mut map, "name");
        let retry_policy = match self.take(&mut map, "retry_policy") {
            None => None,
            Some(v) => {
                let r = self.in_key("retry_policy", |r| r.retry_policy(v));
                ok &= r.is_some();
                r
            }
        };
        let while_policy = match self.take(&mut map, "while_policy") {
            None => None,
            Some(v) => {
                let w = self.in_key("while_policy", |r| r.while_policy(v));
                ok &= w.is_some();
                w
            }
        };
        ok &= self.closed(map, "name, retry_policy and while_policy", "scope_start");
        // The server reads nothing inside an envelope's scope_start but which policies it names:
        // what Orrery cannot read stays a note, and the scope stays.
        (ok || self.compas).then_some(ScopeStart { name, retry_policy, while_policy })
    }

    /// A policy's own problem: in an envelope the server checks nothing inside a policy, so
    /// even a missing key is only Orrery's error.
    fn policy_problem(&mut self, code: Code, message: String) {
        if self.compas {
            let mut d = Diagnostic::error(code, self.here(), message);
            d.task_id = self.task_id.clone();
            self.notes.push(d);
        } else {
            self.problem(code, message);
        }
    }

    fn retry_policy(&mut self, value: Value) -> Option<RetryPolicy> {
        let Value::Object(mut map) = value else {
            self.problem(Code::SchemaType, format!("'retry_policy' must be an object, found {}", kind_of(&value)));
            return self.compas.then(|| RetryPolicy { retries: 0, backoff: None });
        };
        let retries = if map.get("retries").is_some_and(|v| !v.is_null() || !self.compas) {
            self.integer(&mut map, "retries", 0)
        } else {
            map.shift_remove("retries");
            self.policy_problem(Code::SchemaRequired, "'retry_policy' has no 'retries'".into());
            Err(())
        };
        let backoff = match self.take(&mut map, "backoff") {
            None => Ok(None),
            Some(v) => self.in_key("backoff", |r| {
                let Value::Object(mut m) = v else {
                    r.problem(Code::SchemaType, format!("'backoff' must be an object, found {}", kind_of(&v)));
                    return Err(());
                };
                let constant_ms = r.integer(&mut m, "constant_ms", 0)?;
                Ok(Some(Backoff { constant_ms, extra: r.keep(m) }))
            }),
        };
        let closed = self.closed(map, "retries and backoff", "retry_policy");
        match (retries, backoff) {
            (Ok(Some(retries)), Ok(backoff)) if closed => Some(RetryPolicy { retries, backoff }),
            (retries, backoff) if self.compas => {
                Some(RetryPolicy { retries: retries.ok().flatten().unwrap_or(0), backoff: backoff.ok().flatten() })
            }
            _ => None,
        }
    }

    fn while_policy(&mut self, value: Value) -> Option<WhilePolicy> {
        if self.compas && !value.is_object() && !is_falsy(&value) {
            // check_dataflow calls `.get("condition")` on it and fails (HTTP 500).
            self.fatal(
                Code::SchemaType,
                format!("'while_policy' must be an object, found {}: the server fails on it", kind_of(&value)),
            );
            return None;
        }
        let Value::Object(mut map) = value else {
            self.problem(Code::SchemaType, format!("'while_policy' must be an object, found {}", kind_of(&value)));
            return None;
        };
        let condition = match self.take(&mut map, "condition") {
            Some(Value::String(c)) => Some(c),
            None => {
                self.policy_problem(Code::SchemaRequired, "'while_policy' has no 'condition'".into());
                None
            }
            // The server examines a while condition only when it is a string.
            Some(other) => self.in_key("condition", |r| {
                r.policy_problem(Code::SchemaType, format!("'condition' must be a string, found {}", kind_of(&other)));
                None
            }),
        };
        let max_iterations = self.integer(&mut map, "max_iterations", 1);
        let closed = self.closed(map, "condition and max_iterations", "while_policy");
        match (condition, max_iterations) {
            (Some(condition), Ok(max_iterations)) if closed => Some(WhilePolicy { condition, max_iterations }),
            (Some(condition), max_iterations) if self.compas => {
                Some(WhilePolicy { condition, max_iterations: max_iterations.ok().flatten() })
            }
            _ => None,
        }
    }

    fn dependency(&mut self, value: Value) -> Option<Dependency> {
        // The server reads only the `id` of a dependency: any model that has one stands in.
        let stand_in = self.compas && model_of(&value).is_some_and(|m| m != "Dependency");
        let (mut map, enveloped) = self.enter(value, DTYPE_DEPENDENCY, "a dependency", HAS_ID)?;
        let id = self.id(&mut map, "id", "a dependency");
        if stand_in {
            // Read as a dependency of the default type; the rest of the stand-in is not kept.
            self.leave(enveloped);
            return Some(Dependency { id: id?.into(), dep_type: DependencyType::FS, extra: Default::default() });
        }
        let dep_type = match self.take(&mut map, "type") {
            None => Some(DependencyType::FS),
            Some(v) => {
                let parsed = v.as_str().and_then(DependencyType::parse);
                if parsed.is_none() {
                    self.in_key("type", |r| {
                        r.problem(Code::SchemaEnum, format!("unknown dependency type {v}: expected FS, FF, SS or SF"))
                    });
                }
                // The server runs an envelope's unknown type as FS.
                parsed.or(self.compas.then_some(DependencyType::FS))
            }
        };
        let extra = self.keep(map);
        self.leave(enveloped);
        Some(Dependency { id: id?.into(), dep_type: dep_type?, extra })
    }

    fn io_list<T: FromIo>(&mut self, map: &mut Object, key: &str, dtype: &str, kind: IoKind) -> Option<Vec<T>> {
        let items = self.array(map, key);
        let mut out = Vec::with_capacity(items.len());
        let mut ok = true;
        self.path.push(Segment::Key(key.into()));
        for (i, item) in items.into_iter().enumerate() {
            match self.in_index(i, |r| r.io(item, dtype, kind)) {
                Some((io, link)) => out.push(T::from_io(io, link)),
                // An envelope's item the server lets through (its problem is kept) is left out.
                None => ok &= self.compas,
            }
        }
        self.path.pop();
        ok.then_some(out)
    }

    fn io(&mut self, raw: Value, dtype: &str, kind: IoKind) -> Option<(Io, Option<String>)> {
        let what = kind.what();
        // An envelope's own `name` is set on the object once built: it is the item's name.
        let named = match (&raw, self.compas) {
            (Value::Object(m), true) if m.contains_key("dtype") => {
                m.get("name").and_then(Value::as_str).map(str::to_string)
            }
            _ => None,
        };
        if let Some(name) = self.other_data(&raw, kind, named.as_deref()) {
            return Some((Io::new(name.into(), None, None, None, Extra::new()), None));
        }
        let stands_in = if matches!(kind, IoKind::Output) { &[][..] } else { TASK_IO };
        let (mut map, enveloped) = self.enter(raw, dtype, what, stands_in)?;
        let name = match (named, map.get("name")) {
            // Still a constructor argument: `data` must have it.
            (Some(named), Some(_)) => {
                map.shift_remove("name");
                Some(named)
            }
            // The decoder passes null as it is, and a model's name is `_name or` its class name.
            (None, Some(Value::Null)) if self.compas && enveloped => {
                map.shift_remove("name");
                Some(kind.class().to_string())
            }
            (None, Some(Value::String(empty))) if empty.is_empty() && self.compas && enveloped => {
                map.shift_remove("name");
                Some(kind.class().to_string())
            }
            _ => self.required_string(&mut map, "name", what),
        };
        let value = map.shift_remove("value").filter(|v| !v.is_null());
        if value.is_some() {
            self.note_kept("value");
        }
        let type_hint = self.string(&mut map, "type_hint");
        let had_type = map.contains_key("type");
        let deprecated_type = self.string(&mut map, "type");
        let description = self.string(&mut map, "description");
        let link = kind.link_key().and_then(|k| self.string(&mut map, k));
        if self.compas {
            // The reference writes null links into every envelope.
            for k in ["get_from", "set_to"] {
                if map.get(k).is_some_and(Value::is_null) {
                    map.shift_remove(k);
                }
            }
        }
        let mut extra: Extra = self.keep(map);
        if had_type && !self.compas {
            self.in_key("type", |r| {
                let mut d = Diagnostic::warning(
                    Code::DeprecatedIoType,
                    r.here(),
                    "'type' on an IO item is deprecated; it is saved as 'type_hint'",
                );
                d.task_id = r.task_id.clone();
                r.notes.push(d);
            });
        }
        let type_hint = match (type_hint, deprecated_type) {
            // Both given and different: `type_hint` wins, and `type` is kept as it was.
            (Some(hint), Some(old)) if hint != old => {
                extra.insert("type".into(), Value::String(old));
                Some(hint)
            }
            (hint, old) => hint.or(old),
        };
        self.leave(enveloped);
        let io = Io::new(name?.into(), value, type_hint.map(Into::into), description, extra);
        Some((io, link))
    }

    /// The name of an input or param of an envelope that is some other object the decoder
    /// builds (a Task, a Point): the server reads only its `name`, which a condition may read
    /// (its envelope's `name`, else its class's name). Orrery keeps only that name.
    fn other_data(&mut self, raw: &Value, kind: IoKind, named: Option<&str>) -> Option<String> {
        if !self.compas || matches!(kind, IoKind::Output) {
            return None;
        }
        let object = raw.as_object().filter(|o| compas::refusal_with(o, false).is_none())?;
        let class = compas::resolve(object.get("dtype")?, object.get("inheritance")).ok()?;
        if class.model().is_some_and(|m| TASK_IO.contains(&m)) {
            return None;
        }
        let short = class.name.rsplit('.').next().unwrap_or(class.name);
        let name = named.filter(|n| !n.is_empty()).unwrap_or(short).to_string();
        let message = format!(
            "{} must be a {} envelope, found a {}: the server reads only its name, '{name}'",
            kind.what(),
            kind.class(),
            class.name
        );
        self.in_key("dtype", |r| r.problem(Code::SchemaType, message));
        Some(name)
    }
}

#[derive(Clone, Copy)]
enum IoKind {
    Input,
    Output,
    Param,
}

impl IoKind {
    /// The model's class name: what the reference calls an item whose name is empty.
    fn class(self) -> &'static str {
        match self {
            Self::Input => "TaskInput",
            Self::Output => "TaskOutput",
            Self::Param => "TaskParam",
        }
    }
    fn what(self) -> &'static str {
        match self {
            Self::Input => "an input",
            Self::Output => "an output",
            Self::Param => "a param",
        }
    }
    fn link_key(self) -> Option<&'static str> {
        match self {
            Self::Input => Some("get_from"),
            Self::Output => Some("set_to"),
            Self::Param => None,
        }
    }
}

trait FromIo {
    fn from_io(io: Io, link: Option<String>) -> Self;
}
impl FromIo for TaskInput {
    fn from_io(io: Io, get_from: Option<String>) -> Self {
        TaskInput { io, get_from: get_from.map(Into::into) }
    }
}
impl FromIo for TaskOutput {
    fn from_io(io: Io, set_to: Option<String>) -> Self {
        TaskOutput { io, set_to: set_to.map(Into::into) }
    }
}
impl FromIo for TaskParam {
    fn from_io(io: Io, _: Option<String>) -> Self {
        TaskParam { io }
    }
}

fn describe(v: &Value) -> String {
    match v {
        Value::Number(n) => n.to_string(),
        other => kind_of(other).to_string(),
    }
}
