//! The one facade every face of Orrery calls (docs/architecture.md): the desktop app, the CLI, the
//! HTTP transport, scripts and AI agents all drive Orrery through named jobs with typed
//! arguments and typed answers, answered in one envelope (docs/format.md §6):
//! `{"answer", "success", "metadata"}`.
//!
//! - **The catalogue** ([`Api::jobs`]) names every job with its description and the JSON
//!   Schemas (schemars) of its arguments and of its answer, so forms and clients can be built
//!   from it.
//! - **Refused before it runs** ([`CallError`]): an unknown job, or arguments that break the
//!   job's schema (a missing or unknown field, a wrong type), never reach the job: HTTP answers
//!   them 404 and 422.
//! - **Business failures** (an unknown session, a task that is not running, an invalid
//!   blueprint) are answers: `success: false`, `answer` the readable message, `metadata.error`
//!   its stable code.
//! - **Sessions run here.** A session started (or resumed, restarted) through the facade runs
//!   in the facade's process, in the background; the facade keeps its control (stop, pause,
//!   cancel, answers) and forwards its committed events to [`Api::subscribe`]. A session run by
//!   another process is reached through the store (requests its runner polls, see
//!   `orrery_engine::requests`). Prompts of sessions run here wait for `answer_prompt`.
//!
//! - **Events** carry a `global_seq` (one order over the whole store): `read_events` answers
//!   what a client missed, [`Api::subscribe`] follows what happens next.
//! - **Lineage** (`get_lineage`): within a session, which attempt's output fed which input (the
//!   data key, the value's sha256), and the blueprint instances under their composites.
//! - **Transports**: the CLI calls it in process (`orrery job`), [`http`] serves it over HTTP
//!   on 127.0.0.1 with a bearer token (`orrery serve`).
//!
//! - **The job protocol**'s named tasks (`submit`, `status`, `wait_task`, `cancel`,
//!   `delete_tasks`, ...) map onto sessions: see the `protocol` module.
//!
//! - **Logs**: `read_attempt_log` reads an attempt's log by byte windows (`orrery_logs`).
//!
//! - **Streams**: `stream_task` ([`Api::stream_task`]) follows one task's run: progress, log
//!   bytes, artifacts, result.
//! - **For the editor**: `validate_blueprint` of a text with its folder as library,
//!   `task_names` (what a condition or input may read), `blueprint_scopes` (each scope with its
//!   policy, members and nesting), `write_blueprint_file` (canonical, atomic),
//!   `read_layout`/`save_layout` (positions beside the file, module `files`),
//!   `list_blueprint_files` (what a composite may call).
//! - **For the run views**: `list_sessions` (with who waits for an answer), `get_session` (the
//!   timeline's data), `get_attempt` (details and checklist), `compare_sessions` (two runs side
//!   by side).

pub mod agent;
mod blueprints;
mod bounds;
pub mod broker;
mod catalogue;
mod checklists;
mod compare;
mod files;
mod here;
pub mod http;
mod log_growth;
mod memory;
pub mod mirror;
mod protocol;
mod servers;
mod sessions;
mod stream;

use std::collections::HashMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Instant;

pub use here::{Driver, Ended, Here, Launch, Restart, Run, Unanswered};
/// Safe file IO (ids as file names, bounded reads of regular files, atomic writes), for the shell.
pub use orrery_blueprint::fsio;
/// The code of every failure, at every face.
pub use orrery_blueprint::FailureCode;
use orrery_engine::runner::RunReport;
/// Stop, pause and the answers of a session run in this process ([`Here::control`]).
pub use orrery_engine::runner::{Alone, BreakAt, Breakpoint, SessionControl, SimulatedFailure, Simulation};
/// The store's records, as the jobs answer them.
pub use orrery_store::{Attempt, AttemptState, Event, ScopeIteration, Session, TaskNode};
/// The events of a session, typed by kind, as every face matches them.
pub use orrery_store::{
    BreakpointHolds, BrokerDispatch, DataUpdated, ErrorRecord, EventData, EventKind, EventPayload, HeldTask, LogCapped,
    LogGrew, NotificationShown, Outcome, ProgressChanged, PromptAnswered, PromptWaiting, RemoteLinkChanged,
    SessionBlueprints, SessionCreated, SessionStateChanged, StepState, TaskStateChanged,
};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
pub use sessions::{
    AttemptDetails, AttemptLog, Done, InterventionView, NodeChangeView, SessionListing, SessionView, Started, Waited,
};
pub use stream::{Artifact, LogItem, StreamItem};
use tokio::sync::{broadcast, watch};

