//! Writing a blueprint canonically (docs/format.md §1), in either encoding.
//!
//! Plain form: the reference's key order, nulls and empty lists left out, `scope_start: {}`
//! kept, keys Orrery does not know written after the known ones in their original order,
//! four-space indentation, UTF-8, a final newline. COMPAS form: what the reference server
//! stores (`json_dumps(pretty=True)`: sorted keys, ASCII escapes, every field present), with
//! the derived `scopes`, and GUIDs derived from content so that saving twice gives the same
//! bytes. The output depends only on the blueprint, never on where it was loaded from.

use crate::load::*;
use crate::model::*;
use crate::scope;
use serde::Serialize;
use serde_json::{Map, Value};
use std::io;

/// Writes `blueprint` in `encoding`.
pub fn to_string(blueprint: &Blueprint, encoding: Encoding) -> String {
    let (value, ascii) = match encoding {
        Encoding::Plain => (plain(blueprint), false),
        Encoding::Compas => (sort_keys(compas(blueprint)), true),
    };
    let mut out = Vec::with_capacity(256 * blueprint.tasks.len() + 256);
    let formatter = Pretty { inner: serde_json::ser::PrettyFormatter::with_indent(b"    "), ascii };
    let mut ser = serde_json::Serializer::with_formatter(&mut out, formatter);
    value.serialize(&mut ser).expect("a JSON value always serializes");
    out.push(b'\n');
    String::from_utf8(out).expect("serde_json writes UTF-8")
}

/// The canonical plain JSON value of a blueprint.
pub fn plain(bp: &Blueprint) -> Value {
    let mut m = Map::new();
    m.insert("id".into(), bp.id.clone().into());
    m.insert("name".into(), bp.name.clone().into());
    m.insert("version".into(), bp.version.clone().into());
    put_str(&mut m, "description", &bp.description);
    if !bp.tasks.is_empty() {
        m.insert("tasks".into(), bp.tasks.iter().map(plain_task).collect());
    }
    put_extra(&mut m, &bp.extra);
    Value::Object(m)
}

fn plain_task(t: &Task) -> Value {
    let mut m = Map::new();
    m.insert("id".into(), t.id.as_str().into());
    m.insert("type".into(), t.task_type.as_str().into());
    put_str(&mut m, "description", &t.description);
    put_str(&mut m, "condition", &t.condition);
    if let Some(s) = &t.scope_start {
        m.insert("scope_start".into(), scope_start_value(s));
    }
    put_str(&mut m, "scope_end", &t.scope_end);
    put_list(&mut m, "inputs", t.inputs.iter().map(|i| io_value(&i.io, Some(("get_from", &i.get_from)), false)));
    put_list(&mut m, "outputs", t.outputs.iter().map(|o| io_value(&o.io, Some(("set_to", &o.set_to)), false)));
    put_list(&mut m, "params", t.params.iter().map(|p| io_value(&p.io, None, false)));
    put_list(&mut m, "depends_on", t.depends_on.iter().map(dependency_value));
    if let Some(state) = t.state {
        m.insert("state".into(), state.as_str().into());
    }
    put_extra(&mut m, &t.extra);
    Value::Object(m)
}

/// The `scope_start` object, in schema order.
pub fn scope_start_value(s: &ScopeStart) -> Value {
    let mut m = Map::new();
    put_str(&mut m, "name", &s.name);
    if let Some(r) = &s.retry_policy {
        let mut rm = Map::new();
        rm.insert("retries".into(), r.retries.into());
        if let Some(b) = &r.backoff {
            let mut bm = Map::new();
            if let Some(ms) = b.constant_ms {
                bm.insert("constant_ms".into(), ms.into());
            }
            put_extra(&mut bm, &b.extra);
            rm.insert("backoff".into(), Value::Object(bm));
        }
        m.insert("retry_policy".into(), Value::Object(rm));
    }
    if let Some(w) = &s.while_policy {
        let mut wm = Map::new();
        wm.insert("condition".into(), w.condition.clone().into());
        if let Some(n) = w.max_iterations {
            wm.insert("max_iterations".into(), n.into());
        }
        m.insert("while_policy".into(), Value::Object(wm));
    }
    Value::Object(m)
}

