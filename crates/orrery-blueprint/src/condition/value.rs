//! Python values during evaluation: conversion from and to JSON, truthiness, equality,
//! ordering, hashing and `repr`/`str`.

use std::cmp::Ordering;
use std::rc::Rc;

use indexmap::IndexMap;
use malachite_bigint::BigInt;
use num_traits::{FromPrimitive, ToPrimitive, Zero};

use super::callable::{Builtin, Method};
use super::EvalError;

/// CPython 3.11 refuses to convert an int with more digits than this to a string.
pub(crate) const MAX_INT_STR_DIGITS: usize = 4300;

pub(crate) type Dict = IndexMap<Key, (Value, Value)>;
pub(crate) type Set = IndexMap<Key, Value>;

#[derive(Clone, Debug)]
pub(crate) enum Value {
    None,
    Bool(bool),
    Int(BigInt),
    Float(f64),
    Str(Rc<str>),
    List(Rc<Vec<Value>>),
    Tuple(Rc<Vec<Value>>),
    Dict(Rc<Dict>),
    Set(Rc<Set>),
    Range(Range),
    Builtin(Builtin),
    Method(Rc<(Value, Method)>),
}

/// `range(start, stop, step)` with bounds that fit an i64; never materialised unless asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Range {
    pub start: i64,
    pub stop: i64,
    pub step: i64,
}

impl Range {
    pub fn len(&self) -> u64 {
        let (start, stop, step) = (self.start as i128, self.stop as i128, self.step as i128);
        let len = if step > 0 && start < stop {
            (stop - start - 1) / step + 1
        } else if step < 0 && start > stop {
            (start - stop - 1) / (-step) + 1
        } else {
            0
        };
        len as u64
    }

    pub fn get(&self, index: u64) -> i64 {
        (self.start as i128 + index as i128 * self.step as i128) as i64
    }

    pub fn contains(&self, value: &BigInt) -> bool {
        let Some(value) = value.to_i64() else {
            return false;
        };
        let (start, step, value) = (self.start as i128, self.step as i128, value as i128);
        let in_bounds = if step > 0 {
            value >= start && value < self.stop as i128
        } else {
            value <= start && value > self.stop as i128
        };
        in_bounds && (value - start) % step == 0
    }
}

/// A hashable value, with Python's hash equivalences: `1 == 1.0 == True` are one key.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Key {
    None,
    Int(BigInt),
    Float(u64),
    Str(Rc<str>),
    Tuple(Vec<Key>),
    Range(i64, i64, i64),
    Builtin(Builtin),
}

impl Key {
    pub fn of(value: &Value) -> Result<Key, EvalError> {
        Ok(match value {
            Value::None => Key::None,
            Value::Bool(b) => Key::Int(BigInt::from(*b as u8)),
            Value::Int(i) => Key::Int(i.clone()),
            Value::Float(f) => {
                if f.is_finite() && f.fract() == 0.0 {
                    Key::Int(BigInt::from_f64(*f).unwrap_or_default())
                } else {
                    Key::Float(f.to_bits())
                }
            }
            Value::Str(s) => Key::Str(s.clone()),
            Value::Tuple(items) => Key::Tuple(items.iter().map(Key::of).collect::<Result<_, _>>()?),
            Value::Range(r) => Key::Range(r.start, r.stop, r.step),
            Value::Builtin(b) => Key::Builtin(*b),
            other => return Err(EvalError::type_error(format!("unhashable type: '{}'", other.type_name()))),
        })
    }
}

/// A set of `items`: the first of equal items stays.
pub(crate) fn build_set(items: Vec<Value>) -> Result<Set, EvalError> {
    let mut set = Set::with_capacity(items.len());
    for item in items {
        let key = Key::of(&item)?;
        set.entry(key).or_insert(item);
    }
    Ok(set)
}

/// Python keeps the first key object and the last value.
pub(crate) fn insert_dict(dict: &mut Dict, key: Value, value: Value) -> Result<(), EvalError> {
    let hashed = Key::of(&key)?;
    match dict.get_mut(&hashed) {
        Some(entry) => entry.1 = value,
        None => {
            dict.insert(hashed, (key, value));
        }
    }
    Ok(())
}

impl Value {
    pub fn str(s: impl Into<Rc<str>>) -> Value {
        Value::Str(s.into())
    }

    pub fn int(i: impl Into<BigInt>) -> Value {
        Value::Int(i.into())
    }

