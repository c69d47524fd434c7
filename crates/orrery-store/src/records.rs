//! The value types that the store's tables and its events share: an attempt (its row, id, state,
//! outcome and scope iterations), a step's state, an error record, a mirror's link, and the task and session states
//! of `orrery-blueprint`. Apart from the tables' modules so that the event data, the journal
//! and every table can name them without importing one another.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use orrery_blueprint::{ErrorCode, SessionState, TaskState};

/// `{code, message, details}`, the error shape at every boundary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ErrorRecord {
    pub code: RecordCode,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
}

impl ErrorRecord {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> ErrorRecord {
        ErrorRecord { code: RecordCode::Known(code), message: message.into(), details: None }
    }
}

/// An error record's code: one of the task error codes ([`ErrorCode`]), or a code a server sent
/// that this build does not know, kept as it came (a mirror shows the server's words).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum RecordCode {
    Known(ErrorCode),
    Other(String),
}

impl RecordCode {
    pub fn as_str(&self) -> &str {
        match self {
            RecordCode::Known(code) => code.as_str(),
            RecordCode::Other(code) => code,
        }
    }
}

impl From<ErrorCode> for RecordCode {
    fn from(code: ErrorCode) -> Self {
        RecordCode::Known(code)
    }
}

impl From<&str> for RecordCode {
    fn from(code: &str) -> Self {
        ErrorCode::parse(code).map_or_else(|| RecordCode::Other(code.to_string()), RecordCode::Known)
    }
}

impl PartialEq<ErrorCode> for RecordCode {
    fn eq(&self, other: &ErrorCode) -> bool {
        *self == RecordCode::Known(*other)
    }
}

impl PartialEq<&str> for RecordCode {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl std::fmt::Display for RecordCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for RecordCode {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for RecordCode {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(RecordCode::from(String::deserialize(deserializer)?.as_str()))
    }
}

impl schemars::JsonSchema for RecordCode {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "RecordCode".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A task error code, or a code a server sent that Orrery does not know.",
            "anyOf": [generator.subschema_for::<ErrorCode>(), {"type": "string"}],
        })
    }
}

/// Where a mirrored session runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RemoteLink {
    /// The server's address (`http://host:port`).
    pub url: String,
    /// The session's id on the server.
    pub session_id: String,
}

/// The state of one attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum AttemptState {
    Running,
    Succeeded,
    Failed,
    Cancelled,
    Skipped,
    /// Settled by crash recovery when what happened cannot be known.
    Unknown,
}

impl AttemptState {
    pub fn as_str(self) -> &'static str {
        match self {
            AttemptState::Running => "running",
            AttemptState::Succeeded => "succeeded",
            AttemptState::Failed => "failed",
            AttemptState::Cancelled => "cancelled",
            AttemptState::Skipped => "skipped",
            AttemptState::Unknown => "unknown",
        }
    }

    pub fn parse(text: &str) -> Option<AttemptState> {
        Some(match text {
            "running" => AttemptState::Running,
            "succeeded" => AttemptState::Succeeded,
            "failed" => AttemptState::Failed,
            "cancelled" => AttemptState::Cancelled,
            "skipped" => AttemptState::Skipped,
            "unknown" => AttemptState::Unknown,
            _ => return None,
        })
    }
}

/// The id of one attempt; fresh for every attempt.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(transparent)]
pub struct RunId(pub(crate) String);

