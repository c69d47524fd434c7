//! Orrery's condition language against the reference: CPython's `ast` for syntax and names,
//! asteval for evaluation. Cases come from `tests/compat/expressions.py`, verdicts from
//! `tests/compat/asteval_oracle.py`, both run with the reference venv's python.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use orrery_blueprint::condition::{self, EvalErrorKind, Namespace};

/// Differences kept on purpose: (expression, why).
const ALLOWED_DIVERGENCES: &[(&str, &str)] = &[
    ("10**12 * 'a'", "asteval only bounds `str * int`; Orrery also bounds `int * str` (LimitExceeded) instead of trying to allocate a terabyte"),
    ("(lambda: 1)()", "lambda is not supported in Orrery conditions"),
    ("(lambda a: a + 1)(2)", "lambda is not supported in Orrery conditions"),
    ("(lambda \u{fb01}: \u{fb01})(1)", "lambda is not supported in Orrery conditions"),
    ("sorted(l, key=lambda v: -v)", "lambda is not supported in Orrery conditions"),
    ("sqrt(4)", "asteval's math/numpy names are not provided; names_read reports them, so the dataflow check refuses such a condition anyway"),
    ("pi > 3", "asteval's math/numpy names are not provided; names_read reports them, so the dataflow check refuses such a condition anyway"),
    ("inf > 1", "asteval's math/numpy names are not provided; names_read reports them, so the dataflow check refuses such a condition anyway"),
    ("mean(l)", "asteval's math/numpy names are not provided; names_read reports them, so the dataflow check refuses such a condition anyway"),
    ("print(1)", "print is refused; a condition has no output"),
    ("f'{f:.2f}'", "format specifications in f-strings are not supported"),
    ("b'abc'", "bytes are not supported"),
    ("1j", "complex numbers are not supported"),
    ("...", "Ellipsis is not supported"),
    ("x.real", "number attributes (real, imag, numerator, ...) are not supported"),
    ("l.append(4)", "methods that mutate a value are not supported"),
    ("{**d}", "dict unpacking is not supported (asteval builds {None: d} from it)"),
    ("[i async for i in l]", "async comprehensions are not supported (asteval runs them as plain ones)"),
    ("-all([])", "asteval's all() returns a numpy bool, which refuses unary minus; Orrery's returns a Python bool"),
    ("-(True | all(0))", "asteval's all() returns a numpy bool, which refuses unary minus; Orrery's returns a Python bool"),
];

/// Orrery bounds evaluation depth (`Limits::max_depth`, default 200) where asteval recurses until
/// CPython's parser limit; only absurd expressions are that deep.
fn deeper_than_the_evaluation_limit(error: &condition::EvalError) -> bool {
    error.kind == EvalErrorKind::LimitExceeded && error.message.contains("nesting")
}

/// asteval's `abs`, `all`, `any`, `round` and `sum` are numpy's: they return numpy scalars
/// (`-np.True_` is a TypeError, `np.int64(1) // 0 == 0`), accept scalars and refuse ragged or
/// string arrays. Orrery gives these builtins Python's semantics, so results that differ only
/// through them are expected.
fn uses_numpy_backed_builtin(expr: &str) -> bool {
    ["abs(", "all(", "any(", "round(", "sum("].iter().any(|call| expr.contains(call))
}

fn shown(expr: &str) -> String {
    if expr.chars().count() <= 100 {
        format!("{expr:?}")
    } else {
        format!("{:?}... ({} chars)", expr.chars().take(60).collect::<String>(), expr.chars().count())
    }
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("workspace root exists")
}

fn reference_python() -> PathBuf {
    if let Ok(path) = std::env::var("ORRERY_REFERENCE_PYTHON") {
        return PathBuf::from(path);
    }
    let candidates =
        [workspace_root().join("target/reference-venv/bin/python"), PathBuf::from("/tmp/refvenv/bin/python")];
    candidates.into_iter().find(|path| path.exists()).unwrap_or_else(|| {
        panic!(
            "no reference python found: run tests/compat/setup_reference.sh (or set ORRERY_REFERENCE_PYTHON \
             to a python with antikythera-sdk and asteval installed)"
        )
    })
}

fn run_python(python: &Path, script: &Path, args: &[String], input: Option<&str>) -> String {
    let mut child = Command::new(python)
        .arg(script)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|error| panic!("cannot run {}: {error}", python.display()));
    let mut stdin = child.stdin.take().expect("stdin is piped");
    let input = input.unwrap_or("").to_owned();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let output = child.wait_with_output().expect("python finishes");
    writer.join().expect("writer thread").expect("python reads its input");
    assert!(output.status.success(), "{} failed: {}", script.display(), output.status);
    String::from_utf8(output.stdout).expect("python prints UTF-8")
}

#[derive(Debug)]
struct Verdict {
    ok: bool,
    value: Option<bool>,
    error: Option<String>,
    names: Option<Vec<String>>,
    syntax_error: bool,
}

fn verdict(line: &str) -> Verdict {
    let json: serde_json::Value = serde_json::from_str(line).expect("oracle prints JSON");
    Verdict {
        ok: json["ok"].as_bool().expect("ok is a bool"),
        value: json["value"].as_bool(),
        error: json["error"].as_str().map(str::to_owned),
        names: json["names"]
            .as_array()
            .map(|names| names.iter().map(|n| n.as_str().unwrap_or("").to_owned()).collect()),
        syntax_error: json["syntax_error"].as_bool().expect("syntax_error is a bool"),
    }
}

