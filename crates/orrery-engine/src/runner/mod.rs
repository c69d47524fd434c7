//! The session runner: runs one validated blueprint to its end as one session in the task store,
//! applying docs/format.md §4. [`run_session`] stores the blueprint version, flattens the session
//! ([`crate::plan::build`]), creates it and then loops: the pure scheduler
//! ([`crate::scheduler::decide`]) says what may finish and start, the runner applies it and
//! otherwise waits for an agent to report. It is the one owner of the session's side effects.
//!
//! Its decisions (group commit, written before announced, finishing, skips, failure, the
//! runner's own failure, stop, progress, interactive tasks, broker agents, scope counters,
//! `max_parallel`, the work dir's files) are in docs/architecture.md §4, "The session runner".
//! Stop, pause, cancelling one task and answers: [`control`]. Resume, restart, the lease and
//! crash recovery: [`recovery`]. Skip, reset and reset a scope: [`crate::interventions`].

mod alone;
pub mod breakpoints;
pub mod control;
mod db;
mod dispatch;
mod kept;
pub mod recovery;
mod settle;
pub mod simulation;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use orrery_blueprint::condition;
use orrery_blueprint::save;
use orrery_blueprint::{Blueprint, Encoding, ErrorCode, Library, SessionState, TaskState, ValidBlueprint};
use orrery_store::{
    ErrorRecord, Event, EventData, InputSource, Lease, LogCapped, NewAttempt, NewEvent, NewSession, Outcome,
    ProcessEnvironment, ProcessIdentity, PromptAnswered, Retry, RunId, ScopeIteration, SessionBlueprints, Settlement,
    Starter, Store, StoreError, Synchronous,
};
use serde_json::{json, Map, Value};
use tokio::sync::{broadcast, mpsc, watch};

use crate::agents::interaction::{self, Answers, Interaction, WhenUnanswered};
use crate::agents::progress::{self as agent_progress, ProgressEvent, ProgressLine};
use crate::agents::{self, shell, AgentOutcome, TaskError};
use crate::broker::{self, BrokerOptions};
use crate::data::{self, Data};
use crate::plan::{self, PlanError, SessionPlan};
use crate::process::{is_alive, Canceller};
use crate::scheduler::{NodeState, States};
use crate::scopes::{self, ScopeDecision, ScopeIndex};

pub use alone::{run_task_alone, Alone};
use breakpoints::Holds;
pub use breakpoints::{BreakAt, Breakpoint, Release};
use control::Asked;
pub use control::{SessionControl, REQUEST_POLL};
use db::Db;
use kept::Kept;
pub(crate) use recovery::load_stored_plan;
pub use recovery::{
    interrupted_sessions, is_driven, restart_session, resume_session, session_blueprints, session_instances,
    session_plan, InstanceInfo, Restart,
};
use simulation::Simulator;
pub use simulation::{SimulatedFailure, Simulation};

/// How to run a session.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// How many `shell.run` processes may run at once (0 counts as 1).
    pub max_parallel: usize,
    /// Attempt directories and logs go under `work_dir/{session id}/`.
    pub work_dir: PathBuf,
    /// Every committed event, in commit order, after it is committed.
    pub events: Option<broadcast::Sender<Arc<Event>>>,
    /// Stops the session from outside (see the module notes); `None`: it runs to its end.
    pub control: Option<SessionControl>,
    /// Agents on an MQTT broker for the task types it takes ([`crate::broker`]); `None`: only
    /// built-in agents.
    pub broker: Option<BrokerOptions>,
    /// The client's request that a new session answers (a job's `request_id`): the session is
    /// created with it, once ([`Store::create_session_for`]). Unused by a resume.
    pub retry: Option<Retry>,
    /// Who asks for a new session (kept with it). Unused by a resume.
    pub started_by: Option<Starter>,
    /// The blueprint file a new session is started from (kept with it). Unused by a resume; a
    /// restart without one keeps its origin's.
    pub file: Option<PathBuf>,
    /// Where this run holds ([`breakpoints`]); a task the plan does not have is refused
    /// ([`RunError::UnknownBreakpoint`]) before the session starts.
    pub breakpoints: Vec<Breakpoint>,
    /// A task that fails holds there instead of failing the session ([`breakpoints`]).
    pub hold_on_failure: bool,
    /// Run without processes ([`simulation`]), kept with a new session; a resume or restart of
    /// a simulated session is simulated as it was, whatever this says.
    pub simulation: Option<Simulation>,
}

