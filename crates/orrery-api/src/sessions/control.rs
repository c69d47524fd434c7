//! Requests to a running session: stop it, pause it, cancel one of its tasks, answer a prompt,
//! let go of a task held at a breakpoint, set a value of its data while one is held.
//! The facade's own control answers for a session run here; one run by another process is
//! asked through the store.

use crate::*;

use crate::mirror::RemoteStep;

use std::time::Duration;

use orrery_engine::requests::{self, RequestError};
use orrery_store::Request;

use super::arguments::{SessionArguments, TaskArguments};

/// How long a request to a session run by another process waits for its runner's answer.
const REQUEST_WAIT: Duration = Duration::from_secs(10);

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AnswerArguments {
    pub session_id: String,
    pub task: String,
    pub value: Value,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ContinueArguments {
    pub session_id: String,
    /// The held task to let go (`{instance}.{task}`, or a task id); every held task when absent.
    #[serde(default)]
    pub task: Option<String>,
    /// `continue` (the default): the task starts, or what follows it may; `step`: held before
    /// it, the task runs and the session holds again after it, held after it, the tasks that
    /// depend on it hold before they start; `skip`: a task held before it starts is skipped.
    #[serde(default)]
    pub how: ReleaseHow,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetBreakpointArguments {
    pub session_id: String,
    /// The task (`{instance}.{task}`, or a task id: that task in every instance).
    pub task: String,
    /// Where it holds: `before` it starts or `after` it ends; absent: its breakpoint is cleared.
    #[serde(default)]
    pub at: Option<super::launch::BreakAtArgument>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetDataArguments {
    pub session_id: String,
    /// The blueprint instance (`{blueprint id}` for the root, the default).
    #[serde(default)]
    pub instance: Option<String>,
    pub key: String,
    pub value: Value,
}

/// How a held task is let go.
#[derive(Debug, Clone, Copy, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ReleaseHow {
    #[default]
    Continue,
    Step,
    Skip,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Done {
    /// What the session's runner made of the request.
    pub outcome: String,
}

fn request_failure(e: RequestError) -> Failure {
    match e {
        RequestError::Store(s) => s.into(),
        other => Failure::new(FailureCode::Refused, other.to_string()),
    }
}

impl Api {
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

pub(super) fn register(jobs: &mut Vec<Job>) {
    jobs.push(
        job(
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
        )
        .writing(),
    );
    jobs.push(
        job(
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
        )
        .writing(),
    );
    jobs.push(
        job(
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
        )
        .writing(),
    );
    jobs.push(
        job(
            "continue_session",
            "Lets go of a task a running session holds at a breakpoint (every held task without `task`): \
             continue, step (run it and hold again after it) or skip. Refused when no such task is held.",
            |api: Api, args: ContinueArguments| async move {
                if api.remote_of(&args.session_id).await?.is_some() {
                    return Err(Failure::new(
                        FailureCode::Refused,
                        "a run on an antikythera server has no breakpoints",
                    ));
                }
                let how = match args.how {
                    ReleaseHow::Continue => "continue",
                    ReleaseHow::Step => "step",
                    ReleaseHow::Skip => "skip",
                };
                // Through the store even for a session run here: the runner says what it did.
                api.ask(args.session_id, Request::Release { task: args.task, how: how.to_string() }).await
            },
        )
        .writing(),
    );
    jobs.push(
        job(
            "set_breakpoint",
            "Sets or clears a breakpoint of a running session at a task, from then on (a task held now stays \
             held until let go): `before` it starts or `after` it ends. Refused for a task the session has not.",
            |api: Api, args: SetBreakpointArguments| async move {
                if api.remote_of(&args.session_id).await?.is_some() {
                    return Err(Failure::new(
                        FailureCode::Refused,
                        "a run on an antikythera server has no breakpoints",
                    ));
                }
                let at = args.at.map(|at| match at {
                    super::launch::BreakAtArgument::Before => "before".to_string(),
                    super::launch::BreakAtArgument::After => "after".to_string(),
                });
                api.ask(args.session_id, Request::Breakpoint { task: args.task, at }).await
            },
        )
        .writing(),
    );
    jobs.push(
        job(
            "set_session_data",
            "Sets a value of a running session's data while a task is held at a breakpoint (what the held \
             task is about to read): an intervention kept with the value it replaced and who set it, which \
             lineage names as the value's source. Refused when no task is held.",
            |api: Api, args: SetDataArguments| async move {
                if api.remote_of(&args.session_id).await?.is_some() {
                    return Err(Failure::new(
                        FailureCode::Refused,
                        "a run on an antikythera server has no breakpoints",
                    ));
                }
                let by = api.caller().agent.clone();
                let request = Request::SetData { instance: args.instance, key: args.key, value: args.value, by };
                api.ask(args.session_id, request).await
            },
        )
        .writing(),
    );
    jobs.push(
        job(
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
        )
        .writing(),
    );
}
