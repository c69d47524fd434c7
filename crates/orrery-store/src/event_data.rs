//! What each kind of event says: one variant of [`EventData`] per kind anyone appends, with its
//! own struct. It lives in the store, below the engine and the facade, so that every writer
//! builds a variant and every reader matches one; a kind is named once, here.
//!
//! The stored form is the kind's name as text beside the data's JSON (see `events.rs`), so a
//! row of a kind this build does not know, or whose JSON its kind's struct does not read (an
//! older or newer Orrery wrote it), is kept as [`crate::EventPayload::Unknown`] rather than lost.

use std::collections::BTreeMap;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::records::{Attempt, ErrorRecord, SessionState, StepState, TaskState};

/// Declares [`EventData`] and [`EventKind`] from one list, so that a kind's name, its variant
/// and its struct cannot disagree.
macro_rules! event_kinds {
    ($($(#[$doc:meta])* $variant:ident($data:ty) = $name:literal,)*) => {
        /// The data of an event, by kind.
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[serde(tag = "kind", content = "value")]
        pub enum EventData {
            $($(#[$doc])* #[serde(rename = $name)] $variant($data),)*
        }

        /// The kinds of [`EventData`], without their data: what a query by kind names.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum EventKind {
            $($variant,)*
        }

        impl EventKind {
            pub const ALL: &'static [EventKind] = &[$(EventKind::$variant,)*];

            /// The name the store keeps and the wire carries.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(EventKind::$variant => $name,)*
                }
            }
        }

        impl EventData {
            pub fn kind(&self) -> EventKind {
                match self {
                    $(EventData::$variant(_) => EventKind::$variant,)*
                }
            }
        }

        /// Each kind's name with the schema of its data.
        pub(crate) fn data_schemas(generator: &mut SchemaGenerator) -> Vec<(&'static str, Schema)> {
            vec![$(($name, generator.subschema_for::<$data>()),)*]
        }
    };
}

event_kinds! {
    /// A session was made (a run, a restart, a mirror).
    SessionCreated(SessionCreated) = "session_created",
    SessionStateChanged(SessionStateChanged) = "session_state_changed",
    TaskStateChanged(TaskStateChanged) = "task_state_changed",
    /// An attempt began: its row as it began.
    AttemptStarted(Attempt) = "attempt_started",
    /// An attempt ended: its row as it settled (state, finish, exit code, error, outputs).
    AttemptSettled(Attempt) = "attempt_settled",
    /// A progress step of an attempt changed.
    Progress(ProgressChanged) = "progress",
    /// Values of the session's data were written.
    DataUpdated(DataUpdated) = "data_updated",
    /// A prompt task waits for an answer.
    PromptWaiting(PromptWaiting) = "prompt_waiting",
    /// A prompt's answer was taken (a refused one fails the task instead).
    PromptAnswered(PromptAnswered) = "prompt_answered",
    /// A display task showed something.
    Notification(NotificationShown) = "notification",
    /// A task was held at a breakpoint, or let go: the tasks held now.
    Breakpoints(BreakpointHolds) = "breakpoints",
    /// A person set a value of the session's data (at a breakpoint).
    DataEdited(DataEdit) = "data_edited",
    /// The inner blueprint versions a session runs, appended right after its creation.
    SessionBlueprints(SessionBlueprints) = "session_blueprints",
    /// A step of a task's dispatch over the broker.
    BrokerDispatch(BrokerDispatch) = "broker_dispatch",
    /// An attempt's log reached its cap; the rest of its output was dropped.
    LogCapped(LogCapped) = "log_capped",
    /// An attempt's log grew (transient: announced, never stored).
    LogGrew(LogGrew) = "log_grew",
    /// Whether a mirror's server answers.
    RemoteLink(RemoteLinkChanged) = "remote_link",
}

impl EventKind {
    /// The kind named `name`, if this build knows it.
    pub fn from_name(name: &str) -> Option<EventKind> {
        EventKind::ALL.iter().copied().find(|k| k.as_str() == name)
    }
}

impl EventData {
    /// The kind's name and the data's JSON, as the store keeps them.
    pub(crate) fn to_parts(&self) -> (&'static str, Value) {
        let kind = self.kind().as_str();
        let value = match serde_json::to_value(self) {
            Ok(Value::Object(mut tagged)) => tagged.remove("value").unwrap_or(Value::Null),
            // Every variant holds a struct of plain fields: nothing here fails to serialize.
            _ => Value::Null,
        };
        (kind, value)
    }

    /// The data of kind `kind` read from `value`; `None` when the kind is not one of this
    /// build's or `value` is not its kind's shape.
    pub(crate) fn from_parts(kind: &str, value: &Value) -> Option<EventData> {
        EventKind::from_name(kind)?;
        let mut tagged = Map::new();
        tagged.insert("kind".into(), Value::String(kind.to_string()));
        tagged.insert("value".into(), value.clone());
        serde_json::from_value(Value::Object(tagged)).ok()
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionCreated {
    pub blueprint_hash: String,
    pub blueprint_id: String,
    pub name: String,
    /// The session it runs over again, when it is a restart.
    #[serde(default)]
    pub restarted_from: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionStateChanged {
    pub state: SessionState,
    /// Why it failed or stopped, when it says.
    #[serde(default)]
    pub error: Option<ErrorRecord>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TaskStateChanged {
    /// `{instance}.{task}`.
    pub node: String,
    /// The instance the task is in.
    pub blueprint_id: String,
    pub task_id: String,
    pub state: TaskState,
    /// None for the first state the task is given.
    #[serde(default)]
    pub previous: Option<TaskState>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ProgressChanged {
    pub step: String,
    pub state: StepState,
    #[serde(default)]
    pub percentage: Option<u8>,
    /// The step that was in progress and was completed by this one starting.
    #[serde(default)]
    pub auto_completed: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DataUpdated {
    /// The keys written, by instance.
    pub keys: BTreeMap<String, Vec<String>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PromptWaiting {
    pub node: String,
    pub task: String,
    #[serde(rename = "type")]
    pub task_type: String,
    pub message: String,
    /// The outputs the answer becomes.
    pub outputs: Vec<String>,
    #[serde(default)]
    pub inputs: Map<String, Value>,
    /// The answers it takes, when it lists them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<Value>,
}

/// Where a session holds at its breakpoints (Orrery's own): every task held now, after the
/// change `what` (`"held"`, how one was let go: `"continue"`, `"step"`, `"skip"`, or a breakpoint
/// `"set"` or `"cleared"` while it runs) of `node`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BreakpointHolds {
    pub node: String,
    pub what: String,
    pub held: Vec<HeldTask>,
    /// The breakpoints of the run now: where each task holds (`before` it starts, `after` it
    /// ends).
    #[serde(default)]
    pub breakpoints: Vec<HeldTask>,
}

/// A value of a session's data set by a person: an intervention, kept with what it replaced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DataEdit {
    pub id: i64,
    pub instance: String,
    pub key: String,
    /// The value it replaced; none when the key held nothing.
    pub old: Option<Value>,
    pub new: Value,
    pub time_ms: i64,
    /// Who set it: the agent that asked, or `user`.
    pub by: String,
}

/// A task held at a breakpoint: before it starts, or after it ended (nothing after it starts).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct HeldTask {
    pub node: String,
    /// `"before"` or `"after"`.
    pub at: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PromptAnswered {
    pub node: String,
    /// The outputs the answer became.
    pub outputs: Map<String, Value>,
}

/// What a display task showed: `title`, `message` and `level` for `user_interaction.notify`,
/// `values` (its inputs) for `user_interaction.user_output`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct NotificationShown {
    pub node: String,
    pub task: String,
    #[serde(rename = "type")]
    pub task_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// As the task gave it (`"info"` unless it says).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub values: Option<Map<String, Value>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionBlueprints {
    /// The hash of each inner blueprint's version, by blueprint id.
    pub inner: BTreeMap<String, String>,
}

/// A step of a task's dispatch over the broker; `assignment` is the id it goes out under.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "step", rename_all = "snake_case")]
pub enum BrokerDispatch {
    /// An agent claimed it and was given it.
    Allocated { node: String, assignment: String, agent: String },
    /// Unclaimed, published again (`n` counts the re-publications of this assignment).
    Republished { node: String, assignment: String, n: u32 },
    /// The allocated agents went silent: it went out again as a new assignment.
    Silent { node: String, agents: Vec<String>, assignment: String },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LogCapped {
    pub cap_bytes: u64,
    pub dropped_bytes: u64,
    pub node: String,
}

/// The new size of an attempt's log, with the bytes it grew by when they are few.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LogGrew {
    pub node: String,
    pub attempt: u32,
    pub file_size: u64,
    /// The offset `text` starts at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<u64>,
    /// The growth, whole characters only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RemoteLinkChanged {
    pub reachable: bool,
    /// The server's address.
    #[serde(default)]
    pub url: String,
    /// Why it does not answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}