/// How a session ended.
#[derive(Debug, Clone, PartialEq)]
pub struct RunReport {
    pub session_id: String,
    /// COMPLETED, FAILED or STOPPED.
    pub state: SessionState,
    /// Why it failed.
    pub error: Option<ErrorRecord>,
}

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("the blueprint uses task types with no agent: {}; known types: {}", .unknown.join(", "), .known.join(", "))]
    UnknownTaskTypes { unknown: Vec<String>, known: Vec<String> },
    #[error(transparent)]
    Plan(#[from] PlanError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("the runner's blocking task failed: {0}")]
    Join(String),
    #[error("cannot read this process's pid and start time from /proc (the runner's lease names them): {0}")]
    Identity(String),
    #[error("session {session_id} is {}: there is nothing to resume", .state.as_str())]
    NotResumable { session_id: String, state: SessionState },
    /// A breakpoint at a task the blueprint run does not have.
    #[error("there is no task '{task}' to hold at (name a task id of the blueprint, or a node as \"instance.task\")")]
    UnknownBreakpoint { task: String },
    /// A simulation that names a task the blueprint run does not have.
    #[error("the simulation names no task '{task}' (name a task id of the blueprint, or a node as \"instance.task\")")]
    UnknownSimulated { task: String },
    /// A task to run alone that the blueprint does not have.
    #[error("the blueprint has no task '{task}' to run alone (name a task id of the blueprint, or a node as \"instance.task\")")]
    UnknownAlone { task: String },
    /// A value given for an input the task does not have.
    #[error("task {task} has no input '{input}'")]
    UnknownInput { task: String, input: String },
    /// A past session of another blueprint, whose data would mean something else.
    #[error(
        "session {session_id} ran blueprint '{blueprint_id}', not '{wanted}': its data cannot feed this one's task"
    )]
    OtherBlueprint { session_id: String, blueprint_id: String, wanted: String },
    /// A simulation's data asked to feed a real task.
    #[error("session {session_id} is a simulation: its data cannot feed a real run (simulate this one too, or take another session)")]
    SimulatedInputs { session_id: String },
    /// A restart from a task the blueprint run does not have.
    #[error("session {session_id} has no task '{task}' to run from (name a task id of its blueprint, or a node as \"instance.task\")")]
    UnknownTask { session_id: String, task: String },
    #[error("the stored blueprint version {hash} cannot be used: {message}")]
    StoredBlueprint { hash: String, message: String },
    /// The request ([`RunOptions::retry`]) had already started this session: it is not run twice.
    #[error("request {request_id:?} already started session {session_id}")]
    AlreadyStarted { request_id: String, session_id: String },
}

/// Refuses a plan with task types no agent runs (with a broker, its agents may run any type).
fn check_agents(plan: &SessionPlan, broker: Option<&BrokerOptions>) -> Result<(), RunError> {
    if broker.is_some() {
        return Ok(());
    }
    let mut unknown: Vec<String> = plan
        .tasks
        .iter()
        .map(|(_, t)| t.task_type.as_str().to_string())
        .filter(|name| !agents::is_known(name))
        .collect();
    if unknown.is_empty() {
        return Ok(());
    }
    unknown.sort();
    unknown.dedup();
    let known = agents::known_type_names().into_iter().map(str::to_string).collect();
    Err(RunError::UnknownTaskTypes { unknown, known })
}

