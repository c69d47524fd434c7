//! The job protocol (docs/format.md §6): its thirteen jobs with the documented arguments,
//! answers and failures, mapped onto Orrery's world.
//!
//! - **Registered names** (`registry`) are Orrery's task types that run alone and its stored
//!   blueprints (`save_blueprint` stores one; so does every run), by id.
//! - **A task** is named `{kind}#{registered name}#{task name}`: `kind` is `blueprint` or the
//!   agent of a type (`shell#shell.run#backup`); the task name is 1-32 of `[A-Za-z0-9-]`, or
//!   made up when none is given (the hour, UTC, `YYYYMMDDHH`, and the last 8 characters of the run's
//!   id). A blueprint runs with the other inputs as session params; a type runs as the one task
//!   `task` of a blueprint of its own, with the inputs as its params.
//! - **A run** is a session; its `run_id` is the session id. Resubmitting a name replaces a
//!   finished task (a new session; the old one stays in the store); an active one (queued or
//!   running) is refused.
//! - **Failures** read as the protocol's (`ValueError: Unknown Task: X. Available: ...`,
//!   `KeyError: 'id'`, `FileExistsError: ...`); `metadata.error` carries Orrery's code. A run
//!   that ended without succeeding answers its status with `success: false` (`task_failed`).
//! - `cancel` of a finished run answers `false` (a successful no-op); `delete_tasks` forgets
//!   finished tasks (their sessions stay) and skips active and unknown ones.
//! - `stream_task` (the `stream` module) streams a run: its events, logs, artifacts, result.

use super::*;

use orrery_blueprint::{load, Blueprint, Library, SessionState, ValidBlueprint};
use orrery_engine::runner;
use orrery_store::{Session, Store, SubmittedTask};
use serde_json::Map;

use crate::bounds::{LogLimit, LogOffset, NonEmpty, PollInterval, UniqueIds};

mod graph;
mod registry;
mod status;

use graph::{graph_of, key_error, relations_of, TaskContext};
use registry::Registered;
pub(crate) use status::{is_active, protocol_state, status_of, TaskStatus};

/// The kind of a blueprint's task ids.
const BLUEPRINT: &str = "blueprint";
/// The id of the one task of a single task's blueprint.
const SINGLE_TASK: &str = "task";

