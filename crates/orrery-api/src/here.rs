//! Sessions a face runs in its own process and follows as they go (`orrery run`, `resume`,
//! `restart`, `recover`): [`Api::run_here`] starts one the way the jobs `start_session`,
//! `resume_session` and `restart_session` do, with the face's own prompt policy and broker,
//! and answers a [`Here`]: the session's committed events from the first, its control, and how
//! it ended. Where the session runs is decided as for the jobs: a mirror of a server's session
//! is resumed or restarted by its server, and its [`Here`] follows the mirror.

use super::*;

use std::time::Duration;

use orrery_blueprint::{Blueprint, SessionState, ValidBlueprint};
use orrery_engine::agents::interaction::{Answers, WhenUnanswered};
use orrery_engine::runner::{self, RunError, RunOptions};
use orrery_store::{ErrorRecord, Session, Starter};
use serde_json::Map;

use crate::broker::BrokerSettings;
use crate::log_growth::{LogGrowth, LOOK_EVERY};
use crate::mirror::RemoteStep;

/// What to run.
pub enum Run {
    /// A validated blueprint as a new session, with the blueprints its composites may call and
    /// the session's params ([`orrery_blueprint::load_runnable`] answers the first two).
    Blueprint { root: Box<ValidBlueprint>, library: Vec<Blueprint>, params: Map<String, Value> },
    /// A stored session, on from where it stopped, crashed or failed.
    Resume { session_id: String },
    /// A stored session over, as a new session with its params.
    Restart { session_id: String, how: Restart },
    /// One task of a validated blueprint alone, as a new session ("test this task").
    Alone { root: Box<ValidBlueprint>, library: Vec<Blueprint>, params: Map<String, Value>, alone: runner::Alone },
}

