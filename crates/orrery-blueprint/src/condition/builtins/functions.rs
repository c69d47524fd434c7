//! The builtin functions (`len`, `sorted`, `int`, `round`, ...) as asteval calls them: a module
//! apart from the methods because each function is one arm of one dispatch on [`Builtin`].
//! The call of any callable value is here too, since `sorted`, `min` and `max` call their key
//! function with it.

use std::cmp::Ordering;
use std::rc::Rc;

use malachite_bigint::BigInt;
use num_traits::{FromPrimitive, Signed, ToPrimitive};

use super::arguments::{type_error_arg, Arguments, Kwargs};
use super::methods::call_method;
use crate::condition::budget::Budget;
use crate::condition::callable::{Builtin, Method};
use crate::condition::ops;
use crate::condition::value::{self, build_set, insert_dict, py_cmp, Dict, Number, Range, Value};
use crate::condition::{EvalError, EvalErrorKind};

/// Calls a builtin function or a bound method; any other value is not callable.
pub(crate) fn call(
    budget: &mut Budget,
    function: &Value,
    positional: Vec<Value>,
    keywords: Kwargs,
) -> Result<Value, EvalError> {
    match function {
        Value::Builtin(builtin) => {
            let args = Arguments { function: builtin.name(), positional, keywords };
            call_builtin(budget, *builtin, args)
        }
        Value::Method(method) => {
            let (receiver, Method(name)) = &**method;
            let args = Arguments { function: name, positional, keywords };
            call_method(budget, receiver, name, args)
        }
        other => Err(EvalError::type_error(format!("'{}' object is not callable", other.type_name()))),
    }
}

