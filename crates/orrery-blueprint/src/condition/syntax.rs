//! Parsing a condition and finding the names it reads.
//!
//! Validity must match CPython 3.11 `ast.parse(expr, mode="eval")`, because the reference server
//! refuses a blueprint whose condition does not parse. `rustpython-parser` does the parsing; the
//! few places where it is more lenient or stricter than CPython are patched here, and the
//! differential test (`tests/condition_differential.rs`) checks the rest against real CPython.

use std::collections::BTreeSet;

use rustpython_parser::ast::{self, Expr};
use rustpython_parser::{Mode, ParseErrorType};

use super::ConditionSyntaxError;

/// Deeper trees are refused as "too complex". CPython 3.11's `ast.parse` has no fixed limit:
/// it raises RecursionError (not SyntaxError, so the reference server fails with a 500) at
/// about 3000 levels minus 3 per active Python frame of the caller. A fixed, lower bound keeps
/// Orrery deterministic and every later walk (and the tree's recursive drop) shallow.
pub(crate) const MAX_TREE_DEPTH: usize = 1000;

/// Trees this deep are leaked instead of dropped: the generated `Drop` recurses per level and
/// would overflow the stack. Only reachable with hostile input, and bounded by its length.
const LEAK_TREE_DEPTH: usize = 20_000;

/// `dir(builtins)` of CPython 3.11: the names `_free_names` never reports.
const PYTHON_BUILTINS: &[&str] = &[
    "ArithmeticError",
    "AssertionError",
    "AttributeError",
    "BaseException",
    "BaseExceptionGroup",
    "BlockingIOError",
    "BrokenPipeError",
    "BufferError",
    "BytesWarning",
    "ChildProcessError",
    "ConnectionAbortedError",
    "ConnectionError",
    "ConnectionRefusedError",
    "ConnectionResetError",
    "DeprecationWarning",
    "EOFError",
    "Ellipsis",
    "EncodingWarning",
    "EnvironmentError",
    "Exception",
    "ExceptionGroup",
    "False",
    "FileExistsError",
    "FileNotFoundError",
    "FloatingPointError",
    "FutureWarning",
    "GeneratorExit",
    "IOError",
    "ImportError",
    "ImportWarning",
    "IndentationError",
    "IndexError",
    "InterruptedError",
    "IsADirectoryError",
    "KeyError",
    "KeyboardInterrupt",
    "LookupError",
    "MemoryError",
    "ModuleNotFoundError",
    "NameError",
    "None",
    "NotADirectoryError",
    "NotImplemented",
    "NotImplementedError",
    "OSError",
    "OverflowError",
    "PendingDeprecationWarning",
    "PermissionError",
    "ProcessLookupError",
    "RecursionError",
    "ReferenceError",
    "ResourceWarning",
    "RuntimeError",
    "RuntimeWarning",
    "StopAsyncIteration",
    "StopIteration",
    "SyntaxError",
    "SyntaxWarning",
    "SystemError",
    "SystemExit",
    "TabError",
    "TimeoutError",
    "True",
    "TypeError",
    "UnboundLocalError",
    "UnicodeDecodeError",
    "UnicodeEncodeError",
    "UnicodeError",
    "UnicodeTranslateError",
    "UnicodeWarning",
    "UserWarning",
    "ValueError",
    "Warning",
    "ZeroDivisionError",
    "__build_class__",
    "__debug__",
    "__doc__",
    "__import__",
    "__loader__",
    "__name__",
    "__package__",
    "__spec__",
    "abs",
    "aiter",
    "all",
    "anext",
    "any",
    "ascii",
    "bin",
    "bool",
    "breakpoint",
    "bytearray",
    "bytes",
    "callable",
    "chr",
    "classmethod",
    "compile",
    "complex",
    "copyright",
    "credits",
    "delattr",
    "dict",
    "dir",
    "divmod",
    "enumerate",
    "eval",
    "exec",
    "exit",
    "filter",
    "float",
    "format",
    "frozenset",
    "getattr",
    "globals",
    "hasattr",
    "hash",
    "help",
    "hex",
    "id",
    "input",
    "int",
    "isinstance",
    "issubclass",
    "iter",
    "len",
    "license",
    "list",
    "locals",
    "map",
    "max",
    "memoryview",
    "min",
    "next",
    "object",
    "oct",
    "open",
    "ord",
    "pow",
    "print",
    "property",
    "quit",
    "range",
    "repr",
    "reversed",
    "round",
    "set",
    "setattr",
    "slice",
    "sorted",
    "staticmethod",
    "str",
    "sum",
    "super",
    "tuple",
    "type",
    "vars",
    "zip",
];

