//! `orrery mcp`: the facade's jobs as a Model Context Protocol server on standard input and
//! output (newline-delimited JSON-RPC), built on the official Rust SDK `rmcp`, for AI
//! assistants and scripts (docs/agents.md).
//!
//! - **Tools** are the catalogue ([`Api::jobs`]), read at start: one tool per job, its name and
//!   description, its `arguments` schema as `inputSchema`, its `answer` schema as
//!   `outputSchema` when that is an object schema. A call is [`Api::call`]: the answer as JSON
//!   text (and `structuredContent` when there is an output schema); a business failure or
//!   arguments that break the schema are a result with `isError` that says why (with the
//!   failure's code); an unknown tool is the protocol's error (-32602).
//! - **Progress**: `wait_session`, `wait_task` and `stream_task` send `notifications/progress`
//!   while they wait when the request carries a `progressToken` (`stream_task` one per item of
//!   [`Api::stream_task`]).
//! - **Resources**: every stored blueprint as `orrery://blueprint/{id}`; the templates
//!   `orrery://session/{session_id}/log/{task}` (an attempt's log, `read_attempt_log`) and
//!   `orrery://session/{session_id}/blueprint` (the blueprint text a session runs).
//! - **Ending**: EOF on stdin, or SIGINT, SIGTERM or SIGHUP ([`crate::signals`]), ends it; the
//!   sessions it runs are stopped as `orrery serve` stops them (`stop_session`, then they are
//!   awaited), and it exits 0. Exit 2 when the store cannot be opened.
//! - **Standard output carries MCP messages only**: at start the process's descriptor 1 is
//!   moved to a private descriptor for the transport and stderr takes its place, so that a
//!   stray print anywhere in the process cannot break the protocol. Logs go to stderr.

use anyhow::{Context, Result};
use orrery_api::{Api, ApiOptions, CallError, Caller, Envelope, JobInfo, StreamItem, Streamed};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, JsonObject,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, MetaObject, PaginatedRequestParams,
    ProgressNotificationParam, ProgressToken, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult,
    Resource, ResourceContents, ResourceTemplate, ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::{Peer, RequestContext, RoleServer};
use rmcp::{ErrorData as McpError, ServerHandler, ServiceExt};
use serde_json::{json, Value};
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// What a model is told at `initialize`.
const INSTRUCTIONS: &str = "Orrery designs, checks and runs blueprints: DAGs of tasks (shell commands, prompts, \
composites) in JSON. Every tool is one job of Orrery's facade and answers JSON. To run a blueprint: \
validate_blueprint with its text (fix every diagnostic of severity error), write_blueprint_file to save it, \
start_session on that file (it answers a session_id at once and runs in the background), wait_session until it \
ended (send a progressToken to follow it), then get_session for every task's state and attempts and \
read_attempt_log (or the resource orrery://session/{session_id}/log/{task}) for what a task printed. A single \
registered task (list_installed_task_definitions) runs with submit, then wait_task or stream_task, read_task_log \
and status. Jobs that change something take an optional request_id that makes a retry safe. A result with isError \
says why, with a stable error code.";

/// The jobs that wait, and report progress while they do.
const WAITING_JOBS: [&str; 3] = ["wait_session", "wait_task", "stream_task"];

/// How often a waiting job's session or task is looked at for its progress.
const PROGRESS_POLL: Duration = Duration::from_millis(500);

/// The most of a log one resource read answers (the tail beyond it is `read_attempt_log`'s).
const LOG_WINDOW: u64 = 262_144;

/// How long the runtime waits, at exit, for work that cannot be cancelled (a blocking read of
/// a standard input that is not a pipe).
const EXIT_GRACE: Duration = Duration::from_secs(2);