/// Runs `root` (inner blueprints are found by id in `library`) as a new session in the store
/// at `store_path`, to completion, failure or a stop ([`RunOptions::control`]).
pub async fn run_session(
    store_path: &Path,
    root: ValidBlueprint,
    library: Vec<Blueprint>,
    params: Map<String, Value>,
    options: RunOptions,
) -> Result<RunReport, RunError> {
    run_new_session(store_path, root, library, params, None, Kept::default(), options).await
}

/// [`run_session`], the new session recording the one it runs over again (a restart).
pub(crate) async fn run_new_session(
    store_path: &Path,
    root: ValidBlueprint,
    library: Vec<Blueprint>,
    params: Map<String, Value>,
    restarted_from: Option<String>,
    kept: Kept,
    options: RunOptions,
) -> Result<RunReport, RunError> {
    let plan = {
        let lib: Library = library.iter().collect();
        plan::build(&root, &lib, &params)?
    };
    if options.simulation.is_none() {
        check_agents(&plan, options.broker.as_ref())?;
    }
    let holds = breakpoints::resolve(&plan, &options.breakpoints, options.hold_on_failure)?;
    let db = Db::open(store_path, &options).await?;
    let simulator = match &options.simulation {
        Some(simulation) => Some(Simulator::resolve(&plan, simulation, &db).await?),
        None => None,
    };

    let blueprint = root.blueprint();
    let (id, text) = (blueprint.id.clone(), save::to_string(blueprint, Encoding::Plain));
    // The inner blueprints the plan uses, as they are now: stored so that resuming needs no file.
    let mut inner: Vec<(String, String)> = Vec::new();
    for instance in plan.instances.iter().filter(|i| i.caller.is_some()) {
        if inner.iter().any(|(id, _)| *id == instance.blueprint_id) {
            continue;
        }
        if let Some(b) = library.iter().find(|b| b.id == instance.blueprint_id) {
            inner.push((b.id.clone(), save::to_string(b, Encoding::Plain)));
        }
    }
    let name = kept.label.clone().unwrap_or_else(|| blueprint.name.clone());
    let params_value = Value::Object(params);
    let lease = db.lease.clone();
    let retry = options.retry.clone();
    let started_by = options.started_by.clone();
    let file = options.file.as_deref().map(|f| std::path::absolute(f).unwrap_or_else(|_| f.to_path_buf()));
    let origin = restarted_from.clone();
    let simulation = options.simulation.clone();
    let session = db
        .call(move |s| {
            let hash = s.put_blueprint_version(&id, &text)?;
            // Appended right after `session_created` (seq 2): what recovery and restarts read.
            let mut links = SessionBlueprints { inner: Default::default() };
            for (id, text) in &inner {
                links.inner.insert(id.clone(), s.put_blueprint_version(id, text)?);
            }
            let session = s.create_session_for(
                &NewSession {
                    blueprint_hash: hash,
                    name,
                    params: params_value,
                    restarted_from,
                    started_by,
                    file,
                    simulation,
                },
                retry.as_ref(),
            )?;
            // A new session has its `session_created` event alone; one with more is the one the
            // same request made before (sent twice at once): its runner drives it.
            if let Some(retry) = &retry {
                if s.last_event_seq(&session.id)? > 1 {
                    return Ok(Err(RunError::AlreadyStarted { request_id: retry.id.clone(), session_id: session.id }));
                }
            }
            s.acquire_lease(&session.id, &lease, |_| true)?;
            let link = NewEvent { run_id: None, data: EventData::SessionBlueprints(links) };
            s.append_event(&session.id, &link, None)?;
            if let (Some(from), false) = (kept.data_from.as_ref().or(origin.as_ref()), kept.data.is_empty()) {
                s.copy_data(from, &session.id, &kept.data)?;
            }
            for (instance, key, value) in &kept.given {
                s.edit_data(&session.id, instance, key, value, "user")?;
            }
            let events = s.events_after(&session.id, 0, 200)?;
            Ok(Ok((session, events)))
        })
        .await??;
    let session_id = session.0.id.clone();
    db.announce(session.1);

    let nodes = plan.graph.nodes.len();
    let mut runner = Runner::new(session_id, plan, db, &options, vec![0; nodes], HashMap::new(), holds);
    runner.simulator = simulator;
    let mut all: Vec<(usize, NodeState)> = (0..nodes).map(|n| (n, NodeState::Pending)).collect();
    for &(n, state) in &kept.states {
        all[n].1 = state;
    }
    runner.run(all).await
}

