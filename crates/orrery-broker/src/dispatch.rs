//! The orchestrator's side of the agent protocol: hand one task to the agents on the broker and
//! wait for its end (docs/format.md §4).
//!
//! [`Dispatcher::execute`] publishes the assignment on `antikythera/task/start`; an agent whose
//! tool matches claims it; the dispatcher allocates (EXCLUSIVE: the first claim only;
//! COMPETITIVE: every claim until a completion lands); the first completion from an allocated
//! agent ends the task and is acknowledged naming that agent, which makes every other agent
//! still running it cancel. An unclaimed assignment is published again after 2 s, doubling up to
//! 90 s, 5 times; then the task fails with `NO_AGENT_CLAIMED` (the reference's rule).
//!
//! Beyond the reference:
//! - **No cross-talk.** Every assignment id is unique (the runner gives `{node}@{run id}`), and a
//!   message is only routed to the task whose id it names: two sessions, or two runs of one
//!   blueprint, never see each other's claims or completions, nor those of a reference server on
//!   the same broker. A completion from an agent that was not allocated the task is ignored.
//! - **Silent agents.** With [`Policy::silence`], a claimed task whose allocated agents all stay
//!   silent that long (no completion; Orrery's agents send a heartbeat on
//!   `antikythera/task/status` that counts as a sign of life) is published again under a new id
//!   (`{id}#2`, ...; the old one is cancelled with an ack naming no agent) up to
//!   [`Policy::silence_retries`] times, then ends as [`Ending::TimedOut`].
//! - **Cancel.** Dropping the future cancels the task on the agents (the same ack).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Map, Value};
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::bus::{BrokerAddress, Bus, BusError, BusEvent, Topic};
use crate::wire::{self, ExecutionMode, Message, TaskState};

/// What [`Dispatcher::execute`] hands to the agents.
#[derive(Debug, Clone, PartialEq)]
pub struct Assignment {
    /// Unique on the broker (see the module notes).
    pub id: String,
    pub task_type: String,
    pub inputs: Map<String, Value>,
    pub params: Map<String, Value>,
    pub output_keys: Vec<String>,
    pub context: Map<String, Value>,
    pub mode: ExecutionMode,
}

/// Re-publication and silence rules.
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    /// The wait before the first re-publication; it doubles each time, up to `redispatch_max`.
    pub redispatch_base: Duration,
    pub redispatch_max: Duration,
    /// Re-publications before `NO_AGENT_CLAIMED`.
    pub redispatches: u32,
    /// How long claimed agents may stay silent; `None`: no limit (the reference's behaviour).
    pub silence: Option<Duration>,
    /// How many times a task whose agents went silent is published again.
    pub silence_retries: u32,
}

impl Default for Policy {
    /// The reference's: 2 s doubling to 90 s, 5 times; no silence limit.
    fn default() -> Self {
        Policy {
            redispatch_base: Duration::from_secs(2),
            redispatch_max: Duration::from_secs(90),
            redispatches: 5,
            silence: None,
            silence_retries: 0,
        }
    }
}

/// Steps of a dispatch worth recording.
#[derive(Debug, Clone, PartialEq)]
pub enum Progress {
    /// Published again, unclaimed (`n` counts re-publications of this id).
    Republished {
        id: String,
        n: u32,
    },
    Allocated {
        id: String,
        agent: String,
    },
    /// The allocated agents said nothing for the silence limit; the task goes out again as `id`.
    Silent {
        agents: Vec<String>,
        id: String,
    },
}

/// How a dispatched task ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Ending {
    Succeeded {
        agent: String,
        outputs: Map<String, Value>,
    },
    /// The agent's own error (or `NO_AGENT_CLAIMED`, agent `orchestrator`).
    Failed {
        agent: String,
        code: String,
        message: String,
        details: Option<Value>,
    },
    /// Its agents went silent and no retry is left.
    TimedOut {
        agents: Vec<String>,
        after: Duration,
    },
}

