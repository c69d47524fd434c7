//! COMPAS envelopes as the server's decoder reads them (docs/format.md §1.2), one rule each way;
//! `tests/compat` checks thousands more against the reference itself.

use orrery_blueprint::{check_sources, load, Source};
use serde_json::{json, Value};
use std::path::PathBuf;

fn envelope(dtype: &str, data: Value) -> Value {
    json!({"dtype": dtype, "guid": "6f1c2a9e-3b4d-4e5f-8a6b-7c8d9e0f1a2b", "data": data})
}

fn task(id: &str, ty: &str, after: Option<&str>) -> Value {
    let deps: Vec<Value> =
        after.into_iter().map(|a| envelope("antikythera.models/Dependency", json!({"id": a, "type": "FS"}))).collect();
    envelope("antikythera.models/Task", json!({"id": id, "type": ty, "depends_on": deps, "state": "PENDING"}))
}

/// start -> a -> end as the server stores it.
fn blueprint() -> Value {
    envelope(
        "antikythera.models/Blueprint",
        json!({"id": "bp", "name": "bp", "version": "1.0", "tasks": [
            task("start", "system.start", None), task("a", "system.sleep", Some("start")), task("end", "system.end", Some("a"))],
            "scopes": []}),
    )
}

fn server_accepts(bp: &Value) -> (bool, Vec<String>) {
    let text = bp.to_string();
    let loaded = load(&text).map_err(|e| e.diagnostics);
    let report = check_sources(&[Source::new(PathBuf::from("bp.json"), text, loaded)]).swap_remove(0);
    let refused = report.diagnostics.iter().filter(|d| d.server_rejects).map(|d| format!("{} {}", d.path, d.message));
    (report.server_accepts, refused.collect())
}

fn edited(edit: impl FnOnce(&mut Value)) -> Value {
    let mut bp = blueprint();
    edit(&mut bp);
    bp
}

#[test]
fn the_server_accepts_what_its_decoder_builds() {
    let cases: Vec<(&str, Value)> = vec![
        ("as stored", blueprint()),
        (
            "a dtype through the defining module",
            edited(|b| b["dtype"] = json!("antikythera.models.blueprints/Blueprint")),
        ),
        (
            "a task's dtype through a module that imports it",
            edited(|b| b["data"]["tasks"][1]["dtype"] = json!("antikythera_orchestrator.scopes/Task")),
        ),
        (
            "an unknown dtype with a known one to inherit",
            edited(|b| {
                b["dtype"] = json!("nonexistent_mod/Blueprint");
                b["inheritance"] = json!(["antikythera.models/Blueprint"]);
            }),
        ),
        (
            "a guid in braces, upper case, without dashes",
            edited(|b| b["guid"] = json!("{6F1C2A9E3B4D4E5F8A6B7C8D9E0F1A2B}")),
        ),
        (
            "no guid",
            edited(|b| {
                b.as_object_mut().unwrap().remove("guid");
            }),
        ),
        (
            "SKIP_REQUESTED, a TaskState the schema leaves out",
            edited(|b| b["data"]["tasks"][1]["data"]["state"] = json!("SKIP_REQUESTED")),
        ),
        (
            "a falsy scope_start opens a skip scope",
            edited(|b| {
                b["data"]["tasks"][1]["data"]["scope_start"] = json!(false);
                b["data"]["tasks"][1]["data"]["scope_end"] = json!("a");
            }),
        ),
        (
            "negative retries and an unknown key in scope_start",
            edited(|b| {
                b["data"]["tasks"][1]["data"]["scope_start"] = json!({"retry_policy": {"retries": -1}, "note": 1});
                b["data"]["tasks"][1]["data"]["scope_end"] = json!("a");
            }),
        ),
        (
            "a while policy without a condition",
            edited(|b| {
                b["data"]["tasks"][1]["data"]["scope_start"] = json!({"while_policy": {"max_iterations": "10"}});
                b["data"]["tasks"][1]["data"]["scope_end"] = json!("a");
            }),
        ),
    ];
    for (what, bp) in cases {
        let (accepts, refused) = server_accepts(&bp);
        assert!(accepts, "{what}: {refused:?}");
    }
}

