//! The registered names a protocol task is submitted by: Orrery's task types that run alone
//! (every type but `system.start` and `system.end`) and the stored blueprints (by id, newest
//! version). A task type shadows a stored blueprint of the same name.

use super::*;

use orrery_blueprint::task_types::KnownType;

/// The prefix of the blueprint a single task of a type runs in (`submitted_shell_run`); such
/// blueprints are not registered names themselves.
const WRAPPER_PREFIX: &str = "submitted_";

/// What a registered name runs.
pub(super) enum Registered {
    Type(&'static KnownType),
    Blueprint { blueprint: Blueprint, hash: String },
}

impl Registered {
    /// The first part of its task ids: the agent of a type (`shell` for `shell.run`), or
    /// `blueprint`.
    pub(super) fn kind(&self) -> &'static str {
        match self {
            Registered::Type(t) => t.name.split('.').next().unwrap_or(t.name),
            Registered::Blueprint { .. } => BLUEPRINT,
        }
    }

    pub(super) fn name(&self) -> &str {
        match self {
            Registered::Type(t) => t.name,
            Registered::Blueprint { blueprint, .. } => &blueprint.id,
        }
    }

    /// The JSON Schema of what `submit` takes beside `task`: the common inputs, then the
    /// type's params or the blueprint's session params.
    pub(super) fn input_schema(&self) -> Value {
        let common = json!({
            "task_name": {
                "type": ["string", "null"], "default": null,
                "description": "1-32 letters, digits or hyphens; omitted, null or \"\" names the task anonymously.",
            },
            "source_tasks": {
                "type": "string", "default": "",
                "description": "The full ids of the tasks it comes from, comma separated.",
            },
        });
        match self {
            Registered::Type(t) => {
                let mut schema = t.params_schema();
                let properties = schema.as_object_mut().and_then(|o| {
                    o.insert("additionalProperties".into(), Value::Bool(false));
                    o.entry("properties").or_insert_with(|| json!({})).as_object_mut()
                });
                if let (Some(properties), Value::Object(common)) = (properties, common) {
                    properties.extend(common);
                }
                schema
            }
            Registered::Blueprint { .. } => json!({
                "type": "object",
                "properties": common,
                "additionalProperties": true,
                "description": "Every other input is a session param of the blueprint's session.",
            }),
        }
    }

    /// Why `inputs` cannot run it: an input it does not take, or one it needs missing (for a
    /// type; a blueprint takes any session params).
    pub(super) fn refuse_inputs(&self, inputs: &Map<String, Value>) -> Option<String> {
        let Registered::Type(t) = self else { return None };
        let schema = t.params_schema();
        let known: Vec<&String> = schema["properties"].as_object().map(|p| p.keys().collect()).unwrap_or_default();
        if let Some(unknown) = inputs.keys().find(|k| !known.contains(k)) {
            let known: Vec<&str> = known.iter().map(|k| k.as_str()).collect();
            return Some(format!(
                "{unknown:?} is not an input of {} (its inputs: task_name, source_tasks, {})",
                t.name,
                known.join(", ")
            ));
        }
        let names = |v: &Value| -> Vec<String> {
            v.as_array().into_iter().flatten().filter_map(Value::as_str).map(str::to_string).collect()
        };
        let has_all = |required: &[String]| required.iter().all(|r| inputs.contains_key(r));
        let required = names(&schema["required"]);
        if !has_all(&required) {
            return Some(format!("{} needs the inputs {}", t.name, required.join(", ")));
        }
        let alternatives: Vec<Vec<String>> =
            schema["oneOf"].as_array().into_iter().flatten().map(|alt| names(&alt["required"])).collect();
        if !alternatives.is_empty() && !alternatives.iter().any(|alt| has_all(alt)) {
            let each: Vec<String> = alternatives.iter().map(|alt| alt.join(" and ")).collect();
            return Some(format!("{} needs one of the inputs {}", t.name, each.join(" or ")));
        }
        None
    }

    /// The defaults its schema gives for inputs not passed, for the task's `config`.
    pub(super) fn defaults(&self) -> Map<String, Value> {
        let Registered::Type(t) = self else { return Map::new() };
        let schema = t.params_schema();
        let Some(properties) = schema["properties"].as_object() else { return Map::new() };
        properties.iter().filter_map(|(name, p)| Some((name.clone(), p.get("default")?.clone()))).collect()
    }

    pub(super) fn definition(&self) -> TaskDefinition {
        let (source, plugin, description, output_schema) = match self {
            Registered::Type(t) => ("native", None, t.description.to_string(), t.outputs_schema()),
            Registered::Blueprint { blueprint, hash } => (
                "plugin",
                Some(STORED_BLUEPRINTS.to_string()),
                format!(
                    "{}: the stored blueprint {:?} (version {}), run as a session{}",
                    blueprint.name,
                    blueprint.id,
                    &hash[..hash.len().min(12)],
                    blueprint.description.as_deref().map(|d| format!(". {d}")).unwrap_or_default()
                ),
                json!({"type": "object", "description": "The session data of the blueprint's own instance."}),
            ),
        };
        TaskDefinition {
            name: self.name().to_string(),
            source: source.to_string(),
            plugin,
            task_type: self.kind().to_string(),
            description,
            input_schema: self.input_schema(),
            output_schema,
        }
    }
}