pub(crate) fn is_python_builtin(name: &str) -> bool {
    PYTHON_BUILTINS.binary_search(&name).is_ok()
}

/// Parses `source` exactly as `ast.parse(source, mode="eval")` would accept or refuse it.
pub(crate) fn parse_expression(source: &str) -> Result<Expr, ConditionSyntaxError> {
    precheck(source)?;
    let parsed = rustpython_parser::parse(source, Mode::Expression, "<condition>")
        .map_err(|error| syntax_error_from_parser(source, &error))?;
    let ast::Mod::Expression(module) = parsed else {
        return Err(ConditionSyntaxError::at(source, 0, "invalid syntax"));
    };
    let body = *module.body;
    // A bare starred expression parses in rustpython; CPython refuses it outside a tuple.
    if matches!(body, Expr::Starred(_)) {
        return Err(ConditionSyntaxError::at(source, 0, "can't use starred expression here"));
    }
    let depth = tree_depth(&body);
    if depth > MAX_TREE_DEPTH {
        if depth > LEAK_TREE_DEPTH {
            std::mem::forget(body);
        }
        return Err(ConditionSyntaxError::at(source, 0, "expression too complex"));
    }
    let mut body = body;
    if !source.is_ascii() {
        normalize_identifiers(&mut body);
    }
    Ok(body)
}

/// Differences from CPython that are visible before parsing.
fn precheck(source: &str) -> Result<(), ConditionSyntaxError> {
    // CPython's tokenizer refuses a leading indent even in eval mode; rustpython accepts it.
    if let Some(first) = source.chars().next() {
        if first == ' ' || first == '\t' || first == '\x0c' {
            let rest = source.trim_start_matches([' ', '\t', '\x0c']);
            let blank = rest.is_empty() || rest.starts_with(['\n', '\r', '#']);
            if !blank {
                return Err(ConditionSyntaxError::at(source, 0, "unexpected indent"));
            }
        }
    }
    // rustpython skips a byte order mark; CPython's tokenizer refuses it in a str source.
    if source.starts_with('\u{feff}') {
        return Err(ConditionSyntaxError::at(source, 0, "invalid non-printable character U+FEFF"));
    }
    if source.contains('\0') {
        return Err(ConditionSyntaxError::at(
            source,
            source.find('\0').unwrap_or(0),
            "source code string cannot contain null bytes",
        ));
    }
    // CPython's tokenizer allows at most 200 open brackets at once.
    let mut level = 0usize;
    for (offset, ch) in source.char_indices() {
        match ch {
            '(' | '[' | '{' => {
                level += 1;
                if level >= 200 {
                    return Err(ConditionSyntaxError::at(source, offset, "too many nested parentheses"));
                }
            }
            ')' | ']' | '}' => level = level.saturating_sub(1),
            _ => {}
        }
    }
    Ok(())
}

fn syntax_error_from_parser(source: &str, error: &rustpython_parser::ParseError) -> ConditionSyntaxError {
    let offset = usize::from(error.offset).min(source.len());
    let message = match &error.error {
        ParseErrorType::Lexical(lexical) => {
            let text = lexical.to_string();
            if text.contains("unterminated string") || text.contains("EOL while scanning") {
                "unterminated string literal".to_owned()
            } else if text.contains("unexpected indent") || text.contains("indent") {
                "unexpected indent".to_owned()
            } else {
                text
            }
        }
        _ => "invalid syntax".to_owned(),
    };
    ConditionSyntaxError::at(source, offset, &message)
}