type Routes = Arc<Mutex<HashMap<String, mpsc::UnboundedSender<Message>>>>;

/// One broker connection shared by every task dispatched from this process.
pub struct Dispatcher {
    bus: Bus,
    routes: Routes,
}

/// The agent a cancelling ack accepts: none that runs the task.
const CANCELLED: &str = "orrery-cancelled";

impl Dispatcher {
    /// Connects to the broker; fails with the reason when it cannot be reached.
    pub async fn connect(address: &BrokerAddress, client_id: &str) -> Result<Arc<Dispatcher>, BusError> {
        let (bus, mut events) =
            Bus::connect(address, client_id, &[Topic::Claim, Topic::Completed, Topic::Status]).await?;
        let routes: Routes = Arc::default();
        let table = routes.clone();
        tokio::spawn(async move {
            while let Some(event) = events.recv().await {
                if let BusEvent::Message(_, message) = event {
                    let route = table.lock().unwrap_or_else(|e| e.into_inner()).get(message.task_id()).cloned();
                    if let Some(route) = route {
                        let _ = route.send(message);
                    }
                }
            }
        });
        Ok(Arc::new(Dispatcher { bus, routes }))
    }

    pub fn address(&self) -> &BrokerAddress {
        self.bus.address()
    }

    fn route(&self, id: &str) -> Route<'_> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.routes.lock().unwrap_or_else(|e| e.into_inner()).insert(id.to_string(), tx);
        Route { dispatcher: self, id: id.to_string(), rx, done: false }
    }

    /// Runs `assignment` on the broker's agents to its end. `on_progress` hears allocations,
    /// re-publications and silences. Dropping the future cancels the task on the agents.
    pub async fn execute(
        &self,
        assignment: Assignment,
        policy: &Policy,
        mut on_progress: impl FnMut(Progress),
    ) -> Result<Ending, BusError> {
        let mut message = wire::TaskAssignmentMessage {
            id: assignment.id.clone(),
            task_type: assignment.task_type.clone(),
            inputs: wire::to_values(&assignment.inputs),
            output_keys: assignment.output_keys.clone(),
            params: wire::to_values(&assignment.params),
            timestamp: None,
            execution_mode: assignment.mode as i32,
            context: wire::to_values(&assignment.context),
        };
        let mut route = self.route(&assignment.id);
        let mut silences = 0u32;
        'publish: loop {
            message.timestamp = Some(wire::now());
            self.bus.publish(Topic::Start, &Message::Assignment(message.clone())).await?;
            let mut published = Instant::now();
            let mut republished = 0u32;
            // Allocated agents, and when one was last heard of.
            let mut agents: Vec<String> = Vec::new();
            let mut heard = Instant::now();
            loop {
                let deadline = if agents.is_empty() {
                    let wait =
                        policy.redispatch_base.saturating_mul(1 << republished.min(20)).min(policy.redispatch_max);
                    Some(published + wait)
                } else {
                    policy.silence.map(|s| heard + s)
                };
                let received = match deadline {
                    Some(deadline) => tokio::select! {
                        m = route.rx.recv() => m,
                        () = tokio::time::sleep_until(deadline) => None,
                    },
                    None => route.rx.recv().await,
                };
                let Some(received) = received else {
                    // The deadline passed.
                    if agents.is_empty() {
                        if republished >= policy.redispatches {
                            route.done = true;
                            return Ok(Ending::Failed {
                                agent: "orchestrator".into(),
                                code: "NO_AGENT_CLAIMED".into(),
                                message: format!(
                                    "no agent claimed task '{}' (type {}) after {republished} re-publications",
                                    assignment.id, assignment.task_type
                                ),
                                details: None,
                            });
                        }
                        republished += 1;
                        self.bus.publish(Topic::Start, &Message::Assignment(message.clone())).await?;
                        published = Instant::now();
                        on_progress(Progress::Republished { id: message.id.clone(), n: republished });
                        continue;
                    }
                    // Either way the silent agents' id is cancelled (the route's drop).
                    if silences >= policy.silence_retries {
                        return Ok(Ending::TimedOut { agents, after: policy.silence.unwrap_or_default() });
                    }
                    silences += 1;
                    message.id = format!("{}#{}", assignment.id, silences + 1);
                    route = self.route(&message.id);
                    on_progress(Progress::Silent { agents, id: message.id.clone() });
                    continue 'publish;
                };
                match received {
                    Message::Claim(claim) => {
                        let may = agents.is_empty() || assignment.mode == ExecutionMode::Competitive;
                        if may && !agents.contains(&claim.agent_id) {
                            let allocation = wire::TaskAllocationMessage {
                                task_id: message.id.clone(),
                                assigned_agent_id: claim.agent_id.clone(),
                                timestamp: Some(wire::now()),
                            };
                            self.bus.publish(Topic::Allocation, &Message::Allocation(allocation)).await?;
                            if agents.is_empty() {
                                heard = Instant::now();
                            }
                            agents.push(claim.agent_id.clone());
                            on_progress(Progress::Allocated { id: message.id.clone(), agent: claim.agent_id });
                        }
                    }
                    Message::Status(status) if agents.contains(&status.agent_id) => heard = Instant::now(),
                    Message::Completion(done) if agents.contains(&done.agent_id) => {
                        let ack = wire::TaskCompletionAckMessage {
                            id: message.id.clone(),
                            state: done.state,
                            accepted_agent_id: done.agent_id.clone(),
                            timestamp: Some(wire::now()),
                        };
                        route.done = true;
                        self.bus.publish(Topic::Ack, &Message::Ack(ack)).await?;
                        return Ok(ending(done));
                    }
                    _ => {}
                }
            }
        }
    }
}

