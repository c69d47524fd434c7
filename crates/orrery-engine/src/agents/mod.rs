//! Agents: what executes a task of a given type (issue 3, docs/format.md §4). This module
//! owns the vocabulary the session runner speaks with every agent: the [`AgentOutcome`] of an
//! attempt, the [`TaskError`] a failed one carries (agent-side codes `TOOL_BINDING_ERROR`,
//! `TOOL_FAILURE`, `LAUNCHER_FAILURE`). The built-in task types themselves are catalogued beside the blueprint
//! model (`orrery_blueprint::task_types`, re-exported here), so that a blueprint is judged against
//! them without the engine and one naming a type with no agent is refused before its run starts.
//!
//! The agents themselves live one per file: [`shell`] (`shell.run`), with the progress file it
//! follows in [`progress`]; the `user_interaction.*` and `user_prompt.confirm` types in
//! [`interaction`] (the runner publishes and waits, the file decides). The `system.*` types are handled by the runner itself.

pub mod interaction;
pub mod progress;
pub mod shell;

use orrery_blueprint::ErrorCode;
use serde_json::{json, Map, Value};

pub use orrery_blueprint::task_types::{is_known, known_type, known_type_names, known_types, KnownType};

/// Why an attempt failed, as it crosses every boundary: `{code, message, details}`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}: {message}", code.as_str())]
pub struct TaskError {
    pub code: ErrorCode,
    /// Readable on its own: names the param, file or program at fault.
    pub message: String,
    /// Machine-readable facts behind the message (the param name, the log tail, ...).
    pub details: Option<Value>,
}

impl TaskError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        TaskError { code, message: message.into(), details: None }
    }

    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    /// A param (or one key of it) cannot be bound to the tool: `TOOL_BINDING_ERROR`, with the
    /// param name in `details.param`.
    pub fn binding(param: &str, message: impl Into<String>) -> Self {
        TaskError::new(ErrorCode::ToolBindingError, message).with_details(json!({ "param": param }))
    }

    /// `{"code", "message", "details"?}`: the form stored and sent over IPC and HTTP.
    pub fn to_json(&self) -> Value {
        let mut out = Map::new();
        out.insert("code".into(), Value::String(self.code.as_str().into()));
        out.insert("message".into(), Value::String(self.message.clone()));
        if let Some(details) = &self.details {
            out.insert("details".into(), details.clone());
        }
        Value::Object(out)
    }
}

/// How one attempt at a task ended, as an agent reports it to the session runner.
///
/// Each variant carries what belongs to it. `exit_code` is `Some` whenever a process ran
/// (`None` for agents without one, and for failures before a process started). A timeout is
/// its own variant, not a [`AgentOutcome::Failed`], so that the runner can tell the two apart
/// in events; it settles the task as FAILED with its error all the same.
#[derive(Debug, Clone, PartialEq)]
pub enum AgentOutcome {
    /// The task's outputs by name. For `shell.run` they hold `exit_code` beside whatever the
    /// process wrote to its outputs file.
    Succeeded {
        outputs: Map<String, Value>,
        exit_code: Option<i32>,
    },
    Failed {
        error: TaskError,
        exit_code: Option<i32>,
    },
    /// Stopped on request; always [`crate::process::CANCELLED_EXIT_CODE`] (130).
    Cancelled {
        exit_code: i32,
    },
    /// Stopped because its time ran out; the error (`TOOL_FAILURE`) says after how long.
    /// `exit_code` is [`crate::process::TIMED_OUT_EXIT_CODE`] (124).
    TimedOut {
        error: TaskError,
        exit_code: i32,
    },
}

impl AgentOutcome {
    pub fn exit_code(&self) -> Option<i32> {
        match self {
            AgentOutcome::Succeeded { exit_code, .. } | AgentOutcome::Failed { exit_code, .. } => *exit_code,
            AgentOutcome::Cancelled { exit_code } | AgentOutcome::TimedOut { exit_code, .. } => Some(*exit_code),
        }
    }

    /// The error of a failed or timed-out attempt.
    pub fn error(&self) -> Option<&TaskError> {
        match self {
            AgentOutcome::Failed { error, .. } | AgentOutcome::TimedOut { error, .. } => Some(error),
            AgentOutcome::Succeeded { .. } | AgentOutcome::Cancelled { .. } => None,
        }
    }
}
