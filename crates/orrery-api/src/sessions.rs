//! Sessions and their tasks: start, watch, control, intervene, read their data.

use super::*;

use crate::here::{run_failure, Launch};
use crate::mirror::RemoteStep;

use std::collections::BTreeMap;
use std::time::Duration;

use orrery_blueprint::SessionState;

use orrery_engine::agents::interaction;
use orrery_engine::interventions::{self, Intervention, InterventionError};
use orrery_engine::requests::{self, RequestError};
use orrery_engine::runner::{self, RunError, RunOptions};
use orrery_store::{Attempt, Request, Session, SessionFilter, Store, TaskNode};
use serde_json::Map;

/// How long a request to a session run by another process waits for its runner's answer.
const REQUEST_WAIT: Duration = Duration::from_secs(10);

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StartArguments {
    /// The blueprint file; inner blueprints are found by id among the files of its folder.
    pub file: PathBuf,
    /// Session parameters (dynamic composites read their elements from `elements`).
    #[serde(default)]
    pub params: Map<String, Value>,
    /// Answers given to prompts before they ask, by task id or node key.
    #[serde(default)]
    pub answers: Map<String, Value>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionArguments {
    pub session_id: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WaitArguments {
    pub session_id: String,
    /// At most this long (default 60 s); the answer says whether it ended.
    pub timeout_s: Option<f64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListArguments {
    pub state: Option<SessionState>,
    pub blueprint_id: Option<String>,
    pub limit: Option<u32>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskArguments {
    pub session_id: String,
    /// `{instance}.{task}`, or a task id of the root blueprint.
    pub task: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResetArguments {
    pub session_id: String,
    pub task: String,
    /// Also reset every task downstream of it.
    #[serde(default)]
    pub downstream: bool,
    /// Set the session data its outputs wrote (and its downstream's) to null.
    #[serde(default)]
    pub clear_outputs: bool,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResetScopeArguments {
    pub session_id: String,
    /// The scope's start task.
    pub scope_start: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AnswerArguments {
    pub session_id: String,
    pub task: String,
    pub value: Value,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DataArguments {
    pub session_id: String,
    /// One blueprint instance (`{blueprint id}` for the root); all when absent.
    pub instance: Option<String>,
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
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct AttemptLog {
    pub run_id: String,
    pub node: String,
    pub attempt: u32,
    /// Whether the attempt still runs (more may come after `next_offset`).
    pub running: bool,
    pub window: orrery_logs::Window,
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

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Started {
    pub session_id: String,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct SessionView {
    pub session: Session,
    /// Every task node with its state.
    pub tasks: Vec<TaskNode>,
    /// Every attempt, in start order: what a timeline draws.
    pub attempts: Vec<Attempt>,
    /// Whether a live runner drives it (`running` without one: interrupted by a crash).
    pub driven: bool,
    /// Its tasks waiting for an answer (`answer_prompt`), by node key.
    pub waiting: Vec<String>,
    /// The sessions that restart this one, oldest first (the one it restarts is
    /// `session.restarted_from`): the lineage between sessions.
    pub restarts: Vec<Session>,
    /// For the mirror of a server's session (`session.remote`): whether the server answers.
    pub link: Option<crate::mirror::LinkState>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AttemptArguments {
    pub session_id: String,
    /// `{instance}.{task}`, or a task id of the root blueprint.
    pub task: String,
    /// Which attempt; the latest when absent.
    pub attempt: Option<u32>,
}

/// One attempt with its checklist: what a details panel shows.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct AttemptDetails {
    pub attempt: Attempt,
    /// Its progress steps, in order, with their state and percentage.
    pub steps: Vec<orrery_store::Step>,
    /// How long it ran (so far, while it runs), in milliseconds.
    pub duration_ms: i64,
    /// For a task executed by an agent on an MQTT broker: the steps of its dispatch, in order
    /// (its `broker_dispatch` events: allocated to an agent, published again, its agents
    /// silent); empty otherwise.
    pub dispatch: Vec<BrokerDispatch>,
}

/// A session as a list of runs shows it.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct SessionListing {
    #[serde(flatten)]
    pub session: Session,
    /// Its tasks waiting for an answer (`answer_prompt`), by node key.
    pub waiting: Vec<String>,
    /// `running` or `pending` with no live runner: a crash stopped it (`resume_session` goes on).
    pub interrupted: bool,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Waited {
    pub session: Session,
    /// Whether it reached completed, failed or stopped in time.
    pub ended: bool,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Done {
    /// What the session's runner made of the request.
    pub outcome: String,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct NodeChangeView {
    pub node: String,
    pub from: orrery_blueprint::TaskState,
    pub to: orrery_blueprint::TaskState,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct InterventionView {
    pub session_id: String,
    pub session_before: SessionState,
    pub session_after: SessionState,
    pub tasks: Vec<NodeChangeView>,
    /// `[instance, key]` pairs set to null.
    pub cleared_data: Vec<(String, String)>,
    /// `[instance, scope key]` counters set to 0.
    pub cleared_counters: Vec<(String, String)>,
}

impl From<Intervention> for InterventionView {
    fn from(done: Intervention) -> Self {
        InterventionView {
            session_id: done.session_id,
            session_before: done.session_before,
            session_after: done.session_after,
            tasks: done.nodes.into_iter().map(|c| NodeChangeView { node: c.node, from: c.from, to: c.to }).collect(),
            cleared_data: done.cleared_data,
            cleared_counters: done.cleared_counters,
        }
    }
}

/// The attempts of prompts waiting for an answer: running ones of an interactive prompt type.
fn waiting(attempts: &[Attempt]) -> impl Iterator<Item = &Attempt> {
    attempts.iter().filter(|a| {
        a.state == orrery_store::AttemptState::Running
            && interaction::interaction(&a.agent) == Some(interaction::Interaction::Prompt)
    })
}

fn intervention_failure(e: InterventionError) -> Failure {
    if e.is_refusal() {
        let code = match &e {
            InterventionError::Store(s) => s.code(),
            _ => FailureCode::Refused,
        };
        Failure::new(code, e.to_string())
    } else {
        Failure::new(FailureCode::Store, e.to_string())
    }
}

fn request_failure(e: RequestError) -> Failure {
    match e {
        RequestError::Store(s) => s.into(),
        other => Failure::new(FailureCode::Refused, other.to_string()),
    }
}

impl Api {
    /// An intervention on a mirror, done by its server: the view of what the mirror became.
    async fn remote_intervention(
        &self,
        local: &str,
        server: orrery_remote::Server,
        step: RemoteStep<'_>,
    ) -> Result<InterventionView, Failure> {
        let before = self
            .blocking({
                let local = local.to_string();
                move |db| Ok(open(db)?.session(&local)?.state)
            })
            .await?;
        self.remote_step(local, server, step).await?;
        let after = self
            .blocking({
                let local = local.to_string();
                move |db| Ok(open(db)?.session(&local)?.state)
            })
            .await?;
        Ok(InterventionView {
            session_id: local.to_string(),
            session_before: before,
            session_after: after,
            tasks: Vec::new(),
            cleared_data: Vec::new(),
            cleared_counters: Vec::new(),
        })
    }

    /// Starts a session in the background with `run` (a new run, a resume, a restart) and
    /// answers its id once it exists; an error before it exists is the failure.
    pub(crate) async fn launch<F, Fut>(&self, answers: Map<String, Value>, run: F) -> Result<Started, Failure>
    where
        F: FnOnce(PathBuf, RunOptions) -> Fut,
        Fut: Future<Output = Result<RunReport, RunError>> + Send + 'static,
    {
        let how = Launch { answers, ..Default::default() };
        let started = self.start(how, run).await?;
        Ok(Started { session_id: started.session_id })
    }

    /// Asks a session run by another process, through the store.
    async fn ask(&self, session_id: String, request: Request) -> Result<Done, Failure> {
        self.blocking(move |db| {
            requests::ask(db, &session_id, &request, REQUEST_WAIT)
                .map(|outcome| Done { outcome })
                .map_err(request_failure)
        })
        .await
        .and_then(|done| {
            if done.outcome.starts_with("refused") {
                Err(Failure::new(FailureCode::Refused, done.outcome))
            } else {
                Ok(done)
            }
        })
    }
}

/// A byte window of the log of attempt `attempt` (default: the latest) of `task` in a session.
pub(crate) fn attempt_window(
    store: &Store,
    session_id: &str,
    task: &str,
    attempt: Option<u32>,
    offset: Option<i64>,
    limit: Option<u64>,
) -> Result<(Attempt, orrery_logs::Window), Failure> {
    let attempt =
        store.find_attempt(session_id, task, attempt)?.map_err(|why| Failure::new(FailureCode::NotFound, why))?;
    let Some(path) = attempt.log_path.clone() else {
        return Err(Failure::new(
            FailureCode::NotFound,
            format!("attempt {} of {} has no log: only shell.run tasks write one", attempt.attempt, attempt.node),
        ));
    };
    let window = orrery_logs::read_window(&path, offset.unwrap_or(-1), limit)
        .map_err(|e| Failure::new(e.code(), e.to_string()))?;
    Ok((attempt, window))
}

pub(crate) fn register(jobs: &mut Vec<Job>) {
    jobs.push(job(
        "start_session",
        "Runs a blueprint file as a new session, in the background; answers its id at once.",
        |api: Api, args: StartArguments| async move {
            let file = args.file.clone();
            let runnable = tokio::task::spawn_blocking(move || orrery_blueprint::load_runnable(&file))
                .await
                .map_err(|e| Failure::new(FailureCode::Internal, e.to_string()))?
                .map_err(|e| {
                    Failure::new(FailureCode::NotFound, format!("cannot read {}: {e}", args.file.display()))
                })?;
            let (root, library) = runnable.map_err(|report| {
                let errors: Vec<String> =
                    report.diagnostics.iter().filter(|d| d.is_error()).map(ToString::to_string).collect();
                Failure::new(
                    FailureCode::InvalidBlueprint,
                    format!("{} is not valid: {}", report.file, errors.join("; ")),
                )
            })?;
            let params = args.params;
            api.launch(args.answers, move |db, options| async move {
                runner::run_session(&db, root, library, params, options).await
            })
            .await
        },
    ));
    jobs.push(job(
        "resume_session",
        "Goes on with a stopped, failed or interrupted session from where it ended, in the background.",
        |api: Api, args: SessionArguments| async move {
            let id = args.session_id;
            if let Some(server) = api.remote_of(&id).await? {
                return Ok(Started { session_id: api.remote_step(&id, server, RemoteStep::Resume).await? });
            }
            api.launch(Map::new(), move |db, options| async move { runner::resume_session(&db, &id, options).await })
                .await
        },
    ));
    jobs.push(job(
        "restart_session",
        "Runs a stored session over as a new session: the same blueprint versions and params.",
        |api: Api, args: SessionArguments| async move {
            let id = args.session_id;
            if let Some(server) = api.remote_of(&id).await? {
                return Ok(Started { session_id: api.remote_step(&id, server, RemoteStep::Restart).await? });
            }
            api.launch(Map::new(), move |db, options| async move { runner::restart_session(&db, &id, options).await })
                .await
        },
    ));
    jobs.push(job(
        "list_sessions",
        "The sessions of the store, newest first, with the tasks waiting for an answer and whether a crash \
         interrupted them.",
        |api: Api, args: ListArguments| async move {
            api.blocking(move |db| {
                let store = open(db)?;
                let filter = SessionFilter { state: args.state, blueprint_id: args.blueprint_id, limit: args.limit };
                let sessions = store.sessions(&filter)?;
                let running = store.running_attempts()?;
                let prompts: Vec<&Attempt> = waiting(&running).collect();
                let mut listed = Vec::with_capacity(sessions.len());
                for session in sessions {
                    let waiting =
                        prompts.iter().filter(|a| a.session_id == session.id).map(|a| a.node.clone()).collect();
                    // A mirror is driven by its server.
                    let active = session.remote.is_none()
                        && matches!(session.state, SessionState::Running | SessionState::Pending);
                    let driven = active && runner::is_driven(&store, &session.id)?;
                    listed.push(SessionListing { interrupted: active && !driven, waiting, session });
                }
                Ok(listed)
            })
            .await
        },
    ));
    jobs.push(job(
        "get_attempt",
        "One attempt of a task (the latest by default): inputs, outputs, error, exit code, agent, run_id, \
         duration, its checklist of progress steps, and its dispatch over a broker.",
        |api: Api, args: AttemptArguments| async move {
            api.blocking(move |db| {
                let store = open(db)?;
                let attempt = store
                    .find_attempt(&args.session_id, &args.task, args.attempt)?
                    .map_err(|why| Failure::new(FailureCode::NotFound, why))?;
                let steps = store.steps(&attempt.run_id)?;
                let duration_ms = attempt.finished_ms.unwrap_or_else(now_ms) - attempt.started_ms;
                let dispatch = store
                    .run_events(&attempt.run_id, EventKind::BrokerDispatch)?
                    .into_iter()
                    .filter_map(|e| match e.payload {
                        EventPayload::Whole(EventData::BrokerDispatch(step)) => Some(step),
                        _ => None,
                    })
                    .collect();
                Ok(AttemptDetails { attempt, steps, duration_ms, dispatch })
            })
            .await
        },
    ));
    jobs.push(job(
        "get_session",
        "A session with every task's state and every attempt (a timeline's data).",
        |api: Api, args: SessionArguments| async move {
            let mut view = api
                .blocking(move |db| {
                    let store = open(db)?;
                    let session = store.session(&args.session_id)?;
                    let attempts = store.attempts(&session.id)?;
                    Ok(SessionView {
                        tasks: store.task_nodes(&session.id)?,
                        waiting: waiting(&attempts).map(|a| a.node.clone()).collect(),
                        attempts,
                        driven: runner::is_driven(&store, &session.id)?,
                        restarts: store.restarts_of(&session.id)?,
                        link: None,
                        session,
                    })
                })
                .await?;
            if view.session.remote.is_some() {
                // A mirror that is not over is followed again (the app restarted, say); its
                // follower is what drives it here.
                let following = api.keep_following(&view.session).await?;
                let id = view.session.id.clone();
                view.link = Some(api.blocking(move |db| crate::mirror::link_state(&open(db)?, &id, following)).await?);
                view.driven = following;
            }
            Ok(view)
        },
    ));
    jobs.push(job(
        "wait_session",
        "Waits until a session has ended (completed, failed or stopped), at most `timeout_s`.",
        |api: Api, args: WaitArguments| async move {
            let id = args.session_id;
            let ((), session, ended) =
                api.poll_until_ended(args.timeout_s, move |db| Ok(((), open(db)?.session(&id)?))).await?;
            Ok(Waited { ended, session })
        },
    ));
    jobs.push(job(
        "stop_session",
        "Stops a running session: its runs are cancelled, it ends `stopped`.",
        |api: Api, args: SessionArguments| async move {
            if let Some(server) = api.remote_of(&args.session_id).await? {
                api.remote_step(&args.session_id, server, RemoteStep::Stop).await?;
                return Ok(Done { outcome: "stopping on the server".into() });
            }
            match api.control(&args.session_id) {
                Some(control) => {
                    control.stop();
                    Ok(Done { outcome: "stopping".into() })
                }
                None => api.ask(args.session_id, Request::Stop).await,
            }
        },
    ));
    jobs.push(job(
        "pause_session",
        "Pauses a running session: nothing new starts, what runs finishes, then it is `stopped`.",
        |api: Api, args: SessionArguments| async move {
            if let Some(server) = api.remote_of(&args.session_id).await? {
                api.remote_step(&args.session_id, server, RemoteStep::Pause).await?;
                return Ok(Done { outcome: "pausing on the server".into() });
            }
            match api.control(&args.session_id) {
                Some(control) => {
                    control.pause();
                    Ok(Done { outcome: "pausing".into() })
                }
                None => api.ask(args.session_id, Request::Pause).await,
            }
        },
    ));
    jobs.push(job(
        "cancel_task",
        "Cancels the running attempt of a task: its process group gets SIGTERM, a grace period, \
         then SIGKILL; the task fails, and with it the session (resume runs it again).",
        |api: Api, args: TaskArguments| async move {
            if api.remote_of(&args.session_id).await?.is_some() {
                return Err(Failure::new(
                    FailureCode::Refused,
                    "this run is on an antikythera server, which cannot cancel one task: stop the session",
                ));
            }
            // Through the store even for a session run here: the runner says what it did.
            api.ask(args.session_id, Request::Cancel { task: args.task }).await
        },
    ));
    jobs.push(job(
        "answer_prompt",
        "Answers the prompt of a task (`user_prompt.confirm`, `user_interaction.user_input`).",
        |api: Api, args: AnswerArguments| async move {
            match api.control(&args.session_id) {
                Some(control) => {
                    control.answer(&args.task, args.value);
                    Ok(Done { outcome: format!("answer given to {}", args.task) })
                }
                None => api.ask(args.session_id, Request::Answer { task: args.task, value: args.value }).await,
            }
        },
    ));
    jobs.push(job(
        "skip_task",
        "On a session that is not running: the task is skipped when it would start.",
        |api: Api, args: TaskArguments| async move {
            if let Some(server) = api.remote_of(&args.session_id).await? {
                return api.remote_intervention(&args.session_id, server, RemoteStep::Skip { node: &args.task }).await;
            }
            api.blocking(move |db| {
                interventions::skip_task(db, &args.session_id, &args.task)
                    .map(InterventionView::from)
                    .map_err(intervention_failure)
            })
            .await
        },
    ));
    jobs.push(job(
        "reset_task",
        "On a session that is not running: the task (and with `downstream`, everything after it) \
         goes back to PENDING; `clear_outputs` sets the data they wrote to null.",
        |api: Api, args: ResetArguments| async move {
            if let Some(server) = api.remote_of(&args.session_id).await? {
                let step = RemoteStep::Reset {
                    node: &args.task,
                    downstream: args.downstream,
                    clear_outputs: args.clear_outputs,
                };
                return api.remote_intervention(&args.session_id, server, step).await;
            }
            api.blocking(move |db| {
                interventions::reset_task(db, &args.session_id, &args.task, args.downstream, args.clear_outputs)
                    .map(InterventionView::from)
                    .map_err(intervention_failure)
            })
            .await
        },
    ));
    jobs.push(job(
        "reset_scope",
        "On a session that is not running: a scope's members go back to PENDING, its counters to 0.",
        |api: Api, args: ResetScopeArguments| async move {
            if let Some(server) = api.remote_of(&args.session_id).await? {
                return api
                    .remote_intervention(&args.session_id, server, RemoteStep::ResetScope { node: &args.scope_start })
                    .await;
            }
            api.blocking(move |db| {
                interventions::reset_scope(db, &args.session_id, &args.scope_start)
                    .map(InterventionView::from)
                    .map_err(intervention_failure)
            })
            .await
        },
    ));
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
                let (attempt, window) =
                    attempt_window(&store, &args.session_id, &args.task, args.attempt, args.offset, args.limit)?;
                Ok(AttemptLog {
                    run_id: attempt.run_id.as_str().to_string(),
                    running: attempt.state == orrery_store::AttemptState::Running,
                    node: attempt.node,
                    attempt: attempt.attempt,
                    window,
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
