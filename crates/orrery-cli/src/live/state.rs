//! What the display knows of a session, folded from its committed events: each task's state,
//! the attempt and progress step of the running ones, and the notices still to print.

use orrery_api::{Event, EventData};
use orrery_blueprint::{SessionState, TaskState};
use serde_json::Value;
use std::collections::HashMap;

/// A line printed once above the block, for the user to keep.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// A task failed; its attempt's error when known.
    Failed {
        node: String,
        attempt: u32,
        error: Option<String>,
    },
    Notification {
        node: String,
        text: String,
    },
    Prompt {
        node: String,
        message: String,
    },
    /// A task held at a breakpoint (`before` it starts or `after` it ended) in session `session`.
    Held {
        node: String,
        at: String,
        session: String,
    },
    /// A scope went round again: `first` and the `reset` tasks of the scope are PENDING again
    /// for pass number `pass`.
    Loop {
        first: String,
        pass: u32,
        reset: usize,
    },
    /// A message of `orrery` itself (a Ctrl-C acknowledgement).
    Said(String),
}

/// How many tasks are in each state; `pending` counts every state that has yet to run
/// (PENDING, READY, SKIP_REQUESTED).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub pending: usize,
    pub running: usize,
    pub succeeded: usize,
    pub failed: usize,
    pub skipped: usize,
}

impl Counts {
    pub fn total(&self) -> usize {
        self.pending + self.running + self.finished()
    }

    pub fn finished(&self) -> usize {
        self.succeeded + self.failed + self.skipped
    }
}

#[derive(Debug, Clone)]
pub(super) struct TaskView {
    pub(super) node: String,
    pub(super) state: TaskState,
    pub(super) attempt: u32,
    /// When its current attempt started (ms since the epoch, the store's clock).
    pub(super) since_ms: i64,
    pub(super) step: Option<StepView>,
    /// The error of its last failed attempt.
    pub(super) error: Option<String>,
}

#[derive(Debug, Clone)]
pub(super) struct StepView {
    pub(super) name: String,
    pub(super) percentage: Option<u64>,
}

/// How the session ended, once it did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Ended {
    pub(super) state: SessionState,
    pub(super) at_ms: i64,
}

/// What the live display knows of a session, folded from its events.
#[derive(Debug, Clone)]
pub struct LiveState {
    pub(super) started_ms: i64,
    pub(super) session_id: String,
    pub(super) blueprint: String,
    pub(super) tasks: Vec<TaskView>,
    pub(super) by_node: HashMap<String, usize>,
    pub(super) by_run: HashMap<String, usize>,
    pub(super) ended: Option<Ended>,
    /// The tasks are all known: the session's state was announced, or the store was read.
    pub(super) begun: bool,
    /// The session was announced running (so a task going back to PENDING is a loop, not the
    /// retry of a resume).
    pub(super) running: bool,
    pub(super) notices: Vec<Notice>,
    /// A scope loop whose resets are still arriving (consecutive events), and the last seq.
    pub(super) open_loop: Option<(Notice, u64)>,
    pub(super) passes: HashMap<String, u32>,
}

impl LiveState {
    /// An empty state; elapsed times of the session count from `started_ms`.
    pub fn new(started_ms: i64) -> LiveState {
        LiveState {
            started_ms,
            session_id: String::new(),
            blueprint: String::new(),
            tasks: Vec::new(),
            by_node: HashMap::new(),
            by_run: HashMap::new(),
            ended: None,
            begun: false,
            running: false,
            notices: Vec::new(),
            open_loop: None,
            passes: HashMap::new(),
        }
    }

    /// Adds what the store knows and the events did not say: the blueprint and the task
    /// states of a resumed session (a resume announces only what changes). Tasks already
    /// known from events keep their state unless `overwrite` (events were missed).
    pub fn seed(&mut self, blueprint: &str, nodes: impl IntoIterator<Item = (String, TaskState)>, overwrite: bool) {
        if self.blueprint.is_empty() {
            self.blueprint = blueprint.to_string();
        }
        self.begun = true;
        for (node, state) in nodes {
            if overwrite || !self.by_node.contains_key(&node) {
                let i = self.task(&node);
                self.tasks[i].state = state;
            }
        }
    }

    /// Whether the store must be read for what the events do not say: the first event is not
    /// the creation of the session.
    pub fn needs_seed(&self, event: &Event) -> bool {
        self.session_id.is_empty() && !matches!(event.data(), Some(EventData::SessionCreated(_)))
    }

    pub fn counts(&self) -> Counts {
        let mut counts = Counts::default();
        for t in &self.tasks {
            match t.state {
                TaskState::Running => counts.running += 1,
                TaskState::Succeeded => counts.succeeded += 1,
                TaskState::Failed => counts.failed += 1,
                TaskState::Skipped => counts.skipped += 1,
                TaskState::Pending | TaskState::Ready | TaskState::SkipRequested | TaskState::Unspecified => {
                    counts.pending += 1
                }
            }
        }
        counts
    }

    /// The notices to print now, oldest first; a scope loop whose resets may still be arriving
    /// waits for the next call (or [`LiveState::finish`]).
    pub fn take_notices(&mut self) -> Vec<Notice> {
        std::mem::take(&mut self.notices)
    }

    /// Closes what is still open at the end: the last scope loop.
    pub fn finish(&mut self) {
        self.close_loop();
    }

