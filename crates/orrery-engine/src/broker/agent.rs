//! Orrery as an antikythera agent (`orrery agent --broker URL`): offers Orrery's built-in task
//! types to any orchestrator on the broker, a reference server or another Orrery.
//!
//! It speaks the reference launcher's side of the protocol: an assignment of a type it offers is
//! claimed; an allocation naming it runs the task (`shell.run` as a process group with its log in
//! the work dir, `system.sleep`, the display types, and the structural `system.start|end|
//! composite` as the reference's system agent answers them); the completion carries the outputs
//! or the task's error (`TOOL_BINDING_ERROR`, `TOOL_FAILURE`, ...). An ack that accepts another
//! agent cancels its run (a COMPETITIVE loser, or a cancel), without a completion.
//!
//! Beyond the reference: while a task runs, a `TaskStatusUpdateMessage` (RUNNING) goes out on
//! `antikythera/task/status` every [`AgentOptions::heartbeat`], so that an Orrery orchestrator
//! tells a long task from a dead agent. Prompts (`user_interaction.user_input`,
//! `user_prompt.confirm`) are not offered: nobody stands at an agent to answer them.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use orrery_blueprint::{ErrorCode, Extra, Io, Task, TaskOutput, TaskParam, TaskType};
use orrery_broker::wire::{self, Message, TaskAssignmentMessage, TaskState};
use orrery_broker::{BrokerAddress, Bus, BusError, BusEvent, Topic};
use serde_json::{json, Map, Value};
use tokio::sync::mpsc;

use crate::agents::interaction::{self, Interaction};
use crate::agents::{self, shell, AgentOutcome, TaskError};
use crate::process::Canceller;

#[derive(Debug, Clone)]
pub struct AgentOptions {
    /// The agent's id on the broker (claims and completions carry it).
    pub id: String,
    /// The types it offers: names or prefixes ending in `*`; empty: every type of [`offered`].
    pub types: Vec<String>,
    /// Where `shell.run` attempts keep their files: `{work_dir}/{assignment id}.run-{n}.log`, ...
    pub work_dir: PathBuf,
    pub heartbeat: Duration,
}

/// What the agent did, for its operator.
#[derive(Debug, Clone, PartialEq)]
pub enum AgentNote {
    Connected,
    Lost(String),
    Claimed {
        id: String,
        task_type: String,
    },
    Started {
        id: String,
        task_type: String,
    },
    Finished {
        id: String,
        state: &'static str,
        error: Option<String>,
    },
    Cancelled {
        id: String,
    },
    /// A message on a protocol topic that could not be read.
    Unreadable(String),
}

/// The built-in types an agent may offer: all but the prompts.
pub fn offered() -> Vec<&'static str> {
    agents::known_type_names()
        .into_iter()
        .filter(|t| interaction::interaction(t) != Some(Interaction::Prompt))
        .collect()
}

impl AgentOptions {
    fn offers(&self, task_type: &str) -> bool {
        offered().contains(&task_type)
            && (self.types.is_empty() || self.types.iter().any(|p| super::matches_pattern(p, task_type)))
    }

    /// The types this agent claims.
    pub fn offering(&self) -> Vec<&'static str> {
        offered().into_iter().filter(|t| self.offers(t)).collect()
    }
}

/// An allocated task in progress.
struct Running {
    /// Aborts a run without a process; a process is stopped by its canceller.
    handle: tokio::task::AbortHandle,
    canceller: Option<Canceller>,
}

enum Internal {
    Started { id: String, canceller: Canceller },
    Done { id: String, completion: wire::TaskCompletionMessage },
}

/// Claims the assignments pending an allocation are kept this long.
const CLAIM_KEPT: Duration = Duration::from_secs(600);

