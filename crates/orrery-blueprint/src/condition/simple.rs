//! The names read by the conditions most blueprints hold, without a syntax tree: names, plain
//! numbers and strings, lists, comparisons, arithmetic, `and`, `or`, `not`, `if`-`else`, calls,
//! attributes, subscripts, and comprehensions over single names (a list's, a generator's). A large blueprint has one condition per task or so, and the full parser takes some
//! microseconds for each; this recogniser takes a fraction of that.
//!
//! It accepts only a subset of Python's expression grammar, each of its rules one of Python's,
//! and gives up (`None`) on anything else or unusual: other characters or keywords, non-ASCII
//! text, escapes, comments, line breaks, a leading space, numbers other than plain decimals,
//! tuples, other comprehensions and targets, slices, keyword arguments, deep nesting, long text. The full parser then decides, so
//! every error, and every name of an expression this does not read, is still the full parser's.

use super::syntax::is_python_builtin;
use std::collections::BTreeSet;

/// Longer conditions go to the full parser (which bounds a tree's depth, here bounded by the
/// number of tokens).
const LONGEST: usize = 256;
/// Deeper nesting (brackets, unary operators, `not`) goes to the full parser.
const DEEPEST: usize = 24;

/// The names `source` reads, less Python's builtins, as the full parser's [`super::free_names`]
/// gives them; `None` when `source` is not of the subset read here.
pub(crate) fn free_names(source: &str) -> Option<BTreeSet<String>> {
    if source.len() > LONGEST || !source.is_ascii() || source.starts_with(' ') {
        return None;
    }
    let mut reader = Reader {
        text: source.as_bytes(),
        at: 0,
        token: Token::End,
        depth: 0,
        names: BTreeSet::new(),
        bound: BTreeSet::new(),
    };
    reader.next()?;
    reader.expression()?;
    if reader.token != Token::End {
        return None;
    }
    // As the full parser's: the names read anywhere, less those a comprehension binds anywhere.
    let Reader { names, bound, .. } = reader;
    Some(names.difference(&bound).filter(|n| !is_python_builtin(n)).map(|n| (*n).to_owned()).collect())
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Token<'a> {
    Name(&'a str),
    /// A number, `None`, `True` or `False`.
    Constant,
    Str,
    /// An operator, a bracket, a comma, a dot, or one of the keywords read here.
    Op(&'a str),
    End,
}

/// A recursive descent over the subset's grammar (Python's rules of the same names); every
/// method gives up with `None`.
struct Reader<'a> {
    text: &'a [u8],
    /// Just past the current token.
    at: usize,
    token: Token<'a>,
    depth: usize,
    names: BTreeSet<&'a str>,
    /// The targets of comprehensions.
    bound: BTreeSet<&'a str>,
}

impl<'a> Reader<'a> {
    /// The token at `at`; `None` gives up.
    fn peek_token(&self) -> Option<(Token<'a>, usize)> {
        let text = self.text;
        let mut at = self.at;
        while text.get(at) == Some(&b' ') {
            at += 1;
        }
        let Some(&first) = text.get(at) else { return Some((Token::End, at)) };
        let word = |from: usize, ok: fn(u8) -> bool| from + text[from..].iter().take_while(|&&b| ok(b)).count();
        match first {
            b'a'..=b'z' | b'A'..=b'Z' | b'_' => {
                let end = word(at, |b| b.is_ascii_alphanumeric() || b == b'_');
                let name = std::str::from_utf8(&text[at..end]).ok()?;
                let token = match name {
                    "None" | "True" | "False" => Token::Constant,
                    "and" | "or" | "not" | "in" | "is" | "if" | "else" | "for" => Token::Op(name),
                    // Other keywords, and the soft ones, are the full parser's.
                    _ if KEYWORDS.contains(&name) => return None,
                    _ => Token::Name(name),
                };
                Some((token, end))
            }
            b'0'..=b'9' => {
                let mut end = word(at, |b| b.is_ascii_digit());
                if first == b'0' && end > at + 1 {
                    return None; // `007` is refused, `00` is not: the full parser's
                }
                if text.get(end) == Some(&b'.') {
                    let fraction = word(end + 1, |b| b.is_ascii_digit());
                    if fraction == end + 1 {
                        return None; // `1.` and `1.e3`
                    }
                    end = fraction;
                }
                // `1e3`, `1j`, `1_000`, `0x1`, `1.5.real`, `1if`: the full parser's.
                if text.get(end).is_some_and(|&b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.') {
                    return None;
                }
                Some((Token::Constant, end))
            }
            b'\'' | b'"' => {
                let close =
                    text[at + 1..].iter().position(|&b| b == first || b == b'\\' || b == b'\n' || b == b'\r')?;
                let end = at + 1 + close;
                if text[end] != first {
                    return None;
                }
                // A string right after a name (`f'...'`, `rb"..."`) never reaches here: a name
                // followed by a string is no rule of the subset.
                Some((Token::Str, end + 1))
            }
            _ => {
                let two = text.get(at..at + 2).and_then(|t| std::str::from_utf8(t).ok());
                if let Some(op) = two.and_then(|t| OPERATORS_OF_TWO.iter().find(|o| **o == t)) {
                    return Some((Token::Op(op), at + 2));
                }
                let op = OPERATORS_OF_ONE.iter().find(|o| o.as_bytes()[0] == first)?;
                Some((Token::Op(op), at + 1))
            }
        }
    }

    fn next(&mut self) -> Option<()> {
        let (token, end) = self.peek_token()?;
        self.token = token;
        self.at = end;
        Some(())
    }

    /// Takes the current token when it is the operator `op`.
    fn take(&mut self, op: &str) -> Option<bool> {
        if self.token != Token::Op(op) {
            return Some(false);
        }
        self.next()?;
        Some(true)
    }

    /// Takes the operator `op`, which must come now.
    fn expect(&mut self, op: &str) -> Option<()> {
        self.take(op)?.then_some(())
    }

    /// `read` one level deeper; too deep gives up.
    fn nested(&mut self, read: impl FnOnce(&mut Self) -> Option<()>) -> Option<()> {
        self.depth += 1;
        if self.depth > DEEPEST {
            return None;
        }
        read(self)?;
        self.depth -= 1;
        Some(())
    }

    /// `or_test ['if' or_test 'else' expression]`.
    fn expression(&mut self) -> Option<()> {
        self.nested(|r| {
            r.or_test()?;
            if r.take("if")? {
                r.or_test()?;
                r.expect("else")?;
                r.expression()?;
            }
            Some(())
        })
    }

    /// `and_test ('or' and_test)*`, and below it `and_test`: `not_test ('and' not_test)*`.
    fn or_test(&mut self) -> Option<()> {
        loop {
            self.not_test()?;
            while self.take("and")? {
                self.not_test()?;
            }
            if !self.take("or")? {
                return Some(());
            }
        }
    }

    /// `'not' not_test | comparison`.
    fn not_test(&mut self) -> Option<()> {
        if self.take("not")? {
            return self.nested(Self::not_test);
        }
        self.arith()?;
        loop {
            match self.token {
                Token::Op("<" | ">" | "==" | ">=" | "<=" | "!=" | "in") => self.next()?,
                Token::Op("not") => {
                    self.next()?;
                    self.expect("in")?;
                }
                Token::Op("is") => {
                    self.next()?;
                    self.take("not")?;
                }
                _ => return Some(()),
            }
            self.arith()?;
        }
    }

    /// `arith_expr` and `term`: factors between `+ - * / // %`.
    fn arith(&mut self) -> Option<()> {
        self.factor()?;
        while matches!(self.token, Token::Op("+" | "-" | "*" | "/" | "//" | "%")) {
            self.next()?;
            self.factor()?;
        }
        Some(())
    }

    /// `('+'|'-'|'~') factor | power`, `power` being `primary ['**' factor]`.
    fn factor(&mut self) -> Option<()> {
        if matches!(self.token, Token::Op("+" | "-" | "~")) {
            self.next()?;
            return self.nested(Self::factor);
        }
        self.primary()?;
        if self.take("**")? {
            self.nested(Self::factor)?;
        }
        Some(())
    }

    /// An atom (a name, a number, strings side by side, a parenthesised expression, a list) and
    /// its trailers: calls without keywords or stars, subscripts without slices, attributes.
    fn primary(&mut self) -> Option<()> {
        match self.token {
            Token::Name(name) => {
                self.names.insert(name);
                self.next()?;
            }
            Token::Constant => self.next()?,
            Token::Str => {
                while self.token == Token::Str {
                    self.next()?;
                }
            }
            Token::Op("(") => {
                self.next()?;
                self.expression()?;
                if self.token == Token::Op("for") {
                    self.comprehension(")")?;
                } else {
                    self.expect(")")?;
                }
            }
            Token::Op("[") => {
                self.next()?;
                self.items_or_comprehension("]")?;
            }
            _ => return None,
        }
        loop {
            if self.take("(")? {
                self.items_or_comprehension(")")?;
            } else if self.take("[")? {
                self.expression()?;
                self.expect("]")?;
            } else if self.take(".")? {
                let Token::Name(_) = self.token else { return None };
                self.next()?;
            } else {
                return Some(());
            }
        }
    }

    /// A list's items or a call's arguments, up to and with `close`; or one expression and the
    /// clauses of a comprehension (a generator is a call's only argument).
    fn items_or_comprehension(&mut self, close: &str) -> Option<()> {
        if self.take(close)? {
            return Some(());
        }
        self.expression()?;
        if self.token == Token::Op("for") {
            return self.comprehension(close);
        }
        if !self.take(",")? && self.token != Token::Op(close) {
            return None;
        }
        self.items(close)
    }

    /// After a comprehension's element: `for NAME in or_test ('if' or_test)*`, once or more,
    /// then `close`. A target other than one name is the full parser's.
    fn comprehension(&mut self, close: &str) -> Option<()> {
        while self.take("for")? {
            let Token::Name(target) = self.token else { return None };
            self.bound.insert(target);
            self.next()?;
            self.expect("in")?;
            self.or_test()?;
            while self.take("if")? {
                self.or_test()?;
            }
        }
        self.expect(close)
    }

    /// Expressions separated by commas, maybe one after the last, up to and with `close`.
    fn items(&mut self, close: &str) -> Option<()> {
        while !self.take(close)? {
            self.expression()?;
            if !self.take(",")? && self.token != Token::Op(close) {
                return None;
            }
        }
        Some(())
    }
}

/// Python's keywords, hard and soft, but those the subset reads.
const KEYWORDS: &[&str] = &[
    "_", "as", "assert", "async", "await", "break", "case", "class", "continue", "def", "del", "elif", "except",
    "finally", "from", "global", "import", "lambda", "match", "nonlocal", "pass", "raise", "return", "try", "type",
    "while", "with", "yield",
];
const OPERATORS_OF_TWO: &[&str] = &["**", "//", "==", "!=", "<=", ">="];
const OPERATORS_OF_ONE: &[&str] = &["+", "-", "*", "/", "%", "~", "<", ">", "(", ")", "[", "]", ",", "."];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::condition::syntax;
    use proptest::prelude::*;

    /// What the full parser says of `source`: the names, or none when it refuses it.
    fn full(source: &str) -> Option<BTreeSet<String>> {
        syntax::parse_expression(source).ok().map(|body| syntax::free_names(&body))
    }

    fn names(list: &[&str]) -> Option<BTreeSet<String>> {
        Some(list.iter().map(|n| n.to_string()).collect())
    }

    #[test]
    fn the_usual_conditions_are_read_here_with_the_full_parsers_names() {
        for (source, read) in [
            ("0 <= count_t000002 <= 4", names(&["count_t000002"])),
            ("count_t000002 + run_started > threshold", names(&["count_t000002", "run_started", "threshold"])),
            ("result_t8 is None or str(result_t8).startswith('ok')", names(&["result_t8"])),
            ("not done and len(items) >= 2 ** -n", names(&["done", "items", "n"])),
            ("a not in b and c is not d", names(&["a", "b", "c", "d"])),
            ("x.y.z(w, 'v',)[k] // 2 % 3 != ~m", names(&["k", "m", "w", "x"])),
            ("'a' \"b\" == s", names(&["s"])),
            ("1 .real == 0.5 - (True)", names(&[])),
            ("f()", names(&["f"])),
            ("count % 2 == 0 if mode == 'a' else count > 1", names(&["count", "mode"])),
            ("x > 1 and mode in ['a', b,] and [] == []", names(&["b", "mode", "x"])),
            ("a if b else c if d else e", names(&["a", "b", "c", "d", "e"])),
            ("len([x for x in items_t20 if x > 2]) > 0", names(&["items_t20"])),
            ("any(v > k for v in vs if v for w in v if w) or (x for x in y)", names(&["k", "vs", "y"])),
            ("[x for y in z] == [y for x in w] and x", names(&["w", "z"])),
            ("[len for len in a] and [f(x) for x in a in b if c if d]", names(&["a", "b", "c", "d", "f"])),
        ] {
            assert_eq!(free_names(source), read, "{source}");
            assert_eq!(full(source), read, "{source}: the full parser disagrees with the test");
        }
    }

    #[test]
    fn anything_else_is_left_to_the_full_parser() {
        for source in [
            "x if y",
            "x if y if z else w else v",
            "[x for x.a in y]",
            "[x for a, b in y]",
            "[x for (a) in y]",
            "[x for x in y,]",
            "[x for x in y if a else b]",
            "[x for x in lambda: y]",
            "[x for x]",
            "f(x for x in y, 1)",
            "f(1, x for x in y)",
            "(x for x in y,)",
            "x for x in y",
            "[for x in y]",
            "{x for x in y}",
            "[,]",
            "f(x=1)",
            "f(*a)",
            "a[1:2]",
            "(a, b)",
            "()",
            "1.real",
            "1.",
            "007",
            "1e3",
            "1_000",
            "f'{x}'",
            "rb'x'",
            "'a\\'b'",
            " a",
            "a\n",
            "a # c",
            "lambda: 1",
            "a.None",
            "a.if",
            "a <> b",
            "a := 1",
            "match > 1",
            "_ > 1",
            "é > 1",
            "a & b",
            "a < not b",
            "- not a",
            "a ==",
            "(a",
            "a)",
            "",
            "{a}",
            "a b",
            "'a' 1",
            "None None",
            "f(,)",
            "a[]",
        ] {
            assert_eq!(free_names(source), None, "{source:?} must be left to the full parser");
        }
        let deep = format!("{}a{}", "(".repeat(DEEPEST + 1), ")".repeat(DEEPEST + 1));
        assert_eq!(free_names(&deep), None, "deep nesting");
        let long = vec!["a"; LONGEST].join("+");
        assert_eq!(free_names(&long), None, "long text");
    }

    /// A name that is no keyword; few letters, so that expressions read and bind the same ones.
    fn name() -> impl Strategy<Value = String> {
        "[a-d_][a-d0-9_]{0,2}".prop_filter("not a keyword", |n| {
            !KEYWORDS.contains(&n.as_str())
                && !["and", "or", "not", "in", "is", "if", "else", "for"].contains(&n.as_str())
        })
    }

    /// Expressions of the subset's grammar, with spaces or not between tokens where Python
    /// allows either.
    fn subset_expression() -> impl Strategy<Value = String> {
        let leaf = prop_oneof![
            name(),
            "(0|[1-9][0-9]{0,3})(\\.[0-9]{1,2})?",
            "'[a-z ]{0,3}'",
            Just("None".to_string()),
            Just("True".to_string()),
        ];
        leaf.prop_recursive(4, 24, 3, |inner| {
            let op = prop::sample::select(vec![
                " + ", "-", " * ", "/", " // ", "%", " ** ", " < ", ">", " == ", " >= ", "<=", "!=", " in ",
                " not in ", " is ", " is not ", " and ", " or ",
            ]);
            prop_oneof![
                (inner.clone(), op, inner.clone()).prop_map(|(a, op, b)| format!("{a}{op}{b}")),
                // `not` binds less than the operators it may stand beside here.
                inner.clone().prop_map(|a| format!("(not {a})")),
                (prop::sample::select(vec!["-", "+", "~", "- "]), inner.clone()).prop_map(|(op, a)| format!("{op}{a}")),
                inner.clone().prop_map(|a| format!("({a})")),
                (inner.clone(), prop::collection::vec(inner.clone(), 0..3), any::<bool>()).prop_map(
                    |(f, args, comma)| {
                        let comma = if comma && !args.is_empty() { "," } else { "" };
                        format!("({f})({}{comma})", args.join(", "))
                    }
                ),
                (inner.clone(), inner.clone()).prop_map(|(a, k)| format!("({a})[{k}]")),
                inner.clone().prop_map(|a| format!("({a}).attr")),
                prop::collection::vec(inner.clone(), 0..3).prop_map(|items| format!("[{}]", items.join(", "))),
                // Comprehensions: their targets are names the leaves may read too.
                (
                    inner.clone(),
                    prop::collection::vec((name(), inner.clone(), prop::option::of(inner.clone())), 1..3),
                    0..3usize
                )
                    .prop_map(|(element, clauses, form)| {
                        let clauses: Vec<String> = clauses
                            .into_iter()
                            .map(|(target, iter, test)| match test {
                                Some(test) => format!(" for {target} in ({iter}) if ({test})"),
                                None => format!(" for {target} in ({iter})"),
                            })
                            .collect();
                        let (open, close) = [("[", "]"), ("(", ")"), ("f(", ")")][form];
                        format!("{open}{element}{}{close}", clauses.concat())
                    }),
                (inner.clone(), inner.clone(), inner).prop_map(|(a, b, c)| format!("({a} if {b} else {c})")),
            ]
        })
    }

    /// Tokens that make valid and invalid text alike, for what must be refused or agreed on.
    fn any_tokens() -> impl Strategy<Value = String> {
        let token = prop::sample::select(vec![
            "a", "b1", "_x", "None", "True", "not", "and", "or", "in", "is", "if", "else", "for", "lambda", "0", "07",
            "1.5", "1.", "'s'", "\"t\"", "f", "(", ")", "[", "]", ",", ".", ":", "=", "==", "<", ">", "<=", "!=", "+",
            "-", "*", "**", "/", "//", "%", "~", "@", "|", "#", "\\", "\n", "é",
        ]);
        prop::collection::vec((token, prop::sample::select(vec!["", " "])), 1..12)
            .prop_map(|tokens| tokens.into_iter().map(|(t, space)| format!("{t}{space}")).collect())
    }

    proptest! {
        /// What the subset's grammar makes is read here, with the full parser's names.
        #[test]
        fn a_subset_expression_is_read_here_as_the_full_parser_reads_it(source in subset_expression()) {
            let read = free_names(&source);
            prop_assert!(read.is_some(), "{:?} is of the subset", source);
            prop_assert_eq!(read, full(&source), "{:?}", source);
        }

        /// Whatever the text, what is read here is what the full parser reads: never a text
        /// it refuses, never other names.
        #[test]
        fn what_is_read_here_the_full_parser_reads_alike(source in any_tokens()) {
            if let Some(read) = free_names(&source) {
                prop_assert_eq!(Some(read), full(&source), "{:?}", source);
            }
        }
    }
}
