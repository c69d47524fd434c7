//! Sessions of an antikythera server followed into the local store (`follow_remote_session`),
//! so that the run views show them as they show local runs: the graph, the timeline, the
//! details, the data and lineage. The mirror is a session of the store linked to the server's
//! session (`Session::remote`).
//!
//! - Opening: the server's snapshot (`GET /sessions/{id}`) gives the blueprints, the params and
//!   every task's state ([`snapshot`]): the mirror stores the blueprints as a local run stores
//!   them (inner blueprints under their own ids, dynamic composites folded back, their elements
//!   as the `elements` param), so Orrery's flattening gives the server's instances and nodes.
//!   The session's data comes from `GET /sessions/{id}/data`. A task that had ended there gets
//!   an attempt with its inputs (read from that data as the server reads them) and its
//!   outputs (the snapshot's); one running there gets a running attempt. The server keeps no
//!   task times, so these attempts are marked `times_unknown` and the timeline leaves them out.
//! - Following: the stream is opened first, then the snapshot is read and applied, so nothing
//!   falls between them (a state seen twice changes nothing). A RUNNING begins an attempt with
//!   the inputs the task reads from the mirror's data (a composite's enter its inner instance,
//!   as on the server); SUCCEEDED, FAILED, SKIPPED or PENDING settles it (the timeline's bars).
//!   A task that succeeds is settled with the outputs the server writes right after it
//!   (`datastore_updated`), its outputs and their lineage in one transaction. The stream ends at
//!   a terminal state; the follower reads the snapshot once more (the error, the last states)
//!   and ends.
//! - Times: the session's start is the server's (its start task's `process_start_time` when
//!   the blueprint declares that output, else when the server made the session), its end the
//!   end task's `process_end_time`, else when the mirror saw it end; a session that had ended
//!   before the mirror followed has no known end.
//! - A server that goes away: the mirror says so (`remote_link` event, `reachable: false`, with
//!   the reason), keeps what it has, and tries again (1 s, doubling to 10 s); once back, the
//!   snapshot brings it up to date. Nothing local is lost.
//! - One follower per mirror in this process; opening a mirror again starts it if it is not
//!   running (after the app restarted, say). Opening a mirror whose session had ended looks at
//!   the server once: a session resumed or reset there since is followed again.

mod snapshot;

use super::*;

use std::collections::HashMap;
use std::time::Duration;

use orrery_blueprint::{ErrorCode, SessionState, Task, TaskState};
use serde_json::Map;

use crate::here::run_failure;
use orrery_engine::plan::SessionPlan;
use orrery_remote::{RemoteError, Server, SessionData};
use orrery_store::{
    ErrorRecord, EventData, EventKind, InputSource, NewAttempt, NewEvent, NewSession, Outcome, RemoteLink,
    RemoteLinkChanged, SessionBlueprints, Settlement, Store,
};

/// How often an ended mirror's server is looked at again when the mirror is read.
const LOOK_AGAIN: Duration = Duration::from_secs(5);

/// The agent an attempt of a mirror names: the server runs it.
const REMOTE_AGENT: &str = "remote";

/// A mirror's plan (its nodes' tasks and instances), shared by one follower's writes.
type Plan = Option<Arc<SessionPlan>>;

/// `(instance, key, value)` written to session data with a settled attempt.
type Writes = Vec<(String, String, Value)>;

impl Api {
    /// The mirror of `remote_id` on `server` (made from its snapshot if there is none yet),
    /// followed from now on; its local id.
    pub(crate) async fn mirror(&self, server: Server, remote_id: &str) -> Result<String, Failure> {
        let link = RemoteLink { url: server.url().to_string(), session_id: remote_id.to_string() };
        let found = {
            let link = link.clone();
            self.blocking(move |db| Ok(open(db)?.mirror_of(&link)?)).await?
        };
        let local = match found {
            Some(session) => session.id,
            None => {
                let snapshot = server.snapshot(remote_id).await?;
                let read = snapshot::versions(&snapshot)?;
                let mut params = snapshot["data"]["params"].as_object().cloned().unwrap_or_default();
                if !read.elements.is_empty() {
                    params.insert("elements".into(), Value::Object(read.elements));
                }
                // The blueprint's name, as a local run of it is named (the header says where it runs).
                let name = snapshot["data"]["blueprint"]["data"]["name"].as_str().unwrap_or(remote_id).to_string();
                self.blocking(move |db| {
                    let mut store = open(db)?;
                    create_mirror(&mut store, &link, read.versions, Value::Object(params), name)
                })
                .await?
            }
        };
        self.follow_mirror(local.clone(), server);
        Ok(local)
    }