/// Serves tasks until the connection is closed for good; answers only if the broker cannot be
/// reached at first.
pub async fn serve(
    address: &BrokerAddress,
    options: AgentOptions,
    mut on_note: impl FnMut(AgentNote),
) -> Result<(), BusError> {
    let (bus, mut events) = Bus::connect(address, &options.id, &[Topic::Start, Topic::Allocation, Topic::Ack]).await?;
    on_note(AgentNote::Connected);
    let (tx, mut rx) = mpsc::unbounded_channel::<Internal>();
    let mut claimed: HashMap<String, (Instant, TaskAssignmentMessage)> = HashMap::new();
    let mut running: HashMap<String, Running> = HashMap::new();
    // Numbers the runs, so that a task run again (the reference reuses ids) keeps its old files.
    let mut runs = 0u64;
    let mut heartbeat = tokio::time::interval(options.heartbeat);
    heartbeat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            event = events.recv() => {
                let Some(event) = event else { return Ok(()) };
                match event {
                    BusEvent::Connected => on_note(AgentNote::Connected),
                    BusEvent::Lost(reason) => on_note(AgentNote::Lost(reason)),
                    BusEvent::Unreadable { topic, error } => on_note(AgentNote::Unreadable(format!("{}: {error}", topic.name()))),
                    BusEvent::Message(_, Message::Assignment(a)) => {
                        claimed.retain(|_, (at, _)| at.elapsed() < CLAIM_KEPT);
                        if !options.offers(&a.task_type) || running.contains_key(&a.id) {
                            continue;
                        }
                        let claim = wire::TaskClaimRequest { task_id: a.id.clone(), agent_id: options.id.clone(), timestamp: Some(wire::now()) };
                        on_note(AgentNote::Claimed { id: a.id.clone(), task_type: a.task_type.clone() });
                        claimed.insert(a.id.clone(), (Instant::now(), a));
                        bus.publish(Topic::Claim, &Message::Claim(claim)).await?;
                    }
                    BusEvent::Message(_, Message::Allocation(al)) => {
                        if al.assigned_agent_id != options.id {
                            continue;
                        }
                        let Some((_, a)) = claimed.remove(&al.task_id) else { continue };
                        on_note(AgentNote::Started { id: a.id.clone(), task_type: a.task_type.clone() });
                        let id = a.id.clone();
                        runs += 1;
                        let stem = options.work_dir.join(format!("{}.run-{runs}", file_stem(&a.id)));
                        let handle = tokio::spawn(execute(a, options.id.clone(), stem, tx.clone()));
                        running.insert(id, Running { handle: handle.abort_handle(), canceller: None });
                    }
                    BusEvent::Message(_, Message::Ack(ack)) => {
                        claimed.remove(&ack.id);
                        if ack.accepted_agent_id == options.id {
                            continue;
                        }
                        if let Some(run) = running.remove(&ack.id) {
                            match run.canceller {
                                Some(canceller) => canceller.cancel(),
                                None => run.handle.abort(),
                            }
                            on_note(AgentNote::Cancelled { id: ack.id });
                        }
                    }
                    BusEvent::Message(..) => {}
                }
            }
            Some(internal) = rx.recv() => match internal {
                Internal::Started { id, canceller } => match running.get_mut(&id) {
                    Some(run) => run.canceller = Some(canceller),
                    None => canceller.cancel(),
                },
                Internal::Done { id, completion } => {
                    // A run cancelled meanwhile sends nothing (the reference's agents neither).
                    if running.remove(&id).is_none() {
                        continue;
                    }
                    let state = if completion.state == TaskState::Succeeded as i32 { "SUCCEEDED" } else { "FAILED" };
                    let error = completion.error.as_ref().map(|e| format!("{}: {}", e.code, e.message));
                    bus.publish(Topic::Completed, &Message::Completion(completion)).await?;
                    on_note(AgentNote::Finished { id, state, error });
                }
            },
            _ = heartbeat.tick() => {
                for id in running.keys() {
                    let status = wire::TaskStatusUpdateMessage {
                        id: id.clone(),
                        state: TaskState::Running as i32,
                        agent_id: options.id.clone(),
                        data: None,
                        timestamp: Some(wire::now()),
                    };
                    bus.publish(Topic::Status, &Message::Status(status)).await?;
                }
            }
        }
    }
}

/// Runs one allocated task and sends its completion. A `shell.run` keeps its files at `stem`.
async fn execute(a: TaskAssignmentMessage, agent_id: String, stem: PathBuf, tx: mpsc::UnboundedSender<Internal>) {
    let started = Instant::now();
    let outcome = match values(&a) {
        Ok((inputs, params, context)) => run(&a, inputs, params, context, stem, &tx).await,
        Err(error) => AgentOutcome::Failed { error, exit_code: None },
    };
    let (state, outputs, error) = match outcome {
        AgentOutcome::Succeeded { outputs, .. } => (TaskState::Succeeded, outputs, None),
        AgentOutcome::Failed { error, .. } | AgentOutcome::TimedOut { error, .. } => {
            (TaskState::Failed, Map::new(), Some(error))
        }
        AgentOutcome::Cancelled { .. } => return,
    };
    let completion = wire::TaskCompletionMessage {
        id: a.id.clone(),
        state: state as i32,
        agent_id,
        outputs: wire::to_values(&outputs),
        error: error.map(|e| wire::TaskError {
            code: e.code.as_str().to_string(),
            message: e.message,
            details: e.details.as_ref().map(wire::to_any),
        }),
        timestamp: Some(wire::now()),
        duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
    };
    let _ = tx.send(Internal::Done { id: a.id, completion });
}

