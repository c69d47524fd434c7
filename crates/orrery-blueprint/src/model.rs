//! The blueprint as a document (docs/format.md §1-2): what a file says, typed where the
//! reference schema is strict, with every key Orrery does not know kept in `extra` so that a
//! user's data survives a load and save. Validation (see `validate`) judges this document; it
//! does not make invalid documents unrepresentable, because the editor must hold them too.

pub use compact_str::CompactString;
use indexmap::IndexMap;
use serde_json::Value;
use std::fmt;

/// Keys of an object that Orrery does not model, in file order. Nearly always none: then it
/// takes one pointer, not a map (a 100,000-task blueprint has about 650,000 of them).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Extra(Option<Box<IndexMap<String, Value>>>);

impl Extra {
    pub fn new() -> Extra {
        Extra(None)
    }

    /// Sets `key`; the value it had, if any.
    pub fn insert(&mut self, key: String, value: Value) -> Option<Value> {
        self.0.get_or_insert_with(Default::default).insert(key, value)
    }
}

impl std::ops::Deref for Extra {
    type Target = IndexMap<String, Value>;
    fn deref(&self) -> &IndexMap<String, Value> {
        static NONE: std::sync::LazyLock<IndexMap<String, Value>> = std::sync::LazyLock::new(IndexMap::new);
        self.0.as_deref().unwrap_or(&NONE)
    }
}

impl FromIterator<(String, Value)> for Extra {
    fn from_iter<I: IntoIterator<Item = (String, Value)>>(items: I) -> Extra {
        let map: IndexMap<String, Value> = items.into_iter().collect();
        Extra((!map.is_empty()).then(|| Box::new(map)))
    }
}

impl<'a> IntoIterator for &'a Extra {
    type Item = (&'a String, &'a Value);
    type IntoIter = indexmap::map::Iter<'a, String, Value>;
    fn into_iter(self) -> Self::IntoIter {
        (**self).iter()
    }
}

/// A whole blueprint file.
#[derive(Debug, Clone, PartialEq)]
pub struct Blueprint {
    pub id: String,
    pub name: String,
    /// The version text as written (PEP 440; its major must be 1).
    pub version: String,
    pub description: Option<String>,
    pub tasks: Vec<Task>,
    pub extra: Extra,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Task {
    pub id: CompactString,
    pub task_type: TaskType,
    pub description: Option<String>,
    pub condition: Option<String>,
    pub scope_start: Option<Box<ScopeStart>>,
    pub scope_end: Option<CompactString>,
    pub inputs: Vec<TaskInput>,
    pub outputs: Vec<TaskOutput>,
    pub params: Vec<TaskParam>,
    pub depends_on: Vec<Dependency>,
    /// Only present in session snapshots.
    pub state: Option<TaskState>,
    pub extra: Extra,
}

/// `"{agent_type}.{tool}"`; the tool part may contain dots.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TaskType(pub CompactString);

impl TaskType {
    pub const START: &'static str = "system.start";
    pub const END: &'static str = "system.end";
    pub const SLEEP: &'static str = "system.sleep";
    pub const COMPOSITE: &'static str = "system.composite";
    pub const SHELL: &'static str = "shell.run";
    pub const NOTIFY: &'static str = "user_interaction.notify";
    pub const USER_OUTPUT: &'static str = "user_interaction.user_output";
    pub const USER_INPUT: &'static str = "user_interaction.user_input";
    pub const CONFIRM: &'static str = "user_prompt.confirm";

