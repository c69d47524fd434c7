//! Sessions of an antikythera server followed into the local store (`follow_remote_session`),
//! so that the run views show them as they show local runs: the graph, the timeline, the
//! details. The mirror is a session of the store linked to the server's session
//! (`Session::remote`); its blueprint versions are the server's (task states and output values
//! left out), its task states, attempts and session state are what the server's event stream
//! says, written like a runner writes them and announced as events.
//!
//! - Opening: the server's snapshot (`GET /sessions/{id}`) gives the blueprint, the params and
//!   every task's state. Tasks that ran before the mirror existed get their state, not attempts
//!   (their times are unknown); from then on a RUNNING begins an attempt and SUCCEEDED, FAILED,
//!   SKIPPED or PENDING settles it (the timeline's bars). `datastore_updated` lands in the
//!   mirror's session data.
//! - Following: the stream is opened first, then the snapshot is read and applied, so nothing
//!   falls between them (a state seen twice changes nothing). The stream ends at a terminal
//!   state; the follower reads the snapshot once more (the error, the last states) and ends.
//! - A server that goes away: the mirror says so (`remote_link` event, `reachable: false`, with
//!   the reason), keeps what it has, and tries again (1 s, doubling to 10 s); once back, the
//!   snapshot brings it up to date. Nothing local is lost.
//! - One follower per mirror in this process; opening a mirror again starts it if it is not
//!   running (after the app restarted, say). Opening a mirror whose session had ended looks at
//!   the server once: a session resumed or reset there since is followed again.

use super::*;

use std::collections::HashMap;
use std::time::Duration;

use orrery_blueprint::{save, Encoding, ErrorCode, SessionState, TaskState};
use orrery_remote::{RemoteError, Server};
use orrery_store::{
    ErrorRecord, EventData, EventKind, NewAttempt, NewEvent, NewSession, Outcome, RemoteLink, RemoteLinkChanged, RunId,
    SessionBlueprints, Settlement, Store,
};

/// How often an ended mirror's server is looked at again when the mirror is read.
const LOOK_AGAIN: Duration = Duration::from_secs(5);

