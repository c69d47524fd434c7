//! Property: any blueprint Orrery can hold survives a save and a load in either encoding, and
//! saving is a fixed point (the same bytes every time).

use orrery_blueprint::load::load_carefully;
use orrery_blueprint::model::*;
use orrery_blueprint::{load, save, Encoding};
use proptest::prelude::*;
use serde_json::{Number, Value};

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z_][a-z0-9_]{0,8}",
        any::<String>().prop_map(|s| s.chars().take(12).collect()),
        Just("Scope – “quoted” \\ \u{1F600}".to_string()),
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (-1e12f64..1e12).prop_map(|f| Number::from_f64(f).map_or(Value::Null, Value::Number)),
        text().prop_map(Value::String),
        Just(Value::Null),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec(("[a-z]{1,6}", inner), 0..4)
                .prop_map(|kv| Value::Object(kv.into_iter().filter(|(k, _)| k != "dtype").collect())),
        ]
    })
}

fn extra(forbidden: &'static [&'static str]) -> impl Strategy<Value = Extra> {
    prop::collection::vec(("x-[a-z]{1,5}|[a-z]{1,7}", json_value()), 0..3)
        .prop_map(move |kv| kv.into_iter().filter(|(k, _)| !forbidden.contains(&k.as_str())).collect())
}

const IO_KEYS: &[&str] = &["name", "value", "type_hint", "description", "get_from", "set_to", "type", "dtype", "data"];
const TASK_KEYS: &[&str] = &[
    "id",
    "type",
    "description",
    "condition",
    "scope_start",
    "scope_end",
    "inputs",
    "outputs",
    "params",
    "depends_on",
    "state",
    "dtype",
    "data",
];
const BLUEPRINT_KEYS: &[&str] = &["id", "name", "version", "description", "tasks", "scopes", "dtype", "data", "guid"];

fn io() -> impl Strategy<Value = Io> {
    (
        text(),
        prop::option::of(json_value().prop_filter("null is absent", |v| !v.is_null())),
        prop::option::of(text()),
        prop::option::of(text()),
        extra(IO_KEYS),
    )
        .prop_map(|(name, value, type_hint, description, extra)| {
            Io::new(name.into(), value, type_hint.map(Into::into), description, extra)
        })
}

fn link() -> impl Strategy<Value = Option<CompactString>> {
    prop::option::of("[a-z]{1,6}".prop_map(CompactString::from))
}

fn scope_start() -> impl Strategy<Value = ScopeStart> {
    let retry = (0u64..10_000, prop::option::of((prop::option::of(0u64..100_000), extra(&["constant_ms"])))).prop_map(
        |(retries, backoff)| RetryPolicy {
            retries,
            backoff: backoff.map(|(constant_ms, extra)| Backoff { constant_ms, extra }),
        },
    );
    let while_policy = (text(), prop::option::of(1u64..1000))
        .prop_map(|(condition, max_iterations)| WhilePolicy { condition, max_iterations });
    (prop::option::of(text()), prop::option::of(retry), prop::option::of(while_policy))
        .prop_map(|(name, retry_policy, while_policy)| ScopeStart { name, retry_policy, while_policy })
}

fn task() -> impl Strategy<Value = Task> {
    let state = prop::option::of(prop::sample::select(vec![
        TaskState::Unspecified,
        TaskState::Ready,
        TaskState::Running,
        TaskState::Succeeded,
        TaskState::Failed,
        TaskState::Skipped,
    ]));
    let deps = prop::collection::vec(
        ("[a-z]{1,4}", prop::sample::select(DependencyType::ALL.to_vec()), extra(&["id", "type", "dtype", "data"]))
            .prop_map(|(id, dep_type, extra)| Dependency { id: id.into(), dep_type, extra }),
        0..3,
    );
    (
        ("[a-z]{1,4}", "[a-z]{1,6}\\.[a-z.]{1,8}", prop::option::of(text()), prop::option::of(text())),
        (prop::option::of(scope_start()), prop::option::of("[a-z]{1,4}")),
        (
            prop::collection::vec((io(), link()).prop_map(|(io, get_from)| TaskInput { io, get_from }), 0..3),
            prop::collection::vec((io(), link()).prop_map(|(io, set_to)| TaskOutput { io, set_to }), 0..3),
            prop::collection::vec(io().prop_map(|io| TaskParam { io }), 0..3),
        ),
        deps,
        state,
        extra(TASK_KEYS),
    )
        .prop_map(
            |(
                (id, ty, description, condition),
                (scope_start, scope_end),
                (inputs, outputs, params),
                depends_on,
                state,
                extra,
            )| Task {
                id: id.into(),
                task_type: TaskType(ty.into()),
                description,
                condition,
                scope_start: scope_start.map(Box::new),
                scope_end: scope_end.map(Into::into),
                inputs,
                outputs,
                params,
                depends_on,
                state,
                extra,
            },
        )
}

