//! Operators, subscripts, slices and iteration with Python semantics, plus the extra refusals
//! asteval adds (`safe_pow`, `safe_mult`, `safe_add`, `safe_lshift`).

use std::cmp::Ordering;
use std::rc::Rc;

use malachite_bigint::BigInt;
use num_integer::Integer;
use num_traits::{Signed, ToPrimitive, Zero};
use rustpython_parser::ast::{CmpOp, Operator, UnaryOp};

use super::budget::Budget;
use super::value::{self, int_to_f64, py_cmp, py_eq, Key, Number, Value};
use super::{EvalError, EvalErrorKind};

/// asteval's `MAX_EXPONENT`: `x ** y` with `y > 10000` is refused.
const ASTEVAL_MAX_EXPONENT: u32 = 10_000;
/// asteval's `MAX_STR_LEN` (characters) for `str * int` and `str + str`.
const ASTEVAL_MAX_STR_LEN: usize = 2 << 17;
/// asteval's `MAX_SHIFT`: `x << y` with `y > 1000` is refused.
const ASTEVAL_MAX_SHIFT: u32 = 1000;

fn operator_symbol(op: Operator) -> &'static str {
    match op {
        Operator::Add => "+",
        Operator::Sub => "-",
        Operator::Mult => "*",
        Operator::MatMult => "@",
        Operator::Div => "/",
        Operator::Mod => "%",
        Operator::Pow => "** or pow()",
        Operator::LShift => "<<",
        Operator::RShift => ">>",
        Operator::BitOr => "|",
        Operator::BitXor => "^",
        Operator::BitAnd => "&",
        Operator::FloorDiv => "//",
    }
}

fn unsupported_operands(op: Operator, left: &Value, right: &Value) -> EvalError {
    EvalError::type_error(format!(
        "unsupported operand type(s) for {}: '{}' and '{}'",
        operator_symbol(op),
        left.type_name(),
        right.type_name()
    ))
}

fn zero_division(message: &str) -> EvalError {
    EvalError::new(EvalErrorKind::ZeroDivision, message)
}

fn overflow(message: &str) -> EvalError {
    EvalError::new(EvalErrorKind::Overflow, message)
}

pub(crate) fn unary(op: UnaryOp, operand: &Value) -> Result<Value, EvalError> {
    let bad =
        |symbol: &str| EvalError::type_error(format!("bad operand type for unary {symbol}: '{}'", operand.type_name()));
    match op {
        UnaryOp::Not => Ok(Value::Bool(!operand.truthy())),
        UnaryOp::USub => match operand.as_number() {
            Some(Number::Int(i)) => Ok(Value::Int(-i)),
            Some(Number::Float(f)) => Ok(Value::Float(-f)),
            None => Err(bad("-")),
        },
        UnaryOp::UAdd => match operand.as_number() {
            Some(Number::Int(i)) => Ok(Value::Int(i)),
            Some(Number::Float(f)) => Ok(Value::Float(f)),
            None => Err(bad("+")),
        },
        UnaryOp::Invert => match operand.as_int() {
            Some(i) => Ok(Value::Int(-(i + BigInt::from(1)))),
            None => Err(bad("~")),
        },
    }
}