fn call_builtin(budget: &mut Budget, builtin: Builtin, mut args: Arguments) -> Result<Value, EvalError> {
    use Builtin as B;
    let name = builtin.name();
    match builtin {
        B::Len => {
            args.count(1, 1)?;
            args.no_more_keywords()?;
            let len = match &args.positional[0] {
                Value::Str(s) => s.chars().count(),
                Value::List(items) | Value::Tuple(items) => items.len(),
                Value::Dict(d) => d.len(),
                Value::Set(s) => s.len(),
                Value::Range(r) => r.len() as usize,
                other => {
                    return Err(EvalError::type_error(format!("object of type '{}' has no len()", other.type_name())))
                }
            };
            Ok(Value::int(len as u64))
        }
        B::Abs => {
            args.count(1, 1)?;
            args.no_more_keywords()?;
            match args.positional[0].as_number() {
                Some(Number::Int(i)) => Ok(Value::Int(i.abs())),
                Some(Number::Float(f)) => Ok(Value::Float(f.abs())),
                None => Err(EvalError::type_error(format!(
                    "bad operand type for abs(): '{}'",
                    args.positional[0].type_name()
                ))),
            }
        }
        B::All | B::Any => {
            args.count(1, 1)?;
            args.no_more_keywords()?;
            let items = numpy_elements(budget, &args.positional[0])?;
            let want = builtin == B::Any;
            Ok(Value::Bool(if want { items.iter().any(Value::truthy) } else { items.iter().all(Value::truthy) }))
        }
        B::Bool => {
            args.count(0, 1)?;
            args.no_more_keywords()?;
            Ok(Value::Bool(args.get(0).is_some_and(Value::truthy)))
        }
        B::Int => {
            args.count(0, 2)?;
            let base = match args.keyword("base").or_else(|| args.get(1).cloned()) {
                Some(base) => Some(
                    base.as_int()
                        .and_then(|b| b.to_u32())
                        .ok_or_else(|| EvalError::type_error("'base' must be an integer"))?,
                ),
                None => None,
            };
            args.no_more_keywords()?;
            match (args.get(0), base) {
                (None, _) => Ok(Value::int(0)),
                (Some(Value::Str(text)), base) => parse_int(text, base.unwrap_or(10)),
                (Some(_), Some(_)) => Err(EvalError::type_error("int() can't convert non-string with explicit base")),
                (Some(value), None) => match value.as_number() {
                    Some(Number::Int(i)) => Ok(Value::Int(i)),
                    Some(Number::Float(f)) => float_to_int(f.trunc()).map(Value::Int),
                    None => Err(EvalError::type_error(format!(
                        "int() argument must be a string, a bytes-like object or a real number, not '{}'",
                        value.type_name()
                    ))),
                },
            }
        }
        B::Float => {
            args.count(0, 1)?;
            args.no_more_keywords()?;
            match args.get(0) {
                None => Ok(Value::Float(0.0)),
                Some(Value::Str(text)) => parse_float(text).map(Value::Float),
                Some(value) => match value.as_number() {
                    Some(number) => number.to_f64().map(Value::Float),
                    None => Err(EvalError::type_error(format!(
                        "float() argument must be a string or a real number, not '{}'",
                        value.type_name()
                    ))),
                },
            }
        }
        B::Str | B::Repr => {
            args.count(if builtin == B::Repr { 1 } else { 0 }, 1)?;
            args.no_more_keywords()?;
            let text = match args.get(0) {
                None => String::new(),
                Some(value) if builtin == B::Repr => value::repr(value)?,
                Some(value) => value::to_str(value)?,
            };
            budget.check_str_bytes(text.len())?;
            Ok(Value::str(text))
        }
        B::List | B::Tuple | B::Set => {
            args.count(0, 1)?;
            args.no_more_keywords()?;
            let items = match args.get(0) {
                None => Vec::new(),
                Some(iterable) => ops::iterate(budget, iterable)?,
            };
            Ok(match builtin {
                B::List => Value::list(items),
                B::Tuple => Value::tuple(items),
                _ => Value::Set(Rc::new(build_set(items)?)),
            })
        }
        B::Dict => {
            args.count(0, 1)?;
            let mut out = Dict::new();
            match args.get(0).cloned() {
                None => {}
                Some(Value::Dict(dict)) => out = (*dict).clone(),
                Some(iterable) => {
                    for (index, pair) in ops::iterate(budget, &iterable)?.into_iter().enumerate() {
                        let items = ops::iterate(budget, &pair).map_err(|_| {
                            EvalError::type_error(format!(
                                "cannot convert dictionary update sequence element #{index} to a sequence"
                            ))
                        })?;
                        let [key, value]: [Value; 2] = items.try_into().map_err(|items: Vec<Value>| {
                            EvalError::value_error(format!(
                                "dictionary update sequence element #{index} has length {}; 2 is required",
                                items.len()
                            ))
                        })?;
                        insert_dict(&mut out, key, value)?;
                    }
                }
            }
            for (key, value) in std::mem::take(&mut args.keywords) {
                insert_dict(&mut out, Value::str(key), value)?;
            }
            budget.check_len(out.len())?;
            Ok(Value::Dict(Rc::new(out)))
        }
        B::Range => {
            args.count(1, 3)?;
            args.no_more_keywords()?;
            let mut bounds = Vec::with_capacity(3);
            for value in &args.positional {
                let bound = value.as_int().ok_or_else(|| {
                    EvalError::type_error(format!("'{}' object cannot be interpreted as an integer", value.type_name()))
                })?;
                bounds.push(
                    bound.to_i64().ok_or_else(|| EvalError::limit("range bounds beyond 64 bits are not supported"))?,
                );
            }
            let (start, stop, step) = match bounds[..] {
                [stop] => (0, stop, 1),
                [start, stop] => (start, stop, 1),
                [start, stop, step] => (start, stop, step),
                _ => unreachable!("count checked"),
            };
            if step == 0 {
                return Err(EvalError::value_error("range() arg 3 must not be zero"));
            }
            Ok(Value::Range(Range { start, stop, step }))
        }
        B::Min | B::Max => {
            let key = args.keyword("key").filter(|key| !matches!(key, Value::None));
            let default = args.keyword("default");
            args.no_more_keywords()?;
            if args.positional.is_empty() {
                return Err(EvalError::type_error(format!("{name} expected at least 1 argument, got 0")));
            }
            let items = if args.positional.len() == 1 {
                ops::iterate(budget, &args.positional[0])?
            } else {
                if default.is_some() {
                    return Err(EvalError::type_error(format!(
                        "Cannot specify a default for {name}() with multiple positional arguments"
                    )));
                }
                std::mem::take(&mut args.positional)
            };
            if items.is_empty() {
                return default.ok_or_else(|| EvalError::value_error(format!("{name}() arg is an empty sequence")));
            }
            let keys = sort_keys(budget, &items, key.as_ref())?;
            let mut best = 0;
            for index in 1..items.len() {
                let ordering = ordered(&keys[index], &keys[best])?;
                let better = if builtin == B::Min { ordering == Ordering::Less } else { ordering == Ordering::Greater };
                if better {
                    best = index;
                }
            }
            Ok(items[best].clone())
        }
        B::Sum => {
            // asteval's `sum` is numpy's: its second argument is an axis, so Python's `start`
            // is refused rather than given a meaning the reference does not have.
            args.count(1, 1)?;
            args.no_more_keywords()?;
            let mut total = Value::int(0);
            for item in numpy_elements(budget, &args.positional[0])? {
                if matches!(item, Value::Str(_)) {
                    return Err(EvalError::type_error("cannot sum strings"));
                }
                total = ops::binary(budget, rustpython_parser::ast::Operator::Add, &total, &item)?;
            }
            Ok(total)
        }
        B::Sorted => {
            args.count(1, 1)?;
            let key = args.keyword("key").filter(|key| !matches!(key, Value::None));
            let reverse = args.keyword("reverse").is_some_and(|reverse| reverse.truthy());
            args.no_more_keywords()?;
            let items = ops::iterate(budget, &args.positional[0])?;
            let keys = sort_keys(budget, &items, key.as_ref())?;
            budget.charge((items.len() as u64).saturating_mul(64 - (items.len() as u64).leading_zeros() as u64))?;
            let mut order: Vec<usize> = (0..items.len()).collect();
            let mut failure = None;
            order.sort_by(|&a, &b| {
                let (first, second) = if reverse { (&keys[b], &keys[a]) } else { (&keys[a], &keys[b]) };
                match ordered(first, second) {
                    Ok(ordering) => ordering,
                    Err(error) => {
                        failure.get_or_insert(error);
                        Ordering::Equal
                    }
                }
            });
            if let Some(error) = failure {
                return Err(error);
            }
            Ok(Value::list(order.into_iter().map(|index| items[index].clone()).collect()))
        }
        B::Round => {
            args.count(1, 2)?;
            let digits = args.keyword("ndigits").or_else(|| args.get(1).cloned()).filter(|d| !matches!(d, Value::None));
            args.no_more_keywords()?;
            round(&args.positional[0], digits.as_ref())
        }
        B::Isinstance => {
            args.count(2, 2)?;
            args.no_more_keywords()?;
            let value = &args.positional[0];
            let types = match &args.positional[1] {
                Value::Tuple(types) => (**types).clone(),
                other => vec![other.clone()],
            };
            let mut result = false;
            for class in &types {
                let Value::Builtin(class) = class else {
                    return Err(EvalError::type_error(
                        "isinstance() arg 2 must be a type, a tuple of types, or a union",
                    ));
                };
                result |= match (class, value) {
                    (Builtin::Int, Value::Int(_) | Value::Bool(_)) => true,
                    _ => class.is_type() && class.name() == value.type_name(),
                };
            }
            Ok(Value::Bool(result))
        }
        B::Type => {
            // asteval's `type` returns the type's name as a string.
            args.count(1, 1)?;
            args.no_more_keywords()?;
            Ok(Value::str(args.positional[0].type_name()))
        }
        B::Chr => {
            args.count(1, 1)?;
            args.no_more_keywords()?;
            let code = args.positional[0].as_int().ok_or_else(|| type_error_arg(name, &args.positional[0]))?;
            let ch = code
                .to_u32()
                .and_then(char::from_u32)
                .ok_or_else(|| EvalError::value_error("chr() arg not in range(0x110000)"))?;
            Ok(Value::str(ch.to_string()))
        }
        B::Ord => {
            args.count(1, 1)?;
            args.no_more_keywords()?;
            match &args.positional[0] {
                Value::Str(s) if s.chars().count() == 1 => Ok(Value::int(s.chars().next().unwrap_or('\0') as u32)),
                Value::Str(s) => Err(EvalError::type_error(format!(
                    "ord() expected a character, but string of length {} found",
                    s.chars().count()
                ))),
                other => Err(type_error_arg(name, other)),
            }
        }
        B::Hex | B::Bin | B::Oct => {
            args.count(1, 1)?;
            args.no_more_keywords()?;
            let i = args.positional[0].as_int().ok_or_else(|| type_error_arg(name, &args.positional[0]))?;
            let (radix, prefix) = match builtin {
                B::Hex => (16, "0x"),
                B::Bin => (2, "0b"),
                _ => (8, "0o"),
            };
            let sign = if i.is_negative() { "-" } else { "" };
            Ok(Value::str(format!("{sign}{prefix}{}", i.abs().to_str_radix(radix))))
        }
        B::Divmod => {
            args.count(2, 2)?;
            args.no_more_keywords()?;
            use rustpython_parser::ast::Operator;
            let (a, b) = (&args.positional[0], &args.positional[1]);
            let quotient = ops::binary(budget, Operator::FloorDiv, a, b)?;
            let remainder = ops::binary(budget, Operator::Mod, a, b)?;
            Ok(Value::tuple(vec![quotient, remainder]))
        }
        B::Pow => {
            // asteval's table holds `math.pow`, which always works in floats.
            args.count(2, 2)?;
            args.no_more_keywords()?;
            let base =
                args.positional[0].as_number().ok_or_else(|| type_error_arg(name, &args.positional[0]))?.to_f64()?;
            let exponent =
                args.positional[1].as_number().ok_or_else(|| type_error_arg(name, &args.positional[1]))?.to_f64()?;
            if base == 0.0 && exponent < 0.0 || base < 0.0 && exponent.fract() != 0.0 && exponent.is_finite() {
                return Err(EvalError::value_error("math domain error"));
            }
            let result = base.powf(exponent);
            if result.is_infinite() && base.is_finite() && exponent.is_finite() {
                return Err(EvalError::new(EvalErrorKind::Overflow, "math range error"));
            }
            Ok(Value::Float(result))
        }
        B::Enumerate => {
            args.count(1, 2)?;
            let start = args.keyword("start").or_else(|| args.get(1).cloned()).unwrap_or(Value::int(0));
            args.no_more_keywords()?;
            let start = start.as_int().ok_or_else(|| type_error_arg(name, &start))?;
            let items = ops::iterate(budget, &args.positional[0])?;
            Ok(Value::list(
                items
                    .into_iter()
                    .enumerate()
                    .map(|(i, item)| Value::tuple(vec![Value::Int(&start + BigInt::from(i)), item]))
                    .collect(),
            ))
        }
        B::Reversed => {
            args.count(1, 1)?;
            args.no_more_keywords()?;
            if matches!(args.positional[0], Value::Set(_) | Value::Dict(_)) {
                return Err(EvalError::type_error(format!(
                    "'{}' object is not reversible",
                    args.positional[0].type_name()
                )));
            }
            let mut items = ops::iterate(budget, &args.positional[0])?;
            items.reverse();
            Ok(Value::list(items))
        }
        B::Zip => {
            args.no_more_keywords()?;
            let columns: Vec<Vec<Value>> =
                args.positional.iter().map(|iterable| ops::iterate(budget, iterable)).collect::<Result<_, _>>()?;
            let len = columns.iter().map(Vec::len).min().unwrap_or(0);
            Ok(Value::list(
                (0..len).map(|row| Value::tuple(columns.iter().map(|column| column[row].clone()).collect())).collect(),
            ))
        }
    }
}