/// What a restart runs and keeps.
#[derive(Debug, Default, Clone)]
pub struct Restart {
    /// Run this blueprint file (and the blueprints of its folder) instead of the versions the
    /// session ran.
    pub file: Option<PathBuf>,
    /// Run the file the session was started from, as it is saved now.
    pub saved: bool,
    /// Keep what the session finished, as far as the blueprint run now computes it the same way
    /// (see `orrery_engine::runner::Restart::keep_done`).
    pub keep_done: bool,
    /// Run from this task: keep what the session finished but this task and what follows it,
    /// which run again (see `orrery_engine::runner::Restart::from`).
    pub from: Option<String>,
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
    /// The blueprint file a new session is started from, kept with it (a restart keeps its
    /// origin's unless one is given).
    pub file: Option<PathBuf>,
    /// Where the run holds (see `orrery_engine::runner::breakpoints`).
    pub breakpoints: Vec<runner::Breakpoint>,
    /// A task that fails holds there instead of failing the session.
    pub hold_on_failure: bool,
    /// Run without processes (see `orrery_engine::runner::simulation`).
    pub simulation: Option<runner::Simulation>,
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
    pub events: broadcast::Receiver<Arc<Event>>,
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
        events: broadcast::Receiver<Arc<Event>>,
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
                    api.poll_until_ended(Some(3600.0), move |db| Ok(((), open(db)?.session(&id)?))).await?;
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
    /// `Api::launch` with the launch's own prompts and broker, answering what a face that
    /// follows the session in this process needs: its events from the first, its control, and
    /// how it ended.
    pub(crate) async fn start<F, Fut>(&self, how: Launch, run: F) -> Result<Here, Failure>
    where
        F: FnOnce(PathBuf, RunOptions) -> Fut,
        Fut: Future<Output = Result<RunReport, RunError>> + Send + 'static,
    {
        let given = Answers::new(match how.unanswered {
            Unanswered::Wait => WhenUnanswered::Wait,
            Unanswered::Fail => WhenUnanswered::Fail,
        });
        for (task, value) in how.answers {
            given.answer(&task, value);
        }
        let control = SessionControl::new().with_answers(given);
        let broker = self.broker_options(how.broker).await?;
        let (events, mut receiver) = broadcast::channel(16_384);
        let options = RunOptions {
            max_parallel: self.inner.max_parallel,
            work_dir: self.inner.work_dir.clone(),
            events: Some(events),
            control: Some(control.clone()),
            broker,
            retry: None,
            started_by: Some(Starter { project: self.caller.project.clone(), agent: self.caller.agent.clone() }),
            file: how.file,
            breakpoints: how.breakpoints,
            hold_on_failure: how.hold_on_failure,
            simulation: how.simulation,
        };
        let mut handle = tokio::spawn(run(self.inner.db.clone(), options));
        let unseen = |ended: Result<Result<RunReport, RunError>, tokio::task::JoinError>| match ended {
            Err(e) => Failure::new(FailureCode::Engine, format!("the runner failed: {e}")),
            Ok(Err(e)) => run_failure(e),
            Ok(Ok(report)) => {
                Failure::new(FailureCode::Engine, format!("session {} ended before it was seen", report.session_id))
            }
        };
        // The first committed event names the session. A runner that fails before the session
        // exists drops its events' sender, which may be seen before its end: its error is the answer.
        // The events come first: a session that runs in a blink has sent them all by the time its
        // runner ends, and both are ready at once (picked at random, the end won now and then).
        let first = tokio::select! {
            biased;
            first = receiver.recv() => match first {
                Ok(first) => first,
                Err(_) => return Err(unseen(handle.await)),
            },
            ended = &mut handle => return Err(unseen(ended)),
        };
        let session_id = first.session_id.clone();
        let mut growth = LogGrowth::default();
        growth.saw(&first);
        // The session's own events, for the face that started it (its receiver is made here, so
        // it misses none).
        let (own, own_events) = broadcast::channel(16_384);
        let _ = own.send(first.clone());
        let _ = self.inner.events.send(first);
        let (ended_tx, ended) = watch::channel(None);
        self.inner
            .running
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(session_id.clone(), Running { control: control.clone(), ended: ended.clone() });
        let forward = self.inner.events.clone();
        // Ends once the runner is gone (it holds the only senders).
        let forwarder = tokio::spawn(async move {
            let mut look = tokio::time::interval(LOOK_EVERY);
            look.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    received = receiver.recv() => match received {
                        Ok(event) => {
                            let last_look = growth.saw(&event);
                            let _ = own.send(event.clone());
                            let _ = forward.send(event);
                            if let Some(grew) = last_look {
                                let _ = forward.send(Arc::new(grew));
                            }
                        }
                        Err(broadcast::error::RecvError::Lagged(_)) => continue,
                        Err(broadcast::error::RecvError::Closed) => break,
                    },
                    _ = look.tick(), if growth.watching() => {
                        for grew in growth.look() {
                            let _ = forward.send(Arc::new(grew));
                        }
                    }
                }
            }
        });
        let api = self.clone();
        let id = session_id.clone();
        tokio::spawn(async move {
            let ended = match handle.await {
                Ok(Ok(report)) => Ok(report),
                Ok(Err(e)) => Err(e.to_string()),
                Err(e) => Err(format!("the runner failed: {e}")),
            };
            if let Err(why) = &ended {
                // The runner could not even record this on the session: say it where the
                // server's operator looks.
                eprintln!("orrery: session {id} was left unfinished: {why}");
            }
            // Every event of the session reaches `subscribe` before it counts as ended: a
            // `wait_all` caller (a server shutting down) may rely on having seen them all.
            let _ = forwarder.await;
            api.inner.running.lock().unwrap_or_else(|p| p.into_inner()).remove(&id);
            let _ = ended_tx.send(Some(ended));
        });
        Ok(Here::local(session_id, own_events, control, ended))
    }

    /// Reads `(what, session)` with `read` every 50 ms until the session has ended (completed,
    /// failed or stopped, and a runner of this process has let go of it) or `timeout_s` (default
    /// 60 s, at most an hour) has passed; the last read and whether it ended.
    pub(crate) async fn poll_until_ended<T: Send + 'static>(
        &self,
        timeout_s: Option<f64>,
        read: impl Fn(&Path) -> Result<(T, Session), Failure> + Clone + Send + 'static,
    ) -> Result<(T, Session, bool), Failure> {
        let timeout = Duration::from_secs_f64(timeout_s.unwrap_or(60.0).clamp(0.0, 3600.0));
        let until = tokio::time::Instant::now() + timeout;
        loop {
            let (what, session) = self.blocking(read.clone()).await?;
            let ended = matches!(session.state, SessionState::Completed | SessionState::Failed | SessionState::Stopped)
                && self.control(&session.id).is_none();
            if ended || tokio::time::Instant::now() >= until {
                return Ok((what, session, ended));
            }
            tokio::time::sleep(Duration::from_millis(50).min(until - tokio::time::Instant::now())).await;
        }
    }

    /// The control of a session running in this process.
    pub(crate) fn control(&self, session_id: &str) -> Option<SessionControl> {
        self.inner.running.lock().unwrap_or_else(|p| p.into_inner()).get(session_id).map(|r| r.control.clone())
    }

    /// Runs `run` in this process (see the module notes); an error before the session exists
    /// (an unknown or completed session, a broker that cannot be reached) is the failure.
    pub async fn run_here(&self, run: Run, how: Launch) -> Result<Here, Failure> {
        // A restart with a saved blueprint or keeping results runs here; a mirror's cannot.
        let stored = match &run {
            Run::Blueprint { .. } | Run::Alone { .. } => None,
            Run::Resume { session_id } => Some((session_id.clone(), RemoteStep::Resume, false)),
            Run::Restart { session_id, how } => Some((
                session_id.clone(),
                RemoteStep::Restart,
                how.file.is_some() || how.saved || how.keep_done || how.from.is_some(),
            )),
        };
        if let Some((id, step, here_only)) = stored {
            if let Some(server) = self.remote_of(&id).await? {
                if here_only {
                    return Err(Failure::new(
                        FailureCode::InvalidArgument,
                        format!(
                            "session {id} runs on {}: its server restarts it with the versions it ran, from the start \
                             (keeping results, running from a task and running a saved file are for runs on this \
                             machine)",
                            server.url()
                        ),
                    ));
                }
                // Subscribed before the server is asked, so that no event of the mirror is missed.
                let all = self.subscribe();
                let session_id = self.remote_step(&id, server, step).await?;
                let (events, forward) = mirror_events(all, session_id.clone());
                let driver = Driver(Driven::Mirror { api: self.clone(), session_id: session_id.clone(), forward });
                return Ok(Here { session_id, events, driver });
            }
        }
        let (mut how, mut run) = (how, run);
        if let Run::Restart { session_id, how: restart } = &mut run {
            if restart.saved {
                if restart.file.is_some() {
                    return Err(Failure::new(
                        FailureCode::InvalidArgument,
                        "give a file or ask for the saved one, not both",
                    ));
                }
                restart.file = Some(self.file_of(session_id).await?);
            }
            how.file = how.file.take().or_else(|| restart.file.clone());
        }
        let blueprint = match &run {
            Run::Restart { how: Restart { file: Some(file), .. }, .. } => Some(crate::sessions::runnable(file).await?),
            _ => None,
        };
        self.start(how, move |db, options| async move {
            match run {
                Run::Blueprint { root, library, params } => {
                    runner::run_session(&db, *root, library, params, options).await
                }
                Run::Resume { session_id } => runner::resume_session(&db, &session_id, options).await,
                Run::Restart { session_id, how } => {
                    let how = runner::Restart { blueprint, keep_done: how.keep_done, from: how.from };
                    runner::restart_session(&db, &session_id, how, options).await
                }
                Run::Alone { root, library, params, alone } => {
                    runner::run_task_alone(&db, *root, library, params, alone, options).await
                }
            }
        })
        .await
    }
}