    pub fn as_str(&self) -> &str {
        &self.0
    }
    pub fn is_start(&self) -> bool {
        self.0 == Self::START
    }
    pub fn is_end(&self) -> bool {
        self.0 == Self::END
    }
    pub fn is_composite(&self) -> bool {
        self.0 == Self::COMPOSITE
    }
}

impl fmt::Display for TaskType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The fields every IO item (input, output, param) shares.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Io {
    pub name: CompactString,
    /// `None` when the key is absent; `Some(Value::Null)` is never stored (null is left out).
    pub value: Option<Value>,
    pub type_hint: Option<CompactString>,
    /// The description and the unknown keys, which nearly no item has: then one pointer, not
    /// 32 bytes (a 100,000-task blueprint has some 400,000 items). Never `Some` of neither.
    rare: Option<Box<IoRare>>,
}

#[derive(Debug, Clone, PartialEq)]
struct IoRare {
    description: Option<String>,
    extra: Extra,
}

impl Io {
    pub fn new(
        name: CompactString,
        value: Option<Value>,
        type_hint: Option<CompactString>,
        description: Option<String>,
        extra: Extra,
    ) -> Io {
        let rare = (description.is_some() || !extra.is_empty()).then(|| Box::new(IoRare { description, extra }));
        Io { name, value, type_hint, rare }
    }

    pub fn description(&self) -> Option<&str> {
        self.rare.as_ref()?.description.as_deref()
    }

    /// Keys the reference parser does not know; it refuses the blueprint for them.
    pub fn extra(&self) -> &Extra {
        static NONE: Extra = Extra(None);
        self.rare.as_ref().map_or(&NONE, |rare| &rare.extra)
    }
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct TaskInput {
    pub io: Io,
    pub get_from: Option<CompactString>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct TaskOutput {
    pub io: Io,
    pub set_to: Option<CompactString>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct TaskParam {
    pub io: Io,
}

impl TaskInput {
    /// The session-data key this input reads.
    pub fn source_key(&self) -> &str {
        self.get_from.as_deref().filter(|k| !k.is_empty()).unwrap_or(&self.io.name)
    }
}

impl TaskOutput {
    /// The session-data key this output writes.
    pub fn target_key(&self) -> &str {
        self.set_to.as_deref().filter(|k| !k.is_empty()).unwrap_or(&self.io.name)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Dependency {
    pub id: CompactString,
    pub dep_type: DependencyType,
    pub extra: Extra,
}

/// How a dependency constrains its task (docs/format.md §4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub enum DependencyType {
    /// Finish to start: the task starts after the predecessor finished (or was skipped).
    #[default]
    FS,
    /// Start to start: the task starts once the predecessor has started.
    SS,
    /// Finish to finish: the task may finish only after the predecessor finished.
    FF,
    /// Start to finish: the task may finish only after the predecessor started. Not run by
    /// the reference: not portable.
    SF,
}

impl DependencyType {
    /// In the order an editor offers them (clicking a dependency takes the next one).
    pub const ALL: [DependencyType; 4] = [Self::FS, Self::SS, Self::FF, Self::SF];
    pub fn as_str(self) -> &'static str {
        match self {
            Self::FS => "FS",
            Self::FF => "FF",
            Self::SS => "SS",
            Self::SF => "SF",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.as_str() == s)
    }
}

/// A dependency type is its text on the wire.
impl schemars::JsonSchema for DependencyType {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "DependencyType".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let names: Vec<&str> = Self::ALL.iter().map(|t| t.as_str()).collect();
        schemars::json_schema!({ "type": "string", "enum": names })
    }
}

/// A task that opens a scope. Policy precedence is retry, then while, else skip; a file may
/// declare both policies (the reference then ignores the while policy), so both are kept.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ScopeStart {
    pub name: Option<String>,
    pub retry_policy: Option<RetryPolicy>,
    pub while_policy: Option<WhilePolicy>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    pub retries: u64,
    pub backoff: Option<Backoff>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Backoff {
    pub constant_ms: Option<u64>,
    pub extra: Extra,
}

#[derive(Debug, Clone, PartialEq)]
pub struct WhilePolicy {
    pub condition: String,
    pub max_iterations: Option<u64>,
}

/// The policy that decides what a scope does when its end task succeeds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ScopePolicy<'a> {
    /// Run once; a false condition on the start task skips the whole scope.
    Skip,
    /// Run `1 + retries` times, unconditionally.
    Retry(&'a RetryPolicy),
    /// Loop while the condition holds, at most `max_iterations` runs in all.
    While(&'a WhilePolicy),
}

impl ScopeStart {
    pub fn policy(&self) -> ScopePolicy<'_> {
        match (&self.retry_policy, &self.while_policy) {
            (Some(retry), _) => ScopePolicy::Retry(retry),
            (None, Some(w)) => ScopePolicy::While(w),
            (None, None) => ScopePolicy::Skip,
        }
    }
}

/// A task state, spelled as antikythera spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum TaskState {
    Unspecified,
    Pending,
    Ready,
    Running,
    Succeeded,
    Failed,
    Skipped,
    SkipRequested,
}

impl TaskState {
    pub const ALL: [TaskState; 8] = [
        Self::Unspecified,
        Self::Pending,
        Self::Ready,
        Self::Running,
        Self::Succeeded,
        Self::Failed,
        Self::Skipped,
        Self::SkipRequested,
    ];
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Unspecified => "UNSPECIFIED",
            Self::Pending => "PENDING",
            Self::Ready => "READY",
            Self::Running => "RUNNING",
            Self::Succeeded => "SUCCEEDED",
            Self::Failed => "FAILED",
            Self::Skipped => "SKIPPED",
            Self::SkipRequested => "SKIP_REQUESTED",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.as_str() == s)
    }
    /// Whether the reference schema allows this state in a file (it omits SKIP_REQUESTED).
    pub fn in_schema(self) -> bool {
        self != Self::SkipRequested
    }
}