/// One attempt in flight, as the owner knows it.
#[derive(Debug, Clone)]
struct Run {
    run_id: RunId,
    kind: RunKind,
    /// Set once a successful run ended: what lands when it may finish.
    ended: Option<(Option<i32>, Map<String, Value>)>,
    canceller: Option<Canceller>,
    sleep: Option<tokio::task::AbortHandle>,
    /// Cancelled before its process reported its start: cancel it as soon as it does.
    cancel_on_start: bool,
}

impl Run {
    /// Tells its process to stop and ends its sleep, without waiting.
    fn cancel(&self) {
        if let Some(c) = &self.canceller {
            c.cancel();
        }
        if let Some(h) = &self.sleep {
            h.abort();
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RunKind {
    Instant,
    Sleep,
    Shell,
    Composite,
    /// An interactive prompt waiting for its answer.
    Prompt,
    /// Executed by an agent on the broker.
    Broker,
    /// A task of a simulation ([`simulation`]): no process, no person, no agent.
    Simulated,
}

/// A `shell.run` attempt begun, whose process starts at the next [`Runner::launch`].
struct Launch {
    node: usize,
    run_id: RunId,
    attempt: shell::ShellAttempt,
    log_path: PathBuf,
}

/// What agents report to the owner.
enum Report {
    Started {
        node: usize,
        run_id: RunId,
        process: ProcessIdentity,
        canceller: Canceller,
        environment: Option<ProcessEnvironment>,
    },
    Progress {
        node: usize,
        run_id: RunId,
        line: ProgressLine,
    },
    Ended {
        node: usize,
        run_id: RunId,
        outcome: AgentOutcome,
    },
    /// The log of a `shell.run` attempt reached its cap: an event of the attempt.
    LogCapped {
        node: usize,
        run_id: RunId,
        cap_bytes: u64,
        dropped_bytes: u64,
    },
    /// A step of a task dispatched over the broker (an allocation, a re-publication, ...).
    Dispatch {
        node: usize,
        run_id: RunId,
        progress: orrery_broker::Progress,
    },
}

struct Runner {
    session_id: String,
    plan: SessionPlan,
    scopes: ScopeIndex,
    states: States,
    runs: Vec<Option<Run>>,
    db: Db,
    tx: mpsc::UnboundedSender<Report>,
    rx: mpsc::UnboundedReceiver<Report>,
    max_parallel: usize,
    work_dir: PathBuf,
    /// The `shell.run` attempts whose process has not reported its end (or not started yet).
    processes: HashSet<RunId>,
    /// Attempts begun whose process is not spawned yet.
    launches: Vec<Launch>,
    /// Attempts begun per node.
    attempt_counts: Vec<u32>,
    /// Scope counters by start node, mirrored from the store.
    iterations: HashMap<usize, u32>,
    /// The given [`SessionControl`] (or one of the runner's own, for requests from other
    /// processes), and what it asked that the runner has seen.
    control: SessionControl,
    asked: watch::Receiver<Asked>,
    /// Asked to pause: nothing new starts.
    pausing: bool,
    /// How many of the asked cancels were applied.
    cancels_seen: usize,
    /// A failure that happened outside a step (a cancelled sleep), seen by the loop.
    failure: Option<ErrorRecord>,
    /// Ticks when the requests of other processes are read.
    poll: tokio::time::Interval,
    /// The control's answers; without a control a prompt fails at once (nobody can answer).
    answers: Option<Answers>,
    broker: Option<BrokerOptions>,
    /// The run's breakpoints and where it holds now.
    holds: Holds,
    /// How many of the asked releases were applied.
    releases_seen: usize,
    /// What the tasks do in a simulated session; `None`: a real run.
    simulator: Option<Simulator>,
}

/// How [`Runner::drive`] ended.
enum End {
    Completed,
    Failed(ErrorRecord),
    Stopped,
}

fn store_step_state(state: agent_progress::StepState) -> orrery_store::StepState {
    match state {
        agent_progress::StepState::InProgress => orrery_store::StepState::InProgress,
        agent_progress::StepState::Done => orrery_store::StepState::Done,
    }
}

/// Appends a progress warning to the attempt's log (best effort: the log is the process's).
fn log_warning(log_path: &Path, message: &str) {
    use std::io::Write;
    if let Ok(mut file) = crate::process::open_append(log_path) {
        let _ = writeln!(file, "orrery: {message}");
    }
}

/// Where the session stands after a step.
type Step = Result<Option<ErrorRecord>, RunError>;

/// How many times a runner whose loop failed tries to record that on its session.
const RECORD_TRIES: u32 = 3;

fn task_error_record(error: &TaskError) -> ErrorRecord {
    ErrorRecord { code: error.code.into(), message: error.message.clone(), details: error.details.clone() }
}

/// The plan's nodes in `values`, a `shell.run` task's process limited by the parallelism.
fn states_of(plan: &SessionPlan, values: Vec<NodeState>) -> States {
    let limited = plan.tasks.iter().map(|(_, task)| task.task_type.as_str() == shell::TYPE).collect();
    States::new(&plan.graph, values, limited)
}

fn store_state(state: NodeState) -> TaskState {
    match state {
        NodeState::Pending => TaskState::Pending,
        NodeState::SkipRequested => TaskState::SkipRequested,
        NodeState::Ready => TaskState::Ready,
        NodeState::Running | NodeState::Finishing => TaskState::Running,
        NodeState::Succeeded => TaskState::Succeeded,
        NodeState::Failed => TaskState::Failed,
        NodeState::Skipped => TaskState::Skipped,
    }
}

impl Runner {
    fn new(
        session_id: String,
        plan: SessionPlan,
        db: Db,
        options: &RunOptions,
        attempt_counts: Vec<u32>,
        iterations: HashMap<usize, u32>,
        holds: Holds,
    ) -> Runner {
        let (tx, rx) = mpsc::unbounded_channel();
        let nodes = plan.graph.nodes.len();
        let control = options.control.clone().unwrap_or_default();
        let asked = control.subscribe();
        // Asked before the runner subscribed: a pause holds; a cancel concerned what ran then.
        let (pausing, cancels_seen, releases_seen) = {
            let before = asked.borrow();
            (before.pause, before.cancel.len(), before.release.len())
        };
        let mut poll = tokio::time::interval(control::REQUEST_POLL);
        poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        Runner {
            work_dir: options.work_dir.join(&session_id),
            session_id,
            states: states_of(&plan, vec![NodeState::Pending; nodes]),
            runs: vec![None; nodes],
            attempt_counts,
            scopes: ScopeIndex::new(&plan),
            plan,
            db,
            tx,
            rx,
            max_parallel: options.max_parallel.max(1),
            processes: HashSet::new(),
            launches: Vec::new(),
            iterations,
            answers: options.control.as_ref().map(|c| c.answers().clone()),
            broker: options.broker.clone(),
            control,
            asked,
            pausing,
            cancels_seen,
            failure: None,
            poll,
            holds,
            releases_seen,
            simulator: None,
        }
    }

    fn key(&self, node: usize) -> String {
        self.plan.graph.nodes[node].key.clone()
    }

    fn instance_id(&self, node: usize) -> String {
        self.plan.instances[self.plan.tasks[node].0].id.clone()
    }

    async fn data_of(&self, instance: String) -> Result<Data, RunError> {
        let session = self.session_id.clone();
        let data = self.db.call(move |s| s.instance_data(&session, &instance)).await?;
        Ok(data.into_iter().collect())
    }

    /// Writes node states (nodes given by index) and announces them.
    async fn set_states(&mut self, changes: Vec<(usize, NodeState)>) -> Result<(), RunError> {
        for &(n, state) in &changes {
            self.states[n] = state;
        }
        let session = self.session_id.clone();
        let changes: Vec<(String, TaskState)> = changes.iter().map(|&(n, st)| (self.key(n), store_state(st))).collect();
        self.db
            .write(move |s| {
                let refs: Vec<(&str, TaskState)> = changes.iter().map(|(k, st)| (k.as_str(), *st)).collect();
                s.set_task_states(&session, &refs)
            })
            .await
    }

    async fn set_session(&self, state: SessionState, error: Option<ErrorRecord>) -> Result<(), RunError> {
        let session = self.session_id.clone();
        self.db.write(move |s| Ok(vec![s.set_session_state(&session, state, error.as_ref(), None)?])).await
    }

    /// Writes the `initial` node states, sets the session RUNNING and drives it to its end.
    /// Runs the session (see [`Runner::run_to_end`]), then lets go of its lease, whatever
    /// happened: an error leaves nothing of its unfinished round in the store, and the session
    /// says why it ended ([`Runner::record_runner_error`]).
    async fn run(&mut self, initial: Vec<(usize, NodeState)>) -> Result<RunReport, RunError> {
        let mut result = self.run_to_end(initial).await;
        if let Err(error) = &result {
            self.db.abandon().await;
            self.abandon_in_flight().await;
            if let Some(report) = self.record_runner_error(error).await {
                result = Ok(report);
            }
        }
        let released = self.db.release_lease(&self.session_id).await;
        let report = result?;
        released?;
        Ok(report)
    }

    /// After an error that ended the loop (the store refused a write, say): the session is set
    /// `failed` with that error in a transaction of its own, tried [`RECORD_TRIES`] times a
    /// second apart, so that it is never left `running` with no runner and no word. Its
    /// attempts still open are settled by the next resume (retry from failure), as after a
    /// crash. `None` when even that could not be written: the caller answers the error.
    async fn record_runner_error(&self, error: &RunError) -> Option<RunReport> {
        let record = ErrorRecord::new(ErrorCode::TaskDispatchFailed, format!("the runner could not go on: {error}"));
        for tried in 0..RECORD_TRIES {
            if tried > 0 {
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            let written = match self.set_session(SessionState::Failed, Some(record.clone())).await {
                Ok(()) => self.db.flush().await,
                Err(e) => Err(e),
            };
            if written.is_ok() {
                let session_id = self.session_id.clone();
                return Some(RunReport { session_id, state: SessionState::Failed, error: Some(record) });
            }
            self.db.abandon().await;
        }
        None
    }

    async fn run_to_end(&mut self, initial: Vec<(usize, NodeState)>) -> Result<RunReport, RunError> {
        if !initial.is_empty() {
            self.set_states(initial).await?;
        }
        self.set_session(SessionState::Running, None).await?;
        self.announce_breakpoints().await?;
        let (state, failure) = match self.drive().await? {
            End::Completed => (SessionState::Completed, None),
            End::Failed(error) => {
                self.stop_in_flight().await?;
                (SessionState::Failed, Some(error))
            }
            End::Stopped => {
                self.stop_in_flight().await?;
                (SessionState::Stopped, None)
            }
        };
        self.set_session(state, failure.clone()).await?;
        self.db.flush().await?;
        Ok(RunReport { session_id: self.session_id.clone(), state, error: failure })
    }

    fn stop_is_requested(&self) -> bool {
        self.asked.borrow().stop
    }

    /// Runs until every node is done, the session fails (its error) or a stop is requested.
    async fn drive(&mut self) -> Result<End, RunError> {
        loop {
            if self.stop_is_requested() {
                return Ok(End::Stopped);
            }
            if let Some(error) = self.holds.given_up() {
                return Ok(End::Failed(error));
            }
            if let Some(error) = self.failure.take() {
                if let Some(error) = self.failed(error).await? {
                    return Ok(End::Failed(error));
                }
            }
            let mut moved = false;
            for n in self.states.finishing() {
                moved = true;
                if let Some(error) = self.finish(n).await? {
                    if let Some(error) = self.failed(error).await? {
                        return Ok(End::Failed(error));
                    }
                }
                if self.states[n] == NodeState::Succeeded {
                    self.ended(n).await?;
                } else {
                    // A scope looped and reset nodes: decide again from the new states.
                    break;
                }
            }
            if moved {
                continue;
            }
            // Processes only while the session's parallelism has room for one.
            let mut after = None;
            while let Some(n) = self.states.next_start(after, self.processes.len() < self.max_parallel) {
                after = Some(n);
                if self.pausing {
                    break;
                }
                // An earlier start of this round may have skipped it (a cascade).
                if !matches!(self.states[n], NodeState::Pending | NodeState::SkipRequested) {
                    continue;
                }
                if self.stop_is_requested() {
                    return Ok(End::Stopped);
                }
                if self.held_back(n).await? {
                    continue;
                }
                moved = true;
                self.starting(n);
                if let Some(error) = self.start(n).await? {
                    if let Some(error) = self.failed(error).await? {
                        return Ok(End::Failed(error));
                    }
                }
            }
            if moved {
                continue;
            }
            // A task held after it ended holds the session's end too.
            if self.states.are_complete() && !self.holds.any_held() {
                return Ok(End::Completed);
            }
            if self.pausing && !self.states.contains(&NodeState::Running) {
                // Paused: what ran has finished, or waits for what will not start now.
                return Ok(End::Stopped);
            }
            if self.runs.iter().all(Option::is_none) && self.processes.is_empty() && !self.holds.any_held() {
                // Cannot happen for a valid blueprint; never wait forever on nothing.
                let stuck: Vec<String> =
                    (0..self.states.len()).filter(|&n| !self.states[n].is_done()).map(|n| self.key(n)).collect();
                return Ok(End::Failed(ErrorRecord::new(
                    ErrorCode::TaskDispatchFailed,
                    format!("the session cannot go on: {} can never start", stuck.join(", ")),
                )));
            }
            // Start this round's processes, commit it behind (one fsync; announced once
            // committed), then wait.
            self.launch();
            tokio::select! {
                report = self.rx.recv() => {
                    let Some(report) = report else { unreachable!("the runner holds a sender") };
                    if let Some(error) = self.on_report(report).await? {
                        if let Some(error) = self.failed(error).await? {
                            return Ok(End::Failed(error));
                        }
                    }
                    // Whatever else has arrived lands in the same round.
                    while let Ok(report) = self.rx.try_recv() {
                        if let Some(error) = self.on_report(report).await? {
                            if let Some(error) = self.failed(error).await? {
                                return Ok(End::Failed(error));
                            }
                        }
                    }
                }
                () = control::asked_changed(&mut self.asked) => {
                    if self.apply_asked().await? {
                        return Ok(End::Stopped);
                    }
                }
                _ = self.poll.tick() => self.poll_requests().await?,
                () = tokio::time::sleep(db::DEFERRED_WRITES_WAIT), if self.db.has_deferred() => {
                    self.db.write_deferred().await?;
                }
            }
        }
    }
}
