//! Validation and loading, rule by rule: each test builds the smallest blueprint that shows a
//! rule and checks the code, the task, the path and the server verdict of what comes back.

use orrery_blueprint::{load, validate, Code, Diagnostic, Library, Severity, ValidBlueprint};
use serde_json::{json, Value};

/// A valid linear blueprint start -> a -> b -> end, changed by `edit`.
fn blueprint(edit: impl FnOnce(&mut Value)) -> String {
    let mut v = json!({
        "id": "bp", "name": "Blueprint", "version": "1.0",
        "tasks": [
            {"id": "start", "type": "system.start"},
            {"id": "a", "type": "system.sleep", "outputs": [{"name": "count", "value": 1}], "depends_on": [{"id": "start"}]},
            {"id": "b", "type": "system.sleep", "depends_on": [{"id": "a"}]},
            {"id": "end", "type": "system.end", "depends_on": [{"id": "b"}]}
        ]
    });
    edit(&mut v);
    serde_json::to_string_pretty(&v).unwrap()
}

fn diagnostics(text: &str) -> Vec<Diagnostic> {
    match load(text) {
        Ok(loaded) => {
            let mut d = loaded.notes;
            d.extend(validate(&loaded.blueprint, &Library::new()));
            d
        }
        Err(e) => e.diagnostics,
    }
}

fn only(text: &str, code: Code) -> Diagnostic {
    let all = diagnostics(text);
    let found: Vec<_> = all.iter().filter(|d| d.code == code).cloned().collect();
    assert_eq!(found.len(), 1, "expected one {code} among {all:#?}");
    found[0].clone()
}

#[test]
fn a_plain_valid_blueprint_has_nothing_to_report() {
    assert_eq!(diagnostics(&blueprint(|_| {})), vec![]);
}

#[test]
fn broken_json_names_line_column_and_the_path_where_it_broke() {
    let text = "{\n  \"id\": \"x\",\n  \"tasks\": [\n    {\"id\": \"start\", \"type\": }\n  ]\n}";
    let d = only(text, Code::JsonSyntax);
    assert_eq!((d.line, d.column), (Some(4), Some(29)), "the closing brace where a value should be");
    assert_eq!(d.path, "$.tasks[0].type");
    assert!(d.server_rejects);
}

#[test]
fn schema_violations_are_all_reported_with_their_paths_and_lines() {
    let text = blueprint(|v| {
        v["tasks"][1]["description"] = json!(5);
        v["tasks"][2]["depends_on"][0]["type"] = json!("XX");
        v["tasks"][2]["scope_start"] = json!({"retry_policy": {"retries": -1}, "colour": "red"});
    });
    let all = diagnostics(&text);
    let codes: Vec<_> = all.iter().map(|d| (d.code, d.path.as_str())).collect();
    assert!(codes.contains(&(Code::SchemaType, "$.tasks[1].description")), "{codes:?}");
    assert!(codes.contains(&(Code::SchemaEnum, "$.tasks[2].depends_on[0].type")), "{codes:?}");
    assert!(codes.contains(&(Code::SchemaRange, "$.tasks[2].scope_start.retry_policy.retries")), "{codes:?}");
    assert!(codes.contains(&(Code::SchemaUnknownKey, "$.tasks[2].scope_start.colour")), "{codes:?}");
    assert!(all.iter().all(|d| d.server_rejects && d.line.is_some()), "{all:#?}");
    assert_eq!(all.iter().find(|d| d.code == Code::SchemaEnum).unwrap().task_id.as_deref(), Some("b"));
}

#[test]
fn versions_are_read_as_pep_440_with_major_one() {
    assert!(diagnostics(&blueprint(|v| v["version"] = json!("v1.2.3"))).is_empty());
    assert!(only(&blueprint(|v| v["version"] = json!("2.0")), Code::VersionUnsupported).server_rejects);
    assert!(only(&blueprint(|v| v["version"] = json!("abc")), Code::VersionInvalid).server_rejects);
}