pub fn mcp(max_parallel: Option<usize>, db: Option<PathBuf>, project: String, agent: Option<String>) -> Result<u8> {
    if let Err(why) = Caller::new(&project, agent.as_deref().unwrap_or("mcp-client")) {
        say!("orrery mcp: {why}");
        return Ok(2);
    }
    let db = crate::db_path(db)?;
    let out = take_stdout().context("cannot set standard output aside for the MCP messages")?;
    let mut stops = crate::signals::watch()?;
    let runtime = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    let code = runtime.block_on(async move {
        let api = Api::new(ApiOptions { db: db.clone(), work_dir: None, max_parallel });
        // The store is asked once now, as `orrery serve` does: a wrong path is an error at start.
        let listed = api.call("list_sessions", json!({})).await?;
        if !listed.success {
            let why = listed.answer.as_str().unwrap_or("it cannot be read");
            say!("orrery mcp: cannot open the task store {}: {why}", db.display());
            return Ok::<u8, anyhow::Error>(2);
        }
        let server = Orrery::new(api.clone(), project, agent);
        say!(
            "orrery mcp: store {}; {} tools; MCP on standard input/output until EOF or a signal",
            db.display(),
            server.tools.len()
        );
        let input = Input::new()?;
        let output = Output::new(out)?;
        let ended = tokio::select! {
            started = server.serve((input, output)) => match started {
                Ok(running) => {
                    let token = running.cancellation_token();
                    let waiting = running.waiting();
                    tokio::pin!(waiting);
                    tokio::select! {
                        _ = &mut waiting => "the client closed the connection".to_string(),
                        signal = stops.next() => {
                            token.cancel();
                            let _ = tokio::time::timeout(EXIT_GRACE, waiting).await;
                            signal.unwrap_or("the end of the signal watch").to_string()
                        }
                    }
                }
                Err(e) => format!("no MCP session ({e})"),
            },
            signal = stops.next() => signal.unwrap_or("the end of the signal watch").to_string(),
        };
        say!("orrery mcp: stopping ({ended})");
        // As `orrery serve` does on shutdown: each session run here ends `stopped` (its processes
        // get SIGTERM, a grace period, SIGKILL) and `orrery resume` goes on with it later.
        // Twice: a call still under way at the first pass may have started one meanwhile.
        for _ in 0..2 {
            let running = api.running_sessions();
            for id in &running {
                let _ = api.call("stop_session", json!({ "session_id": id })).await;
            }
            api.wait_all().await;
            for id in &running {
                say!("orrery mcp: stopped session {id}");
            }
        }
        Ok(0)
    })?;
    runtime.shutdown_timeout(EXIT_GRACE);
    Ok(code)
}

/// Moves the process's standard output to a new descriptor (close-on-exec) for the transport
/// alone, and points descriptor 1 at standard error: whatever else prints goes to the log.
fn take_stdout() -> std::io::Result<OwnedFd> {
    // SAFETY: fcntl and dup2 on the process's own standard descriptors; the new descriptor is
    // owned by the OwnedFd from here on.
    unsafe {
        let fd = libc::fcntl(1, libc::F_DUPFD_CLOEXEC, 3);
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let out = OwnedFd::from_raw_fd(fd);
        if libc::dup2(2, 1) < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(out)
    }
}

/// What a standard descriptor is, for the transport.
#[derive(PartialEq)]
enum Kind {
    Pipe,
    Socket,
    Other,
}

fn kind_of(fd: RawFd) -> Kind {
    // SAFETY: fstat fills the struct given.
    let mode = unsafe {
        let mut stat: libc::stat = std::mem::zeroed();
        if libc::fstat(fd, &mut stat) != 0 {
            return Kind::Other;
        }
        stat.st_mode & libc::S_IFMT
    };
    match mode {
        libc::S_IFIFO => Kind::Pipe,
        libc::S_IFSOCK => Kind::Socket,
        _ => Kind::Other,
    }
}

/// A pipe reopened non-blocking on its own open file description (the flag stays private to
/// it: the process's other descriptors of that pipe, and the other processes that hold it,
/// keep theirs).
fn reopen(fd: RawFd, write: bool) -> std::io::Result<OwnedFd> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(!write)
        .write(write)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(format!("/proc/self/fd/{fd}"))?;
    Ok(OwnedFd::from(file))
}

