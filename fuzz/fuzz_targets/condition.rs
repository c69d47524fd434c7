//! Any text either fails to parse as a condition or parses, reads the names `free_names` says,
//! and evaluates, against a small namespace under the default limits (with a 2 s time budget),
//! to a value or an error: never a panic, and within the time libFuzzer's `-timeout` allows.

#![no_main]

use libfuzzer_sys::fuzz_target;
use orrery_blueprint::condition::{free_names, parse, Limits, Namespace};
use serde_json::json;
use std::sync::OnceLock;

fn namespace() -> &'static Namespace {
    static NAMESPACE: OnceLock<Namespace> = OnceLock::new();
    NAMESPACE.get_or_init(|| {
        let mut namespace = Namespace::new();
        namespace.extend([
            ("x", json!(5)),
            ("y", json!(-3)),
            ("big", json!(12345678901234567890u64)),
            ("ratio", json!(0.75)),
            ("n", json!(null)),
            ("s", json!("Hello World")),
            ("status", json!("SUCCEEDED")),
            ("l", json!([3, 1, 2])),
            ("words", json!(["a", "bb", "ccc"])),
            ("d", json!({"k": 1, "name": "orrery", "nested": {"list": [1, 2, {"deep": true}]}})),
            ("flag", json!(true)),
        ]);
        namespace
    })
}

fn limits() -> Limits {
    Limits { max_time: std::time::Duration::from_secs(2), ..Limits::default() }
}

fuzz_target!(|source: &str| {
    let names = free_names(source);
    let Ok(condition) = parse(source) else {
        assert!(names.is_err(), "free_names accepts {source:?}, which parse refuses");
        return;
    };
    let Ok(names) = names else { panic!("parse accepts {source:?}, which free_names refuses") };
    // free_names reads the usual conditions without the full parser: the same names.
    assert_eq!(names, condition.names_read(), "the names of {source:?}");
    // The default limits, but a time budget well inside libFuzzer's `-timeout=5`: an input that
    // reaches it is refused (LimitExceeded), which is an answer, not a hang.
    let _ = condition.evaluate_with_limits(namespace(), &limits());
});