pub(crate) fn binary(budget: &mut Budget, op: Operator, left: &Value, right: &Value) -> Result<Value, EvalError> {
    if let (Some(a), Some(b)) = (left.as_number(), right.as_number()) {
        if let (Value::Bool(x), Value::Bool(y)) = (left, right) {
            match op {
                Operator::BitAnd => return Ok(Value::Bool(*x & *y)),
                Operator::BitOr => return Ok(Value::Bool(*x | *y)),
                Operator::BitXor => return Ok(Value::Bool(*x ^ *y)),
                _ => {}
            }
        }
        return arithmetic(budget, op, a, b, left, right);
    }
    match (op, left, right) {
        (Operator::Add, Value::Str(a), Value::Str(b)) => {
            if a.chars().count() + b.chars().count() > ASTEVAL_MAX_STR_LEN {
                return Err(EvalError::limit(format!(
                    "String length exceeded, max string length is {ASTEVAL_MAX_STR_LEN}"
                )));
            }
            budget.check_str_bytes(a.len() + b.len())?;
            Ok(Value::str(format!("{a}{b}")))
        }
        (Operator::Add, Value::List(a), Value::List(b)) => {
            budget.check_len(a.len() + b.len())?;
            budget.charge((a.len() + b.len()) as u64)?;
            Ok(Value::list(a.iter().chain(b.iter()).cloned().collect()))
        }
        (Operator::Add, Value::Tuple(a), Value::Tuple(b)) => {
            budget.check_len(a.len() + b.len())?;
            budget.charge((a.len() + b.len()) as u64)?;
            Ok(Value::tuple(a.iter().chain(b.iter()).cloned().collect()))
        }
        (Operator::Mult, Value::Str(_) | Value::List(_) | Value::Tuple(_), _) if right.as_int().is_some() => {
            repeat(budget, left, &right.as_int().unwrap_or_default(), true)
        }
        (Operator::Mult, _, Value::Str(_) | Value::List(_) | Value::Tuple(_)) if left.as_int().is_some() => {
            repeat(budget, right, &left.as_int().unwrap_or_default(), false)
        }
        (Operator::Mod, Value::Str(_), _) => {
            Err(EvalError::unsupported("printf-style string formatting ('%') is not supported"))
        }
        (Operator::Sub | Operator::BitAnd | Operator::BitOr | Operator::BitXor, Value::Set(a), Value::Set(b)) => {
            budget.charge((a.len() + b.len()) as u64)?;
            let out: value::Set = match op {
                Operator::Sub => {
                    a.iter().filter(|(k, _)| !b.contains_key(*k)).map(|(k, v)| (k.clone(), v.clone())).collect()
                }
                Operator::BitAnd => {
                    a.iter().filter(|(k, _)| b.contains_key(*k)).map(|(k, v)| (k.clone(), v.clone())).collect()
                }
                Operator::BitOr => {
                    let mut out = (**a).clone();
                    for (k, v) in b.iter() {
                        out.entry(k.clone()).or_insert_with(|| v.clone());
                    }
                    out
                }
                _ => {
                    let mut out: value::Set =
                        a.iter().filter(|(k, _)| !b.contains_key(*k)).map(|(k, v)| (k.clone(), v.clone())).collect();
                    for (k, v) in b.iter().filter(|(k, _)| !a.contains_key(*k)) {
                        out.insert(k.clone(), v.clone());
                    }
                    out
                }
            };
            Ok(Value::Set(Rc::new(out)))
        }
        (Operator::BitOr, Value::Dict(a), Value::Dict(b)) => {
            budget.check_len(a.len() + b.len())?;
            let mut out = (**a).clone();
            for (key, (k, v)) in b.iter() {
                match out.get_mut(key) {
                    Some(entry) => entry.1 = v.clone(),
                    None => {
                        out.insert(key.clone(), (k.clone(), v.clone()));
                    }
                }
            }
            Ok(Value::Dict(Rc::new(out)))
        }
        (Operator::Add, Value::Str(_), _) => {
            Err(EvalError::type_error(format!("can only concatenate str (not \"{}\") to str", right.type_name())))
        }
        (Operator::Add, Value::List(_), _) => {
            Err(EvalError::type_error(format!("can only concatenate list (not \"{}\") to list", right.type_name())))
        }
        _ => Err(unsupported_operands(op, left, right)),
    }
}

fn repeat(budget: &mut Budget, sequence: &Value, count: &BigInt, sequence_first: bool) -> Result<Value, EvalError> {
    let count = if count.is_negative() { 0 } else { count.to_u64().unwrap_or(u64::MAX) };
    match sequence {
        Value::Str(s) => {
            let chars = s.chars().count() as u128;
            if sequence_first && chars * count as u128 > ASTEVAL_MAX_STR_LEN as u128 {
                return Err(EvalError::limit(format!(
                    "String length exceeded, max string length is {ASTEVAL_MAX_STR_LEN}"
                )));
            }
            let bytes = (s.len() as u128 * count as u128).min(usize::MAX as u128) as usize;
            budget.check_str_bytes(bytes)?;
            Ok(Value::str(s.repeat(count as usize)))
        }
        Value::List(items) | Value::Tuple(items) => {
            let len = (items.len() as u128 * count as u128).min(usize::MAX as u128) as usize;
            budget.check_len(len)?;
            budget.charge(len as u64)?;
            let mut out = Vec::with_capacity(len);
            // An empty sequence stays empty however large the count (`[] * 11**9`): no loop.
            if !items.is_empty() {
                for _ in 0..count {
                    out.extend(items.iter().cloned());
                }
            }
            Ok(match sequence {
                Value::List(_) => Value::list(out),
                _ => Value::tuple(out),
            })
        }
        _ => unreachable!("repeat is only called with a sequence"),
    }
}

