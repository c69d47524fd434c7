//! Sessions a face runs in its own process and follows as they go (`orrery run`, `resume`,
//! `restart`, `recover`): [`Api::run_here`] starts one the way the jobs `start_session`,
//! `resume_session` and `restart_session` do, with the face's own prompt policy and broker,
//! and answers a [`Here`]: the session's committed events from the first, its control, and how
//! it ended. Where the session runs is decided as for the jobs: a mirror of a server's session
//! is resumed or restarted by its server, and its [`Here`] follows the mirror.

use super::*;

use orrery_blueprint::{Blueprint, SessionState, ValidBlueprint};
use orrery_engine::runner;
use orrery_store::ErrorRecord;
use serde_json::Map;

use crate::broker::BrokerSettings;
use crate::mirror::RemoteStep;

/// What to run.
pub enum Run {
    /// A validated blueprint as a new session, with the blueprints its composites may call and
    /// the session's params ([`orrery_blueprint::load_runnable`] answers the first two).
    Blueprint { root: Box<ValidBlueprint>, library: Vec<Blueprint>, params: Map<String, Value> },
    /// A stored session, on from where it stopped, crashed or failed.
    Resume { session_id: String },
    /// A stored session over, as a new session: the same blueprint versions and params.
    Restart { session_id: String },
}

/// What a prompt with no answer does.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub enum Unanswered {
    /// It waits for `answer_prompt` (or [`SessionControl::answer`]).
    #[default]
    Wait,
    /// It fails at once: nobody is there to answer (a script, a test).
    Fail,
}

/// How to launch: the answers given before the prompts ask, and the broker.
#[derive(Default)]
pub struct Launch {
    /// By task id or node key.
    pub answers: Map<String, Value>,
    pub unanswered: Unanswered,
    /// The broker settings of this launch; `None`: the stored ones.
    pub broker: Option<BrokerSettings>,
}

/// How a session followed here ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Ended {
    pub session_id: String,
    /// COMPLETED, FAILED or STOPPED.
    pub state: SessionState,
    /// Why it failed.
    pub error: Option<ErrorRecord>,
}

/// A session followed in this process.
pub struct Here {
    pub session_id: String,
    /// Its committed events, in commit order, from the first.
    pub events: broadcast::Receiver<Event>,
    /// What drives it: its control, how it ends.
    pub driver: Driver,
}

/// What drives a session followed here: a runner of this process, or the server of a mirror.
pub struct Driver(Driven);

enum Driven {
    Local {
        control: SessionControl,
        ended: watch::Receiver<Option<Result<RunReport, String>>>,
    },
    /// `forward` passes the mirror's events to [`Here::events`].
    Mirror {
        api: Api,
        session_id: String,
        forward: tokio::task::JoinHandle<()>,
    },
}

impl Here {
    pub(crate) fn local(
        session_id: String,
        events: broadcast::Receiver<Event>,
        control: SessionControl,
        ended: watch::Receiver<Option<Result<RunReport, String>>>,
    ) -> Here {
        Here { session_id, events, driver: Driver(Driven::Local { control, ended }) }
    }
}

impl Driver {
    /// Stop, pause and answers of a session run here; `None` for a mirror, which its server
    /// drives (the jobs `stop_session` and `pause_session` reach it there).
    pub fn control(&self) -> Option<&SessionControl> {
        match &self.0 {
            Driven::Local { control, .. } => Some(control),
            Driven::Mirror { .. } => None,
        }
    }

    /// Waits until the session has ended and every event of it has been sent to
    /// [`Here::events`]. A runner that could not go on (and could not record why on the
    /// session) is the failure.
    pub async fn ended(self) -> Result<Ended, Failure> {
        match self.0 {
            Driven::Local { mut ended, .. } => {
                let report = ended.wait_for(Option::is_some).await.ok().and_then(|report| report.clone());
                match report {
                    Some(Ok(report)) => {
                        Ok(Ended { session_id: report.session_id, state: report.state, error: report.error })
                    }
                    Some(Err(why)) => Err(Failure::new(FailureCode::Engine, why)),
                    None => Err(Failure::new(FailureCode::Engine, "the runner went away without an answer")),
                }
            }
            Driven::Mirror { api, session_id, forward } => loop {
                let id = session_id.clone();
                let ((), session, ended) =
                    api.poll_until_ended(Some(3600.0), move |db| Ok(((), sessions::open(db)?.session(&id)?))).await?;
                if ended {
                    // What the follower applied is in the store, and its events were sent with it.
                    forward.abort();
                    return Ok(Ended { session_id: session.id, state: session.state, error: session.last_error });
                }
            },
        }
    }
}

impl Api {
    /// Runs `run` in this process (see the module notes); an error before the session exists
    /// (an unknown or completed session, a broker that cannot be reached) is the failure.
    pub async fn run_here(&self, run: Run, how: Launch) -> Result<Here, Failure> {
        let stored = match &run {
            Run::Blueprint { .. } => None,
            Run::Resume { session_id } => Some((session_id.clone(), RemoteStep::Resume)),
            Run::Restart { session_id } => Some((session_id.clone(), RemoteStep::Restart)),
        };
        if let Some((id, step)) = stored {
            if let Some(server) = self.remote_of(&id).await? {
                // Subscribed before the server is asked, so that no event of the mirror is missed.
                let all = self.subscribe();
                let session_id = self.remote_step(&id, server, step).await?;
                let (events, forward) = mirror_events(all, session_id.clone());
                let driver = Driver(Driven::Mirror { api: self.clone(), session_id: session_id.clone(), forward });
                return Ok(Here { session_id, events, driver });
            }
        }
        self.start(how, move |db, options| async move {
            match run {
                Run::Blueprint { root, library, params } => {
                    runner::run_session(&db, *root, library, params, options).await
                }
                Run::Resume { session_id } => runner::resume_session(&db, &session_id, options).await,
                Run::Restart { session_id } => runner::restart_session(&db, &session_id, options).await,
            }
        })
        .await
    }
}

/// The events of one mirror among everything this process follows, passed on until the task
/// is aborted.
fn mirror_events(
    mut all: broadcast::Receiver<Event>,
    session_id: String,
) -> (broadcast::Receiver<Event>, tokio::task::JoinHandle<()>) {
    let (own, events) = broadcast::channel(16_384);
    let forward = tokio::spawn(async move {
        loop {
            match all.recv().await {
                Ok(event) if event.session_id == session_id && !matches!(event.data(), Some(EventData::LogGrew(_))) => {
                    if own.send(event).is_err() {
                        return;
                    }
                }
                Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(broadcast::error::RecvError::Closed) => return,
            }
        }
    });
    (events, forward)
}