#[test]
fn the_server_refuses_what_its_decoder_cannot_build() {
    let cases: Vec<(&str, Value, &str)> = vec![
        ("a guid that is not hexadecimal", edited(|b| b["guid"] = json!("zzzzzzzz-3b4d-4e5f-8a6b-7c8d9e0f1a2b")), "$"),
        (
            "a guid that is a number",
            edited(|b| b["data"]["tasks"][1]["data"]["depends_on"][0]["guid"] = json!(7)),
            "depends_on[0]",
        ),
        (
            "a class the module does not have",
            edited(|b| b["data"]["tasks"][1]["dtype"] = json!("antikythera.models/Nope")),
            "tasks[1]",
        ),
        (
            "a module the server does not have",
            edited(|b| b["data"]["tasks"][2]["dtype"] = json!("nonexistent_mod/Task")),
            "tasks[2]",
        ),
        ("a dtype without a class", edited(|b| b["data"]["tasks"][2]["dtype"] = json!("Task")), "tasks[2]"),
        ("inheritance that is not a list", edited(|b| b["inheritance"] = json!("antikythera.models/Blueprint")), "$"),
        (
            "an envelope without data",
            edited(|b| {
                b["data"]["tasks"][1]["data"]["depends_on"][0].as_object_mut().unwrap().remove("data");
            }),
            "depends_on[0]",
        ),
        (
            "a state that is not a TaskState",
            edited(|b| b["data"]["tasks"][1]["data"]["state"] = json!("pending")),
            "state",
        ),
        ("a null state", edited(|b| b["data"]["tasks"][1]["data"]["state"] = json!(null)), "state"),
        ("a blueprint id that is a number", edited(|b| b["data"]["id"] = json!(5)), "id"),
        (
            "a description holding an object that does not decode",
            edited(|b| b["data"]["description"] = json!({"dtype": "nonexistent_mod/X", "data": {}})),
            "description",
        ),
        (
            "a dependency's type holding one",
            edited(|b| {
                b["data"]["tasks"][1]["data"]["depends_on"][0]["data"]["type"] = json!({"dtype": "nope/X", "data": 0})
            }),
            "type",
        ),
        (
            "a Scope without its label",
            edited(|b| b["data"]["scopes"] = json!([envelope("antikythera.models/Scope", json!({"id": "a"}))])),
            "scopes[0]",
        ),
        (
            "a Point built from a dict",
            edited(|b| {
                b["data"]["tasks"][1]["data"]["params"] = json!([envelope(
                    "antikythera.models/TaskParam",
                    json!({"name": "p", "value": {"dtype": "compas.geometry/Point", "data": {"x": 1}}})
                )])
            }),
            "value",
        ),
        (
            "a scope_start that is a Scope object",
            edited(|b| {
                b["data"]["tasks"][1]["data"]["scope_start"] =
                    envelope("antikythera.models/Scope", json!({"id": "s", "label": "s"}));
                b["data"]["tasks"][1]["data"]["scope_end"] = json!("a");
            }),
            "scope_start",
        ),
        (
            "a while policy that is a string",
            edited(|b| {
                b["data"]["tasks"][1]["data"]["scope_start"] = json!({"while_policy": "x"});
                b["data"]["tasks"][1]["data"]["scope_end"] = json!("a");
            }),
            "while_policy",
        ),
    ];
    for (what, bp, place) in cases {
        let (accepts, refused) = server_accepts(&bp);
        assert!(!accepts, "{what}: accepted");
        assert!(
            refused.iter().any(|r| r.split(' ').next().unwrap().contains(place)),
            "{what}: refused at {refused:?}, not at {place}"
        );
    }
}

