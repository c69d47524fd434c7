//! Attribute lookup and the methods of str, list, tuple, dict and set: apart from the functions
//! because they dispatch on the receiver's type, and str's many methods need their own helpers.

use std::rc::Rc;

use num_traits::{Signed, ToPrimitive};

use super::arguments::{type_error_arg, Arguments};
use crate::condition::budget::Budget;
use crate::condition::callable::Method;
use crate::condition::ops;
use crate::condition::value::{self, build_set, py_eq, Value};
use crate::condition::{EvalError, EvalErrorKind};

const STR_METHODS: &[&str] = &[
    "capitalize",
    "casefold",
    "count",
    "endswith",
    "find",
    "index",
    "isalnum",
    "isalpha",
    "isascii",
    "isdecimal",
    "isdigit",
    "islower",
    "isnumeric",
    "isspace",
    "isupper",
    "join",
    "lower",
    "lstrip",
    "removeprefix",
    "removesuffix",
    "replace",
    "rfind",
    "rindex",
    "rsplit",
    "rstrip",
    "split",
    "splitlines",
    "startswith",
    "strip",
    "swapcase",
    "title",
    "upper",
    "zfill",
];
const LIST_METHODS: &[&str] = &["copy", "count", "index"];
const TUPLE_METHODS: &[&str] = &["count", "index"];
const DICT_METHODS: &[&str] = &["copy", "get", "items", "keys", "values"];
const SET_METHODS: &[&str] =
    &["copy", "difference", "intersection", "isdisjoint", "issubset", "issuperset", "symmetric_difference", "union"];

/// Non-dunder attributes CPython 3.11 has on each type, to tell "not provided" from "no such".
const PYTHON_ATTRIBUTES: &[(&str, &str)] = &[
    ("str", "capitalize casefold center count encode endswith expandtabs find format format_map index isalnum isalpha isascii isdecimal isdigit isidentifier islower isnumeric isprintable isspace istitle isupper join ljust lower lstrip maketrans partition removeprefix removesuffix replace rfind rindex rjust rpartition rsplit rstrip split splitlines startswith strip swapcase title translate upper zfill"),
    ("list", "append clear copy count extend index insert pop remove reverse sort"),
    ("dict", "clear copy fromkeys get items keys pop popitem setdefault update values"),
    ("tuple", "count index"),
    ("int", "as_integer_ratio bit_count bit_length conjugate denominator from_bytes imag numerator real to_bytes"),
    ("bool", "as_integer_ratio bit_count bit_length conjugate denominator from_bytes imag numerator real to_bytes"),
    ("float", "as_integer_ratio conjugate fromhex hex imag is_integer real"),
    ("set", "add clear copy difference difference_update discard intersection intersection_update isdisjoint issubset issuperset pop remove symmetric_difference symmetric_difference_update union update"),
    ("range", "count index start step stop"),
];

/// asteval's `UNSAFE_ATTRS`, refused on every object.
const UNSAFE_ATTRIBUTES: &[&str] = &[
    "__subclasses__",
    "__bases__",
    "__globals__",
    "__code__",
    "__reduce__",
    "__reduce_ex__",
    "__mro__",
    "__closure__",
    "__func__",
    "__self__",
    "__module__",
    "__dict__",
    "__class__",
    "__call__",
    "__get__",
    "__getattribute__",
    "__subclasshook__",
    "__new__",
    "__init__",
    "func_globals",
    "func_code",
    "func_closure",
    "im_class",
    "im_func",
    "im_self",
    "gi_code",
    "gi_frame",
    "f_locals",
    "__asteval__",
    "mro",
];

/// `object.name` as asteval's `safe_getattr` resolves it.
pub(crate) fn attribute(object: Value, name: &str) -> Result<Value, EvalError> {
    let type_name = object.type_name();
    let unsafe_attribute = UNSAFE_ATTRIBUTES.contains(&name)
        || (name.starts_with("__") && name.ends_with("__"))
        || (matches!(object, Value::Str(_)) && (name == "format" || name == "format_map"));
    if unsafe_attribute {
        return Err(EvalError::new(
            EvalErrorKind::AttributeError,
            format!("no safe attribute '{name}' for {}", value::repr(&object).unwrap_or_default()),
        ));
    }
    let supported: &[&str] = match object {
        Value::Str(_) => STR_METHODS,
        Value::List(_) => LIST_METHODS,
        Value::Tuple(_) => TUPLE_METHODS,
        Value::Dict(_) => DICT_METHODS,
        Value::Set(_) => SET_METHODS,
        _ => &[],
    };
    if let Some(method) = supported.iter().find(|method| **method == name) {
        return Ok(Value::Method(Rc::new((object, Method(method)))));
    }
    let exists_in_python = PYTHON_ATTRIBUTES
        .iter()
        .any(|(type_, names)| *type_ == type_name && names.split(' ').any(|known| known == name));
    if exists_in_python {
        return Err(EvalError::unsupported(format!("'{type_name}.{name}' is not supported in conditions")));
    }
    Err(EvalError::new(EvalErrorKind::AttributeError, format!("'{type_name}' object has no attribute '{name}'")))
}

