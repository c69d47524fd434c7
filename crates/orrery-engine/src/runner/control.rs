//! Acting on a running session: stop, pause, cancel a task, answer a prompt, from this process
//! ([`SessionControl`]) or from another one (requests in the store, polled by the runner).
//!
//! - **Stop** cancels what runs and ends the session `stopped` (see the runner's notes).
//! - **Pause** starts nothing new and lets what runs finish (or reach a point where it waits
//!   for a task that will not start); waiting prompts are withdrawn (they ask again on resume).
//!   Then the session ends `stopped`, as a pause does on an antikythera server, and `resume`
//!   goes on from there. Runs held back by FF or SF edges whose predecessor never started are
//!   settled `cancelled` like on a stop and run again on resume.
//! - **Cancel a task** ends the running attempt of one task: a process gets SIGTERM, the grace
//!   period, then SIGKILL (its whole group); a sleep or a prompt is dropped. The attempt is
//!   settled `cancelled` (exit code 130 for a process, docs/format.md §6), the task FAILED,
//!   the session fails with `TASK_FAILED` "task '…' was cancelled", as on any task failure: `resume` runs the task again (retry from
//!   failure), or `skip` it first. A task that is not running is refused (the request says so);
//!   a composite is refused too (cancel the inner task that runs).
//! - **Requests from other processes** ([`orrery_store::Request`]) are read every
//!   [`REQUEST_POLL`] while the session runs; each is marked handled with what came of it.

use super::*;

use orrery_store::{OpenRequest, Request};

/// How often the runner reads the requests other processes left in the store.
pub const REQUEST_POLL: Duration = Duration::from_millis(200);

/// What was asked of a session: levels, not messages, so nothing is lost or applied twice.
#[derive(Debug, Clone, Default)]
pub(super) struct Asked {
    pub(super) stop: bool,
    pub(super) pause: bool,
    /// Tasks to cancel, in the order asked (only ever appended to).
    pub(super) cancel: Vec<String>,
    /// Held tasks to let go (`None`: every one), in the order asked (only ever appended to).
    pub(super) release: Vec<(Option<String>, Release)>,
}

/// A handle to act on a running session from outside: stop, pause, cancel a task, answer its
/// prompts. Clones share one state and one set of [`Answers`].
#[derive(Debug, Clone)]
pub struct SessionControl {
    asked: Arc<watch::Sender<Asked>>,
    answers: Answers,
}

impl Default for SessionControl {
    fn default() -> Self {
        SessionControl::new()
    }
}

impl SessionControl {
    pub fn new() -> Self {
        let (asked, _) = watch::channel(Asked::default());
        SessionControl { asked: Arc::new(asked), answers: Answers::new(WhenUnanswered::Wait) }
    }

    /// This control with `answers` as its answers (pre-seeded ones, and what to do when a
    /// prompt has none). [`SessionControl::new`] waits for answers given with
    /// [`SessionControl::answer`].
    pub fn with_answers(mut self, answers: Answers) -> Self {
        self.answers = answers;
        self
    }

    /// The answers this control gives the session's prompts.
    pub fn answers(&self) -> &Answers {
        &self.answers
    }

    /// Answers the prompt of a task (its node key, or its task id); a prompt waiting for it
    /// goes on. See [`crate::agents::interaction`].
    pub fn answer(&self, task: &str, value: Value) {
        self.answers.answer(task, value);
    }

    /// Asks the session to stop: its runs are cancelled and it ends `stopped`. Idempotent;
    /// does nothing once the session ended.
    pub fn stop(&self) {
        self.asked.send_modify(|a| a.stop = true);
    }

    /// Asks the session to pause (see the module notes). Idempotent.
    pub fn pause(&self) {
        self.asked.send_modify(|a| a.pause = true);
    }

    /// Asks the session to cancel the running attempt of `task` (node key or task id).
    pub fn cancel_task(&self, task: &str) {
        self.asked.send_modify(|a| a.cancel.push(task.to_string()));
    }

    /// Lets go of a task held at a breakpoint (node key or task id; `None`: every held task).
    /// See [`super::breakpoints`].
    pub fn release(&self, task: Option<&str>, how: Release) {
        self.asked.send_modify(|a| a.release.push((task.map(str::to_string), how)));
    }

    /// Whether [`SessionControl::stop`] was called.
    pub fn is_stop_requested(&self) -> bool {
        self.asked.borrow().stop
    }

    pub(super) fn subscribe(&self) -> watch::Receiver<Asked> {
        self.asked.subscribe()
    }
}

/// Resolves when something new is asked; never once every handle is gone.
pub(super) async fn asked_changed(rx: &mut watch::Receiver<Asked>) {
    if rx.changed().await.is_err() {
        std::future::pending::<()>().await
    }
}