#[test]
fn a_value_that_does_not_decode_is_refused_on_its_task_and_the_blueprint_still_loads_in_either_encoding() {
    // A geometry input whose guid is not a UUID: the server refuses the upload either way;
    // Orrery keeps the value as data, loads the blueprint and names the task.
    let frame = json!({"dtype": "compas.geometry/Frame", "guid": "55982853-464f=49f0-a85a-f5a4a8b11de7",
        "data": {"point": [0.0, 0.0, 0.0], "xaxis": [1.0, 0.0, 0.0], "yaxis": [0.0, 1.0, 0.0]}});
    let input = envelope("antikythera.models/TaskInput", json!({"name": "frame", "value": frame}));
    let bp = edited(|bp| bp["data"]["tasks"][1]["data"]["inputs"] = json!([input]));
    let loaded = load(&bp.to_string()).expect("a value is data: the blueprint loads");
    assert_eq!(loaded.blueprint.tasks[1].inputs[0].io.value.as_ref(), Some(&frame));
    let (accepts, refused) = server_accepts(&bp);
    assert!(!accepts);
    assert!(refused.iter().any(|r| r.contains("inputs[0].value") && r.contains("not a UUID")), "{refused:?}");
    // Saved plain and as envelopes, it loads back the same, and is refused the same.
    for encoding in [orrery_blueprint::Encoding::Plain, orrery_blueprint::Encoding::Compas] {
        let text = orrery_blueprint::save::to_string(&loaded.blueprint, encoding);
        let again = load(&text).unwrap_or_else(|e| panic!("{encoding:?}: {:?}", e.diagnostics));
        assert_eq!(again.blueprint, loaded.blueprint);
        assert!(!server_accepts(&serde_json::from_str(&text).unwrap()).0, "{encoding:?}");
    }
    // A structural object that does not decode still refuses the load.
    let bad = edited(|bp| bp["data"]["tasks"][1]["guid"] = json!("not-a-uuid"));
    assert!(load(&bad.to_string()).is_err());
}

/// Every input that made the fuzzer's `load` target fail (fuzz/regressions/load/) holds its
/// invariant now: what loads saves and loads back the same in both encodings.
#[test]
fn every_blueprint_the_fuzzer_kept_loads_back_from_both_encodings() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/regressions/load");
    let mut replayed = 0;
    for entry in std::fs::read_dir(&dir).expect("the fuzz regressions folder exists") {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        if let Ok(loaded) = load(&text) {
            for encoding in [orrery_blueprint::Encoding::Plain, orrery_blueprint::Encoding::Compas] {
                let saved = orrery_blueprint::save::to_string(&loaded.blueprint, encoding);
                let again =
                    load(&saved).unwrap_or_else(|e| panic!("{}: {encoding:?}: {:?}", path.display(), e.diagnostics));
                assert_eq!(again.blueprint, loaded.blueprint, "{}: {encoding:?}", path.display());
            }
        }
        replayed += 1;
    }
    assert!(replayed > 0, "no regression inputs found in {}", dir.display());
}

#[test]
fn an_io_envelopes_own_name_is_its_name_and_an_empty_one_is_its_class_name() {
    // start's output, as an envelope: `data.name` and the envelope's own `name`; `a` reads `read`.
    let with_output = |data_name: Value, envelope_name: Option<&str>, read: &str| {
        let mut output =
            envelope("antikythera.models/TaskOutput", json!({"name": data_name, "value": null, "set_to": null}));
        if let Some(name) = envelope_name {
            output["name"] = json!(name);
        }
        edited(|bp| {
            bp["data"]["tasks"][0]["data"]["outputs"] = json!([output]);
            bp["data"]["tasks"][1]["data"]["condition"] = json!(read);
        })
    };
    let name_of = |bp: &Value| load(&bp.to_string()).unwrap().blueprint.tasks[0].outputs[0].io.name.clone();

    let overridden = with_output(json!("x"), Some("y"), "y is None");
    assert_eq!(name_of(&overridden), "y", "the decoder sets the envelope's name on the built object");
    assert!(server_accepts(&overridden).0, "{:?}", server_accepts(&overridden).1);
    let (accepts, refused) = server_accepts(&with_output(json!("x"), Some("y"), "x is None"));
    assert!(!accepts && refused.iter().any(|r| r.contains("'x'")), "x is no output's name: {refused:?}");

    for empty in [json!(""), Value::Null] {
        let bp = with_output(empty.clone(), None, "TaskOutput is None");
        assert_eq!(name_of(&bp), "TaskOutput", "{empty}: a model's name is `_name or` its class name");
        assert!(server_accepts(&bp).0, "{empty}: {:?}", server_accepts(&bp).1);
    }
    let named_by_envelope = with_output(Value::Null, Some("y"), "y is None");
    assert_eq!(name_of(&named_by_envelope), "y");
}