#[test]
fn start_and_end_must_each_appear_exactly_once() {
    let d = only(&blueprint(|v| v["tasks"][1]["type"] = json!("system.start")), Code::StartCount);
    assert!(d.message.contains("found 2") && d.server_rejects, "{d:?}");
    let d = only(&blueprint(|v| v["tasks"][3]["type"] = json!("system.sleep")), Code::EndCount);
    assert!(d.message.contains("found 0"), "{d:?}");
}

#[test]
fn an_orphan_and_a_dangling_dependency_are_refused_by_the_server() {
    let d = only(&blueprint(|v| v["tasks"][2]["depends_on"] = json!([])), Code::OrphanTask);
    assert_eq!((d.task_id.as_deref(), d.server_rejects), (Some("b"), true));
    let d = only(&blueprint(|v| v["tasks"][2]["depends_on"][0]["id"] = json!("ghost")), Code::DanglingDependency);
    assert_eq!(d.path, "$.tasks[2].depends_on[0].id");
}

#[test]
fn scope_ends_must_close_an_existing_open_scope_once() {
    let d = only(&blueprint(|v| v["tasks"][2]["scope_end"] = json!("ghost")), Code::ScopeEndMissingTask);
    assert!(d.server_rejects);
    only(&blueprint(|v| v["tasks"][2]["scope_end"] = json!("a")), Code::ScopeEndNotAScope);
    only(&blueprint(|v| v["tasks"][1]["scope_start"] = json!({})), Code::ScopeUnclosed);
    let twice = blueprint(|v| {
        v["tasks"][1]["scope_start"] = json!({});
        v["tasks"][2]["scope_end"] = json!("a");
        v["tasks"][3]["scope_end"] = json!("a");
    });
    only(&twice, Code::ScopeEndDuplicate);
}

#[test]
fn interlaced_scopes_are_named_and_nested_ones_are_fine() {
    let chain = |scopes: &[(usize, usize)]| {
        let mut tasks = vec![json!({"id": "start", "type": "system.start"})];
        for i in 1..=6 {
            tasks.push(json!({"id": format!("t{i}"), "type": "system.sleep", "depends_on": [{"id": if i == 1 { "start".to_string() } else { format!("t{}", i - 1) }}]}));
        }
        tasks.push(json!({"id": "end", "type": "system.end", "depends_on": [{"id": "t6"}]}));
        for &(open, close) in scopes {
            tasks[open]["scope_start"] = json!({});
            tasks[close]["scope_end"] = json!(format!("t{open}"));
        }
        serde_json::to_string(&json!({"id": "s", "name": "s", "version": "1.0", "tasks": tasks})).unwrap()
    };
    assert!(diagnostics(&chain(&[(1, 6), (2, 3), (4, 5)])).is_empty(), "nested and disjoint scopes are valid");
    let d = only(&chain(&[(1, 4), (3, 6)]), Code::ScopesInterlaced);
    assert!(d.message.contains("'t1'") && d.message.contains("'t3'") && d.server_rejects, "{d:?}");
}

#[test]
fn conditions_may_read_outputs_and_their_own_params_but_while_conditions_only_outputs() {
    let ok = blueprint(|v| {
        v["tasks"][2]["condition"] = json!("count > limit and [x for x in range(3)]");
        v["tasks"][2]["params"] = json!([{"name": "limit", "value": 2}]);
    });
    assert!(diagnostics(&ok).is_empty(), "{:#?}", diagnostics(&ok));

    let d = only(&blueprint(|v| v["tasks"][2]["condition"] = json!("missing > 1")), Code::ConditionUnknownName);
    assert_eq!((d.path.as_str(), d.server_rejects), ("$.tasks[2].condition", true));

    let while_reads_param = blueprint(|v| {
        v["tasks"][1]["scope_start"] = json!({"while_policy": {"condition": "limit > count", "max_iterations": 3}});
        v["tasks"][1]["params"] = json!([{"name": "limit", "value": 2}]);
        v["tasks"][2]["scope_end"] = json!("a");
    });
    let d = only(&while_reads_param, Code::ConditionUnknownName);
    assert!(d.message.contains("session data only"), "{}", d.message);

    let d = only(&blueprint(|v| v["tasks"][2]["condition"] = json!("count >")), Code::ConditionSyntax);
    assert!(d.server_rejects);
}