pub(super) fn call_method(
    budget: &mut Budget,
    receiver: &Value,
    name: &'static str,
    mut args: Arguments,
) -> Result<Value, EvalError> {
    match receiver {
        Value::Str(text) => str_method(budget, text, name, args),
        Value::List(items) | Value::Tuple(items) => {
            args.no_more_keywords()?;
            match name {
                "copy" => {
                    args.count(0, 0)?;
                    Ok(Value::list((**items).clone()))
                }
                "count" => {
                    args.count(1, 1)?;
                    budget.charge(items.len() as u64)?;
                    let needle = &args.positional[0];
                    Ok(Value::int(items.iter().filter(|item| item.is(needle) || py_eq(item, needle)).count() as u64))
                }
                _ => {
                    args.count(1, 3)?;
                    budget.charge(items.len() as u64)?;
                    let needle = &args.positional[0];
                    let bound = |index: usize, default: usize| -> Result<usize, EvalError> {
                        match args.get(index) {
                            None => Ok(default),
                            Some(value) => {
                                let i = value.as_int().ok_or_else(|| type_error_arg(name, value))?;
                                let i = i.to_i128().unwrap_or(0);
                                let len = items.len() as i128;
                                Ok((if i < 0 { (i + len).max(0) } else { i.min(len) }) as usize)
                            }
                        }
                    };
                    let (start, end) = (bound(1, 0)?, bound(2, items.len())?);
                    let found = (start..end.max(start)).find(|&i| items[i].is(needle) || py_eq(&items[i], needle));
                    match found {
                        Some(index) => Ok(Value::int(index as u64)),
                        None => Err(EvalError::value_error(format!(
                            "{} not in {}",
                            value::repr(needle)?,
                            if matches!(receiver, Value::List(_)) { "list" } else { "tuple" }
                        ))),
                    }
                }
            }
        }
        Value::Dict(dict) => {
            args.no_more_keywords()?;
            match name {
                "get" => {
                    args.count(1, 2)?;
                    let key = value::Key::of(&args.positional[0])?;
                    Ok(match dict.get(&key) {
                        Some((_, value)) => value.clone(),
                        None => args.get(1).cloned().unwrap_or(Value::None),
                    })
                }
                "keys" => {
                    args.count(0, 0)?;
                    Ok(Value::list(dict.values().map(|(k, _)| k.clone()).collect()))
                }
                "values" => {
                    args.count(0, 0)?;
                    Ok(Value::list(dict.values().map(|(_, v)| v.clone()).collect()))
                }
                "items" => {
                    args.count(0, 0)?;
                    Ok(Value::list(dict.values().map(|(k, v)| Value::tuple(vec![k.clone(), v.clone()])).collect()))
                }
                _ => {
                    args.count(0, 0)?;
                    Ok(Value::Dict(Rc::new((**dict).clone())))
                }
            }
        }
        Value::Set(set) => {
            args.no_more_keywords()?;
            use rustpython_parser::ast::{CmpOp, Operator};
            let mut result = Value::Set(set.clone());
            if name == "copy" {
                args.count(0, 0)?;
                return Ok(result);
            }
            if matches!(name, "isdisjoint" | "issubset" | "issuperset") {
                args.count(1, 1)?;
                let other = Value::Set(Rc::new(build_set(ops::iterate(budget, &args.positional[0])?)?));
                return match name {
                    "issubset" => ops::compare(budget, CmpOp::LtE, &result, &other),
                    "issuperset" => ops::compare(budget, CmpOp::GtE, &result, &other),
                    _ => {
                        let common = ops::binary(budget, Operator::BitAnd, &result, &other)?;
                        Ok(Value::Bool(!common.truthy()))
                    }
                };
            }
            let op = match name {
                "union" => Operator::BitOr,
                "intersection" => Operator::BitAnd,
                "difference" => Operator::Sub,
                _ => {
                    args.count(1, 1)?;
                    Operator::BitXor
                }
            };
            for other in std::mem::take(&mut args.positional) {
                let other = Value::Set(Rc::new(build_set(ops::iterate(budget, &other)?)?));
                result = ops::binary(budget, op, &result, &other)?;
            }
            Ok(result)
        }
        other => Err(EvalError::type_error(format!("'{}' object has no method '{name}'", other.type_name()))),
    }
}

