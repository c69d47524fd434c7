//! The built-in task types: each with a one-line description and the JSON Schemas of its params
//! (as the object of param name to value that agents receive), of its inputs (input name to
//! value) and of its outputs (output name to value). They live beside the blueprint model
//! because a blueprint is judged against them without running it: `orrery validate` checks
//! params against their schema ([`crate::params`]); the engine refuses a type it has no agent
//! for before a run starts; the editor builds its palette and forms from them.
//!
//! Every task may also carry `execution_mode`, so each schema lists it. The schemas allow other
//! params (`additionalProperties` is not closed): the reference passes a task's params through,
//! and a tool ignores what it does not read.

use crate::model::{Sequencer, TaskType};
use serde_json::{json, Value};

/// The part a task type plays in every blueprint: the types each blueprint has exactly one of
/// (validation says so otherwise), the one that opens it and the one that closes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum BlueprintBound {
    /// Every other task runs after it.
    Start,
    /// It runs after every other task.
    End,
}

/// A task type Orrery can execute.
#[derive(Debug, Clone, Copy)]
pub struct KnownType {
    /// `"{agent_type}.{tool}"`, as written in a blueprint.
    pub name: &'static str,
    pub description: &'static str,
    /// For the start and the end: which of them it is.
    pub bound: Option<BlueprintBound>,
    params_schema: fn() -> Value,
    inputs_schema: fn() -> Value,
    outputs_schema: fn() -> Value,
}

impl KnownType {
    /// The JSON Schema (draft 2020-12) of the task's params, as an object keyed by param name.
    pub fn params_schema(&self) -> Value {
        (self.params_schema)()
    }

    /// The JSON Schema of the inputs it reads, as an object keyed by input name. Open
    /// (`additionalProperties` not closed) where the tool takes any input.
    pub fn inputs_schema(&self) -> Value {
        (self.inputs_schema)()
    }

    /// The JSON Schema of the outputs it writes, as an object keyed by output name. Open where
    /// the outputs are the task's own (declared in the blueprint, written by the command).
    pub fn outputs_schema(&self) -> Value {
        (self.outputs_schema)()
    }
}

static KNOWN_TYPES: &[KnownType] = &[
    KnownType {
        name: TaskType::START,
        description: "Opens a blueprint; exactly one per blueprint. Outputs `process_start_time`: \
                      when it ran, in seconds since the epoch (as the reference's system agent).",
        bound: Some(BlueprintBound::Start),
        params_schema: no_params,
        inputs_schema: nothing,
        outputs_schema: start_outputs,
    },
    KnownType {
        name: TaskType::END,
        description: "Closes a blueprint; exactly one per blueprint. Outputs `process_end_time`: \
                      when it ran, in seconds since the epoch (as the reference's system agent).",
        bound: Some(BlueprintBound::End),
        params_schema: no_params,
        inputs_schema: nothing,
        outputs_schema: end_outputs,
    },
    KnownType {
        name: TaskType::SLEEP,
        description: "Waits `duration` seconds (default 1), then succeeds.",
        bound: None,
        params_schema: sleep_params,
        inputs_schema: nothing,
        outputs_schema: nothing,
    },
    KnownType {
        name: TaskType::COMPOSITE,
        description: "Runs an inner blueprint, found by id: once (static) or once per element \
                      of a list given at session start (dynamic).",
        bound: None,
        params_schema: composite_params,
        inputs_schema: inner_inputs,
        outputs_schema: inner_outputs,
    },
    KnownType {
        name: TaskType::SHELL,
        description: "Runs a command (`/bin/sh -c`) or a program with arguments in its own \
                      process group. Inputs arrive as the JSON file $ORRERY_INPUTS and as \
                      ORRERY_INPUT_<NAME> variables; a JSON object written to $ORRERY_OUTPUTS \
                      becomes the outputs, beside exit_code; JSON lines appended to \
                      $ORRERY_PROGRESS report progress steps. A non-zero exit fails the task.",
        bound: None,
        params_schema: shell_params,
        inputs_schema: shell_inputs,
        outputs_schema: shell_outputs,
    },
    KnownType {
        name: TaskType::NOTIFY,
        description: "Shows a notification (`title`, `message`, `level`, each an input or a param) \
                      and succeeds at once with output `status` = \"displayed\".",
        bound: None,
        params_schema: notify_params,
        inputs_schema: notify_inputs,
        outputs_schema: notify_outputs,
    },
    KnownType {
        name: TaskType::USER_OUTPUT,
        description: "Shows every input's value and succeeds at once, with no outputs.",
        bound: None,
        params_schema: no_params,
        inputs_schema: any_inputs,
        outputs_schema: nothing,
    },
    KnownType {
        name: TaskType::USER_INPUT,
        description: "Asks the user one value per declared output and waits for the answer \
                      (one output: the value; several: a JSON object of them).",
        bound: None,
        params_schema: no_params,
        inputs_schema: nothing,
        outputs_schema: answered_outputs,
    },
    KnownType {
        name: TaskType::CONFIRM,
        description: "Asks `message`, waits for an answer (one of `options` when given); the \
                      answer becomes the declared outputs (`result`).",
        bound: None,
        params_schema: confirm_params,
        inputs_schema: nothing,
        outputs_schema: confirm_outputs,
    },
];

