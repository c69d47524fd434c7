//! The budgets of one evaluation ([`Limits::max_memory_bytes`], `max_steps`, `max_time`): the
//! bombs that pass every per-value limit are refused with a message naming the budget, and
//! what real conditions do stays far below them.

use std::time::{Duration, Instant};

use super::{eval, parse, EvalError, EvalErrorKind, Limits, Namespace};

fn namespace() -> Namespace {
    let mut namespace = Namespace::new();
    namespace.insert("outputs", serde_json::json!({"count": 3, "files": ["a.txt", "b.txt"], "ok": true}));
    namespace.insert("n", serde_json::json!(5));
    namespace
}

fn refused(source: &str) -> EvalError {
    let started = Instant::now();
    let error = parse(source).expect("parses").evaluate(&namespace()).expect_err(source);
    println!("{source}: {error} ({:?})", started.elapsed());
    assert_eq!(error.kind, EvalErrorKind::LimitExceeded, "{source}: {error}");
    error
}

/// Memory charged by evaluating `source` with the default limits.
fn charged(source: &str) -> u64 {
    let parsed = parse(source).expect("parses");
    let limits = Limits::default();
    let namespace = namespace();
    let mut interpreter = eval::Interpreter::new(&namespace, &limits);
    interpreter.eval(&parsed.body).unwrap_or_else(|error| panic!("{source}: {error}"));
    interpreter.budget.memory_charged()
}

#[test]
fn the_issue_bomb_is_refused_by_the_memory_budget() {
    let error = refused("len(['a'*262000 + str(i) for i in range(1000000)]) > 0");
    assert!(error.message.contains("memory budget of 64 MiB"), "{error}");
}

#[test]
fn bombs_made_of_values_under_every_per_value_limit_are_refused() {
    let memory = [
        // Strings: built by repetition, concatenation, methods, f-strings, joins.
        "len(['a'*262000 + str(i) for i in range(1000000)]) > 0",
        "len([str(i % 10) * 250000 for i in range(1000000)]) > 0",
        "len([('x' * 200000).upper() for i in range(100000)]) > 0",
        "len([f'{i}' + 'y' * 250000 for i in range(100000)]) > 0",
        "len([' '.join(['ab'] * 100000) for i in range(100000)]) > 0",
        // Containers: lists, tuples, sets, dicts, comprehension results, copies.
        "len([[0] * 500000 for i in range(1000)]) > 0",
        "len([tuple(range(1000000)) for i in range(1000)]) > 0",
        "len([list(range(1000000)) for i in range(1000)]) > 0",
        "len([set(range(200000)) for i in range(1000)]) > 0",
        "len([{j: 'v' * 1000 for j in range(100000)} for i in range(100)]) > 0",
        "len({i: 'v' * 200000 for i in range(100000)}) > 0",
        "len([list(zip(range(1000000), range(1000000))) for i in range(100)]) > 0",
        "len([('a' * 100000).split('a') for i in range(1000)]) > 0",
        "len([list('abc' * 80000) for i in range(1000)]) > 0",
    ];
    // Over the memory budget; in a slow (debug, loaded) build the clock may stop one first.
    for source in memory {
        let error = refused(source);
        assert!(error.message.contains("memory budget") || error.message.contains("time budget"), "{source}: {error}");
    }
    let work = [
        "len([sorted(range(1000000)) for i in range(1000)]) > 0",
        // Slow in a debug build (the clock may stop it first), over the memory budget in release.
        "len([('a' * 250000).replace('a', 'bb') for i in range(10000)]) > 0",
        "len([1 for i in range(1000000) for j in range(1000000)]) > 0",
        "sum([i for i in range(1000000) for j in range(100)]) > 0",
        "len([i for i in range(1000000) if i in list(range(10))]) > 0",
        // Comparisons of big containers, repeated: each costs its length in steps.
        "len([1 for l in [list(range(1000000))] for i in range(100000) if l == l]) > 0",
        "len([1 for s in [10000000 * 'a'] for i in range(1000000) if 'b' in s]) > 0",
    ];
    for source in work {
        let error = refused(source);
        assert!(error.message.contains("budget"), "{source}: {error}");
    }
}

#[test]
fn the_time_budget_stops_an_evaluation_at_its_deadline() {
    // A billion steps that build nothing: only the clock can stop it (a list that grew would
    // meet the collection limit first on a fast machine).
    let parsed = parse("len([i for i in range(1000000) for j in range(1000) if i < 0]) > 0").unwrap();
    let limits = Limits {
        max_steps: u64::MAX,
        max_memory_bytes: u64::MAX,
        max_time: Duration::from_millis(200),
        ..Limits::default()
    };
    let started = Instant::now();
    let error = parsed.evaluate_with_limits(&namespace(), &limits).unwrap_err();
    println!("stopped after {:?}: {error}", started.elapsed());
    assert_eq!(error.kind, EvalErrorKind::LimitExceeded);
    assert!(error.message.contains("time budget of 200 ms"), "{error}");
    assert!(started.elapsed() < Duration::from_secs(60), "hang guard");
}

#[test]
fn the_work_budget_names_its_size() {
    let parsed = parse("sum([i for i in range(1000)]) > 0").unwrap();
    let limits = Limits { max_steps: 100, ..Limits::default() };
    let error = parsed.evaluate_with_limits(&namespace(), &limits).unwrap_err();
    assert_eq!(error.to_string(), "LimitExceeded: the condition exceeds its work budget of 100 steps");
}

#[test]
fn real_conditions_stay_far_below_the_budgets() {
    for source in [
        "outputs['ok'] and outputs['count'] > 2",
        "len(outputs['files']) == 2 and 'a.txt' in outputs['files']",
        "all([f.endswith('.txt') for f in outputs['files']])",
        "[f.upper() for f in outputs['files']] == ['A.TXT', 'B.TXT']",
        "sum([i * i for i in range(1000)]) > n",
        "f'{n}-{outputs[\"count\"]}' == '5-3'",
        "sorted({'b': 1, 'a': 2}.items())[0][0] == 'a'",
    ] {
        let Ok(parsed) = parse(source) else { continue };
        if parsed.evaluate(&namespace()).is_err() {
            continue;
        }
        let bytes = charged(source);
        println!("{source}: {bytes} bytes");
        assert!(bytes < 1 << 20, "{source} charged {bytes} bytes");
    }
}

#[test]
fn shared_values_are_counted_once() {
    // A list read a thousand times is not a thousand lists.
    let once = charged("len([outputs['files'] for i in range(1000)]) > 0");
    assert!(once < 200_000, "{once}");
    // Copies are: each `list(...)` builds a new list of the elements.
    let copies = charged("len([list(range(100)) for i in range(1000)]) > 0");
    assert!(copies > 1000 * 100 * 8, "{copies}");
}

#[test]
fn a_budget_is_per_evaluation() {
    // Each evaluation starts with its whole budget.
    let parsed = parse("len([0] * 1000000) > 0").unwrap();
    for _ in 0..5 {
        assert!(parsed.evaluate(&namespace()).unwrap());
    }
}