#[test]
fn an_editor_is_offered_the_names_a_task_may_read_and_which_are_produced_upstream() {
    use orrery_blueprint::dataflow::{task_names, ProducedName};
    let text = blueprint(|v| {
        // b reads count (from a, upstream) and total (from end, downstream of it); both a and
        // end write total.
        v["tasks"][1]["outputs"] = json!([{"name": "count"}, {"name": "n", "set_to": "total"}]);
        v["tasks"][2]["params"] = json!([{"name": "limit", "value": 2}]);
        v["tasks"][2]["inputs"] = json!([{"name": "c", "get_from": "count"}, {"name": "limit"}]);
        v["tasks"][3]["outputs"] = json!([{"name": "total"}, {"name": "last"}]);
    });
    let bp = load(&text).unwrap().blueprint;
    let names = task_names(&bp, "b").expect("b is a task");
    let produced = |key: &str, producers: &[&str], upstream: bool| ProducedName {
        key: key.into(),
        producers: producers.iter().map(|p| p.to_string()).collect(),
        upstream,
    };
    assert_eq!(
        names.produced,
        [produced("count", &["a"], true), produced("last", &["end"], false), produced("total", &["a", "end"], true)]
    );
    assert_eq!(names.own, ["c", "limit"], "params and inputs, once each");
    let start = task_names(&bp, "start").unwrap();
    assert!(start.produced.iter().all(|p| !p.upstream), "nothing runs before start: {start:?}");
    assert_eq!(task_names(&bp, "nope"), None);
}

#[test]
fn the_old_condition_param_is_checked_like_the_field() {
    let text = blueprint(|v| v["tasks"][2]["params"] = json!([{"name": "condition", "value": "nowhere"}]));
    let d = only(&text, Code::ConditionUnknownName);
    assert_eq!(d.path, "$.tasks[2].params[0].value");
}

#[test]
fn keys_the_reference_parser_chokes_on_are_refused_but_kept() {
    let text = blueprint(|v| {
        v["tasks"][1]["outputs"][0]["unit"] = json!("mm");
        v["tasks"][2]["depends_on"][0]["note"] = json!("why");
        v["tasks"][2]["x-orrery"] = json!({"colour": "blue"});
        v["x-orrery"] = json!({"layout": "beside"});
    });
    let all = diagnostics(&text);
    assert!(all
        .iter()
        .any(|d| d.code == Code::IoUnknownKey && d.path == "$.tasks[1].outputs[0].unit" && d.server_rejects));
    assert!(all.iter().any(|d| d.code == Code::DependencyUnknownKey && d.server_rejects));
    assert_eq!(all.len(), 2, "extra keys on tasks and the blueprint are fine: {all:#?}");
    let saved = orrery_blueprint::save::to_string(&load(&text).unwrap().blueprint, orrery_blueprint::Encoding::Plain);
    for kept in ["\"unit\": \"mm\"", "\"note\": \"why\"", "\"colour\": \"blue\"", "\"layout\": \"beside\""] {
        assert!(saved.contains(kept), "{kept} survives a save");
    }
}