/// Every answer: `answer` is the job's typed answer on success, the readable message on a
/// business failure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Envelope {
    pub answer: Value,
    pub success: bool,
    /// `job` (its name), `duration_ms`, and on failure `error` (a stable code).
    pub metadata: Value,
}

impl Envelope {
    /// The business failure it carries: none on success (or from a facade of another build
    /// whose code this one does not know).
    pub fn failure(&self) -> Option<Failure> {
        if self.success {
            return None;
        }
        let code = FailureCode::deserialize(&self.metadata["error"]).ok()?;
        let message = self.answer.as_str().map_or_else(|| self.answer.to_string(), str::to_string);
        Some(Failure::new(code, message))
    }
}

/// A call refused before the job ran.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum CallError {
    #[error("there is no job named {name:?} (list them with `orrery jobs`)")]
    UnknownJob { name: String },
    #[error("job {job}: the arguments do not fit its schema: {message}")]
    InvalidArguments { job: String, message: String },
}

/// A job of the catalogue.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct JobInfo {
    pub name: &'static str,
    pub description: &'static str,
    /// The JSON Schema of `arguments`.
    pub arguments: Value,
    /// The JSON Schema of `answer` on success (for a job that streams, of its answer as an
    /// ordinary call).
    pub answer: Value,
    /// It changes something (a session, a file, the store, a server): it takes a `request_id`
    /// (1 to 64 characters) that makes it safe to send again after a lost answer: the same id
    /// with the same arguments answers the first answer and changes nothing twice; with other
    /// arguments it is refused (`request_id_reused`).
    pub writes: bool,
    /// It can also answer a stream of items ([`StreamItem`]): over HTTP a Server-Sent Events
    /// response to `Accept: text/event-stream`, in process [`Api::stream_task`].
    pub streams: bool,
}

/// A business failure: the job ran and could not do what was asked.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    pub code: FailureCode,
    pub message: String,
    /// The envelope's `answer` when it is not the message (a failed task's status).
    pub answer: Option<Value>,
}

impl Failure {
    pub fn new(code: FailureCode, message: impl Into<String>) -> Failure {
        Failure { code, message: message.into(), answer: None }
    }

    /// A failure whose envelope answers `answer` rather than the message.
    pub fn answering(code: FailureCode, message: impl Into<String>, answer: impl Serialize) -> Failure {
        Failure { answer: serde_json::to_value(answer).ok(), ..Failure::new(code, message) }
    }

    fn into_envelope(self, job: &str, started: Instant) -> Envelope {
        let duration_ms = started.elapsed().as_millis() as u64;
        Envelope {
            answer: self.answer.unwrap_or(Value::String(self.message)),
            success: false,
            metadata: json!({"job": job, "duration_ms": duration_ms, "error": self.code}),
        }
    }
}

/// The store, opened read-only when this process may not write it (another user's store, a
/// read-only folder): it can still be listed and inspected, and a write says why it cannot.
pub(crate) fn open(db: &Path) -> Result<orrery_store::Store, Failure> {
    match orrery_store::Store::open(db) {
        Err(e) if e.code() == FailureCode::ReadOnly => Ok(orrery_store::Store::open_read_only(db)?),
        opened => Ok(opened?),
    }
}

/// Milliseconds since the epoch, as the store stamps its rows.
fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

/// What [`Api::stream_task`] answers.
#[derive(Debug)]
pub enum Streamed {
    /// The items, ending after `result` (or when the store fails under the stream).
    Items(tokio::sync::mpsc::Receiver<StreamItem>),
    /// A business failure, before anything streamed.
    Refused(Envelope),
}

/// The envelope of a job's answer.
fn answered(job: &str, started: Instant, answer: Result<Value, Failure>) -> Envelope {
    match answer {
        Ok(answer) => {
            let duration_ms = started.elapsed().as_millis() as u64;
            Envelope { answer, success: true, metadata: json!({"job": job, "duration_ms": duration_ms}) }
        }
        Err(failure) => failure.into_envelope(job, started),
    }
}

impl From<orrery_store::StoreError> for Failure {
    fn from(e: orrery_store::StoreError) -> Failure {
        Failure::new(e.code(), e.to_string())
    }
}

type JobFuture = Pin<Box<dyn Future<Output = Result<Value, Failure>> + Send>>;
type Handler = Box<dyn Fn(Api, Value) -> Result<JobFuture, String> + Send + Sync>;