/// asteval's `any`, `all` and `sum` are numpy's, which treat a scalar as a one-element array.
fn numpy_elements(budget: &mut Budget, value: &Value) -> Result<Vec<Value>, EvalError> {
    match value {
        Value::None | Value::Bool(_) | Value::Int(_) | Value::Float(_) => Ok(vec![value.clone()]),
        other => ops::iterate(budget, other),
    }
}

fn ordered(a: &Value, b: &Value) -> Result<Ordering, EvalError> {
    // Python sorts with `<` only: an unordered pair (NaN) counts as "not less".
    let less = |x: &Value, y: &Value| -> Result<bool, EvalError> {
        match py_cmp(x, y) {
            Ok(ordering) => Ok(ordering == Some(Ordering::Less)),
            Err(_) => Err(EvalError::type_error(format!(
                "'<' not supported between instances of '{}' and '{}'",
                x.type_name(),
                y.type_name()
            ))),
        }
    };
    if less(a, b)? {
        Ok(Ordering::Less)
    } else if less(b, a)? {
        Ok(Ordering::Greater)
    } else {
        Ok(Ordering::Equal)
    }
}

fn sort_keys(budget: &mut Budget, items: &[Value], key: Option<&Value>) -> Result<Vec<Value>, EvalError> {
    match key {
        None => Ok(items.to_vec()),
        Some(function) => items.iter().map(|item| call(budget, function, vec![item.clone()], Vec::new())).collect(),
    }
}