#[test]
fn what_the_reference_misses_is_reported_without_claiming_the_server_refuses() {
    let dup = blueprint(|v| v["tasks"][2]["id"] = json!("a"));
    let d = only(&dup, Code::DuplicateTaskId);
    assert!(!d.server_rejects && d.severity == Severity::Error);

    let cycle = blueprint(|v| v["tasks"][1]["depends_on"] = json!([{"id": "start"}, {"id": "b"}]));
    let d = only(&cycle, Code::Cycle);
    assert!(d.message.contains("'a'") && d.message.contains("'b'") && !d.server_rejects, "{d:?}");

    let d = only(
        &blueprint(|v| v["tasks"][2]["inputs"] = json!([{"name": "n", "get_from": "nobody"}])),
        Code::GetFromUnproduced,
    );
    assert_eq!(d.severity, Severity::Warning);
    let downstream = blueprint(|v| {
        v["tasks"][1]["inputs"] = json!([{"name": "n", "get_from": "later"}]);
        v["tasks"][2]["outputs"] = json!([{"name": "later"}]);
    });
    assert!(only(&downstream, Code::GetFromUnproduced).message.contains("'b'"));
    let upstream = blueprint(|v| v["tasks"][2]["inputs"] = json!([{"name": "n", "get_from": "count"}]));
    assert!(diagnostics(&upstream).is_empty());
}

#[test]
fn composite_params_are_checked_and_targets_looked_up() {
    let composite = |param: Value| {
        blueprint(move |v| {
            v["tasks"][2]["type"] = json!("system.composite");
            v["tasks"][2]["params"] = json!([{"name": "blueprint", "value": param}]);
        })
    };
    only(&composite(json!("inner")), Code::CompositeParam);
    only(&composite(json!({"dynamic": {"blueprint_id": "inner", "sequencer": "random"}})), Code::CompositeParam);
    let d = only(&composite(json!({"static": "inner"})), Code::CompositeTargetMissing);
    assert_eq!(d.severity, Severity::Warning);

    let inner = load(&blueprint(|v| v["id"] = json!("inner"))).unwrap().blueprint;
    let outer = load(&composite(json!({"dynamic": {"blueprint_id": "inner", "sequencer": "basic_sequencer"}})))
        .unwrap()
        .blueprint;
    let library: Library = [&inner, &outer].into_iter().collect();
    assert!(validate(&outer, &library).is_empty());

    let selfish = load(&composite(json!({"static": "bp"}))).unwrap().blueprint;
    assert!(validate(&selfish, &Library::new()).iter().any(|d| d.code == Code::CompositeRecursion));
}

#[test]
fn portability_and_policy_ranges_are_warnings() {
    let sf = blueprint(|v| v["tasks"][2]["depends_on"][0]["type"] = json!("SF"));
    let d = only(&sf, Code::NotPortable);
    assert_eq!((d.severity, d.server_rejects), (Severity::Warning, false));
    let big = blueprint(|v| {
        v["tasks"][1]["scope_start"] = json!({"retry_policy": {"retries": 100000}});
        v["tasks"][2]["scope_end"] = json!("a");
    });
    assert_eq!(only(&big, Code::PolicyRange).path, "$.tasks[1].scope_start.retry_policy.retries");
    let unbounded = blueprint(|v| {
        v["tasks"][1]["scope_start"] = json!({"while_policy": {"condition": "count > 0"}});
        v["tasks"][2]["scope_end"] = json!("a");
    });
    assert!(only(&unbounded, Code::PolicyRange).message.contains("max_iterations"));
    let mode = blueprint(|v| v["tasks"][2]["params"] = json!([{"name": "execution_mode", "value": "SOMETIMES"}]));
    only(&mode, Code::ExecutionModeInvalid);
}

#[test]
fn an_empty_blueprint_is_refused_in_plain_form() {
    let text = r#"{"id": "e", "name": "e", "version": "1.0"}"#;
    let d = only(text, Code::EmptyBlueprint);
    assert!(d.server_rejects);
}

#[test]
fn python_only_json_is_loaded_for_checking_but_flagged() {
    let text = blueprint(|v| v["tasks"][1]["params"] = json!([{"name": "x", "value": "PLACEHOLDER"}]))
        .replace("\"PLACEHOLDER\"", "NaN");
    let d = only(&text, Code::JsonNonStandard);
    assert!(!d.server_rejects && d.severity == Severity::Error, "Python reads NaN; Orrery cannot keep it: {d:?}");
}

