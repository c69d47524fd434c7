//! Builtin functions and methods on values: the part of asteval's symbol table and of Python's
//! str, list, tuple, dict and set methods that conditions use.
//!
//! asteval's table also holds math and numpy functions; names from it that Orrery does not
//! provide are refused as `Unsupported` (not `NameError`), since they are not typos.

use std::cmp::Ordering;
use std::rc::Rc;

use malachite_bigint::BigInt;
use num_traits::{FromPrimitive, Signed, ToPrimitive};

use super::eval::{build_set, insert_dict, Interpreter};
use super::ops;
use super::value::{self, py_cmp, py_eq, Dict, Number, Range, Value};
use super::{EvalError, EvalErrorKind};

/// Every name in `asteval.Interpreter().symtable` (asteval 1.0.10 with numpy installed).
const ASTEVAL_SYMBOLS: &[&str] = &[
    "ArithmeticError",
    "AssertionError",
    "AttributeError",
    "BaseException",
    "BufferError",
    "BytesWarning",
    "DeprecationWarning",
    "EOFError",
    "EnvironmentError",
    "Exception",
    "False",
    "FloatingPointError",
    "IOError",
    "ImportError",
    "ImportWarning",
    "IndentationError",
    "IndexError",
    "KeyError",
    "KeyboardInterrupt",
    "LookupError",
    "MemoryError",
    "NameError",
    "None",
    "NotImplementedError",
    "OSError",
    "OverflowError",
    "ReferenceError",
    "RuntimeError",
    "RuntimeWarning",
    "StopIteration",
    "SyntaxError",
    "SyntaxWarning",
    "SystemError",
    "True",
    "TypeError",
    "UnboundLocalError",
    "UnicodeDecodeError",
    "UnicodeEncodeError",
    "UnicodeError",
    "UnicodeTranslateError",
    "UnicodeWarning",
    "ValueError",
    "Warning",
    "ZeroDivisionError",
    "abs",
    "acos",
    "acosh",
    "add",
    "all",
    "amax",
    "amin",
    "angle",
    "any",
    "append",
    "arange",
    "arccos",
    "arccosh",
    "arcsin",
    "arcsinh",
    "arctan",
    "arctan2",
    "arctanh",
    "argmax",
    "argmin",
    "argsort",
    "argwhere",
    "around",
    "array",
    "asarray",
    "asin",
    "asinh",
    "atan",
    "atan2",
    "atanh",
    "atleast_1d",
    "atleast_2d",
    "atleast_3d",
    "average",
    "bartlett",
    "bin",
    "bitwise_and",
    "bitwise_not",
    "bitwise_or",
    "bitwise_xor",
    "blackman",
    "bool",
    "broadcast",
    "bytearray",
    "bytes",
    "ceil",
    "choose",
    "chr",
    "clip",
    "column_stack",
    "common_type",
    "complex",
    "complex128",
    "compress",
    "concatenate",
    "conjugate",
    "convolve",
    "copysign",
    "corrcoef",
    "correlate",
    "cos",
    "cosh",
    "cov",
    "cross",
    "cumprod",
    "cumsum",
    "datetime_data",
    "deg2rad",
    "degrees",
    "delete",
    "diag",
    "diag_indices",
    "diag_indices_from",
    "diagflat",
    "diagonal",
    "dict",
    "diff",
    "digitize",
    "dir",
    "divide",
    "divmod",
    "dot",
    "dsplit",
    "dstack",
    "dtype",
    "e",
    "ediff1d",
    "empty",
    "empty_like",
    "enumerate",
    "equal",
    "exp",
    "exp2",
    "expand_dims",
    "expm1",
    "extract",
    "eye",
    "fabs",
    "factorial",
    "fill_diagonal",
    "filter",
    "finfo",
    "fix",
    "flatiter",
    "flatnonzero",
    "fliplr",
    "flipud",
    "float",
    "float64",
    "floor",
    "floor_divide",
    "fmax",
    "fmin",
    "fmod",
    "format",
    "frexp",
    "frombuffer",
    "fromfile",
    "fromfunction",
    "fromiter",
    "frompyfunc",
    "fromregex",
    "fromstring",
    "frozenset",
    "fsum",
    "genfromtxt",
    "getbufsize",
    "geterr",
    "gradient",
    "greater",
    "greater_equal",
    "hamming",
    "hanning",
    "hash",
    "hex",
    "histogram",
    "histogram2d",
    "histogramdd",
    "hsplit",
    "hstack",
    "hypot",
    "i0",
    "id",
    "identity",
    "iinfo",
    "imag",
    "indices",
    "inexact",
    "inf",
    "info",
    "inner",
    "insert",
    "int",
    "int32",
    "integer",
    "interp",
    "intersect1d",
    "invert",
    "iscomplex",
    "iscomplexobj",
    "isfinite",
    "isinf",
    "isinstance",
    "isnan",
    "isneginf",
    "isposinf",
    "isreal",
    "isrealobj",
    "isscalar",
    "iterable",
    "kaiser",
    "kron",
    "ldexp",
    "left_shift",
    "len",
    "less",
    "less_equal",
    "linspace",
    "list",
    "little_endian",
    "ln",
    "loadtxt",
    "log",
    "log10",
    "log1p",
    "log2",
    "logaddexp",
    "logaddexp2",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "logspace",
    "longdouble",
    "longlong",
    "map",
    "mask_indices",
    "matrix",
    "max",
    "maximum",
    "may_share_memory",
    "mean",
    "median",
    "meshgrid",
    "min",
    "minimum",
    "mintypecode",
    "mod",
    "modf",
    "multiply",
    "nan",
    "nan_to_num",
    "nanargmax",
    "nanargmin",
    "nanmax",
    "nanmin",
    "nansum",
    "ndarray",
    "ndenumerate",
    "ndim",
    "ndindex",
    "negative",
    "nextafter",
    "nonzero",
    "not_equal",
    "number",
    "oct",
    "ones",
    "ones_like",
    "open",
    "ord",
    "outer",
    "packbits",
    "percentile",
    "pi",
    "piecewise",
    "place",
    "poly",
    "poly1d",
    "polyadd",
    "polyder",
    "polydiv",
    "polyint",
    "polymul",
    "polysub",
    "polyval",
    "pow",
    "power",
    "print",
    "prod",
    "ptp",
    "put",
    "putmask",
    "rad2deg",
    "radians",
    "range",
    "ravel",
    "real",
    "real_if_close",
    "reciprocal",
    "record",
    "remainder",
    "repeat",
    "repr",
    "reshape",
    "resize",
    "reversed",
    "right_shift",
    "rint",
    "roll",
    "rollaxis",
    "roots",
    "rot90",
    "round",
    "searchsorted",
    "select",
    "set",
    "setbufsize",
    "setdiff1d",
    "seterr",
    "setxor1d",
    "shape",
    "short",
    "sign",
    "signbit",
    "signedinteger",
    "sin",
    "sinc",
    "single",
    "sinh",
    "size",
    "slice",
    "sort",
    "sort_complex",
    "sorted",
    "spacing",
    "split",
    "sqrt",
    "square",
    "squeeze",
    "std",
    "str",
    "subtract",
    "sum",
    "swapaxes",
    "take",
    "tan",
    "tanh",
    "tensordot",
    "tile",
    "trace",
    "transpose",
    "tri",
    "tril",
    "tril_indices",
    "tril_indices_from",
    "trim_zeros",
    "triu",
    "triu_indices",
    "triu_indices_from",
    "true_divide",
    "trunc",
    "tuple",
    "type",
    "ubyte",
    "uint",
    "uint32",
    "union1d",
    "unique",
    "unravel_index",
    "unsignedinteger",
    "unwrap",
    "ushort",
    "vander",
    "var",
    "vdot",
    "vectorize",
    "vsplit",
    "vstack",
    "where",
    "zeros",
    "zeros_like",
    "zip",
];