#[test]
fn a_falsy_tasks_is_no_tasks_as_the_model_takes_it_and_anything_else_not_a_list_is_refused() {
    for falsy in [json!({}), json!(""), json!(0), json!(false)] {
        let bp = edited(|bp| bp["data"]["tasks"] = falsy.clone());
        let loaded = load(&bp.to_string()).unwrap_or_else(|e| panic!("{falsy}: {:?}", e.diagnostics));
        assert!(loaded.blueprint.tasks.is_empty(), "{falsy}");
        assert!(loaded.notes.iter().any(|n| n.message.contains("reads it as no tasks")), "{falsy}: {:?}", loaded.notes);
        assert!(server_accepts(&bp).0, "{falsy}: {:?}", server_accepts(&bp).1);
    }
    for truthy in [json!({"a": 1}), json!("tasks"), json!(3), json!(true)] {
        let bp = edited(|bp| bp["data"]["tasks"] = truthy.clone());
        assert!(load(&bp.to_string()).is_err(), "{truthy}");
    }
}

#[test]
fn the_lists_the_server_iterates_must_hold_what_it_reads_of_each_item() {
    let refused = |edit: &dyn Fn(&mut Value)| {
        let bp = edited(|bp| edit(bp));
        !server_accepts(&bp).0
    };
    // Outputs are always read (`set_to or name`): only TaskOutputs, and a hashable key.
    assert!(refused(&|bp| bp["data"]["tasks"][0]["data"]["outputs"] = json!([{"name": "t"}])));
    assert!(refused(&|bp| bp["data"]["tasks"][0]["data"]["outputs"] = json!("abc")));
    assert!(refused(&|bp| bp["data"]["tasks"][0]["data"]["outputs"] = json!(5)));
    assert!(refused(&|bp| {
        bp["data"]["tasks"][0]["data"]["outputs"] =
            json!([envelope("antikythera.models/TaskOutput", json!({"name": "t", "set_to": ["x"]}))])
    }));
    assert!(!refused(&|bp| bp["data"]["tasks"][0]["data"]["outputs"] = json!({})), "falsy: no outputs");
    // Dependencies are read by validate(): a plain dict has no `.id`.
    assert!(refused(&|bp| bp["data"]["tasks"][1]["data"]["depends_on"] = json!([{"id": "start", "type": "FS"}])));
    // Params are read unless the condition is truthy and not a string; inputs only when the
    // condition is a string.
    let plain_params = json!([{"name": "duration", "value": 1}]);
    assert!(refused(&|bp| bp["data"]["tasks"][1]["data"]["params"] = plain_params.clone()));
    assert!(!refused(&|bp| {
        bp["data"]["tasks"][1]["data"]["params"] = plain_params.clone();
        bp["data"]["tasks"][1]["data"]["condition"] = json!(1);
    }));
    assert!(!refused(&|bp| bp["data"]["tasks"][1]["data"]["inputs"] = json!(5)), "inputs not read without a condition");
    assert!(refused(&|bp| {
        bp["data"]["tasks"][1]["data"]["inputs"] = json!(5);
        bp["data"]["tasks"][1]["data"]["condition"] = json!("True");
    }));
}

#[test]
fn a_boolean_condition_is_never_examined_false_is_none_and_true_is_true() {
    let with = |c: Value| edited(|bp| bp["data"]["tasks"][1]["data"]["condition"] = c);
    let condition_of = |bp: &Value| load(&bp.to_string()).unwrap().blueprint.tasks[1].condition.clone();
    assert_eq!(condition_of(&with(json!(false))), None);
    assert_eq!(condition_of(&with(json!(true))).as_deref(), Some("True"));
    for c in [json!(false), json!(true)] {
        assert!(server_accepts(&with(c.clone())).0, "{c}: {:?}", server_accepts(&with(c.clone())).1);
    }
}

#[test]
fn an_io_envelopes_own_name_does_not_stand_in_for_the_constructors_name_argument() {
    let input = json!({"dtype": "antikythera.models/TaskInput", "guid": "2682b219-ae4b-40a2-bdb3-4903b0a1885b",
        "name": "x", "data": {"value": null}});
    let bp = edited(|bp| bp["data"]["tasks"][1]["data"]["inputs"] = json!([input]));
    assert!(!server_accepts(&bp).0, "TaskInput(**data) without name fails");
}