impl Api {
    /// The blueprint file session `id` was started from; a session that has none is refused.
    async fn file_of(&self, id: &str) -> Result<PathBuf, Failure> {
        let id = id.to_string();
        let session = self.blocking(move |db| Ok(open(db)?.session(&id)?)).await?;
        session.file.ok_or_else(|| {
            Failure::new(
                FailureCode::InvalidArgument,
                format!("session {} keeps no blueprint file (it was started before Orrery kept it, or from text): name the file", session.id),
            )
        })
    }
}

/// The events of one mirror among everything this process follows, passed on until the task
/// is aborted.
fn mirror_events(
    mut all: broadcast::Receiver<Arc<Event>>,
    session_id: String,
) -> (broadcast::Receiver<Arc<Event>>, tokio::task::JoinHandle<()>) {
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

pub(crate) fn run_failure(e: RunError) -> Failure {
    match e {
        RunError::Store(e) => e.into(),
        RunError::NotResumable { .. } => Failure::new(FailureCode::Refused, e.to_string()),
        RunError::UnknownTask { .. }
        | RunError::UnknownBreakpoint { .. }
        | RunError::UnknownSimulated { .. }
        | RunError::UnknownAlone { .. }
        | RunError::UnknownInput { .. } => Failure::new(FailureCode::NotFound, e.to_string()),
        RunError::OtherBlueprint { .. } | RunError::SimulatedInputs { .. } => {
            Failure::new(FailureCode::Refused, e.to_string())
        }
        RunError::UnknownTaskTypes { .. } | RunError::Plan(_) => {
            Failure::new(FailureCode::InvalidBlueprint, e.to_string())
        }
        other => Failure::new(FailureCode::Engine, other.to_string()),
    }
}
