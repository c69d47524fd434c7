//! The condition language: parsing, names read, Python semantics and limits.

use std::time::{Duration, Instant};

use orrery_blueprint::condition::{self, EvalErrorKind, Limits, Namespace};
use proptest::prelude::*;
use serde_json::json;

fn namespace() -> Namespace {
    let mut namespace = Namespace::new();
    namespace.extend([
        ("x", json!(5)),
        ("n", json!(null)),
        ("s", json!("Hello World")),
        ("l", json!([3, 1, 2])),
        ("d", json!({"k": 1, "name": "orrery"})),
        ("status", json!("SUCCEEDED")),
        ("big", json!(12345678901234567890u64)),
        ("ratio", json!(0.75)),
    ]);
    namespace
}

fn eval(source: &str) -> bool {
    let parsed = condition::parse(source).unwrap_or_else(|error| panic!("{source:?} should parse: {error}"));
    parsed.evaluate(&namespace()).unwrap_or_else(|error| panic!("{source:?} should evaluate: {error}"))
}

fn value(source: &str) -> serde_json::Value {
    condition::parse(source)
        .expect("parses")
        .evaluate_value(&namespace())
        .unwrap_or_else(|error| panic!("{source:?} should evaluate: {error}"))
}

fn error_kind(source: &str) -> EvalErrorKind {
    condition::parse(source).expect("parses").evaluate(&namespace()).expect_err(&format!("{source:?} should fail")).kind
}

#[test]
fn python_semantics_hold_for_everyday_conditions() {
    for source in [
        "-7 // 2 == -4",
        "7 // -2 == -4",
        "-7 % 3 == 2",
        "7 % -3 == -2",
        "-7.5 // 2 == -4.0",
        "1 < 2 < 3",
        "not (1 < 3 < 2)",
        "x >= 5 >= -1",
        "'a' in 'abc'",
        "'z' not in 'abc'",
        "n is None",
        "x is not None",
        "d.get('k', 3) == 1",
        "d.get('missing', 3) == 3",
        "d.get('missing') is None",
        "round(2.5) == 2",
        "round(3.5) == 4",
        "round(-2.5) == -2",
        "round(2.675, 2) == 2.67",
        "round(1250, -2) == 1200",
        "True + True == 2",
        "1 == 1.0 == True",
        "10 / 4 == 2.5",
        "2 ** -1 == 0.5",
        "big * big > 0",
        "big // 7 == 1763668414462081127",
        "(x and 'yes') == 'yes'",
        "(0 or '' or 'last') == 'last'",
        "('yes' if x > 3 else 'no') == 'yes'",
        "l[-1] == 2 and l[::-1] == [2, 1, 3] and l[1:] == [1, 2]",
        "s[::-1] == 'dlroW olleH'",
        "s.upper().startswith('HELLO')",
        "s.split() == ['Hello', 'World']",
        "','.join(['a', 'b']) == 'a,b'",
        "len(s) == 11 and len(l) == 3 and len(d) == 2",
        "min(l) == 1 and max(l) == 3 and sum(l) == 6",
        "sorted(l) == [1, 2, 3] and sorted(l, reverse=True) == [3, 2, 1]",
        "any([0, '', 1]) and not all([1, 0])",
        "[i * 2 for i in l if i > 1] == [6, 4]",
        "{k: v for k, v in d.items()}['k'] == 1",
        "{c for c in 'aab'} == {'a', 'b'}",
        "int('42') + int(3.9) == 45",
        "float('1.5') == 1.5",
        "str(1.0) == '1.0' and str(0.1) == '0.1' and str(1e16) == '1e+16'",
        "str([1, 'a', None]) == \"[1, 'a', None]\"",
        "isinstance(x, int) and isinstance(ratio, (int, float))",
        "status in ('SUCCEEDED', 'SKIPPED')",
        "list(range(10, 0, -3)) == [10, 7, 4, 1]",
        "10**12 in range(10**13)",
        "f'{x}-{s!r}' == \"5-'Hello World'\"",
    ] {
        assert!(eval(source), "{source:?} should be true, as in Python");
    }
}

#[test]
fn evaluate_value_turns_results_back_into_json() {
    assert_eq!(value("[x, (1, 'a'), None]"), json!([5, [1, "a"], null]), "tuples become arrays");
    assert_eq!(value("{'a': ratio}"), json!({"a": 0.75}));
    assert_eq!(value("big + 1").to_string(), "12345678901234567891", "ints keep their exact digits");
    let error = condition::parse("{1, 2}").unwrap().evaluate_value(&namespace()).unwrap_err();
    assert_eq!(error.kind, EvalErrorKind::TypeError, "a set has no JSON form and is refused, not stringified");
}

