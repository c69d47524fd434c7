//! A run beside its blueprint file as saved now (`blueprint_changes`): what a user is told
//! before retrying or restarting a run with the file instead of the version it ran.
//!
//! Two runs side by side (`compare_sessions`): what a user asks after a run went differently
//! from the last one. Per task node: the state, the latest attempt's duration and outputs, and
//! how many attempts it took, in each run; then the session data that differs. Times never
//! count as a difference: durations, and the `process_start_time` / `process_end_time` that
//! `system.start` and `system.end` write (shown, not compared).

use super::*;

use std::collections::BTreeMap;

use crate::blueprints::loaded;

use orrery_blueprint::TaskState;
use orrery_store::{Attempt, Session, Store};

/// The outputs and data keys that are times of the run, not results.
const TIMES: [&str; 2] = ["process_start_time", "process_end_time"];

/// `outputs` without [`TIMES`].
fn results(outputs: &Option<Value>) -> Option<Value> {
    let mut outputs = outputs.clone()?;
    if let Some(map) = outputs.as_object_mut() {
        map.retain(|k, _| !TIMES.contains(&k.as_str()));
    }
    Some(outputs)
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CompareArguments {
    /// The run compared against (the older one, usually).
    pub a: String,
    pub b: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Comparison {
    pub a: Session,
    pub b: Session,
    /// Both ran the same stored blueprint version.
    pub same_blueprint: bool,
    /// Every task node of either run, by node key (`{instance}.{task}`): those of `a`, then
    /// those only `b` has.
    pub tasks: Vec<TaskComparison>,
    /// The session data keys whose values differ, or that only one run has, by instance and key
    /// (times left out).
    pub data: Vec<DataDifference>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct TaskComparison {
    pub node: String,
    pub a: Option<TaskRun>,
    pub b: Option<TaskRun>,
    /// Anything differs: presence, state, attempts or outputs (times do not count).
    pub differs: bool,
}

#[derive(Debug, PartialEq, Serialize, JsonSchema)]
pub struct TaskRun {
    pub state: TaskState,
    pub attempts: usize,
    /// Of the latest attempt; none while it runs or when it never ran.
    pub duration_ms: Option<i64>,
    /// Of the latest attempt.
    pub outputs: Option<Value>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct DataDifference {
    pub instance: String,
    pub key: String,
    pub a: Option<Value>,
    pub b: Option<Value>,
}

/// A run's task nodes (in store order) with their attempts.
fn task_runs(store: &Store, session: &str) -> Result<Vec<(String, TaskRun)>, Failure> {
    let attempts = store.attempts(session)?;
    let mut runs = Vec::new();
    for node in store.task_nodes(session)? {
        let mine: Vec<&Attempt> = attempts.iter().filter(|a| a.node == node.node).collect();
        let latest = mine.iter().max_by_key(|a| a.attempt);
        runs.push((
            node.node,
            TaskRun {
                state: node.state,
                attempts: mine.len(),
                duration_ms: latest.and_then(|a| Some(a.finished_ms? - a.started_ms)),
                outputs: latest.and_then(|a| a.outputs.clone()),
            },
        ));
    }
    Ok(runs)
}

fn session_data(store: &Store, session: &str) -> Result<BTreeMap<(String, String), Value>, Failure> {
    let mut all = BTreeMap::new();
    for instance in store.data_instances(session)? {
        for (key, value) in store.instance_data(session, &instance)? {
            if !TIMES.contains(&key.as_str()) {
                all.insert((instance.clone(), key), value);
            }
        }
    }
    Ok(all)
}

fn compare(store: &Store, a: &str, b: &str) -> Result<Comparison, Failure> {
    let (session_a, session_b) = (store.session(a)?, store.session(b)?);
    let (runs_a, mut runs_b) = (task_runs(store, a)?, task_runs(store, b)?);
    let mut tasks = Vec::new();
    for (node, run_a) in runs_a {
        let run_b = runs_b.iter().position(|(n, _)| *n == node).map(|i| runs_b.remove(i).1);
        let differs = run_b.as_ref().is_none_or(|run_b| {
            (run_a.state, run_a.attempts, results(&run_a.outputs))
                != (run_b.state, run_b.attempts, results(&run_b.outputs))
        });
        tasks.push(TaskComparison { node, a: Some(run_a), b: run_b, differs });
    }
    tasks.extend(runs_b.into_iter().map(|(node, run_b)| TaskComparison {
        node,
        a: None,
        b: Some(run_b),
        differs: true,
    }));
    let (mut data_a, data_b) = (session_data(store, a)?, session_data(store, b)?);
    let mut data = Vec::new();
    for ((instance, key), value_b) in data_b {
        let value_a = data_a.remove(&(instance.clone(), key.clone()));
        if value_a.as_ref() != Some(&value_b) {
            data.push(DataDifference { instance, key, a: value_a, b: Some(value_b) });
        }
    }
    data.extend(data_a.into_iter().map(|((instance, key), a)| DataDifference { instance, key, a: Some(a), b: None }));
    data.sort_by(|x, y| (&x.instance, &x.key).cmp(&(&y.instance, &y.key)));
    Ok(Comparison {
        same_blueprint: session_a.blueprint_hash == session_b.blueprint_hash,
        a: session_a,
        b: session_b,
        tasks,
        data,
    })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ChangesArguments {
    pub session_id: String,
    /// The blueprint file to compare with; default: the one the session was started from.
    #[serde(default)]
    pub file: Option<PathBuf>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct BlueprintChanges {
    pub session_id: String,
    /// The file compared with the version the session ran.
    pub file: PathBuf,
    /// What changed from the version the session ran to the file (its root blueprint).
    pub changes: orrery_blueprint::changes::Changes,
    /// The inner blueprints the session ran (by id) that the file's folder now holds changed,
    /// or holds no more.
    pub inner: Vec<String>,
    /// One line for a person: `build: command changed; added test`, or `no change`.
    pub summary: String,
    /// Why the file cannot run as it is (its first error), when it cannot.
    pub problem: Option<String>,
}

fn blueprint_changes(store: &Store, args: ChangesArguments) -> Result<BlueprintChanges, Failure> {
    let session = store.session(&args.session_id)?;
    let file = args.file.or(session.file).ok_or_else(|| {
        Failure::new(
            FailureCode::InvalidArgument,
            format!("session {} keeps no blueprint file (it was started before Orrery kept it, or from text): name the file", args.session_id),
        )
    })?;
    let (root, inner_versions) = orrery_engine::runner::session_blueprints(store, &session.id)?;
    let ran = |text: &str| loaded(text).map(|l| l.blueprint);
    let text = std::fs::read_to_string(&file)
        .map_err(|e| Failure::new(FailureCode::NotFound, format!("cannot read {}: {e}", file.display())))?;
    let report = orrery_blueprint::check::check_in_folder(&file, text.clone()).map_err(|e| {
        Failure::new(FailureCode::NotFound, format!("cannot read the folder of {}: {e}", file.display()))
    })?;
    let problem = report.diagnostics.iter().find(|d| d.is_error()).map(ToString::to_string);
    let Ok(saved) = loaded(&text).map(|l| l.blueprint) else {
        let summary = format!("the file does not load: {}", problem.clone().unwrap_or_default());
        return Ok(BlueprintChanges {
            session_id: session.id,
            file,
            changes: Default::default(),
            inner: Vec::new(),
            summary,
            problem,
        });
    };
    let changes = orrery_blueprint::changes::changes(&ran(&root.canonical_json)?, &saved);
    let mut inner = Vec::new();
    // A file that cannot run has no library to compare with: its problem says why.
    if let (false, Ok(Ok((_, library)))) = (inner_versions.is_empty(), orrery_blueprint::load_runnable(&file)) {
        for version in &inner_versions {
            let now = library.iter().skip(1).find(|b| b.id == version.blueprint_id);
            if now.is_none_or(|now| {
                ran(&version.canonical_json).is_ok_and(|old| !orrery_blueprint::changes::changes(&old, now).is_empty())
            }) {
                inner.push(version.blueprint_id.clone());
            }
        }
    }
    let mut summary = changes.summary();
    if !inner.is_empty() {
        let line = format!("inner blueprint {} changed", inner.join(", "));
        summary = if changes.is_empty() { line } else { format!("{summary}; {line}") };
    }
    Ok(BlueprintChanges { session_id: session.id, file, changes, inner, summary, problem })
}

pub(crate) fn register(jobs: &mut Vec<Job>) {
    jobs.push(job(
        "blueprint_changes",
        "What changed from the blueprint version a session ran to its file as saved now (or another \
         file): tasks added, removed and changed (by field), inner blueprints changed, in one line too, \
         and the file's first error when it cannot run.",
        |api: Api, args: ChangesArguments| async move {
            api.blocking(move |db| blueprint_changes(&open(db)?, args)).await
        },
    ));
    jobs.push(job(
        "compare_sessions",
        "Two runs side by side: per task, its state, attempts, latest duration and outputs in each, \
         and whether they differ; then the session data that differs.",
        |api: Api, args: CompareArguments| async move {
            api.blocking(move |db| compare(&open(db)?, &args.a, &args.b)).await
        },
    ));
}
