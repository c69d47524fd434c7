//! Tasks executed by antikythera agents over an MQTT broker (docs/format.md §4), and Orrery's
//! built-in agents offered to any orchestrator on a broker ([`agent`]).
//!
//! With [`BrokerOptions`] in the run options, the runner hands a task to the broker's agents
//! when Orrery has no built-in agent for its type, or when its type matches one of
//! [`BrokerOptions::types`] (`system.sleep`, `user_interaction.*`, `*`). `system.start`,
//! `system.end` and `system.composite` always run in the runner: they are the session's own
//! structure. Without a broker nothing changes: built-in agents run as before and an unknown type
//! is refused before the session exists.
//!
//! A task may set its own silence rule with params `agent_timeout_s` (seconds, > 0) and
//! `agent_retries` (an integer >= 0); they are sent to the agents with the other params.

pub mod agent;

use std::sync::Arc;
use std::time::Duration;

use orrery_blueprint::{ErrorCode, Task, TaskType};
use orrery_broker::{Dispatcher, Ending, ExecutionMode, Policy, Progress};
use orrery_store::BrokerDispatch;
use serde_json::{json, Map, Value};

use crate::agents::{self, AgentOutcome, TaskError};

/// How a run reaches the broker's agents.
#[derive(Clone)]
pub struct BrokerOptions {
    pub dispatcher: Arc<Dispatcher>,
    /// Types sent to the broker although Orrery has an agent for them: exact names, or a prefix
    /// ending in `*`.
    pub types: Vec<String>,
    pub policy: Policy,
}

impl std::fmt::Debug for BrokerOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BrokerOptions")
            .field("broker", &self.dispatcher.address().to_string())
            .field("types", &self.types)
            .field("policy", &self.policy)
            .finish()
    }
}

impl BrokerOptions {
    /// True when a task of this type goes to the broker's agents.
    pub fn takes(&self, task_type: &str) -> bool {
        if matches!(task_type, TaskType::START | TaskType::END | TaskType::COMPOSITE) {
            return false;
        }
        !agents::is_known(task_type) || self.types.iter().any(|p| matches_pattern(p, task_type))
    }
}

/// `name` is `pattern`, or starts with its prefix when it ends in `*`.
pub fn matches_pattern(pattern: &str, name: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => pattern == name,
    }
}

/// The `broker_dispatch` event of a step of a task's dispatch, for its attempt.
pub(crate) fn dispatch_event(node: &str, progress: Progress) -> BrokerDispatch {
    let node = node.to_string();
    match progress {
        Progress::Allocated { id, agent } => BrokerDispatch::Allocated { node, assignment: id, agent },
        Progress::Republished { id, n } => BrokerDispatch::Republished { node, assignment: id, n },
        Progress::Silent { agents, id } => BrokerDispatch::Silent { node, agents, assignment: id },
    }
}

/// The task's params by name, as agents receive them.
pub(crate) fn params_of(task: &Task) -> Map<String, Value> {
    task.params.iter().map(|p| (p.io.name.to_string(), p.io.value.clone().unwrap_or(Value::Null))).collect()
}

/// `execution_mode` of a task (EXCLUSIVE unless it says COMPETITIVE).
pub(crate) fn mode_of(task: &Task) -> ExecutionMode {
    match task.param_value("execution_mode").and_then(Value::as_str) {
        Some("COMPETITIVE") => ExecutionMode::Competitive,
        _ => ExecutionMode::Exclusive,
    }
}

/// The run's policy with the task's own `agent_timeout_s` and `agent_retries`.
pub(crate) fn policy_for(task: &Task, base: &Policy) -> Result<Policy, TaskError> {
    let mut policy = base.clone();
    match task.param_value("agent_timeout_s") {
        None | Some(Value::Null) => {}
        Some(v) => {
            let seconds = v.as_f64().filter(|s| s.is_finite() && *s > 0.0).ok_or_else(|| {
                TaskError::binding(
                    "agent_timeout_s",
                    format!("param 'agent_timeout_s' must be a number of seconds > 0, got {v}"),
                )
            })?;
            policy.silence = Some(Duration::from_secs_f64(seconds));
        }
    }
    match task.param_value("agent_retries") {
        None | Some(Value::Null) => {}
        Some(v) => {
            let n = v.as_u64().and_then(|n| u32::try_from(n).ok()).ok_or_else(|| {
                TaskError::binding("agent_retries", format!("param 'agent_retries' must be an integer >= 0, got {v}"))
            })?;
            policy.silence_retries = n;
        }
    }
    Ok(policy)
}

/// How a dispatched task ended, as the runner settles it. The agent that ran it is in the
/// error's details (`agent`); an error code Orrery does not know is kept there too (`code`) and
/// the task fails with `TOOL_FAILURE`.
pub(crate) fn outcome(ending: Ending) -> AgentOutcome {
    match ending {
        Ending::Succeeded { outputs, .. } => AgentOutcome::Succeeded { outputs, exit_code: None },
        Ending::Failed { agent, code, message, details } => {
            let mut facts = Map::new();
            facts.insert("agent".into(), Value::String(agent));
            let known = ErrorCode::parse(&code);
            if known.is_none() {
                facts.insert("code".into(), Value::String(code));
            }
            if let Some(details) = details {
                facts.insert("details".into(), details);
            }
            let error =
                TaskError::new(known.unwrap_or(ErrorCode::ToolFailure), message).with_details(Value::Object(facts));
            AgentOutcome::Failed { error, exit_code: None }
        }
        Ending::TimedOut { agents, after } => {
            let message = format!(
                "the agent{} {} claimed the task and then said nothing for {:.1} s",
                if agents.len() == 1 { "" } else { "s" },
                agents.join(", "),
                after.as_secs_f64()
            );
            let error = TaskError::new(ErrorCode::AgentTimeout, message).with_details(json!({ "agents": agents }));
            AgentOutcome::Failed { error, exit_code: None }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns() {
        assert!(matches_pattern("user_interaction.*", "user_interaction.notify"));
        assert!(matches_pattern("*", "shell.run"));
        assert!(matches_pattern("system.sleep", "system.sleep"));
        assert!(!matches_pattern("system.sleep", "system.sleeps"));
    }

    #[test]
    fn endings_become_outcomes() {
        let failed = outcome(Ending::Failed {
            agent: "a1".into(),
            code: "CUSTOM".into(),
            message: "boom".into(),
            details: Some(json!("trace")),
        });
        let error = failed.error().unwrap();
        assert_eq!(error.code, ErrorCode::ToolFailure);
        assert_eq!(error.details, Some(json!({"agent": "a1", "code": "CUSTOM", "details": "trace"})));
        let claimed = outcome(Ending::Failed {
            agent: "orchestrator".into(),
            code: "NO_AGENT_CLAIMED".into(),
            message: "m".into(),
            details: None,
        });
        assert_eq!(claimed.error().unwrap().code, ErrorCode::NoAgentClaimed);
        let silent = outcome(Ending::TimedOut { agents: vec!["a2".into()], after: Duration::from_millis(1500) });
        let error = silent.error().unwrap();
        assert_eq!(error.code, ErrorCode::AgentTimeout);
        assert_eq!(error.message, "the agent a2 claimed the task and then said nothing for 1.5 s");
    }
}
