//! What a session recorded: which output fed which input, the blueprint versions it runs, its
//! attempts' logs, the event log of the store, its data.

use crate::*;

use crate::here::run_failure;

use std::collections::BTreeMap;

use orrery_engine::runner;
use orrery_store::{Attempt, Store};

use super::arguments::{SessionArguments, TaskArguments};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DataArguments {
    pub session_id: String,
    /// One blueprint instance (`{blueprint id}` for the root); all when absent.
    pub instance: Option<String>,
}

/// What a task reads if it starts now: what a task held before it starts is about to run with.
#[derive(Debug, Serialize, JsonSchema)]
pub struct TaskInputs {
    /// Its node key.
    pub node: String,
    /// The blueprint instance whose data it reads.
    pub instance: String,
    /// Its inputs, resolved from that data now (as the runner resolves them when it dispatches);
    /// none when they cannot be (`problem` says why).
    pub inputs: Option<serde_json::Map<String, Value>>,
    pub problem: Option<String>,
    /// The data key each input reads (`get_from`, else its name): what to set to change it.
    pub keys: BTreeMap<String, String>,
    /// That instance's session data: what its inputs and its condition may read.
    pub data: BTreeMap<String, Value>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EventsArguments {
    /// The last `global_seq` the client saw (0: from the start).
    #[serde(default)]
    pub after: u64,
    /// At most this many (1..=200, default 200).
    pub limit: Option<u32>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Events {
    /// In commit order; each names its session, its `seq` there and its `global_seq`.
    pub events: Vec<Event>,
    /// The newest `global_seq` of the store when read: more may follow.
    pub last_global_seq: u64,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LogArguments {
    pub session_id: String,
    /// `{instance}.{task}`, or a task id of the root blueprint.
    pub task: String,
    /// Which attempt (1, 2, ...); the latest when absent.
    pub attempt: Option<u32>,
    /// A byte offset; -1 (the default) reads the tail.
    pub offset: Option<i64>,
    /// Bytes at most, clamped to 1,024..262,144 (default 65,536).
    pub limit: Option<u64>,
    /// The log as it was at this moment (ms since the epoch): what the attempt had written then
    /// (time travel).
    #[serde(default)]
    pub until_ms: Option<i64>,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct AttemptLog {
    pub run_id: String,
    pub node: String,
    pub attempt: u32,
    /// Whether the attempt still runs (more may come after `next_offset`).
    pub running: bool,
    pub window: orrery_logs::Window,
    /// With `until_ms` while the attempt ran: the log's size at that moment, to which the window
    /// is cut. Absent when the attempt had ended by then (the whole log), or when the log's growth
    /// was not recorded (a run from before it was: the whole log too).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until_size: Option<u64>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Lineage {
    /// Every input of every attempt: the data key it read and the attempt that had written it.
    pub inputs: Vec<orrery_store::InputLineage>,
    /// The blueprint instances, the root first, each inner one under its composite.
    pub instances: Vec<runner::InstanceInfo>,
}

/// A blueprint version a session runs, as stored when it started.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RunBlueprint {
    pub blueprint_id: String,
    /// sha256 of its canonical JSON.
    pub hash: String,
    /// Its canonical JSON text.
    pub text: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct SessionBlueprints {
    /// The blueprint the session runs.
    pub root: RunBlueprint,
    /// The inner blueprints its composites call.
    pub inner: Vec<RunBlueprint>,
    /// The blueprint instances, the root first, each inner one under its composite.
    pub instances: Vec<runner::InstanceInfo>,
}

impl From<orrery_store::BlueprintVersion> for RunBlueprint {
    fn from(v: orrery_store::BlueprintVersion) -> Self {
        RunBlueprint { blueprint_id: v.blueprint_id, hash: v.hash, text: v.canonical_json }
    }
}

/// A byte window of the log of attempt `attempt` (default: the latest) of `task` in a session;
/// with `until_ms`, of the log as it was then, with its size then (see [`AttemptLog::until_size`]).
pub(crate) fn attempt_window(
    store: &Store,
    session_id: &str,
    task: &str,
    attempt: Option<u32>,
    offset: Option<i64>,
    limit: Option<u64>,
    until_ms: Option<i64>,
) -> Result<(Attempt, orrery_logs::Window, Option<u64>), Failure> {
    let attempt =
        store.find_attempt(session_id, task, attempt)?.map_err(|why| Failure::new(FailureCode::NotFound, why))?;
    let Some(path) = attempt.log_path.clone() else {
        return Err(Failure::new(
            FailureCode::NotFound,
            format!("attempt {} of {} has no log: only shell.run tasks write one", attempt.attempt, attempt.node),
        ));
    };
    let upto = match until_ms {
        Some(t) if attempt.started_ms > t => Some(0),
        Some(t) if attempt.finished_ms.is_none_or(|end| end > t) => orrery_logs::size_at(&path, t),
        _ => None,
    };
    let window = orrery_logs::read_window_upto(&path, offset.unwrap_or(-1), limit, upto)
        .map_err(|e| Failure::new(e.code(), e.to_string()))?;
    Ok((attempt, window, upto))
}

pub(super) fn register(jobs: &mut Vec<Job>) {
    jobs.push(job(
        "get_lineage",
        "Within a session: which attempt's output fed which attempt's input (the data key and the \
         value's sha256), and its blueprint instances under their composites.",
        |api: Api, args: SessionArguments| async move {
            api.blocking(move |db| {
                let store = open(db)?;
                let inputs = store.lineage(&args.session_id)?;
                let instances = runner::session_instances(&store, &args.session_id).map_err(run_failure)?;
                Ok(Lineage { inputs, instances })
            })
            .await
        },
    ));
    jobs.push(job(
        "get_session_blueprints",
        "The exact blueprint versions a session runs (its root and the inner blueprints its \
         composites call, as stored when it started) and its blueprint instances.",
        |api: Api, args: SessionArguments| async move {
            api.blocking(move |db| {
                let store = open(db)?;
                let (root, inner) = runner::session_blueprints(&store, &args.session_id)?;
                let instances = runner::session_instances(&store, &args.session_id).map_err(run_failure)?;
                Ok(SessionBlueprints {
                    root: root.into(),
                    inner: inner.into_iter().map(RunBlueprint::from).collect(),
                    instances,
                })
            })
            .await
        },
    ));
    jobs.push(job(
        "read_attempt_log",
        "A byte window of an attempt's log (stdout and stderr interleaved), aligned to UTF-8: \
         offset -1 reads the tail; continue from `next_offset`.",
        |api: Api, args: LogArguments| async move {
            api.blocking(move |db| {
                let store = open(db)?;
                let (attempt, window, until_size) = attempt_window(
                    &store,
                    &args.session_id,
                    &args.task,
                    args.attempt,
                    args.offset,
                    args.limit,
                    args.until_ms,
                )?;
                Ok(AttemptLog {
                    run_id: attempt.run_id.as_str().to_string(),
                    running: attempt.state == orrery_store::AttemptState::Running,
                    node: attempt.node,
                    attempt: attempt.attempt,
                    window,
                    until_size,
                })
            })
            .await
        },
    ));
    jobs.push(job(
        "read_events",
        "Every session's committed events after `after` (a `global_seq`), in commit order: how a \
         client that reconnects catches up before it follows the live stream again.",
        |api: Api, args: EventsArguments| async move {
            api.blocking(move |db| {
                let store = open(db)?;
                let events = store.events_since(args.after, args.limit.unwrap_or(200))?;
                Ok(Events { events, last_global_seq: store.last_global_seq()? })
            })
            .await
        },
    ));
    jobs.push(job(
        "task_inputs",
        "What a task of a session reads if it starts now: its inputs resolved from its instance's data, and \
         that data (what a task held at a breakpoint is about to run with).",
        |api: Api, args: TaskArguments| async move {
            api.blocking(move |db| {
                let store = open(db)?;
                let plan = runner::session_plan(&store, &args.session_id).map_err(run_failure)?;
                let n = plan.node_named(&args.task).ok_or_else(|| {
                    Failure::new(
                        FailureCode::NotFound,
                        format!("session {} has no task {:?}", args.session_id, args.task),
                    )
                })?;
                let (instance, task) = &plan.tasks[n];
                let instance = plan.instances[*instance].id.clone();
                let data = store.instance_data(&args.session_id, &instance)?;
                let resolved = orrery_engine::data::resolve_inputs(task, &data.clone().into_iter().collect());
                let (inputs, problem) = match resolved {
                    Ok(inputs) => (Some(inputs), None),
                    Err(e) => (None, Some(e.to_string())),
                };
                let keys = task.inputs.iter().map(|i| (i.io.name.to_string(), i.source_key().to_string())).collect();
                Ok(TaskInputs { node: plan.graph.nodes[n].key.clone(), instance, inputs, problem, keys, data })
            })
            .await
        },
    ));
    jobs.push(job(
        "session_timing",
        "How long a session takes against its blueprint's past completed runs: each task's time and its usual \
         (the median of the past runs'), the slow ones, the critical path, and while it goes on the time left.",
        |api: Api, args: SessionArguments| async move {
            let (usuals, processes) = (api.inner.usuals.clone(), api.inner.max_parallel);
            api.blocking(move |db| {
                let store = open(db)?;
                orrery_engine::timing::session_timing(&store, &args.session_id, crate::now_ms(), &usuals, processes)
                    .map_err(run_failure)
            })
            .await
        },
    ));
    jobs.push(job(
        "session_history",
        "A session's history, to look at it as it stood at any moment (time travel): every change of its tasks' \
         states and of its own, in commit order (the nodes named once, the changes by index), and every value its \
         data held (a session stored before the history was kept has each key's last value only).",
        |api: Api, args: SessionArguments| async move {
            api.blocking(move |db| Ok(open(db)?.history(&args.session_id)?)).await
        },
    ));
    jobs.push(job(
        "read_session_data",
        "A session's data, by blueprint instance and key.",
        |api: Api, args: DataArguments| async move {
            api.blocking(move |db| {
                let store = open(db)?;
                let mut all: BTreeMap<String, BTreeMap<String, Value>> = BTreeMap::new();
                let instances = match args.instance {
                    Some(instance) => vec![instance],
                    None => store.data_instances(&args.session_id)?,
                };
                for instance in instances {
                    let data = store.instance_data(&args.session_id, &instance)?;
                    all.insert(instance, data);
                }
                Ok(all)
            })
            .await
        },
    ));
}
