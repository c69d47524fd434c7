//! `stream_task`: one submitted task's run as it happens (docs/format.md §6), for clients that
//! want to watch rather than poll: `progress` (every stored event of the run: task states,
//! attempts, progress steps), `log` (the bytes of every attempt's log, in order per attempt),
//! `artifact` (every value the run writes to its session data), then `result` (the run's final
//! status), and the end.
//!
//! - It starts from the beginning of the run, whenever it is opened: a client that connects
//!   late, or again after a disconnect, sees the whole run (logs from byte 0).
//! - It follows the task's current run when it is opened.
//! - It reads the store, not the runner, so it works for runs of any process: woken by the
//!   events of sessions running here, and looking every `poll_interval` (default 0.5 s) for
//!   the others.
//! - Called as an ordinary job (over HTTP without `Accept: text/event-stream`), it waits for
//!   the end and answers the final status, with success when its exit code is 0.
//! - A client that goes away (the receiver dropped) ends the stream; the run goes on.
//! - Memory is bounded: [`CHANNEL_ITEMS`] items in flight, one log chunk per follower.

use super::*;

use orrery_blueprint::SessionState;
use orrery_store::{DataUpdated, EventData, RunId, Store, SubmittedTask};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};

use crate::bounds::{NonEmpty, PollInterval};
use crate::protocol::{ended_status, status_of, task_and_session, TaskStatus};

/// How often the store is looked at when no event of this process says something happened,
/// unless the caller says.
const POLL: PollInterval = PollInterval(0.5);

/// How many items may wait for a slow client before the stream stops reading.
pub const CHANNEL_ITEMS: usize = 64;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StreamTaskArguments {
    pub task_id: NonEmpty,
    /// Seconds between two looks at a run of another process (default 0.5).
    #[serde(default)]
    pub poll_interval: Option<PollInterval>,
}

/// One item of a task's stream; on SSE, `event: <kind>` and `data: <data as one-line JSON>`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(tag = "kind", content = "data", rename_all = "snake_case")]
pub enum StreamItem {
    /// A stored event of the run (see `read_events`).
    Progress(Value),
    Log(LogItem),
    Artifact(Artifact),
    /// The run's final status; the last item.
    Result(TaskStatus),
}

impl StreamItem {
    pub fn kind(&self) -> &'static str {
        match self {
            StreamItem::Progress(_) => "progress",
            StreamItem::Log(_) => "log",
            StreamItem::Artifact(_) => "artifact",
            StreamItem::Result(_) => "result",
        }
    }

    /// Its `data`, as JSON.
    pub fn data(&self) -> Value {
        let mut tagged = serde_json::to_value(self).unwrap_or(Value::Null);
        tagged.get_mut("data").map(Value::take).unwrap_or(Value::Null)
    }
}

/// Bytes of an attempt's log: `content` lies at `start_offset..next_offset` of the file.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct LogItem {
    /// The task, `{instance}.{task}`.
    pub node: String,
    pub attempt: u32,
    pub run_id: String,
    pub content: String,
    pub start_offset: u64,
    pub next_offset: u64,
    /// The file was truncated or replaced: what follows starts at its byte 0.
    pub reset: bool,
}

/// A value the run wrote to its session data.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Artifact {
    /// The blueprint instance: the root blueprint's id, or a composite's instance.
    pub instance: String,
    pub key: String,
    pub value: Value,
}

/// The items of the current run of `task_id`; refuses (before anything streams) an unknown task.
pub(crate) async fn stream_task(api: &Api, args: StreamTaskArguments) -> Result<mpsc::Receiver<StreamItem>, Failure> {
    let (task, session) = {
        let task_id = args.task_id.0.clone();
        api.blocking(move |db| task_and_session(&open(db)?, &task_id)).await?
    };
    let (tx, rx) = mpsc::channel(CHANNEL_ITEMS);
    let watcher = RunWatcher {
        api: api.clone(),
        task,
        session_id: session.id,
        tx,
        every: args.poll_interval.unwrap_or(POLL).duration(),
        settled: HashMap::new(),
        followers: Vec::new(),
    };
    tokio::spawn(watcher.run());
    Ok(rx)
}