/// Every built-in task type, in a stable order.
pub fn known_types() -> &'static [KnownType] {
    KNOWN_TYPES
}

/// The names of [`known_types`], for an error that lists them.
pub fn known_type_names() -> Vec<&'static str> {
    KNOWN_TYPES.iter().map(|t| t.name).collect()
}

pub fn known_type(name: &str) -> Option<&'static KnownType> {
    KNOWN_TYPES.iter().find(|t| t.name == name)
}

/// True when Orrery has an agent for this task type.
pub fn is_known(name: &str) -> bool {
    known_type(name).is_some()
}

/// `execution_mode`, which any task may carry.
fn execution_mode_schema() -> Value {
    json!({
        "enum": ["EXCLUSIVE", "COMPETITIVE"],
        "default": "EXCLUSIVE",
        "description": "EXCLUSIVE: the first agent to claim the task runs it; COMPETITIVE: every claiming agent does."
    })
}

fn no_params() -> Value {
    json!({
        "type": "object",
        "properties": { "execution_mode": execution_mode_schema() }
    })
}

fn sleep_params() -> Value {
    json!({
        "type": "object",
        "properties": {
            "duration": {
                "type": "number",
                "minimum": 0,
                "default": 1,
                "description": "Seconds to wait."
            },
            "execution_mode": execution_mode_schema()
        }
    })
}

fn composite_params() -> Value {
    let sequencers: Vec<&str> = Sequencer::ALL.iter().map(|q| q.as_str()).collect();
    json!({
        "type": "object",
        "properties": {
            "blueprint": {
                "oneOf": [
                    {
                        "type": "object",
                        "properties": { "static": { "type": "string", "minLength": 1, "description": "The inner blueprint's id." } },
                        "required": ["static"],
                        "additionalProperties": false
                    },
                    {
                        "type": "object",
                        "properties": {
                            "dynamic": {
                                "type": "object",
                                "properties": {
                                    "blueprint_id": { "type": "string", "minLength": 1 },
                                    "sequencer": { "enum": sequencers }
                                },
                                "required": ["blueprint_id", "sequencer"]
                            }
                        },
                        "required": ["dynamic"],
                        "additionalProperties": false
                    }
                ]
            },
            "execution_mode": execution_mode_schema()
        },
        "required": ["blueprint"]
    })
}

/// An object of named values.
fn object(properties: Value, open: bool) -> Value {
    json!({ "type": "object", "properties": properties, "additionalProperties": open })
}

fn nothing() -> Value {
    object(json!({}), false)
}

fn any_inputs() -> Value {
    json!({ "type": "object", "description": "Any inputs; each value is shown." })
}

fn start_outputs() -> Value {
    object(json!({ "process_start_time": { "type": "number", "description": "Seconds since the epoch." } }), false)
}