    /// [`Api::mirror`], answered once its follower has the server's event stream open (or
    /// after 5 s): what the session does from then on lands in the mirror.
    pub(crate) async fn mirror_opened(&self, server: Server, remote_id: &str) -> Result<String, Failure> {
        let local = self.mirror(server, remote_id).await?;
        let mut events = self.inner.events.subscribe();
        let opened = {
            let local = local.clone();
            move |db: &Path| Ok(open(db)?.last_event_of(&local, EventKind::RemoteLink)?.is_some())
        };
        if !self.blocking(opened).await? {
            let said = async {
                loop {
                    match events.recv().await {
                        Ok(e) if e.session_id == local && e.kind() == EventKind::RemoteLink.as_str() => return,
                        Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                        Err(broadcast::error::RecvError::Closed) => return,
                    }
                }
            };
            let _ = tokio::time::timeout(Duration::from_secs(5), said).await;
        }
        Ok(local)
    }

    /// Starts following mirror `local` unless this process does already.
    fn follow_mirror(&self, local: String, server: Server) {
        let mut followers = self.inner.mirrors.lock().unwrap_or_else(|e| e.into_inner());
        if followers.get(&local).is_some_and(|h| !h.is_finished()) {
            return;
        }
        let api = self.clone();
        let id = local.clone();
        followers.insert(local, tokio::spawn(async move { api.follow(id, server).await }));
    }

    /// Where mirror `local` runs (None for a local session).
    async fn link_of(&self, local: &str) -> Result<Option<RemoteLink>, Failure> {
        let local = local.to_string();
        self.blocking(move |db| Ok(open(db)?.session(&local)?.remote)).await
    }

    /// The plan of mirror `local`; `None` when Orrery cannot flatten the server's blueprints
    /// (the mirror then keeps states and attempts, without inputs and outputs).
    async fn plan_of(&self, local: &str) -> Plan {
        let local = local.to_string();
        let plan =
            self.blocking(move |db| orrery_engine::runner::session_plan(&open(db)?, &local).map_err(run_failure)).await;
        plan.ok().map(Arc::new)
    }

    /// Follows the server's session into mirror `local` until it ends there.
    async fn follow(self, local: String, server: Server) {
        let Ok(Some(link)) = self.link_of(&local).await else { return };
        let plan = self.plan_of(&local).await;
        let mut wait = Duration::from_secs(1);
        let mut reachable: Option<bool> = None;
        loop {
            match self.follow_once(&local, &plan, &server, &link.session_id).await {
                Ok(()) => return,
                Err(e) => {
                    if reachable != Some(false) {
                        reachable = Some(false);
                        self.say_link(&local, false, Some(e.to_string()), server.url()).await;
                    }
                }
            }
            tokio::time::sleep(wait).await;
            wait = (wait * 2).min(Duration::from_secs(10));
            if server.sessions(1).await.is_ok() {
                wait = Duration::from_secs(1);
            }
        }
    }