/// The `plugin` of a stored blueprint's definition.
const STORED_BLUEPRINTS: &str = "orrery-blueprint-store";

fn runnable_types() -> impl Iterator<Item = &'static KnownType> {
    orrery_blueprint::task_types::known_types().iter().filter(|t| t.bound.is_none())
}

/// The newest stored version of blueprint `id`.
pub(super) fn newest_blueprint(store: &Store, id: &str) -> Result<Option<(Blueprint, String)>, Failure> {
    let Some(version) = store.blueprint_versions(id)?.into_iter().next() else { return Ok(None) };
    let loaded = load(&version.canonical_json).map_err(|e| invalid_blueprint(&e.diagnostics))?;
    Ok(Some((loaded.blueprint, version.hash)))
}

fn stored_ids(store: &Store) -> Result<Vec<String>, Failure> {
    let shadowed = |id: &str| id.starts_with(WRAPPER_PREFIX) || orrery_blueprint::task_types::known_type(id).is_some();
    Ok(store.blueprint_ids()?.into_iter().filter(|id| !shadowed(id)).collect())
}

/// Every registered name, sorted.
pub(super) fn all(store: &Store) -> Result<Vec<Registered>, Failure> {
    let mut all: Vec<Registered> = runnable_types().map(Registered::Type).collect();
    for id in stored_ids(store)? {
        // A stored version that no longer loads is not offered (`submit` of it says why).
        if let Ok(Some((blueprint, hash))) = newest_blueprint(store, &id) {
            all.push(Registered::Blueprint { blueprint, hash });
        }
    }
    all.sort_by(|a, b| a.name().cmp(b.name()));
    Ok(all)
}

/// The registered name `name`; unknown: `ValueError: Unknown Task: X. Available: ...`.
pub(super) fn find(store: &Store, name: &str) -> Result<Registered, Failure> {
    if let Some(t) = runnable_types().find(|t| t.name == name) {
        return Ok(Registered::Type(t));
    }
    if !name.starts_with(WRAPPER_PREFIX) {
        if let Some((blueprint, hash)) = newest_blueprint(store, name)? {
            return Ok(Registered::Blueprint { blueprint, hash });
        }
    }
    let mut available: Vec<String> = runnable_types().map(|t| t.name.to_string()).collect();
    available.extend(stored_ids(store)?);
    available.sort();
    Err(Failure::new(
        FailureCode::NotFound,
        format!("ValueError: Unknown Task: {name}. Available: {}", available.join(", ")),
    ))
}

pub(super) fn invalid_blueprint(diagnostics: &[orrery_blueprint::Diagnostic]) -> Failure {
    let errors: Vec<String> = diagnostics.iter().filter(|d| d.is_error()).map(ToString::to_string).collect();
    Failure::new(FailureCode::InvalidBlueprint, format!("ValidationError: {}", errors.join("; ")))
}

/// The root and library a submission runs: a stored blueprint (with every stored blueprint as
/// candidates for its composites), or one task of a type in a blueprint of its own
/// (`submitted_{agent}_{tool}`: start, `task`, end) with the inputs as its params.
pub(super) fn runnable(
    store: &Store,
    registered: &Registered,
    inputs: &Map<String, Value>,
) -> Result<(ValidBlueprint, Vec<Blueprint>), Failure> {
    let (root, mut library) = match registered {
        Registered::Blueprint { blueprint, .. } => (blueprint.clone(), Vec::new()),
        Registered::Type(t) => {
            let params: Vec<Value> = inputs.iter().map(|(k, v)| json!({"name": k, "value": v})).collect();
            let id = format!("{WRAPPER_PREFIX}{}", t.name.replace('.', "_"));
            let text = json!({"id": id, "name": t.name, "version": "1.0", "tasks": [
                {"id": "start", "type": "system.start"},
                {"id": SINGLE_TASK, "type": t.name, "params": params, "depends_on": [{"id": "start"}]},
                {"id": "end", "type": "system.end", "depends_on": [{"id": SINGLE_TASK}]}]});
            (load(&text.to_string()).map_err(|e| invalid_blueprint(&e.diagnostics))?.blueprint, Vec::new())
        }
    };
    library.push(root.clone());
    if let Registered::Blueprint { .. } = registered {
        for id in store.blueprint_ids()? {
            if id != root.id && !id.starts_with(WRAPPER_PREFIX) {
                library.extend(newest_blueprint(store, &id)?.map(|(b, _)| b));
            }
        }
    }
    let lib: Library = library.iter().collect();
    let valid = ValidBlueprint::new(root, &lib).map_err(|d| invalid_blueprint(&d))?;
    Ok((valid, library))
}