fn arithmetic(
    budget: &mut Budget,
    op: Operator,
    a: Number,
    b: Number,
    left: &Value,
    right: &Value,
) -> Result<Value, EvalError> {
    if let (Number::Int(x), Number::Int(y)) = (&a, &b) {
        return int_arithmetic(budget, op, x, y, left, right);
    }
    if op == Operator::Pow {
        if let Some(Ordering::Greater) = value::compare_numbers(&b, &Number::Int(BigInt::from(ASTEVAL_MAX_EXPONENT))) {
            return Err(EvalError::limit(format!("Invalid exponent, max exponent is {ASTEVAL_MAX_EXPONENT}")));
        }
    }
    let x = a.to_f64()?;
    let y = b.to_f64()?;
    let result = match op {
        Operator::Add => x + y,
        Operator::Sub => x - y,
        Operator::Mult => x * y,
        Operator::Div => {
            if y == 0.0 {
                return Err(zero_division("float division by zero"));
            }
            x / y
        }
        Operator::FloorDiv => {
            if y == 0.0 {
                return Err(zero_division("float floor division by zero"));
            }
            float_divmod(x, y).0
        }
        Operator::Mod => {
            if y == 0.0 {
                return Err(zero_division("float modulo"));
            }
            float_divmod(x, y).1
        }
        Operator::Pow => float_pow(x, y)?,
        _ => return Err(unsupported_operands(op, left, right)),
    };
    Ok(Value::Float(result))
}

/// CPython's `float_divmod`.
pub(crate) fn float_divmod(x: f64, y: f64) -> (f64, f64) {
    let mut modulo = x % y;
    let mut div = (x - modulo) / y;
    if modulo != 0.0 {
        if (y < 0.0) != (modulo < 0.0) {
            modulo += y;
            div -= 1.0;
        }
    } else {
        modulo = 0.0f64.copysign(y);
    }
    let floordiv = if div != 0.0 {
        let mut floordiv = div.floor();
        if div - floordiv > 0.5 {
            floordiv += 1.0;
        }
        floordiv
    } else {
        0.0f64.copysign(x / y)
    };
    (floordiv, modulo)
}

fn float_pow(x: f64, y: f64) -> Result<f64, EvalError> {
    if x == 0.0 && y < 0.0 {
        return Err(zero_division("0.0 cannot be raised to a negative power"));
    }
    if x < 0.0 && y.is_finite() && y.fract() != 0.0 {
        return Err(EvalError::unsupported("a negative number to a fractional power is complex"));
    }
    let result = x.powf(y);
    if result.is_infinite() && x.is_finite() && y.is_finite() {
        return Err(overflow("(34, 'Numerical result out of range')"));
    }
    Ok(result)
}