struct RunWatcher {
    api: Api,
    task: SubmittedTask,
    session_id: String,
    tx: mpsc::Sender<StreamItem>,
    every: Duration,
    /// Tells the follower of an attempt's log that its attempt has settled, by run id.
    settled: HashMap<RunId, oneshot::Sender<()>>,
    followers: Vec<tokio::task::JoinHandle<()>>,
}

/// What one look at the store found.
struct Page {
    /// Each with the values it says were written (for `data_updated`).
    events: Vec<(Event, Vec<Artifact>)>,
    /// The logs of the attempts started in `events`: (run id, node, attempt, path).
    logs: Vec<(RunId, String, u32, PathBuf)>,
    /// The run had ended before `events` were read: there are no more than these.
    ended: bool,
}

impl RunWatcher {
    async fn run(mut self) {
        let mut wake = self.api.subscribe();
        let mut after = 0;
        loop {
            let page = match self.look(after).await {
                Ok(page) => page,
                Err(failure) => return self.end_with(failure).await,
            };
            let full = page.events.len() == orrery_store::MAX_PAGE_LIMIT as usize;
            for (run_id, node, attempt, path) in page.logs {
                self.follow(run_id, node, attempt, path);
            }
            for (event, artifacts) in page.events {
                after = event.seq;
                if matches!(event.data(), Some(EventData::AttemptSettled(_))) {
                    if let Some(done) = event.run_id.as_ref().and_then(|r| self.settled.remove(r)) {
                        let _ = done.send(());
                    }
                }
                let items = if matches!(event.data(), Some(EventData::DataUpdated(_))) {
                    artifacts.into_iter().map(StreamItem::Artifact).collect()
                } else {
                    vec![StreamItem::Progress(serde_json::to_value(&event).unwrap_or(Value::Null))]
                };
                for item in items {
                    if self.tx.send(item).await.is_err() {
                        return;
                    }
                }
            }
            if full {
                continue;
            }
            if page.ended {
                break;
            }
            tokio::select! {
                _ = ours(&mut wake, &self.session_id) => {}
                _ = tokio::time::sleep(self.every) => {}
                _ = self.tx.closed() => return,
            }
        }
        // Every log to its end, then the result.
        for (_, done) in self.settled.drain() {
            let _ = done.send(());
        }
        for follower in std::mem::take(&mut self.followers) {
            let _ = follower.await;
        }
        let (task, session_id) = (self.task.clone(), self.session_id.clone());
        let status = move |db: &Path| {
            let store = open(db)?;
            status_of(&store, &task, &store.session(&session_id)?)
        };
        match self.api.blocking(status).await {
            Ok(status) => {
                let _ = self.tx.send(StreamItem::Result(status)).await;
            }
            Err(failure) => self.end_with(failure).await,
        }
    }

    /// Ends the stream on a store that went away under it (deleted, unreadable): the last item
    /// says why.
    async fn end_with(self, failure: Failure) {
        let _ = self.tx.send(StreamItem::Progress(json!({"error": failure.code, "message": failure.message}))).await;
    }

    /// The run's events after `after` (a page), with the logs and values they point at.
    async fn look(&self, after: u64) -> Result<Page, Failure> {
        // A run of this process has ended once its runner let go (all its events stored);
        // asked before the store is read, so that no event stored after the read is missed.
        let runs_here = self.api.control(&self.session_id).is_some();
        let session_id = self.session_id.clone();
        self.api
            .blocking(move |db| {
                let store = open(db)?;
                let state = store.session(&session_id)?.state;
                let ended = !runs_here
                    && matches!(state, SessionState::Completed | SessionState::Failed | SessionState::Stopped);
                let events = store.events_after(&session_id, after, orrery_store::MAX_PAGE_LIMIT)?;
                let mut logs = Vec::new();
                let mut page = Vec::new();
                for event in events {
                    let mut artifacts = Vec::new();
                    match (event.data(), &event.run_id) {
                        (Some(EventData::AttemptStarted(_)), Some(run_id)) => {
                            let attempt = store.attempt(run_id)?;
                            if let Some(path) = attempt.log_path {
                                logs.push((run_id.clone(), attempt.node, attempt.attempt, path));
                            }
                        }
                        (Some(EventData::DataUpdated(updated)), _) => {
                            artifacts = written(&store, &session_id, updated)?
                        }
                        _ => {}
                    }
                    page.push((event, artifacts));
                }
                Ok(Page { events: page, logs, ended })
            })
            .await
    }

