//! A protocol task's status (the protocol's TaskStatus) and its log, read from its current run.

use super::*;

use orrery_blueprint::TaskState;
use orrery_store::{iso_8601 as iso, AttemptState, EventData, StepState};

/// A task's status as the protocol answers it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct TaskStatus {
    pub task_id: String,
    /// Its current run (a session id).
    pub run_id: String,
    /// The first part of its id: the agent of its task type, or `blueprint`.
    pub task_type: String,
    /// Its registered name: a task type or a stored blueprint's id.
    pub task_name: String,
    /// queued, running, succeeded, failed or cancelled.
    pub state: String,
    /// What it was submitted with: `task_name`, `source_tasks` and its inputs.
    pub config: Value,
    /// ISO 8601, UTC.
    pub created_at: String,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
    /// The process of its task while it runs (a single task), or of the runner holding its
    /// session (a blueprint); the last one known after.
    pub pid: Option<u32>,
    /// 0 unless it failed (its process's code, else 1) or was cancelled (130).
    pub exit_code: i32,
    /// Why it failed or was cancelled; `""` otherwise.
    pub error: String,
    /// A single task's outputs; a blueprint's session data (its own instance).
    pub result: Value,
    /// A single task's progress steps; a blueprint's tasks, each as a step.
    pub steps: Vec<Step>,
    /// The log file of a single task's latest attempt; `""` for a blueprint (its log is made
    /// from its events when read) and before the task's process starts.
    pub log_path: String,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Step {
    pub name: String,
    /// pending, running, done, failed, missed (a crash left it unclear) or skipped.
    pub state: String,
    pub percentage: Option<u8>,
}

pub(crate) fn protocol_state(state: SessionState) -> &'static str {
    match state {
        SessionState::Pending => "queued",
        SessionState::Running => "running",
        SessionState::Completed => "succeeded",
        SessionState::Failed => "failed",
        SessionState::Stopped => "cancelled",
    }
}

pub(crate) fn is_active(state: SessionState) -> bool {
    matches!(state, SessionState::Pending | SessionState::Running)
}

/// The parts of a task id, `{kind}#{registered name}#{name}`.
pub(super) fn parts(task_id: &str) -> (&str, &str, &str) {
    let (kind, rest) = task_id.split_once('#').unwrap_or((task_id, ""));
    let (registered, name) = rest.rsplit_once('#').unwrap_or((rest, ""));
    (kind, registered, name)
}

/// The node of a single task's task in its run.
fn single_node(session: &Session) -> String {
    format!("{}.{SINGLE_TASK}", session.blueprint_id)
}

fn is_single(task_id: &str) -> bool {
    parts(task_id).0 != BLUEPRINT
}

/// The status of `task`, whose current run is `session`.
pub(crate) fn status_of(store: &Store, task: &SubmittedTask, session: &Session) -> Result<TaskStatus, Failure> {
    let (kind, registered, name) = parts(&task.task_id);
    let single = is_single(&task.task_id);
    let attempt = if single { store.find_attempt(&session.id, &single_node(session), None)?.ok() } else { None };
    let state = protocol_state(session.state);
    let (exit_code, error) = match session.state {
        SessionState::Completed | SessionState::Pending | SessionState::Running => (0, String::new()),
        SessionState::Failed => {
            let code = attempt.as_ref().and_then(|a| a.exit_code).filter(|c| *c != 0).map_or(1, |c| c.clamp(1, 255));
            (code, session.last_error.as_ref().map_or_else(|| "Task failed".to_string(), |e| e.message.clone()))
        }
        SessionState::Stopped => {
            (130, session.last_error.as_ref().map_or_else(|| "Task cancelled".to_string(), |e| e.message.clone()))
        }
    };
    let pid = match &attempt {
        Some(a) => a.process.as_ref().map(|p| p.pid),
        None => store.lease(&session.id)?.map(|l| l.process.pid),
    };
    let (result, steps) = match &attempt {
        Some(a) => (a.outputs.clone().unwrap_or_else(|| json!({})), progress_steps(store, a)?),
        None if single => (json!({}), Vec::new()),
        None => {
            let data = store.instance_data(&session.id, &session.blueprint_id)?;
            (serde_json::to_value(data).unwrap_or_else(|_| json!({})), task_steps(store, &session.id)?)
        }
    };
    let mut config = task.config.clone();
    if !config.is_object() || config.as_object().is_some_and(Map::is_empty) {
        // Submitted before its config was kept.
        config = json!({"task_name": name, "source_tasks": task.source_tasks.join(",")});
    }
    Ok(TaskStatus {
        task_id: task.task_id.clone(),
        run_id: session.id.clone(),
        task_type: kind.to_string(),
        task_name: registered.to_string(),
        state: state.to_string(),
        config,
        created_at: iso(session.created_ms, "Z"),
        started_at: session.started_ms.map(|ms| iso(ms, "Z")),
        finished_at: session.finished_ms.filter(|_| !is_active(session.state)).map(|ms| iso(ms, "Z")),
        pid,
        exit_code,
        error,
        result,
        steps,
        log_path: attempt.and_then(|a| a.log_path).map(|p| p.display().to_string()).unwrap_or_default(),
    })
}