    pub fn list(items: Vec<Value>) -> Value {
        Value::List(Rc::new(items))
    }

    pub fn tuple(items: Vec<Value>) -> Value {
        Value::Tuple(Rc::new(items))
    }

    pub fn type_name(&self) -> &'static str {
        match self {
            Value::None => "NoneType",
            Value::Bool(_) => "bool",
            Value::Int(_) => "int",
            Value::Float(_) => "float",
            Value::Str(_) => "str",
            Value::List(_) => "list",
            Value::Tuple(_) => "tuple",
            Value::Dict(_) => "dict",
            Value::Set(_) => "set",
            Value::Range(_) => "range",
            Value::Builtin(b) if b.is_type() => "type",
            Value::Builtin(_) => "builtin_function_or_method",
            Value::Method(_) => "builtin_function_or_method",
        }
    }

    pub fn truthy(&self) -> bool {
        match self {
            Value::None => false,
            Value::Bool(b) => *b,
            Value::Int(i) => !i.is_zero(),
            Value::Float(f) => *f != 0.0,
            Value::Str(s) => !s.is_empty(),
            Value::List(items) | Value::Tuple(items) => !items.is_empty(),
            Value::Dict(d) => !d.is_empty(),
            Value::Set(s) => !s.is_empty(),
            Value::Range(r) => r.len() > 0,
            Value::Builtin(_) | Value::Method(_) => true,
        }
    }

    /// The value as a Python number, if it is one (bool counts as int).
    pub fn as_number(&self) -> Option<Number> {
        match self {
            Value::Bool(b) => Some(Number::Int(BigInt::from(*b as u8))),
            Value::Int(i) => Some(Number::Int(i.clone())),
            Value::Float(f) => Some(Number::Float(*f)),
            _ => None,
        }
    }

    /// The value as an integer index (int or bool), for subscripts and counts.
    pub fn as_int(&self) -> Option<BigInt> {
        match self {
            Value::Bool(b) => Some(BigInt::from(*b as u8)),
            Value::Int(i) => Some(i.clone()),
            _ => None,
        }
    }

    pub fn from_json(json: &serde_json::Value) -> Value {
        match json {
            serde_json::Value::Null => Value::None,
            serde_json::Value::Bool(b) => Value::Bool(*b),
            serde_json::Value::Number(n) => {
                let text = n.to_string();
                if text.contains(['.', 'e', 'E']) {
                    Value::Float(text.parse().unwrap_or(f64::NAN))
                } else {
                    match text.parse::<BigInt>() {
                        Ok(i) => Value::Int(i),
                        Err(_) => Value::Float(text.parse().unwrap_or(f64::NAN)),
                    }
                }
            }
            serde_json::Value::String(s) => Value::str(s.as_str()),
            serde_json::Value::Array(items) => Value::list(items.iter().map(Value::from_json).collect()),
            serde_json::Value::Object(map) => {
                let dict: Dict = map
                    .iter()
                    .map(|(k, v)| {
                        let key: Rc<str> = k.as_str().into();
                        (Key::Str(key.clone()), (Value::Str(key), Value::from_json(v)))
                    })
                    .collect();
                Value::Dict(Rc::new(dict))
            }
        }
    }

    pub fn to_json(&self) -> Result<serde_json::Value, EvalError> {
        let not_json = || EvalError::type_error(format!("a '{}' value has no JSON form", self.type_name()));
        Ok(match self {
            Value::None => serde_json::Value::Null,
            Value::Bool(b) => serde_json::Value::Bool(*b),
            Value::Int(i) => serde_json::Value::Number(serde_json::from_str(&i.to_string()).map_err(|_| not_json())?),
            Value::Float(f) => serde_json::Value::Number(serde_json::Number::from_f64(*f).ok_or_else(not_json)?),
            Value::Str(s) => serde_json::Value::String(s.to_string()),
            Value::List(items) | Value::Tuple(items) => {
                serde_json::Value::Array(items.iter().map(Value::to_json).collect::<Result<_, _>>()?)
            }
            Value::Dict(d) => {
                let mut map = serde_json::Map::new();
                for (key, value) in d.values() {
                    let Value::Str(key) = key else {
                        return Err(not_json());
                    };
                    map.insert(key.to_string(), value.to_json()?);
                }
                serde_json::Value::Object(map)
            }
            _ => return Err(not_json()),
        })
    }

    /// Python identity, as far as it is observable with values that have no address: the
    /// singletons, CPython's cached small ints, and shared containers.
    pub fn is(&self, other: &Value) -> bool {
        match (self, other) {
            (Value::None, Value::None) => true,
            (Value::Bool(a), Value::Bool(b)) => a == b,
            (Value::Int(a), Value::Int(b)) => a == b && a.to_i64().is_some_and(|small| (-5..=256).contains(&small)),
            (Value::Str(a), Value::Str(b)) => Rc::ptr_eq(a, b) || (a.is_empty() && b.is_empty()),
            (Value::List(a), Value::List(b)) | (Value::Tuple(a), Value::Tuple(b)) => Rc::ptr_eq(a, b),
            (Value::Dict(a), Value::Dict(b)) => Rc::ptr_eq(a, b),
            (Value::Set(a), Value::Set(b)) => Rc::ptr_eq(a, b),
            (Value::Builtin(a), Value::Builtin(b)) => a == b,
            _ => false,
        }
    }
}