#[test]
fn objects_with_a_dtype_must_decode_as_compas_objects() {
    let ok = blueprint(|v| {
        v["tasks"][1]["params"] = json!([{"name": "p", "value": {"dtype": "compas.geometry/Point", "data": [0, 0, 0]}}])
    });
    assert!(diagnostics(&ok).is_empty());
    let bad = blueprint(|v| v["tasks"][1]["params"] = json!([{"name": "p", "value": {"dtype": "os/system"}}]));
    assert!(only(&bad, Code::CompasObject).server_rejects);
}

#[test]
fn only_a_blueprint_without_errors_becomes_a_valid_blueprint() {
    let ok = load(&blueprint(|v| v["tasks"][2]["depends_on"][0]["type"] = json!("SF"))).unwrap().blueprint;
    let valid = ValidBlueprint::new(ok, &Library::new()).expect("warnings do not stop a run");
    assert_eq!(valid.warnings().len(), 1, "the SF portability warning travels with it");
    let orphan = load(&blueprint(|v| v["tasks"][2]["depends_on"] = json!([]))).unwrap().blueprint;
    let refused = ValidBlueprint::new(orphan, &Library::new()).expect_err("an orphan cannot run");
    assert!(refused.iter().any(|d| d.code == Code::OrphanTask));
}

#[test]
fn a_param_that_breaks_its_task_types_schema_is_an_error_at_the_params_path() {
    let text = blueprint(|v| {
        v["tasks"][1]["params"] = json!([{"name": "duration", "value": -2}]);
        v["tasks"][2]["type"] = json!("shell.run");
        v["tasks"][2]["params"] = json!([{"name": "argv", "value": ["ls", 3]}, {"name": "env", "value": {"HOME": 1}}]);
    });
    let all: Vec<_> = diagnostics(&text).into_iter().filter(|d| d.code == Code::ParamSchema).collect();
    let found: Vec<_> = all.iter().map(|d| (d.task_id.as_deref(), d.path.as_str())).collect();
    assert_eq!(
        found,
        [
            (Some("a"), "$.tasks[1].params[0].value"),
            (Some("b"), "$.tasks[2].params[0].value[1]"),
            (Some("b"), "$.tasks[2].params[1].value.HOME"),
        ],
        "one diagnostic per bad param, at the place inside its value: {all:#?}"
    );
    assert!(
        all.iter().all(|d| d.severity == Severity::Error && !d.server_rejects),
        "the reference passes params through unread: {all:#?}"
    );
    assert!(all[0].message.contains("'duration'") && all[0].message.contains("at least 0"), "{}", all[0].message);
    assert!(all.iter().all(|d| d.line.is_none()), "only the file check places diagnostics");
}

#[test]
fn alternatives_given_together_are_an_error_on_the_params_object_and_one_left_out_is_none() {
    let both = blueprint(|v| {
        v["tasks"][1]["type"] = json!("shell.run");
        v["tasks"][1]["params"] = json!([{"name": "command", "value": "true"}, {"name": "argv", "value": ["true"]}]);
    });
    let d = only(&both, Code::ParamSchema);
    assert_eq!((d.task_id.as_deref(), d.path.as_str()), (Some("a"), "$.tasks[1].params"));
    assert!(
        d.message.contains("only one") && d.message.contains("'command'") && d.message.contains("'argv'"),
        "{}",
        d.message
    );
    // A task just added has no command yet: the form marks it required, the agent says so at run time.
    let neither = blueprint(|v| v["tasks"][1]["type"] = json!("shell.run"));
    assert_eq!(diagnostics(&neither), vec![], "a param left out is not judged");
}

#[test]
fn params_the_schema_allows_and_types_it_does_not_know_are_not_judged() {
    let fine = blueprint(|v| {
        v["tasks"][1]["type"] = json!("shell.run");
        v["tasks"][1]["params"] = json!([{"name": "command", "value": "true"}, {"name": "colour", "value": 3}]);
        v["tasks"][2]["type"] = json!("python.run");
        v["tasks"][2]["params"] = json!([{"name": "argv", "value": 3}]);
    });
    assert_eq!(diagnostics(&fine), vec![], "open schemas take other params; an unknown type has no schema");
}