    /// One connection: stream opened, snapshot applied, events applied to the end of the stream.
    /// Ok when the session reached a terminal state.
    async fn follow_once(&self, local: &str, plan: &Plan, server: &Server, remote_id: &str) -> Result<(), RemoteError> {
        let mut events = server.follow(remote_id).await?;
        self.say_link(local, true, None, server.url()).await;
        if self.catch_up(local, plan, server, remote_id).await? {
            // Over there already: its stream would stay silent.
            return Ok(());
        }
        // A success waits for the data the server writes right after it: its outputs.
        let mut held: Option<(String, String)> = None;
        while let Some(event) = events.recv().await {
            let event = event?;
            if let Some((instance, node)) = held.take() {
                let written = event.event == "datastore_updated" && event.data["blueprint_id"] == instance.as_str();
                let data = written.then(|| written_values(&event.data));
                self.write_plan(local, plan, move |s, local, plan| settle_success(s, local, plan, &node, data)).await;
                if written {
                    continue;
                }
            }
            if let Some(success) = holds(plan, &event.event, &event.data) {
                held = Some(success);
                continue;
            }
            self.apply_event(local, plan, &event.event, &event.data).await;
        }
        if let Some((_, node)) = held {
            self.write_plan(local, plan, move |s, local, plan| settle_success(s, local, plan, &node, None)).await;
        }
        if self.catch_up(local, plan, server, remote_id).await? {
            return Ok(());
        }
        Err(RemoteError::Unreachable { url: server.url().to_string(), why: "the event stream closed".into() })
    }

    /// Reads the server's snapshot, data and times into the mirror; whether the session is in
    /// a terminal state there.
    async fn catch_up(&self, local: &str, plan: &Plan, server: &Server, remote_id: &str) -> Result<bool, RemoteError> {
        let snapshot = server.snapshot(remote_id).await?;
        let data = server.session_data(remote_id).await?;
        let started_at = match snapshot::started_ms(&data.root, None) {
            Some(_) => None,
            None => server.session(remote_id).await.ok().and_then(|s| s.started_at),
        };
        Ok(self.apply_snapshot(local, plan, snapshot, data, started_at).await)
    }

    async fn say_link(&self, local: &str, reachable: bool, message: Option<String>, url: &str) {
        let link = RemoteLinkChanged { reachable, url: url.to_string(), message };
        let event = NewEvent { run_id: None, data: EventData::RemoteLink(link) };
        let local = local.to_string();
        self.write_mirror(move |s| Ok(vec![s.append_event(&local, &event, None)?])).await;
    }

    /// Applies the server's snapshot, data and start (`started_at`, when the run does not
    /// say it); whether the session is in a terminal state there.
    async fn apply_snapshot(
        &self,
        local: &str,
        plan: &Plan,
        snapshot: Value,
        data: SessionData,
        started_at: Option<String>,
    ) -> bool {
        let root = snapshot["data"]["blueprint"]["data"]["id"].as_str().unwrap_or_default().to_string();
        let tasks = snapshot::tasks(&snapshot);
        let state = snapshot["data"]["state"].as_str().and_then(|s| SessionState::parse(&s.to_lowercase()));
        let error = error_of(&snapshot["data"]["last_task_error"]);
        self.write_plan(local, plan, move |s, local, plan| {
            let mut events = Vec::new();
            events.extend(put_changed(s, local, &root, &data.root)?);
            for (instance, values) in &data.inner {
                events.extend(put_changed(s, local, instance, values)?);
            }
            for task in &tasks {
                let seen = Seen::Snapshot { outputs: &task.outputs };
                events.extend(apply_state(s, local, plan, &task.node, task.state, seen)?);
            }
            let Some(state) = state else { return Ok(events) };
            let before = s.session(local)?;
            if before.state != state {
                events.push(s.set_session_state(local, state, error.as_ref(), None)?);
            }
            // Not started there yet: no times.
            if state != SessionState::Pending {
                let started = snapshot::started_ms(&data.root, started_at.as_deref());
                let ended = matches!(state, SessionState::Completed | SessionState::Failed | SessionState::Stopped);
                // Seen to end by a live event, the mirror's own clock is right; ended before
                // it looked, the end is unknown unless the run says it.
                let finished = match (ended, before.state == state) {
                    (false, _) => None,
                    (true, seen) => snapshot::finished_ms(&data.root).or(before.finished_ms.filter(|_| seen)),
                };
                if let Some(started) = started.or(before.started_ms) {
                    s.set_mirror_times(local, started, finished)?;
                }
            }
            Ok(events)
        })
        .await;
        state.is_some_and(|s| matches!(s, SessionState::Completed | SessionState::Failed | SessionState::Stopped))
    }

