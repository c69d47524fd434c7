//! Starting a session in the background: a new run of a blueprint file, a resume, a restart.

use crate::*;

use crate::here::Launch;
use crate::mirror::RemoteStep;

use orrery_engine::runner::{self, RunError, RunOptions};
use serde_json::Map;

use super::arguments::SessionArguments;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AloneArguments {
    /// The blueprint file; inner blueprints are found by id among the files of its folder.
    pub file: PathBuf,
    /// The task to run: a task id of the blueprint, or a node as `"{instance}.{task}"`; a name
    /// the blueprint does not have is `not_found`.
    pub task: String,
    /// Values of its inputs, by input name (an input it does not have is `not_found`): written
    /// as the user's edits, which lineage names.
    #[serde(default)]
    pub inputs: Map<String, Value>,
    /// A past session of the same blueprint whose data its other inputs read (with the attempts
    /// that wrote them); another blueprint's is `refused`.
    #[serde(default)]
    pub inputs_from: Option<String>,
    /// Session parameters (dynamic composites read their elements from `elements`).
    #[serde(default)]
    pub params: Map<String, Value>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RestartArguments {
    pub session_id: String,
    /// Run the blueprint saved in this file (and the blueprints of its folder) instead of the
    /// versions the session ran; the new session keeps the file.
    #[serde(default)]
    pub file: Option<PathBuf>,
    /// Run the file the session was started from, as it is saved now (not with `file`).
    #[serde(default)]
    pub saved: bool,
    /// Keep what the session finished, as far as the blueprint run now would compute it the
    /// same way (a task unchanged whose dependencies are all kept): a retry from failure as a
    /// new session. Not for a run on a server.
    #[serde(default)]
    pub keep_done: bool,
    /// Run from this task ("run from here"): keep what the session finished, but not this task
    /// nor anything after it, which run again. A task id of the blueprint, or a node as
    /// `"{instance}.{task}"`; a name the blueprint run does not have is `not_found`. Implies
    /// `keep_done`. Not for a run on a server.
    #[serde(default)]
    pub from: Option<String>,
}

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
    /// Makes the start safe to send again after a lost answer (1 to 64 characters): the same id
    /// with the same arguments answers the session it started, and starts nothing; with other
    /// arguments it is refused (`request_id_reused`). Over HTTP, the `Idempotency-Key` header.
    #[serde(default)]
    pub request_id: Option<String>,
    /// Where the run holds (Orrery's own): each task waits there until `continue_session`. A
    /// task the blueprint does not have is `not_found`, and nothing starts.
    #[serde(default)]
    pub breakpoints: Vec<BreakpointArgument>,
    /// A task that fails holds there (`continue_session`: continue lets the session fail, step
    /// runs the task again, skip skips it) instead of failing the session.
    #[serde(default)]
    pub hold_on_failure: bool,
    /// Run without processes (Orrery's own): each task that would start a process, ask a
    /// person or reach an agent succeeds at once with its outputs from, in order, the values
    /// set here, `outputs_from`'s outputs, its declared defaults; or fails, as `fail` says.
    /// Conditions, scopes, loops, composites and fan-out run for real. The session is marked
    /// `simulation`, and so is any resume or restart of it. A task or a past session it names
    /// that does not exist is `not_found`, and nothing starts.
    #[serde(default)]
    pub simulate: Option<runner::Simulation>,
}

/// A breakpoint: a task id of the blueprint (that task in every instance that runs it) or a
/// node `{instance}.{task}`, and when it holds.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BreakpointArgument {
    pub task: String,
    /// `before` the task starts (the default), or `after` it ended (nothing after it starts).
    #[serde(default)]
    pub at: BreakAtArgument,
}

#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum BreakAtArgument {
    #[default]
    Before,
    After,
}

