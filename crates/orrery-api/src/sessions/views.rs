//! What the run views show: the sessions of the store, one session with its tasks and
//! attempts, one attempt with its checklist; and waiting for a session to end.

use crate::*;

use orrery_blueprint::SessionState;

use orrery_engine::agents::interaction;
use orrery_engine::runner;
use orrery_store::{Attempt, Session, SessionFilter, TaskNode};

use super::arguments::SessionArguments;

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
    /// Its tasks held at a breakpoint while it runs (`continue_session` lets them go).
    pub held: Vec<orrery_store::HeldTask>,
    /// Its breakpoints while it runs: where each task holds (`set_breakpoint` changes them).
    #[serde(default)]
    pub breakpoints: Vec<orrery_store::HeldTask>,
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

/// The tasks a driven session holds at breakpoints now, and its breakpoints: its latest
/// `breakpoints` event says.
type Holds = (Vec<orrery_store::HeldTask>, Vec<orrery_store::HeldTask>);
fn holds(store: &orrery_store::Store, session_id: &str) -> Result<Holds, orrery_store::StoreError> {
    let last = store.last_event_of(session_id, orrery_store::EventKind::Breakpoints)?;
    Ok(match last.as_ref().and_then(|e| e.data()) {
        Some(orrery_store::EventData::Breakpoints(holds)) => (holds.held.clone(), holds.breakpoints.clone()),
        _ => Default::default(),
    })
}

/// The attempts of prompts waiting for an answer: running ones of an interactive prompt type.
fn waiting(attempts: &[Attempt]) -> impl Iterator<Item = &Attempt> {
    attempts.iter().filter(|a| {
        a.state == orrery_store::AttemptState::Running
            && interaction::interaction(&a.agent) == Some(interaction::Interaction::Prompt)
    })
}

pub(super) fn register(jobs: &mut Vec<Job>) {
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
                        EventPayload::Whole(data) => match *data {
                            EventData::BrokerDispatch(step) => Some(step),
                            _ => None,
                        },
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
        "A session with every task's state and every attempt (a timeline's data), each attempt without \
         the environment its process was started with (`get_attempt` gives it).",
        |api: Api, args: SessionArguments| async move {
            let mut view = api
                .blocking(move |db| {
                    let store = open(db)?;
                    let session = store.session(&args.session_id)?;
                    let attempts = store.attempts(&session.id)?;
                    let driven = runner::is_driven(&store, &session.id)?;
                    let (held, breakpoints) = if driven { holds(&store, &session.id)? } else { Default::default() };
                    Ok(SessionView {
                        held,
                        breakpoints,
                        tasks: store.task_nodes(&session.id)?,
                        waiting: waiting(&attempts).map(|a| a.node.clone()).collect(),
                        attempts,
                        driven,
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
        "get_session_notes",
        "What the agent that started a session wrote while it was that agent's latest session (from its \
         creation until the same project and agent started another): the task memory it recorded events \
         in (each task's resume view and its last events of that time) and its checklist tasks open then.",
        |api: Api, args: SessionArguments| async move {
            api.blocking(move |db| Ok(open(db)?.session_notes(&args.session_id)?)).await
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
}
