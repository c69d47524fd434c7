//! The job protocol's named tasks (docs/format.md §6), mapped onto Orrery's world.
//!
//! - **A task** is a blueprint session or a single task of a registered type, named
//!   `{type}#{registered_name}#{task_name}` (task name: 1-32 of `[A-Za-z0-9-]`):
//!   - `blueprint#{blueprint id}#{name}` runs the newest stored version of that blueprint
//!     (`save_blueprint` stores one; so does every run) with `arguments` as session params;
//!   - `{agent}#{tool}#{name}` runs one task of type `{agent}.{tool}` (e.g. `shell#run#backup`)
//!     with `arguments` as its params, in a blueprint of its own (start, the task, end) whose id
//!     is `task_{agent}_{tool}_{name}`.
//! - **A run** is a session; its `run_id` is the session id. Resubmitting a name replaces a
//!   finished task (a new session; the old one stays in the store); an active one (queued or
//!   running) is refused.
//! - **States**: a session `pending` is `queued`, `running` is `running`, `completed` is
//!   `succeeded`, `failed` is `failed`, `stopped` is `cancelled`.
//! - `cancel` of a finished run answers `false` (a successful no-op); `delete_tasks` forgets
//!   finished tasks (their sessions stay) and skips active ones.
//!
//! - `read_task_log` reads the log of the run's task (a single task's own; for a blueprint, the
//!   task named by `task`) by byte windows; `get_task_graph` is the whole connected component of
//!   tasks linked by `source_tasks`, a referenced task with no record `missing`, one whose run
//!   has not ended `provisional`.
//! - `stream_task` (the `stream` module) streams a run: its events, logs, artifacts, result.

use super::*;

use orrery_blueprint::{load, Blueprint, Library, SessionState, ValidBlueprint};
use orrery_engine::runner;
use orrery_store::{Session, Store, SubmittedTask};
use serde_json::Map;