/// An IO item; `full` writes every field (nulls too), as COMPAS envelopes carry them.
fn io_value(io: &Io, link: Option<(&str, &Option<CompactString>)>, full: bool) -> Value {
    let mut m = Map::new();
    m.insert("name".into(), io.name.as_str().into());
    let put = |m: &mut Map<String, Value>, key: &str, v: Option<Value>| match v {
        Some(v) => {
            m.insert(key.into(), v);
        }
        None if full => {
            m.insert(key.into(), Value::Null);
        }
        None => {}
    };
    put(&mut m, "value", io.value.clone());
    put(&mut m, "type_hint", io.type_hint.as_deref().map(Value::from));
    put(&mut m, "description", io.description().map(Value::from));
    if let Some((key, target)) = link {
        put(&mut m, key, target.as_deref().filter(|t| !t.is_empty()).map(Value::from));
    }
    put_extra(&mut m, io.extra());
    Value::Object(m)
}

fn dependency_value(d: &Dependency) -> Value {
    let mut m = Map::new();
    m.insert("id".into(), d.id.as_str().into());
    m.insert("type".into(), d.dep_type.as_str().into());
    put_extra(&mut m, &d.extra);
    Value::Object(m)
}

fn put_str(m: &mut Map<String, Value>, key: &str, v: &Option<impl AsRef<str>>) {
    if let Some(s) = v {
        m.insert(key.into(), s.as_ref().into());
    }
}

fn put_list(m: &mut Map<String, Value>, key: &str, items: impl ExactSizeIterator<Item = Value>) {
    if items.len() > 0 {
        m.insert(key.into(), Value::Array(items.collect()));
    }
}

fn put_extra(m: &mut Map<String, Value>, extra: &Extra) {
    for (k, v) in extra {
        if !m.contains_key(k) {
            m.insert(k.clone(), v.clone());
        }
    }
}

/// The COMPAS value of a blueprint, as the reference's `json_dumps` writes it.
pub fn compas(bp: &Blueprint) -> Value {
    let guid = |parts: &[&str]| Value::from(content_guid(&bp.id, parts));
    // COMPAS repeats the `name` of objects that have one (blueprints, IO items) on the envelope.
    let envelope = |dtype: &str, guid: Value, data: Map<String, Value>| {
        let mut m = Map::new();
        let name = data.get("name").filter(|n| n.is_string() && dtype != DTYPE_SCOPE).cloned();
        m.insert("data".into(), Value::Object(data));
        m.insert("dtype".into(), dtype.into());
        m.insert("guid".into(), guid);
        if let Some(name) = name {
            m.insert("name".into(), name);
        }
        Value::Object(m)
    };
    let mut tasks = Vec::with_capacity(bp.tasks.len());
    for (ti, t) in bp.tasks.iter().enumerate() {
        let tkey = ti.to_string();
        let io_list = |kind: &str, dtype: &str, items: Vec<Value>| -> Value {
            items
                .into_iter()
                .enumerate()
                .map(|(i, v)| {
                    let Value::Object(data) = v else { unreachable!("io_value builds objects") };
                    envelope(dtype, guid(&[&tkey, kind, &i.to_string()]), data)
                })
                .collect()
        };
        let mut d = Map::new();
        d.insert("id".into(), t.id.as_str().into());
        d.insert("type".into(), t.task_type.as_str().into());
        d.insert("description".into(), opt(&t.description));
        d.insert("condition".into(), opt(&t.condition));
        let inputs = t.inputs.iter().map(|i| io_value(&i.io, Some(("get_from", &i.get_from)), true)).collect();
        d.insert("inputs".into(), io_list("inputs", DTYPE_INPUT, inputs));
        let outputs = t.outputs.iter().map(|o| io_value(&o.io, Some(("set_to", &o.set_to)), true)).collect();
        d.insert("outputs".into(), io_list("outputs", DTYPE_OUTPUT, outputs));
        let params = t.params.iter().map(|p| io_value(&p.io, None, true)).collect();
        d.insert("params".into(), io_list("params", DTYPE_PARAM, params));
        let deps = t.depends_on.iter().enumerate().map(|(i, dep)| {
            let Value::Object(data) = dependency_value(dep) else { unreachable!() };
            envelope(DTYPE_DEPENDENCY, guid(&[&tkey, "depends_on", &i.to_string()]), data)
        });
        d.insert("depends_on".into(), deps.collect());
        d.insert("state".into(), t.state.unwrap_or(TaskState::Pending).as_str().into());
        d.insert("scope_start".into(), t.scope_start.as_deref().map_or(Value::Null, scope_start_value));
        d.insert("scope_end".into(), opt(&t.scope_end));
        put_extra(&mut d, &t.extra);
        tasks.push(envelope(DTYPE_TASK, guid(&[&tkey]), d));
    }
    let scopes = scope::scopes(bp)
        .into_iter()
        .map(|s| {
            let start = &bp.tasks[s.start];
            let policy = start.scope_start.as_ref().expect("a scope opens on a scope_start task");
            let mut d = Map::new();
            d.insert("id".into(), start.id.as_str().into());
            d.insert(
                "label".into(),
                policy.name.clone().filter(|n| !n.is_empty()).unwrap_or_else(|| start.id.to_string()).into(),
            );
            let mut ids: Vec<&str> = s.members.iter().map(|&i| bp.tasks[i].id.as_str()).collect();
            ids.sort_unstable();
            ids.dedup();
            d.insert("task_ids".into(), ids.into());
            d.insert("end_task_id".into(), bp.tasks[s.end].id.as_str().into());
            let policy_type = match policy.policy() {
                ScopePolicy::Skip => "skip",
                ScopePolicy::Retry(_) => "retry",
                ScopePolicy::While(_) => "while",
            };
            d.insert("policy_type".into(), policy_type.into());
            d.insert("policy".into(), scope_start_value(policy));
            envelope(DTYPE_SCOPE, guid(&["scope", &start.id]), d)
        })
        .collect();
    let mut d = Map::new();
    d.insert("id".into(), bp.id.clone().into());
    d.insert("name".into(), bp.name.clone().into());
    d.insert("version".into(), bp.version.clone().into());
    d.insert("description".into(), opt(&bp.description));
    d.insert("tasks".into(), Value::Array(tasks));
    d.insert("scopes".into(), scopes);
    put_extra(&mut d, &bp.extra);
    envelope(DTYPE_BLUEPRINT, guid(&[]), d)
}