/// A socket (MCP clients written on libuv give their children socket pairs as stdio) on the
/// IO driver.
fn socket(fd: OwnedFd) -> std::io::Result<tokio::net::UnixStream> {
    let stream = std::os::unix::net::UnixStream::from(fd);
    stream.set_nonblocking(true)?;
    tokio::net::UnixStream::from_std(stream)
}

/// Where the MCP messages are read from: standard input on the IO driver when it is a pipe or
/// a socket, so that the server can end at any time; else tokio's standard input (the blocking
/// pool: a pending read is left behind at exit).
enum Input {
    Pipe(tokio::net::unix::pipe::Receiver),
    Socket(tokio::net::UnixStream),
    Stdin(tokio::io::Stdin),
}

impl Input {
    fn new() -> std::io::Result<Input> {
        match kind_of(0) {
            Kind::Pipe => Ok(Input::Pipe(tokio::net::unix::pipe::Receiver::from_owned_fd(reopen(0, false)?)?)),
            Kind::Socket => {
                let fd = std::io::stdin().as_fd().try_clone_to_owned()?;
                Ok(Input::Socket(socket(fd)?))
            }
            Kind::Other => Ok(Input::Stdin(tokio::io::stdin())),
        }
    }
}

impl AsyncRead for Input {
    fn poll_read(self: Pin<&mut Self>, cx: &mut TaskContext<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Input::Pipe(pipe) => Pin::new(pipe).poll_read(cx, buf),
            Input::Socket(socket) => Pin::new(socket).poll_read(cx, buf),
            Input::Stdin(stdin) => Pin::new(stdin).poll_read(cx, buf),
        }
    }
}

/// Where the MCP messages are written: the descriptor [`take_stdout`] set aside, on the IO
/// driver when it is a pipe or a socket, else (a file, a terminal) through the blocking pool.
enum Output {
    Pipe(tokio::net::unix::pipe::Sender),
    Socket(tokio::net::UnixStream),
    File(tokio::fs::File),
}

impl Output {
    fn new(fd: OwnedFd) -> std::io::Result<Output> {
        Ok(match kind_of(fd.as_raw_fd()) {
            Kind::Pipe => Output::Pipe(tokio::net::unix::pipe::Sender::from_owned_fd(reopen(fd.as_raw_fd(), true)?)?),
            Kind::Socket => Output::Socket(socket(fd)?),
            Kind::Other => Output::File(tokio::fs::File::from_std(std::fs::File::from(fd))),
        })
    }
}

impl AsyncWrite for Output {
    fn poll_write(self: Pin<&mut Self>, cx: &mut TaskContext<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            Output::Pipe(pipe) => Pin::new(pipe).poll_write(cx, buf),
            Output::Socket(socket) => Pin::new(socket).poll_write(cx, buf),
            Output::File(file) => Pin::new(file).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Output::Pipe(pipe) => Pin::new(pipe).poll_flush(cx),
            Output::Socket(socket) => Pin::new(socket).poll_flush(cx),
            Output::File(file) => Pin::new(file).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Output::Pipe(pipe) => Pin::new(pipe).poll_shutdown(cx),
            // Not a half-close: the same socket may be the client's stdin of this process too.
            Output::Socket(socket) => Pin::new(socket).poll_flush(cx),
            Output::File(file) => Pin::new(file).poll_shutdown(cx),
        }
    }
}

/// The MCP server over one facade.
#[derive(Clone)]
struct Orrery {
    api: Api,
    tools: Arc<Vec<Tool>>,
    /// The catalogue, by tool (the same order).
    jobs: Arc<Vec<JobInfo>>,
    /// The project the task memory jobs are scoped to (`--project`).
    project: String,
    /// The agent they record (`--agent`; else the client's name from `initialize`).
    agent: Option<String>,
}