use crate::sessions::attempt_window;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SubmitArguments {
    /// `blueprint`, or the agent of a task type (`shell` for `shell.run`).
    #[serde(rename = "type")]
    pub kind: String,
    /// A blueprint id, or the tool of a task type (`run` for `shell.run`).
    pub registered_name: String,
    /// 1-32 of `[A-Za-z0-9-]`.
    pub task_name: String,
    /// Session params of a blueprint, or the params of a single task.
    #[serde(default)]
    pub arguments: Map<String, Value>,
    /// Task ids this one declares as its upstream.
    #[serde(default)]
    pub source_tasks: Vec<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskIdArguments {
    pub task_id: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunArguments {
    pub task_id: String,
    /// The run meant; a stale one (not the task's current run) is refused.
    pub run_id: String,
    /// For `wait_task`: at most this long (default 60 s).
    pub timeout_s: Option<f64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeleteArguments {
    pub task_ids: Vec<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SaveArguments {
    /// A blueprint as text (antikythera JSON or a COMPAS envelope).
    pub text: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskLogArguments {
    pub task_id: String,
    pub run_id: String,
    /// For a blueprint task: which of its tasks (`{instance}.{task}` or a root task id).
    pub task: Option<String>,
    /// Which attempt; the latest when absent.
    pub attempt: Option<u32>,
    /// A byte offset; -1 (the default) reads the tail.
    pub offset: Option<i64>,
    /// Clamped to 1,024..262,144 (default 65,536).
    pub limit: Option<u64>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct GraphNode {
    pub task_id: String,
    /// `ok`, `provisional` (its run has not ended) or `missing` (referenced, never submitted).
    pub status: String,
    pub state: Option<String>,
    pub run_id: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct GraphEdge {
    /// The parent (a source task).
    pub from: String,
    pub to: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct TaskGraph {
    pub nodes: Vec<GraphNode>,
    pub edges: Vec<GraphEdge>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Submitted {
    pub task_id: String,
    pub run_id: String,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct TaskStatus {
    pub task_id: String,
    pub run_id: String,
    /// queued, running, succeeded, failed or cancelled.
    pub state: String,
    pub error: Option<orrery_store::ErrorRecord>,
    pub started_ms: Option<i64>,
    pub finished_ms: Option<i64>,
    pub source_tasks: Vec<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct TaskContext {
    pub status: TaskStatus,
    /// The session params it was submitted with.
    pub params: Value,
    /// Its session data, by blueprint instance.
    pub data: std::collections::BTreeMap<String, std::collections::BTreeMap<String, Value>>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Saved {
    pub blueprint_id: String,
    /// The stored version's content hash (equal texts, one version).
    pub hash: String,
    pub valid: bool,
    pub diagnostics: Vec<orrery_blueprint::Diagnostic>,
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

fn protocol_state(state: SessionState) -> &'static str {
    match state {
        SessionState::Pending => "queued",
        SessionState::Running => "running",
        SessionState::Completed => "succeeded",
        SessionState::Failed => "failed",
        SessionState::Stopped => "cancelled",
    }
}

fn is_active(state: SessionState) -> bool {
    matches!(state, SessionState::Pending | SessionState::Running)
}

pub(crate) fn status_of(task: SubmittedTask, session: &Session) -> TaskStatus {
    TaskStatus {
        task_id: task.task_id,
        run_id: session.id.clone(),
        state: protocol_state(session.state).to_string(),
        error: session.last_error.clone(),
        started_ms: session.started_ms,
        finished_ms: session.finished_ms,
        source_tasks: task.source_tasks,
    }
}

/// The task and its current run's session; `not_found` when no task has that id.
fn task_and_session(store: &Store, task_id: &str) -> Result<(SubmittedTask, Session), Failure> {
    let task = store
        .submitted_task(task_id)?
        .ok_or_else(|| Failure::new(FailureCode::NotFound, format!("no task {task_id:?}")))?;
    let session = store.session(&task.session_id)?;
    Ok((task, session))
}

fn valid_name(name: &str) -> bool {
    (1..=32).contains(&name.len()) && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

/// The root and library of a submission: a stored blueprint (with every stored blueprint as
/// candidates for its composites), or one task of a registered type in a blueprint of its own.
fn runnable(store: &Store, args: &SubmitArguments) -> Result<(ValidBlueprint, Vec<Blueprint>), Failure> {
    let invalid = |e: Vec<orrery_blueprint::Diagnostic>| {
        let errors: Vec<String> = e.iter().filter(|d| d.is_error()).map(ToString::to_string).collect();
        Failure::new(FailureCode::InvalidBlueprint, errors.join("; "))
    };
    if args.kind == "blueprint" {
        let newest = |id: &str| -> Result<Option<Blueprint>, Failure> {
            let Some(version) = store.blueprint_versions(id)?.into_iter().next() else { return Ok(None) };
            Ok(Some(load(&version.canonical_json).map_err(|e| invalid(e.diagnostics))?.blueprint))
        };
        let root = newest(&args.registered_name)?.ok_or_else(|| {
            Failure::new(
                FailureCode::NotFound,
                format!("no stored blueprint {:?} (save_blueprint stores one)", args.registered_name),
            )
        })?;
        let mut library = vec![root.clone()];
        for id in store.blueprint_ids()? {
            if id != args.registered_name {
                library.extend(newest(&id)?);
            }
        }
        let lib: Library = library.iter().collect();
        let root = ValidBlueprint::new(root, &lib).map_err(invalid)?;
        return Ok((root, library));
    }
    let task_type = format!("{}.{}", args.kind, args.registered_name);
    if !orrery_engine::agents::is_known(&task_type) {
        let known = orrery_engine::agents::known_type_names().join(", ");
        return Err(Failure::new(
            FailureCode::NotFound,
            format!("no task type {task_type:?}; known: blueprint, {known}"),
        ));
    }
    let params: Vec<Value> = args.arguments.iter().map(|(k, v)| json!({"name": k, "value": v})).collect();
    let id = format!("task_{}_{}_{}", args.kind, args.registered_name, args.task_name);
    let text = json!({"id": id, "name": id, "version": "1.0", "tasks": [
        {"id": "start", "type": "system.start"},
        {"id": "task", "type": task_type, "params": params, "depends_on": [{"id": "start"}]},
        {"id": "end", "type": "system.end", "depends_on": [{"id": "task"}]}]});
    let blueprint = load(&text.to_string()).map_err(|e| invalid(e.diagnostics))?.blueprint;
    let lib: Library = std::iter::once(&blueprint).collect();
    let root = ValidBlueprint::new(blueprint.clone(), &lib).map_err(invalid)?;
    Ok((root, vec![blueprint]))
}

/// The task and its session for `run_id`, refusing a stale run.
pub(crate) fn current_run(store: &Store, task_id: &str, run_id: &str) -> Result<(SubmittedTask, Session), Failure> {
    let (task, session) = task_and_session(store, task_id)?;
    if session.id != run_id {
        return Err(Failure::new(
            FailureCode::StaleRun,
            format!("run {run_id} is not the current run of {task_id} (it is {})", session.id),
        ));
    }
    Ok((task, session))
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

pub(crate) fn register(jobs: &mut Vec<Job>) {
    jobs.push(job(
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
    ));
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
        "submit",
        "Submits a named task (a blueprint session or one task of a registered type) and starts its \
         run; resubmitting a finished task starts a new run, an active one is refused.",
        |api: Api, args: SubmitArguments| async move {
            if !valid_name(&args.task_name) {
                return Err(Failure::new(
                    FailureCode::InvalidArgument,
                    format!("task name {:?} is not 1-32 of [A-Za-z0-9-]", args.task_name),
                ));
            }
            let task_id = format!("{}#{}#{}", args.kind, args.registered_name, args.task_name);
            let _submitting = Submitting::claim(&api, &task_id)?;
            let (root, library, params, sources, replaces) = {
                let task_id = task_id.clone();
                api.blocking(move |db| {
                    let store = open(db)?;
                    let current = store.submitted_task(&task_id)?.map(|t| task_and_session(&store, &t.task_id));
                    let replaces = match current.transpose()? {
                        Some((_, session)) if is_active(session.state) => {
                            return Err(Failure::new(
                                FailureCode::Refused,
                                format!(
                                    "task {task_id} is active (run {} is {}); cancel it first",
                                    session.id,
                                    protocol_state(session.state)
                                ),
                            ));
                        }
                        current => current.map(|(task, _)| task.session_id),
                    };
                    let (root, library) = runnable(&store, &args)?;
                    let params = if args.kind == "blueprint" { args.arguments } else { Map::new() };
                    Ok((root, library, params, args.source_tasks, replaces))
                })
                .await?
            };
            let started = api
                .launch(Map::new(), move |db, options| async move {
                    runner::run_session(&db, root, library, params, options).await
                })
                .await?;
            let run_id = started.session_id.clone();
            let (id, run) = (task_id.clone(), run_id.clone());
            let put = api
                .blocking(move |db| Ok(open(db)?.put_submitted_task(&id, &run, &sources, replaces.as_deref())?))
                .await?;
            if put.is_none() {
                // Another process submitted it since it was looked at: its run wins, this one
                // must not go on.
                let _ = api.call("stop_session", json!({"session_id": run_id})).await;
                return Err(Failure::new(
                    FailureCode::Refused,
                    format!("task {task_id} was submitted by another client meanwhile; its run is the current one"),
                ));
            }
            Ok(Submitted { task_id, run_id })
        },
    ));
    jobs.push(job(
        "status",
        "A task's current run: its state, error and times.",
        |api: Api, args: TaskIdArguments| async move {
            api.blocking(move |db| {
                let store = open(db)?;
                let (task, session) = task_and_session(&store, &args.task_id)?;
                Ok(status_of(task, &session))
            })
            .await
        },
    ));
    jobs.push(job(
        "list_task_ids",
        "Every submitted task's id.",
        |api: Api, _: crate::catalogue::NoArguments| async move {
            api.blocking(|db| Ok(open(db)?.submitted_tasks()?.into_iter().map(|t| t.task_id).collect::<Vec<_>>())).await
        },
    ));
    jobs.push(job(
        "list_task_statuses",
        "Every submitted task with the state of its current run.",
        |api: Api, _: crate::catalogue::NoArguments| async move {
            api.blocking(|db| {
                let store = open(db)?;
                let mut all = Vec::new();
                for task in store.submitted_tasks()? {
                    let session = store.session(&task.session_id)?;
                    all.push(status_of(task, &session));
                }
                Ok(all)
            })
            .await
        },
    ));
    jobs.push(job(
        "wait_task",
        "Waits until the run `run_id` of a task has ended, at most `timeout_s`; a stale run is refused.",
        |api: Api, args: RunArguments| async move {
            let (task_id, run_id) = (args.task_id, args.run_id);
            let (task, session, _) =
                api.poll_until_ended(args.timeout_s, move |db| current_run(&open(db)?, &task_id, &run_id)).await?;
            Ok(status_of(task, &session))
        },
    ));
    jobs.push(job(
        "cancel",
        "Cancels the run `run_id` of a task: true when it was active and is being stopped, false \
         (a successful no-op) when it had ended; a stale run is refused.",
        |api: Api, args: RunArguments| async move {
            let (task_id, run_id) = (args.task_id.clone(), args.run_id.clone());
            let session = api
                .blocking(move |db| {
                    let store = open(db)?;
                    Ok(current_run(&store, &task_id, &run_id)?.1)
                })
                .await?;
            if !is_active(session.state) {
                return Ok(false);
            }
            let stopped = api.call("stop_session", json!({"session_id": session.id})).await;
            match stopped {
                Ok(envelope) if envelope.success => Ok(true),
                Ok(envelope) => Err(Failure::new(
                    FailureCode::Refused,
                    envelope.answer.as_str().unwrap_or("cannot stop it").to_string(),
                )),
                Err(e) => Err(Failure::new(FailureCode::Internal, e.to_string())),
            }
        },
    ));
    jobs.push(job(
        "delete_tasks",
        "Forgets finished tasks (their sessions stay in the store); active ones are skipped. \
         Answers the ids forgotten.",
        |api: Api, args: DeleteArguments| async move {
            api.blocking(move |db| {
                let mut store = open(db)?;
                let mut deleted = Vec::new();
                for task_id in args.task_ids {
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
    ));
    jobs.push(job(
        "read_task_log",
        "A byte window of the log of a task's run (a single task's own; for a blueprint, of its task `task`).",
        |api: Api, args: TaskLogArguments| async move {
            api.blocking(move |db| {
                let store = open(db)?;
                let (_, session) = current_run(&store, &args.task_id, &args.run_id)?;
                let task = match (args.task, args.task_id.starts_with("blueprint#")) {
                    (Some(task), _) => task,
                    (None, false) => "task".to_string(),
                    (None, true) => {
                        let message = format!("{} is a blueprint: name one of its tasks with `task`", args.task_id);
                        return Err(Failure::new(FailureCode::InvalidArgument, message));
                    }
                };
                let (_, window) = attempt_window(&store, &session.id, &task, args.attempt, args.offset, args.limit)?;
                Ok(window)
            })
            .await
        },
    ));
    jobs.push(job(
        "get_task_graph",
        "The tasks linked to one through `source_tasks`, up and down: the whole connected component, \
         edges from parent to child.",
        |api: Api, args: TaskIdArguments| async move {
            api.blocking(move |db| {
                let store = open(db)?;
                let all = store.submitted_tasks()?;
                if !all.iter().any(|t| t.task_id == args.task_id) {
                    return Err(Failure::new(FailureCode::NotFound, format!("no task {:?}", args.task_id)));
                }
                let mut edges: Vec<(String, String)> = Vec::new();
                for task in &all {
                    for source in &task.source_tasks {
                        edges.push((source.clone(), task.task_id.clone()));
                    }
                }
                // The connected component, following edges both ways.
                let mut seen: Vec<String> = vec![args.task_id.clone()];
                let mut frontier = vec![args.task_id.clone()];
                while let Some(id) = frontier.pop() {
                    for (from, to) in &edges {
                        let other = if *from == id {
                            to
                        } else if *to == id {
                            from
                        } else {
                            continue;
                        };
                        if !seen.contains(other) {
                            seen.push(other.clone());
                            frontier.push(other.clone());
                        }
                    }
                }
                seen.sort();
                let mut nodes = Vec::new();
                for id in &seen {
                    nodes.push(match all.iter().find(|t| t.task_id == *id) {
                        None => GraphNode { task_id: id.clone(), status: "missing".into(), state: None, run_id: None },
                        Some(task) => {
                            let session = store.session(&task.session_id)?;
                            GraphNode {
                                task_id: id.clone(),
                                status: if is_active(session.state) { "provisional" } else { "ok" }.into(),
                                state: Some(protocol_state(session.state).into()),
                                run_id: Some(session.id),
                            }
                        }
                    });
                }
                let edges = edges
                    .into_iter()
                    .filter(|(from, to)| seen.contains(from) && seen.contains(to))
                    .map(|(from, to)| GraphEdge { from, to })
                    .collect();
                Ok(TaskGraph { nodes, edges })
            })
            .await
        },
    ));
    jobs.push(job(
        "get_task_context",
        "A task's current run with its params and session data.",
        |api: Api, args: TaskIdArguments| async move {
            api.blocking(move |db| {
                let store = open(db)?;
                let (task, session) = task_and_session(&store, &args.task_id)?;
                let mut data = std::collections::BTreeMap::new();
                for instance in store.data_instances(&session.id)? {
                    data.insert(instance.clone(), store.instance_data(&session.id, &instance)?);
                }
                Ok(TaskContext { params: session.params.clone(), status: status_of(task, &session), data })
            })
            .await
        },
    ));
}