fn float_to_int(f: f64) -> Result<BigInt, EvalError> {
    if f.is_nan() {
        return Err(EvalError::value_error("cannot convert float NaN to integer"));
    }
    BigInt::from_f64(f)
        .ok_or_else(|| EvalError::new(EvalErrorKind::Overflow, "cannot convert float infinity to integer"))
}

fn parse_int(text: &str, base: u32) -> Result<Value, EvalError> {
    let invalid =
        || EvalError::value_error(format!("invalid literal for int() with base {base}: {}", value::str_repr(text)));
    if base != 0 && !(2..=36).contains(&base) {
        return Err(EvalError::value_error("int() base must be >= 2 and <= 36, or 0"));
    }
    let trimmed = text.trim();
    let (negative, digits) = match trimmed.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, trimmed.strip_prefix('+').unwrap_or(trimmed)),
    };
    let lower = digits.to_ascii_lowercase();
    let (base, digits) = match (base, lower.get(..2)) {
        (16 | 0, Some("0x")) => (16, &digits[2..]),
        (8 | 0, Some("0o")) => (8, &digits[2..]),
        (2 | 0, Some("0b")) => (2, &digits[2..]),
        (0, _) => (10, digits),
        (base, _) => (base, digits),
    };
    let digits = digits.strip_prefix('_').filter(|_| digits.len() != text.trim().len()).unwrap_or(digits);
    if digits.is_empty() || digits.starts_with('_') || digits.ends_with('_') || digits.contains("__") {
        return Err(invalid());
    }
    let clean: String = digits.chars().filter(|c| *c != '_').collect();
    if !clean.chars().all(|c| c.is_digit(base)) {
        return Err(invalid());
    }
    if base == 10 && clean.len() > value::MAX_INT_STR_DIGITS {
        return Err(EvalError::value_error(format!(
            "Exceeds the limit ({} digits) for integer string conversion: value has {} digits; use sys.set_int_max_str_digits() to increase the limit",
            value::MAX_INT_STR_DIGITS,
            clean.len()
        )));
    }
    let magnitude = BigInt::parse_bytes(clean.as_bytes(), base).ok_or_else(invalid)?;
    Ok(Value::Int(if negative { -magnitude } else { magnitude }))
}