/// The reference's `_free_names`: names loaded anywhere, less names stored or bound as lambda
/// arguments anywhere, less Python builtins.
pub(crate) fn free_names(body: &Expr) -> BTreeSet<String> {
    let mut read: BTreeSet<&str> = BTreeSet::new();
    let mut bound: BTreeSet<&str> = BTreeSet::new();
    walk(body, &mut |node| match node {
        Expr::Name(name) => {
            if matches!(name.ctx, ast::ExprContext::Load) {
                read.insert(name.id.as_str());
            } else {
                bound.insert(name.id.as_str());
            }
        }
        Expr::Lambda(lambda) => {
            for arg in lambda_args(&lambda.args) {
                bound.insert(arg.as_str());
            }
        }
        _ => {}
    });
    read.difference(&bound).filter(|name| !is_python_builtin(name)).map(|name| (*name).to_owned()).collect()
}

fn lambda_args(args: &ast::Arguments) -> impl Iterator<Item = &ast::Identifier> {
    args.posonlyargs
        .iter()
        .chain(&args.args)
        .chain(&args.kwonlyargs)
        .map(|with_default| &with_default.def.arg)
        .chain(args.vararg.iter().map(|arg| &arg.arg))
        .chain(args.kwarg.iter().map(|arg| &arg.arg))
}

/// Visits every expression node, parents before children, without recursion.
pub(crate) fn walk<'a>(root: &'a Expr, visit: &mut impl FnMut(&'a Expr)) {
    let mut stack = vec![root];
    let mut children = Vec::new();
    while let Some(node) = stack.pop() {
        visit(node);
        children.clear();
        push_children(node, &mut children);
        stack.extend(children.drain(..).rev());
    }
}

fn tree_depth(root: &Expr) -> usize {
    let mut deepest = 0;
    let mut stack = vec![(root, 1usize)];
    let mut children = Vec::new();
    while let Some((node, depth)) = stack.pop() {
        deepest = deepest.max(depth);
        if depth > LEAK_TREE_DEPTH {
            return depth;
        }
        children.clear();
        push_children(node, &mut children);
        stack.extend(children.drain(..).map(|child| (child, depth + 1)));
    }
    deepest
}

/// The children of an expression node, in source order; once for shared and once for mutable
/// references (`children!(push_children)` and `children!(push_children_mut, mut)`).
macro_rules! children {
    ($name:ident $(, $m:tt)?) => {
        fn $name<'a>(node: &'a $($m)? Expr, out: &mut Vec<&'a $($m)? Expr>) {
            fn comprehensions<'a>(generators: &'a $($m)? [ast::Comprehension], out: &mut Vec<&'a $($m)? Expr>) {
                for generator in generators {
                    out.push(&$($m)? generator.target);
                    out.push(&$($m)? generator.iter);
                    out.extend(&$($m)? generator.ifs);
                }
            }
            match node {
                Expr::BoolOp(e) => out.extend(&$($m)? e.values),
                Expr::NamedExpr(e) => {
                    out.push(&$($m)? e.target);
                    out.push(&$($m)? e.value);
                }
                Expr::BinOp(e) => {
                    out.push(&$($m)? e.left);
                    out.push(&$($m)? e.right);
                }
                Expr::UnaryOp(e) => out.push(&$($m)? e.operand),
                Expr::Lambda(e) => {
                    let args = &$($m)? *e.args;
                    let all = (&$($m)? args.posonlyargs).into_iter().chain(&$($m)? args.args).chain(&$($m)? args.kwonlyargs);
                    out.extend(all.filter_map(|with_default| (&$($m)? with_default.default).as_mut_or_ref()));
                    out.push(&$($m)? e.body);
                }
                Expr::IfExp(e) => {
                    out.push(&$($m)? e.test);
                    out.push(&$($m)? e.body);
                    out.push(&$($m)? e.orelse);
                }
                Expr::Dict(e) => {
                    out.extend((&$($m)? e.keys).into_iter().flatten());
                    out.extend(&$($m)? e.values);
                }
                Expr::Set(e) => out.extend(&$($m)? e.elts),
                Expr::ListComp(e) => {
                    out.push(&$($m)? e.elt);
                    comprehensions(&$($m)? e.generators, out);
                }
                Expr::SetComp(e) => {
                    out.push(&$($m)? e.elt);
                    comprehensions(&$($m)? e.generators, out);
                }
                Expr::DictComp(e) => {
                    out.push(&$($m)? e.key);
                    out.push(&$($m)? e.value);
                    comprehensions(&$($m)? e.generators, out);
                }
                Expr::GeneratorExp(e) => {
                    out.push(&$($m)? e.elt);
                    comprehensions(&$($m)? e.generators, out);
                }
                Expr::Await(e) => out.push(&$($m)? e.value),
                Expr::Yield(e) => out.extend((&$($m)? e.value).as_mut_or_ref()),
                Expr::YieldFrom(e) => out.push(&$($m)? e.value),
                Expr::Compare(e) => {
                    out.push(&$($m)? e.left);
                    out.extend(&$($m)? e.comparators);
                }
                Expr::Call(e) => {
                    out.push(&$($m)? e.func);
                    out.extend(&$($m)? e.args);
                    out.extend((&$($m)? e.keywords).into_iter().map(|keyword| &$($m)? keyword.value));
                }
                Expr::FormattedValue(e) => {
                    out.push(&$($m)? e.value);
                    out.extend((&$($m)? e.format_spec).as_mut_or_ref());
                }
                Expr::JoinedStr(e) => out.extend(&$($m)? e.values),
                Expr::Constant(_) | Expr::Name(_) => {}
                Expr::Attribute(e) => out.push(&$($m)? e.value),
                Expr::Subscript(e) => {
                    out.push(&$($m)? e.value);
                    out.push(&$($m)? e.slice);
                }
                Expr::Starred(e) => out.push(&$($m)? e.value),
                Expr::List(e) => out.extend(&$($m)? e.elts),
                Expr::Tuple(e) => out.extend(&$($m)? e.elts),
                Expr::Slice(e) => {
                    out.extend((&$($m)? e.lower).as_mut_or_ref());
                    out.extend((&$($m)? e.upper).as_mut_or_ref());
                    out.extend((&$($m)? e.step).as_mut_or_ref());
                }
            }
        }
    };
}