/// Bytes one element slot of a list or tuple takes.
pub(crate) const SLOT_BYTES: u64 = std::mem::size_of::<Value>() as u64;
/// Bytes one entry of a dict or set takes: its hash key, its key and value, its index slot.
pub(crate) const ENTRY_BYTES: u64 = (std::mem::size_of::<Key>() + 2 * std::mem::size_of::<Value>() + 16) as u64;
/// Bytes of the header of a shared allocation (an `Rc`'s counts).
const RC_BYTES: u64 = 16;

pub(crate) fn str_bytes(len: usize) -> u64 {
    RC_BYTES + len as u64
}

pub(crate) fn vec_bytes(len: usize) -> u64 {
    RC_BYTES + 24 + len as u64 * SLOT_BYTES
}

pub(crate) fn map_bytes(len: usize) -> u64 {
    RC_BYTES + 64 + len as u64 * ENTRY_BYTES
}

fn int_heap_bytes(i: &BigInt) -> u64 {
    let bits = i.bits();
    if bits > 64 {
        bits.div_ceil(64) * 8
    } else {
        0
    }
}

fn key_heap_bytes(key: &Key) -> u64 {
    let mut total = 0;
    let mut stack = vec![key];
    while let Some(key) = stack.pop() {
        match key {
            Key::Int(i) => total += int_heap_bytes(i),
            Key::Tuple(items) => {
                total += items.len() as u64 * std::mem::size_of::<Key>() as u64;
                stack.extend(items.iter());
            }
            _ => {}
        }
    }
    total
}

/// The bytes of `value` that nothing else holds: the parts of it built since its operands
/// (which must still be alive) were. A shared part (an `Rc` held elsewhere too) is not
/// entered: it was counted when it was built. Iterative, so a deep value cannot overflow the
/// stack.
pub(crate) fn fresh_bytes(value: &Value) -> u64 {
    let mut total = 0u64;
    let mut stack: Vec<&Value> = vec![value];
    while let Some(value) = stack.pop() {
        match value {
            Value::Int(i) => total += int_heap_bytes(i),
            Value::Str(s) if Rc::strong_count(s) == 1 => total += str_bytes(s.len()),
            Value::List(items) | Value::Tuple(items) if Rc::strong_count(items) == 1 => {
                total += vec_bytes(items.len());
                for item in items.iter() {
                    match item {
                        Value::Int(i) => total += int_heap_bytes(i),
                        item if !is_scalar(item) => stack.push(item),
                        _ => {}
                    }
                }
            }
            Value::Dict(dict) if Rc::strong_count(dict) == 1 => {
                total += map_bytes(dict.len());
                for (hashed, (key, value)) in dict.iter() {
                    total += key_heap_bytes(hashed);
                    match key {
                        // A string key is held twice, as the hash key and as the key object.
                        Value::Str(s) if Rc::strong_count(s) <= 2 => total += str_bytes(s.len()),
                        Value::Str(_) => {}
                        other => stack.push(other),
                    }
                    if !is_scalar(value) {
                        stack.push(value);
                    }
                }
            }
            Value::Set(set) if Rc::strong_count(set) == 1 => {
                total += map_bytes(set.len());
                for (hashed, item) in set.iter() {
                    total += key_heap_bytes(hashed);
                    match item {
                        Value::Str(s) if Rc::strong_count(s) <= 2 => total += str_bytes(s.len()),
                        Value::Str(_) => {}
                        other => stack.push(other),
                    }
                }
            }
            Value::Method(method) if Rc::strong_count(method) == 1 => total += RC_BYTES + SLOT_BYTES,
            _ => {}
        }
    }
    total
}