impl Orrery {
    fn new(api: Api, project: String, agent: Option<String>) -> Orrery {
        let jobs = api.jobs();
        let tools = jobs.iter().map(tool_of).collect();
        Orrery { api, tools: Arc::new(tools), jobs: Arc::new(jobs), project, agent }
    }

    /// This server as the client of `context` calls it: the facade with the project and the
    /// agent. Over HTTP the headers `X-Orrery-Project` and `X-Orrery-Agent` of the request say
    /// them; else `--project`, and `--agent` or the client's own name.
    fn called_by(&self, context: &RequestContext<RoleServer>) -> Orrery {
        let header = |name: &str| {
            let parts = context.extensions.get::<axum::http::request::Parts>()?;
            Some(parts.headers.get(name)?.to_str().ok()?.trim().to_string())
        };
        let named = context.peer.peer_info().map(|info| info.client_info.name.clone());
        let project = header("x-orrery-project").unwrap_or_else(|| self.project.clone());
        let agent = header("x-orrery-agent").or(self.agent.clone()).or(named).unwrap_or_else(|| "mcp-client".into());
        // A name that is no name counts as none.
        let caller =
            Caller::new(&project, &agent).or_else(|_| Caller::new(&self.project, "mcp-client")).unwrap_or_default();
        Orrery { api: self.api.as_caller(caller), ..self.clone() }
    }

    /// Runs job `name`, reporting progress to `progress` when the job waits and it is given.
    async fn run(&self, name: &str, arguments: Value, progress: Option<Progress>) -> CallToolResult {
        let has_output_schema = self.tools.iter().any(|t| t.name == name && t.output_schema.is_some());
        let called = match (name, progress) {
            ("stream_task", Some(progress)) => return self.stream(arguments, progress, has_output_schema).await,
            ("wait_session", Some(progress)) => {
                let id = arguments.get("session_id").cloned().unwrap_or(Value::Null);
                let look = SessionLook { api: self.api.clone(), session_id: id };
                watched(self.api.call(name, arguments), look, progress).await
            }
            ("wait_task", Some(progress)) => {
                let id = arguments.get("task_id").cloned().unwrap_or(Value::Null);
                let look = TaskLook { api: self.api.clone(), task_id: id };
                watched(self.api.call(name, arguments), look, progress).await
            }
            _ => self.api.call(name, arguments).await,
        };
        match called {
            Ok(envelope) => result_of(&envelope, has_output_schema),
            Err(e) => refused(&e),
        }
    }

    /// `stream_task` item by item: one progress notification each, then the final status.
    async fn stream(&self, arguments: Value, mut progress: Progress, has_output_schema: bool) -> CallToolResult {
        let mut items = match self.api.stream_task(arguments).await {
            Ok(Streamed::Items(items)) => items,
            Ok(Streamed::Refused(envelope)) => return result_of(&envelope, has_output_schema),
            Err(e) => return refused(&e),
        };
        let mut count = 0.0;
        while let Some(item) = items.recv().await {
            count += 1.0;
            progress.send(count, None, item_message(&item)).await;
            if let StreamItem::Result(_) = &item {
                let status = item.data();
                if status.get("exit_code").and_then(Value::as_i64) == Some(0) {
                    return success(status, has_output_schema);
                }
                let message = status_message(&status).unwrap_or_else(|| "the task did not succeed".into());
                return failure("task_failed", &message, Some(&status));
            }
        }
        failure("internal", "the stream ended before the task's result", None)
    }
}

/// A job as a tool.
fn tool_of(job: &JobInfo) -> Tool {
    let mut input = match &job.arguments {
        Value::Object(schema) => schema.clone(),
        _ => JsonObject::new(),
    };
    if !is_object_schema(&Value::Object(input.clone())) {
        input.insert("type".into(), json!("object"));
    }
    let mut description = job.description.to_string();
    if WAITING_JOBS.contains(&job.name) {
        description.push_str(" Reports notifications/progress while it waits when the request has a progressToken.");
    }
    let mut tool = Tool::new(job.name, description, Arc::new(input))
        .with_annotations(ToolAnnotations::new().read_only(!job.writes));
    if let Value::Object(answer) = &job.answer {
        if is_object_schema(&job.answer) {
            tool = tool.with_raw_output_schema(Arc::new(answer.clone()));
        }
    }
    tool
}