    /// Follows an attempt's log from byte 0 until its attempt has settled, into the stream.
    fn follow(&mut self, run_id: RunId, node: String, attempt: u32, path: PathBuf) {
        let (done, settled) = oneshot::channel::<()>();
        self.settled.insert(run_id.clone(), done);
        let tx = self.tx.clone();
        let run_id = run_id.as_str().to_string();
        let until = async move {
            let _ = settled.await;
        };
        self.followers.push(tokio::spawn(async move {
            let mut follower = orrery_logs::follow_until(&path, 0, orrery_logs::FollowOptions::default(), until);
            let mut reset = false;
            while let Some(event) = follower.next().await {
                let item = match event {
                    Ok(orrery_logs::LogEvent::Reset) => {
                        reset = true;
                        continue;
                    }
                    Ok(orrery_logs::LogEvent::Chunk(chunk)) => LogItem {
                        node: node.clone(),
                        attempt,
                        run_id: run_id.clone(),
                        content: chunk.content,
                        start_offset: chunk.start_offset,
                        next_offset: chunk.next_offset,
                        reset: std::mem::take(&mut reset),
                    },
                    // An unreadable log ends its part of the stream, not the stream.
                    Err(_) => break,
                };
                if tx.send(StreamItem::Log(item)).await.is_err() {
                    break;
                }
            }
        }));
    }
}

/// Waits for an event of this process about `session_id` (or a gap in them): the other
/// sessions' events are no reason to read the store again.
async fn ours(wake: &mut tokio::sync::broadcast::Receiver<Arc<Event>>, session_id: &str) {
    loop {
        match wake.recv().await {
            Ok(event) if event.session_id != session_id => continue,
            Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => return,
            // No sender left: only the poll wakes the stream.
            Err(tokio::sync::broadcast::error::RecvError::Closed) => std::future::pending().await,
        }
    }
}

/// The values a `data_updated` event says were written.
fn written(store: &Store, session_id: &str, updated: &DataUpdated) -> Result<Vec<Artifact>, Failure> {
    let mut artifacts = Vec::new();
    for (instance, keys) in &updated.keys {
        for key in keys {
            // A value written again since holds its newest content: the stream shows what is
            // stored when it looks.
            if let Some(value) = store.data_value(session_id, instance, key)? {
                artifacts.push(Artifact { instance: instance.clone(), key: key.clone(), value });
            }
        }
    }
    Ok(artifacts)
}

pub(crate) fn register(jobs: &mut Vec<Job>) {
    let mut streaming = job(
        "stream_task",
        "Streams a task's run as it happens: `progress` (its stored events), `log` (its attempts' log \
         bytes), `artifact` (values it writes to its session data), then `result` (its final status). \
         Over HTTP the response is Server-Sent Events; a disconnect does not cancel the task.",
        |api: Api, args: StreamTaskArguments| async move {
            let every = args.poll_interval.unwrap_or(POLL).duration();
            let task_id = args.task_id.0;
            let status = ended_status(&api, every, move |store| task_and_session(store, &task_id)).await?;
            if status.exit_code != 0 {
                let message = format!("{} {}: {}", status.task_id, status.state, status.error);
                return Err(Failure::answering(FailureCode::TaskFailed, message, status));
            }
            Ok(status)
        },
    );
    streaming.info.streams = true;
    jobs.push(streaming);
}