fn opt(s: &Option<impl AsRef<str>>) -> Value {
    s.as_ref().map_or(Value::Null, |s| s.as_ref().into())
}

fn sort_keys(v: Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut entries: Vec<(String, Value)> = m.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(entries.into_iter().map(|(k, v)| (k, sort_keys(v))).collect())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sort_keys).collect()),
        other => other,
    }
}

/// A UUID-shaped identifier derived from the blueprint id and a position, so that envelopes
/// keep their GUIDs from one save to the next.
fn content_guid(blueprint_id: &str, parts: &[&str]) -> String {
    let mut a: u64 = 0xcbf2_9ce4_8422_2325;
    let mut b: u64 = 0x8422_2325_cbf2_9ce4;
    for chunk in std::iter::once(blueprint_id).chain(parts.iter().copied()) {
        for &byte in chunk.as_bytes().iter().chain(b"\x1f") {
            a = (a ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3);
            b = (b ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3).rotate_left(29);
        }
    }
    // Version 8 (custom) and RFC 4122 variant bits.
    let hi = (a & 0xffff_ffff_ffff_0fff) | 0x0000_0000_0000_8000;
    let lo = (b & 0x3fff_ffff_ffff_ffff) | 0x8000_0000_0000_0000;
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        hi >> 32,
        (hi >> 16) & 0xffff,
        hi & 0xffff,
        lo >> 48,
        lo & 0xffff_ffff_ffff
    )
}

/// Pretty printing with Python's `ensure_ascii` when asked for.
struct Pretty<'a> {
    inner: serde_json::ser::PrettyFormatter<'a>,
    ascii: bool,
}

impl serde_json::ser::Formatter for Pretty<'_> {
    fn write_string_fragment<W: ?Sized + io::Write>(&mut self, w: &mut W, fragment: &str) -> io::Result<()> {
        if !self.ascii || fragment.bytes().all(|b| b < 0x7f) {
            return w.write_all(fragment.as_bytes());
        }
        let mut buf = [0u16; 2];
        for c in fragment.chars() {
            if (c as u32) < 0x7f {
                w.write_all(&[c as u8])?;
            } else {
                for unit in c.encode_utf16(&mut buf) {
                    write!(w, "\\u{unit:04x}")?;
                }
            }
        }
        Ok(())
    }
    fn begin_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.inner.begin_array(w)
    }
    fn end_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.inner.end_array(w)
    }
    fn begin_array_value<W: ?Sized + io::Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.inner.begin_array_value(w, first)
    }
    fn end_array_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.inner.end_array_value(w)
    }
    fn begin_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.inner.begin_object(w)
    }
    fn end_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.inner.end_object(w)
    }
    fn begin_object_key<W: ?Sized + io::Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.inner.begin_object_key(w, first)
    }
    fn end_object_key<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.inner.end_object_key(w)
    }
    fn begin_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.inner.begin_object_value(w)
    }
    fn end_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.inner.end_object_value(w)
    }
}
