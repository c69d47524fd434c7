//! What the reference's parser chokes on: keys of io items and dependencies that it passes on as
//! keyword arguments, and objects with a `dtype` key that do not decode as COMPAS objects. The
//! server refuses the upload for either.

use crate::diagnostic::{task_path, Code, Diagnostic};
use crate::model::*;
use serde_json::Value;

/// Keys the reference's parser passes as keyword arguments and dies on.
pub(super) fn parser_rules(bp: &Blueprint, out: &mut Vec<Diagnostic>) {
    for (i, t) in bp.tasks.iter().enumerate() {
        for (list, j, io) in t.io_items() {
            for key in io.extra().keys().filter(|k| *k != "type") {
                out.push(
                    Diagnostic::error(
                        Code::IoUnknownKey,
                        format!("{}.{list}[{j}].{key}", task_path(i)),
                        format!(
                            "task '{}': {list} item '{}' has key '{key}', which the reference parser refuses (allowed: {})",
                            t.id,
                            io.name,
                            allowed_io_keys(list)
                        ),
                    )
                    .task(&t.id)
                    .rejected(),
                );
            }
        }
        for (j, d) in t.depends_on.iter().enumerate() {
            for key in d.extra.keys() {
                out.push(
                    Diagnostic::error(
                        Code::DependencyUnknownKey,
                        format!("{}.depends_on[{j}].{key}", task_path(i)),
                        format!(
                            "task '{}': the dependency on '{}' has key '{key}', which the reference parser refuses (allowed: id, type)",
                            t.id, d.id
                        ),
                    )
                    .task(&t.id)
                    .rejected(),
                );
            }
        }
    }
}

/// The reference decodes every object with a `dtype` key as a COMPAS object, wherever it is
/// (even in a param value); one that does not decode makes the upload fail. What decodes is
/// [`crate::compas`]'s to say.
pub(super) fn compas_objects(bp: &Blueprint, out: &mut Vec<Diagnostic>) {
    let mut found = Vec::new();
    // An object that itself has a `dtype` key among the keys Orrery does not know.
    let own = |extra: &Extra,
               path: &dyn Fn() -> String,
               task: Option<&str>,
               found: &mut Vec<(String, String, Option<String>)>| {
        if let Some(dtype) = extra.get("dtype") {
            let why = format!(
                "its own \"dtype\": {dtype} makes the whole object a COMPAS object in place of what it describes"
            );
            found.push((path(), why, task.map(str::to_string)));
        }
    };
    own(&bp.extra, &|| "$".into(), None, &mut found);
    for (i, t) in bp.tasks.iter().enumerate() {
        own(&t.extra, &|| task_path(i).to_string(), Some(&t.id), &mut found);
        for (j, d) in t.depends_on.iter().enumerate() {
            own(&d.extra, &|| format!("{}.depends_on[{j}]", task_path(i)), Some(&t.id), &mut found);
        }
    }
    fn has_dtype(v: &Value) -> bool {
        match v {
            Value::Object(m) => m.contains_key("dtype") || m.values().any(has_dtype),
            Value::Array(items) => items.iter().any(has_dtype),
            _ => false,
        }
    }
    let scan = |v: &Value,
                base: &dyn Fn() -> String,
                task: Option<&str>,
                found: &mut Vec<(String, String, Option<String>)>| {
        if !has_dtype(v) {
            return;
        }
        if let Some((below, why)) = crate::compas::first_refusal(v) {
            found.push((format!("{}{below}", base()), why, task.map(str::to_string)));
        }
    };
    for (k, v) in &bp.extra {
        scan(v, &|| format!("$.{k}"), None, &mut found);
    }
    for (i, t) in bp.tasks.iter().enumerate() {
        for (k, v) in &t.extra {
            scan(v, &|| format!("{}.{k}", task_path(i)), Some(&t.id), &mut found);
        }
        for (list, j, io) in t.io_items() {
            if let Some(v) = &io.value {
                scan(v, &|| format!("{}.{list}[{j}].value", task_path(i)), Some(&t.id), &mut found);
            }
        }
    }
    for (path, dtype, task) in found {
        let mut d = Diagnostic::error(
            Code::CompasObject,
            path,
            format!("an object with a \"dtype\" is decoded by the reference as a COMPAS object, and this one does not decode: {dtype}"),
        )
        .rejected();
        d.task_id = task;
        out.push(d);
    }
}

fn allowed_io_keys(list: &str) -> &'static str {
    match list {
        "inputs" => "name, value, type_hint, description, get_from",
        "outputs" => "name, value, type_hint, description, set_to",
        _ => "name, value, type_hint, description",
    }
}
