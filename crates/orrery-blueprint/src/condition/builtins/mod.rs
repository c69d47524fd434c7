//! Builtin functions and methods on values: the part of asteval's symbol table and of Python's
//! str, list, tuple, dict and set methods that conditions use.
//!
//! asteval's table also holds math and numpy functions; names from it that Orrery does not
//! provide are refused as `Unsupported` (not `NameError`), since they are not typos.
//!
//! This module holds the symbol table and the call dispatch with its argument checks, which
//! functions and methods share; the functions are in `functions`, the methods and attribute
//! lookup in `methods`.

use super::eval::Interpreter;
use super::value::Value;
use super::EvalError;

mod functions;
mod methods;

use functions::call_builtin;
use methods::call_method;
pub(crate) use methods::{attribute, Method};

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