/// Session states, lowercase on the wire; pause is `Stopped`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SessionState {
    Pending,
    Running,
    Completed,
    Failed,
    Stopped,
}

impl SessionState {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Running => "running",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Stopped => "stopped",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        [Self::Pending, Self::Running, Self::Completed, Self::Failed, Self::Stopped]
            .into_iter()
            .find(|t| t.as_str() == s)
    }
}

/// How an assignment is allocated among the agents that claim it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ExecutionMode {
    /// The first claim wins.
    #[default]
    Exclusive,
    /// Every claim is allocated.
    Competitive,
}

impl ExecutionMode {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Exclusive => "EXCLUSIVE",
            Self::Competitive => "COMPETITIVE",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "EXCLUSIVE" => Some(Self::Exclusive),
            "COMPETITIVE" => Some(Self::Competitive),
            _ => None,
        }
    }
}

/// Error codes of failed tasks and sessions (docs/format.md §2), and Orrery's own
/// `AGENT_TIMEOUT` (an agent on the broker claimed a task, then went silent).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[schemars(rename = "TaskErrorCode")]
pub enum ErrorCode {
    ToolBindingError,
    ToolFailure,
    LauncherFailure,
    NoAgentClaimed,
    TaskFailed,
    TaskDispatchFailed,
    ScopeConditionError,
    AgentTimeout,
}

impl ErrorCode {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ToolBindingError => "TOOL_BINDING_ERROR",
            Self::ToolFailure => "TOOL_FAILURE",
            Self::LauncherFailure => "LAUNCHER_FAILURE",
            Self::NoAgentClaimed => "NO_AGENT_CLAIMED",
            Self::TaskFailed => "TASK_FAILED",
            Self::TaskDispatchFailed => "TASK_DISPATCH_FAILED",
            Self::ScopeConditionError => "SCOPE_CONDITION_ERROR",
            Self::AgentTimeout => "AGENT_TIMEOUT",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        [
            Self::ToolBindingError,
            Self::ToolFailure,
            Self::LauncherFailure,
            Self::NoAgentClaimed,
            Self::TaskFailed,
            Self::TaskDispatchFailed,
            Self::ScopeConditionError,
            Self::AgentTimeout,
        ]
        .into_iter()
        .find(|c| c.as_str() == s)
    }
}