/// Whether a schema says its values are objects (`"type": "object"`, or a list holding only it).
fn is_object_schema(schema: &Value) -> bool {
    match schema.get("type") {
        Some(Value::String(t)) => t == "object",
        Some(Value::Array(types)) => !types.is_empty() && types.iter().all(|t| t == "object"),
        _ => false,
    }
}

/// The tool result of an envelope.
fn result_of(envelope: &Envelope, has_output_schema: bool) -> CallToolResult {
    if envelope.success {
        return success(envelope.answer.clone(), has_output_schema);
    }
    let code = envelope.metadata.get("error").and_then(Value::as_str).unwrap_or("failed");
    match &envelope.answer {
        Value::String(message) => failure(code, message, None),
        answer => {
            let job = envelope.metadata.get("job").and_then(Value::as_str).unwrap_or("");
            let message = status_message(answer).unwrap_or_else(|| format!("the job {job} failed"));
            failure(code, &message, Some(answer))
        }
    }
}

/// What a task's status says of how it ended, as the facade words it: `TASK STATE: ERROR`.
fn status_message(status: &Value) -> Option<String> {
    let (task, state) = (status.get("task_id")?.as_str()?, status.get("state")?.as_str()?);
    Some(format!("{task} {state}: {}", status.get("error").and_then(Value::as_str).unwrap_or("")))
}

/// A successful answer: its JSON as text, and as structured content when the tool declares an
/// output schema (it is then an object).
fn success(answer: Value, has_output_schema: bool) -> CallToolResult {
    let text = serde_json::to_string(&answer).unwrap_or_default();
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    if has_output_schema && answer.is_object() {
        result.structured_content = Some(answer);
    }
    result
}

/// A business failure: `isError`, the code and the readable message (and the answer that came
/// with it, a failed task's status), the code also in `_meta` as `orrery/error`.
fn failure(code: &str, message: &str, answer: Option<&Value>) -> CallToolResult {
    let mut content = vec![ContentBlock::text(format!("{message} (error code: {code})"))];
    if let Some(answer) = answer {
        content.push(ContentBlock::text(serde_json::to_string(answer).unwrap_or_default()));
    }
    let mut meta = MetaObject::new();
    meta.0.insert("orrery/error".into(), json!(code));
    CallToolResult::error(content).with_meta(Some(meta))
}

/// A call refused before the job ran: arguments that break its schema.
fn refused(e: &CallError) -> CallToolResult {
    failure("invalid_arguments", &e.to_string(), None)
}

/// The short message of a stream item's progress notification.
fn item_message(item: &StreamItem) -> String {
    let data = item.data();
    match item {
        StreamItem::Progress(event) => {
            let kind = event.get("kind").and_then(Value::as_str).unwrap_or("event");
            let payload = event.pointer("/payload/value").unwrap_or(&Value::Null);
            let node = payload.get("node").and_then(Value::as_str);
            let state = payload.get("state").and_then(Value::as_str);
            match (node, state) {
                (Some(node), Some(state)) => format!("{kind}: {node} {state}"),
                (Some(node), None) => format!("{kind}: {node}"),
                (None, Some(state)) => format!("{kind}: {state}"),
                (None, None) => kind.to_string(),
            }
        }
        StreamItem::Log(log) => {
            let line = log.content.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
            format!("log {} #{}: {}", log.node, log.attempt, shorten(line, 80))
        }
        StreamItem::Artifact(artifact) => format!("artifact {}.{}", artifact.instance, artifact.key),
        StreamItem::Result(_) => format!(
            "result: {} (exit code {})",
            data["state"].as_str().unwrap_or(""),
            data["exit_code"].as_i64().unwrap_or_default()
        ),
    }
}

