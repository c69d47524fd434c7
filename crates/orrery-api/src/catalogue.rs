//! The task types Orrery's agents run: what the editor's palette and forms are built from.

use super::*;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArguments {}

#[derive(Debug, Serialize, JsonSchema)]
pub struct TaskTypeSummary {
    /// `"{agent_type}.{tool}"`, as written in a blueprint.
    pub name: String,
    pub description: String,
    /// For the types each blueprint has exactly one of: whether it opens or closes the blueprint.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bound: Option<orrery_blueprint::task_types::BlueprintBound>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskTypeArguments {
    /// A task type, e.g. `shell.run`.
    pub name: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct TaskType {
    pub name: String,
    pub description: String,
    /// The JSON Schema of the task's params, as an object of param name to value.
    pub params_schema: Value,
    /// The JSON Schema of the inputs it reads, as an object of input name to value.
    pub inputs_schema: Value,
    /// The JSON Schema of the outputs it writes, as an object of output name to value.
    pub outputs_schema: Value,
}

pub(crate) fn register(jobs: &mut Vec<Job>) {
    jobs.push(job(
        "list_task_types",
        "The task types a blueprint's tasks may have, with a one-line description each (the \
         editor's palette).",
        |_api, _: NoArguments| async move {
            Ok::<_, Failure>(
                orrery_blueprint::task_types::known_types()
                    .iter()
                    .map(|t| TaskTypeSummary {
                        name: t.name.to_string(),
                        description: t.description.to_string(),
                        bound: t.bound,
                    })
                    .collect::<Vec<_>>(),
            )
        },
    ));
    jobs.push(job(
        "get_task_type",
        "One task type: its description and the JSON Schemas of its params, inputs and outputs.",
        |_api, args: TaskTypeArguments| async move {
            let Some(t) = orrery_blueprint::task_types::known_type(&args.name) else {
                let known = orrery_blueprint::task_types::known_type_names().join(", ");
                return Err(Failure::new(
                    FailureCode::NotFound,
                    format!("no task type {:?}; known: {known}", args.name),
                ));
            };
            Ok(TaskType {
                name: t.name.to_string(),
                description: t.description.to_string(),
                params_schema: t.params_schema(),
                inputs_schema: t.inputs_schema(),
                outputs_schema: t.outputs_schema(),
            })
        },
    ));
}