fn int_arithmetic(
    budget: &mut Budget,
    op: Operator,
    x: &BigInt,
    y: &BigInt,
    left: &Value,
    right: &Value,
) -> Result<Value, EvalError> {
    let result = match op {
        Operator::Add => x + y,
        Operator::Sub => x - y,
        Operator::Mult => {
            budget.check_int_bits(x.bits() + y.bits())?;
            x * y
        }
        Operator::Div => return Ok(Value::Float(true_divide(x, y)?)),
        Operator::FloorDiv => {
            if y.is_zero() {
                return Err(zero_division("integer division or modulo by zero"));
            }
            x.div_floor(y)
        }
        Operator::Mod => {
            if y.is_zero() {
                return Err(zero_division("integer modulo by zero"));
            }
            x.mod_floor(y)
        }
        Operator::Pow => {
            if y > &BigInt::from(ASTEVAL_MAX_EXPONENT) {
                return Err(EvalError::limit(format!("Invalid exponent, max exponent is {ASTEVAL_MAX_EXPONENT}")));
            }
            if y.is_negative() {
                return Ok(Value::Float(float_pow(int_to_f64(x)?, int_to_f64(y)?)?));
            }
            let exponent = y.to_u32().unwrap_or(0);
            let magnitude = x.abs();
            if magnitude > BigInt::from(1) {
                budget.check_int_bits((x.bits() - 1).saturating_mul(exponent as u64))?;
            }
            budget.charge(exponent as u64 / 64)?;
            x.pow(exponent)
        }
        Operator::LShift => {
            if y.is_negative() {
                return Err(EvalError::value_error("negative shift count"));
            }
            if y > &BigInt::from(ASTEVAL_MAX_SHIFT) {
                return Err(EvalError::limit(format!("Invalid left shift, max left shift is {ASTEVAL_MAX_SHIFT}")));
            }
            let shift = y.to_u64().unwrap_or(0);
            budget.check_int_bits(x.bits() + shift)?;
            x << shift
        }
        Operator::RShift => {
            if y.is_negative() {
                return Err(EvalError::value_error("negative shift count"));
            }
            match y.to_u64() {
                Some(shift) if shift < x.bits() + 1 => x >> shift,
                _ => BigInt::from(if x.is_negative() { -1 } else { 0 }),
            }
        }
        Operator::BitAnd => x & y,
        Operator::BitOr => x | y,
        Operator::BitXor => x ^ y,
        Operator::MatMult => return Err(unsupported_operands(op, left, right)),
    };
    budget.check_int_bits(result.bits())?;
    Ok(Value::Int(result))
}

/// `int / int`, correctly rounded for the sizes conditions use and never overflowing early.
pub(crate) fn true_divide(x: &BigInt, y: &BigInt) -> Result<f64, EvalError> {
    if y.is_zero() {
        return Err(zero_division("division by zero"));
    }
    const EXACT: u64 = 53;
    if x.bits() <= EXACT && y.bits() <= EXACT {
        return Ok(x.to_f64().unwrap_or(0.0) / y.to_f64().unwrap_or(1.0));
    }
    // Scale both down to keep about 64 significant bits of the larger one.
    let shift = x.bits().max(y.bits()).saturating_sub(64);
    let (xs, ys) = (x >> shift, y >> shift);
    if ys.is_zero() {
        // The quotient is at least 2^(bits(x) - 64 - 1): compute it as an integer.
        let quotient = x / y;
        return int_to_f64(&quotient).map_err(|_| overflow("integer division result too large for a float"));
    }
    let result = xs.to_f64().unwrap_or(0.0) / ys.to_f64().unwrap_or(1.0);
    if result.is_infinite() {
        return Err(overflow("integer division result too large for a float"));
    }
    Ok(result)
}

pub(crate) fn compare(budget: &mut Budget, op: CmpOp, left: &Value, right: &Value) -> Result<Value, EvalError> {
    budget.charge(comparison_cost(op, left, right))?;
    let result = match op {
        CmpOp::Eq => py_eq(left, right),
        CmpOp::NotEq => !py_eq(left, right),
        CmpOp::Is => left.is(right),
        CmpOp::IsNot => !left.is(right),
        CmpOp::In => contains(budget, right, left)?,
        CmpOp::NotIn => !contains(budget, right, left)?,
        CmpOp::Lt | CmpOp::LtE | CmpOp::Gt | CmpOp::GtE => {
            if let (Value::Set(a), Value::Set(b)) = (left, right) {
                let subset = |x: &value::Set, y: &value::Set| x.keys().all(|k| y.contains_key(k));
                return Ok(Value::Bool(match op {
                    CmpOp::Lt => a.len() < b.len() && subset(a, b),
                    CmpOp::LtE => subset(a, b),
                    CmpOp::Gt => a.len() > b.len() && subset(b, a),
                    _ => subset(b, a),
                }));
            }
            let symbol = match op {
                CmpOp::Lt => "<",
                CmpOp::LtE => "<=",
                CmpOp::Gt => ">",
                _ => ">=",
            };
            let ordering = py_cmp(left, right).map_err(|_| {
                EvalError::type_error(format!(
                    "'{symbol}' not supported between instances of '{}' and '{}'",
                    left.type_name(),
                    right.type_name()
                ))
            })?;
            match ordering {
                None => false,
                Some(ordering) => match op {
                    CmpOp::Lt => ordering == Ordering::Less,
                    CmpOp::LtE => ordering != Ordering::Greater,
                    CmpOp::Gt => ordering == Ordering::Greater,
                    _ => ordering != Ordering::Less,
                },
            }
        }
    };
    Ok(Value::Bool(result))
}