#[test]
fn errors_carry_python_kinds_and_messages() {
    let error = condition::parse("missing > 1").unwrap().evaluate(&namespace()).unwrap_err();
    assert_eq!(error.kind, EvalErrorKind::NameError { name: "missing".into() });
    assert_eq!(error.message, "name 'missing' is not defined");
    assert_eq!(error_kind("1 / 0"), EvalErrorKind::ZeroDivision);
    assert_eq!(error_kind("d['missing']"), EvalErrorKind::KeyError);
    assert_eq!(error_kind("l[3]"), EvalErrorKind::IndexError);
    assert_eq!(error_kind("'a' + 1"), EvalErrorKind::TypeError);
    assert_eq!(error_kind("int('x')"), EvalErrorKind::ValueError);
    assert_eq!(error_kind("s.nosuch"), EvalErrorKind::AttributeError);
    assert_eq!(error_kind("s.__class__"), EvalErrorKind::AttributeError, "dunder attributes are never reachable");
    assert_eq!(error_kind("'{}'.format(1)"), EvalErrorKind::AttributeError, "asteval refuses str.format");
}

#[test]
fn constructs_asteval_refuses_are_refused() {
    for source in ["any(i > 2 for i in l)", "(y := 3)", "__import__('os')", "eval('1')", "open('x')", "(lambda: 1)()"] {
        let kind = error_kind(source);
        assert!(
            matches!(kind, EvalErrorKind::Unsupported | EvalErrorKind::NameError { .. }),
            "{source:?} must not run, got {kind:?}"
        );
    }
}

#[test]
fn names_read_match_the_reference_free_names() {
    let names = |source: &str| -> Vec<String> { condition::free_names(source).unwrap().into_iter().collect() };
    assert_eq!(names("x > 1 and len(items) > 0"), ["items", "x"], "builtins are not names read");
    assert_eq!(names("[i for i in items if i > limit]"), ["items", "limit"], "comprehension targets are bound");
    assert_eq!(names("(lambda a, *b, c=d, **e: a + f)(1)"), ["d", "f"], "lambda arguments are bound");
    assert_eq!(names("(y := 3) and y and z"), ["z"], "walrus targets are bound everywhere");
    assert_eq!(
        names("i and [i for i in x]"),
        ["x"],
        "a name bound anywhere is removed globally, as the reference does"
    );
    assert_eq!(names("obj.attr.method(kw=value)"), ["obj", "value"]);
    assert_eq!(names("True or None or __debug__"), Vec::<String>::new());
    let parsed = condition::parse("a + b").unwrap();
    assert_eq!(parsed.names_read().into_iter().collect::<Vec<_>>(), ["a", "b"]);
    assert_eq!(parsed.source(), "a + b");
}

#[test]
fn syntax_errors_match_cpython_eval_mode() {
    for source in ["", " x", "\tx", "x = 1", "x :=1", "import os", "x;y", "x\ny", "(x", "'open", "1__0", "0777"] {
        assert!(condition::parse(source).is_err(), "{source:?} is a SyntaxError for ast.parse(mode='eval')");
    }
    for source in ["x # comment", "(x\n + 1)", "x\n", "f'{x=}'", "await x", "(yield)", "[*a]"] {
        assert!(condition::parse(source).is_ok(), "{source:?} parses in CPython");
    }
    let error = condition::parse("x = 1").unwrap_err();
    assert_eq!(error.message, "invalid syntax");
    assert_eq!((error.line, error.column), (1, 3));
    assert_eq!(error.to_string(), "invalid syntax (line 1, column 3)");
}

#[test]
fn runaway_arithmetic_and_allocation_fail_fast_with_limit_exceeded() {
    for source in [
        "9**9**9",
        "10**10**10",
        "2**10001",
        "'a' * 10**12",
        "10**12 * 'a'",
        "[0] * 10**9",
        "list(range(10**12))",
        "[i for i in range(10**12)]",
        "1 << 1001",
    ] {
        let started = Instant::now();
        assert_eq!(error_kind(source), EvalErrorKind::LimitExceeded, "{source:?} must be refused");
        assert!(started.elapsed() < Duration::from_secs(1), "{source:?} must be refused before doing the work");
    }
    assert!(eval("len(range(10**12)) == 10**12"), "a range is not materialised just to measure it");
}