    async fn apply_event(&self, local: &str, plan: &Plan, kind: &str, data: &Value) {
        match kind {
            "task_state_changed" => {
                let (Some(instance), Some(task), Some(state)) = (
                    data["blueprint_id"].as_str(),
                    data["task_id"].as_str(),
                    data["state"].as_str().and_then(TaskState::parse),
                ) else {
                    return;
                };
                let node = format!("{instance}.{task}");
                self.write_plan(local, plan, move |s, local, plan| {
                    apply_state(s, local, plan, &node, state, Seen::Live)
                })
                .await;
            }
            "session_state_changed" => {
                let Some(state) = data["state"].as_str().and_then(|s| SessionState::parse(&s.to_lowercase())) else {
                    return;
                };
                self.write_plan(local, plan, move |s, local, _| {
                    let session = s.session(local)?;
                    if session.state == state {
                        return Ok(Vec::new());
                    }
                    let event = s.set_session_state(local, state, None, None)?;
                    // Its end task's clock, when it wrote it (just before), else the mirror's.
                    let root: Map<String, Value> = s.instance_data(local, &session.blueprint_id)?.into_iter().collect();
                    if let (Some(started), Some(finished)) = (session.started_ms, snapshot::finished_ms(&root)) {
                        s.set_mirror_times(local, started, Some(finished))?;
                    }
                    Ok(vec![event])
                })
                .await;
            }
            "datastore_updated" => {
                let Some(instance) = data["blueprint_id"].as_str().map(str::to_string) else { return };
                let values = written_values(data);
                if values.is_empty() {
                    return;
                }
                self.write_plan(local, plan, move |s, local, _| {
                    let refs: Vec<(&str, Value)> = values.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
                    Ok(vec![s.put_data(local, &instance, &refs)?])
                })
                .await;
            }
            _ => {}
        }
    }

    /// [`Api::write_mirror`] with the mirror's id and plan at hand.
    async fn write_plan(
        &self,
        local: &str,
        plan: &Plan,
        write: impl FnOnce(&mut Store, &str, Option<&SessionPlan>) -> Result<Vec<Event>, Failure> + Send + 'static,
    ) {
        let (local, plan) = (local.to_string(), plan.clone());
        self.write_mirror(move |s| write(s, &local, plan.as_deref())).await;
    }

    /// Writes to the store and announces what was written; a store error is dropped (the next
    /// snapshot writes it again).
    async fn write_mirror(&self, write: impl FnOnce(&mut Store) -> Result<Vec<Event>, Failure> + Send + 'static) {
        if let Ok(events) = self.blocking(move |db| write(&mut open(db)?)).await {
            for event in events {
                let _ = self.inner.events.send(Arc::new(event));
            }
        }
    }
}

/// How the mirror learned a task's state.
enum Seen<'a> {
    /// From the event stream, as it happened.
    Live,
    /// From a snapshot, with the output values the server holds for the task.
    Snapshot { outputs: &'a Map<String, Value> },
}

/// What a `datastore_updated` event wrote: each value unwrapped from `{"value", "type"}`.
fn written_values(data: &Value) -> Vec<(String, Value)> {
    let entries = data["data"].as_object().into_iter().flatten();
    entries.map(|(k, v)| (k.clone(), v.get("value").cloned().unwrap_or_else(|| v.clone()))).collect()
}

/// A live success that waits for its outputs: (its instance, its node), when the task declares
/// outputs (the server writes them right after the state, in its next event).
fn holds(plan: &Plan, kind: &str, data: &Value) -> Option<(String, String)> {
    if kind != "task_state_changed" || data["state"] != "SUCCEEDED" {
        return None;
    }
    let (instance, task) = (data["blueprint_id"].as_str()?, data["task_id"].as_str()?);
    let node = format!("{instance}.{task}");
    let (_, task) = task_of(plan.as_deref()?, &node)?;
    (!task.outputs.is_empty()).then(|| (instance.to_string(), node))
}

