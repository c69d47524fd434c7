//! Composites: the [`Library`] of blueprints they may call, their `blueprint` param and its
//! target (a call of the blueprint itself or back into it is an error, a target not among the
//! blueprints given a warning), and `execution_mode` on any task.

use crate::diagnostic::{task_path, Code, Diagnostic};
use crate::model::*;
use foldhash::{HashMap, HashSet, HashSetExt};
use serde_json::Value;

/// Blueprints that composites may call, by id.
#[derive(Default, Clone)]
pub struct Library<'a> {
    by_id: HashMap<&'a str, &'a Blueprint>,
    by_file_name: HashMap<String, &'a Blueprint>,
}

impl<'a> Library<'a> {
    pub fn new() -> Self {
        Self::default()
    }
    /// Adds a blueprint; the first one with an id wins.
    pub fn add(&mut self, bp: &'a Blueprint) {
        self.by_id.entry(bp.id.as_str()).or_insert(bp);
    }
    /// Adds a blueprint read from a file, so that a composite naming the file instead of the
    /// id can be told what the id is.
    pub fn add_file(&mut self, bp: &'a Blueprint, file_name: &str) {
        self.add(bp);
        self.by_file_name.entry(file_name.to_string()).or_insert(bp);
    }
    pub fn get(&self, id: &str) -> Option<&'a Blueprint> {
        self.by_id.get(id).copied()
    }
    pub fn get_by_file_name(&self, name: &str) -> Option<&'a Blueprint> {
        self.by_file_name.get(name).copied()
    }
}

impl<'a> FromIterator<&'a Blueprint> for Library<'a> {
    fn from_iter<I: IntoIterator<Item = &'a Blueprint>>(iter: I) -> Self {
        let mut lib = Library::new();
        for bp in iter {
            lib.add(bp);
        }
        lib
    }
}

/// The `blueprint` param of composites, their targets, and `execution_mode` on any task.
pub(super) fn composite_rules(bp: &Blueprint, library: &Library<'_>, out: &mut Vec<Diagnostic>) {
    for (i, t) in bp.tasks.iter().enumerate() {
        if let Some(j) = t.params.iter().position(|p| p.io.name == "execution_mode") {
            let value = t.params[j].io.value.as_ref();
            if value.and_then(Value::as_str).is_none_or(|m| ExecutionMode::parse(m).is_none()) {
                let shown = value.map_or_else(|| "nothing".to_string(), Value::to_string);
                out.push(
                    Diagnostic::error(
                        Code::ExecutionModeInvalid,
                        format!("{}.params[{j}].value", task_path(i)),
                        format!(
                            "task '{}': execution_mode must be \"EXCLUSIVE\" or \"COMPETITIVE\", found {shown}",
                            t.id
                        ),
                    )
                    .task(&t.id),
                );
            }
        }
        if !t.task_type.is_composite() {
            continue;
        }
        let Some(j) = t.params.iter().position(|p| p.io.name == "blueprint") else {
            out.push(
                Diagnostic::error(
                    Code::CompositeParam,
                    format!("{}.params", task_path(i)),
                    format!(
                        "composite task '{}' has no 'blueprint' param: give {{\"static\": \"<blueprint id>\"}} or {{\"dynamic\": {{\"blueprint_id\": ..., \"sequencer\": ...}}}}",
                        t.id
                    ),
                )
                .task(&t.id),
            );
            continue;
        };
        let path = format!("{}.params[{j}].value", task_path(i));
        match composite_target(t.params[j].io.value.as_ref()) {
            Err((sub, message)) => out.push(
                Diagnostic::error(
                    Code::CompositeParam,
                    format!("{path}{sub}"),
                    format!("composite task '{}': {message}", t.id),
                )
                .task(&t.id),
            ),
            Ok(target) => {
                let id = target.blueprint_id();
                if id == bp.id {
                    out.push(
                        Diagnostic::error(
                            Code::CompositeRecursion,
                            path,
                            format!(
                                "composite task '{}' calls its own blueprint '{id}': it would expand forever",
                                t.id
                            ),
                        )
                        .task(&t.id),
                    );
                } else if let Some(inner) = library.get(id) {
                    if let Some(chain) = calls_back(inner, &bp.id, library) {
                        out.push(
                            Diagnostic::error(
                                Code::CompositeRecursion,
                                path,
                                format!(
                                    "composite task '{}' calls '{id}', which calls back into '{}' ({} -> {chain})",
                                    t.id, bp.id, bp.id
                                ),
                            )
                            .task(&t.id),
                        );
                    }
                } else {
                    let message = match library.get_by_file_name(id) {
                        Some(named) => format!(
                            "composite task '{}' names blueprint '{id}' by file name, but blueprints are looked up by id: that file's id is '{}'",
                            t.id, named.id
                        ),
                        None if id.ends_with(".json") => format!(
                            "composite task '{}' calls blueprint '{id}', which looks like a file name: blueprints are looked up by their id",
                            t.id
                        ),
                        None => format!(
                            "composite task '{}' calls blueprint '{id}', which is not among the blueprints given: the server must already have it",
                            t.id
                        ),
                    };
                    out.push(Diagnostic::warning(Code::CompositeTargetMissing, path, message).task(&t.id));
                }
            }
        }
    }
}

