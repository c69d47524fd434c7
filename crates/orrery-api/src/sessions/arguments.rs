//! The arguments several session jobs take: a session, or one task of a session.

use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionArguments {
    pub session_id: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskArguments {
    pub session_id: String,
    /// `{instance}.{task}`, or a task id of the root blueprint.
    pub task: String,
}