/// Node `node`'s instance id and task in the plan.
fn task_of<'p>(plan: &'p SessionPlan, node: &str) -> Option<(&'p str, &'p Task)> {
    let (instance, task) = &plan.tasks[plan.node(node)?];
    Some((plan.instances[*instance].id.as_str(), task))
}

/// Writes the values of one instance that differ from the mirror's; its event, if any.
fn put_changed(
    store: &mut Store,
    local: &str,
    instance: &str,
    values: &Map<String, Value>,
) -> Result<Option<Event>, Failure> {
    let known = store.instance_data(local, instance)?;
    let changed: Vec<(&str, Value)> =
        values.iter().filter(|(k, v)| known.get(*k) != Some(v)).map(|(k, v)| (k.as_str(), v.clone())).collect();
    if changed.is_empty() {
        return Ok(None);
    }
    Ok(Some(store.put_data(local, instance, &changed)?))
}

/// The attempt a mirror begins at `node`: the inputs the task reads from its instance's data,
/// as the server reads them.
fn new_attempt(store: &Store, local: &str, plan: Option<&SessionPlan>, node: &str, times_unknown: bool) -> NewAttempt {
    let mut new = NewAttempt { agent: REMOTE_AGENT.into(), times_unknown, ..NewAttempt::default() };
    let Some((instance, task)) = plan.and_then(|p| task_of(p, node)) else { return new };
    let Ok(data) = store.instance_data(local, instance) else { return new };
    let data: Map<String, Value> = data.into_iter().collect();
    if let Ok(inputs) = orrery_engine::data::resolve_inputs(task, &data) {
        new.inputs = Some(Value::Object(inputs));
        new.input_sources = task
            .inputs
            .iter()
            .map(|i| InputSource {
                input: i.io.name.to_string(),
                instance: instance.to_string(),
                key: i.source_key().to_string(),
            })
            .collect();
    }
    new
}

/// Node `node` of mirror `local` in the server's `state` (see the module notes).
fn apply_state(
    store: &mut Store,
    local: &str,
    plan: Option<&SessionPlan>,
    node: &str,
    state: TaskState,
    seen: Seen<'_>,
) -> Result<Vec<Event>, Failure> {
    let attempts: Vec<orrery_store::Attempt> = store.attempts(local)?.into_iter().filter(|a| a.node == node).collect();
    let open_run = attempts.iter().find(|a| a.state == orrery_store::AttemptState::Running).map(|a| a.run_id.clone());
    let current = match store.task_node(local, node) {
        Ok(n) => Some(n.state),
        Err(e) if e.code() == FailureCode::NotFound => None,
        Err(e) => return Err(e.into()),
    };
    let live = matches!(seen, Seen::Live);
    let mut events = Vec::new();
    if current.is_none() && matches!(state, TaskState::Running | TaskState::Succeeded | TaskState::Failed) {
        // An attempt needs its node (a new mirror has none yet).
        events.extend(store.set_task_states(local, &[(node, TaskState::Pending)])?);
    }
    let open_run = match (state, open_run) {
        (TaskState::Running, None) => {
            let new = new_attempt(store, local, plan, node, !live);
            events.extend(store.begin_attempt(local, node, &new)?.1);
            if live {
                events.extend(enter_inner(store, local, plan, node, new.inputs.as_ref())?);
            }
            return Ok(events);
        }
        (TaskState::Running, Some(_)) => return Ok(events),
        // Ended before the mirror followed: its one attempt, from what the server kept.
        (TaskState::Succeeded | TaskState::Failed, None) if !live && attempts.is_empty() => {
            let new = new_attempt(store, local, plan, node, true);
            let (attempt, begun) = store.begin_attempt(local, node, &new)?;
            events.extend(begun);
            Some(attempt.run_id)
        }
        (_, open_run) => open_run,
    };
    let Some(run) = open_run else {
        if current != Some(state) {
            events.extend(store.set_task_states(local, &[(node, state)])?);
        }
        return Ok(events);
    };
    let mut data = Vec::new();
    let outcome = match state {
        TaskState::Succeeded => {
            let outputs = match seen {
                Seen::Snapshot { outputs } => {
                    let (outputs, wrote) = kept_outputs(store, local, plan, node, outputs)?;
                    data = wrote;
                    outputs
                }
                Seen::Live => Map::new(),
            };
            Outcome::Succeeded { exit_code: None, outputs: Value::Object(outputs) }
        }
        TaskState::Failed => {
            let error = store.session(local)?.last_error.unwrap_or_else(|| {
                ErrorRecord::new(ErrorCode::TaskFailed, format!("task '{node}' failed on the server"))
            });
            Outcome::Failed { exit_code: None, error }
        }
        TaskState::Skipped => Outcome::Skipped,
        _ => Outcome::Cancelled { exit_code: None },
    };
    let settlement = Settlement { outcome, node_state: Some(state), data };
    events.extend(store.settle_attempt(&run, settlement)?);
    Ok(events)
}