#[test]
fn execution_mode_and_composite_params_keep_their_own_codes() {
    let mode = blueprint(|v| v["tasks"][2]["params"] = json!([{"name": "execution_mode", "value": 3}]));
    assert!(diagnostics(&mode).iter().all(|d| d.code != Code::ParamSchema));
    only(&mode, Code::ExecutionModeInvalid);
    let composite = blueprint(|v| v["tasks"][2]["type"] = json!("system.composite"));
    assert!(diagnostics(&composite).iter().all(|d| d.code != Code::ParamSchema));
    only(&composite, Code::CompositeParam);
}

#[test]
fn a_bad_param_keeps_a_blueprint_from_being_runnable() {
    let text = blueprint(|v| v["tasks"][1]["params"] = json!([{"name": "duration", "value": "soon"}]));
    let loaded = load(&text).unwrap();
    let refused = ValidBlueprint::new(loaded.blueprint, &Library::new()).expect_err("the sleep would fail at once");
    assert!(refused.iter().any(|d| d.code == Code::ParamSchema), "{refused:#?}");
}

#[test]
fn every_dependency_type_but_fs_says_how_a_server_runs_it() {
    for (ty, says) in [
        ("SS", "'b' starts only when some task finishes after 'a' has started"),
        ("FF", "'b' starts when its other dependencies allow"),
        ("SF", "an antikythera server ignores SF"),
    ] {
        let text = blueprint(|v| {
            v["tasks"][2]["depends_on"][0]["type"] = json!(ty);
            v["tasks"][2]["depends_on"].as_array_mut().unwrap().push(json!({"id": "start"}));
        });
        let d = only(&text, Code::NotPortable);
        assert_eq!((d.path.as_str(), d.task_id.as_deref()), ("$.tasks[2].depends_on[0].type", Some("b")));
        assert!(d.message.contains(says), "{ty}: {}", d.message);
        assert!(!d.server_rejects);
    }
    // An FF alone: the task starts before the start task has run.
    let ff = blueprint(|v| v["tasks"][2]["depends_on"][0]["type"] = json!("FF"));
    assert!(only(&ff, Code::NotPortable).message.contains("at once, before the start task"));
    // Two dependencies on one task: the server keeps the last.
    let twice =
        blueprint(|v| v["tasks"][2]["depends_on"] = json!([{"id": "a", "type": "SS"}, {"id": "a", "type": "FS"}]));
    let d = only(&twice, Code::NotPortable);
    assert!(d.message.contains("keeps only the last (FS)"), "{}", d.message);
    assert!(diagnostics(&blueprint(|_| {})).iter().all(|d| d.code != Code::NotPortable));
}

#[test]
fn a_task_nothing_depends_on_besides_the_end_task_is_a_warning() {
    let side = blueprint(|v| {
        v["tasks"]
            .as_array_mut()
            .unwrap()
            .push(json!({"id": "side", "type": "system.sleep", "depends_on": [{"id": "a"}]}));
    });
    let d = only(&side, Code::EndNotOnlySink);
    assert_eq!((d.path.as_str(), d.task_id.as_deref(), d.severity), ("$.tasks[4]", Some("side"), Severity::Warning));
    assert!(
        d.message.contains("completes the session when the first of them finishes") && d.message.contains("ADR-0005")
    );
    assert!(!d.server_rejects);
    assert!(diagnostics(&blueprint(|_| {})).iter().all(|d| d.code != Code::EndNotOnlySink));
    // Depended on by itself, or sharing the id of a task something depends on: not a sink.
    for extra in [
        json!({"id": "side", "type": "system.sleep", "depends_on": [{"id": "a"}, {"id": "side"}]}),
        json!({"id": "a", "type": "system.sleep"}),
    ] {
        let odd = blueprint(|v| v["tasks"].as_array_mut().unwrap().push(extra.clone()));
        assert!(diagnostics(&odd).iter().all(|d| d.code != Code::EndNotOnlySink), "{extra}");
    }
}