fn shorten(text: &str, most: usize) -> String {
    if text.chars().count() <= most {
        return text.to_string();
    }
    let mut short: String = text.chars().take(most.saturating_sub(1)).collect();
    short.push('…');
    short
}

/// The progress notifications of one request.
struct Progress {
    peer: Peer<RoleServer>,
    token: ProgressToken,
    /// The last progress sent: a notification is sent only when it grows (the first always).
    last: Option<f64>,
}

impl Progress {
    async fn send(&mut self, progress: f64, total: Option<f64>, message: String) {
        if self.last.is_some_and(|last| progress <= last) {
            return;
        }
        self.last = Some(progress);
        let mut param = ProgressNotificationParam::new(self.token.clone(), progress).with_message(message);
        if let Some(total) = total {
            param = param.with_total(total);
        }
        if let Err(e) = self.peer.notify_progress(param).await {
            say!("orrery mcp: a progress notification was not sent: {e}");
        }
    }
}

/// What a waiting job's progress is read from.
trait Look {
    /// The progress so far, the total when known, and a short message; none when it cannot be
    /// read (an unknown id: the job itself says so).
    fn look(&self) -> impl std::future::Future<Output = Option<(f64, Option<f64>, String)>> + Send;
}

/// A session's tasks: how many of them ended.
struct SessionLook {
    api: Api,
    session_id: Value,
}

impl Look for SessionLook {
    async fn look(&self) -> Option<(f64, Option<f64>, String)> {
        let view = self.api.call("get_session", json!({ "session_id": self.session_id })).await.ok()?;
        if !view.success {
            return None;
        }
        let state = view.answer["session"]["state"].as_str().unwrap_or("").to_string();
        let tasks = view.answer["tasks"].as_array().cloned().unwrap_or_default();
        let state_of = |t: &Value| t["state"].as_str().unwrap_or("").to_string();
        let ended = tasks.iter().filter(|t| matches!(state_of(t).as_str(), "SUCCEEDED" | "FAILED" | "SKIPPED")).count();
        let running: Vec<&str> =
            tasks.iter().filter(|t| state_of(t) == "RUNNING").filter_map(|t| t["node"].as_str()).collect();
        let mut message = format!("session {state}: {ended} of {} tasks ended", tasks.len());
        if !running.is_empty() {
            message.push_str(&format!("; running {}", shorten(&running.join(", "), 120)));
        }
        Some((ended as f64, Some(tasks.len() as f64), message))
    }
}

/// A submitted task's run: how many of its steps ended.
struct TaskLook {
    api: Api,
    task_id: Value,
}

impl Look for TaskLook {
    async fn look(&self) -> Option<(f64, Option<f64>, String)> {
        let status = self.api.call("status", json!({ "task_id": self.task_id })).await.ok()?;
        if !status.success {
            return None;
        }
        let state = status.answer["state"].as_str().unwrap_or("").to_string();
        let steps = status.answer["steps"].as_array().cloned().unwrap_or_default();
        let done = steps
            .iter()
            .filter(|s| matches!(s["state"].as_str(), Some("done" | "failed" | "skipped" | "missed")))
            .count();
        let total = (!steps.is_empty()).then_some(steps.len() as f64);
        Some((done as f64, total, format!("task {state}: {done} of {} steps ended", steps.len())))
    }
}

/// Runs `call` while `look` is read every [`PROGRESS_POLL`] for progress notifications; once
/// more when it answered, so that the last notification says how it ended.
async fn watched<F>(call: F, look: impl Look, mut progress: Progress) -> Result<Envelope, CallError>
where
    F: std::future::Future<Output = Result<Envelope, CallError>>,
{
    tokio::pin!(call);
    let answered = loop {
        if let Some((value, total, message)) = look.look().await {
            progress.send(value, total, message).await;
        }
        tokio::select! {
            answered = &mut call => break answered,
            _ = tokio::time::sleep(PROGRESS_POLL) => {}
        }
    };
    if let Some((value, total, message)) = look.look().await {
        progress.send(value, total, message).await;
    }
    answered
}