impl Runner {
    /// Applies what is newly asked of the control: `true` when the session must stop now.
    pub(super) async fn apply_asked(&mut self) -> Result<bool, RunError> {
        let asked = self.asked.borrow_and_update().clone();
        if asked.stop {
            return Ok(true);
        }
        if asked.pause && !self.pausing {
            self.pausing = true;
            self.withdraw_prompts().await?;
        }
        for task in asked.cancel.iter().skip(self.cancels_seen) {
            // Asked in this process: the outcome is seen in the session's events.
            let _ = self.cancel(task).await?;
        }
        self.cancels_seen = asked.cancel.len();
        for (task, how) in asked.release.iter().skip(self.releases_seen) {
            let _ = self.release(task.as_deref(), *how).await?;
        }
        self.releases_seen = asked.release.len();
        Ok(false)
    }

    /// Reads the requests other processes left, hands each to the control and marks it
    /// handled with what came of it.
    pub(super) async fn poll_requests(&mut self) -> Result<(), RunError> {
        let session = self.session_id.clone();
        let open: Vec<OpenRequest> = self.db.read(move |s| s.open_requests(&session)).await?;
        for OpenRequest { id, request, .. } in open {
            let outcome = match request {
                Request::Stop => {
                    self.control.stop();
                    "stopping".to_string()
                }
                Request::Pause => {
                    self.control.pause();
                    "pausing".to_string()
                }
                Request::Cancel { task } => self.cancel(&task).await?,
                Request::Answer { task, value } => {
                    self.control.answer(&task, value);
                    format!("answer given to {task}")
                }
                Request::Release { task, how } => match Release::parse(&how) {
                    Some(how) => self.release(task.as_deref(), how).await?,
                    None => format!("refused: {how:?} is not a way to let a task go (continue, step, skip)"),
                },
                Request::SetData { instance, key, value, by } => self.set_data(instance, key, value, by).await?,
                Request::Breakpoint { task, at } => match at.as_deref().map(|a| (a, BreakAt::parse(a))) {
                    None => self.set_breakpoint(&task, None).await?,
                    Some((_, Some(at))) => self.set_breakpoint(&task, Some(at)).await?,
                    Some((at, None)) => format!("refused: {at:?} is not where a task holds (before, after)"),
                },
            };
            self.db.call(move |s| s.mark_request_handled(id, &outcome)).await?;
        }
        Ok(())
    }

    /// Cancels the running attempt of `task` (node key or task id); what came of it.
    async fn cancel(&mut self, task: &str) -> Result<String, RunError> {
        let nodes = self.plan.nodes_named(task);
        // A composite is `Finishing` from its start: it runs while its inner blueprint does.
        let runs = |n: usize| match self.states[n] {
            NodeState::Running => true,
            NodeState::Finishing => self.runs[n].as_ref().is_some_and(|r| r.kind == RunKind::Composite),
            _ => false,
        };
        let running: Vec<usize> = nodes.iter().copied().filter(|&n| runs(n)).collect();
        let [n] = running[..] else {
            return Ok(match (nodes.len(), running.len()) {
                (0, _) => format!("refused: no task {task} in this session"),
                (_, 0) => format!("refused: task {task} is not running"),
                _ => format!("refused: task id {task} runs in several blueprint instances; name its node"),
            });
        };
        let Some(run) = self.runs[n].as_mut() else { return Ok(format!("refused: task {task} is not running")) };
        match run.kind {
            RunKind::Composite => Ok(format!("refused: {task} is a composite; cancel the inner task that runs")),
            RunKind::Shell => {
                match &run.canceller {
                    Some(canceller) => canceller.cancel(),
                    // Not spawned yet, or its start not reported: cancelled as soon as it is.
                    None => run.cancel_on_start = true,
                }
                Ok(format!("cancelling {}", self.key(n)))
            }
            RunKind::Sleep | RunKind::Prompt | RunKind::Instant | RunKind::Broker | RunKind::Simulated => {
                if let Some(handle) = run.sleep.take() {
                    handle.abort();
                }
                let error = ErrorRecord::new(ErrorCode::TaskFailed, format!("task '{}' was cancelled", self.key(n)));
                let key = self.key(n);
                if let Some(error) = self.cancelled_run(n, error, None).await? {
                    self.failure.get_or_insert(error);
                }
                Ok(format!("cancelled {key}"))
            }
        }
    }

    /// Withdraws the prompts waiting for an answer: attempts `cancelled`, tasks PENDING.
    async fn withdraw_prompts(&mut self) -> Result<(), RunError> {
        for n in 0..self.runs.len() {
            if self.runs[n].as_ref().is_some_and(|r| r.kind == RunKind::Prompt && r.ended.is_none()) {
                self.abandon_run(n).await?;
            }
        }
        Ok(())
    }
}