#[test]
fn conditions_agree_with_cpython_and_asteval() {
    let python = reference_python();
    let compat = workspace_root().join("tests/compat");
    // More or other random cases: ORRERY_DIFFERENTIAL_ARGS="--seed 7 --random 5000".
    let generator_args: Vec<String> = std::env::var("ORRERY_DIFFERENTIAL_ARGS")
        .map(|args| args.split_whitespace().map(str::to_owned).collect())
        .unwrap_or_default();
    let cases_text = run_python(&python, &compat.join("expressions.py"), &generator_args, None);
    let verdicts_text = run_python(&python, &compat.join("asteval_oracle.py"), &[], Some(&cases_text));
    let cases: Vec<serde_json::Value> =
        cases_text.lines().map(|line| serde_json::from_str(line).expect("generator prints JSON")).collect();
    let verdicts: Vec<Verdict> = verdicts_text.lines().map(verdict).collect();
    assert_eq!(cases.len(), verdicts.len(), "the oracle answers every case");

    let mut mismatches: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    let mut allowed_used = Vec::new();
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    let mut error_kinds: BTreeMap<String, usize> = BTreeMap::new();
    for (case, reference) in cases.iter().zip(&verdicts) {
        let expr = case["expr"].as_str().expect("expr is a string");
        let namespace = match &case["namespace"] {
            serde_json::Value::Object(map) => Namespace::from(map.clone()),
            _ => Namespace::new(),
        };
        *counts.entry("cases").or_default() += 1;
        let mut allowed = ALLOWED_DIVERGENCES.iter().find(|(allowed, _)| *allowed == expr).map(|(_, reason)| *reason);
        let shown_expr = shown(expr);
        let expr_for_messages = shown_expr.as_str();
        let mut problems = Vec::new();

        let parsed = condition::parse(expr);
        match (&parsed, reference.syntax_error) {
            (Err(_), true) => {
                *counts.entry("syntax errors agreed").or_default() += 1;
            }
            (Ok(_), true) => {
                problems.push(("syntax verdict", format!("{expr_for_messages}: CPython refuses it, Orrery parses it")))
            }
            (Err(error), false) if error.message == "expression too complex" => {
                allowed = Some("nested deeper than 1000 levels: Orrery refuses it as too complex; CPython's limit depends on the caller's stack");
                problems.push(("syntax verdict", format!("{expr_for_messages}: {error}")));
            }
            (Err(error), false) => problems.push((
                "syntax verdict",
                format!("{expr_for_messages}: CPython parses it, Orrery refuses it ({error})"),
            )),
            (Ok(parsed), false) => {
                let names: Vec<String> = parsed.names_read().into_iter().collect();
                let reference_names = reference.names.clone().unwrap_or_default();
                if names == reference_names {
                    *counts.entry("names agreed").or_default() += 1;
                } else {
                    problems.push((
                        "names",
                        format!("{expr_for_messages}: reference {reference_names:?}, Orrery {names:?}"),
                    ));
                }
                match (parsed.evaluate(&namespace), reference.ok) {
                    (Ok(value), true) if Some(value) == reference.value => {
                        *counts.entry("values agreed").or_default() += 1;
                    }
                    (Ok(value), true) => problems.push((
                        "different bool",
                        format!("{expr_for_messages}: asteval {:?}, Orrery {value}", reference.value),
                    )),
                    (Err(error), true) if deeper_than_the_evaluation_limit(&error) => {
                        allowed = Some("nested deeper than Limits::max_depth");
                        problems.push(("Orrery errs where asteval succeeds", format!("{expr_for_messages}: {error}")));
                    }
                    (Err(error), true) => problems.push((
                        "Orrery errs where asteval succeeds",
                        format!("{expr_for_messages}: asteval {:?}, Orrery {error}", reference.value),
                    )),
                    (Ok(value), false) => problems.push((
                        "Orrery succeeds where asteval errs",
                        format!("{expr_for_messages}: asteval {:?}, Orrery {value}", reference.error),
                    )),
                    (Err(error), false) => {
                        *counts.entry("errors agreed").or_default() += 1;
                        let kind = match error.kind {
                            EvalErrorKind::NameError { .. } => "NameError".to_owned(),
                            other => other.to_string(),
                        };
                        *error_kinds
                            .entry(format!("{} -> {kind}", reference.error.as_deref().unwrap_or("?")))
                            .or_default() += 1;
                    }
                }
            }
        }
        if problems.is_empty() {
            continue;
        }
        let only_evaluation = problems.iter().all(|(category, _)| !matches!(*category, "syntax verdict" | "names"));
        if allowed.is_none() && only_evaluation && uses_numpy_backed_builtin(expr) {
            allowed = Some("goes through a numpy-backed builtin (abs, all, any, round, sum)");
        }
        match allowed {
            Some(reason) => allowed_used.push(format!("{expr_for_messages}: {reason}")),
            None => {
                for (category, detail) in problems {
                    mismatches.entry(category).or_default().push(detail);
                }
            }
        }
    }

    println!("differential summary: {counts:?}");
    println!("error kinds (asteval -> Orrery): {error_kinds:#?}");
    println!("allowed divergences hit ({}):", allowed_used.len());
    for line in &allowed_used {
        println!("  {line}");
    }
    let total: usize = mismatches.values().map(Vec::len).sum();
    for (category, details) in &mismatches {
        println!("{category} ({}):", details.len());
        for detail in details {
            println!("  {detail}");
        }
    }
    assert_eq!(total, 0, "{total} cases disagree with the reference; see the list above");
}