macro_rules! builtins {
    ($($variant:ident => $name:literal, $is_type:literal;)*) => {
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub(crate) enum Builtin { $($variant),* }

        impl Builtin {
            pub fn name(self) -> &'static str {
                match self { $(Builtin::$variant => $name),* }
            }

            pub fn is_type(self) -> bool {
                match self { $(Builtin::$variant => $is_type),* }
            }

            fn by_name(name: &str) -> Option<Builtin> {
                match name { $($name => Some(Builtin::$variant),)* _ => None }
            }
        }
    };
}

builtins! {
    Abs => "abs", false;
    All => "all", false;
    Any => "any", false;
    Bin => "bin", false;
    Bool => "bool", true;
    Chr => "chr", false;
    Dict => "dict", true;
    Divmod => "divmod", false;
    Enumerate => "enumerate", true;
    Float => "float", true;
    Hex => "hex", false;
    Int => "int", true;
    Isinstance => "isinstance", false;
    Len => "len", false;
    List => "list", true;
    Max => "max", false;
    Min => "min", false;
    Oct => "oct", false;
    Ord => "ord", false;
    Pow => "pow", false;
    Range => "range", true;
    Repr => "repr", false;
    Reversed => "reversed", true;
    Round => "round", false;
    Set => "set", true;
    Sorted => "sorted", false;
    Str => "str", true;
    Sum => "sum", false;
    Tuple => "tuple", true;
    Type => "type", false;
    Zip => "zip", true;
}