impl ServerHandler for Orrery {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().enable_resources().build())
            .with_server_info(
                Implementation::new("orrery", env!("CARGO_PKG_VERSION"))
                    .with_title("Orrery")
                    .with_description("Design, check and run blueprints (DAGs of tasks)"),
            )
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(self.tools.as_ref().clone()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools.iter().find(|t| t.name == name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let name = request.name.to_string();
        let Some(job) = self.jobs.iter().find(|j| j.name == name) else {
            return Err(McpError::invalid_params(format!("Unknown tool: {name}"), Some(json!({ "tool": name }))));
        };
        let arguments = request.arguments.map(Value::Object).unwrap_or(Value::Null);
        let progress =
            context.meta.get_progress_token().map(|token| Progress { peer: context.peer.clone(), token, last: None });
        let this = self.called_by(&context);
        let result = if job.writes {
            // A job that changes something finishes even when the client stops waiting for it.
            this.run(&name, arguments, progress).await
        } else {
            tokio::select! {
                result = this.run(&name, arguments, progress) => result,
                _ = context.ct.cancelled() => failure("cancelled", "the client cancelled the request", None),
            }
        };
        Ok(result.into())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let listed = self.answer("list_blueprints", json!({})).await?;
        let resources = listed
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|stored| {
                let id = stored["blueprint_id"].as_str()?;
                let versions = stored["versions"].as_array().map_or(0, Vec::len);
                let newest = stored["versions"][0]["hash"].as_str().unwrap_or("");
                let description = format!(
                    "Blueprint {id}: the newest of its {versions} stored version(s), {}",
                    newest.get(..12).unwrap_or(newest)
                );
                Some(
                    Resource::new(format!("orrery://blueprint/{}", encode(id)), id)
                        .with_title(format!("Blueprint {id}"))
                        .with_description(description)
                        .with_mime_type("application/json"),
                )
            })
            .collect();
        Ok(ListResourcesResult::with_all_items(resources))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        let templates = vec![
            ResourceTemplate::new("orrery://session/{session_id}/log/{task}", "attempt-log")
                .with_title("An attempt's log")
                .with_description(
                    "What a task of a session printed (stdout and stderr interleaved), its latest attempt (add \
                     ?attempt=N for another); `task` is a task id of the root blueprint or `{instance}.{task}`. \
                     At most the last 256 KiB; read_attempt_log pages through longer logs.",
                )
                .with_mime_type("text/plain"),
            ResourceTemplate::new("orrery://session/{session_id}/blueprint", "session-blueprint")
                .with_title("A session's blueprint")
                .with_description("The exact blueprint version a session runs, as stored when it started.")
                .with_mime_type("application/json"),
            ResourceTemplate::new("orrery://blueprint/{blueprint_id}", "blueprint")
                .with_title("A stored blueprint")
                .with_description("The newest stored version of a blueprint (see list_blueprints).")
                .with_mime_type("application/json"),
        ];
        Ok(ListResourceTemplatesResult::with_all_items(templates))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let uri = request.uri;
        let unknown = || McpError::resource_not_found(format!("no resource {uri}"), Some(json!({ "uri": uri })));
        let rest = uri.strip_prefix("orrery://").ok_or_else(unknown)?;
        let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
        let segments: Vec<String> = path.split('/').map(decode).collect();
        let segments: Vec<&str> = segments.iter().map(String::as_str).collect();
        let contents = match segments.as_slice() {
            ["blueprint", id] if !id.is_empty() => self.stored_blueprint(id, &uri).await?,
            ["session", session, "blueprint"] if !session.is_empty() => {
                let blueprints = self.answer("get_session_blueprints", json!({ "session_id": session })).await?;
                let text = blueprints["root"]["text"].as_str().unwrap_or("").to_string();
                ResourceContents::text(text, uri.clone()).with_mime_type("application/json")
            }
            ["session", session, "log", task] if !session.is_empty() && !task.is_empty() => {
                let mut arguments = json!({ "session_id": session, "task": task, "offset": -1, "limit": LOG_WINDOW });
                for (key, value) in query.split('&').filter_map(|p| p.split_once('=')) {
                    if key == "attempt" {
                        let attempt: u32 = decode(value).parse().map_err(|_| {
                            McpError::invalid_params(format!("attempt must be a number in {uri}"), None)
                        })?;
                        arguments["attempt"] = json!(attempt);
                    }
                }
                let log = self.answer("read_attempt_log", arguments).await?;
                let window = &log["window"];
                let mut meta = MetaObject::new();
                for key in ["run_id", "node", "attempt", "running"] {
                    meta.0.insert(format!("orrery/{key}"), log[key].clone());
                }
                for key in ["start_offset", "next_offset", "file_size", "has_more_before"] {
                    meta.0.insert(format!("orrery/{key}"), window[key].clone());
                }
                let text = window["content"].as_str().unwrap_or("").to_string();
                ResourceContents::text(text, uri.clone()).with_meta(meta)
            }
            _ => return Err(unknown()),
        };
        Ok(ReadResourceResult::new(vec![contents]).into())
    }
}