fn blueprint() -> impl Strategy<Value = Blueprint> {
    (
        text(),
        text(),
        "1(\\.[0-9]{1,2}){0,2}",
        prop::option::of(text()),
        prop::collection::vec(task(), 0..6),
        extra(BLUEPRINT_KEYS),
    )
        .prop_map(|(id, name, version, description, tasks, extra)| Blueprint {
            id,
            name,
            version,
            description,
            tasks,
            extra,
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn generated_blueprints_round_trip_in_both_encodings(bp in blueprint()) {
        for encoding in [Encoding::Plain, Encoding::Compas] {
            let saved = save::to_string(&bp, encoding);
            let loaded = load(&saved).map_err(|e| TestCaseError::fail(format!("{encoding:?} output does not load: {:?}\n{saved}", e.diagnostics)))?;
            prop_assert_eq!(&loaded.blueprint, &bp, "{:?} changed the blueprint", encoding);
            prop_assert_eq!(loaded.encoding, encoding);
            prop_assert_eq!(save::to_string(&loaded.blueprint, encoding), saved, "saving again changes bytes");
        }
    }

    #[test]
    fn the_fast_and_the_careful_loader_agree(bp in blueprint(), pretty in any::<bool>()) {
        // Canonical text, and the same data as compact JSON with keys in another order.
        let canonical = save::to_string(&bp, Encoding::Plain);
        let compact = if pretty { canonical.clone() } else {
            let mut v: serde_json::Value = serde_json::from_str(&canonical).unwrap();
            if let Some(tasks) = v.get_mut("tasks").and_then(|t| t.as_array_mut()) {
                for t in tasks {
                    let m = t.as_object_mut().unwrap();
                    let entries: Vec<_> = std::mem::take(m).into_iter().rev().collect();
                    m.extend(entries);
                }
            }
            serde_json::to_string(&v).unwrap()
        };
        for text in [canonical, compact] {
            let fast = load(&text).map(|l| (l.blueprint, l.encoding, l.notes)).map_err(|e| e.diagnostics);
            let careful = load_carefully(&text).map(|l| (l.blueprint, l.encoding, l.notes)).map_err(|e| e.diagnostics);
            prop_assert_eq!(fast, careful, "the two loaders disagree on\n{}", text);
        }
    }

    #[test]
    fn loading_arbitrary_text_never_panics(text in any::<String>()) {
        let _ = load(&text);
    }
}

/// Found by the property above in a fresh clone: two tasks share an id and only the second
/// opens a scope; saving as an envelope took the first for the scope's start and panicked.
#[test]
fn a_scope_opened_by_the_second_of_two_tasks_with_one_id_saves_in_both_encodings() {
    let text = serde_json::json!({"id": "b", "name": "b", "version": "1.0", "tasks": [
        {"id": "start", "type": "system.start"},
        {"id": "o", "type": "system.sleep", "depends_on": [{"id": "start"}]},
        {"id": "o", "type": "system.sleep", "depends_on": [{"id": "start"}], "scope_start": {"retry_policy": {"retries": 1}}},
        {"id": "end", "type": "system.end", "depends_on": [{"id": "o"}], "scope_end": "o"}]})
    .to_string();
    let bp = load(&text).unwrap().blueprint;
    for encoding in [Encoding::Plain, Encoding::Compas] {
        let saved = save::to_string(&bp, encoding);
        assert_eq!(load(&saved).unwrap().blueprint, bp, "{encoding:?} keeps the blueprint");
    }
}

#[test]
fn the_encoding_of_a_text_is_the_one_loading_reads_it_in_whether_or_not_it_loads() {
    let plain = r#"{"id": "bp", "name": "bp", "version": "1.0", "tasks": [{"id": "start", "type": "system.start"}]}"#;
    let envelope = save::to_string(&load(plain).unwrap().blueprint, Encoding::Compas);
    assert_eq!(orrery_blueprint::load::encoding_of(plain), Encoding::Plain);
    assert_eq!(orrery_blueprint::load::encoding_of(&envelope), Encoding::Compas);
    assert_eq!(load(&envelope).unwrap().encoding, Encoding::Compas, "loading agrees");
    // A `dtype` alone does not make an envelope: loading reads such a file as plain JSON.
    let dtype_only = r#"{"dtype": "antikythera.models/Blueprint", "tasks": []}"#;
    assert_eq!(orrery_blueprint::load::encoding_of(dtype_only), Encoding::Plain);
    // An envelope that does not load, or holds Python-only JSON, is still one.
    assert_eq!(orrery_blueprint::load::encoding_of(r#"{"dtype": "x", "data": {}}"#), Encoding::Compas);
    assert_eq!(orrery_blueprint::load::encoding_of(r#"{"dtype": "x", "data": {"n": NaN}}"#), Encoding::Compas);
    assert_eq!(orrery_blueprint::load::encoding_of("not JSON"), Encoding::Plain);
}