fn parse_float(text: &str) -> Result<f64, EvalError> {
    let invalid = || EvalError::value_error(format!("could not convert string to float: {}", value::str_repr(text)));
    let trimmed = text.trim();
    let unsigned = trimmed.trim_start_matches(['+', '-']);
    if trimmed.len() - unsigned.len() > 1 {
        return Err(invalid());
    }
    let lower = unsigned.to_ascii_lowercase();
    if matches!(lower.as_str(), "inf" | "infinity" | "nan") {
        let value = if lower == "nan" { f64::NAN } else { f64::INFINITY };
        return Ok(if trimmed.starts_with('-') { -value } else { value });
    }
    let valid_chars = !unsigned.is_empty()
        && unsigned.chars().all(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '+' | '-' | '_'));
    if !valid_chars || unsigned.contains("__") || unsigned.starts_with('_') || unsigned.ends_with('_') {
        return Err(invalid());
    }
    let clean: String = trimmed.chars().filter(|c| *c != '_').collect();
    clean.parse::<f64>().map_err(|_| invalid())
}

/// Python `round()`: half to even, an int without `ndigits`.
fn round(value: &Value, digits: Option<&Value>) -> Result<Value, EvalError> {
    let number = value
        .as_number()
        .ok_or_else(|| EvalError::type_error(format!("type {} doesn't define __round__ method", value.type_name())))?;
    let digits = match digits {
        None => None,
        Some(d) => Some(d.as_int().ok_or_else(|| {
            EvalError::type_error(format!("'{}' object cannot be interpreted as an integer", d.type_name()))
        })?),
    };
    match (number, digits) {
        (Number::Int(i), None) => Ok(Value::Int(i)),
        (Number::Int(i), Some(d)) => {
            if !d.is_negative() {
                return Ok(Value::Int(i));
            }
            let places = d.abs().to_u32().unwrap_or(u32::MAX);
            if places as u64 > i.bits() / 3 + 2 {
                return Ok(Value::int(0));
            }
            let unit = BigInt::from(10).pow(places);
            let (quotient, remainder) = num_integer::Integer::div_mod_floor(&i, &unit);
            let twice = &remainder * BigInt::from(2);
            let round_up = match twice.cmp(&unit) {
                Ordering::Greater => true,
                Ordering::Less => false,
                Ordering::Equal => num_integer::Integer::is_odd(&quotient),
            };
            let quotient = if round_up { quotient + BigInt::from(1) } else { quotient };
            Ok(Value::Int(quotient * unit))
        }
        (Number::Float(f), None) => {
            if !f.is_finite() {
                return Err(if f.is_nan() {
                    EvalError::value_error("cannot convert float NaN to integer")
                } else {
                    EvalError::new(EvalErrorKind::Overflow, "cannot convert float infinity to integer")
                });
            }
            float_to_int(f.round_ties_even()).map(Value::Int)
        }
        (Number::Float(f), Some(d)) => {
            if !f.is_finite() || f == 0.0 {
                return Ok(Value::Float(f));
            }
            let d = d.to_i32().unwrap_or(if d.is_negative() { i32::MIN } else { i32::MAX });
            if d > 330 {
                return Ok(Value::Float(f));
            }
            if d < -330 {
                return Ok(Value::Float(0.0f64.copysign(f)));
            }
            if d >= 0 {
                // Formatting rounds the exact binary value half to even, as CPython's
                // correctly-rounded `round` does.
                let text = format!("{f:.*}", d as usize);
                return Ok(Value::Float(text.parse().unwrap_or(f)));
            }
            let unit = 10f64.powi(-d);
            let scaled = (f / unit).round_ties_even() * unit;
            Ok(Value::Float(if scaled.is_finite() { scaled } else { f }))
        }
    }
}