fn step_state(state: StepState) -> &'static str {
    match state {
        StepState::Pending => "pending",
        StepState::InProgress => "running",
        StepState::Done => "done",
        // A crash left it unclear.
        StepState::Unknown => "missed",
    }
}

/// The progress steps an attempt reported, each as it last was, in the order they began.
fn progress_steps(store: &Store, attempt: &orrery_store::Attempt) -> Result<Vec<Step>, Failure> {
    let mut steps: Vec<Step> = Vec::new();
    for event in store.run_events(&attempt.run_id, orrery_store::EventKind::Progress)? {
        let Some(EventData::Progress(p)) = event.data() else { continue };
        let step = Step { name: p.step.clone(), state: step_state(p.state).to_string(), percentage: p.percentage };
        match steps.iter_mut().find(|s| s.name == p.step) {
            Some(known) => *known = step,
            None => steps.push(step),
        }
    }
    Ok(steps)
}

/// A blueprint's tasks as steps, by node key.
fn task_steps(store: &Store, session_id: &str) -> Result<Vec<Step>, Failure> {
    let state = |s: TaskState| match s {
        TaskState::Unspecified | TaskState::Pending | TaskState::Ready => "pending",
        TaskState::Running | TaskState::SkipRequested => "running",
        TaskState::Succeeded => "done",
        TaskState::Failed => "failed",
        TaskState::Skipped => "skipped",
    };
    Ok(store
        .task_nodes(session_id)?
        .into_iter()
        .map(|n| Step { name: n.node, state: state(n.state).to_string(), percentage: None })
        .collect())
}

/// The log of a blueprint's run: one line per stored event that says what happened (a task's
/// attempt began or ended, the session changed state, a prompt waits, a notification), each
/// stamped with its time. Made from the stored events, so it only ever grows, and a reader's
/// offsets stay good from one read to the next.
pub(super) fn run_log(store: &Store, session_id: &str) -> Result<String, Failure> {
    let mut log = String::new();
    let mut after = 0;
    loop {
        let events = store.events_after(session_id, after, orrery_store::MAX_PAGE_LIMIT)?;
        let Some(last) = events.last() else { break };
        after = last.seq;
        for event in &events {
            if let Some(line) = event.data().and_then(log_line) {
                log.push_str(&iso(event.time_ms, "Z"));
                log.push(' ');
                log.push_str(&line);
                log.push('\n');
            }
        }
    }
    Ok(log)
}

fn log_line(data: &EventData) -> Option<String> {
    Some(match data {
        EventData::SessionStateChanged(s) => match &s.error {
            Some(e) => format!("session {}: {}", s.state.as_str(), e.message),
            None => format!("session {}", s.state.as_str()),
        },
        EventData::AttemptStarted(a) => format!("{} attempt {} started", a.node, a.attempt),
        EventData::AttemptSettled(a) => {
            let exit = a.exit_code.map(|c| format!(" (exit code {c})")).unwrap_or_default();
            let why = a.error.as_ref().map(|e| format!(": {}", e.message)).unwrap_or_default();
            let state = match a.state {
                AttemptState::Unknown => "ended, how is unknown",
                other => other.as_str(),
            };
            format!("{} attempt {} {state}{exit}{why}", a.node, a.attempt)
        }
        EventData::TaskStateChanged(t) if t.state == TaskState::Skipped => format!("{} skipped", t.node),
        EventData::PromptWaiting(p) => format!("{} waits for an answer: {}", p.node, p.message),
        EventData::Notification(n) => {
            let text = [n.title.as_deref(), n.message.as_deref()].into_iter().flatten().collect::<Vec<_>>();
            format!("{} notifies: {}", n.node, text.join(": "))
        }
        _ => return None,
    })
}

/// A window of the log of `task`'s current run: a single task's latest attempt log (empty
/// before its process starts), a blueprint's run log, or with `node`, the latest attempt log
/// of that task of the blueprint.
pub(super) fn log_window(
    store: &Store,
    task: &SubmittedTask,
    session: &Session,
    node: Option<&str>,
    offset: i64,
    limit: u64,
) -> Result<orrery_logs::Window, Failure> {
    let empty = || orrery_logs::window_of(b"", None, Some(limit));
    let node = match node {
        Some(node) => node.to_string(),
        None if is_single(&task.task_id) => single_node(session),
        None => {
            let log = run_log(store, &session.id)?;
            return Ok(orrery_logs::window_of(log.as_bytes(), u64::try_from(offset).ok(), Some(limit)));
        }
    };
    match store.find_attempt(&session.id, &node, None)? {
        Ok(attempt) if attempt.log_path.is_some() => {
            Ok(crate::sessions::attempt_window(store, &session.id, &node, None, Some(offset), Some(limit), None)?.1)
        }
        // Not begun yet, or a task that writes no log.
        Ok(_) => Ok(empty()),
        Err(_) if is_single(&task.task_id) => Ok(empty()),
        Err(why) => Err(Failure::new(FailureCode::NotFound, format!("KeyError: {why}"))),
    }
}
