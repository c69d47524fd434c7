//! The session runner (first version): runs one validated blueprint to its end as one session
//! in the task store, applying COMPAT.md section 4.
//!
//! [`run_session`] stores the blueprint version (canonical plain JSON), flattens the session
//! ([`crate::plan::build`]), refuses task types with no agent, creates the session and every
//! node PENDING, sets the session RUNNING and then loops: it asks the pure scheduler
//! ([`crate::scheduler::decide`]) what may finish and start, applies that, and otherwise waits
//! for an agent to report over an mpsc channel. It is the one owner of the session's side
//! effects.
//!
//! # Decisions
//!
//! - **Store access.** [`orrery_store::Store`] is synchronous (rusqlite). The runner keeps it in
//!   an `Arc<Mutex<Store>>` and runs every store call on tokio's blocking pool
//!   (`spawn_blocking`), awaiting it from the owner task, so a slow commit (`synchronous=FULL`,
//!   one fsync each) never stalls the runtime's workers nor the agents' tasks. Calls are issued
//!   one at a time by the owner, so the mutex is never contended; it only makes the handle
//!   shareable with the blocking pool. The store is opened with the default options
//!   (`synchronous=FULL`): every announced transition survives a power cut.
//! - **Written before announced.** Every transition is committed first; the [`Event`]s the store
//!   returns are then sent on [`RunOptions::events`] (a broadcast channel; nobody listening is
//!   fine). `create_session` returns no events, so its `session_created` event is read back
//!   with `events_after`.
//! - **Unknown task types** are refused before anything is written: no blueprint version and
//!   no session row exist afterwards. The plan is built first (it is pure), so types of inner
//!   blueprints are checked too.
//! - **Finishing.** A run that ended well keeps its attempt `running` in the store and its node
//!   RUNNING until the scheduler lets it finish (FF/SF); then one `settle_attempt` lands the
//!   outcome, the node's SUCCEEDED state and its outputs in session data in one transaction. A
//!   composite is `Finishing` as soon as it starts (its inputs copied into its inner instance);
//!   its outputs are read from the inner instance when it may finish.
//! - **Skips** (SKIP_REQUESTED or a false condition) start no attempt: the node and its cascade
//!   ([`crate::scopes::skip_cascade`]) become SKIPPED and each skipped node writes its declared
//!   output defaults (or null) to its instance's data.
//! - **Failure.** The first FAILED task (or a dispatch or while-condition error) fails the
//!   session with that error. Runs still in flight are cancelled (shell processes get SIGTERM,
//!   grace, SIGKILL; sleeps are dropped) and settled `cancelled` with their node back to
//!   PENDING, like a run that was interrupted: starting the session again would run them anew.
//!   A `Finishing` run is settled the same way (its completion never landed). A cancelled
//!   attempt records the exit code its agent reported: 130 for a process that was cancelled,
//!   the real one for a process that had already ended; none for runs without a process.
//! - **Stop.** [`SessionControl`] (cloneable, given in [`RunOptions::control`]) stops the
//!   session from outside: [`SessionControl::stop`] makes the runner cancel and settle every
//!   run in flight exactly as after a failure (attempts `cancelled`, exit code 130 for
//!   processes, nodes back to PENDING), set the session `stopped` and return a [`RunReport`]
//!   whose state is [`SessionState::Stopped`]. The stop is seen between transitions (each
//!   transition being one store call, that is at once when the runner waits for agents and
//!   after the current commit otherwise); nothing starts after it. Everything committed before
//!   was announced. A stop given before the session runs stops it as soon as it is RUNNING,
//!   before any task starts; a stop after it ended does nothing. A handle was chosen over an mpsc
//!   of commands: any number of observers (a signal handler, a UI) can hold one, and a stop
//!   is a level, not a message that can be lost or queued twice.
//! - **Progress.** The progress lines of a `shell.run` process ([`shell::run`]'s
//!   `on_progress`) go to the owner over the agents' channel and are stored with
//!   [`Store::report_progress`] through the same store path as every transition; the
//!   `progress` event it returns is announced after the commit. A report the store refuses as
//!   stale (the attempt was settled meanwhile) or invalid is dropped: progress is advisory and
//!   never fails a task. Settling an attempt as succeeded marks its steps done (the store's
//!   rule). Malformed-line warnings have no event kind (every event is a committed row of the
//!   store): they are appended to the attempt's log file as `orrery: {warning}` lines, where
//!   the user reads the process's output.
//! - **Interactive tasks** ([`crate::agents::interaction`]). A display (`notify`,
//!   `user_output`) appends a `notification` event for its attempt and succeeds at once. A
//!   prompt (`user_prompt.confirm`, `user_input`) appends a `prompt_waiting` event (committed,
//!   then announced) and takes its answer from the [`SessionControl`]'s [`Answers`]: one given
//!   already lands at once; otherwise it stays RUNNING, waiting like a sleep (dropped on a stop
//!   or failure), unless the answers say [`WhenUnanswered::Fail`], or no control was given
//!   (nobody could answer), when it fails with `TOOL_FAILURE`. The answers ride on
//!   [`SessionControl`], the existing handle for acting on a running session, rather than on a
//!   new [`RunOptions`] field. Prompts are not counted by `max_parallel`.
//! - **Scope counters** are stored under (instance id, scope key `"{instance}.{start task}"`).
//! - **max_parallel** bounds the `shell.run` processes running at once (at least 1);
//!   `system.*` tasks run in-process and are not counted.
//! - **Work dir.** Attempt `n` of node `K` of session `S` runs in `work_dir/S/K/attempt-n/`,
//!   logging to `work_dir/S/K/attempt-n.log`.
//!
//! # Resume and crash recovery
//!
//! [`resume_session`] goes on with a stored session from the store alone, after a stop, a
//! failure (retry from failure) or a crash of the process that ran it.
//!
//! - **What is stored for it.** The root blueprint version is the session's `blueprint_hash`;
//!   the versions of the inner blueprints the plan uses are stored too (`blueprint_versions`)
//!   and linked to the session by a [`SESSION_BLUEPRINTS`] event appended right after
//!   `session_created` (no new table: the event log is the session's own append-only record,
//!   and the link is written once). The plan is rebuilt from these versions and the stored
//!   session params, so it is the plan the session started with. A session with no link event
//!   resumes with its root only (enough unless it has composites).
//! - **States accepted.** `running` (a crash), `stopped`, `failed` and `pending` (a crash
//!   before it ran); `completed` is refused ([`RunError::NotResumable`]). An unknown session is
//!   [`StoreError::NotFound`].
//! - **Attempts left `running`.** Each is checked by its recorded process (pid plus start
//!   time, [`is_alive`]). *Alive*: its process group gets SIGTERM, the grace period, then
//!   SIGKILL, and the attempt is settled `cancelled` (no exit code: it is not our child). It is
//!   killed rather than waited for: its runner is gone, so nothing reads its outputs file or its
//!   progress any more, it may run forever (a `sleep 30`, a hung tool), and letting it go on
//!   beside a new attempt of the same node would break "one running attempt per node". *Gone*
//!   (or never named: no process recorded, or not a process at all): settled `unknown` with a
//!   `TASK_FAILED` error saying its outcome cannot be known. Either way its steps left in
//!   progress become `unknown` and its node goes back to PENDING, to run again as a new attempt.
//! - **Node states** come from `task_nodes`: SUCCEEDED, SKIPPED and SKIP_REQUESTED stay; every
//!   other state (PENDING, READY, RUNNING, FAILED: COMPAT.md section 4's retry from failure)
//!   becomes PENDING. Only the nodes whose state changes are written. Attempt numbers go on
//!   from the store's, scope counters are read back from the store, and session data is left
//!   as stored. Then the session is set RUNNING and the usual loop runs.
//!
//! # Not in this version
//!
//! Pause and cancelling one task (skip, reset and reset a scope are [`crate::interventions`], on
//! a session that is not running), and batching
//! several transitions per transaction. Recovery gaps: nothing stops two runners from driving
//! one session at once (resuming a session whose runner is still alive kills that runner's
//! processes and races it; a session lease is not stored yet); a process spawned but not yet
//! named on its attempt when the runner died cannot be found, so it is settled `unknown` and
//! may outlive the crash; recovery happens on `resume`, not automatically when a store is
//! opened. Known gaps: a scope that loops while one of
//! its members still runs (possible only through an SS edge inside the scope) drops that run
//! from its books and leaves its attempt `running` in the store; a node that fails to dispatch
//! (inputs or condition) becomes FAILED without an attempt row. Dynamic composites go through
//! the plan (session parameter `elements`) but are not yet covered by a runner test.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use orrery_blueprint::condition;
use orrery_blueprint::save;
use orrery_blueprint::{Blueprint, Encoding, ErrorCode, Library, SessionState, TaskState, ValidBlueprint};
use orrery_store::{
    ErrorRecord, Event, NewAttempt, NewEvent, NewSession, Outcome, ProcessIdentity, RunId, Settlement, Store,
    StoreError,
};
use serde_json::{json, Map, Value};
use tokio::sync::{broadcast, mpsc, watch};