fn str_arg<'v>(function: &str, value: &'v Value) -> Result<&'v str, EvalError> {
    match value {
        Value::Str(s) => Ok(s),
        other => Err(EvalError::type_error(format!("{function}() argument must be str, not {}", other.type_name()))),
    }
}

fn optional_str_arg<'v>(function: &str, value: Option<&'v Value>) -> Result<Option<&'v str>, EvalError> {
    match value {
        None | Some(Value::None) => Ok(None),
        Some(value) => str_arg(function, value).map(Some),
    }
}

/// Character positions `[start, end)` of `text[start:end]`, as str methods take them.
fn char_window(text: &str, start: Option<&Value>, end: Option<&Value>) -> Result<(usize, usize), EvalError> {
    let len = text.chars().count() as i128;
    let bound = |value: Option<&Value>, default: i128| -> Result<i128, EvalError> {
        match value {
            None | Some(Value::None) => Ok(default),
            Some(value) => {
                let i = value.as_int().ok_or_else(|| {
                    EvalError::type_error("slice indices must be integers or None or have an __index__ method")
                })?;
                let i = i.to_i128().unwrap_or(if i.is_negative() { -len - 1 } else { len + 1 });
                Ok(if i < 0 { (i + len).max(0) } else { i.min(len) })
            }
        }
    };
    Ok((bound(start, 0)? as usize, bound(end, len)? as usize))
}

fn char_slice(text: &str, start: usize, end: usize) -> &str {
    if start >= end {
        return "";
    }
    let mut indices = text.char_indices().map(|(i, _)| i).chain(std::iter::once(text.len()));
    let begin = indices.nth(start).unwrap_or(text.len());
    let finish = indices.nth(end - start - 1).unwrap_or(text.len());
    &text[begin..finish]
}