/// Every place of a plain blueprint a COMPAS object that does not decode may take: each value
/// replaced by it, and each object given one more key holding it.
fn with_bad_object_everywhere(plain: &Value) -> Vec<(String, Value)> {
    fn walk(at: &mut Value, path: String, edit: &mut dyn FnMut(&mut Value, &str)) {
        edit(at, &path);
        match at {
            Value::Object(map) => {
                for (key, value) in map.iter_mut() {
                    walk(value, format!("{path}.{key}"), edit);
                }
            }
            Value::Array(items) => {
                for (i, item) in items.iter_mut().enumerate() {
                    walk(item, format!("{path}[{i}]"), edit);
                }
            }
            _ => {}
        }
    }
    let bad = json!({"dtype": "compas.geometry/NoSuchClass"});
    let mut places = Vec::new();
    walk(&mut plain.clone(), "$".into(), &mut |_, path| places.push(path.to_string()));
    let mut variants = Vec::new();
    for place in places {
        for extra_key in [false, true] {
            let mut variant = plain.clone();
            walk(&mut variant, "$".into(), &mut |value, path| {
                if path != place {
                    return;
                }
                match value {
                    Value::Object(map) if extra_key => {
                        map.insert("zz_extra".into(), bad.clone());
                    }
                    _ if !extra_key => *value = bad.clone(),
                    _ => {}
                }
            });
            if variant != *plain {
                variants.push((format!("{place} {}", if extra_key { "+key" } else { "=" }), variant));
            }
        }
    }
    variants
}

/// The class of what the load fuzzer found twice (a bad COMPAS object in an IO value, then under
/// an IO item's unknown key): whatever a plain blueprint holds that loads, its envelope form
/// loads too, to the same blueprint.
#[test]
fn a_plain_blueprint_with_an_undecodable_object_anywhere_that_loads_loads_back_as_envelopes() {
    let plain = json!({"id": "bp", "name": "bp", "version": "1.0", "description": "d", "tasks": [
        {"id": "start", "type": "system.start", "outputs": [{"name": "o", "value": 1, "type_hint": "int"}]},
        {"id": "a", "type": "shell.run", "description": "x", "condition": "o == 1",
         "scope_start": {"name": "s", "retry_policy": {"retries": 1}},
         "inputs": [{"name": "o", "value": 2, "get_from": "start"}],
         "outputs": [{"name": "p", "value": [1, {"k": 2}], "set_to": "q"}],
         "params": [{"name": "command", "value": "true"}],
         "depends_on": [{"id": "start", "type": "FS"}]},
        {"id": "b", "type": "system.sleep", "scope_end": "s", "depends_on": [{"id": "a"}]},
        {"id": "end", "type": "system.end", "depends_on": [{"id": "b"}]}]});
    let mut loaded_variants = 0;
    let mut failures = Vec::new();
    for (place, variant) in with_bad_object_everywhere(&plain) {
        let Ok(loaded) = load(&variant.to_string()) else { continue };
        loaded_variants += 1;
        let saved = orrery_blueprint::save::to_string(&loaded.blueprint, orrery_blueprint::Encoding::Compas);
        match load(&saved) {
            Ok(again) if again.blueprint == loaded.blueprint => {
                // The server's decoder refuses the object wherever it is, in either encoding.
                for (encoding, text) in
                    [("plain", variant.clone()), ("envelopes", serde_json::from_str(&saved).unwrap())]
                {
                    if server_accepts(&text).0 {
                        failures.push(format!("{place}: taken for accepted in {encoding}"));
                    }
                }
            }
            Ok(_) => failures.push(format!("{place}: changed through the envelopes")),
            Err(e) => {
                failures.push(format!("{place}: {:?}", e.diagnostics.iter().map(|d| &d.message).collect::<Vec<_>>()))
            }
        }
    }
    assert!(loaded_variants >= 20, "only {loaded_variants} variants loaded");
    assert!(failures.is_empty(), "{} of {loaded_variants}:\n{}", failures.len(), failures.join("\n"));
}