/// A value with nothing on the heap but (perhaps) a big integer's digits.
fn is_scalar(value: &Value) -> bool {
    matches!(value, Value::None | Value::Bool(_) | Value::Float(_) | Value::Range(_) | Value::Builtin(_))
}

/// A number with bool folded into int.
#[derive(Clone, Debug)]
pub(crate) enum Number {
    Int(BigInt),
    Float(f64),
}

impl Number {
    pub fn to_f64(&self) -> Result<f64, EvalError> {
        match self {
            Number::Float(f) => Ok(*f),
            Number::Int(i) => int_to_f64(i),
        }
    }
}

pub(crate) fn int_to_f64(i: &BigInt) -> Result<f64, EvalError> {
    match i.to_f64() {
        Some(f) if f.is_finite() => Ok(f),
        _ => Err(EvalError::new(super::EvalErrorKind::Overflow, "int too large to convert to float")),
    }
}

/// Exact comparison of an int with a float, as CPython does it.
fn compare_int_float(i: &BigInt, f: f64) -> Option<Ordering> {
    if f.is_nan() {
        return None;
    }
    if f.is_infinite() {
        return Some(if f > 0.0 { Ordering::Less } else { Ordering::Greater });
    }
    let floor = f.floor();
    let floor_int = BigInt::from_f64(floor)?;
    match i.cmp(&floor_int) {
        Ordering::Equal if f > floor => Some(Ordering::Less),
        ordering => Some(ordering),
    }
}

pub(crate) fn compare_numbers(a: &Number, b: &Number) -> Option<Ordering> {
    match (a, b) {
        (Number::Int(a), Number::Int(b)) => Some(a.cmp(b)),
        (Number::Float(a), Number::Float(b)) => a.partial_cmp(b),
        (Number::Int(a), Number::Float(b)) => compare_int_float(a, *b),
        (Number::Float(a), Number::Int(b)) => compare_int_float(b, *a).map(Ordering::reverse),
    }
}

/// Python `==`.
pub(crate) fn py_eq(a: &Value, b: &Value) -> bool {
    if let (Some(x), Some(y)) = (a.as_number(), b.as_number()) {
        return compare_numbers(&x, &y) == Some(Ordering::Equal);
    }
    match (a, b) {
        (Value::None, Value::None) => true,
        (Value::Str(x), Value::Str(y)) => x == y,
        (Value::List(x), Value::List(y)) | (Value::Tuple(x), Value::Tuple(y)) => {
            x.len() == y.len() && x.iter().zip(y.iter()).all(|(p, q)| p.is(q) || py_eq(p, q))
        }
        (Value::Dict(x), Value::Dict(y)) => {
            x.len() == y.len()
                && x.iter().all(|(key, (_, value))| y.get(key).is_some_and(|(_, other)| py_eq(value, other)))
        }
        (Value::Set(x), Value::Set(y)) => x.len() == y.len() && x.keys().all(|key| y.contains_key(key)),
        (Value::Range(x), Value::Range(y)) => {
            let (lx, ly) = (x.len(), y.len());
            lx == ly && (lx == 0 || (x.start == y.start && (lx == 1 || x.step == y.step)))
        }
        (Value::Builtin(x), Value::Builtin(y)) => x == y,
        (Value::Method(x), Value::Method(y)) => x.1 == y.1 && x.0.is(&y.0),
        _ => false,
    }
}

/// Python `<` and friends; `None` when Python would raise TypeError.
pub(crate) fn py_cmp(a: &Value, b: &Value) -> Result<Option<Ordering>, EvalError> {
    if let (Some(x), Some(y)) = (a.as_number(), b.as_number()) {
        return Ok(compare_numbers(&x, &y));
    }
    match (a, b) {
        (Value::Str(x), Value::Str(y)) => Ok(Some(x.cmp(y))),
        (Value::List(x), Value::List(y)) | (Value::Tuple(x), Value::Tuple(y)) => {
            for (p, q) in x.iter().zip(y.iter()) {
                if !py_eq(p, q) {
                    return py_cmp(p, q);
                }
            }
            Ok(Some(x.len().cmp(&y.len())))
        }
        _ => Err(EvalError::type_error(String::new())),
    }
}

