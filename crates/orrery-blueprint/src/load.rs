//! Reading a blueprint file, plain JSON or COMPAS envelopes (COMPAT.md section 1).
//!
//! Loading checks what the reference's JSON schema checks (types, required keys, enums,
//! ranges, the closed `scope_start` object) and reports every violation at once, each with its
//! JSON path, line and column. Anything the schema lets through is loaded, including keys
//! Orrery does not know: they are kept for saving, and validation judges them.

use crate::diagnostic::{Code, Diagnostic};
use crate::model::*;
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
/// (warnings only; anything worse fails the load).
#[derive(Debug, Clone)]
pub struct Loaded {
    pub blueprint: Blueprint,
    pub encoding: Encoding,
    pub notes: Vec<Diagnostic>,
}

/// A file that cannot be loaded, with every problem found.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{}", .diagnostics.first().map(|d| d.message.as_str()).unwrap_or("cannot load the blueprint"))]
pub struct LoadError {
    pub diagnostics: Vec<Diagnostic>,
}

/// Loads a blueprint from text. Diagnostics carry line and column.
pub fn load(text: &str) -> Result<Loaded, LoadError> {
    let (value, nonstandard) = match serde_json::from_str::<Value>(text) {
        Ok(v) => (v, None),
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
    let result = from_value(&value);
    let place = |mut diagnostics: Vec<Diagnostic>| {
        for d in &mut diagnostics {
            if let Some((line, column)) = span::locate(text, &span::parse_path(&d.path)) {
                d.line = Some(line);
                d.column = Some(column);
            }
        }
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
    match result {
        Ok(mut loaded) => {
            loaded.notes = place(loaded.notes);
            loaded.notes.extend(nonstandard);
            Ok(loaded)
        }
        Err(e) => {
            let mut diagnostics = place(e.diagnostics);
            diagnostics.extend(nonstandard);
            Err(LoadError { diagnostics })
        }
    }
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
            if let Some(code) = rest.strip_prefix("\\u").and_then(|r| r.get(..4)).and_then(|h| u16::from_str_radix(h, 16).ok()) {
                let high = (0xD800..0xDC00).contains(&code);
                let low = (0xDC00..0xE000).contains(&code);
                let paired = high
                    && rest[6..].strip_prefix("\\u").and_then(|r| r.get(..4)).and_then(|h| u16::from_str_radix(h, 16).ok()).is_some_and(|c| (0xDC00..0xE000).contains(&c));
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
    serde_json::from_str(&out).ok().map(|v| (v, what))
}

/// Loads a blueprint from an already parsed JSON value (no positions in diagnostics).
pub fn from_value(value: &Value) -> Result<Loaded, LoadError> {
    let compas = value.get("dtype").is_some() && value.get("data").is_some();
    let mut reader = Reader { path: Vec::new(), problems: Vec::new(), notes: Vec::new(), compas, task_id: None };
    let blueprint = reader.blueprint(value);
    if reader.problems.is_empty() {
        if let Some(blueprint) = blueprint {
            let encoding = if compas { Encoding::Compas } else { Encoding::Plain };
            return Ok(Loaded { blueprint, encoding, notes: reader.notes });
        }
    }
    if reader.problems.is_empty() {
        let d = Diagnostic::error(Code::NotABlueprint, "$", "the file does not describe a blueprint").rejected();
        reader.problems.push(d);
    }
    Err(LoadError { diagnostics: reader.problems })
}

struct Reader {
    path: Vec<Segment>,
    problems: Vec<Diagnostic>,
    notes: Vec<Diagnostic>,
    compas: bool,
    task_id: Option<String>,
}

fn kind_of(v: &Value) -> &'static str {
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
        self.path.push(Segment::Key(key.to_string()));
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

    /// In COMPAS form, steps into `data` of an envelope of the expected dtype.
    fn unwrap<'v>(&mut self, value: &'v Value, dtype: &str) -> Option<&'v Value> {
        if !self.compas {
            return Some(value);
        }
        let Some(map) = value.as_object().filter(|m| m.contains_key("dtype")) else {
            return Some(value);
        };
        match map.get("dtype").and_then(Value::as_str) {
            Some(d) if d == dtype => {}
            other => {
                let found = other.map_or_else(|| "no string".to_string(), |d| format!("'{d}'"));
                self.in_key("dtype", |r| {
                    r.problem(Code::SchemaType, format!("expected a COMPAS envelope of dtype '{dtype}', found {found}"))
                });
                return None;
            }
        }
        self.path.push(Segment::Key("data".into()));
        match map.get("data") {
            Some(v @ Value::Object(_)) => Some(v),
            other => {
                let found = other.map_or("nothing", kind_of);
                self.problem(Code::SchemaType, format!("expected an object as envelope data, found {found}"));
                self.path.pop();
                None
            }
        }
    }

    /// Steps back out of an envelope entered by `unwrap`.
    fn rewrap(&mut self, value: &Value) {
        if self.compas && value.get("dtype").is_some() {
            self.path.pop();
        }
    }

    fn object<'v>(&mut self, value: &'v Value, what: &str) -> Option<&'v Map<String, Value>> {
        match value {
            Value::Object(m) => Some(m),
            other => {
                self.problem(Code::SchemaType, format!("{what} must be an object, found {}", kind_of(other)));
                None
            }
        }
    }

    /// A present, non-null value (in COMPAS form null means absent, as the reference writes it).
    fn present<'v>(&self, map: &'v Map<String, Value>, key: &str) -> Option<&'v Value> {
        match map.get(key) {
            Some(Value::Null) if self.compas => None,
            other => other,
        }
    }

    fn string(&mut self, map: &Map<String, Value>, key: &str) -> Option<String> {
        match self.present(map, key)? {
            Value::String(s) => Some(s.clone()),
            other => {
                let found = kind_of(other);
                self.in_key(key, |r| r.problem(Code::SchemaType, format!("'{key}' must be a string, found {found}")));
                self.compas.then(|| other.to_string())
            }
        }
    }

    fn required_string(&mut self, map: &Map<String, Value>, key: &str, what: &str) -> Option<String> {
        if self.present(map, key).is_none() {
            self.problem(Code::SchemaRequired, format!("{what} has no '{key}'"));
            return None;
        }
        self.string(map, key)
    }

    fn array<'v>(&mut self, map: &'v Map<String, Value>, key: &str) -> &'v [Value] {
        match self.present(map, key) {
            None => &[],
            Some(Value::Array(items)) => items,
            Some(other) => {
                let found = kind_of(other);
                self.in_key(key, |r| r.problem(Code::SchemaType, format!("'{key}' must be an array, found {found}")));
                &[]
            }
        }
    }

    /// A JSON-schema integer (a number with no fractional part) at least `min`.
    fn integer(&mut self, map: &Map<String, Value>, key: &str, min: u64) -> Option<u64> {
        let value = self.present(map, key)?;
        let parsed = match value {
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
        self.path.push(Segment::Key(key.to_string()));
        let result = match parsed {
            Some(Ok(n)) if n >= min => Some(n),
            Some(_) => {
                self.problem(Code::SchemaRange, format!("'{key}' must be at least {min}, found {value}"));
                None
            }
            None => {
                self.problem(Code::SchemaType, format!("'{key}' must be an integer, found {}", describe(value)));
                None
            }
        };
        self.path.pop();
        result
    }

    fn blueprint(&mut self, value: &Value) -> Option<Blueprint> {
        if !value.is_object() {
            self.problem(Code::NotABlueprint, format!("a blueprint must be a JSON object, found {}", kind_of(value)));
            return None;
        }
        let data = self.unwrap(value, DTYPE_BLUEPRINT)?;
        let map = self.object(data, "a blueprint")?;
        let id = self.required_string(map, "id", "the blueprint");
        let name = self.required_string(map, "name", "the blueprint");
        let version = if self.compas && self.present(map, "version").is_none() {
            // The reference's Blueprint() defaults the version for envelopes.
            Some("1.0".to_string())
        } else {
            self.required_string(map, "version", "the blueprint")
        };
        let description = self.string(map, "description");
        if self.compas && self.present(map, "tasks").is_some_and(|t| !t.is_array()) {
            self.in_key("tasks", |r| r.fatal(Code::SchemaType, "'tasks' must be an array".into()));
        }
        let items = self.array(map, "tasks");
        let mut tasks = Vec::with_capacity(items.len());
        self.path.push(Segment::Key("tasks".into()));
        for (i, item) in items.iter().enumerate() {
            if let Some(task) = self.in_index(i, |r| r.task(item)) {
                tasks.push(task);
            }
        }
        self.path.pop();
        let mut extra = Extra::new();
        for (k, v) in map {
            match k.as_str() {
                "id" | "name" | "version" | "description" | "tasks" => {}
                // Derived by the reference from the tasks; rebuilt on save.
                "scopes" if self.compas => {}
                _ => {
                    extra.insert(k.clone(), v.clone());
                }
            }
        }
        self.rewrap(value);
        Some(Blueprint { id: id?, name: name?, version: version?, description, tasks, extra })
    }

    fn task(&mut self, value: &Value) -> Option<Task> {
        if self.compas && value.get("dtype").is_none() {
            self.fatal(Code::SchemaType, "in a COMPAS blueprint every task must be an antikythera.models/Task envelope".into());
            return None;
        }
        let data = self.unwrap(value, DTYPE_TASK)?;
        let map = self.object(data, "a task")?;
        let id = self.required_string(map, "id", "a task");
        self.task_id = id.clone();
        let task_type = self.required_string(map, "type", "a task");
        let description = self.string(map, "description");
        let condition = self.string(map, "condition");
        let scope_start = match self.present(map, "scope_start") {
            None => None,
            Some(v) if self.compas && !v.is_object() => {
                self.in_key("scope_start", |r| r.fatal(Code::SchemaType, format!("'scope_start' must be an object, found {}", kind_of(v))));
                None
            }
            Some(v) => self.in_key("scope_start", |r| r.scope_start(v)),
        };
        let scope_end = self.string(map, "scope_end");
        let inputs = self.io_list(map, "inputs", DTYPE_INPUT, IoKind::Input);
        let outputs = self.io_list(map, "outputs", DTYPE_OUTPUT, IoKind::Output);
        let params = self.io_list(map, "params", DTYPE_PARAM, IoKind::Param);
        let mut depends_on = Vec::new();
        let deps = self.array(map, "depends_on");
        self.path.push(Segment::Key("depends_on".into()));
        for (i, d) in deps.iter().enumerate() {
            if let Some(dep) = self.in_index(i, |r| r.dependency(d)) {
                depends_on.push(dep);
            }
        }
        self.path.pop();
        let state = match self.present(map, "state") {
            None => None,
            Some(v) => self.in_key("state", |r| match v.as_str().and_then(TaskState::parse) {
                Some(s) if s.in_schema() => Some(s),
                _ => {
                    r.problem(Code::SchemaEnum, format!("'state' must be one of PENDING, READY, RUNNING, SUCCEEDED, FAILED, SKIPPED, UNSPECIFIED; found {v}"));
                    None
                }
            }),
        };
        // The reference writes PENDING into every envelope; it says nothing.
        let state = state.filter(|s| !(self.compas && *s == TaskState::Pending));
        let mut extra = Extra::new();
        for (k, v) in map {
            if !TASK_KEYS.contains(&k.as_str()) {
                extra.insert(k.clone(), v.clone());
            }
        }
        self.task_id = None;
        self.rewrap(value);
        Some(Task {
            id: id?,
            task_type: TaskType(task_type?),
            description,
            condition,
            scope_start,
            scope_end,
            inputs: inputs?,
            outputs: outputs?,
            params: params?,
            depends_on,
            state,
            extra,
        })
    }

    fn scope_start(&mut self, value: &Value) -> Option<ScopeStart> {
        let map = self.object(value, "'scope_start'")?;
        let mut scope = ScopeStart::default();
        let mut ok = true;
        for (k, v) in map {
            match k.as_str() {
                "name" => scope.name = self.string(map, "name"),
                "retry_policy" if self.present(map, k).is_some() => {
                    scope.retry_policy = self.in_key(k, |r| r.retry_policy(v));
                    ok &= scope.retry_policy.is_some();
                }
                "while_policy" if self.present(map, k).is_some() => {
                    scope.while_policy = self.in_key(k, |r| r.while_policy(v));
                    ok &= scope.while_policy.is_some();
                }
                "retry_policy" | "while_policy" => {}
                _ => {
                    self.in_key(k, |r| {
                        r.problem(Code::SchemaUnknownKey, format!("'scope_start' allows only name, retry_policy and while_policy, not '{k}'"))
                    });
                    ok = false;
                }
            }
        }
        ok.then_some(scope)
    }

    fn retry_policy(&mut self, value: &Value) -> Option<RetryPolicy> {
        let map = self.object(value, "'retry_policy'")?;
        let mut ok = self.closed(map, &["retries", "backoff"], "retry_policy");
        if self.present(map, "retries").is_none() {
            self.problem(Code::SchemaRequired, "'retry_policy' has no 'retries'".into());
            return None;
        }
        let retries = self.integer(map, "retries", 0);
        let backoff = match self.present(map, "backoff") {
            None => None,
            Some(v) => {
                let b = self.in_key("backoff", |r| {
                    let m = r.object(v, "'backoff'")?;
                    let constant_ms = r.integer(m, "constant_ms", 0);
                    if m.contains_key("constant_ms") && constant_ms.is_none() {
                        return None;
                    }
                    let extra = m.iter().filter(|(k, _)| *k != "constant_ms").map(|(k, v)| (k.clone(), v.clone())).collect();
                    Some(Backoff { constant_ms, extra })
                });
                ok &= b.is_some();
                b
            }
        };
        ok.then_some(RetryPolicy { retries: retries?, backoff })
    }

    fn while_policy(&mut self, value: &Value) -> Option<WhilePolicy> {
        let map = self.object(value, "'while_policy'")?;
        let ok = self.closed(map, &["condition", "max_iterations"], "while_policy");
        let condition = self.required_string(map, "condition", "'while_policy'");
        let max_iterations = self.integer(map, "max_iterations", 1);
        if self.present(map, "max_iterations").is_some() && max_iterations.is_none() {
            return None;
        }
        ok.then_some(WhilePolicy { condition: condition?, max_iterations })
    }

    /// Reports keys outside `allowed` (the schema closes these objects).
    fn closed(&mut self, map: &Map<String, Value>, allowed: &[&str], what: &str) -> bool {
        let mut ok = true;
        for k in map.keys() {
            if !allowed.contains(&k.as_str()) {
                let list = allowed.join(" and ");
                self.in_key(k, |r| r.problem(Code::SchemaUnknownKey, format!("'{what}' allows only {list}, not '{k}'")));
                ok = false;
            }
        }
        ok
    }

    fn dependency(&mut self, value: &Value) -> Option<Dependency> {
        let data = self.unwrap(value, DTYPE_DEPENDENCY)?;
        let map = self.object(data, "a dependency")?;
        let id = self.required_string(map, "id", "a dependency");
        let dep_type = match self.present(map, "type") {
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
        let extra = map.iter().filter(|(k, _)| *k != "id" && *k != "type").map(|(k, v)| (k.clone(), v.clone())).collect();
        self.rewrap(value);
        Some(Dependency { id: id?, dep_type: dep_type?, extra })
    }

    fn io_list<T: FromIo>(&mut self, map: &Map<String, Value>, key: &str, dtype: &str, kind: IoKind) -> Option<Vec<T>> {
        let items = self.array(map, key);
        let mut out = Vec::with_capacity(items.len());
        let mut ok = true;
        self.path.push(Segment::Key(key.to_string()));
        for (i, item) in items.iter().enumerate() {
            match self.in_index(i, |r| r.io(item, dtype, kind)) {
                Some((io, link)) => out.push(T::from_io(io, link)),
                None => ok = false,
            }
        }
        self.path.pop();
        ok.then_some(out)
    }

    fn io(&mut self, raw: &Value, dtype: &str, kind: IoKind) -> Option<(Io, Option<String>)> {
        let data = self.unwrap(raw, dtype)?;
        let what = kind.what();
        let map = self.object(data, what)?;
        let name = self.required_string(map, "name", what);
        let type_hint = self.string(map, "type_hint");
        let deprecated_type = self.string(map, "type");
        let description = self.string(map, "description");
        let link_key = kind.link_key();
        let link = link_key.and_then(|k| self.string(map, k));
        let mut extra = Extra::new();
        for (k, v) in map {
            match k.as_str() {
                "name" | "value" | "type_hint" | "description" => {}
                "type" if type_hint.is_none() || type_hint == deprecated_type => {}
                k if Some(k) == link_key => {}
                // The reference writes null links into every envelope.
                "get_from" | "set_to" if self.compas && v.is_null() => {}
                _ => {
                    extra.insert(k.clone(), v.clone());
                }
            }
        }
        if deprecated_type.is_some() && !self.compas {
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
        let value = match map.get("value") {
            None | Some(Value::Null) => None,
            Some(v) => Some(v.clone()),
        };
        self.rewrap(raw);
        let io = Io { name: name?, value, type_hint: type_hint.or(deprecated_type), description, extra };
        Some((io, link))
    }
}

const TASK_KEYS: &[&str] = &[
    "id", "type", "description", "condition", "scope_start", "scope_end", "inputs", "outputs", "params", "depends_on", "state",
];

#[derive(Clone, Copy)]
enum IoKind {
    Input,
    Output,
    Param,
}

impl IoKind {
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
        TaskInput { io, get_from }
    }
}
impl FromIo for TaskOutput {
    fn from_io(io: Io, set_to: Option<String>) -> Self {
        TaskOutput { io, set_to }
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