impl From<BreakpointArgument> for runner::Breakpoint {
    fn from(b: BreakpointArgument) -> runner::Breakpoint {
        let at = match b.at {
            BreakAtArgument::Before => runner::BreakAt::Before,
            BreakAtArgument::After => runner::BreakAt::After,
        };
        runner::Breakpoint { task: b.task, at }
    }
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Started {
    pub session_id: String,
}

impl Api {
    /// Starts a session in the background with `run` (a new run, a resume, a restart) and
    /// answers its id once it exists; an error before it exists is the failure.
    pub(crate) async fn launch<F, Fut>(&self, how: Launch, run: F) -> Result<Started, Failure>
    where
        F: FnOnce(PathBuf, RunOptions) -> Fut,
        Fut: Future<Output = Result<RunReport, RunError>> + Send + 'static,
    {
        let started = self.start(how, run).await?;
        Ok(Started { session_id: started.session_id })
    }
}

/// A blueprint file and the blueprints of its folder its composites may call, ready to run; one
/// that cannot be read is `not_found`, one that is not valid `invalid_blueprint` with its errors.
pub(crate) async fn runnable(file: &Path) -> Result<orrery_blueprint::check::Runnable, Failure> {
    let path = file.to_path_buf();
    let runnable = tokio::task::spawn_blocking(move || orrery_blueprint::load_runnable(&path))
        .await
        .map_err(|e| Failure::new(FailureCode::Internal, e.to_string()))?
        .map_err(|e| Failure::new(FailureCode::NotFound, format!("cannot read {}: {e}", file.display())))?;
    runnable.map_err(|report| {
        let errors: Vec<String> = report.diagnostics.iter().filter(|d| d.is_error()).map(ToString::to_string).collect();
        Failure::new(FailureCode::InvalidBlueprint, format!("{} is not valid: {}", report.file, errors.join("; ")))
    })
}

/// The session a request with this id and these arguments already started, if one did.
async fn started_by(api: &Api, retry: &Option<orrery_store::Retry>) -> Result<Option<Session>, Failure> {
    let Some(retry) = retry.clone() else { return Ok(None) };
    api.blocking(move |db| Ok(crate::open(db)?.answer_of(&retry)?)).await
}

pub(super) fn register(jobs: &mut Vec<Job>) {
    jobs.push(
        job(
            "start_session",
            "Runs a blueprint file as a new session, in the background; answers its id at once.",
            |api: Api, args: StartArguments| async move {
                // A request sent again is answered what the first one started, whatever the file is now.
                let retry = args.request_id.map(|id| orrery_store::Retry {
                    id,
                    operation: "start_session".into(),
                    arguments: json!({
                        "file": args.file, "params": args.params, "answers": args.answers, "breakpoints": args.breakpoints,
                        "hold_on_failure": args.hold_on_failure, "simulate": args.simulate,
                    }),
                });
                if let Some(session) = started_by(&api, &retry).await? {
                    return Ok(Started { session_id: session.id });
                }
                let (root, library) = runnable(&args.file).await?;
                let params = args.params;
                let again = retry.clone();
                let how = Launch {
                    answers: args.answers,
                    file: Some(args.file),
                    breakpoints: args.breakpoints.into_iter().map(Into::into).collect(),
                    hold_on_failure: args.hold_on_failure,
                    simulation: args.simulate,
                    ..Default::default()
                };
                let launched = api
                    .launch(how, move |db, mut options| async move {
                        options.retry = retry;
                        runner::run_session(&db, root, library, params, options).await
                    })
                    .await;
                match launched {
                    // The same request, sent twice at once, started the session the other one runs.
                    Err(failure) => match started_by(&api, &again).await? {
                        Some(session) => Ok(Started { session_id: session.id }),
                        None => Err(failure),
                    },
                    started => started,
                }
            },
        )
        .writing(),
    );
    jobs.push(
        job(
            "run_task_alone",
            "Runs one task of a blueprint file alone, as a new session, in the background (\"test this task\"): \
             the tasks it waits for count as done, the others as skipped; its inputs read the values given, \
             else those of `inputs_from` (a past session of the blueprint), else their declared values. \
             Answers the session's id at once.",
            |api: Api, args: AloneArguments| async move {
                let (root, library) = runnable(&args.file).await?;
                let alone = runner::Alone { task: args.task, inputs: args.inputs, inputs_from: args.inputs_from };
                let params = args.params;
                let how = Launch { file: Some(args.file), ..Default::default() };
                api.launch(how, move |db, options| async move {
                    runner::run_task_alone(&db, root, library, params, alone, options).await
                })
                .await
            },
        )
        .writing(),
    );
    jobs.push(
        job(
            "resume_session",
            "Goes on with a stopped, failed or interrupted session from where it ended, in the background.",
            |api: Api, args: SessionArguments| async move {
                let id = args.session_id;
                if let Some(server) = api.remote_of(&id).await? {
                    return Ok(Started { session_id: api.remote_step(&id, server, RemoteStep::Resume).await? });
                }
                api.launch(Launch::default(), move |db, options| async move {
                    runner::resume_session(&db, &id, options).await
                })
                .await
            },
        )
        .writing(),
    );
    jobs.push(
        job(
            "restart_session",
            "Runs a stored session over as a new session with its params: the same blueprint versions, or \
             a blueprint file as saved now (`file`, or `saved`: its own); from the start, or keeping what it \
             finished (`keep_done`), or from one task (`from`: what it finished is kept but that task and \
             what follows it).",
            |api: Api, args: RestartArguments| async move {
                let RestartArguments { session_id, file, saved, keep_done, from } = args;
                // A mirror's server restarts it (`run_here` asks it, or refuses what only runs here).
                let how = crate::here::Restart { file, saved, keep_done, from };
                let here = api.run_here(crate::here::Run::Restart { session_id, how }, Launch::default()).await?;
                Ok(Started { session_id: here.session_id })
            },
        )
        .writing(),
    );
}