#[test]
fn limits_are_configurable() {
    let parsed = condition::parse("sum([i for i in range(1000)]) > 0").unwrap();
    let tight = Limits { max_steps: 100, ..Limits::default() };
    let error = parsed.evaluate_with_limits(&namespace(), &tight).unwrap_err();
    assert_eq!(error.kind, EvalErrorKind::LimitExceeded, "the step limit bounds loops");
    let shallow = Limits { max_depth: 3, ..Limits::default() };
    let deep = condition::parse("((1 + 1) + 1) + 1 > 0").unwrap();
    assert_eq!(deep.evaluate_with_limits(&namespace(), &shallow).unwrap_err().kind, EvalErrorKind::LimitExceeded);
    let small = Limits { max_collection_len: 10, ..Limits::default() };
    let wide = condition::parse("[0] * 11").unwrap();
    assert_eq!(wide.evaluate_with_limits(&namespace(), &small).unwrap_err().kind, EvalErrorKind::LimitExceeded);
}

#[test]
fn absurdly_deep_expressions_are_refused_without_overflowing_the_stack() {
    let deep = "-".repeat(100_000) + "x";
    assert!(condition::parse(&deep).is_err(), "deeper than the tree limit is a syntax error");
    for depth in [1_001, 19_999, 20_001] {
        let source = "not ".repeat(depth) + "x";
        assert!(condition::parse(&source).is_err(), "{depth} levels are refused as too complex");
    }
    let nested = "(".repeat(150) + "x" + &")".repeat(150);
    assert!(eval(&nested));
    assert!(condition::parse(&("(".repeat(250) + "x" + &")".repeat(250))).is_err(), "CPython allows 199 open brackets");
}

#[test]
fn later_namespace_entries_win() {
    let mut namespace = Namespace::new();
    namespace.insert("a", json!(1));
    namespace.extend([("a", json!(2))]);
    let map: serde_json::Map<String, serde_json::Value> = serde_json::from_value(json!({"b": 3})).unwrap();
    let from_map = Namespace::from(map);
    assert!(condition::parse("a == 2").unwrap().evaluate(&namespace).unwrap());
    assert!(condition::parse("b == 3").unwrap().evaluate(&from_map).unwrap());
    let mut shadowing = Namespace::new();
    shadowing.insert("len", json!(7));
    assert!(
        condition::parse("len == 7").unwrap().evaluate(&shadowing).unwrap(),
        "user symbols shadow builtins, as in asteval"
    );
}

#[test]
fn an_empty_sequence_repeats_to_empty_whatever_the_count() {
    // Found by the fuzzer: these looped once per repetition.
    assert_eq!(value("[] * 11**9"), serde_json::json!([]));
    assert_eq!(value("() * 10**30"), serde_json::json!([]));
    assert_eq!(value("'' * 10**30"), serde_json::json!(""));
}

#[test]
fn every_input_the_fuzzer_kept_evaluates_to_an_answer() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/regressions/condition");
    let mut replayed = 0;
    for entry in std::fs::read_dir(&dir).expect("the fuzz regressions folder exists") {
        let source = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        if let Ok(parsed) = condition::parse(&source) {
            let _ = parsed.evaluate_value(&namespace());
        }
        replayed += 1;
    }
    assert!(replayed > 0, "no regression inputs found in {}", dir.display());
}

proptest! {
    #[test]
    fn arbitrary_ascii_never_panics_the_parser(source in "[ -~\\n\\t]{0,40}") {
        if let Ok(parsed) = condition::parse(&source) {
            let _ = parsed.names_read();
            let _ = parsed.evaluate(&namespace());
        }
        let _ = condition::free_names(&source);
    }

    #[test]
    fn expression_shaped_text_never_panics(source in "[xls0-9 +*/%<>=!()\\[\\]{}:,.'\"-]{0,30}|(not |and |or |in |if |else |for |x |l |d |s |len\\(|\\)|\\[|\\]|, |1 |-|\\*\\*|//){0,12}") {
        if let Ok(parsed) = condition::parse(&source) {
            let _ = parsed.names_read();
            let _ = parsed.evaluate(&namespace());
            let _ = parsed.evaluate_value(&namespace());
        }
    }
}

#[test]
fn a_parsed_condition_can_be_shared_between_threads() {
    fn shareable<T: Send + Sync + Clone>() {}
    shareable::<condition::Condition>();
}