impl Orrery {
    /// The answer of a job a resource is read with; a failure is the resource's error.
    async fn answer(&self, job: &str, arguments: Value) -> Result<Value, McpError> {
        match self.api.call(job, arguments).await {
            Ok(envelope) if envelope.success => Ok(envelope.answer),
            Ok(envelope) => {
                let code = envelope.metadata.get("error").cloned().unwrap_or(Value::Null);
                let message = envelope.answer.as_str().map_or_else(|| envelope.answer.to_string(), str::to_string);
                if code == "not_found" {
                    Err(McpError::resource_not_found(message, Some(json!({ "error": code }))))
                } else {
                    Err(McpError::internal_error(message, Some(json!({ "error": code }))))
                }
            }
            Err(e) => Err(McpError::invalid_params(e.to_string(), None)),
        }
    }

    /// The newest stored version of blueprint `id`.
    async fn stored_blueprint(&self, id: &str, uri: &str) -> Result<ResourceContents, McpError> {
        let version = self.answer("get_blueprint_version", json!({ "blueprint_id": id })).await?;
        let text = version["text"].as_str().unwrap_or("").to_string();
        Ok(ResourceContents::text(text, uri).with_mime_type("application/json"))
    }
}

/// Percent-encodes what a URI path segment may not hold as is.
fn encode(segment: &str) -> String {
    let mut out = String::new();
    for byte in segment.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => out.push(byte as char),
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}

/// Percent-decodes a URI path segment (a malformed escape is kept as it is).
fn decode(segment: &str) -> String {
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uri_segments_round_trip() {
        for text in ["flow", "a b/c", "é%", "flow.a"] {
            assert_eq!(decode(&encode(text)), text);
        }
        assert_eq!(decode("100%"), "100%");
        assert_eq!(decode("%4"), "%4");
    }

    #[test]
    fn an_object_schema_is_told_from_others() {
        assert!(is_object_schema(&json!({"type": "object"})));
        assert!(!is_object_schema(&json!({"type": "array"})));
        assert!(!is_object_schema(&json!({"oneOf": []})));
        assert!(!is_object_schema(&json!({"type": ["object", "null"]})));
    }
}

/// The MCP endpoint over streamable HTTP, for `orrery serve` to mount at `/mcp` behind its
/// own host, origin and token checks; calling the closure ends its sessions and streams.
pub fn http_endpoint(api: Api) -> (axum::Router, impl FnOnce()) {
    use rmcp::transport::streamable_http_server::{
        session::local::LocalSessionManager, StreamableHttpServerConfig, StreamableHttpService,
    };
    let config = StreamableHttpServerConfig::default();
    let stop = config.cancellation_token.clone();
    let service = StreamableHttpService::new(
        move || Ok(Orrery::new(api.clone(), Caller::default().project, None)),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    (axum::Router::new().fallback_service(service), move || stop.cancel())
}