fn end_outputs() -> Value {
    object(json!({ "process_end_time": { "type": "number", "description": "Seconds since the epoch." } }), false)
}

fn inner_inputs() -> Value {
    json!({ "type": "object", "description": "Given to the inner blueprint as its session params." })
}

fn inner_outputs() -> Value {
    json!({ "type": "object", "description": "Read from the inner blueprint's session data." })
}

fn shell_inputs() -> Value {
    json!({
        "type": "object",
        "description": "Any inputs: the JSON file $ORRERY_INPUTS holds them all, and each is the variable \
                        ORRERY_INPUT_<NAME> (a string as is, any other value as JSON)."
    })
}

fn shell_outputs() -> Value {
    json!({
        "type": "object",
        "properties": { "exit_code": { "type": "integer", "description": "The process's exit status." } },
        "required": ["exit_code"],
        "description": "exit_code, and the members of the JSON object the command writes to $ORRERY_OUTPUTS."
    })
}

fn notify_inputs() -> Value {
    object(
        json!({
            "title": { "description": "Shown as text (a value other than a string as JSON)." },
            "message": { "description": "Shown as text (a value other than a string as JSON)." },
            "level": { "enum": ["info", "success", "warning", "error"] }
        }),
        true,
    )
}

fn notify_outputs() -> Value {
    object(json!({ "status": { "const": "displayed" } }), false)
}

fn answered_outputs() -> Value {
    json!({ "type": "object", "description": "One value per declared output, as the user answered." })
}

fn confirm_outputs() -> Value {
    object(json!({ "result": { "description": "The answer: one of `options` when they are given." } }), true)
}

/// The JSON Schema of the params of `shell.run`; `command` and `argv` exclude each
/// other and one of them is required.
fn shell_params() -> Value {
    json!({
        "type": "object",
        "properties": {
            "command": {
                "type": "string",
                "contentMediaType": "text/x-shellscript",
                "description": "A command line, run by /bin/sh -c (a script of many lines too)."
            },
            "argv": {
                "type": "array",
                "items": { "type": "string" },
                "minItems": 1,
                "description": "A program and its arguments, run directly (looked up in PATH when it has no '/')."
            },
            "cwd": { "type": "string", "description": "The working directory." },
            "env": {
                "type": "object",
                "additionalProperties": { "type": "string" },
                "description": "Environment variables added to the minimal environment."
            },
            "timeout_s": {
                "type": "number",
                "exclusiveMinimum": 0,
                "description": "Seconds before the process group is stopped and the task fails."
            },
            "log_cap_bytes": {
                "type": "integer",
                "minimum": 1,
                "description": "At most this many bytes of output are kept in the attempt's log; the rest is dropped, with a note."
            },
            "execution_mode": execution_mode_schema()
        },
        "oneOf": [
            { "required": ["command"] },
            { "required": ["argv"] }
        ]
    })
}

fn notify_params() -> Value {
    json!({
        "type": "object",
        "properties": {
            "title": { "type": "string", "default": "Notification", "description": "Also read from an input of that name, which wins; {key} fields are filled from context and inputs." },
            "message": { "type": "string", "default": "", "description": "Also read from an input of that name, which wins; {key} fields are filled from context and inputs." },
            "level": { "enum": ["info", "success", "warning", "error"], "default": "info" },
            "execution_mode": execution_mode_schema()
        }
    })
}

fn confirm_params() -> Value {
    json!({
        "type": "object",
        "properties": {
            "message": { "type": "string", "description": "The question." },
            "options": { "type": "array", "description": "The answers allowed; the one given becomes the output (`result`)." },
            "execution_mode": execution_mode_schema()
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bounds_are_the_start_and_the_end_that_validation_counts() {
        let bounds: Vec<_> = known_types().iter().filter_map(|t| t.bound.map(|b| (t.name, b))).collect();
        assert_eq!(bounds, [(TaskType::START, BlueprintBound::Start), (TaskType::END, BlueprintBound::End)]);
    }
}