type Maps = (Map<String, Value>, Map<String, Value>, Map<String, Value>);

fn values(a: &TaskAssignmentMessage) -> Result<Maps, TaskError> {
    let read = |values: &wire::Values, field: &str| {
        wire::from_values(values, field).map_err(|e| TaskError::new(ErrorCode::ToolBindingError, e.to_string()))
    };
    Ok((read(&a.inputs, "inputs")?, read(&a.params, "params")?, read(&a.context, "context")?))
}

/// The assignment as a task, for the display helpers.
fn task_of(a: &TaskAssignmentMessage, params: &Map<String, Value>) -> Task {
    let io = |name: &str, value: Option<Value>| Io::new(name.into(), value, None, None, Extra::new());
    Task {
        id: a.id.as_str().into(),
        task_type: TaskType(a.task_type.as_str().into()),
        description: None,
        condition: None,
        scope_start: None,
        scope_end: None,
        inputs: Vec::new(),
        outputs: a.output_keys.iter().map(|k| TaskOutput { io: io(k, None), set_to: None }).collect(),
        params: params.iter().map(|(k, v)| TaskParam { io: io(k, Some(v.clone())) }).collect(),
        depends_on: Vec::new(),
        state: None,
        extra: Default::default(),
    }
}

async fn run(
    a: &TaskAssignmentMessage,
    inputs: Map<String, Value>,
    params: Map<String, Value>,
    context: Map<String, Value>,
    stem: PathBuf,
    tx: &mpsc::UnboundedSender<Internal>,
) -> AgentOutcome {
    let succeeded = |outputs: Map<String, Value>| AgentOutcome::Succeeded { outputs, exit_code: None };
    let now = || std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_secs_f64();
    match a.task_type.as_str() {
        TaskType::START => succeeded(json!({ "process_start_time": now() }).as_object().cloned().unwrap_or_default()),
        TaskType::END => succeeded(json!({ "process_end_time": now() }).as_object().cloned().unwrap_or_default()),
        // As the reference's system agent: the declared outputs, null (the orchestrator fills them).
        TaskType::COMPOSITE => succeeded(a.output_keys.iter().map(|k| (k.clone(), Value::Null)).collect()),
        TaskType::SLEEP => {
            let seconds = match params.get("duration") {
                None | Some(Value::Null) => 1.0,
                Some(v) => match v.as_f64().filter(|s| s.is_finite() && *s >= 0.0) {
                    Some(s) => s,
                    None => {
                        let message = format!("param 'duration' must be a number of seconds >= 0, got {v}");
                        return AgentOutcome::Failed {
                            error: TaskError::binding("duration", message),
                            exit_code: None,
                        };
                    }
                },
            };
            tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
            succeeded(Map::new())
        }
        shell::TYPE => {
            let log_path = shell::attempt_file(&stem, "log");
            let attempt = shell::ShellAttempt::new(params, inputs, stem, log_path);
            let (id, tx) = (a.id.clone(), tx.clone());
            shell::run(
                attempt,
                move |started| {
                    let _ = tx.send(Internal::Started { id, canceller: started.canceller });
                },
                |_| {},
            )
            .await
        }
        _ => {
            let task = task_of(a, &params);
            let (shown, outputs) = interaction::display(&a.id, &task, &inputs, &context);
            println!("{}", serde_json::to_string(&shown).unwrap_or_default());
            succeeded(outputs)
        }
    }
}

/// An assignment id as a file name: `fsio::file_name`, which keeps it in the work dir, bounds
/// its length and gives distinct ids distinct names.
fn file_stem(id: &str) -> String {
    orrery_blueprint::fsio::file_name(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offers_built_ins_but_prompts() {
        let all = offered();
        assert!(
            all.contains(&"shell.run") && all.contains(&"system.sleep") && all.contains(&"user_interaction.notify")
        );
        assert!(!all.contains(&"user_prompt.confirm") && !all.contains(&"user_interaction.user_input"));
        let only_shell = AgentOptions {
            id: "a".into(),
            types: vec!["shell.*".into()],
            work_dir: PathBuf::new(),
            heartbeat: Duration::from_secs(1),
        };
        assert!(only_shell.offers("shell.run") && !only_shell.offers("system.sleep"));
        assert_eq!(file_stem("bp.t@r/1#2"), "bp.t%40r%2F1%232");
        assert_ne!(file_stem("bp.t@r/1#2"), file_stem("bp.t_r_1_2"));
        assert_eq!(file_stem(".."), "%2E.");
    }
}