/// A live success of `node`, with what the server wrote right after it (`written`, by data
/// key): the attempt's outputs, and the data landing with it (its lineage).
fn settle_success(
    store: &mut Store,
    local: &str,
    plan: Option<&SessionPlan>,
    node: &str,
    written: Option<Vec<(String, Value)>>,
) -> Result<Vec<Event>, Failure> {
    let Some(written) = written else { return apply_state(store, local, plan, node, TaskState::Succeeded, Seen::Live) };
    let run = store.running_attempts()?.into_iter().find(|a| a.session_id == local && a.node == node).map(|a| a.run_id);
    let Some(((instance, task), run)) = plan.and_then(|p| task_of(p, node)).zip(run) else {
        // Nothing to settle: the data lands alone.
        let mut events = apply_state(store, local, plan, node, TaskState::Succeeded, Seen::Live)?;
        if let Some((instance, _)) = plan.and_then(|p| task_of(p, node)) {
            let values: Map<String, Value> = written.into_iter().collect();
            events.extend(put_changed(store, local, instance, &values)?);
        }
        return Ok(events);
    };
    // As a local run records them: a task's by output name, a composite's by the key it writes.
    let by_key: HashMap<&str, &Value> = written.iter().map(|(k, v)| (k.as_str(), v)).collect();
    let outputs: Map<String, Value> = task
        .outputs
        .iter()
        .map(|o| {
            let name = if task.task_type.is_composite() { o.target_key() } else { o.io.name.as_str() };
            (name.to_string(), by_key.get(o.target_key()).map_or(Value::Null, |v| (*v).clone()))
        })
        .collect();
    let data = written.iter().map(|(k, v)| (instance.to_string(), k.clone(), v.clone())).collect();
    let settlement = Settlement {
        outcome: Outcome::Succeeded { exit_code: None, outputs: Value::Object(outputs) },
        node_state: Some(TaskState::Succeeded),
        data,
    };
    Ok(store.settle_attempt(&run, settlement)?)
}

/// The outputs of a task the server had finished when the mirror looked: the values the
/// snapshot holds on the task, except for a composite, whose outputs the server writes only to
/// data (from its inner instance), where they are read as a local run reads them. With them,
/// the data keys they wrote that still hold what they wrote (so lineage names the task as
/// their writer; a key written again since is left to its later writer).
fn kept_outputs(
    store: &Store,
    local: &str,
    plan: Option<&SessionPlan>,
    node: &str,
    outputs: &Map<String, Value>,
) -> Result<(Map<String, Value>, Writes), Failure> {
    let Some((plan, (instance, task))) = plan.and_then(|p| Some((p, task_of(p, node)?))) else {
        return Ok((outputs.clone(), Vec::new()));
    };
    let data = |instance: &str| -> Result<Map<String, Value>, Failure> {
        Ok(store.instance_data(local, instance)?.into_iter().collect())
    };
    let now = data(instance)?;
    let (outputs, writes): (Map<String, Value>, Vec<(String, Value)>) = match inner_of(plan, node) {
        Some(inner) if task.task_type.is_composite() => {
            let writes = orrery_engine::data::composite_outputs(task, &data(inner)?, &now);
            (writes.iter().cloned().collect(), writes)
        }
        _ => {
            let writes = task
                .outputs
                .iter()
                .map(|o| (o.target_key().to_string(), outputs.get(o.io.name.as_str()).cloned().unwrap_or(Value::Null)));
            (outputs.clone(), writes.collect())
        }
    };
    let kept = writes.into_iter().filter(|(k, v)| now.get(k) == Some(v));
    Ok((outputs, kept.map(|(k, v)| (instance.to_string(), k, v)).collect()))
}

