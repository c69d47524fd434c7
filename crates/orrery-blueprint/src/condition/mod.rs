//! The condition language: a Python expression subset evaluated the way the reference server's
//! `asteval.Interpreter(usersyms=namespace)(expression)` does, then taken with `bool()`.
//!
//! Parsing matches CPython 3.11 `ast.parse(expr, mode="eval")` (see [`syntax`]); the names a
//! condition reads match the reference's `_free_names`. Evaluation implements the part of
//! asteval's Python that conditions use, with Python semantics, and refuses everything that
//! could run code or use unbounded time or memory ([`Limits`]). Where asteval itself refuses
//! more than Python (an exponent above 10000, a string product above 256 KiB, a left shift above
//! 1000, `str.format`, generator expressions, walrus), Orrery refuses too, so a condition that
//! fails on the reference fails here.
//!
//! Known differences from the reference are listed in `tests/condition_differential.rs`.

mod budget;
#[cfg(test)]
mod budget_tests;
mod builtins;
mod callable;
mod eval;
mod ops;
mod simple;
mod syntax;
mod value;

use std::collections::BTreeSet;
use std::sync::Arc;

pub use callable::BUILTIN_NAMES;

use rustpython_parser::ast::Expr;

/// Parses a condition. Refuses exactly what `ast.parse(source, mode="eval")` refuses.
pub fn parse(source: &str) -> Result<Condition, ConditionSyntaxError> {
    let body = syntax::parse_expression(source)?;
    Ok(Condition { source: source.to_owned(), body: Arc::new(body) })
}

/// The names `source` reads from its namespace, as the reference's `_free_names` computes them.
pub fn free_names(source: &str) -> Result<BTreeSet<String>, ConditionSyntaxError> {
    if let Some(names) = simple::free_names(source) {
        return Ok(names);
    }
    let body = syntax::parse_expression(source)?;
    Ok(syntax::free_names(&body))
}

/// A parsed condition. Cheap to clone; shareable between threads.
#[derive(Clone, Debug)]
pub struct Condition {
    source: String,
    body: Arc<Expr>,
}

impl Condition {
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Names loaded anywhere in the expression, less names it binds itself (comprehension
    /// targets, walrus targets, lambda arguments) and less Python builtins.
    pub fn names_read(&self) -> BTreeSet<String> {
        syntax::free_names(&self.body)
    }

    /// `bool()` of the expression's value, with default [`Limits`].
    pub fn evaluate(&self, namespace: &Namespace) -> Result<bool, EvalError> {
        self.evaluate_with_limits(namespace, &Limits::default())
    }

    pub fn evaluate_with_limits(&self, namespace: &Namespace, limits: &Limits) -> Result<bool, EvalError> {
        let mut interpreter = eval::Interpreter::new(namespace, limits);
        let value = interpreter.eval(&self.body)?;
        Ok(value.truthy())
    }

    /// The expression's value as JSON: tuples become arrays, dicts with string keys become
    /// objects. A value JSON cannot hold (a set, a range, a function, a dict with non-string
    /// keys, NaN or infinity) is a `TypeError`, so callers never get a lossy stand-in.
    pub fn evaluate_value(&self, namespace: &Namespace) -> Result<serde_json::Value, EvalError> {
        self.evaluate_value_with_limits(namespace, &Limits::default())
    }

    pub fn evaluate_value_with_limits(
        &self,
        namespace: &Namespace,
        limits: &Limits,
    ) -> Result<serde_json::Value, EvalError> {
        let mut interpreter = eval::Interpreter::new(namespace, limits);
        let value = interpreter.eval(&self.body)?;
        value.to_json()
    }
}

/// A condition that does not parse. `message` is close to CPython's `SyntaxError.msg`;
/// `line` and `column` are 1-based (column counts characters).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message} (line {line}, column {column})")]
pub struct ConditionSyntaxError {
    pub message: String,
    pub line: usize,
    pub column: usize,
}

impl ConditionSyntaxError {
    pub(crate) fn at(source: &str, byte_offset: usize, message: &str) -> Self {
        let mut offset = byte_offset.min(source.len());
        while !source.is_char_boundary(offset) {
            offset -= 1;
        }
        let before = &source[..offset];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |index| index + 1);
        let column = before[line_start..].chars().count() + 1;
        Self { message: message.to_owned(), line, column }
    }
}

/// The names a condition can read: name -> JSON value. Later inserts win, which is how the
/// orchestrator layers params, inputs, element, context and session data.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Namespace {
    values: indexmap::IndexMap<String, serde_json::Value>,
}

impl Namespace {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn insert(&mut self, name: impl Into<String>, value: serde_json::Value) {
        self.values.insert(name.into(), value);
    }

    pub fn get(&self, name: &str) -> Option<&serde_json::Value> {
        self.values.get(name)
    }

    fn entry(&self, name: &str) -> Option<(&str, &serde_json::Value)> {
        self.values.get_key_value(name).map(|(key, value)| (key.as_str(), value))
    }