/// The elements a comparison may visit, for the step count: the shorter operand's for an
/// ordering or equality of containers, a 64th of the bytes for strings. (`in` is counted by
/// [`contains`].)
fn comparison_cost(op: CmpOp, left: &Value, right: &Value) -> u64 {
    if matches!(op, CmpOp::In | CmpOp::NotIn | CmpOp::Is | CmpOp::IsNot) {
        return 0;
    }
    let size = |value: &Value| -> u64 {
        match value {
            Value::Str(s) => s.len() as u64 / 64,
            Value::List(items) | Value::Tuple(items) => items.len() as u64,
            Value::Dict(d) => d.len() as u64,
            Value::Set(s) => s.len() as u64,
            _ => 0,
        }
    };
    size(left).min(size(right))
}

/// Python `item in container`.
pub(crate) fn contains(budget: &mut Budget, container: &Value, item: &Value) -> Result<bool, EvalError> {
    match container {
        Value::Str(haystack) => match item {
            Value::Str(needle) => {
                budget.charge(haystack.len() as u64 / 64)?;
                Ok(haystack.contains(&**needle))
            }
            other => Err(EvalError::type_error(format!(
                "'in <string>' requires string as left operand, not {}",
                other.type_name()
            ))),
        },
        Value::List(items) | Value::Tuple(items) => {
            budget.charge(items.len() as u64)?;
            Ok(items.iter().any(|candidate| candidate.is(item) || py_eq(candidate, item)))
        }
        Value::Dict(dict) => Ok(dict.contains_key(&Key::of(item)?)),
        Value::Set(set) => Ok(set.contains_key(&Key::of(item)?)),
        Value::Range(range) => Ok(match item {
            Value::Float(f) if f.fract() == 0.0 && f.is_finite() => {
                num_traits::FromPrimitive::from_f64(*f).is_some_and(|i: BigInt| range.contains(&i))
            }
            other => other.as_int().is_some_and(|i| range.contains(&i)),
        }),
        other => Err(EvalError::type_error(format!("argument of type '{}' is not iterable", other.type_name()))),
    }
}

fn normalize_index(index: &BigInt, len: usize) -> Option<usize> {
    let index = index.to_i128()?;
    let index = if index < 0 { index + len as i128 } else { index };
    (0..len as i128).contains(&index).then_some(index as usize)
}

pub(crate) fn subscript(container: &Value, index: &Value) -> Result<Value, EvalError> {
    let integer_index = |kind: &str| {
        index.as_int().ok_or_else(|| {
            EvalError::type_error(format!("{kind} indices must be integers or slices, not {}", index.type_name()))
        })
    };
    let out_of_range = |kind: &str| EvalError::new(EvalErrorKind::IndexError, format!("{kind} index out of range"));
    match container {
        Value::List(items) | Value::Tuple(items) => {
            let kind = container.type_name();
            let position = normalize_index(&integer_index(kind)?, items.len()).ok_or_else(|| out_of_range(kind))?;
            Ok(items[position].clone())
        }
        Value::Str(text) => {
            let position = integer_index("string")?;
            let len = text.chars().count();
            let position = normalize_index(&position, len).ok_or_else(|| out_of_range("string"))?;
            Ok(Value::str(text.chars().nth(position).map(String::from).unwrap_or_default()))
        }
        Value::Dict(dict) => match dict.get(&Key::of(index)?) {
            Some((_, value)) => Ok(value.clone()),
            None => Err(EvalError::new(EvalErrorKind::KeyError, value::repr(index)?)),
        },
        Value::Range(range) => {
            let position = integer_index("range")?;
            let len = usize::try_from(range.len()).unwrap_or(usize::MAX);
            let position = normalize_index(&position, len)
                .ok_or_else(|| EvalError::new(EvalErrorKind::IndexError, "range object index out of range"))?;
            Ok(Value::int(range.get(position as u64)))
        }
        other => Err(EvalError::type_error(format!("'{}' object is not subscriptable", other.type_name()))),
    }
}