children!(push_children);
children!(push_children_mut, mut);

/// `Option<Box<Expr>>` as an optional reference of the mutability it is reached with.
trait AsMutOrRef<'a, R> {
    fn as_mut_or_ref(self) -> Option<R>;
}

impl<'a> AsMutOrRef<'a, &'a Expr> for &'a Option<Box<Expr>> {
    fn as_mut_or_ref(self) -> Option<&'a Expr> {
        self.as_deref()
    }
}

impl<'a> AsMutOrRef<'a, &'a mut Expr> for &'a mut Option<Box<Expr>> {
    fn as_mut_or_ref(self) -> Option<&'a mut Expr> {
        self.as_deref_mut()
    }
}

/// Python normalises every identifier of source text to NFKC (PEP 3131) before it uses it:
/// `ﬁle`, `ｆｉｌｅ` and `𝐟𝐢𝐥𝐞` all read the name `file` (and `Ｔｒｕｅ` is the name `True`,
/// not the constant). Names, attributes, keyword arguments and lambda parameters are rewritten
/// in place, without recursion; text and the outputs' names in the JSON are left as they are.
fn normalize_identifiers(body: &mut Expr) {
    use unicode_normalization::UnicodeNormalization;
    fn nfkc(identifier: &mut ast::Identifier) {
        if !identifier.as_str().is_ascii() {
            *identifier = ast::Identifier::new(identifier.as_str().nfkc().collect::<String>());
        }
    }
    let mut stack = vec![body];
    let mut children = Vec::new();
    while let Some(node) = stack.pop() {
        match &mut *node {
            Expr::Name(e) => nfkc(&mut e.id),
            Expr::Attribute(e) => nfkc(&mut e.attr),
            Expr::Call(e) => e.keywords.iter_mut().filter_map(|k| k.arg.as_mut()).for_each(nfkc),
            Expr::Lambda(e) => {
                let args = &mut *e.args;
                let named = args.posonlyargs.iter_mut().chain(&mut args.args).chain(&mut args.kwonlyargs);
                named
                    .map(|with_default| &mut with_default.def)
                    .chain(args.vararg.as_deref_mut())
                    .chain(args.kwarg.as_deref_mut())
                    .for_each(|arg| nfkc(&mut arg.arg));
            }
            _ => {}
        }
        push_children_mut(node, &mut children);
        stack.append(&mut children);
    }
}