struct Job {
    info: JobInfo,
    handler: Handler,
    /// Its `request_id` is the facade's (see [`Job::writing`]), not one its arguments read.
    journaled: bool,
}

impl Job {
    /// Marks a job that changes something ([`JobInfo::writes`]). Unless its arguments take a
    /// `request_id` of their own (a job whose write and answer land in one transaction: a
    /// session's creation), the facade keeps its answer per request id, journaled right after
    /// the job answers; two requests with one id at once run one after the other.
    fn writing(mut self) -> Job {
        self.info.writes = true;
        let properties = self.info.arguments.get_mut("properties").and_then(Value::as_object_mut);
        if let Some(properties) = properties {
            if !properties.contains_key("request_id") {
                properties.insert(
                    "request_id".into(),
                    json!({
                        "type": "string", "minLength": 1, "maxLength": orrery_store::MAX_REQUEST_ID_CHARS,
                        "description": "Makes the call safe to send again after a lost answer: the same id with \
                                        the same arguments answers the first answer and changes nothing twice.",
                    }),
                );
                self.journaled = true;
            }
        }
        self
    }
}

/// A job with typed arguments `A` and answer `R`; arguments that do not deserialize into `A`
/// are refused before `f` runs.
fn job<A, R, F, Fut>(name: &'static str, description: &'static str, f: F) -> Job
where
    A: DeserializeOwned + JsonSchema + Send + 'static,
    R: Serialize + JsonSchema + 'static,
    F: Fn(Api, A) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<R, Failure>> + Send + 'static,
{
    let handler: Handler = Box::new(move |api, arguments| {
        let arguments: A = serde_json::from_value(arguments).map_err(|e| e.to_string())?;
        let answer = f(api, arguments);
        Ok(Box::pin(async move {
            let answer = answer.await?;
            serde_json::to_value(answer)
                .map_err(|e| Failure::new(FailureCode::Internal, format!("the answer does not serialize: {e}")))
        }))
    });
    let schema = |s: schemars::Schema| s.to_value();
    Job {
        info: JobInfo {
            name,
            description,
            arguments: schema(schemars::schema_for!(A)),
            answer: schema(schemars::schema_for!(R)),
            writes: false,
            streams: false,
        },
        handler,
        journaled: false,
    }
}

/// A session running in this process.
struct Running {
    control: SessionControl,
    /// `Some` once it ended: how.
    ended: watch::Receiver<Option<Result<RunReport, String>>>,
}

struct Inner {
    db: PathBuf,
    work_dir: PathBuf,
    max_parallel: usize,
    jobs: Vec<Job>,
    running: Mutex<HashMap<String, Running>>,
    /// The protocol tasks being submitted here (see `protocol::Submitting`).
    submitting: Mutex<std::collections::HashSet<String>>,
    /// The request ids of journaled calls under way here, each held while its call runs.
    requests: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    events: broadcast::Sender<Arc<Event>>,
    /// The followers of remote sessions' mirrors (`mirror`), by local session id.
    mirrors: Mutex<HashMap<String, tokio::task::JoinHandle<()>>>,
    /// When each ended mirror's server was last looked at (`mirror`).
    mirror_looks: Mutex<HashMap<String, std::time::Instant>>,
    /// One connection per MQTT broker address, shared by the sessions started here.
    brokers: tokio::sync::Mutex<HashMap<String, Arc<orrery_broker::Dispatcher>>>,
    /// The usual durations of blueprints' tasks, for `session_timing`.
    pub(crate) usuals: Arc<orrery_engine::timing::UsualCache>,
}

/// The facade over one task store. Cheap to clone; clones share everything. Must be used
/// inside a tokio runtime with its IO and time drivers (`enable_all`).
#[derive(Clone)]
pub struct Api {
    inner: Arc<Inner>,
    /// Who calls through this handle ([`Api::as_caller`]).
    caller: Arc<Caller>,
}

/// Who calls, as the connection says (an HTTP header, the MCP client, a CLI flag): the project
/// an agent's task memory is scoped to, and the agent recorded as the author of what it writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    pub project: String,
    pub agent: String,
}

impl Caller {
    /// The longest project or agent name.
    pub const MAX_CHARS: usize = 128;

    /// A caller, refused when a name is empty, longer than [`Caller::MAX_CHARS`] or holds a
    /// control character.
    pub fn new(project: &str, agent: &str) -> Result<Caller, String> {
        for (what, name) in [("project", project), ("agent", agent)] {
            let n = name.chars().count();
            if n == 0 || n > Caller::MAX_CHARS || name.chars().any(char::is_control) {
                return Err(format!(
                    "the {what} name {name:?} must have 1 to {} characters, none of them a control character",
                    Caller::MAX_CHARS
                ));
            }
        }
        Ok(Caller { project: project.to_string(), agent: agent.to_string() })
    }
}