use crate::agents::interaction::{self, Answers, Interaction, WhenUnanswered};
use crate::agents::progress::{self as agent_progress, ProgressEvent, ProgressLine};
use crate::agents::{self, shell, AgentOutcome, TaskError};
use crate::data::{self, Data};
use crate::plan::{self, PlanError, SessionPlan};
use crate::process::{is_alive, Canceller};
use crate::scheduler::{self, NodeState};
use crate::scopes::{self, ScopeDecision, ScopeIndex};

/// How to run a session.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// How many `shell.run` processes may run at once (0 counts as 1).
    pub max_parallel: usize,
    /// Attempt directories and logs go under `work_dir/{session id}/`.
    pub work_dir: PathBuf,
    /// Every committed event, in commit order, after it is committed.
    pub events: Option<broadcast::Sender<Event>>,
    /// Stops the session from outside (see the module notes); `None`: it runs to its end.
    pub control: Option<SessionControl>,
}

/// A handle to act on a running session from outside: stop it, answer its prompts. Clones share
/// one stop and one set of [`Answers`].
#[derive(Debug, Clone)]
pub struct SessionControl {
    stop: Arc<watch::Sender<bool>>,
    answers: Answers,
}

impl Default for SessionControl {
    fn default() -> Self {
        SessionControl::new()
    }
}

impl SessionControl {
    pub fn new() -> Self {
        let (stop, _) = watch::channel(false);
        SessionControl { stop: Arc::new(stop), answers: Answers::new(WhenUnanswered::Wait) }
    }

    /// This control with `answers` as its answers (pre-seeded ones, and what to do when a
    /// prompt has none). [`SessionControl::new`] waits for answers given with
    /// [`SessionControl::answer`].
    pub fn with_answers(mut self, answers: Answers) -> Self {
        self.answers = answers;
        self
    }

    /// The answers this control gives the session's prompts.
    pub fn answers(&self) -> &Answers {
        &self.answers
    }

    /// Answers the prompt of a task (its node key, or its task id); a prompt waiting for it
    /// goes on. See [`crate::agents::interaction`].
    pub fn answer(&self, task: &str, value: Value) {
        self.answers.answer(task, value);
    }

    /// Asks the session to stop: its runs are cancelled and it ends `stopped`. Idempotent;
    /// does nothing once the session ended.
    pub fn stop(&self) {
        self.stop.send_replace(true);
    }

    /// Whether [`SessionControl::stop`] was called.
    pub fn is_stop_requested(&self) -> bool {
        *self.stop.borrow()
    }

    fn subscribe(&self) -> watch::Receiver<bool> {
        self.stop.subscribe()
    }
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
    #[error("cannot prepare the work directory {}: {message}", .path.display())]
    WorkDir { path: PathBuf, message: String },
    #[error("session {session_id} is {}: there is nothing to resume", .state.as_str())]
    NotResumable { session_id: String, state: SessionState },
    #[error("the stored blueprint version {hash} cannot be used: {message}")]
    StoredBlueprint { hash: String, message: String },
}