/// A registered task as `list_installed_task_definitions` answers it.
#[derive(Debug, Serialize, JsonSchema)]
pub struct TaskDefinition {
    /// The registered name `submit` takes as `task`.
    pub name: String,
    /// `native` (a task type) or `plugin` (a stored blueprint).
    pub source: String,
    /// For a stored blueprint, `orrery-blueprint-store`.
    pub plugin: Option<String>,
    /// The first part of its task ids: the agent of a type, or `blueprint`.
    pub task_type: String,
    pub description: String,
    /// What `submit` takes beside `task`.
    pub input_schema: Value,
    /// What its `result` holds.
    pub output_schema: Value,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DefinitionArguments {
    /// A registered name (a task type or a stored blueprint's id), not a task id.
    pub task: NonEmpty,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct SubmitArguments {
    /// The registered name: a task type (`shell.run`) or a stored blueprint's id.
    pub task: String,
    /// Makes the submit safe to send again after a lost answer (1 to 64 characters): the same
    /// id with the same arguments answers the first submit's handle and starts nothing.
    #[serde(default)]
    pub request_id: Option<String>,
    /// The task's inputs, as its definition's `input_schema` says: `task_name` (1-32 letters,
    /// digits or hyphens; omitted, null or "" names the task anonymously), `source_tasks` (the
    /// full ids of the tasks it comes from, comma separated), then a type's params or a
    /// blueprint's session params. Judged by the task, not by this schema: an input that does
    /// not fit is a failure of the submit.
    #[serde(flatten)]
    pub inputs: Map<String, Value>,
}

/// The common inputs of a submit, taken out of the others.
struct Common {
    /// None: anonymous.
    name: Option<String>,
    source_tasks: String,
}

impl Common {
    fn take(inputs: &mut Map<String, Value>) -> Result<Common, Failure> {
        let refuse = |why: String| Failure::new(FailureCode::InvalidArgument, format!("ValidationError: {why}"));
        let name = match inputs.remove("task_name") {
            None | Some(Value::Null) => None,
            Some(Value::String(name)) if name.is_empty() => None,
            Some(Value::String(name)) if valid_name(&name) => Some(name),
            Some(Value::String(name)) => {
                return Err(refuse(format!("task_name must contain 1-32 letters, digits, or hyphens (got {name:?})")))
            }
            Some(other) => return Err(refuse(format!("task_name must be a string or null, not {other}"))),
        };
        let source_tasks = match inputs.remove("source_tasks") {
            None => String::new(),
            Some(Value::String(s)) => s,
            Some(other) => {
                return Err(refuse(format!(
                    "source_tasks must be a string of task ids separated by commas, not {other}"
                )))
            }
        };
        Ok(Common { name, source_tasks })
    }

    fn sources(&self) -> Vec<String> {
        self.source_tasks.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_string).collect()
    }
}

/// What `submit` answers: the task and its new run.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct TaskHandle {
    pub task_id: String,
    pub run_id: String,
    /// Its registered name.
    pub task: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct TaskIdArguments {
    /// A full task id.
    pub task_id: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExactTaskIdArguments {
    /// A full task id.
    pub task_id: NonEmpty,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WaitArguments {
    pub task_id: NonEmpty,
    /// The run `submit` answered; another (an older run of the same task) is refused.
    pub run_id: NonEmpty,
    /// Seconds between two looks (default 1). There is no time limit: the client's own timeout
    /// bounds the wait.
    #[serde(default)]
    pub poll_interval: Option<PollInterval>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct DeleteArguments {
    pub task_ids: UniqueIds,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct TaskLogArguments {
    pub task_id: String,
    #[serde(default)]
    pub offset: LogOffset,
    #[serde(default)]
    pub limit: LogLimit,
    /// Orrery's own: for a blueprint, read the latest attempt log of this task of it
    /// (`{instance}.{task}`) instead of the run's log.
    #[serde(default)]
    pub task: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SaveArguments {
    /// A blueprint as text (antikythera JSON or a COMPAS envelope).
    pub text: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Saved {
    pub blueprint_id: String,
    /// The stored version's content hash (equal texts, one version).
    pub hash: String,
    pub valid: bool,
    pub diagnostics: Vec<orrery_blueprint::Diagnostic>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VersionArguments {
    pub blueprint_id: String,
    /// The version (its content hash); the newest when absent.
    #[serde(default)]
    pub hash: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct BlueprintVersionText {
    pub blueprint_id: String,
    pub hash: String,
    pub created_ms: i64,
    /// The version's canonical text.
    pub text: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct StoredBlueprint {
    pub blueprint_id: String,
    /// Newest first.
    pub versions: Vec<VersionSummary>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct VersionSummary {
    pub hash: String,
    pub created_ms: i64,
}

/// A protocol task being submitted in this process: a second submission of the same task id
/// is refused until the first has its run (across processes, `put_submitted_task` is a
/// compare-and-swap).
struct Submitting {
    api: Api,
    task_id: String,
}

impl Submitting {
    fn claim(api: &Api, task_id: &str) -> Result<Submitting, Failure> {
        let mut submitting = api.inner.submitting.lock().unwrap_or_else(|p| p.into_inner());
        if !submitting.insert(task_id.to_string()) {
            return Err(Failure::new(
                FailureCode::Refused,
                format!("task {task_id} is being submitted by another request"),
            ));
        }
        Ok(Submitting { api: api.clone(), task_id: task_id.to_string() })
    }
}

impl Drop for Submitting {
    fn drop(&mut self) {
        self.api.inner.submitting.lock().unwrap_or_else(|p| p.into_inner()).remove(&self.task_id);
    }
}

/// The task and its current run's session; `KeyError` when no task has that id.
pub(crate) fn task_and_session(store: &Store, task_id: &str) -> Result<(SubmittedTask, Session), Failure> {
    let task = store.submitted_task(task_id)?.ok_or_else(|| key_error(task_id))?;
    let session = store.session(&task.session_id)?;
    Ok((task, session))
}

/// The task and its session for `run_id`, refusing a stale run.
pub(crate) fn current_run(store: &Store, task_id: &str, run_id: &str) -> Result<(SubmittedTask, Session), Failure> {
    let (task, session) = task_and_session(store, task_id)?;
    if session.id != run_id {
        return Err(Failure::new(
            FailureCode::StaleRun,
            format!("ValueError: Task run changed: {task_id} (its current run is {}, not {run_id})", session.id),
        ));
    }
    Ok((task, session))
}

/// The status of `task_id` once its current run has ended (and its runner let go of it),
/// looking every `every`.
pub(crate) async fn ended_status(
    api: &Api,
    every: std::time::Duration,
    read: impl Fn(&Store) -> Result<(SubmittedTask, Session), Failure> + Clone + Send + Sync + 'static,
) -> Result<TaskStatus, Failure> {
    loop {
        let read = read.clone();
        let (status, session) = api
            .blocking(move |db| {
                let store = open(db)?;
                let (task, session) = read(&store)?;
                Ok((status_of(&store, &task, &session)?, session))
            })
            .await?;
        if !is_active(session.state) && api.control(&session.id).is_none() {
            return Ok(status);
        }
        tokio::time::sleep(every).await;
    }
}

fn valid_name(name: &str) -> bool {
    (1..=32).contains(&name.len()) && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

/// A made-up task name: the hour of `created_ms` (UTC, `YYYYMMDDHH`) and the last 8
/// characters of the run's id, so that a submit retried after a crash names the run it made the same way.
fn anonymous_name(session: &Session) -> String {
    let hour: String =
        orrery_store::iso_8601(session.created_ms, "").chars().filter(char::is_ascii_digit).take(10).collect();
    // The end of the id: its random part (a UUIDv7 begins with the time).
    let alnum: Vec<char> = session.id.chars().filter(char::is_ascii_alphanumeric).collect();
    let mark: String = alnum[alnum.len().saturating_sub(8)..].iter().collect();
    format!("{hour}{mark}")
}

/// The run the first of two identical requests made, once it has stored it (looked for a few
/// seconds); `None` when it did not (it failed, or was not the same request after all).
async fn answered_later(api: &Api, retry: &orrery_store::Retry) -> Result<Option<Session>, Failure> {
    for _ in 0..200 {
        let retry = retry.clone();
        if let Some(session) = api.blocking(move |db| Ok(open(db)?.answer_of::<Session>(&retry)?)).await? {
            return Ok(Some(session));
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    Ok(None)
}

/// What a submit asks, as its retry is keyed: everything but the request id.
fn submit_request(args: &SubmitArguments) -> Value {
    json!({"task": args.task, "inputs": args.inputs})
}

/// Points the task at the run a submit started; `false` when another submit's run is the
/// task's current one by now. The run of a request retried after a crash (the session made,
/// the task not yet pointed at it) takes the task over from an older, finished run.
fn point_at(
    store: &mut Store,
    task_id: &str,
    session: &Session,
    sources: &[String],
    config: &Value,
) -> Result<bool, Failure> {
    let replaces = match store.submitted_task(task_id)? {
        None => None,
        Some(current) if current.session_id == session.id => return Ok(true),
        Some(current) => {
            let other = store.session(&current.session_id)?;
            if is_active(other.state) || other.created_ms > session.created_ms {
                return Ok(false);
            }
            Some(current.session_id)
        }
    };
    if store.put_submitted_task(task_id, &session.id, sources, config, replaces.as_deref())?.is_some() {
        return Ok(true);
    }
    // Lost the write to another pointer: a retry of the same request that pointed the task at
    // this very run meanwhile is a success too.
    Ok(store.submitted_task(task_id)?.is_some_and(|current| current.session_id == session.id))
}

async fn submit(api: Api, mut args: SubmitArguments) -> Result<TaskHandle, Failure> {
    let retry = args.request_id.clone().map(|id| orrery_store::Retry {
        id,
        operation: "submit".into(),
        arguments: submit_request(&args),
    });
    let common = Common::take(&mut args.inputs)?;
    let sources = common.sources();
    let name = common.name;
    let (kind, registered, config, root, library) = {
        let (task, inputs) = (args.task.clone(), args.inputs.clone());
        let (name, source_tasks) = (name.clone(), common.source_tasks);
        api.blocking(move |db| {
            let store = open(db)?;
            let registered = registry::find(&store, &task)?;
            if let Some(why) = registered.refuse_inputs(&inputs) {
                return Err(Failure::new(FailureCode::InvalidArgument, format!("ValidationError: {why}")));
            }
            let mut config = Map::new();
            config.insert("task_name".into(), name.map_or(Value::Null, Value::String));
            config.insert("source_tasks".into(), Value::String(source_tasks));
            config.extend(registered.defaults());
            config.extend(inputs.clone());
            let (root, library) = registry::runnable(&store, &registered, &inputs)?;
            Ok((registered.kind(), registered.name().to_string(), config, root, library))
        })
        .await?
    };
    // The task's id and config once its run is known (an anonymous name comes from the run).
    let identity = {
        let (registered, name) = (registered.clone(), name.clone());
        move |session: &Session| {
            let name = name.clone().unwrap_or_else(|| anonymous_name(session));
            let mut config = config.clone();
            config.insert("task_name".into(), Value::String(name.clone()));
            (format!("{kind}#{registered}#{name}"), Value::Object(config))
        }
    };
    // A request sent again: the run the first one made, pointed at if the answer was lost
    // before it was.
    if let Some(retry) = retry.clone() {
        let (sources, identity, registered) = (sources.clone(), identity.clone(), registered.clone());
        let earlier = api
            .blocking(move |db| {
                let mut store = open(db)?;
                let Some(session) = store.answer_of::<Session>(&retry)? else { return Ok(None) };
                let (task_id, config) = identity(&session);
                point_at(&mut store, &task_id, &session, &sources, &config)?;
                Ok(Some(TaskHandle { task_id, run_id: session.id, task: registered.clone() }))
            })
            .await?;
        if let Some(handle) = earlier {
            return Ok(handle);
        }
    }
    // A fixed name is claimed here, and looked at, before its run starts. The same request
    // sent twice at once: the second waits for the first's answer.
    let _submitting = match &name {
        Some(name) => {
            let task_id = format!("{kind}#{registered}#{name}");
            let claim = match (Submitting::claim(&api, &task_id), &retry) {
                (Ok(claim), _) => claim,
                (Err(refused), Some(retry)) => {
                    let session = answered_later(&api, retry).await?.ok_or(refused)?;
                    let (task_id, _) = identity(&session);
                    return Ok(TaskHandle { task_id, run_id: session.id, task: registered.clone() });
                }
                (Err(refused), None) => return Err(refused),
            };
            api.blocking(move |db| {
                let store = open(db)?;
                match store.submitted_task(&task_id)? {
                    Some(current) => {
                        let session = store.session(&current.session_id)?;
                        if is_active(session.state) {
                            return Err(Failure::new(
                                FailureCode::Refused,
                                format!(
                                    "FileExistsError: Active Task already exists: {task_id} (run {} is {}; cancel it \
                                     first)",
                                    session.id,
                                    protocol_state(session.state)
                                ),
                            ));
                        }
                        Ok(())
                    }
                    None => Ok(()),
                }
            })
            .await?;
            Some(claim)
        }
        None => None,
    };
    let params = if kind == BLUEPRINT { args.inputs } else { Map::new() };
    let again = retry.clone();
    let started = api
        .launch(crate::here::Launch::default(), move |db, mut options| async move {
            options.retry = retry;
            runner::run_session(&db, root, library, params, options).await
        })
        .await;
    let started = match started {
        Ok(started) => started,
        // The same request, sent twice at once: the other one started the run.
        Err(failure) => match again {
            Some(retry) => {
                let session = api.blocking(move |db| Ok(open(db)?.answer_of::<Session>(&retry)?)).await?;
                let session = session.ok_or(failure)?;
                let (task_id, _) = identity(&session);
                return Ok(TaskHandle { task_id, run_id: session.id, task: registered.clone() });
            }
            None => return Err(failure),
        },
    };
    let run_id = started.session_id.clone();
    let (pointed, task_id) = {
        let run_id = run_id.clone();
        api.blocking(move |db| {
            let mut store = open(db)?;
            let session = store.session(&run_id)?;
            let (task_id, config) = identity(&session);
            Ok((point_at(&mut store, &task_id, &session, &sources, &config)?, task_id))
        })
        .await?
    };
    if !pointed {
        // Another process submitted it since it was looked at: its run wins, this one must
        // not go on.
        let _ = api.call("stop_session", json!({"session_id": run_id})).await;
        return Err(Failure::new(
            FailureCode::Refused,
            format!("FileExistsError: Active Task already exists: {task_id} (another client submitted it meanwhile)"),
        ));
    }
    Ok(TaskHandle { task_id, run_id, task: registered })
}

pub(crate) fn register(jobs: &mut Vec<Job>) {
    jobs.push(
        job(
            "save_blueprint",
            "Stores a blueprint as a version (its content hash names it); says whether it is valid.",
            |api: Api, args: SaveArguments| async move {
                api.blocking(move |db| {
                    let loaded = crate::blueprints::loaded(&args.text)?;
                    let report = crate::blueprints::report_of(args.text.clone(), loaded.clone());
                    let text = orrery_blueprint::save::to_string(&loaded.blueprint, orrery_blueprint::Encoding::Plain);
                    let hash = open(db)?.put_blueprint_version(&loaded.blueprint.id, &text)?;
                    Ok(Saved {
                        blueprint_id: loaded.blueprint.id,
                        hash,
                        valid: report.valid,
                        diagnostics: report.diagnostics,
                    })
                })
                .await
            },
        )
        .writing(),
    );
    jobs.push(job(
        "list_blueprints",
        "The stored blueprints and their versions.",
        |api: Api, _: crate::catalogue::NoArguments| async move {
            api.blocking(|db| {
                let store = open(db)?;
                let mut all = Vec::new();
                for id in store.blueprint_ids()? {
                    let versions = store
                        .blueprint_versions(&id)?
                        .into_iter()
                        .map(|v| VersionSummary { hash: v.hash, created_ms: v.created_ms })
                        .collect();
                    all.push(StoredBlueprint { blueprint_id: id, versions });
                }
                Ok(all)
            })
            .await
        },
    ));
    jobs.push(job(
        "get_blueprint_version",
        "The text of a stored blueprint version (`hash`; the newest when absent).",
        |api: Api, args: VersionArguments| async move {
            api.blocking(move |db| {
                let versions = open(db)?.blueprint_versions(&args.blueprint_id)?;
                let found = match &args.hash {
                    None => versions.into_iter().next(),
                    Some(hash) => versions.into_iter().find(|v| &v.hash == hash),
                };
                let v = found.ok_or_else(|| {
                    let which = args.hash.as_deref().map_or_else(|| "any version".into(), |h| format!("version {h}"));
                    Failure::new(
                        FailureCode::NotFound,
                        format!("no stored blueprint {:?} of {which}", args.blueprint_id),
                    )
                })?;
                Ok(BlueprintVersionText {
                    blueprint_id: v.blueprint_id,
                    hash: v.hash,
                    created_ms: v.created_ms,
                    text: v.canonical_json,
                })
            })
            .await
        },
    ));
    jobs.push(job(
        "list_installed_task_definitions",
        "Every registered name a task is submitted by (Orrery's task types, then its stored \
         blueprints), sorted by name, with the JSON Schemas of its inputs and of its result.",
        |api: Api, _: crate::catalogue::NoArguments| async move {
            api.blocking(|db| Ok(registry::all(&open(db)?)?.iter().map(Registered::definition).collect::<Vec<_>>()))
                .await
        },
    ));
    jobs.push(job(
        "get_task_definition",
        "One registered name (`task`: a task type or a stored blueprint's id, not a task id): its \
         description and the JSON Schemas of its inputs and result.",
        |api: Api, args: DefinitionArguments| async move {
            api.blocking(move |db| Ok(registry::find(&open(db)?, &args.task.0)?.definition())).await
        },
    ));
    jobs.push(
        job(
            "submit",
            "Starts a task: `task` (a registered name) with its inputs beside it, `task_name` (fixed, or \
         made up when omitted) and `source_tasks` (comma-separated task ids). Answers the task's id and \
         its new run. A fixed name replaces a finished task; an active one is refused.",
            submit,
        )
        .writing(),
    );
    jobs.push(job(
        "status",
        "A task's current run: state, config, times, pid, exit code, error, result, steps, log path.",
        |api: Api, args: TaskIdArguments| async move {
            api.blocking(move |db| {
                let store = open(db)?;
                let (task, session) = task_and_session(&store, &args.task_id)?;
                status_of(&store, &task, &session)
            })
            .await
        },
    ));
    jobs.push(job(
        "list_task_ids",
        "Every task's id, newest first.",
        |api: Api, _: crate::catalogue::NoArguments| async move {
            Ok(statuses(&api).await?.into_iter().map(|s| s.task_id).collect::<Vec<_>>())
        },
    ));
    jobs.push(job(
        "list_task_statuses",
        "Every task's status, newest first (by created_at, then task_id).",
        |api: Api, _: crate::catalogue::NoArguments| async move { statuses(&api).await },
    ));
    jobs.push(job(
        "wait_task",
        "Waits until the run `run_id` of a task has ended, looking every `poll_interval` seconds \
         (default 1); answers its status, with success only when it succeeded. A stale run is refused.",
        |api: Api, args: WaitArguments| async move {
            let every = args.poll_interval.unwrap_or(PollInterval(1.0)).duration();
            let (task_id, run_id) = (args.task_id.0, args.run_id.0);
            let status = ended_status(&api, every, move |store| current_run(store, &task_id, &run_id)).await?;
            if status.state != "succeeded" {
                let message = format!("{} {}: {}", status.task_id, status.state, status.error);
                return Err(Failure::answering(FailureCode::TaskFailed, message, status));
            }
            Ok(status)
        },
    ));
    jobs.push(
        job(
            "cancel",
            "Cancels a task's active run: true when it was active and is being stopped, false (a \
         successful no-op) when it had ended.",
            |api: Api, args: TaskIdArguments| async move {
                let session = api.blocking(move |db| Ok(task_and_session(&open(db)?, &args.task_id)?.1)).await?;
                if !is_active(session.state) {
                    return Ok(false);
                }
                let stopped = api.call("stop_session", json!({"session_id": session.id})).await;
                match stopped {
                    Ok(envelope) if envelope.success => Ok(true),
                    Ok(envelope) => match envelope.failure() {
                        Some(failure) => Err(failure),
                        None => Ok(false),
                    },
                    Err(e) => Err(Failure::new(FailureCode::Internal, e.to_string())),
                }
            },
        )
        .writing(),
    );
    jobs.push(
        job(
            "delete_tasks",
            "Forgets ended tasks (their runs stay in the store as sessions); active and unknown ones \
         are skipped. Answers the ids forgotten, in the order asked.",
            |api: Api, args: DeleteArguments| async move {
                api.blocking(move |db| {
                    let mut store = open(db)?;
                    let mut deleted = Vec::new();
                    for task_id in args.task_ids.0 {
                        let Some(task) = store.submitted_task(&task_id)? else { continue };
                        if is_active(store.session(&task.session_id)?.state) {
                            continue;
                        }
                        if store.delete_submitted_task(&task_id)? {
                            deleted.push(task_id);
                        }
                    }
                    Ok(deleted)
                })
                .await
            },
        )
        .writing(),
    );
    jobs.push(job(
        "read_task_log",
        "A byte window of a task's log, aligned to UTF-8: `offset` -1 (the default) reads the tail, \
         continue from `next_offset`; `limit` bytes (1,024 to 262,144, default 65,536). A single task's \
         log is its process's output; a blueprint's is its run's events, one line each (`task` names \
         one of its tasks to read that task's log instead).",
        |api: Api, args: TaskLogArguments| async move {
            api.blocking(move |db| {
                let store = open(db)?;
                let (task, session) = task_and_session(&store, &args.task_id)?;
                status::log_window(&store, &task, &session, args.task.as_deref(), args.offset.0, args.limit.0)
            })
            .await
        },
    ));
    jobs.push(job(
        "get_task_graph",
        "The tasks linked to one through `source_tasks`, up and down (the whole connected \
         component): nodes (missing: named but never submitted; provisional: not succeeded yet) \
         and edges from parent to child.",
        |api: Api, args: ExactTaskIdArguments| async move {
            api.blocking(move |db| graph_of(&open(db)?, &args.task_id.0)).await
        },
    ));
    jobs.push(job(
        "get_task_context",
        "What an agent needs about a task: its status, whether its result is published, its log \
         path, its graph and its relations (upstream, ancestors, downstream, missing, provisional).",
        |api: Api, args: ExactTaskIdArguments| async move {
            api.blocking(move |db| {
                let store = open(db)?;
                let task_id = args.task_id.0;
                let (task, session) = task_and_session(&store, &task_id)?;
                let status = status_of(&store, &task, &session)?;
                let graph = graph_of(&store, &task_id)?;
                let relations = relations_of(&graph, &task_id);
                let selected = graph.nodes.iter().find(|n| n.task_id == task_id);
                let metadata_exists = selected.is_some_and(|n| !n.missing && !n.provisional);
                Ok(TaskContext {
                    metadata_path: format!("{}/{task_id}/metadata.json", status.task_type),
                    log_path: Some(status.log_path.clone()).filter(|p| !p.is_empty()),
                    task_id,
                    status,
                    metadata_exists,
                    graph,
                    relations,
                })
            })
            .await
        },
    ));
}

/// Every task's status, newest first (by created_at, then task_id).
async fn statuses(api: &Api) -> Result<Vec<TaskStatus>, Failure> {
    api.blocking(|db| {
        let store = open(db)?;
        let mut all = Vec::new();
        for task in store.submitted_tasks()? {
            let session = store.session(&task.session_id)?;
            all.push((session.created_ms, status_of(&store, &task, &session)?));
        }
        all.sort_by(|(a, x), (b, y)| (b, &y.task_id).cmp(&(a, &x.task_id)));
        Ok(all.into_iter().map(|(_, s)| s).collect())
    })
    .await
}