impl Default for Caller {
    /// The user at this machine, in the default project.
    fn default() -> Caller {
        Caller { project: "default".into(), agent: "user".into() }
    }
}

/// How to open the facade.
#[derive(Debug, Clone)]
pub struct ApiOptions {
    /// The task store.
    pub db: PathBuf,
    /// Where attempt logs go (`work_dir/{session}/...`); default: `runs/` beside the store.
    pub work_dir: Option<PathBuf>,
    /// How many processes a session started here may run at once (default: the cores).
    pub max_parallel: Option<usize>,
}

/// Where the user's task store is unless told otherwise: `<data dir>/orrery/orrery.db`; none
/// when this machine has no data directory.
pub fn default_db_path() -> Option<PathBuf> {
    orrery_store::default_path()
}

/// The log cap of the attempts this process runs, in bytes (see `orrery_engine::process`).
pub fn set_default_log_cap(bytes: u64) {
    orrery_engine::process::set_default_log_cap(bytes);
}

/// Transparent huge pages off for this process and its own helpers, not for the tasks it runs
/// (see `orrery_engine::process::without_huge_pages`): for a process that hosts the engine.
pub fn without_huge_pages() {
    orrery_engine::process::without_huge_pages();
}

/// The values of the variables every process this process runs inherits (`PATH`, the locale;
/// see `orrery_engine::process::inherit_from`), when they are not this process's own.
pub fn inherit_environment(values: impl Fn() -> Vec<(String, std::ffi::OsString)> + Send + Sync + 'static) {
    orrery_engine::process::inherit_from(values);
}