/// A global name that is not in the namespace: `Some(Ok)` for a builtin Orrery provides,
/// `Some(Err)` for one only asteval provides, `None` for an undefined name.
pub(crate) fn global(name: &str) -> Option<Result<Builtin, ()>> {
    if ASTEVAL_SYMBOLS.binary_search(&name).is_err() {
        return None;
    }
    Some(Builtin::by_name(name).ok_or(()))
}

/// A method bound to its receiver; the name is one of [`METHODS`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Method(&'static str);

impl Method {
    pub fn name(self) -> &'static str {
        self.0
    }
}

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

type Kwargs<'k> = Vec<(&'k str, Value)>;

struct Arguments<'k> {
    function: &'static str,
    positional: Vec<Value>,
    keywords: Kwargs<'k>,
}

impl<'k> Arguments<'k> {
    fn count(&self, min: usize, max: usize) -> Result<(), EvalError> {
        let given = self.positional.len();
        if given < min || given > max {
            let expected = if min == max {
                format!("exactly {min}")
            } else if given < min {
                format!("at least {min}")
            } else {
                format!("at most {max}")
            };
            let plural = if min == max && min == 1 || (given > max && max == 1) { "argument" } else { "arguments" };
            return Err(EvalError::type_error(format!(
                "{}() takes {expected} {plural} ({given} given)",
                self.function
            )));
        }
        Ok(())
    }

    fn keyword(&mut self, name: &str) -> Option<Value> {
        let position = self.keywords.iter().position(|(key, _)| *key == name)?;
        Some(self.keywords.remove(position).1)
    }

    fn no_more_keywords(&self) -> Result<(), EvalError> {
        match self.keywords.first() {
            Some((name, _)) => {
                Err(EvalError::type_error(format!("'{name}' is an invalid keyword argument for {}()", self.function)))
            }
            None => Ok(()),
        }
    }

    fn get(&self, index: usize) -> Option<&Value> {
        self.positional.get(index)
    }
}

pub(crate) fn call(
    interpreter: &mut Interpreter,
    function: &Value,
    positional: Vec<Value>,
    keywords: Kwargs,
) -> Result<Value, EvalError> {
    match function {
        Value::Builtin(builtin) => {
            let args = Arguments { function: builtin.name(), positional, keywords };
            call_builtin(interpreter, *builtin, args)
        }
        Value::Method(method) => {
            let (receiver, Method(name)) = &**method;
            let args = Arguments { function: name, positional, keywords };
            call_method(interpreter, receiver, name, args)
        }
        other => Err(EvalError::type_error(format!("'{}' object is not callable", other.type_name()))),
    }
}

fn type_error_arg(function: &str, value: &Value) -> EvalError {
    EvalError::type_error(format!("{function}() argument must be a supported type, not '{}'", value.type_name()))
}