/// The inner instance composite `node` calls.
fn inner_of<'p>(plan: &'p SessionPlan, node: &str) -> Option<&'p str> {
    let at = plan.node(node)?;
    plan.instances.iter().find(|i| i.caller.is_some_and(|(_, n)| n == at)).map(|i| i.id.as_str())
}

/// A composite the server dispatched gives its inner instance its resolved inputs (the server
/// writes them there without saying so on the stream).
fn enter_inner(
    store: &mut Store,
    local: &str,
    plan: Option<&SessionPlan>,
    node: &str,
    inputs: Option<&Value>,
) -> Result<Option<Event>, Failure> {
    let (Some(plan), Some(Value::Object(inputs))) = (plan, inputs) else { return Ok(None) };
    let Some(inner) = inner_of(plan, node) else { return Ok(None) };
    put_changed(store, local, inner, inputs)
}

fn error_of(value: &Value) -> Option<ErrorRecord> {
    let data = value.get("data").unwrap_or(value);
    let code = data["code"].as_str()?;
    Some(ErrorRecord {
        code: code.into(),
        message: data["message"].as_str().unwrap_or_default().to_string(),
        details: data.get("details").filter(|d| !d.is_null()).cloned(),
    })
}

/// Stores the versions, creates the mirror session and links it; its id.
fn create_mirror(
    store: &mut Store,
    link: &RemoteLink,
    versions: Vec<(String, String)>,
    params: Value,
    name: String,
) -> Result<String, Failure> {
    let mut hashes = HashMap::new();
    for (id, text) in &versions {
        hashes.insert(id.clone(), store.put_blueprint_version(id, text)?);
    }
    let root = &versions[0].0;
    let session = store.create_session(
        &NewSession {
            blueprint_hash: hashes[root].clone(),
            name,
            params,
            restarted_from: None,
            started_by: None,
            file: None,
            simulation: None,
        },
        None,
    )?;
    store.link_remote(&session.id, link)?;
    let inner = hashes.iter().filter(|(id, _)| *id != root).map(|(id, h)| (id.clone(), h.clone())).collect();
    let event = NewEvent { run_id: None, data: EventData::SessionBlueprints(SessionBlueprints { inner }) };
    store.append_event(&session.id, &event, None)?;
    Ok(session.id)
}

/// Whether a mirror's server answers, as its latest `remote_link` event says.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct LinkState {
    /// Its server answered at the last try (and before the first: a mirror is made from the
    /// server's answer).
    pub reachable: bool,
    /// Why not, when it does not.
    pub message: Option<String>,
    /// Whether this process follows it now (a mirror over on the server is not followed).
    pub following: bool,
}

pub(crate) fn link_state(store: &Store, local: &str, following: bool) -> Result<LinkState, Failure> {
    let last = store.last_event_of(local, EventKind::RemoteLink)?;
    // Before the first word from its server (or on a cut event), a mirror is taken to answer.
    let (reachable, message) = match last.as_ref().and_then(|e| e.data()) {
        Some(EventData::RemoteLink(link)) => (link.reachable, link.message.clone()),
        _ => (true, None),
    };
    Ok(LinkState { reachable, message, following })
}