    fn task(&mut self, node: &str) -> usize {
        if let Some(&i) = self.by_node.get(node) {
            return i;
        }
        self.tasks.push(TaskView {
            node: node.to_string(),
            state: TaskState::Pending,
            attempt: 0,
            since_ms: 0,
            step: None,
            error: None,
        });
        self.by_node.insert(node.to_string(), self.tasks.len() - 1);
        self.tasks.len() - 1
    }

    fn close_loop(&mut self) {
        if let Some((notice, _)) = self.open_loop.take() {
            self.notices.push(notice);
        }
    }

    /// Folds one committed event in.
    pub fn apply(&mut self, event: &Event) {
        if self.session_id.is_empty() {
            self.session_id = event.session_id.clone();
        }
        // A cut payload is a huge one (outputs, a long message), and a kind of another build
        // is not this display's: nothing the display needs.
        let data = event.data();
        let run = event.run_id.as_ref().map(|r| r.as_str().to_string());
        let is_reset = self.running
            && matches!(data, Some(EventData::TaskStateChanged(changed))
                if changed.state == TaskState::Pending
                    && matches!(changed.previous, Some(TaskState::Succeeded | TaskState::Failed | TaskState::Skipped)));
        if !is_reset {
            self.close_loop();
        }
        let Some(data) = data else { return };
        match data {
            EventData::SessionCreated(created) => {
                let name = &created.blueprint_id;
                self.blueprint = if name.is_empty() { created.name.clone() } else { name.clone() };
            }
            EventData::SessionStateChanged(changed) => {
                self.begun = true;
                let state = changed.state;
                self.running = state == SessionState::Running;
                self.ended = match state {
                    SessionState::Completed | SessionState::Failed | SessionState::Stopped => {
                        Some(Ended { state, at_ms: event.time_ms })
                    }
                    _ => None,
                };
            }
            EventData::TaskStateChanged(changed) => {
                let state = changed.state;
                let node = changed.node.clone();
                let i = self.task(&node);
                let task = &mut self.tasks[i];
                let was = task.state;
                task.state = state;
                if state == TaskState::Running && was != TaskState::Running {
                    task.since_ms = event.time_ms;
                    task.step = None;
                }
                if state == TaskState::Failed && was != TaskState::Failed {
                    let (attempt, error) = (task.attempt, task.error.clone());
                    self.notices.push(Notice::Failed { node, attempt, error });
                } else if is_reset {
                    self.reset(node, event.seq);
                }
            }
            EventData::AttemptStarted(started) => {
                let i = self.task(&started.node);
                let task = &mut self.tasks[i];
                task.attempt = started.attempt;
                task.since_ms = event.time_ms;
                task.step = None;
                task.error = None;
                if let Some(run) = run {
                    self.by_run.insert(run, i);
                }
            }
            EventData::AttemptSettled(settled) => {
                let i = self.task(&settled.node);
                if let Some(error) = &settled.error {
                    self.tasks[i].error = Some(format!("{}: {}", error.code, error.message));
                }
            }
            EventData::Progress(progress) => {
                let Some(&i) = run.as_ref().and_then(|r| self.by_run.get(r)) else { return };
                let name = progress.step.clone();
                self.tasks[i].step = Some(StepView { name, percentage: progress.percentage.map(u64::from) });
            }
            EventData::Notification(shown) => {
                let text_of_it = match &shown.values {
                    Some(values) => Value::Object(values.clone()).to_string(),
                    None => {
                        let level = shown.level.as_ref().and_then(Value::as_str).unwrap_or("");
                        let text = |t: &Option<String>| t.clone().unwrap_or_default();
                        format!("[{level}] {}: {}", text(&shown.title), text(&shown.message))
                    }
                };
                self.notices.push(Notice::Notification { node: shown.node.clone(), text: text_of_it });
            }
            EventData::PromptWaiting(prompt) => {
                self.notices.push(Notice::Prompt { node: prompt.node.clone(), message: prompt.message.clone() });
            }
            EventData::Breakpoints(holds) if holds.what == "held" => {
                let at = holds.held.iter().find(|h| h.node == holds.node).map_or("", |h| h.at.as_str());
                let session = self.session_id.clone();
                self.notices.push(Notice::Held { node: holds.node.clone(), at: at.to_string(), session });
            }
            // Nothing of these is on the display.
            EventData::DataUpdated(_)
            | EventData::Breakpoints(_)
            | EventData::DataEdited(_)
            | EventData::PromptAnswered(_)
            | EventData::SessionBlueprints(_)
            | EventData::BrokerDispatch(_)
            | EventData::LogCapped(_)
            | EventData::LogGrew(_)
            | EventData::RemoteLink(_) => {}
        }
    }

    /// A finished task went back to PENDING: a scope loops. The resets of one loop are
    /// consecutive events and make one notice, named after the first task reset.
    fn reset(&mut self, node: String, seq: u64) {
        match &mut self.open_loop {
            Some((Notice::Loop { reset, .. }, last)) if *last + 1 == seq => {
                *reset += 1;
                *last = seq;
            }
            _ => {
                self.close_loop();
                let pass = self.passes.entry(node.clone()).or_insert(1);
                *pass += 1;
                self.open_loop = Some((Notice::Loop { first: node, pass: *pass, reset: 1 }, seq));
            }
        }
    }
}
