//! What a server's session snapshot (`GET /sessions/{id}`) holds, read for a mirror: the
//! blueprints the session runs, as an Orrery session stores them, and each task's state and
//! outputs.
//!
//! The server keeps its session's blueprints already prepared for the run: every inner
//! blueprint under its instance's id (`{blueprint}_{task}`, or `{blueprint}_{T_i}_{element[..8]}`
//! for a dynamic composite's element) and renamed to it, and every dynamic composite `T`
//! replaced by its elements' chain `T_0 ... T_{n-1}` (each naming its own instance, its element
//! in `dynamic.element`, and losing `T`'s scope marks). A mirror stores what a local run of the
//! same blueprint stores instead: each inner blueprint once, under its own id, every expansion
//! folded back into its composite, and the elements as the session parameter `elements` (keyed
//! `{instance}.{T}`, docs/format.md §4), so that Orrery's own flattening gives the server's
//! instances and nodes, and the run views draw the mirror as they draw a local run. Task states
//! and output values are left out of the versions (they are what the session did, not what the
//! blueprint declares), and so are the `model` and `nesting` params the server gives every task
//! it dispatches in a session with a `model_id`.

use std::collections::{BTreeMap, HashMap};

use orrery_blueprint::validate::composite_target;
use orrery_blueprint::{save, Blueprint, CompositeTarget, Encoding, Task, TaskState};
use orrery_engine::data::element_of;
use serde_json::{Map, Value};

use crate::{Failure, FailureCode};

/// The blueprints a mirror stores for a server's session.
pub(super) struct Versions {
    /// (blueprint id, text), the root first.
    pub versions: Vec<(String, String)>,
    /// The elements each dynamic composite ran over, by `{instance}.{task}` (empty without any).
    pub elements: Map<String, Value>,
}

/// A task of the snapshot: its node (`{instance}.{task}`), state and output values by name.
pub(super) struct TaskSeen {
    pub node: String,
    pub state: TaskState,
    pub outputs: Map<String, Value>,
}

/// The snapshot's blueprints, as a mirror stores them (see the module notes).
pub(super) fn versions(snapshot: &Value) -> Result<Versions, Failure> {
    let data = &snapshot["data"];
    let root = blueprint(&data["blueprint"])?;
    let root_id = root.id.clone();
    let mut instances = vec![(root_id.clone(), root)];
    for (id, inner) in data["inner_blueprints"].as_object().into_iter().flatten() {
        instances.push((id.clone(), blueprint(inner)?));
    }
    // The blueprint each inner instance is of, read from the composites that call it.
    let mut origin: HashMap<String, String> = HashMap::new();
    for (_, b) in &instances {
        for task in b.tasks.iter().filter(|t| t.task_type.is_composite()) {
            if let Some((instance, blueprint_id)) = called(task) {
                origin.insert(instance, blueprint_id);
            }
        }
    }
    let injected = data["params"].get("model_id").is_some();
    let mut elements = Map::new();
    let mut versions: Vec<(String, String)> = Vec::new();
    for (instance, mut b) in instances {
        fold(&instance, &mut b, &mut elements);
        if instance != root_id {
            b.id = origin.get(&instance).cloned().unwrap_or(instance);
        }
        if versions.iter().any(|(id, _)| *id == b.id) {
            continue;
        }
        for task in &mut b.tasks {
            task.state = None;
            for output in &mut task.outputs {
                output.io.value = None;
            }
            if injected {
                task.params.retain(|p| !matches!(p.io.name.as_str(), "model" | "nesting"));
            }
        }
        versions.push((b.id.clone(), save::to_string(&b, Encoding::Plain)));
    }
    Ok(Versions { versions, elements })
}

/// Every task of the snapshot with a state the mirror knows, the root's first.
pub(super) fn tasks(snapshot: &Value) -> Vec<TaskSeen> {
    let data = &snapshot["data"];
    let mut seen = Vec::new();
    let mut add = |instance: &str, blueprint: &Value| {
        for task in blueprint["data"]["tasks"].as_array().into_iter().flatten() {
            let task = &task["data"];
            let (Some(id), Some(state)) = (task["id"].as_str(), task["state"].as_str().and_then(TaskState::parse))
            else {
                continue;
            };
            let outputs = task["outputs"].as_array().into_iter().flatten().filter_map(|o| {
                let o = o.get("data").unwrap_or(o);
                Some((o["name"].as_str()?.to_string(), o.get("value").cloned().unwrap_or(Value::Null)))
            });
            seen.push(TaskSeen { node: format!("{instance}.{id}"), state, outputs: outputs.collect() });
        }
    };
    if let Some(root) = data["blueprint"]["data"]["id"].as_str() {
        add(root, &data["blueprint"]);
    }
    for (instance, blueprint) in data["inner_blueprints"].as_object().into_iter().flatten() {
        add(instance, blueprint);
    }
    seen
}