/// The agent an attempt of a mirror names: the server runs it.
const REMOTE_AGENT: &str = "remote";

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
                let versions = versions_of(&server, &snapshot).await?;
                let params = snapshot["data"]["params"].clone();
                // The blueprint's name, as a local run of it is named (the header says where it runs).
                let name = snapshot["data"]["blueprint"]["data"]["name"].as_str().unwrap_or(remote_id).to_string();
                self.blocking(move |db| {
                    let mut store = open(db)?;
                    create_mirror(&mut store, &link, versions, params, name)
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

    /// Follows the server's session into mirror `local` until it ends there.
    async fn follow(self, local: String, server: Server) {
        let Ok(Some(link)) = self.link_of(&local).await else { return };
        let mut wait = Duration::from_secs(1);
        let mut reachable: Option<bool> = None;
        loop {
            match self.follow_once(&local, &server, &link.session_id).await {
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
    async fn follow_once(&self, local: &str, server: &Server, remote_id: &str) -> Result<(), RemoteError> {
        let mut events = server.follow(remote_id).await?;
        let snapshot = server.snapshot(remote_id).await?;
        self.say_link(local, true, None, server.url()).await;
        let terminal = self.apply_snapshot(local, snapshot).await;
        while let Some(event) = events.recv().await {
            let event = event?;
            self.apply_event(local, &event.event, &event.data).await;
        }
        if terminal || self.apply_snapshot(local, server.snapshot(remote_id).await?).await {
            return Ok(());
        }
        Err(RemoteError::Unreachable { url: server.url().to_string(), why: "the event stream closed".into() })
    }

    async fn say_link(&self, local: &str, reachable: bool, message: Option<String>, url: &str) {
        let link = RemoteLinkChanged { reachable, url: url.to_string(), message };
        let event = NewEvent { run_id: None, data: EventData::RemoteLink(link) };
        let local = local.to_string();
        self.write_mirror(move |s| Ok(vec![s.append_event(&local, &event, None)?])).await;
    }

    /// Applies the server's snapshot; whether the session is in a terminal state there.
    async fn apply_snapshot(&self, local: &str, snapshot: Value) -> bool {
        let data = &snapshot["data"];
        let mut states: Vec<(String, String)> = Vec::new();
        let mut add = |instance: &str, blueprint: &Value| {
            for task in blueprint["data"]["tasks"].as_array().into_iter().flatten() {
                let task = &task["data"];
                if let (Some(id), Some(state)) = (task["id"].as_str(), task["state"].as_str()) {
                    states.push((format!("{instance}.{id}"), state.to_string()));
                }
            }
        };
        if let Some(root) = data["blueprint"]["data"]["id"].as_str() {
            add(root, &data["blueprint"]);
        }
        for (instance, blueprint) in data["inner_blueprints"].as_object().into_iter().flatten() {
            add(instance, blueprint);
        }
        let state = data["state"].as_str().and_then(|s| SessionState::parse(&s.to_lowercase()));
        let error = error_of(&data["last_task_error"]);
        let local = local.to_string();
        self.write_mirror(move |s| {
            let mut events = Vec::new();
            for (node, state) in &states {
                events.extend(apply_state(s, &local, node, state, false)?);
            }
            if let Some(state) = state {
                if s.session(&local)?.state != state {
                    events.push(s.set_session_state(&local, state, error.as_ref(), None)?);
                }
            }
            Ok(events)
        })
        .await;
        state.is_some_and(|s| matches!(s, SessionState::Completed | SessionState::Failed | SessionState::Stopped))
    }

    async fn apply_event(&self, local: &str, kind: &str, data: &Value) {
        let local = local.to_string();
        match kind {
            "task_state_changed" => {
                let (Some(instance), Some(task), Some(state)) =
                    (data["blueprint_id"].as_str(), data["task_id"].as_str(), data["state"].as_str())
                else {
                    return;
                };
                let (node, state) = (format!("{instance}.{task}"), state.to_string());
                self.write_mirror(move |s| apply_state(s, &local, &node, &state, true)).await;
            }
            "session_state_changed" => {
                let Some(state) = data["state"].as_str().and_then(|s| SessionState::parse(&s.to_lowercase())) else {
                    return;
                };
                self.write_mirror(move |s| {
                    if s.session(&local)?.state == state {
                        return Ok(Vec::new());
                    }
                    Ok(vec![s.set_session_state(&local, state, None, None)?])
                })
                .await;
            }
            "datastore_updated" => {
                let Some(instance) = data["blueprint_id"].as_str().map(str::to_string) else { return };
                // The server sends each value as {"value", "type"}.
                let values: Vec<(String, Value)> = data["data"]
                    .as_object()
                    .into_iter()
                    .flatten()
                    .map(|(k, v)| (k.clone(), v.get("value").cloned().unwrap_or_else(|| v.clone())))
                    .collect();
                if values.is_empty() {
                    return;
                }
                self.write_mirror(move |s| {
                    let refs: Vec<(&str, Value)> = values.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
                    Ok(vec![s.put_data(&local, &instance, &refs)?])
                })
                .await;
            }
            _ => {}
        }
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

/// Node `node` of mirror `local` in the server's `state`. `live`: seen as it happened, so a
/// RUNNING begins an attempt (a snapshot's RUNNING only sets the state).
fn apply_state(store: &mut Store, local: &str, node: &str, state: &str, live: bool) -> Result<Vec<Event>, Failure> {
    let Some(state) = TaskState::parse(state) else { return Ok(Vec::new()) };
    // Both by index: the store's running attempts (few), and the one node.
    let open_run: Option<RunId> =
        store.running_attempts()?.into_iter().find(|a| a.session_id == local && a.node == node).map(|a| a.run_id);
    let current = match store.task_node(local, node) {
        Ok(n) => Some(n.state),
        Err(e) if e.code() == FailureCode::NotFound => None,
        Err(e) => return Err(e.into()),
    };
    let mut events = Vec::new();
    match (state, open_run) {
        (TaskState::Running, None) if live => {
            let new = NewAttempt { agent: REMOTE_AGENT.into(), ..NewAttempt::default() };
            events.extend(store.begin_attempt(local, node, &new)?.1);
        }
        (TaskState::Running, _) => {}
        (_, Some(run)) => {
            let outcome = match state {
                TaskState::Succeeded => Outcome::Succeeded { exit_code: None, outputs: json!({}) },
                TaskState::Failed => {
                    let error = store.session(local)?.last_error.unwrap_or_else(|| {
                        ErrorRecord::new(ErrorCode::TaskFailed, format!("task '{node}' failed on the server"))
                    });
                    Outcome::Failed { exit_code: None, error }
                }
                TaskState::Skipped => Outcome::Skipped,
                _ => Outcome::Cancelled { exit_code: None },
            };
            let settlement = Settlement { outcome, node_state: Some(state), data: Vec::new() };
            events.extend(store.settle_attempt(&run, settlement)?);
            return Ok(events);
        }
        _ => {}
    }
    if current != Some(state) {
        events.extend(store.set_task_states(local, &[(node, state)])?);
    }
    Ok(events)
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

/// A blueprint of the server's snapshot as a version to store: without task states and
/// output values (what the session wrote, not what the blueprint declares).
fn version_text(blueprint: &Value) -> Result<(String, String), Failure> {
    let mut loaded = orrery_blueprint::load::from_value(blueprint.clone())
        .map_err(|e| Failure::new(FailureCode::Remote, format!("the server's blueprint cannot be read: {e}")))?
        .blueprint;
    for task in &mut loaded.tasks {
        task.state = None;
        for output in &mut task.outputs {
            output.io.value = None;
        }
    }
    Ok((loaded.id.clone(), save::to_string(&loaded, Encoding::Plain)))
}

/// The root blueprint of the snapshot, and the inner blueprints its composites call as the
/// server holds them (`GET /blueprints/{id}`), each as (id, text).
async fn versions_of(server: &Server, snapshot: &Value) -> Result<Vec<(String, String)>, Failure> {
    let mut versions = vec![version_text(&snapshot["data"]["blueprint"])?];
    let mut next = 0;
    while next < versions.len() {
        let called: Vec<String> = match orrery_blueprint::load(&versions[next].1) {
            Ok(loaded) => loaded
                .blueprint
                .tasks
                .iter()
                .filter(|t| t.task_type.as_str() == orrery_blueprint::TaskType::COMPOSITE)
                .filter_map(|t| orrery_blueprint::validate::composite_target(t.param_value("blueprint")).ok())
                .map(|target| target.blueprint_id().to_string())
                .collect(),
            Err(_) => Vec::new(),
        };
        for id in called {
            if versions.iter().any(|(v, _)| *v == id) {
                continue;
            }
            versions.push(version_text(&server.blueprint(&id).await?)?);
        }
        next += 1;
    }
    Ok(versions)
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
    let params = if params.is_object() { params } else { json!({}) };
    let session = store.create_session(
        &NewSession {
            blueprint_hash: hashes[root].clone(),
            name,
            params,
            restarted_from: None,
            started_by: None,
            file: None,
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
            if let Ok(snapshot) = server.snapshot(&remote_id).await {
                if !api.apply_snapshot(&local, snapshot).await {
                    api.follow_mirror(local, server);
                }
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
        self.apply_snapshot(local, server.snapshot(&remote_id).await?).await;
        self.follow_mirror(local.to_string(), server);
        Ok(local.to_string())
    }
}