fn str_method(
    budget: &mut Budget,
    text: &Rc<str>,
    name: &'static str,
    mut args: Arguments,
) -> Result<Value, EvalError> {
    budget.charge(text.len() as u64 / 64)?;
    let keyword_names: &[&str] = match name {
        "split" | "rsplit" => &["sep", "maxsplit"],
        "splitlines" => &["keepends"],
        _ => &[],
    };
    let mut keywords: Vec<Option<Value>> = keyword_names.iter().map(|k| args.keyword(k)).collect();
    args.no_more_keywords()?;
    let s: &str = text;
    let boolean = |f: &dyn Fn(&str) -> bool| Ok(Value::Bool(f(s)));
    let nonempty_all = |pred: fn(char) -> bool| !s.is_empty() && s.chars().all(pred);
    match name {
        "upper" | "lower" | "casefold" | "swapcase" | "capitalize" | "title" | "isalnum" | "isalpha" | "isascii"
        | "isdecimal" | "isdigit" | "islower" | "isnumeric" | "isspace" | "isupper" => args.count(0, 0)?,
        _ => {}
    }
    match name {
        "upper" => Ok(Value::str(s.to_uppercase())),
        "lower" | "casefold" => Ok(Value::str(s.to_lowercase())),
        "swapcase" => Ok(Value::str(
            s.chars()
                .flat_map(|c| -> Vec<char> {
                    if c.is_uppercase() {
                        c.to_lowercase().collect()
                    } else {
                        c.to_uppercase().collect()
                    }
                })
                .collect::<String>(),
        )),
        "capitalize" => {
            let mut chars = s.chars();
            Ok(Value::str(match chars.next() {
                Some(first) => first.to_uppercase().chain(chars.as_str().to_lowercase().chars()).collect::<String>(),
                None => String::new(),
            }))
        }
        "title" => {
            let mut out = String::with_capacity(s.len());
            let mut previous_cased = false;
            for c in s.chars() {
                if previous_cased {
                    out.extend(c.to_lowercase())
                } else {
                    out.extend(c.to_uppercase())
                }
                previous_cased = c.is_alphabetic();
            }
            Ok(Value::str(out))
        }
        "isalnum" => boolean(&|_| nonempty_all(char::is_alphanumeric)),
        "isalpha" => boolean(&|_| nonempty_all(char::is_alphabetic)),
        "isascii" => boolean(&|s| s.is_ascii()),
        "isdecimal" | "isdigit" => boolean(&|_| nonempty_all(|c| c.is_ascii_digit())),
        "isnumeric" => boolean(&|_| nonempty_all(char::is_numeric)),
        "isspace" => boolean(&|_| nonempty_all(char::is_whitespace)),
        "islower" => boolean(&|s| s.chars().any(char::is_lowercase) && !s.chars().any(char::is_uppercase)),
        "isupper" => boolean(&|s| s.chars().any(char::is_uppercase) && !s.chars().any(char::is_lowercase)),
        "strip" | "lstrip" | "rstrip" => {
            args.count(0, 1)?;
            let chars = optional_str_arg(name, args.get(0))?;
            let matches = |c: char| match chars {
                Some(set) => set.contains(c),
                None => c.is_whitespace(),
            };
            Ok(Value::str(match name {
                "strip" => s.trim_matches(matches),
                "lstrip" => s.trim_start_matches(matches),
                _ => s.trim_end_matches(matches),
            }))
        }
        "startswith" | "endswith" => {
            args.count(1, 3)?;
            let (start, end) = char_window(s, args.get(1), args.get(2))?;
            let window = char_slice(s, start, end);
            let candidates: Vec<Value> = match &args.positional[0] {
                Value::Tuple(items) => (**items).clone(),
                other => vec![other.clone()],
            };
            let mut found = false;
            for candidate in &candidates {
                let Value::Str(candidate) = candidate else {
                    return Err(EvalError::type_error(format!(
                        "{name} first arg must be str or a tuple of str, not {}",
                        candidate.type_name()
                    )));
                };
                found |= if name == "startswith" {
                    window.starts_with(&**candidate)
                } else {
                    window.ends_with(&**candidate)
                };
            }
            Ok(Value::Bool(found))
        }
        "split" | "rsplit" => {
            args.count(0, 2)?;
            let separator = keywords[0].take().or_else(|| args.get(0).cloned());
            let separator = optional_str_arg(name, separator.as_ref())?.map(str::to_owned);
            let limit = keywords[1].take().or_else(|| args.get(1).cloned());
            let limit = match limit {
                None => -1,
                Some(v) => v.as_int().ok_or_else(|| type_error_arg(name, &v))?.to_i64().unwrap_or(-1),
            };
            let parts: Vec<String> = match separator.as_deref() {
                Some("") => return Err(EvalError::value_error("empty separator")),
                Some(sep) => {
                    if limit < 0 {
                        s.split(sep).map(str::to_owned).collect()
                    } else if name == "split" {
                        s.splitn(limit as usize + 1, sep).map(str::to_owned).collect()
                    } else {
                        let mut parts: Vec<String> = s.rsplitn(limit as usize + 1, sep).map(str::to_owned).collect();
                        parts.reverse();
                        parts
                    }
                }
                None => whitespace_split(s, limit, name == "rsplit"),
            };
            budget.check_len(parts.len())?;
            Ok(Value::list(parts.into_iter().map(Value::str).collect()))
        }
        "splitlines" => {
            args.count(0, 1)?;
            let keepends = keywords[0].take().or_else(|| args.get(0).cloned()).is_some_and(|v| v.truthy());
            let mut parts = Vec::new();
            let mut rest = s;
            while !rest.is_empty() {
                let cut =
                    rest.find(['\n', '\r', '\x0b', '\x0c', '\x1c', '\x1d', '\x1e', '\u{85}', '\u{2028}', '\u{2029}']);
                match cut {
                    None => {
                        parts.push(rest.to_owned());
                        break;
                    }
                    Some(index) => {
                        let ending = if rest[index..].starts_with("\r\n") {
                            2
                        } else {
                            rest[index..].chars().next().map_or(1, char::len_utf8)
                        };
                        let line = if keepends { &rest[..index + ending] } else { &rest[..index] };
                        parts.push(line.to_owned());
                        rest = &rest[index + ending..];
                    }
                }
            }
            Ok(Value::list(parts.into_iter().map(Value::str).collect()))
        }
        "join" => {
            args.count(1, 1)?;
            let items = ops::iterate(budget, &args.positional[0])?;
            let mut out = String::new();
            for (index, item) in items.iter().enumerate() {
                let Value::Str(piece) = item else {
                    return Err(EvalError::type_error(format!(
                        "sequence item {index}: expected str instance, {} found",
                        item.type_name()
                    )));
                };
                if index > 0 {
                    out.push_str(s);
                }
                out.push_str(piece);
                budget.check_str_bytes(out.len())?;
            }
            Ok(Value::str(out))
        }
        "replace" => {
            args.count(2, 3)?;
            let old = str_arg(name, &args.positional[0])?;
            let new = str_arg(name, &args.positional[1])?;
            let count = match args.get(2) {
                None => -1,
                Some(v) => v.as_int().ok_or_else(|| type_error_arg(name, v))?.to_i64().unwrap_or(-1),
            };
            let occurrences = if old.is_empty() { s.chars().count() + 1 } else { s.matches(old).count() };
            let replaced = if count < 0 { occurrences } else { occurrences.min(count as usize) };
            budget.check_str_bytes(s.len() + replaced.saturating_mul(new.len()))?;
            Ok(Value::str(if count < 0 { s.replace(old, new) } else { s.replacen(old, new, count as usize) }))
        }
        "removeprefix" => {
            args.count(1, 1)?;
            let prefix = str_arg(name, &args.positional[0])?;
            Ok(Value::str(s.strip_prefix(prefix).unwrap_or(s)))
        }
        "removesuffix" => {
            args.count(1, 1)?;
            let suffix = str_arg(name, &args.positional[0])?;
            Ok(Value::str(s.strip_suffix(suffix).unwrap_or(s)))
        }
        "zfill" => {
            args.count(1, 1)?;
            let width = args.positional[0].as_int().ok_or_else(|| type_error_arg(name, &args.positional[0]))?;
            let width = width.to_usize().unwrap_or(0);
            budget.check_str_bytes(width)?;
            let len = s.chars().count();
            if width <= len {
                return Ok(Value::Str(text.clone()));
            }
            let (sign, digits) = match s.chars().next() {
                Some(c @ ('+' | '-')) => (c.to_string(), &s[1..]),
                _ => (String::new(), s),
            };
            Ok(Value::str(format!("{sign}{}{digits}", "0".repeat(width - len))))
        }
        "find" | "rfind" | "index" | "rindex" | "count" => {
            args.count(1, 3)?;
            let needle = str_arg(name, &args.positional[0])?;
            let (start, end) = char_window(s, args.get(1), args.get(2))?;
            let window = char_slice(s, start, end);
            if name == "count" {
                if start > end {
                    return Ok(Value::int(0));
                }
                let count = if needle.is_empty() { window.chars().count() + 1 } else { window.matches(needle).count() };
                return Ok(Value::int(count as u64));
            }
            let found = if start > end {
                None
            } else if name.starts_with('r') {
                window.rfind(needle)
            } else {
                window.find(needle)
            };
            match found {
                Some(byte) => Ok(Value::int((start + window[..byte].chars().count()) as u64)),
                None if name.ends_with("find") => Ok(Value::int(-1)),
                None => Err(EvalError::value_error("substring not found")),
            }
        }
        _ => Err(EvalError::unsupported(format!("'str.{name}' is not supported in conditions"))),
    }
}

fn whitespace_split(s: &str, limit: i64, from_right: bool) -> Vec<String> {
    let mut parts: Vec<String> = Vec::new();
    if limit < 0 {
        return s.split_whitespace().map(str::to_owned).collect();
    }
    if !from_right {
        let mut rest = s.trim_start();
        while !rest.is_empty() {
            if parts.len() as i64 == limit {
                parts.push(rest.to_owned());
                break;
            }
            let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
            parts.push(rest[..end].to_owned());
            rest = rest[end..].trim_start();
        }
    } else {
        let mut rest = s.trim_end();
        while !rest.is_empty() {
            if parts.len() as i64 == limit {
                parts.push(rest.to_owned());
                break;
            }
            let start =
                rest.rfind(char::is_whitespace).map_or(0, |i| i + rest[i..].chars().next().map_or(1, char::len_utf8));
            parts.push(rest[start..].to_owned());
            rest = rest[..start].trim_end();
        }
        parts.reverse();
    }
    parts
}