impl Api {
    pub fn new(options: ApiOptions) -> Api {
        // Absolute, so that the log paths stored with the attempts name the same files from any
        // folder (`orrery logs` run elsewhere).
        let work_dir = options.work_dir.unwrap_or_else(|| {
            let runs = options.db.parent().unwrap_or(Path::new(".")).join("runs");
            std::path::absolute(&runs).unwrap_or(runs)
        });
        let max_parallel =
            options.max_parallel.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())).max(1);
        let mut jobs = Vec::new();
        catalogue::register(&mut jobs);
        blueprints::register(&mut jobs);
        files::register(&mut jobs);
        sessions::register(&mut jobs);
        compare::register(&mut jobs);
        protocol::register(&mut jobs);
        stream::register(&mut jobs);
        servers::register(&mut jobs);
        broker::register(&mut jobs);
        memory::register(&mut jobs);
        checklists::register(&mut jobs);
        let (events, _) = broadcast::channel(16_384);
        Api {
            caller: Arc::new(Caller::default()),
            inner: Arc::new(Inner {
                db: options.db,
                work_dir,
                max_parallel,
                jobs,
                running: Mutex::new(HashMap::new()),
                submitting: Mutex::new(Default::default()),
                requests: Default::default(),
                events,
                brokers: Default::default(),
                usuals: Default::default(),
                mirrors: Default::default(),
                mirror_looks: Default::default(),
            }),
        }
    }

    /// This facade, called by `caller` (see [`Caller`]); the clone shares everything else.
    pub fn as_caller(&self, caller: Caller) -> Api {
        Api { inner: self.inner.clone(), caller: Arc::new(caller) }
    }

    /// Who calls through this handle.
    pub fn caller(&self) -> &Caller {
        &self.caller
    }

    /// The task store this facade serves.
    pub fn db(&self) -> &Path {
        &self.inner.db
    }

    /// The folder the attempts' logs go to.
    pub fn work_dir(&self) -> &Path {
        &self.inner.work_dir
    }

    /// The catalogue, in a stable order.
    pub fn jobs(&self) -> Vec<JobInfo> {
        self.inner.jobs.iter().map(|j| j.info.clone()).collect()
    }

    /// Calls job `name` with `arguments` (`null` counts as `{}`).
    pub async fn call(&self, name: &str, arguments: Value) -> Result<Envelope, CallError> {
        let job = self.inner.jobs.iter().find(|j| j.info.name == name);
        let Some(job) = job else { return Err(CallError::UnknownJob { name: name.to_string() }) };
        let mut arguments = if arguments.is_null() { json!({}) } else { arguments };
        let invalid = |message: String| CallError::InvalidArguments { job: name.to_string(), message };
        let retry = match (job.journaled, arguments.as_object_mut().and_then(|a| a.remove("request_id"))) {
            (true, Some(Value::String(id))) => {
                let n = id.chars().count();
                if !(1..=orrery_store::MAX_REQUEST_ID_CHARS).contains(&n) {
                    let most = orrery_store::MAX_REQUEST_ID_CHARS;
                    return Err(invalid(format!("request_id must have 1 to {most} characters, not {n}")));
                }
                Some(orrery_store::Retry { id, operation: name.to_string(), arguments: arguments.clone() })
            }
            (true, Some(Value::Null) | None) => None,
            (true, Some(other)) => return Err(invalid(format!("request_id must be a string, not {other}"))),
            (false, Some(given)) => {
                // Not the facade's: the job's own argument (or an unknown field it refuses).
                arguments["request_id"] = given;
                None
            }
            (false, None) => None,
        };
        let started = Instant::now();
        let future = (job.handler)(self.clone(), arguments).map_err(invalid)?;
        let Some(retry) = retry else { return Ok(answered(name, started, future.await)) };
        let held = {
            let mut requests = self.inner.requests.lock().unwrap_or_else(|p| p.into_inner());
            requests.entry(retry.id.clone()).or_default().clone()
        };
        let guard = held.lock().await;
        let earlier = {
            let retry = retry.clone();
            self.blocking(move |db| Ok(open(db)?.answer_of::<Value>(&retry)?)).await
        };
        let answer = match earlier {
            Ok(Some(answer)) => Ok(answer),
            Err(failure) => Err(failure),
            Ok(None) => match future.await {
                Ok(answer) => self.blocking(move |db| Ok(open(db)?.remember(&retry, answer)?)).await,
                failed => failed,
            },
        };
        drop(guard);
        let mut requests = self.inner.requests.lock().unwrap_or_else(|p| p.into_inner());
        if Arc::strong_count(&held) == 2 {
            requests.retain(|_, h| !Arc::ptr_eq(h, &held));
        }
        Ok(answered(name, started, answer))
    }

    /// Calls the streaming job `stream_task` (see [`JobInfo::streams`]): its items, or its
    /// refusal as an envelope (an unknown task, a stale run).
    pub async fn stream_task(&self, arguments: Value) -> Result<Streamed, CallError> {
        let invalid = |message: String| CallError::InvalidArguments { job: "stream_task".into(), message };
        let arguments = if arguments.is_null() { json!({}) } else { arguments };
        let args: stream::StreamTaskArguments =
            serde_json::from_value(arguments).map_err(|e| invalid(e.to_string()))?;
        let started = Instant::now();
        Ok(match stream::stream_task(self, args).await {
            Ok(items) => Streamed::Items(items),
            Err(failure) => Streamed::Refused(failure.into_envelope("stream_task", started)),
        })
    }

    /// Every committed event of the sessions running in this process, in commit order per
    /// session. Each carries its `global_seq`: after a gap (a lagging receiver, a reconnect),
    /// the job `read_events` answers what was missed. Beside them, transient `log_grew`
    /// events (`seq` 0, not stored) say that a running attempt's log grew (see
    /// `log_growth`).
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Event>> {
        self.inner.events.subscribe()
    }

    /// The ids of the sessions running in this process (started, resumed or restarted through
    /// this facade and not yet ended), in no particular order.
    pub fn running_sessions(&self) -> Vec<String> {
        self.inner.running.lock().unwrap_or_else(|p| p.into_inner()).keys().cloned().collect()
    }

    /// Waits until every session running in this process has ended, and every event of it has
    /// been passed to [`Api::subscribe`]'s receivers.
    pub async fn wait_all(&self) {
        loop {
            let waiting: Vec<watch::Receiver<Option<Result<RunReport, String>>>> = {
                let running = self.inner.running.lock().unwrap_or_else(|p| p.into_inner());
                running.values().map(|r| r.ended.clone()).collect()
            };
            if waiting.is_empty() {
                return;
            }
            for mut ended in waiting {
                let _ = ended.wait_for(Option::is_some).await;
            }
        }
    }

    /// Runs blocking store work off the runtime's workers.
    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Path) -> Result<T, Failure> + Send + 'static,
    ) -> Result<T, Failure> {
        let db = self.inner.db.clone();
        tokio::task::spawn_blocking(move || f(&db))
            .await
            .map_err(|e| Failure::new(FailureCode::Internal, format!("a blocking task failed: {e}")))?
    }
}