/// The kind of the event, appended right after `session_created` (seq 2), that links a session
/// to the stored versions of the inner blueprints its composites call: payload
/// `{"inner": {"<blueprint id>": "<version hash>", ...}}`.
pub const SESSION_BLUEPRINTS: &str = "session_blueprints";

/// Refuses a plan with task types no agent runs.
fn check_agents(plan: &SessionPlan) -> Result<(), RunError> {
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

async fn open_db(store_path: &Path, options: &RunOptions) -> Result<Db, RunError> {
    let path = store_path.to_path_buf();
    let store =
        tokio::task::spawn_blocking(move || Store::open(&path)).await.map_err(|e| RunError::Join(e.to_string()))??;
    Ok(Db { store: Arc::new(Mutex::new(store)), events: options.events.clone() })
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
    let plan = {
        let lib: Library = library.iter().collect();
        plan::build(&root, &lib, &params)?
    };
    check_agents(&plan)?;
    let db = open_db(store_path, &options).await?;

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
    let name = blueprint.name.clone();
    let params_value = Value::Object(params);
    let session = db
        .call(move |s| {
            let hash = s.put_blueprint_version(&id, &text)?;
            let mut links = Map::new();
            for (id, text) in &inner {
                links.insert(id.clone(), Value::String(s.put_blueprint_version(id, text)?));
            }
            let session = s.create_session(&NewSession { blueprint_hash: hash, name, params: params_value }, None)?;
            let link =
                NewEvent { kind: SESSION_BLUEPRINTS.to_string(), run_id: None, payload: json!({ "inner": links }) };
            s.append_event(&session.id, &link, None)?;
            let events = s.events_after(&session.id, 0, 200)?;
            Ok((session, events))
        })
        .await?;
    let session_id = session.0.id.clone();
    db.announce(session.1);

    let nodes = plan.graph.nodes.len();
    let mut runner = Runner::new(session_id, plan, db, &options, vec![0; nodes], HashMap::new());
    let all: Vec<(usize, NodeState)> = (0..nodes).map(|n| (n, NodeState::Pending)).collect();
    runner.run(all).await
}

/// Resumes a session of the store at `store_path` from what the store alone holds (see the
/// module notes on recovery): settles the attempts a crash left `running`, puts every
/// unfinished node back to PENDING and runs the session on to completion, failure or a stop.
/// A `completed` session is refused ([`RunError::NotResumable`]).
pub async fn resume_session(store_path: &Path, session_id: &str, options: RunOptions) -> Result<RunReport, RunError> {
    let db = open_db(store_path, &options).await?;
    let sid = session_id.to_string();
    let (session, root_version, inner_versions) = db
        .call(move |s| {
            let session = s.session(&sid)?;
            let root = s.blueprint_version(&session.blueprint_hash)?;
            let mut inner = Vec::new();
            for hash in inner_links(s, &sid)? {
                inner.push(s.blueprint_version(&hash)?);
            }
            Ok((session, root, inner))
        })
        .await?;
    if session.state == SessionState::Completed {
        return Err(RunError::NotResumable { session_id: session.id, state: session.state });
    }
    let plan = plan_from_versions(&session, &root_version, &inner_versions)?;
    check_agents(&plan)?;

    // Settle what a crash (or a runner that is gone) left running.
    let sid = session.id.clone();
    let running: Vec<orrery_store::Attempt> =
        db.call(move |s| Ok(s.running_attempts()?.into_iter().filter(|a| a.session_id == sid).collect())).await?;
    for attempt in running {
        let alive = attempt.process.filter(|p| is_alive(p.pid, p.start_time));
        let outcome = match alive {
            Some(process) => {
                crate::process::terminate_group(process.pid, process.start_time).await;
                Outcome::Cancelled { exit_code: None }
            }
            None => Outcome::Unknown {
                error: error_record(
                    ErrorCode::TaskFailed,
                    format!(
                        "attempt {} of task '{}' was interrupted and its process is gone: its outcome cannot be known",
                        attempt.attempt, attempt.node
                    ),
                ),
            },
        };
        let run_id = attempt.run_id.clone();
        db.write(move |s| {
            s.mark_unknown_in_progress(&run_id)?;
            s.settle_attempt(&run_id, Settlement { outcome, node_state: Some(TaskState::Pending), data: Vec::new() })
        })
        .await?;
    }

    // Node states, attempt numbers and scope counters from the store.
    let scopes = ScopeIndex::new(&plan);
    let counters: Vec<(usize, String, String)> =
        scopes.scopes().iter().map(|sc| (sc.start, plan.instances[sc.instance].id.clone(), sc.key.clone())).collect();
    let sid = session.id.clone();
    let (stored_nodes, attempts, counts) = db
        .call(move |s| {
            let nodes = s.task_nodes(&sid)?;
            let attempts = s.attempts(&sid)?;
            let mut counts = Vec::new();
            for (start, instance, key) in &counters {
                counts.push((*start, s.scope_iterations(&sid, instance, key)?));
            }
            Ok((nodes, attempts, counts))
        })
        .await?;
    let stored: HashMap<&str, TaskState> = stored_nodes.iter().map(|n| (n.node.as_str(), n.state)).collect();
    let mut attempt_counts = vec![0u32; plan.graph.nodes.len()];
    for attempt in &attempts {
        if let Some(n) = plan.node(&attempt.node) {
            attempt_counts[n] = attempt_counts[n].max(attempt.attempt);
        }
    }
    let iterations: HashMap<usize, u32> = counts.into_iter().filter(|(_, c)| *c > 0).collect();
    let mut initial = Vec::new();
    let mut states = Vec::with_capacity(plan.graph.nodes.len());
    for node in &plan.graph.nodes {
        let state = match stored.get(node.key.as_str()) {
            Some(TaskState::Succeeded) => NodeState::Succeeded,
            Some(TaskState::Skipped) => NodeState::Skipped,
            Some(TaskState::SkipRequested) => NodeState::SkipRequested,
            // PENDING, READY, RUNNING (interrupted) and FAILED (retry from failure).
            _ => NodeState::Pending,
        };
        states.push(state);
        if stored.get(node.key.as_str()).copied() != Some(store_state(state)) {
            initial.push((states.len() - 1, state));
        }
    }
    let mut runner = Runner::new(session.id.clone(), plan, db, &options, attempt_counts, iterations);
    runner.states = states;
    runner.run(initial).await
}

/// Reads a stored session and rebuilds its plan from the store alone (see the module notes on
/// resume): what [`resume_session`] and the interventions ([`crate::interventions`]) start from.
pub(crate) fn load_stored_plan(
    store: &Store,
    session_id: &str,
) -> Result<(orrery_store::Session, SessionPlan), RunError> {
    let session = store.session(session_id)?;
    let root = store.blueprint_version(&session.blueprint_hash)?;
    let mut inner = Vec::new();
    for hash in inner_links(store, session_id)? {
        inner.push(store.blueprint_version(&hash)?);
    }
    let plan = plan_from_versions(&session, &root, &inner)?;
    Ok((session, plan))
}

/// The session's plan from its stored root and inner blueprint versions and its stored params.
fn plan_from_versions(
    session: &orrery_store::Session,
    root_version: &orrery_store::BlueprintVersion,
    inner_versions: &[orrery_store::BlueprintVersion],
) -> Result<SessionPlan, RunError> {
    let mut blueprints = Vec::new();
    for version in std::iter::once(root_version).chain(inner_versions) {
        let loaded = orrery_blueprint::load(&version.canonical_json).map_err(|e| RunError::StoredBlueprint {
            hash: version.hash.clone(),
            message: e.diagnostics.first().map_or_else(|| "it does not load".to_string(), ToString::to_string),
        })?;
        blueprints.push(loaded.blueprint);
    }
    let lib: Library = blueprints.iter().collect();
    let root = ValidBlueprint::new(blueprints[0].clone(), &lib).map_err(|d| RunError::StoredBlueprint {
        hash: root_version.hash.clone(),
        message: d.iter().find(|d| d.is_error()).map_or_else(|| "it is not valid".to_string(), ToString::to_string),
    })?;
    let params = session.params.as_object().cloned().unwrap_or_default();
    Ok(plan::build(&root, &lib, &params)?)
}

/// The inner blueprint versions linked to a session by its [`SESSION_BLUEPRINTS`] event (none
/// for a session created before the link existed or with no composite).
fn inner_links(store: &Store, session_id: &str) -> Result<Vec<String>, StoreError> {
    let mut after = 0;
    loop {
        let page = store.events_after(session_id, after, 200)?;
        let Some(last) = page.last() else { return Ok(Vec::new()) };
        after = last.seq;
        if let Some(event) = page.iter().find(|e| e.kind == SESSION_BLUEPRINTS) {
            let orrery_store::EventPayload::Whole { value } = &event.payload else {
                return Err(StoreError::Corrupt {
                    path: PathBuf::new(),
                    detail: format!("the {SESSION_BLUEPRINTS} event of session {session_id:?} was cut"),
                });
            };
            let inner = value.get("inner").and_then(Value::as_object);
            return Ok(inner.into_iter().flatten().filter_map(|(_, h)| h.as_str().map(str::to_string)).collect());
        }
    }
}

/// The store, reached from the blocking pool, and the observers of what it commits.
struct Db {
    store: Arc<Mutex<Store>>,
    events: Option<broadcast::Sender<Event>>,
}

impl Db {
    async fn call<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Store) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, RunError> {
        let store = Arc::clone(&self.store);
        let result = tokio::task::spawn_blocking(move || {
            let mut guard = store.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            f(&mut guard)
        })
        .await
        .map_err(|e| RunError::Join(e.to_string()))?;
        Ok(result?)
    }

    fn announce(&self, events: impl IntoIterator<Item = Event>) {
        if let Some(sender) = &self.events {
            for event in events {
                // No receiver is not an error: nobody is watching.
                let _ = sender.send(event);
            }
        }
    }

    /// A store call whose events are announced once committed.
    async fn write(
        &self,
        f: impl FnOnce(&mut Store) -> Result<Vec<Event>, StoreError> + Send + 'static,
    ) -> Result<(), RunError> {
        let events = self.call(f).await?;
        self.announce(events);
        Ok(())
    }
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
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RunKind {
    Instant,
    Sleep,
    Shell,
    Composite,
    /// An interactive prompt waiting for its answer.
    Prompt,
}

/// What agents report to the owner.
enum Report {
    Started { node: usize, run_id: RunId, process: ProcessIdentity, canceller: Canceller },
    Progress { node: usize, run_id: RunId, line: ProgressLine },
    Ended { node: usize, run_id: RunId, outcome: AgentOutcome },
}

struct Runner {
    session_id: String,
    plan: SessionPlan,
    scopes: ScopeIndex,
    states: Vec<NodeState>,
    runs: Vec<Option<Run>>,
    db: Db,
    tx: mpsc::UnboundedSender<Report>,
    rx: mpsc::UnboundedReceiver<Report>,
    max_parallel: usize,
    work_dir: PathBuf,
    /// The `shell.run` attempts whose process has not reported its end.
    processes: HashSet<RunId>,
    /// Attempts begun per node.
    attempt_counts: Vec<u32>,
    /// Scope counters by start node, mirrored from the store.
    iterations: HashMap<usize, u32>,
    /// Set when a [`SessionControl`] was given.
    stop: Option<watch::Receiver<bool>>,
    /// The control's answers; without a control a prompt fails at once (nobody can answer).
    answers: Option<Answers>,
}

/// How [`Runner::drive`] ended.
enum End {
    Completed,
    Failed(ErrorRecord),
    Stopped,
}

/// Resolves once a stop is requested; never without a control (or once every handle is gone
/// without a stop).
async fn stop_requested(stop: &mut Option<watch::Receiver<bool>>) {
    if let Some(rx) = stop {
        if rx.wait_for(|s| *s).await.is_ok() {
            return;
        }
    }
    std::future::pending::<()>().await
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
    if let Ok(mut file) = std::fs::OpenOptions::new().create(true).append(true).open(log_path) {
        let _ = writeln!(file, "orrery: {message}");
    }
}

/// Where the session stands after a step.
type Step = Result<Option<ErrorRecord>, RunError>;

fn error_record(code: ErrorCode, message: impl Into<String>) -> ErrorRecord {
    ErrorRecord { code: code.as_str().to_string(), message: message.into(), details: None }
}

fn task_error_record(error: &TaskError) -> ErrorRecord {
    ErrorRecord {
        code: error.code.as_str().to_string(),
        message: error.message.clone(),
        details: error.details.clone(),
    }
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
    ) -> Runner {
        let (tx, rx) = mpsc::unbounded_channel();
        let nodes = plan.graph.nodes.len();
        Runner {
            work_dir: options.work_dir.join(&session_id),
            session_id,
            states: vec![NodeState::Pending; nodes],
            runs: vec![None; nodes],
            attempt_counts,
            scopes: ScopeIndex::new(&plan),
            plan,
            db,
            tx,
            rx,
            max_parallel: options.max_parallel.max(1),
            processes: HashSet::new(),
            iterations,
            stop: options.control.as_ref().map(SessionControl::subscribe),
            answers: options.control.as_ref().map(|c| c.answers.clone()),
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
    async fn run(&mut self, initial: Vec<(usize, NodeState)>) -> Result<RunReport, RunError> {
        if !initial.is_empty() {
            self.set_states(initial).await?;
        }
        self.set_session(SessionState::Running, None).await?;
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
        Ok(RunReport { session_id: self.session_id.clone(), state, error: failure })
    }

    fn stop_is_requested(&self) -> bool {
        self.stop.as_ref().is_some_and(|s| *s.borrow())
    }

    /// Runs until every node is done, the session fails (its error) or a stop is requested.
    async fn drive(&mut self) -> Result<End, RunError> {
        loop {
            if self.stop_is_requested() {
                return Ok(End::Stopped);
            }
            let decisions = scheduler::decide(&self.plan.graph, &self.states);
            let mut moved = false;
            for n in decisions.finish {
                moved = true;
                if let Some(error) = self.finish(n).await? {
                    return Ok(End::Failed(error));
                }
                if self.states[n] != NodeState::Succeeded {
                    // A scope looped and reset nodes: decide again from the new states.
                    break;
                }
            }
            if moved {
                continue;
            }
            for n in decisions.start {
                let is_shell = self.plan.tasks[n].1.task_type.as_str() == shell::TYPE;
                if is_shell && self.processes.len() >= self.max_parallel {
                    continue;
                }
                // An earlier start of this round may have skipped it (a cascade).
                if !matches!(self.states[n], NodeState::Pending | NodeState::SkipRequested) {
                    continue;
                }
                if self.stop_is_requested() {
                    return Ok(End::Stopped);
                }
                moved = true;
                if let Some(error) = self.start(n).await? {
                    return Ok(End::Failed(error));
                }
            }
            if moved {
                continue;
            }
            if scheduler::is_complete(&self.states) {
                return Ok(End::Completed);
            }
            if self.runs.iter().all(Option::is_none) && self.processes.is_empty() {
                // Cannot happen for a valid blueprint; never wait forever on nothing.
                let stuck: Vec<String> =
                    (0..self.states.len()).filter(|&n| !self.states[n].is_done()).map(|n| self.key(n)).collect();
                return Ok(End::Failed(error_record(
                    ErrorCode::TaskDispatchFailed,
                    format!("the session cannot go on: {} can never start", stuck.join(", ")),
                )));
            }
            let report = tokio::select! {
                report = self.rx.recv() => report,
                () = stop_requested(&mut self.stop) => return Ok(End::Stopped),
            };
            let Some(report) = report else { unreachable!("the runner holds a sender") };
            if let Some(error) = self.on_report(report).await? {
                return Ok(End::Failed(error));
            }
        }
    }

    /// Dispatches one startable node: skip, fail to dispatch, or begin an attempt.
    async fn start(&mut self, n: usize) -> Step {
        let (instance, task) = self.plan.tasks[n].clone();
        let instance_id = self.plan.instances[instance].id.clone();
        let context = self.plan.instances[instance].context.clone();
        let data = self.data_of(instance_id.clone()).await?;
        let inputs = match data::resolve_inputs(&task, &data) {
            Ok(inputs) => inputs,
            Err(e) => return self.dispatch_failed(n, e.to_string()).await,
        };
        let mut skip = self.states[n] == NodeState::SkipRequested;
        if !skip {
            if let Some((source, _)) = task.effective_condition() {
                let namespace = data::condition_namespace(&task, &inputs, &context, &data);
                let result = condition::parse(source)
                    .map_err(|e| e.to_string())
                    .and_then(|c| c.evaluate(&namespace).map_err(|e| e.to_string()));
                match result {
                    Ok(holds) => skip = !holds,
                    Err(e) => {
                        let message = format!("task '{}': cannot evaluate condition '{source}': {e}", self.key(n));
                        return self.dispatch_failed(n, message).await;
                    }
                }
            }
        }
        if skip {
            self.skip(n).await?;
            return Ok(None);
        }

        let interaction = interaction::interaction(task.task_type.as_str());
        let kind = match task.task_type.as_str() {
            orrery_blueprint::TaskType::START | orrery_blueprint::TaskType::END => RunKind::Instant,
            orrery_blueprint::TaskType::SLEEP => RunKind::Sleep,
            orrery_blueprint::TaskType::COMPOSITE => RunKind::Composite,
            _ if interaction == Some(Interaction::Display) => RunKind::Instant,
            _ if interaction == Some(Interaction::Prompt) => RunKind::Prompt,
            _ => RunKind::Shell,
        };
        let session = self.session_id.clone();
        let key = self.key(n);
        // The store numbers attempts too; the runner, sole owner of a new session, counts the
        // same way without a read, so the log can be named before the attempt begins.
        let node_dir = self.work_dir.join(&key);
        self.attempt_counts[n] += 1;
        let attempt_no = self.attempt_counts[n];
        let attempt_dir = node_dir.join(format!("attempt-{attempt_no}"));
        let log_path = node_dir.join(format!("attempt-{attempt_no}.log"));
        let new = NewAttempt {
            agent: task.task_type.as_str().to_string(),
            log_path: (kind == RunKind::Shell).then(|| log_path.clone()),
            inputs: Some(Value::Object(inputs.clone())),
            process: None,
        };
        let (attempt, events) = {
            let (session, key) = (session.clone(), key.clone());
            self.db.call(move |s| s.begin_attempt(&session, &key, &new)).await?
        };
        self.db.announce(events);
        self.states[n] = NodeState::Running;
        let run_id = attempt.run_id.clone();
        let mut run = Run { run_id: run_id.clone(), kind, ended: None, canceller: None, sleep: None };
        match kind {
            RunKind::Instant => {
                let mut outputs = Map::new();
                if interaction == Some(Interaction::Display) {
                    let (payload, displayed) = interaction::display(&key, &task, &inputs, &context);
                    outputs = displayed;
                    self.publish(interaction::NOTIFICATION, &run_id, payload).await?;
                }
                run.ended = Some((None, outputs));
                self.states[n] = NodeState::Finishing;
            }
            RunKind::Prompt => {
                self.publish(interaction::PROMPT_WAITING, &run_id, interaction::prompt(&key, &task, &inputs)).await?;
                let answers = self.answers.clone();
                let given = answers.as_ref().and_then(|a| a.get(&key, &task.id));
                match (given, answers) {
                    (Some(answer), _) => match interaction::answer_outputs(&task, answer) {
                        Ok(outputs) => {
                            run.ended = Some((None, outputs));
                            self.states[n] = NodeState::Finishing;
                        }
                        Err(error) => {
                            self.runs[n] = Some(run);
                            return self.fail_run(n, task_error_record(&error), None).await;
                        }
                    },
                    (None, Some(answers)) if answers.when_unanswered() == WhenUnanswered::Wait => {
                        let tx = self.tx.clone();
                        let handle = tokio::spawn({
                            let (run_id, key, task) = (run_id.clone(), key.clone(), task.clone());
                            async move {
                                let answer = answers.wait(&key, &task.id).await;
                                let outcome = match interaction::answer_outputs(&task, answer) {
                                    Ok(outputs) => AgentOutcome::Succeeded { outputs, exit_code: None },
                                    Err(error) => AgentOutcome::Failed { error, exit_code: None },
                                };
                                let _ = tx.send(Report::Ended { node: n, run_id, outcome });
                            }
                        });
                        // Dropped like a sleep when the session stops or fails.
                        run.sleep = Some(handle.abort_handle());
                    }
                    (None, _) => {
                        self.runs[n] = Some(run);
                        let error = interaction::unanswered_error(&key);
                        return self.fail_run(n, task_error_record(&error), None).await;
                    }
                }
            }
            RunKind::Composite => {
                let inner = self.plan.instances.iter().position(|i| i.caller.is_some_and(|(_, c)| c == n));
                if let Some(inner) = inner {
                    let inner_id = self.plan.instances[inner].id.clone();
                    let values = data::composite_inputs(&inputs);
                    if !values.is_empty() {
                        self.db
                            .write(move |s| {
                                let refs: Vec<(&str, Value)> =
                                    values.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
                                Ok(vec![s.put_data(&session, &inner_id, &refs)?])
                            })
                            .await?;
                    }
                }
                self.states[n] = NodeState::Finishing;
            }
            RunKind::Sleep => {
                let seconds = match task.param_value("duration") {
                    None | Some(Value::Null) => Ok(1.0),
                    Some(v) => v.as_f64().filter(|s| s.is_finite() && *s >= 0.0).ok_or_else(|| {
                        TaskError::binding(
                            "duration",
                            format!("param 'duration' must be a number of seconds >= 0, got {v}"),
                        )
                    }),
                };
                let tx = self.tx.clone();
                let handle = tokio::spawn({
                    let run_id = run_id.clone();
                    async move {
                        let outcome = match seconds {
                            Ok(s) => {
                                tokio::time::sleep(Duration::from_secs_f64(s)).await;
                                AgentOutcome::Succeeded { outputs: Map::new(), exit_code: None }
                            }
                            Err(error) => AgentOutcome::Failed { error, exit_code: None },
                        };
                        let _ = tx.send(Report::Ended { node: n, run_id, outcome });
                    }
                });
                run.sleep = Some(handle.abort_handle());
            }
            RunKind::Shell => {
                if let Err(e) = std::fs::create_dir_all(&node_dir) {
                    return Err(RunError::WorkDir { path: node_dir, message: e.to_string() });
                }
                let params: Map<String, Value> = task
                    .params
                    .iter()
                    .map(|p| (p.io.name.clone(), p.io.value.clone().unwrap_or(Value::Null)))
                    .collect();
                let attempt = shell::ShellAttempt::new(params, inputs, attempt_dir, log_path.clone());
                let tx = self.tx.clone();
                self.processes.insert(run_id.clone());
                tokio::spawn({
                    let run_id = run_id.clone();
                    async move {
                        let started_tx = tx.clone();
                        let started_run = run_id.clone();
                        let (progress_tx, progress_run) = (tx.clone(), run_id.clone());
                        let outcome = shell::run(
                            attempt,
                            move |started| {
                                let process = ProcessIdentity { pid: started.pid, start_time: started.start_time };
                                let _ = started_tx.send(Report::Started {
                                    node: n,
                                    run_id: started_run,
                                    process,
                                    canceller: started.canceller,
                                });
                            },
                            move |progress| match progress {
                                ProgressEvent::Report(line) => {
                                    let _ = progress_tx.send(Report::Progress {
                                        node: n,
                                        run_id: progress_run.clone(),
                                        line,
                                    });
                                }
                                ProgressEvent::Warning(warning) => log_warning(&log_path, &warning.message),
                            },
                        )
                        .await;
                        let _ = tx.send(Report::Ended { node: n, run_id, outcome });
                    }
                });
            }
        }
        self.runs[n] = Some(run);
        Ok(None)
    }

    /// Appends an event of `kind` for the attempt `run_id`, announced once committed.
    async fn publish(&self, kind: &str, run_id: &RunId, payload: Value) -> Result<(), RunError> {
        let session = self.session_id.clone();
        let event = NewEvent { kind: kind.to_string(), run_id: Some(run_id.clone()), payload };
        self.db.write(move |s| Ok(vec![s.append_event(&session, &event, None)?])).await
    }

    /// A node that cannot dispatch: it fails, and so does the session.
    async fn dispatch_failed(&mut self, n: usize, message: String) -> Step {
        self.set_states(vec![(n, NodeState::Failed)]).await?;
        Ok(Some(error_record(ErrorCode::TaskDispatchFailed, message)))
    }

    /// Skips a node and its cascade; each writes its declared output defaults.
    async fn skip(&mut self, n: usize) -> Result<(), RunError> {
        let cascade = scopes::skip_cascade(&self.plan, &self.scopes, n);
        let mut states = self.states.clone();
        states[n] = NodeState::Skipped;
        let mut skipped = vec![n];
        skipped.extend(scopes::apply_skip(&mut states, &cascade));
        let mut writes: Vec<(String, String, Value)> = Vec::new();
        for &s in &skipped {
            let instance = self.instance_id(s);
            for (k, v) in data::outputs_to_write(&self.plan.tasks[s].1, None) {
                writes.push((instance.clone(), k, v));
            }
        }
        self.set_states(skipped.iter().map(|&s| (s, NodeState::Skipped)).collect()).await?;
        let session = self.session_id.clone();
        let mut by_instance: Vec<(String, Vec<(String, Value)>)> = Vec::new();
        for (instance, k, v) in writes {
            match by_instance.iter_mut().find(|(i, _)| *i == instance) {
                Some((_, list)) => list.push((k, v)),
                None => by_instance.push((instance, vec![(k, v)])),
            }
        }
        if by_instance.is_empty() {
            return Ok(());
        }
        self.db
            .write(move |s| {
                let mut events = Vec::new();
                for (instance, values) in &by_instance {
                    let refs: Vec<(&str, Value)> = values.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
                    events.push(s.put_data(&session, instance, &refs)?);
                }
                Ok(events)
            })
            .await
    }

    async fn on_report(&mut self, report: Report) -> Step {
        match report {
            Report::Started { node, run_id, process, canceller } => {
                let Some(run) = self.runs[node].as_mut().filter(|r| r.run_id == run_id) else {
                    canceller.cancel();
                    return Ok(None);
                };
                run.canceller = Some(canceller);
                self.db.call(move |s| s.set_attempt_process(&run_id, process)).await?;
                Ok(None)
            }
            Report::Progress { node, run_id, line } => {
                self.record_progress(node, run_id, line).await?;
                Ok(None)
            }
            Report::Ended { node, run_id, outcome } => {
                self.processes.remove(&run_id);
                let Some(run) = self.runs[node].as_mut().filter(|r| r.run_id == run_id && r.ended.is_none()) else {
                    return Ok(None);
                };
                run.canceller = None;
                run.sleep = None;
                match outcome {
                    AgentOutcome::Succeeded { outputs, exit_code } => {
                        run.ended = Some((exit_code, outputs));
                        self.states[node] = NodeState::Finishing;
                        Ok(None)
                    }
                    AgentOutcome::Failed { error, exit_code } => {
                        self.fail_run(node, task_error_record(&error), exit_code).await
                    }
                    AgentOutcome::TimedOut { error, exit_code } => {
                        self.fail_run(node, task_error_record(&error), Some(exit_code)).await
                    }
                    AgentOutcome::Cancelled { exit_code } => {
                        let error =
                            error_record(ErrorCode::TaskFailed, format!("task '{}' was cancelled", self.key(node)));
                        self.fail_run(node, error, Some(exit_code)).await
                    }
                }
            }
        }
    }

    /// Stores one progress line of a run still in the books and announces its event.
    async fn record_progress(&mut self, node: usize, run_id: RunId, line: ProgressLine) -> Result<(), RunError> {
        if self.runs[node].as_ref().is_none_or(|r| r.run_id != run_id) {
            return Ok(());
        }
        let report = orrery_store::ProgressReport {
            step: line.step,
            state: store_step_state(line.state),
            percentage: line.percentage,
        };
        let update = self
            .db
            .call(move |s| match s.report_progress(&run_id, &report) {
                Ok(update) => Ok(update.event),
                // Advisory: a settled attempt or a refused report loses nothing else.
                Err(StoreError::StaleRun { .. } | StoreError::InvalidArgument { .. }) => Ok(None),
                Err(e) => Err(e),
            })
            .await?;
        self.db.announce(update);
        Ok(())
    }

    /// Settles a failed run: the node FAILED, the session fails with its error.
    async fn fail_run(&mut self, n: usize, error: ErrorRecord, exit_code: Option<i32>) -> Step {
        let Some(run) = self.runs[n].take() else { return Ok(None) };
        self.states[n] = NodeState::Failed;
        let record = error.clone();
        self.db
            .write(move |s| {
                s.settle_attempt(
                    &run.run_id,
                    Settlement {
                        outcome: Outcome::Failed { exit_code, error: record },
                        node_state: Some(TaskState::Failed),
                        data: Vec::new(),
                    },
                )
            })
            .await?;
        Ok(Some(error))
    }

    /// Lands a finished run: outcome, SUCCEEDED and outputs in one transaction; then the scope
    /// it ends, if any, decides whether to loop.
    async fn finish(&mut self, n: usize) -> Step {
        let Some(run) = self.runs[n].take() else { unreachable!("a finishing node has a run") };
        let (instance, task) = self.plan.tasks[n].clone();
        let instance_id = self.plan.instances[instance].id.clone();
        let (exit_code, writes) = match run.kind {
            RunKind::Composite => {
                let outer = self.data_of(instance_id.clone()).await?;
                let inner = match self.plan.instances.iter().find(|i| i.caller.is_some_and(|(_, c)| c == n)) {
                    Some(i) => self.data_of(i.id.clone()).await?,
                    None => Data::new(),
                };
                (None, data::composite_outputs(&task, &inner, &outer))
            }
            _ => {
                let (exit_code, outputs) = run.ended.clone().unwrap_or_default();
                (exit_code, data::outputs_to_write(&task, Some(&outputs)))
            }
        };
        let outputs: Map<String, Value> = match run.kind {
            RunKind::Composite => writes.iter().cloned().collect(),
            _ => run.ended.clone().map(|(_, o)| o).unwrap_or_default(),
        };
        let data: Vec<(String, String, Value)> = writes.into_iter().map(|(k, v)| (instance_id.clone(), k, v)).collect();
        let run_id = run.run_id.clone();
        self.states[n] = NodeState::Succeeded;
        self.db
            .write(move |s| {
                s.settle_attempt(
                    &run_id,
                    Settlement {
                        outcome: Outcome::Succeeded { exit_code, outputs: Value::Object(outputs) },
                        node_state: Some(TaskState::Succeeded),
                        data,
                    },
                )
            })
            .await?;
        match self.scopes.ended_by(n).cloned() {
            Some(scope) => self.end_scope(&scope, instance_id).await,
            None => Ok(None),
        }
    }

    /// The end of `scope` succeeded: loop, go on, or fail.
    async fn end_scope(&mut self, scope: &scopes::Scope, instance_id: String) -> Step {
        let so_far = self.iterations.get(&scope.start).copied().unwrap_or(0);
        let needs_data = matches!(scope.policy, scopes::Policy::While { .. });
        let data = if needs_data { self.data_of(instance_id.clone()).await? } else { Data::new() };
        let context = self.plan.instances[scope.instance].context.clone();
        let decision = scopes::decide_scope_end(&self.scopes, scope.id, so_far, || {
            let scopes::Policy::While { condition, .. } = &scope.policy else { return Ok(false) };
            let parsed = condition::parse(condition).map_err(|e| e.to_string())?;
            parsed.evaluate(&data::while_namespace(&context, &data)).map_err(|e| e.to_string())
        });
        match decision {
            ScopeDecision::Continue => Ok(None),
            ScopeDecision::Fail { message, .. } => Ok(Some(error_record(ErrorCode::ScopeConditionError, message))),
            ScopeDecision::Loop { reset, reset_counters, .. } => {
                let session = self.session_id.clone();
                let key = scope.key.clone();
                let nested: Vec<(String, String)> = reset_counters
                    .iter()
                    .filter_map(|id| self.scopes.get(*id))
                    .map(|s| (self.plan.instances[s.instance].id.clone(), s.key.clone()))
                    .collect();
                let counter = self
                    .db
                    .call(move |s| {
                        let n = s.increment_scope_iterations(&session, &instance_id, &key)?;
                        for (instance, key) in &nested {
                            s.set_scope_iterations(&session, instance, key, 0)?;
                        }
                        Ok(n)
                    })
                    .await?;
                self.iterations.insert(scope.start, counter);
                for id in &reset_counters {
                    self.iterations.remove(&id.0);
                }
                for &r in &reset {
                    self.runs[r] = None;
                }
                self.set_states(reset.iter().map(|&r| (r, NodeState::Pending)).collect()).await?;
                Ok(None)
            }
        }
    }

    /// After a failure: cancels what still runs and settles every open attempt as cancelled,
    /// its node back to PENDING.
    async fn stop_in_flight(&mut self) -> Result<(), RunError> {
        for run in self.runs.iter().flatten() {
            if let Some(c) = &run.canceller {
                c.cancel();
            }
            if let Some(h) = &run.sleep {
                h.abort();
            }
        }
        // The exit code each run's agent reported: a run that already ended keeps its own.
        let mut exit_codes: HashMap<RunId, Option<i32>> = HashMap::new();
        for run in self.runs.iter().flatten() {
            if let Some((exit_code, _)) = &run.ended {
                exit_codes.insert(run.run_id.clone(), *exit_code);
            }
        }
        // Shell processes report their end; wait for them so no process outlives the session.
        while !self.processes.is_empty() {
            let Some(report) = self.rx.recv().await else { break };
            match report {
                Report::Started { node, run_id, process, canceller } => {
                    canceller.cancel();
                    // Still name the process on its attempt: it ran.
                    if self.runs[node].as_ref().is_some_and(|r| r.run_id == run_id) {
                        self.db.call(move |s| s.set_attempt_process(&run_id, process)).await?;
                    }
                }
                Report::Progress { node, run_id, line } => self.record_progress(node, run_id, line).await?,
                Report::Ended { run_id, outcome, .. } => {
                    self.processes.remove(&run_id);
                    let exit_code = match outcome {
                        AgentOutcome::Succeeded { exit_code, .. } | AgentOutcome::Failed { exit_code, .. } => exit_code,
                        AgentOutcome::TimedOut { exit_code, .. } | AgentOutcome::Cancelled { exit_code } => {
                            Some(exit_code)
                        }
                    };
                    exit_codes.entry(run_id).or_insert(exit_code);
                }
            }
        }
        for n in 0..self.runs.len() {
            let Some(run) = self.runs[n].take() else { continue };
            self.states[n] = NodeState::Pending;
            let exit_code = exit_codes.get(&run.run_id).copied().flatten();
            self.db
                .write(move |s| {
                    s.settle_attempt(
                        &run.run_id,
                        Settlement {
                            outcome: Outcome::Cancelled { exit_code },
                            node_state: Some(TaskState::Pending),
                            data: Vec::new(),
                        },
                    )
                })
                .await?;
        }
        Ok(())
    }
}