    pub fn len(&self) -> usize {
        self.values.len()
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }
}

impl<K: Into<String>> Extend<(K, serde_json::Value)> for Namespace {
    fn extend<I: IntoIterator<Item = (K, serde_json::Value)>>(&mut self, entries: I) {
        for (name, value) in entries {
            self.insert(name, value);
        }
    }
}

impl<K: Into<String>> FromIterator<(K, serde_json::Value)> for Namespace {
    fn from_iter<I: IntoIterator<Item = (K, serde_json::Value)>>(entries: I) -> Self {
        let mut namespace = Self::new();
        namespace.extend(entries);
        namespace
    }
}

impl From<serde_json::Map<String, serde_json::Value>> for Namespace {
    fn from(map: serde_json::Map<String, serde_json::Value>) -> Self {
        map.into_iter().collect()
    }
}

/// Bounds on one evaluation. Exceeding any of them is [`EvalErrorKind::LimitExceeded`],
/// raised before the work or allocation happens where its size is known beforehand (a string
/// product, a range materialised), else as soon as the value that crosses it is built.
///
/// The per-value limits (`max_collection_len`, `max_string_bytes`, `max_int_bits`) bound one
/// value; the budgets bound the whole evaluation, so that many values each under its limit
/// (`['a' * 262000 + str(i) for i in range(1000000)]`, 262 GB) cannot add up:
///
/// - `max_memory_bytes` (default 64 MiB) counts every value the evaluation builds, when it is
///   built: strings by their bytes, lists, tuples, dicts and sets by their slots, big integers
///   by their digits, namespace values when first converted, and the element copies that
///   iterating, comprehensions and builtins make. A value shared with an existing one (a name
///   read again, an element taken from a list) costs nothing; nothing is given back when a
///   value is dropped, so the budget also bounds the allocation work. Scratch space inside one
///   builtin call (the order `sorted` computes, say) is not counted: it is bounded by the
///   per-value limits.
/// - `max_steps` (default 10 million) counts expression nodes evaluated plus elements
///   iterated, compared, copied or sorted.
/// - `max_time` (default 5 s) is a deadline on the wall clock, checked as steps are counted:
///   a backstop for work the step count undervalues.
///
/// They are far above what a real condition needs (a comparison of a few outputs uses a few
/// hundred bytes and steps); a condition over one fails with a message naming the budget and
/// its size, and the engine fails its task (or its scope's while check) with that message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Nesting of evaluation (expression depth plus nested comprehensions and containers).
    pub max_depth: usize,
    /// Expression nodes evaluated plus elements iterated, compared or built.
    pub max_steps: u64,
    /// Elements in any list, tuple, dict, set or materialised range that evaluation builds.
    pub max_collection_len: usize,
    /// Bytes in any string that evaluation builds.
    pub max_string_bytes: usize,
    /// Bits in any integer that evaluation builds.
    pub max_int_bits: u64,
    /// Bytes of all the values one evaluation builds, added up (never given back).
    pub max_memory_bytes: u64,
    /// Wall-clock time one evaluation may take.
    pub max_time: std::time::Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_depth: 200,
            max_steps: 10_000_000,
            max_collection_len: 1_000_000,
            max_string_bytes: 16 << 20,
            max_int_bits: 1 << 18,
            max_memory_bytes: 64 << 20,
            max_time: std::time::Duration::from_secs(5),
        }
    }
}

/// Evaluation failed. `message` reads like Python's (`name 'x' is not defined`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{kind}: {message}")]
pub struct EvalError {
    pub kind: EvalErrorKind,
    pub message: String,
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EvalErrorKind {
    #[error("NameError")]
    NameError { name: String },
    #[error("TypeError")]
    TypeError,
    #[error("ValueError")]
    ValueError,
    #[error("ZeroDivisionError")]
    ZeroDivision,
    #[error("OverflowError")]
    Overflow,
    #[error("KeyError")]
    KeyError,
    #[error("IndexError")]
    IndexError,
    #[error("AttributeError")]
    AttributeError,
    /// Valid Python that conditions may not use here: imports, generator expressions, lambda,
    /// walrus, starred arguments, and builtins or methods Orrery does not provide.
    #[error("Unsupported")]
    Unsupported,
    #[error("LimitExceeded")]
    LimitExceeded,
}

impl EvalError {
    pub(crate) fn new(kind: EvalErrorKind, message: impl Into<String>) -> Self {
        Self { kind, message: message.into() }
    }

    pub(crate) fn type_error(message: impl Into<String>) -> Self {
        Self::new(EvalErrorKind::TypeError, message)
    }

    pub(crate) fn value_error(message: impl Into<String>) -> Self {
        Self::new(EvalErrorKind::ValueError, message)
    }

    pub(crate) fn unsupported(message: impl Into<String>) -> Self {
        Self::new(EvalErrorKind::Unsupported, message)
    }

    pub(crate) fn limit(message: impl Into<String>) -> Self {
        Self::new(EvalErrorKind::LimitExceeded, message)
    }
}