/// When the server's session started, in ms since the epoch: its start task's
/// `process_start_time` when the blueprint declares that output (the run's own clock), else
/// when the server made the session (`started_at`, ISO 8601 UTC).
pub(super) fn started_ms(root_data: &Map<String, Value>, started_at: Option<&str>) -> Option<i64> {
    seconds_ms(root_data.get("process_start_time")).or_else(|| started_at.and_then(utc_ms))
}

/// When it ended: its end task's `process_end_time`, when the blueprint declares it.
pub(super) fn finished_ms(root_data: &Map<String, Value>) -> Option<i64> {
    seconds_ms(root_data.get("process_end_time"))
}

fn seconds_ms(value: Option<&Value>) -> Option<i64> {
    value.and_then(Value::as_f64).filter(|s| s.is_finite() && *s > 0.0).map(|s| (s * 1000.0).round() as i64)
}

/// `YYYY-MM-DDTHH:MM:SS[.fraction][Z|+00:00]`, as the server writes UTC times, in ms.
fn utc_ms(text: &str) -> Option<i64> {
    let text = text.trim_end_matches('Z').trim_end_matches("+00:00");
    let (date, time) = text.split_once(['T', ' '])?;
    let mut d = date.splitn(3, '-').map(|p| p.parse::<i64>().ok());
    let (y, m, day) = (d.next()??, d.next()??, d.next()??);
    let (hms, fraction) = time.split_once('.').unwrap_or((time, ""));
    let mut t = hms.splitn(3, ':').map(|p| p.parse::<i64>().ok());
    let (h, min, s) = (t.next()??, t.next()??, t.next()??);
    if !(1..=12).contains(&m) || !(1..=31).contains(&day) || h > 23 || min > 59 || s > 60 {
        return None;
    }
    let ms: i64 = format!("{fraction:0<3}").get(..3)?.parse().ok()?;
    // Days from 1970-01-01 to the date (the proleptic Gregorian calendar).
    let (y, m) = if m <= 2 { (y - 1, m + 9) } else { (y, m - 3) };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * m + 2) / 5 + day - 1;
    let days = era * 146_097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719_468;
    Some(((days * 24 + h) * 60 + min) * 60_000 + s * 1000 + ms)
}

fn blueprint(value: &Value) -> Result<Blueprint, Failure> {
    orrery_blueprint::load::from_value(value.clone())
        .map(|loaded| loaded.blueprint)
        .map_err(|e| Failure::new(FailureCode::Remote, format!("the server's blueprint cannot be read: {e}")))
}

/// The inner instance a composite of the snapshot calls, and the blueprint it is of.
fn called(task: &Task) -> Option<(String, String)> {
    match composite_target(task.param_value("blueprint")).ok()? {
        CompositeTarget::Static { blueprint_id } => Some((format!("{blueprint_id}_{}", task.id), blueprint_id)),
        // An element names its instance in place of the blueprint: `{blueprint}_{T_i}_{short}`.
        CompositeTarget::Dynamic { blueprint_id: instance, .. } => {
            let short: String = element_of(task)?.get("element_id")?.as_str()?.chars().take(8).collect();
            let of = instance.strip_suffix(&format!("_{}_{short}", task.id))?.to_string();
            Some((instance, of))
        }
    }
}