/// A completion as an [`Ending`]: SUCCEEDED with its outputs, anything else a failure.
fn ending(done: wire::TaskCompletionMessage) -> Ending {
    let agent = done.agent_id;
    if done.state == TaskState::Succeeded as i32 {
        return match wire::from_values(&done.outputs, "outputs") {
            Ok(outputs) => Ending::Succeeded { agent, outputs },
            Err(e) => Ending::Failed {
                agent,
                code: "TOOL_FAILURE".into(),
                message: format!("the agent's outputs cannot be read: {e}"),
                details: None,
            },
        };
    }
    match done.error {
        Some(error) => Ending::Failed {
            agent,
            code: error.code,
            message: error.message,
            details: error.details.and_then(|d| wire::from_any(&d, "details").ok()).filter(|d| !d.is_null()),
        },
        None => Ending::Failed {
            agent,
            code: "TASK_FAILED".into(),
            message: format!(
                "the agent reported state {:?} without an error",
                TaskState::try_from(done.state).unwrap_or(TaskState::Unspecified)
            ),
            details: None,
        },
    }
}

/// The messages of one assignment id, for as long as it is dispatched.
struct Route<'a> {
    dispatcher: &'a Dispatcher,
    id: String,
    rx: mpsc::UnboundedReceiver<Message>,
    /// Ended by a completion (or given up): nothing to cancel.
    done: bool,
}

impl Route<'_> {
    /// Tells the agents running this id to stop: an ack that accepts no agent of theirs.
    fn cancel(&self) {
        let ack = wire::TaskCompletionAckMessage {
            id: self.id.clone(),
            state: TaskState::Failed as i32,
            accepted_agent_id: CANCELLED.to_string(),
            timestamp: Some(wire::now()),
        };
        let _ = self.dispatcher.bus.try_publish(Topic::Ack, &Message::Ack(ack));
    }
}

impl Drop for Route<'_> {
    fn drop(&mut self) {
        self.dispatcher.routes.lock().unwrap_or_else(|e| e.into_inner()).remove(&self.id);
        if !self.done {
            self.cancel();
        }
    }
}