pub(crate) fn float_repr(f: f64) -> String {
    if f.is_nan() {
        return "nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0.0".into() } else { "0.0".into() };
    }
    // `{:e}` gives the shortest digits that round-trip, as Python's repr does.
    let scientific = format!("{f:e}");
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let negative = mantissa.starts_with('-');
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let sign = if negative { "-" } else { "" };
    if (-4..16).contains(&exponent) {
        let point = exponent + 1;
        let body = if point <= 0 {
            format!("0.{}{}", "0".repeat((-point) as usize), digits)
        } else if point as usize >= digits.len() {
            format!("{}{}.0", digits, "0".repeat(point as usize - digits.len()))
        } else {
            format!("{}.{}", &digits[..point as usize], &digits[point as usize..])
        };
        format!("{sign}{body}")
    } else {
        let fraction = if digits.len() > 1 { format!(".{}", &digits[1..]) } else { String::new() };
        let exponent_sign = if exponent < 0 { '-' } else { '+' };
        format!("{sign}{}{fraction}e{exponent_sign}{:02}", &digits[..1], exponent.abs())
    }
}

pub(crate) fn int_str(i: &BigInt) -> Result<String, EvalError> {
    // A cheap bound first: an int of n bits has at least (n - 1) * log10(2) digits.
    if (i.bits().saturating_sub(1)) as f64 * std::f64::consts::LOG10_2 > MAX_INT_STR_DIGITS as f64 {
        return Err(too_many_digits());
    }
    let text = i.to_string();
    if text.trim_start_matches('-').len() > MAX_INT_STR_DIGITS {
        return Err(too_many_digits());
    }
    Ok(text)
}

fn too_many_digits() -> EvalError {
    EvalError::value_error(format!(
        "Exceeds the limit ({MAX_INT_STR_DIGITS} digits) for integer string conversion; use sys.set_int_max_str_digits() to increase the limit"
    ))
}

pub(crate) fn str_repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') { '"' } else { '\'' };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for ch in s.chars() {
        match ch {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if c.is_control() => {
                let code = c as u32;
                if code <= 0xff {
                    out.push_str(&format!("\\x{code:02x}"));
                } else if code <= 0xffff {
                    out.push_str(&format!("\\u{code:04x}"));
                } else {
                    out.push_str(&format!("\\U{code:08x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// Python `repr()`.
pub(crate) fn repr(value: &Value) -> Result<String, EvalError> {
    Ok(match value {
        Value::None => "None".into(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Int(i) => int_str(i)?,
        Value::Float(f) => float_repr(*f),
        Value::Str(s) => str_repr(s),
        Value::List(items) => format!("[{}]", join_reprs(items.iter())?),
        Value::Tuple(items) if items.len() == 1 => format!("({},)", repr(&items[0])?),
        Value::Tuple(items) => format!("({})", join_reprs(items.iter())?),
        Value::Dict(d) => {
            let parts: Vec<String> =
                d.values().map(|(k, v)| Ok(format!("{}: {}", repr(k)?, repr(v)?))).collect::<Result<_, EvalError>>()?;
            format!("{{{}}}", parts.join(", "))
        }
        Value::Set(s) if s.is_empty() => "set()".into(),
        Value::Set(s) => format!("{{{}}}", join_reprs(s.values())?),
        Value::Range(r) if r.step == 1 => format!("range({}, {})", r.start, r.stop),
        Value::Range(r) => format!("range({}, {}, {})", r.start, r.stop, r.step),
        Value::Builtin(b) if b.is_type() => format!("<class '{}'>", b.name()),
        Value::Builtin(b) => format!("<built-in function {}>", b.name()),
        Value::Method(m) => format!("<built-in method {} of {} object>", m.1.name(), m.0.type_name()),
    })
}

/// Python `str()`.
pub(crate) fn to_str(value: &Value) -> Result<String, EvalError> {
    match value {
        Value::Str(s) => Ok(s.to_string()),
        other => repr(other),
    }
}

fn join_reprs<'a>(items: impl Iterator<Item = &'a Value>) -> Result<String, EvalError> {
    let parts: Vec<String> = items.map(repr).collect::<Result<_, _>>()?;
    Ok(parts.join(", "))
}