/// Folds each dynamic composite's elements `T_0 ... T_{n-1}` of instance `instance` back into
/// `T`, recording the elements under `{instance}.{T}`.
fn fold(instance: &str, blueprint: &mut Blueprint, elements: &mut Map<String, Value>) {
    let mut tasks: Vec<Task> = Vec::with_capacity(blueprint.tasks.len());
    // Element task id -> the composite it was expanded from.
    let mut folded: BTreeMap<String, String> = BTreeMap::new();
    for mut task in std::mem::take(&mut blueprint.tasks) {
        let element = element_of(&task).cloned();
        let composite =
            task.id.rsplit_once('_').filter(|(_, i)| i.parse::<usize>().is_ok()).map(|(t, _)| t.to_string());
        let (Some(element), Some(composite)) = (element, composite) else {
            tasks.push(task);
            continue;
        };
        let list = elements.entry(format!("{instance}.{composite}")).or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(list) = list {
            list.push(Value::Object(element.clone()));
        }
        folded.insert(task.id.to_string(), composite.clone());
        if tasks.iter().any(|t| t.id == composite) {
            continue;
        }
        // The first element keeps the composite's own dependencies and everything else of it.
        let origin = called(&task).map(|(_, of)| of);
        if let Some(dynamic) = task
            .params
            .iter_mut()
            .find(|p| p.io.name == "blueprint")
            .and_then(|p| p.io.value.as_mut())
            .and_then(|v| v.get_mut("dynamic"))
            .and_then(Value::as_object_mut)
        {
            dynamic.remove("element");
            dynamic.remove("expanded");
            if let Some(of) = origin {
                dynamic.insert("blueprint_id".into(), Value::String(of));
            }
        }
        let suffix = format!(" - {}", element.get("element_id").and_then(Value::as_str).unwrap_or_default());
        task.description = task
            .description
            .as_deref()
            .map(|d| d.strip_suffix(&suffix).unwrap_or(d).to_string())
            .filter(|d| d != "None");
        task.id = composite.into();
        tasks.push(task);
    }
    for task in &mut tasks {
        let id = task.id.clone();
        task.depends_on.retain_mut(|d| match folded.get(d.id.as_str()) {
            // The chain between elements is the expansion's own.
            Some(composite) if *composite == id => false,
            Some(composite) => {
                d.id = composite.as_str().into();
                true
            }
            None => true,
        });
    }
    blueprint.tasks = tasks;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_folds_its_expansions_back_and_names_inner_blueprints_by_their_own_ids() {
        let element = |i: usize, id: &str| {
            serde_json::json!({"id": format!("each_{i}"), "type": "system.composite", "description": format!("one - {id}"),
                "params": [{"name": "blueprint", "value": {"dynamic": {"blueprint_id": format!("part_each_{i}_{}", &id[..8]),
                    "sequencer": "basic_sequencer", "element": {"element_id": id}, "expanded": true}}},
                    {"name": "model", "value": {"huge": true}}],
                "depends_on": if i == 0 { serde_json::json!([{"id": "start", "type": "FS"}]) }
                    else { serde_json::json!([{"id": format!("each_{}", i - 1), "type": "FS"}]) },
                "state": "SUCCEEDED"})
        };
        let inner = |id: &str| {
            serde_json::json!({"id": id, "name": "part", "version": "1", "tasks": [
            {"id": "start", "type": "system.start"}, {"id": "end", "type": "system.end", "depends_on": [{"id": "start"}]}]})
        };
        let snapshot = serde_json::json!({"data": {
            "params": {"model_id": "m_1"},
            "blueprint": {"id": "root", "name": "root", "version": "1", "tasks": [
                {"id": "start", "type": "system.start", "state": "SUCCEEDED"},
                element(0, "aaaaaaaa-1"), element(1, "bbbbbbbb-2"),
                {"id": "fixed", "type": "system.composite", "params": [{"name": "blueprint", "value": {"static": "part"}}],
                 "depends_on": [{"id": "start"}]},
                {"id": "end", "type": "system.end", "depends_on": [{"id": "each_1", "type": "FF"}, {"id": "fixed"}]}]},
            "inner_blueprints": {"part_each_0_aaaaaaaa": inner("part_each_0_aaaaaaaa"),
                "part_each_1_bbbbbbbb": inner("part_each_1_bbbbbbbb"), "part_fixed": inner("part_fixed")}}});
        let read = versions(&snapshot).unwrap();
        let ids: Vec<&str> = read.versions.iter().map(|(id, _)| id.as_str()).collect();
        assert_eq!(ids, ["root", "part"], "each inner blueprint once, under its own id");
        let root: Value = serde_json::from_str(&read.versions[0].1).unwrap();
        let tasks: Vec<&str> = root["tasks"].as_array().unwrap().iter().map(|t| t["id"].as_str().unwrap()).collect();
        assert_eq!(tasks, ["start", "each", "fixed", "end"]);
        let each = &root["tasks"][1];
        assert_eq!(each["description"], "one");
        assert_eq!(
            each["params"],
            serde_json::json!([{"name": "blueprint", "value": {"dynamic": {"blueprint_id": "part", "sequencer": "basic_sequencer"}}}])
        );
        assert_eq!(each["depends_on"], serde_json::json!([{"id": "start", "type": "FS"}]));
        assert_eq!(
            root["tasks"][3]["depends_on"][0],
            serde_json::json!({"id": "each", "type": "FF"}),
            "the dependency keeps its type"
        );
        assert!(root["tasks"][0].get("state").is_none());
        assert_eq!(
            read.elements,
            serde_json::json!({"root.each": [{"element_id": "aaaaaaaa-1"}, {"element_id": "bbbbbbbb-2"}]})
                .as_object()
                .unwrap()
                .clone()
        );
    }

    #[test]
    fn the_servers_utc_times_read_as_ms_since_the_epoch() {
        assert_eq!(utc_ms("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(utc_ms("2026-12-03T13:31:19.694439Z"), Some(1_796_304_679_694));
        assert_eq!(utc_ms("2000-02-29T23:59:59.5+00:00"), Some(951_868_799_500));
        assert_eq!(utc_ms("2026-13-03T13:31:19Z"), None);
        assert_eq!(utc_ms("yesterday"), None);
    }
}