/// The `blueprint` param of a composite task.
#[derive(Debug, Clone, PartialEq)]
pub enum CompositeTarget {
    /// `{"static": "<blueprint id>"}`
    Static { blueprint_id: String },
    /// `{"dynamic": {"blueprint_id", "sequencer"}}`, expanded once per element at session start.
    Dynamic { blueprint_id: String, sequencer: Sequencer },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sequencer {
    Basic,
    BasicStock,
    BasicElement,
}

impl Sequencer {
    pub const ALL: [Sequencer; 3] = [Self::Basic, Self::BasicStock, Self::BasicElement];
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Basic => "basic_sequencer",
            Self::BasicStock => "basic_stock_sequencer",
            Self::BasicElement => "basic_element_sequencer",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|q| q.as_str() == s)
    }
}

/// A sequencer is its text on the wire.
impl schemars::JsonSchema for Sequencer {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Sequencer".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let names: Vec<&str> = Self::ALL.iter().map(|q| q.as_str()).collect();
        schemars::json_schema!({ "type": "string", "enum": names })
    }
}

impl CompositeTarget {
    pub fn blueprint_id(&self) -> &str {
        match self {
            Self::Static { blueprint_id } | Self::Dynamic { blueprint_id, .. } => blueprint_id,
        }
    }
}

impl Task {
    /// Every IO item with its list name and position: inputs, then outputs, then params.
    pub fn io_items(&self) -> impl Iterator<Item = (&'static str, usize, &Io)> {
        let inputs = self.inputs.iter().enumerate().map(|(j, x)| ("inputs", j, &x.io));
        let outputs = self.outputs.iter().enumerate().map(|(j, x)| ("outputs", j, &x.io));
        let params = self.params.iter().enumerate().map(|(j, x)| ("params", j, &x.io));
        inputs.chain(outputs).chain(params)
    }

    pub fn param(&self, name: &str) -> Option<&TaskParam> {
        self.params.iter().find(|p| p.io.name == name)
    }

    pub fn param_value(&self, name: &str) -> Option<&Value> {
        self.param(name).and_then(|p| p.io.value.as_ref())
    }

    /// The condition the reference checks: the `condition` field, or (for old files) a param
    /// named `condition` when the field is absent or empty. Only strings count. An empty param
    /// string is returned (the reference's dataflow check calls it unparsable) although the
    /// engine never evaluates an empty condition.
    pub fn effective_condition(&self) -> Option<(&str, ConditionSource)> {
        match self.condition.as_deref() {
            Some(c) if !c.is_empty() => Some((c, ConditionSource::Field)),
            _ => match self.param_value("condition") {
                Some(Value::String(c)) => Some((c, ConditionSource::Param)),
                _ => None,
            },
        }
    }

    pub fn while_condition(&self) -> Option<&str> {
        self.scope_start.as_ref()?.while_policy.as_ref().map(|w| w.condition.as_str())
    }
}

/// Where a task's condition was declared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConditionSource {
    Field,
    Param,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_io_item_keeps_its_rare_fields_apart_and_none_when_it_has_neither() {
        let plain = Io::new("a".into(), Some(Value::from(1)), None, None, Extra::new());
        assert_eq!(plain, Io { name: "a".into(), value: Some(Value::from(1)), ..Io::default() });
        assert!(plain.rare.is_none() && plain.description().is_none() && plain.extra().is_empty());
        let extra: Extra = [("unit".to_string(), Value::from("mm"))].into_iter().collect();
        let rare = Io::new("a".into(), None, None, Some("d".into()), extra.clone());
        assert_eq!((rare.description(), rare.extra()), (Some("d"), &extra));
        // The description and the unknown keys take one pointer, not 32 bytes.
        assert_eq!(size_of::<Io>(), size_of::<CompactString>() * 2 + size_of::<Option<Value>>() + 8);
    }
}
