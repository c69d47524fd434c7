//! The value types that the store's tables and its events share: an attempt's id, state and
//! outcome, a step's state, an error record, a mirror's link, and the task and session states
//! of `orrery-blueprint`. Apart from the tables' modules so that the event data, the journal
//! and every table can name them without importing one another.

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use orrery_blueprint::{SessionState, TaskState};

/// `{code, message, details}`, the error shape at every boundary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ErrorRecord {
    pub code: String,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
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