/// What the run views ask of a mirror; the server does it.
pub(crate) enum RemoteStep<'a> {
    Pause,
    Stop,
    Resume,
    Restart,
    Skip { node: &'a str },
    Reset { node: &'a str, downstream: bool, clear_outputs: bool },
    ResetScope { node: &'a str },
}

impl Api {
    /// For a mirror whose session is not over: makes sure this process follows it; whether it
    /// does. False for local sessions.
    pub(crate) async fn keep_following(&self, session: &orrery_store::Session) -> Result<bool, Failure> {
        let local = session.id.as_str();
        let Some(link) = &session.remote else { return Ok(false) };
        let over = matches!(session.state, SessionState::Completed | SessionState::Failed | SessionState::Stopped);
        let following =
            self.inner.mirrors.lock().unwrap_or_else(|e| e.into_inner()).get(local).is_some_and(|h| !h.is_finished());
        if following {
            return Ok(true);
        }
        // Over here; perhaps resumed or reset on the server since: one look (in the background,
        // silent when the server does not answer, at most every few seconds), followed again
        // when it runs there.
        if over {
            let mut looked = self.inner.mirror_looks.lock().unwrap_or_else(|e| e.into_inner());
            if looked.get(local).is_some_and(|at| at.elapsed() < LOOK_AGAIN) {
                return Ok(false);
            }
            looked.insert(local.to_string(), std::time::Instant::now());
        }
        let Some(server) = self.remote_of(local).await? else { return Ok(false) };
        if !over {
            self.follow_mirror(local.to_string(), server);
            return Ok(true);
        }
        let (api, local, remote_id) = (self.clone(), local.to_string(), link.session_id.clone());
        tokio::spawn(async move {
            let plan = api.plan_of(&local).await;
            if let Ok(false) = api.catch_up(&local, &plan, &server, &remote_id).await {
                api.follow_mirror(local, server);
            }
        });
        Ok(false)
    }

    /// The server of session `local` when it is a mirror (the token of a saved server of that
    /// address goes with it).
    pub(crate) async fn remote_of(&self, local: &str) -> Result<Option<Server>, Failure> {
        let local = local.to_string();
        self.blocking(move |db| {
            let store = open(db)?;
            let Some(link) = store.session(&local)?.remote else { return Ok(None) };
            let token = store.servers()?.into_iter().find(|s| s.url == link.url).and_then(|s| s.token);
            Ok(Some(Server::new(&link.url, token)?))
        })
        .await
    }

    /// Has the server do `step` to the session mirror `local` mirrors, then brings the mirror
    /// up to date; for a restart, the mirror of the new session.
    pub(crate) async fn remote_step(
        &self,
        local: &str,
        server: Server,
        step: RemoteStep<'_>,
    ) -> Result<String, Failure> {
        let remote_id = self.link_of(local).await?.map(|l| l.session_id).unwrap_or_default();
        let split = |node: &str| -> Result<(String, String), Failure> {
            node.rsplit_once('.').map(|(b, t)| (b.to_string(), t.to_string())).ok_or_else(|| {
                Failure::new(
                    FailureCode::InvalidArgument,
                    format!("name the task as blueprint_id.task_id, not {node:?}"),
                )
            })
        };
        match step {
            RemoteStep::Pause => drop(server.pause(&remote_id).await?),
            RemoteStep::Stop => drop(server.stop(&remote_id).await?),
            RemoteStep::Resume => drop(server.resume(&remote_id).await?),
            RemoteStep::Restart => {
                let started = server.restart(&remote_id).await?;
                return self.mirror(server, &started.session_id).await;
            }
            RemoteStep::Skip { node } => {
                let (b, t) = split(node)?;
                drop(server.skip_task(&remote_id, &b, &t).await?);
            }
            RemoteStep::Reset { node, downstream, clear_outputs } => {
                let (b, t) = split(node)?;
                drop(server.reset_task(&remote_id, &b, &t, downstream, clear_outputs).await?);
            }
            RemoteStep::ResetScope { node } => {
                let (_, t) = split(node)?;
                drop(server.reset_scope(&remote_id, &t).await?);
            }
        }
        // The stream says what follows; a session that had ended has no stream until it runs
        // again: its snapshot now, and a follower for what comes.
        let plan = self.plan_of(local).await;
        self.catch_up(local, &plan, &server, &remote_id).await?;
        self.follow_mirror(local.to_string(), server);
        Ok(local.to_string())
    }
}