fn call_builtin(interpreter: &mut Interpreter, builtin: Builtin, mut args: Arguments) -> Result<Value, EvalError> {
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
            let items = numpy_elements(interpreter, &args.positional[0])?;
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
            interpreter.check_str_bytes(text.len())?;
            Ok(Value::str(text))
        }
        B::List | B::Tuple | B::Set => {
            args.count(0, 1)?;
            args.no_more_keywords()?;
            let items = match args.get(0) {
                None => Vec::new(),
                Some(iterable) => ops::iterate(interpreter, iterable)?,
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
                    for (index, pair) in ops::iterate(interpreter, &iterable)?.into_iter().enumerate() {
                        let items = ops::iterate(interpreter, &pair).map_err(|_| {
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
            interpreter.check_len(out.len())?;
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
                ops::iterate(interpreter, &args.positional[0])?
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
            let keys = sort_keys(interpreter, &items, key.as_ref())?;
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
            for item in numpy_elements(interpreter, &args.positional[0])? {
                if matches!(item, Value::Str(_)) {
                    return Err(EvalError::type_error("cannot sum strings"));
                }
                total = ops::binary(interpreter, rustpython_parser::ast::Operator::Add, &total, &item)?;
            }
            Ok(total)
        }
        B::Sorted => {
            args.count(1, 1)?;
            let key = args.keyword("key").filter(|key| !matches!(key, Value::None));
            let reverse = args.keyword("reverse").is_some_and(|reverse| reverse.truthy());
            args.no_more_keywords()?;
            let items = ops::iterate(interpreter, &args.positional[0])?;
            let keys = sort_keys(interpreter, &items, key.as_ref())?;
            interpreter
                .charge((items.len() as u64).saturating_mul(64 - (items.len() as u64).leading_zeros() as u64))?;
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
            let quotient = ops::binary(interpreter, Operator::FloorDiv, a, b)?;
            let remainder = ops::binary(interpreter, Operator::Mod, a, b)?;
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
            let items = ops::iterate(interpreter, &args.positional[0])?;
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
            let mut items = ops::iterate(interpreter, &args.positional[0])?;
            items.reverse();
            Ok(Value::list(items))
        }
        B::Zip => {
            args.no_more_keywords()?;
            let columns: Vec<Vec<Value>> =
                args.positional.iter().map(|iterable| ops::iterate(interpreter, iterable)).collect::<Result<_, _>>()?;
            let len = columns.iter().map(Vec::len).min().unwrap_or(0);
            Ok(Value::list(
                (0..len).map(|row| Value::tuple(columns.iter().map(|column| column[row].clone()).collect())).collect(),
            ))
        }
    }
}

/// asteval's `any`, `all` and `sum` are numpy's, which treat a scalar as a one-element array.
fn numpy_elements(interpreter: &mut Interpreter, value: &Value) -> Result<Vec<Value>, EvalError> {
    match value {
        Value::None | Value::Bool(_) | Value::Int(_) | Value::Float(_) => Ok(vec![value.clone()]),
        other => ops::iterate(interpreter, other),
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

fn sort_keys(interpreter: &mut Interpreter, items: &[Value], key: Option<&Value>) -> Result<Vec<Value>, EvalError> {
    match key {
        None => Ok(items.to_vec()),
        Some(function) => {
            items.iter().map(|item| call(interpreter, function, vec![item.clone()], Vec::new())).collect()
        }
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

fn call_method(
    interpreter: &mut Interpreter,
    receiver: &Value,
    name: &'static str,
    mut args: Arguments,
) -> Result<Value, EvalError> {
    match receiver {
        Value::Str(text) => str_method(interpreter, text, name, args),
        Value::List(items) | Value::Tuple(items) => {
            args.no_more_keywords()?;
            match name {
                "copy" => {
                    args.count(0, 0)?;
                    Ok(Value::list((**items).clone()))
                }
                "count" => {
                    args.count(1, 1)?;
                    interpreter.charge(items.len() as u64)?;
                    let needle = &args.positional[0];
                    Ok(Value::int(items.iter().filter(|item| item.is(needle) || py_eq(item, needle)).count() as u64))
                }
                _ => {
                    args.count(1, 3)?;
                    interpreter.charge(items.len() as u64)?;
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
                let other = Value::Set(Rc::new(build_set(ops::iterate(interpreter, &args.positional[0])?)?));
                return match name {
                    "issubset" => ops::compare(interpreter, CmpOp::LtE, &result, &other),
                    "issuperset" => ops::compare(interpreter, CmpOp::GtE, &result, &other),
                    _ => {
                        let common = ops::binary(interpreter, Operator::BitAnd, &result, &other)?;
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
                let other = Value::Set(Rc::new(build_set(ops::iterate(interpreter, &other)?)?));
                result = ops::binary(interpreter, op, &result, &other)?;
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
    interpreter: &mut Interpreter,
    text: &Rc<str>,
    name: &'static str,
    mut args: Arguments,
) -> Result<Value, EvalError> {
    interpreter.charge(text.len() as u64 / 64)?;
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
            interpreter.check_len(parts.len())?;
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
            let items = ops::iterate(interpreter, &args.positional[0])?;
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
                interpreter.check_str_bytes(out.len())?;
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
            interpreter.check_str_bytes(s.len() + replaced.saturating_mul(new.len()))?;
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
            interpreter.check_str_bytes(width)?;
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