/// Reads a composite's `blueprint` param; on failure, the sub-path and what is wrong.
pub fn composite_target(value: Option<&Value>) -> Result<CompositeTarget, (String, String)> {
    let shape = "expected {\"static\": \"<blueprint id>\"} or {\"dynamic\": {\"blueprint_id\": \"<id>\", \"sequencer\": \"basic_sequencer\" | \"basic_stock_sequencer\" | \"basic_element_sequencer\"}}";
    let Some(Value::Object(map)) = value else {
        return Err((String::new(), format!("the 'blueprint' param must be an object: {shape}")));
    };
    match (map.get("static"), map.get("dynamic")) {
        (Some(Value::String(id)), None) if !id.is_empty() => Ok(CompositeTarget::Static { blueprint_id: id.clone() }),
        (Some(_), None) => Err((".static".into(), "'static' must name a blueprint id (a non-empty string)".into())),
        (None, Some(Value::Object(d))) => {
            let blueprint_id = match (d.get("blueprint_id"), d.get("blueprint")) {
                (Some(Value::String(id)), _) if !id.is_empty() => id.clone(),
                (None, Some(_)) => {
                    return Err((
                        ".dynamic.blueprint".into(),
                        "'dynamic' names its blueprint with 'blueprint', but the reference reads 'blueprint_id' (the server fails at session start)".into(),
                    ))
                }
                _ => return Err((".dynamic.blueprint_id".into(), "'dynamic' must name a blueprint in 'blueprint_id'".into())),
            };
            let sequencer = match d.get("sequencer") {
                Some(Value::String(s)) => Sequencer::parse(s),
                _ => None,
            };
            match sequencer {
                Some(sequencer) => Ok(CompositeTarget::Dynamic { blueprint_id, sequencer }),
                None => Err((
                    ".dynamic.sequencer".into(),
                    "'sequencer' must be \"basic_sequencer\", \"basic_stock_sequencer\" or \"basic_element_sequencer\""
                        .into(),
                )),
            }
        }
        (None, Some(_)) => Err((".dynamic".into(), format!("'dynamic' must be an object: {shape}"))),
        _ => Err((String::new(), shape.into())),
    }
}

/// The ids of the blueprints `bp`'s composites call (static or dynamic), in task order; a
/// composite whose `blueprint` param is malformed calls none.
pub fn calls(bp: &Blueprint) -> Vec<String> {
    bp.tasks
        .iter()
        .filter(|t| t.task_type.is_composite())
        .filter_map(|t| composite_target(t.param_value("blueprint")).ok())
        .map(|target| target.blueprint_id().to_string())
        .collect()
}

/// Whether `from` (transitively) calls blueprint `target`; the chain of ids when it does.
fn calls_back(from: &Blueprint, target: &str, library: &Library<'_>) -> Option<String> {
    let mut stack = vec![(from, vec![from.id.clone()])];
    let mut visited = HashSet::new();
    while let Some((bp, chain)) = stack.pop() {
        if !visited.insert(bp.id.clone()) {
            continue;
        }
        for id in calls(bp) {
            let mut next = chain.clone();
            next.push(id.clone());
            if id == target {
                return Some(next.join(" -> "));
            }
            if let Some(inner) = library.get(&id) {
                stack.push((inner, next));
            }
        }
    }
    None
}