impl RunId {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl From<String> for RunId {
    fn from(id: String) -> Self {
        RunId(id)
    }
}

impl From<&str> for RunId {
    fn from(id: &str) -> Self {
        RunId(id.to_string())
    }
}

impl std::fmt::Display for RunId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// How an attempt ended; each outcome carries what belongs to it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "state", rename_all = "lowercase")]
pub enum Outcome {
    Succeeded {
        exit_code: Option<i32>,
        outputs: Value,
    },
    Failed {
        exit_code: Option<i32>,
        error: ErrorRecord,
    },
    Cancelled {
        exit_code: Option<i32>,
    },
    Skipped,
    /// The process is gone and its result cannot be known (crash recovery).
    Unknown {
        error: ErrorRecord,
    },
}

impl Outcome {
    pub fn state(&self) -> AttemptState {
        match self {
            Outcome::Succeeded { .. } => AttemptState::Succeeded,
            Outcome::Failed { .. } => AttemptState::Failed,
            Outcome::Cancelled { .. } => AttemptState::Cancelled,
            Outcome::Skipped => AttemptState::Skipped,
            Outcome::Unknown { .. } => AttemptState::Unknown,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StepState {
    Pending,
    InProgress,
    Done,
    /// A crash left the outcome unclear.
    Unknown,
}

impl StepState {
    pub fn as_str(self) -> &'static str {
        match self {
            StepState::Pending => "pending",
            StepState::InProgress => "in_progress",
            StepState::Done => "done",
            StepState::Unknown => "unknown",
        }
    }

    pub fn parse(text: &str) -> Option<StepState> {
        Some(match text {
            "pending" => StepState::Pending,
            "in_progress" => StepState::InProgress,
            "done" => StepState::Done,
            "unknown" => StepState::Unknown,
            _ => return None,
        })
    }
}

/// Which process runs an attempt: the pid alone is reused by the OS, the pair is not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ProcessIdentity {
    pub pid: u32,
    /// The process start time as the OS reports it (on Linux, field 22 of /proc/PID/stat).
    pub start_time: u64,
}

/// What the process of an attempt was started with: where a task that behaves differently in a
/// terminal and in the app (another `PATH`, another locale) shows why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ProcessEnvironment {
    /// The program executed: as given when it holds a `/`, else the file found on `PATH`.
    pub program: String,
    /// Its working directory.
    pub cwd: String,
    /// Its environment variables, by name, but Orrery's own `ORRERY_*` (the inputs, outputs and
    /// ids it gives every task).
    pub variables: std::collections::BTreeMap<String, String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Attempt {
    pub run_id: RunId,
    pub session_id: String,
    /// The node's key, `"{instance}.{task}"`.
    pub node: String,
    /// The blueprint instance the task is in.
    pub instance: String,
    /// The task's id in its blueprint.
    pub task: String,
    /// 1 for the first attempt at a node, then 2, 3, ...
    pub attempt: u32,
    pub state: AttemptState,
    pub agent: String,
    pub started_ms: i64,
    pub finished_ms: Option<i64>,
    pub exit_code: Option<i32>,
    pub error: Option<ErrorRecord>,
    pub process: Option<ProcessIdentity>,
    pub log_path: Option<PathBuf>,
    pub inputs: Option<Value>,
    pub outputs: Option<Value>,
    /// The iteration of each looping scope (retry, while) that held the task when the attempt
    /// began, the outermost first; empty outside loops and for sessions recorded before
    /// iterations were.
    pub iterations: Vec<ScopeIteration>,
    /// Ran (or began) on a server before its mirror followed: the server keeps no task times,
    /// so `started_ms` (and `finished_ms` if it had ended then) is when the mirror learned of
    /// it, not when it ran.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub times_unknown: bool,
    /// What its process was started with; none without a process (and for attempts recorded
    /// before the store kept it). A session's list of attempts leaves it out (`get_session`): one
    /// attempt read alone has it (`get_attempt`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<ProcessEnvironment>,
}

impl Attempt {
    /// How it ended, as it was settled; none while it runs.
    pub fn outcome(&self) -> Option<Outcome> {
        let exit_code = self.exit_code;
        let error = || {
            let missing =
                || ErrorRecord { code: "UNKNOWN".into(), message: "no error was recorded".into(), details: None };
            self.error.clone().unwrap_or_else(missing)
        };
        Some(match self.state {
            AttemptState::Running => return None,
            AttemptState::Succeeded => Outcome::Succeeded {
                exit_code,
                outputs: self.outputs.clone().unwrap_or_else(|| Value::Object(Default::default())),
            },
            AttemptState::Failed => Outcome::Failed { exit_code, error: error() },
            AttemptState::Cancelled => Outcome::Cancelled { exit_code },
            AttemptState::Skipped => Outcome::Skipped,
            AttemptState::Unknown => Outcome::Unknown { error: error() },
        })
    }
}

/// Which pass of a looping scope an attempt ran in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ScopeIteration {
    /// The blueprint instance the scope is declared in.
    pub instance: String,
    /// The id of the scope's start task, which names the scope.
    pub scope: String,
    /// What a person reads: the scope's name, else its start task's id.
    pub name: String,
    /// 1 for the first pass, then 2, 3, ...
    pub iteration: u32,
}

/// A node key `"{instance}.{task}"` split at its last dot: an instance id may hold dots, a task
/// id may not.
pub(crate) fn split_node(node: &str) -> (&str, &str) {
    node.rsplit_once('.').unwrap_or(("", node))
}