fn slice_bound(bound: &Value) -> Result<Option<i128>, EvalError> {
    match bound {
        Value::None => Ok(None),
        other => match other.as_int() {
            Some(i) => {
                Ok(Some(i.to_i128().unwrap_or(if i.is_negative() { i64::MIN as i128 } else { i64::MAX as i128 })))
            }
            None => Err(EvalError::type_error("slice indices must be integers or None or have an __index__ method")),
        },
    }
}

/// The positions `sequence[lower:upper:step]` selects, as `PySlice_AdjustIndices` computes them.
fn slice_positions(len: usize, lower: &Value, upper: &Value, step: &Value) -> Result<Vec<usize>, EvalError> {
    let step = slice_bound(step)?.unwrap_or(1);
    if step == 0 {
        return Err(EvalError::value_error("slice step cannot be zero"));
    }
    let len = len as i128;
    let clamp = |bound: Option<i128>, default: i128| -> i128 {
        match bound {
            None => default,
            Some(value) if value < 0 => {
                let value = value + len;
                if value < 0 {
                    if step < 0 {
                        -1
                    } else {
                        0
                    }
                } else {
                    value
                }
            }
            Some(value) if value >= len => {
                if step < 0 {
                    len - 1
                } else {
                    len
                }
            }
            Some(value) => value,
        }
    };
    let (start, stop) = if step > 0 {
        (clamp(slice_bound(lower)?, 0), clamp(slice_bound(upper)?, len))
    } else {
        (clamp(slice_bound(lower)?, len - 1), clamp(slice_bound(upper)?, -1))
    };
    let mut positions = Vec::new();
    let mut position = start;
    while (step > 0 && position < stop) || (step < 0 && position > stop) {
        positions.push(position as usize);
        position += step;
    }
    Ok(positions)
}

pub(crate) fn slice(
    budget: &mut Budget,
    container: &Value,
    lower: &Value,
    upper: &Value,
    step: &Value,
) -> Result<Value, EvalError> {
    match container {
        Value::List(items) | Value::Tuple(items) => {
            let positions = slice_positions(items.len(), lower, upper, step)?;
            budget.charge(positions.len() as u64)?;
            let out = positions.into_iter().map(|p| items[p].clone()).collect();
            Ok(match container {
                Value::List(_) => Value::list(out),
                _ => Value::tuple(out),
            })
        }
        Value::Str(text) => {
            let chars: Vec<char> = text.chars().collect();
            let positions = slice_positions(chars.len(), lower, upper, step)?;
            budget.charge(positions.len() as u64)?;
            Ok(Value::str(positions.into_iter().map(|p| chars[p]).collect::<String>()))
        }
        Value::Dict(_) => Err(EvalError::type_error("unhashable type: 'slice'")),
        Value::Range(_) => Err(EvalError::unsupported("slicing a range is not supported")),
        other => Err(EvalError::type_error(format!("'{}' object is not subscriptable", other.type_name()))),
    }
}

/// The elements of an iterable, materialised (bounded by the collection limit).
pub(crate) fn iterate(budget: &mut Budget, iterable: &Value) -> Result<Vec<Value>, EvalError> {
    let items = match iterable {
        Value::List(items) | Value::Tuple(items) => (**items).clone(),
        Value::Str(text) => {
            let len = text.chars().count();
            budget.check_len(len)?;
            budget.charge_memory(value::vec_bytes(len) + len as u64 * value::str_bytes(4))?;
            text.chars().map(|c| Value::str(c.to_string())).collect()
        }
        Value::Dict(dict) => dict.values().map(|(key, _)| key.clone()).collect(),
        Value::Set(set) => set.values().cloned().collect(),
        Value::Range(range) => {
            let len = range.len();
            budget.check_len(usize::try_from(len).unwrap_or(usize::MAX))?;
            budget.charge(len)?;
            budget.charge_memory(value::vec_bytes(len as usize))?;
            (0..len).map(|i| Value::int(range.get(i))).collect()
        }
        other => return Err(EvalError::type_error(format!("'{}' object is not iterable", other.type_name()))),
    };
    budget.charge(items.len() as u64)?;
    // The copy of the elements (a range's and a string's were counted before they were made).
    if !matches!(iterable, Value::Range(_) | Value::Str(_)) {
        budget.charge_memory(value::vec_bytes(items.len()))?;
    }
    Ok(items)
}
