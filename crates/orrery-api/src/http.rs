//! The HTTP transport: one [`Api`] served over HTTP/1.1 on 127.0.0.1, for scripts, agents and
//! tools that do not link Rust. Same jobs, same envelope as every other face (docs/format.md
//! §6).
//!
//! Routes (every one needs `Authorization: Bearer <token>`):
//!
//! - `GET /jobs`: the catalogue, a JSON array of [`JobInfo`].
//! - `POST /jobs/{name}` with the body `{"arguments": {...}}` (`arguments` absent or `null`,
//!   or an empty body, counts as `{}`): `200` with the envelope `{"answer", "success",
//!   "metadata"}`, also when the job answered a business failure (`success: false`).
//! - `POST /jobs/stream_task` (the one job whose catalogue entry says `streams`) with `Accept:
//!   text/event-stream`: Server-Sent Events of the task's run, `event:
//!   progress|log|artifact|result` with `data: <one-line JSON>`, closed after `result`; a
//!   refusal (an unknown task) is the usual envelope. A client that goes away does not cancel
//!   the task. Without that `Accept`, the envelope once the run has ended.
//! - `GET /events`: Server-Sent Events of [`Api::subscribe`], the committed events of the
//!   sessions running in this process: `event: <kind>\ndata: <the event as one-line JSON>\n\n`.
//!   The stream opens with the comment `: subscribed`: once a client has read it, it sees every
//!   event of a session started afterwards. A comment (`: keep-alive`) is sent every 15 s of
//!   quiet. A client too slow to keep up (more than
//!   16,384 events behind) gets `event: lagged` with `data: {"missed": N}` and should read
//!   the sessions again from the store (`get_session`). A client that goes away disturbs
//!   nothing. Every event's SSE `id` is its `global_seq`; `GET /events?after=N` (or the
//!   `Last-Event-ID` header an EventSource sends when it reconnects) first replays, from the
//!   store, every session's events after `N` (at most 100,000; then `event: lagged`), then
//!   goes on live without repeating any. Transient `log_grew` events (a running attempt's
//!   log grew: `{node, attempt, file_size}`) come without an `id` and are never replayed.
//!
//! Refusals answer a JSON body `{"error": <code>, "message": <text>}` (plus `job` when one is
//! named):
//!
//! | status | `error` | when |
//! | --- | --- | --- |
//! | 400 | `invalid_request` | a body that cannot be read (a broken chunked framing, a connection cut mid-body) |
//! | 401 | `unauthorized` | no `Authorization: Bearer` header, or the wrong token (with `WWW-Authenticate: Bearer`) |
//! | 403 | `wrong_origin` | an `Origin` other than `http://127.0.0.1:PORT`, `http://localhost:PORT`, `http://[::1]:PORT` (a web page of another site) |
//! | 404 | `unknown_job` | `POST /jobs/{name}` of a job the catalogue does not have |
//! | 404 | `not_found` | any other path |
//! | 405 | `method_not_allowed` | a known path with another method |
//! | 408 | `body_timeout` | a body not all there [`BODY_TIMEOUT`] (30 s) after the request head |
//! | 413 | `body_too_large` | a body over [`BODY_LIMIT`] (8 MiB), by its `Content-Length` or by what came, chunked or not |
//! | 421 | `wrong_host` | a `Host` (or absolute request target) other than `127.0.0.1`, `localhost` or `[::1]`, with this port or none; or no `Host` |
//! | 422 | `invalid_request` | a body that is not JSON, or not `{"arguments": {...}}` |
//! | 422 | `invalid_argument` | arguments that break the job's schema ([`CallError::InvalidArguments`]) |
//! | 503 | `shutting_down` | a request still in flight when [`Server::shutdown`]'s grace is over |
//!
//! The Host and Origin checks come before the token's: a web page whose site name an attacker
//! points at 127.0.0.1 (DNS rebinding) sends that name as `Host` and its own `Origin`, and is
//! refused whatever it knows. Scripts, `curl` and the CLI send `Host: 127.0.0.1:PORT` and no
//! `Origin`; the desktop app does not use HTTP.
//!
//! Connections are served by hand (hyper's HTTP/1.1 connection, one task each), not by
//! `axum::serve`, for their limits:
//!
//! - A connection must send a whole request head within [`HEADER_TIMEOUT`] (10 s) of its opening
//!   and of each answer (the idle keep-alive time is the same 10 s); else it is closed. Silent
//!   sockets and slow-header clients go that way.
//! - A body must arrive within [`BODY_TIMEOUT`] (30 s) of its head (408). A body over the limit
//!   is read on and dropped (at most 32 MiB, 2 s) before the 413, so that a client that sends
//!   everything before it reads gets the answer, not a reset; one that waits for `100 Continue`
//!   gets the 413 at once.
//! - At most [`ServeConfig::max_connections`] connections are open at once; one beyond is closed
//!   as soon as it is accepted (the backlog never fills), and an event stream counts as one.
//!   `orrery serve` raises its soft `RLIMIT_NOFILE` to the hard limit and takes
//!   [`connection_cap`] of it: the limit less a quarter (at least [`RUNNER_RESERVE`], 256)
//!   kept for the runner, at most [`MAX_CONNECTIONS`] (4,096). So 20,000 idle sockets cost
//!   the server at most the cap's descriptors for at most 10 s each, and a running task never
//!   meets `Too many open files` because of them. An accept that fails all the same
//!   (descriptors used up elsewhere) is tried again 100 ms later, never in a busy loop.
//!
//! Only 127.0.0.1: the API starts processes as the user who runs it, so it is never offered to
//! the network; reach it from another machine through an SSH tunnel. The token is compared in
//! constant time (its length is not secret). `--token` on the command line shows in `ps` to
//! every user of the machine; `ORRERY_TOKEN` does not.

use std::convert::Infallible;
use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path as UrlPath, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::middleware::{self, Next};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use futures_util::{Stream, StreamExt};
use orrery_store::Event;
use serde_json::{json, Map, Value};
use subtle::ConstantTimeEq;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{broadcast, mpsc, oneshot, watch, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinHandle;

use crate::{Api, CallError, Caller, FailureCode, JobInfo, StreamItem, Streamed};

mod request;
use request::{arguments_of, is_this_server};

/// The largest request body accepted; a larger one is refused with 413.
pub const BODY_LIMIT: usize = 8 * 1024 * 1024;

/// How long [`Server::shutdown`] waits, by default, for requests still being answered (a
/// `wait_session` of a session run elsewhere, say) once the sessions run here have ended; then
/// they are cut off with 503.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// The shortest token accepted from the user.
pub const MIN_TOKEN_LEN: usize = 16;

/// How long a connection may take to send a whole request head, counted from its opening and
/// again from the end of each answer (so it is also the idle keep-alive time); then it is
/// closed. Slow-header clients and silent sockets are closed by it.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a request's whole body may take to arrive once its head came; then 408
/// `body_timeout`.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(30);

/// The most connections served at once, whatever the descriptor limit (each costs a
/// descriptor and some memory); a connection beyond the cap is closed as soon as it is
/// accepted. An event stream holds its connection, so it counts.
pub const MAX_CONNECTIONS: usize = 4096;

/// The fewest file descriptors kept for the runner (its processes' pipes and logs, the store);
/// [`connection_cap`] keeps a quarter of the limit when that is more.
pub const RUNNER_RESERVE: u64 = 256;

/// The connection cap for a descriptor limit (the soft `RLIMIT_NOFILE`): the limit less what
/// is kept for the runner (a quarter, at least [`RUNNER_RESERVE`]), within 16 and
/// [`MAX_CONNECTIONS`]. 1,024 descriptors give 768 connections; 2,048 give 1,536; 4,096 give
/// 3,072; 5,462 or more give [`MAX_CONNECTIONS`].
pub fn connection_cap(descriptor_limit: u64) -> usize {
    let reserve = (descriptor_limit / 4).max(RUNNER_RESERVE);
    let cap = usize::try_from(descriptor_limit.saturating_sub(reserve)).unwrap_or(MAX_CONNECTIONS);
    cap.clamp(16, MAX_CONNECTIONS)
}

/// How to serve.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    /// Must be 127.0.0.1 (the default); anything else is refused with
    /// [`ServeError::NotLoopback`].
    pub host: IpAddr,
    /// 0: any free port ([`Server::addr`] tells which).
    pub port: u16,
    /// The bearer token clients must send: at least [`MIN_TOKEN_LEN`] visible ASCII
    /// characters. `None`: 32 random bytes from the operating system, hex-encoded.
    pub token: Option<String>,
    /// How long [`Server::shutdown`] lets requests in flight finish ([`SHUTDOWN_GRACE`]).
    pub shutdown_grace: Duration,
    /// The most connections open at once ([`connection_cap`] of the process's descriptor
    /// limit; the default is that of 1,024).
    pub max_connections: usize,
    /// [`HEADER_TIMEOUT`].
    pub header_timeout: Duration,
    /// [`BODY_TIMEOUT`].
    pub body_timeout: Duration,
    /// Another protocol's service mounted at a path (`/mcp`: the MCP endpoint), behind the same
    /// host, origin and token checks, its bodies held to [`BODY_LIMIT`].
    pub mounted: Option<(&'static str, Router)>,
}

impl Default for ServeConfig {
    fn default() -> Self {
        ServeConfig {
            host: IpAddr::V4(Ipv4Addr::LOCALHOST),
            port: 0,
            token: None,
            shutdown_grace: SHUTDOWN_GRACE,
            max_connections: connection_cap(1024),
            header_timeout: HEADER_TIMEOUT,
            body_timeout: BODY_TIMEOUT,
            mounted: None,
        }
    }
}

/// Where a server is in its life; each phase includes the ones before.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Phase {
    Serving,
    /// The event streams end.
    StreamsEnded,
    /// Requests still in flight are answered 503 at once.
    CutOff,
}

/// Why the server did not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(
        "the HTTP API listens on 127.0.0.1 only, not {0}: it runs processes as you; reach it from \
         another machine through an SSH tunnel"
    )]
    NotLoopback(IpAddr),
    #[error(
        "the token must be at least {MIN_TOKEN_LEN} characters, each visible ASCII (no spaces); leave it \
         out to have one generated"
    )]
    BadToken,
    #[error("cannot generate a token: {0}")]
    Random(String),
    #[error("cannot listen on {addr}: {source}")]
    Bind { addr: SocketAddr, source: io::Error },
}

/// A running HTTP server over one [`Api`]. Dropping it without [`Server::shutdown`] stops
/// accepting, ends the event streams and cuts off requests in flight (503); the sessions it
/// started are left running in the runtime.
pub struct Server {
    addr: SocketAddr,
    token: String,
    api: Api,
    stop_accepting: Option<oneshot::Sender<()>>,
    phase: watch::Sender<Phase>,
    grace: Duration,
    task: Option<JoinHandle<io::Result<()>>>,
}

impl Server {
    /// Binds, then serves in the background of the current tokio runtime.
    pub async fn start(api: Api, config: ServeConfig) -> Result<Server, ServeError> {
        if config.host != IpAddr::V4(Ipv4Addr::LOCALHOST) {
            return Err(ServeError::NotLoopback(config.host));
        }
        let token = match config.token {
            Some(token) => {
                check_token(&token)?;
                token
            }
            None => generate_token()?,
        };
        let wanted = SocketAddr::new(config.host, config.port);
        let listener = TcpListener::bind(wanted).await.map_err(|source| ServeError::Bind { addr: wanted, source })?;
        let addr = listener.local_addr().map_err(|source| ServeError::Bind { addr: wanted, source })?;
        let (stop_accepting, stopped) = oneshot::channel::<()>();
        let (phase, phases) = watch::channel(Phase::Serving);
        let app = router(api.clone(), token.clone(), phases, addr.port(), config.body_timeout, config.mounted);
        let connections = Connections { max: config.max_connections.max(1), header_timeout: config.header_timeout };
        let task = tokio::spawn(async move {
            accept(listener, app, stopped, connections).await;
            Ok(())
        });
        Ok(Server {
            addr,
            token,
            api,
            stop_accepting: Some(stop_accepting),
            phase,
            grace: config.shutdown_grace,
            task: Some(task),
        })
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:{port}`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The bearer token clients must send.
    pub fn token(&self) -> &str {
        &self.token
    }

    /// Stops cleanly, in this order: no new connection is accepted; every session running in
    /// this process is stopped (its runs get SIGTERM, a grace period, then SIGKILL; it ends
    /// `stopped`, and `orrery resume` goes on with it later) and awaited, so event streams
    /// still carry its last events; the event streams end; requests still in flight get
    /// [`ServeConfig::shutdown_grace`] to finish, then are answered 503 `shutting_down`.
    /// Answers the ids of the sessions it stopped.
    pub async fn shutdown(mut self) -> Vec<String> {
        if let Some(stop) = self.stop_accepting.take() {
            let _ = stop.send(());
        }
        let mut stopped = stop_sessions(&self.api).await;
        let _ = self.phase.send(Phase::StreamsEnded);
        if let Some(mut task) = self.task.take() {
            if tokio::time::timeout(self.grace, &mut task).await.is_err() {
                let _ = self.phase.send(Phase::CutOff);
                // Every request answers at once now; a connection that never sends a whole
                // request head is closed by the header timeout.
                if tokio::time::timeout(self.grace, &mut task).await.is_err() {
                    task.abort();
                }
            }
        }
        // A request in flight may have started a session meanwhile.
        stopped.extend(stop_sessions(&self.api).await);
        stopped
    }
}

/// How connections are served.
#[derive(Clone, Copy)]
struct Connections {
    max: usize,
    header_timeout: Duration,
}

/// Accepts connections until `stop` (or its sender's drop), each served on its own task while
/// fewer than `limits.max` are open; one beyond is closed at once. Then every connection is
/// asked to close once its request in flight (if any) is answered, and awaited.
async fn accept(listener: TcpListener, app: Router, mut stop: oneshot::Receiver<()>, limits: Connections) {
    let open = std::sync::Arc::new(Semaphore::new(limits.max));
    let (closing, closing_seen) = watch::channel(false);
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                // A client that gave up before it was accepted.
                Err(e) if matches!(
                    e.kind(),
                    io::ErrorKind::ConnectionAborted | io::ErrorKind::ConnectionReset | io::ErrorKind::ConnectionRefused
                ) => continue,
                // Out of descriptors (or memory) all the same: the clients wait in the backlog
                // while the runner's reserve is untouched; never a busy loop.
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            _ = &mut stop => break,
        };
        match open.clone().try_acquire_owned() {
            Ok(permit) => {
                tokio::spawn(serve_connection(
                    stream,
                    app.clone(),
                    limits.header_timeout,
                    closing_seen.clone(),
                    permit,
                ));
            }
            // Over the cap: closed at once, so that the backlog never holds the flood.
            Err(_) => drop(stream),
        }
    }
    drop(listener);
    let _ = closing.send(true);
    let _ = open.acquire_many(u32::try_from(limits.max).unwrap_or(u32::MAX)).await;
}

/// One HTTP/1.1 connection: closed when it does not send a whole request head within
/// `header_timeout` of its opening or of its last answer; closed after the answer in flight once
/// `closing` turns true (or its sender goes). `_permit` is its place under the cap.
async fn serve_connection(
    stream: TcpStream,
    app: Router,
    header_timeout: Duration,
    mut closing: watch::Receiver<bool>,
    _permit: OwnedSemaphorePermit,
) {
    let _ = stream.set_nodelay(true);
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder.timer(hyper_util::rt::TokioTimer::new()).header_read_timeout(header_timeout).keep_alive(true);
    let connection = builder
        .serve_connection(hyper_util::rt::TokioIo::new(stream), hyper_util::service::TowerToHyperService::new(app));
    let mut connection = std::pin::pin!(connection);
    tokio::select! {
        _ = connection.as_mut() => return,
        _ = closing.wait_for(|closing| *closing) => {}
    }
    connection.as_mut().graceful_shutdown();
    let _ = connection.await;
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.phase.send(Phase::CutOff);
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

async fn stop_sessions(api: &Api) -> Vec<String> {
    let running = api.running_sessions();
    for id in &running {
        let _ = api.call("stop_session", json!({ "session_id": id })).await;
    }
    api.wait_all().await;
    running
}

fn check_token(token: &str) -> Result<(), ServeError> {
    if token.len() >= MIN_TOKEN_LEN && token.bytes().all(|b| b.is_ascii_graphic()) {
        Ok(())
    } else {
        Err(ServeError::BadToken)
    }
}

/// 32 random bytes from the operating system, as 64 hex digits.
fn generate_token() -> Result<String, ServeError> {
    let mut bytes = [0u8; 32];
    getrandom::getrandom(&mut bytes).map_err(|e| ServeError::Random(e.to_string()))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

#[derive(Clone)]
struct Shared {
    api: Api,
    token: std::sync::Arc<str>,
    phase: watch::Receiver<Phase>,
    /// The port it listens on: the one a request's `Host` may name.
    port: u16,
    /// The events for `/events`, each rendered once ([`render_events`]).
    frames: broadcast::Sender<Arc<Frame>>,
    body_timeout: Duration,
}

/// The routes over `api`, guarded by `token`, for requests to `port` on this machine; event
/// streams end once `phase` reaches [`Phase::StreamsEnded`] (or its sender is dropped),
/// requests in flight are cut off at [`Phase::CutOff`]; a body must arrive within
/// `body_timeout`.
fn router(
    api: Api,
    token: String,
    phase: watch::Receiver<Phase>,
    port: u16,
    body_timeout: Duration,
    mounted: Option<(&'static str, Router)>,
) -> Router {
    let frames = render_events(&api);
    let shared = Shared { api, token: token.into(), phase, port, body_timeout, frames };
    let mut routes =
        Router::new().route("/jobs", get(catalogue)).route("/jobs/{name}", post(call)).route("/events", get(events));
    if let Some((path, service)) = mounted {
        routes = routes.nest_service(path, service.layer(middleware::from_fn(limit_body)));
    }
    routes
        .fallback(no_route)
        .method_not_allowed_fallback(wrong_method)
        .layer(middleware::from_fn_with_state(shared.clone(), authenticate))
        .layer(middleware::from_fn_with_state(shared.clone(), check_host))
        .layer(middleware::from_fn_with_state(shared.clone(), cut_off))
        .with_state(shared)
}

/// Holds a mounted service's request body to [`BODY_LIMIT`]: a longer one is refused (413) by
/// its `Content-Length`, or cut off where it passes the limit.
async fn limit_body(request: Request, next: Next) -> Response {
    let declared = request.headers().get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|n| n > BODY_LIMIT as u64) {
        let message = format!("the body is over {BODY_LIMIT} bytes");
        return refusal(StatusCode::PAYLOAD_TOO_LARGE, FailureCode::BodyTooLarge, message, Value::Null);
    }
    let (parts, body) = request.into_parts();
    let limited = Body::new(http_body_util::Limited::new(body, BODY_LIMIT));
    next.run(Request::from_parts(parts, limited)).await
}

/// Refuses a request addressed to another name than this server's (its `Host`, or the
/// authority of an absolute request target): 421 `wrong_host`; and one a web page sent from
/// another origin (its `Origin`): 403 `wrong_origin`. A page of a site whose name an attacker
/// points at 127.0.0.1 (DNS rebinding) sends that name as `Host` and its own origin.
async fn check_host(State(shared): State<Shared>, request: Request, next: Next) -> Response {
    let port = shared.port;
    let named = |value: Option<&HeaderValue>| value.map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    let host = named(request.headers().get(header::HOST));
    let target = request.uri().authority().map(|a| a.as_str().to_string());
    let wrong = match (&host, &target) {
        (None, None) => Some("no Host header".to_string()),
        (Some(host), _) if !is_this_server(host, port) => Some(format!("Host {host:?}")),
        (_, Some(target)) if !is_this_server(target, port) => Some(format!("the request target names {target:?}")),
        _ => None,
    };
    if let Some(wrong) = wrong {
        let message = format!(
            "this API answers only requests to 127.0.0.1:{port}, localhost:{port} or [::1]:{port} (or those \
             names without the port), not {wrong}"
        );
        return refusal(StatusCode::MISDIRECTED_REQUEST, FailureCode::WrongHost, message, Value::Null);
    }
    if let Some(origin) = named(request.headers().get(header::ORIGIN)) {
        let local = origin.strip_prefix("http://").is_some_and(|authority| is_this_server(authority, port));
        if !local {
            let message = format!(
                "a web page of origin {origin:?} may not call this API: only http://127.0.0.1:{port}, \
                 http://localhost:{port} or http://[::1]:{port} (scripts and tools send no Origin)"
            );
            return refusal(StatusCode::FORBIDDEN, FailureCode::WrongOrigin, message, Value::Null);
        }
    }
    next.run(request).await
}

/// Answers 503 when the server cuts off the requests still in flight at its shutdown.
async fn cut_off(State(shared): State<Shared>, request: Request, next: Next) -> Response {
    let mut phase = shared.phase.clone();
    tokio::select! {
        response = next.run(request) => response,
        _ = phase.wait_for(|p| *p == Phase::CutOff) => refusal(
            StatusCode::SERVICE_UNAVAILABLE,
            FailureCode::ShuttingDown,
            "the server is shutting down",
            Value::Null,
        ),
    }
}

/// A refusal: `{"error": code, "message": message}` and the fields of `extra`.
fn refusal(status: StatusCode, code: FailureCode, message: impl Into<String>, extra: Value) -> Response {
    let mut body = Map::new();
    let message = message.into();
    body.insert("error".into(), Value::from(code.as_str()));
    // `detail` as well, the field a client of the job protocol's servers reads.
    body.insert("detail".into(), Value::from(message.clone()));
    body.insert("message".into(), Value::from(message));
    if let Value::Object(extra) = extra {
        body.extend(extra);
    }
    (status, Json(Value::Object(body))).into_response()
}

async fn authenticate(State(shared): State<Shared>, request: Request, next: Next) -> Response {
    let header = request.headers().get(header::AUTHORIZATION).map(|v| v.as_bytes());
    let given = header.and_then(|v| {
        let (scheme, token) = std::str::from_utf8(v).ok()?.split_once(' ')?;
        scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
    });
    match given {
        Some(token) if bool::from(token.as_bytes().ct_eq(shared.token.as_bytes())) => next.run(request).await,
        _ => {
            let message = match (header, given) {
                (None, _) => "this API needs `Authorization: Bearer <token>` (orrery serve printed the token)",
                (Some(_), None) => "the Authorization header must be `Bearer <token>`",
                (Some(_), Some(_)) => "wrong token",
            };
            let mut response = refusal(StatusCode::UNAUTHORIZED, FailureCode::Unauthorized, message, Value::Null);
            response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            response
        }
    }
}

async fn catalogue(State(shared): State<Shared>) -> Json<Vec<JobInfo>> {
    Json(shared.api.jobs())
}

async fn call(
    State(shared): State<Shared>,
    name: Result<UrlPath<String>, PathRejection>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let Ok(UrlPath(name)) = name else {
        let message = "there is no job of that name (it is not UTF-8; GET /jobs lists them)";
        return refusal(StatusCode::NOT_FOUND, FailureCode::UnknownJob, message, Value::Null);
    };
    let known = || shared.api.jobs().iter().any(|j| j.name == name);
    let arguments = match read_body(&headers, body, shared.body_timeout).await {
        Err(BodyError::TooLarge) => {
            return refusal(
                StatusCode::PAYLOAD_TOO_LARGE,
                FailureCode::BodyTooLarge,
                format!("the body is over {BODY_LIMIT} bytes"),
                json!({ "job": name }),
            )
        }
        Err(BodyError::Slow) => {
            let message = format!("the body did not arrive within {} s", shared.body_timeout.as_secs_f64());
            return refusal(StatusCode::REQUEST_TIMEOUT, FailureCode::BodyTimeout, message, json!({ "job": name }));
        }
        Err(BodyError::Unreadable(e)) => {
            let message = format!("the body cannot be read: {e}");
            return refusal(StatusCode::BAD_REQUEST, FailureCode::InvalidRequest, message, json!({ "job": name }));
        }
        Ok(bytes) => match arguments_of(&bytes).and_then(|a| idempotency_key(&shared.api, &name, &headers, a)) {
            Ok(arguments) => arguments,
            Err(_) if !known() => return unknown_job(&name),
            Err(message) => {
                return refusal(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    FailureCode::InvalidRequest,
                    message,
                    json!({ "job": name }),
                )
            }
        },
    };
    let api = match caller_of(&headers) {
        Ok(Some(caller)) => shared.api.as_caller(caller),
        Ok(None) => shared.api.clone(),
        Err(message) => {
            return refusal(
                StatusCode::UNPROCESSABLE_ENTITY,
                FailureCode::InvalidRequest,
                message,
                json!({ "job": name }),
            )
        }
    };
    if api.jobs().iter().any(|j| j.name == name && j.streams) && wants_events(&headers) {
        return match api.stream_task(arguments).await {
            Ok(Streamed::Items(items)) => item_stream(items, shared.phase.clone()),
            Ok(Streamed::Refused(envelope)) => Json(envelope).into_response(),
            Err(e) => refusal(
                StatusCode::UNPROCESSABLE_ENTITY,
                FailureCode::InvalidArgument,
                e.to_string(),
                json!({ "job": name }),
            ),
        };
    }
    match api.call(&name, arguments).await {
        Ok(envelope) => Json(envelope).into_response(),
        Err(CallError::UnknownJob { name }) => unknown_job(&name),
        Err(e) => {
            let job = match &e {
                CallError::InvalidArguments { job, .. } => job.clone(),
                CallError::UnknownJob { name } => name.clone(),
            };
            refusal(
                StatusCode::UNPROCESSABLE_ENTITY,
                FailureCode::InvalidArgument,
                e.to_string(),
                json!({ "job": job }),
            )
        }
    }
}

/// The caller the headers name: `X-Orrery-Project` and `X-Orrery-Agent` (each defaults to the
/// facade's own when absent); refused when one is not text or not a name [`Caller::new`] takes.
fn caller_of(headers: &HeaderMap) -> Result<Option<Caller>, String> {
    let header = |name: &str| -> Result<Option<String>, String> {
        match headers.get(name) {
            None => Ok(None),
            Some(v) => match std::str::from_utf8(v.as_bytes()) {
                Ok(text) => Ok(Some(text.trim().to_string())),
                Err(_) => Err(format!("the {name} header must be UTF-8 text")),
            },
        }
    };
    let (project, agent) = (header("x-orrery-project")?, header("x-orrery-agent")?);
    if project.is_none() && agent.is_none() {
        return Ok(None);
    }
    let default = Caller::default();
    Caller::new(project.as_deref().unwrap_or(&default.project), agent.as_deref().unwrap_or(&default.agent)).map(Some)
}

/// Whether the client asked for Server-Sent Events (`Accept: text/event-stream`).
fn wants_events(headers: &HeaderMap) -> bool {
    headers.get_all("accept").iter().filter_map(|v| v.to_str().ok()).any(|v| {
        v.split(',')
            .any(|kind| kind.split(';').next().is_some_and(|k| k.trim().eq_ignore_ascii_case("text/event-stream")))
    })
}

/// The `Idempotency-Key` header as the job's `request_id`, for a job that takes one (others are
/// safe to repeat and pass it by). Refused when it is not text, or when the arguments give
/// another `request_id`.
fn idempotency_key(api: &Api, job: &str, headers: &HeaderMap, arguments: Value) -> Result<Value, String> {
    let Some(key) = headers.get("idempotency-key") else { return Ok(arguments) };
    let key = key.to_str().map_err(|_| "the Idempotency-Key header must be visible ASCII text".to_string())?;
    let most = orrery_store::MAX_REQUEST_ID_CHARS;
    if !(1..=most).contains(&key.len()) {
        return Err(format!("the Idempotency-Key header must have 1 to {most} characters, not {}", key.len()));
    }
    let takes = api.jobs().iter().any(|j| j.name == job && j.arguments["properties"].get("request_id").is_some());
    if !takes {
        return Ok(arguments);
    }
    let mut arguments = match arguments {
        Value::Null => Map::new(),
        Value::Object(map) => map,
        // Not an object: the job refuses it as it would without the header.
        other => return Ok(other),
    };
    match arguments.get("request_id") {
        None => {
            arguments.insert("request_id".into(), Value::String(key.to_string()));
        }
        Some(Value::String(given)) if given != key => {
            return Err(format!("the Idempotency-Key header ({key:?}) and the request_id argument ({given:?}) differ"))
        }
        // The same id, or one the job's own checks refuse.
        Some(_) => {}
    }
    Ok(Value::Object(arguments))
}

/// Why a request's body was not read.
#[derive(Debug, PartialEq)]
enum BodyError {
    /// Over [`BODY_LIMIT`], by its `Content-Length` or by what came, whatever its framing.
    TooLarge,
    /// Not all there within the body timeout.
    Slow,
    /// The connection broke, or the chunked framing is wrong.
    Unreadable(String),
}

/// The most bytes of a refused body read and dropped (in at most [`DRAIN_TIME`]) before the
/// 413 answer: a client that sends a whole body before it reads the answer gets the 413 rather
/// than a connection reset.
const DRAIN_LIMIT: usize = 4 * BODY_LIMIT;
const DRAIN_TIME: Duration = Duration::from_secs(2);

/// The whole body, at most [`BODY_LIMIT`] bytes whatever its framing (`Content-Length` or
/// chunked), within `within`.
async fn read_body(headers: &HeaderMap, body: Body, within: Duration) -> Result<Vec<u8>, BodyError> {
    let declared =
        headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.trim().parse::<u64>().ok());
    let mut chunks = body.into_data_stream();
    if declared.is_some_and(|length| length > BODY_LIMIT as u64) {
        // A client that waits for `100 Continue` has sent nothing: reading would ask for it.
        let waits = headers.get(header::EXPECT).is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"));
        if !waits {
            drain(&mut chunks).await;
        }
        return Err(BodyError::TooLarge);
    }
    let deadline = tokio::time::Instant::now() + within;
    let mut data = Vec::with_capacity(declared.map_or(0, |length| length as usize));
    loop {
        let chunk = match tokio::time::timeout_at(deadline, chunks.next()).await {
            Err(_) => return Err(BodyError::Slow),
            Ok(None) => return Ok(data),
            Ok(Some(Err(e))) => return Err(BodyError::Unreadable(e.to_string())),
            Ok(Some(Ok(chunk))) => chunk,
        };
        if data.len() + chunk.len() > BODY_LIMIT {
            drain(&mut chunks).await;
            return Err(BodyError::TooLarge);
        }
        data.extend_from_slice(&chunk);
    }
}

/// Reads and drops what more of a refused body comes, at most [`DRAIN_LIMIT`] bytes in
/// [`DRAIN_TIME`].
async fn drain(chunks: &mut axum::body::BodyDataStream) {
    let deadline = tokio::time::Instant::now() + DRAIN_TIME;
    let mut drained = 0;
    while drained < DRAIN_LIMIT {
        match tokio::time::timeout_at(deadline, chunks.next()).await {
            Ok(Some(Ok(chunk))) => drained += chunk.len(),
            _ => return,
        }
    }
}

/// The SSE response of a streaming job: `event: <kind>\ndata: <one-line JSON>` per item, until
/// the last item or until `end` reaches [`Phase::StreamsEnded`].
fn item_stream(items: mpsc::Receiver<StreamItem>, mut end: watch::Receiver<Phase>) -> Response {
    let items = futures_util::stream::unfold(items, |mut items| async move {
        let item = items.recv().await?;
        let event = SseEvent::default().event(item.kind()).data(item.data().to_string());
        Some((Ok::<_, Infallible>(event), items))
    });
    let ended = async move {
        let _ = end.wait_for(|p| *p >= Phase::StreamsEnded).await;
    };
    let stream = items.take_until(ended);
    Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)).text("keep-alive")).into_response()
}

fn unknown_job(name: &str) -> Response {
    refusal(
        StatusCode::NOT_FOUND,
        FailureCode::UnknownJob,
        format!("there is no job named {name:?} (GET /jobs lists them)"),
        json!({ "job": name }),
    )
}

/// The most events a reconnecting client is replayed; one further behind is told it lagged.
const REPLAY_LIMIT: usize = 100_000;

async fn events(State(shared): State<Shared>, uri: Uri, headers: axum::http::HeaderMap) -> Response {
    let after = match resume_point(&uri, &headers) {
        Ok(after) => after,
        Err(message) => {
            return refusal(StatusCode::UNPROCESSABLE_ENTITY, FailureCode::InvalidRequest, message, Value::Null)
        }
    };
    // Subscribed before the store is read: an event committed in between comes twice, and the
    // live side skips what the replay gave.
    let receiver = shared.frames.subscribe();
    let (replay, lagged_by) = match after {
        None => (Vec::new(), 0),
        Some(after) => match replay_since(&shared.api, after).await {
            Ok(replayed) => replayed,
            Err(message) => {
                return refusal(StatusCode::INTERNAL_SERVER_ERROR, FailureCode::Store, message, Value::Null)
            }
        },
    };
    let through = replay.last().map_or(after.unwrap_or(0), |e| e.global_seq);
    let stream = event_stream(receiver, shared.phase.clone(), replay, lagged_by, through);
    Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)).text("keep-alive")).into_response()
}

/// Where a client resumes ([`request::resume_point`]).
fn resume_point(uri: &Uri, headers: &axum::http::HeaderMap) -> Result<Option<u64>, String> {
    request::resume_point(uri.query(), headers.get("last-event-id").map(|v| v.as_bytes()))
}

/// The store's events after `after`, at most [`REPLAY_LIMIT`], and how many more there were.
async fn replay_since(api: &Api, after: u64) -> Result<(Vec<Event>, u64), String> {
    let db = api.db().to_path_buf();
    tokio::task::spawn_blocking(move || {
        let store = orrery_store::Store::open(&db).map_err(|e| e.to_string())?;
        let mut events = Vec::new();
        let mut cursor = after;
        loop {
            let page = store.events_since(cursor, orrery_store::MAX_PAGE_LIMIT).map_err(|e| e.to_string())?;
            let Some(last) = page.last() else { break };
            cursor = last.global_seq;
            events.extend(page);
            if events.len() >= REPLAY_LIMIT {
                let newest = store.last_global_seq().map_err(|e| e.to_string())?;
                return Ok((events, newest - cursor));
            }
        }
        Ok((events, 0))
    })
    .await
    .map_err(|e| e.to_string())?
}

/// The SSE events: `replay` first (with `event: lagged` when `lagged_by` more could not be
/// replayed), then those of `receiver` after `through`, until it closes or `end` reaches
/// [`Phase::StreamsEnded`] (or its sender goes); then the events it already holds, and the end.
fn event_stream(
    receiver: broadcast::Receiver<Arc<Frame>>,
    end: watch::Receiver<Phase>,
    replay: Vec<Event>,
    lagged_by: u64,
    through: u64,
) -> impl Stream<Item = Result<SseEvent, Infallible>> {
    // A first comment sends the response head at once (hyper holds it back until the body has
    // something), telling the client that the subscription exists.
    let hello = futures_util::stream::once(async { Ok(SseEvent::default().comment("subscribed")) });
    let replayed = futures_util::stream::iter(
        replay.into_iter().map(|e| Ok(Frame::of(&e).sse)).chain((lagged_by > 0).then(|| Ok(lagged(lagged_by)))),
    );
    let live = futures_util::stream::unfold((receiver, end), move |(mut receiver, mut end)| async move {
        loop {
            let next = if *end.borrow() >= Phase::StreamsEnded {
                match receiver.try_recv() {
                    Ok(event) => Ok(event),
                    Err(broadcast::error::TryRecvError::Lagged(missed)) => Err(missed),
                    Err(_) => return None,
                }
            } else {
                tokio::select! {
                    biased;
                    received = receiver.recv() => match received {
                        Ok(event) => Ok(event),
                        Err(broadcast::error::RecvError::Lagged(missed)) => Err(missed),
                        Err(broadcast::error::RecvError::Closed) => return None,
                    },
                    _ = end.wait_for(|p| *p >= Phase::StreamsEnded) => continue,
                }
            };
            match next {
                // Stored events the replay gave; transient ones (seq 0) are never replayed.
                Ok(frame) if frame.seq > 0 && frame.global_seq <= through => continue,
                Ok(frame) => return Some((Ok(frame.sse.clone()), (receiver, end))),
                Err(missed) => return Some((Ok(lagged(missed)), (receiver, end))),
            }
        }
    });
    hello.chain(replayed).chain(live)
}

fn lagged(missed: u64) -> SseEvent {
    SseEvent::default().event("lagged").data(json!({ "missed": missed }).to_string())
}

/// An event as every client of `/events` is sent it, rendered once: 500 clients following a
/// burst of sessions had the server clone and serialize each event 500 times, which starved the
/// runners of the CPU they needed (issue 16). A client's copy is a copy of these bytes.
#[derive(Debug)]
struct Frame {
    seq: u64,
    global_seq: u64,
    sse: SseEvent,
}

impl Frame {
    fn of(event: &Event) -> Frame {
        // serde_json escapes every control character: the text is one line.
        let data =
            serde_json::to_string(event).unwrap_or_else(|e| json!({ "unserializable": e.to_string() }).to_string());
        let sse = SseEvent::default().event(event.kind());
        // A transient event (log growth) has no id: a reconnecting client resumes after the last
        // stored event it saw.
        let sse = if event.seq == 0 { sse } else { sse.id(event.global_seq.to_string()) };
        Frame { seq: event.seq, global_seq: event.global_seq, sse: sse.data(data) }
    }
}

/// Renders every event of `api` once, for all the clients of `/events`; a renderer that fell
/// behind the facade's channel tells them all how many events they missed.
fn render_events(api: &Api) -> broadcast::Sender<Arc<Frame>> {
    let (frames, _) = broadcast::channel(16_384);
    let mut events = api.subscribe();
    let sender = frames.clone();
    tokio::spawn(async move {
        loop {
            let frame = match events.recv().await {
                Ok(event) => Frame::of(&event),
                Err(broadcast::error::RecvError::Lagged(missed)) => {
                    Frame { seq: 0, global_seq: 0, sse: lagged(missed) }
                }
                Err(broadcast::error::RecvError::Closed) => break,
            };
            // No client is not an error.
            let _ = sender.send(Arc::new(frame));
        }
    });
    frames
}

async fn no_route(method: Method, uri: Uri) -> Response {
    refusal(
        StatusCode::NOT_FOUND,
        FailureCode::NotFound,
        format!("no route {method} {}: the routes are GET /jobs, POST /jobs/{{name}}, GET /events", uri.path()),
        Value::Null,
    )
}

async fn wrong_method(method: Method, uri: Uri) -> Response {
    refusal(
        StatusCode::METHOD_NOT_ALLOWED,
        FailureCode::MethodNotAllowed,
        format!("{} does not take {method}: the routes are GET /jobs, POST /jobs/{{name}}, GET /events", uri.path()),
        Value::Null,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ApiOptions;
    use axum::body::Body;
    use http_body_util::BodyExt;
    use orrery_store::{EventKind, EventPayload};
    use tower::ServiceExt;

    const LOG_GREW: &str = EventKind::LogGrew.as_str();

    const TOKEN: &str = "a-test-token-of-some-length";
    /// The port the fixture's router believes it listens on.
    const PORT: u16 = 4000;

    struct Fixture {
        _dir: tempfile::TempDir,
        app: Router,
        _end: watch::Sender<Phase>,
    }

    fn fixture() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let api = Api::new(ApiOptions { db: dir.path().join("store.db"), work_dir: None, max_parallel: Some(1) });
        let (end, streams_end) = watch::channel(Phase::Serving);
        Fixture { app: router(api, TOKEN.into(), streams_end, PORT, BODY_TIMEOUT, None), _dir: dir, _end: end }
    }

    #[tokio::test]
    async fn a_mounted_service_is_behind_the_token_and_its_bodies_are_held_to_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let api = Api::new(ApiOptions { db: dir.path().join("store.db"), work_dir: None, max_parallel: Some(1) });
        let (_end, streams_end) = watch::channel(Phase::Serving);
        // Answers the length of the body it read, 413 when it could not read it all.
        let echo = Router::new().fallback(|body: Body| async move {
            match body.collect().await {
                Ok(bytes) => bytes.to_bytes().len().to_string().into_response(),
                Err(_) => StatusCode::PAYLOAD_TOO_LARGE.into_response(),
            }
        });
        let app = router(api, TOKEN.into(), streams_end, PORT, BODY_TIMEOUT, Some(("/mounted", echo)));
        let bearer = format!("Bearer {TOKEN}");
        assert_eq!(send(&app, "POST", "/mounted", None, b"hello".to_vec()).await.0, StatusCode::UNAUTHORIZED);
        let (status, response) = send(&app, "POST", "/mounted/deeper", Some(&bearer), b"hello".to_vec()).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(&response.into_body().collect().await.unwrap().to_bytes()[..], b"5");
        let host = format!("127.0.0.1:{PORT}");
        let declared = (BODY_LIMIT + 1).to_string();
        let headers = [("host", host.as_str()), ("content-length", declared.as_str())];
        let (status, response) = send_with(&app, "POST", "/mounted", &headers, Some(&bearer), Vec::new()).await;
        assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "refused by its length");
        assert_eq!(json_of(response).await["error"], "body_too_large");
        let over = vec![b'x'; BODY_LIMIT + 1];
        let (status, _) = send(&app, "POST", "/mounted", Some(&bearer), over).await;
        assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "cut off where it passes the limit");
    }

    async fn send(app: &Router, method: &str, path: &str, auth: Option<&str>, body: Vec<u8>) -> (StatusCode, Response) {
        let host = format!("127.0.0.1:{PORT}");
        send_with(app, method, path, &[("host", &host)], auth, body).await
    }

    /// A request with the headers given.
    async fn send_with(
        app: &Router,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        auth: Option<&str>,
        body: Vec<u8>,
    ) -> (StatusCode, Response) {
        let mut request = axum::http::Request::builder().method(method).uri(path);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        if let Some(auth) = auth {
            request = request.header(header::AUTHORIZATION, auth);
        }
        let response = app.clone().oneshot(request.body(Body::from(body)).unwrap()).await.unwrap();
        (response.status(), response)
    }

    async fn json_of(response: Response) -> Value {
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&bytes)))
    }

    /// A POST with the right token; answers the status and the JSON body.
    async fn post(app: &Router, path: &str, body: &str) -> (StatusCode, Value) {
        let (status, response) = send(app, "POST", path, Some(&format!("Bearer {TOKEN}")), body.into()).await;
        (status, json_of(response).await)
    }

    #[tokio::test]
    async fn every_route_needs_the_token_and_says_so_with_401() {
        let f = fixture();
        let cases = [
            ("GET", "/jobs", None, "needs `Authorization: Bearer"),
            ("GET", "/events", Some("Basic dXNlcjpwYXNz"), "must be `Bearer <token>`"),
            ("POST", "/jobs/list_installed_task_definitions", Some("Bearer wrong-token-of-some-length"), "wrong token"),
            ("GET", "/nowhere", Some(&format!("Bearer {TOKEN}x")[..]), "wrong token"),
            ("GET", "/jobs", Some(&format!("Bearer{TOKEN}")[..]), "must be `Bearer <token>`"),
        ];
        for (method, path, auth, message) in cases {
            let (status, response) = send(&f.app, method, path, auth, Vec::new()).await;
            assert_eq!(status, StatusCode::UNAUTHORIZED, "{method} {path} {auth:?}");
            assert_eq!(response.headers()[header::WWW_AUTHENTICATE], "Bearer");
            let body = json_of(response).await;
            assert_eq!(body["error"], "unauthorized");
            assert!(body["message"].as_str().unwrap().contains(message), "{body}");
        }
        // The scheme is case-insensitive, as HTTP says.
        let (status, _) = send(&f.app, "GET", "/jobs", Some(&format!("bearer {TOKEN}")), Vec::new()).await;
        assert_eq!(status, StatusCode::OK);
    }

    #[tokio::test]
    async fn the_catalogue_and_a_call_answer_200_also_for_a_business_failure() {
        let f = fixture();
        let (status, response) = send(&f.app, "GET", "/jobs", Some(&format!("Bearer {TOKEN}")), Vec::new()).await;
        assert_eq!(status, StatusCode::OK);
        let jobs = json_of(response).await;
        assert!(jobs.as_array().unwrap().iter().any(|j| j["name"] == "start_session"), "{jobs}");

        for body in ["", "  \n", "{}", r#"{"arguments": null}"#, r#"{"arguments": {}}"#] {
            let (status, envelope) = post(&f.app, "/jobs/list_installed_task_definitions", body).await;
            assert_eq!(status, StatusCode::OK, "{body:?}: {envelope}");
            assert_eq!(envelope["success"], true);
            assert!(envelope["answer"].as_array().unwrap().iter().any(|t| t["name"] == "shell.run"));
        }
        let (status, envelope) = post(&f.app, "/jobs/get_session", r#"{"arguments": {"session_id": "nope"}}"#).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(envelope["success"], false);
        assert_eq!(envelope["metadata"]["error"], "not_found");
    }

    #[tokio::test]
    async fn a_body_that_is_not_the_request_shape_is_422_invalid_request() {
        let f = fixture();
        let cases = [
            ("not json", "is not JSON"),
            ("[1, 2]", "not an array"),
            (r#""text""#, "not a string"),
            (r#"{"argumets": {}}"#, "unknown field \"argumets\""),
            (r#"{"arguments": 5}"#, "\"arguments\" must be a JSON object, not a number"),
            (r#"{"arguments": [1]}"#, "not an array"),
        ];
        for (body, message) in cases {
            let (status, answer) = post(&f.app, "/jobs/get_session", body).await;
            assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}: {answer}");
            assert_eq!(answer["error"], "invalid_request");
            assert_eq!(answer["job"], "get_session");
            assert!(answer["message"].as_str().unwrap().contains(message), "{body}: {answer}");
        }
    }

    #[tokio::test]
    async fn arguments_that_break_the_schema_are_422_invalid_argument_naming_the_job() {
        let f = fixture();
        let cases = [
            (r#"{"arguments": {}}"#, "missing field `session_id`"),
            (r#"{"arguments": {"session_id": 7}}"#, "invalid type"),
            (r#"{"arguments": {"session_id": "s", "extra": 1}}"#, "unknown field `extra`"),
        ];
        for (body, message) in cases {
            let (status, answer) = post(&f.app, "/jobs/get_session", body).await;
            assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}: {answer}");
            assert_eq!(answer["error"], "invalid_argument");
            assert_eq!(answer["job"], "get_session");
            let text = answer["message"].as_str().unwrap();
            assert!(text.contains("job get_session") && text.contains(message), "{body}: {answer}");
        }
    }

    #[tokio::test]
    async fn unknown_jobs_routes_and_methods_are_404_and_405_with_json() {
        let f = fixture();
        for body in [r#"{"arguments": {}}"#, "not json"] {
            let (status, answer) = post(&f.app, "/jobs/no_such_job", body).await;
            assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
            assert_eq!(answer["error"], "unknown_job");
            assert_eq!(answer["job"], "no_such_job");
        }
        let (status, answer) = post(&f.app, "/jobs/%FF%FE", "{}").await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        assert_eq!(answer["error"], "unknown_job");
        let auth = format!("Bearer {TOKEN}");
        let (status, response) = send(&f.app, "GET", "/nowhere", Some(&auth), Vec::new()).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        assert_eq!(json_of(response).await["error"], "not_found");
        let (status, response) = send(&f.app, "DELETE", "/jobs", Some(&auth), Vec::new()).await;
        assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(json_of(response).await["error"], "method_not_allowed");
    }

    #[tokio::test]
    async fn a_body_over_the_limit_is_413() {
        let f = fixture();
        let mut body = br#"{"arguments": {"session_id": ""#.to_vec();
        body.resize(BODY_LIMIT + 1, b'x');
        let (status, response) =
            send(&f.app, "POST", "/jobs/get_session", Some(&format!("Bearer {TOKEN}")), body).await;
        assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
        assert_eq!(json_of(response).await["error"], "body_too_large");
    }

    #[tokio::test]
    async fn only_127_0_0_1_is_served_and_a_weak_token_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let api = Api::new(ApiOptions { db: dir.path().join("store.db"), work_dir: None, max_parallel: Some(1) });
        for host in ["0.0.0.0", "::1", "192.168.1.10", "127.0.0.2"] {
            let config = ServeConfig { host: host.parse().unwrap(), ..ServeConfig::default() };
            let refused = Server::start(api.clone(), config).await.err().expect(host);
            assert!(matches!(refused, ServeError::NotLoopback(_)), "{host}: {refused}");
            assert!(refused.to_string().contains("127.0.0.1 only"));
        }
        for token in ["short", "a token with spaces in it", "tökentökentökentöken", ""] {
            let config = ServeConfig { token: Some(token.into()), ..ServeConfig::default() };
            let refused = Server::start(api.clone(), config).await.err().expect(token);
            assert!(matches!(refused, ServeError::BadToken), "{token}: {refused}");
        }
        let taken = Server::start(api.clone(), ServeConfig::default()).await.unwrap();
        let config = ServeConfig { port: taken.addr().port(), ..ServeConfig::default() };
        let refused = Server::start(api.clone(), config).await.err().expect("a port in use");
        assert!(matches!(refused, ServeError::Bind { .. }), "{refused}");
        let other = Server::start(api.clone(), ServeConfig::default()).await.unwrap();
        for server in [&taken, &other] {
            assert_eq!(server.token().len(), 64);
            assert!(server.token().bytes().all(|b| b.is_ascii_hexdigit()));
            assert!(server.url().starts_with("http://127.0.0.1:"));
        }
        assert_ne!(taken.token(), other.token(), "a fresh token each start");
        assert!(taken.shutdown().await.is_empty());
        assert!(other.shutdown().await.is_empty());
    }

    fn event(seq: u64, kind: &str) -> Event {
        Event {
            session_id: "s".into(),
            seq,
            global_seq: seq,
            time_ms: 0,
            run_id: None,
            // The stream passes any kind on alike, one this build does not know included.
            payload: EventPayload::Unknown { kind: kind.into(), value: json!({"text": "two\nlines"}) },
        }
    }

    fn frame(event: Event) -> Arc<Frame> {
        Arc::new(Frame::of(&event))
    }

    async fn text_of(stream: impl Stream<Item = Result<SseEvent, Infallible>> + Send + 'static) -> String {
        let body = Sse::new(stream).into_response().into_body().collect().await.unwrap().to_bytes();
        String::from_utf8(body.to_vec()).unwrap()
    }

    #[tokio::test]
    async fn events_are_one_line_json_and_a_lagging_client_is_told_how_many_it_missed() {
        let (sender, receiver) = broadcast::channel(1);
        let (_end, streams_end) = watch::channel(Phase::Serving);
        for seq in 1..=3 {
            sender.send(frame(event(seq, "task_state_changed"))).unwrap();
        }
        drop(sender);
        let text = text_of(event_stream(receiver, streams_end, Vec::new(), 0, 0)).await;
        let data = serde_json::to_string(&event(3, "task_state_changed")).unwrap();
        assert_eq!(
            text,
            format!(
                ": subscribed\n\nevent: lagged\ndata: {{\"missed\":2}}\n\nevent: task_state_changed\nid: 3\ndata: {data}\n\n"
            )
        );
        assert!(!data.contains('\n'));
    }

    #[tokio::test]
    async fn a_resumed_stream_replays_then_goes_on_live_without_repeating_an_event() {
        let (sender, receiver) = broadcast::channel(8);
        let (end, streams_end) = watch::channel(Phase::Serving);
        // Replayed 4 and 5 from the store; live sends 5 again (committed while the store was
        // read), then 6.
        let replay = vec![event(4, "a"), event(5, "b")];
        let reading = tokio::spawn(text_of(event_stream(receiver, streams_end, replay, 0, 5)));
        sender.send(frame(event(5, "b"))).unwrap();
        // A transient event carries the last stored global_seq (5) and is not a repeat.
        sender.send(frame(Event { seq: 0, ..event(5, LOG_GREW) })).unwrap();
        sender.send(frame(event(6, "c"))).unwrap();
        end.send(Phase::StreamsEnded).unwrap();
        let text = reading.await.unwrap();
        let ids: Vec<&str> = text.lines().filter_map(|l| l.strip_prefix("id: ")).collect();
        assert_eq!(ids, ["4", "5", "6"], "{text}");
        let kinds: Vec<&str> = text.lines().filter_map(|l| l.strip_prefix("event: ")).collect();
        assert_eq!(kinds, ["a", "b", LOG_GREW, "c"], "the transient event comes, without an id: {text}");
    }

    #[tokio::test]
    async fn a_replay_cut_at_its_limit_says_how_many_more_there_were() {
        let (sender, receiver) = broadcast::channel(8);
        let (_end, streams_end) = watch::channel(Phase::Serving);
        drop(sender);
        let text = text_of(event_stream(receiver, streams_end, vec![event(1, "a")], 7, 1)).await;
        assert!(text.ends_with("event: lagged\ndata: {\"missed\":7}\n\n"), "{text}");
    }

    #[test]
    fn the_resume_point_comes_from_after_or_last_event_id_and_anything_else_is_refused() {
        let headers = |id: Option<&str>| {
            let mut h = axum::http::HeaderMap::new();
            if let Some(id) = id {
                h.insert("last-event-id", HeaderValue::from_str(id).unwrap());
            }
            h
        };
        let uri = |s: &str| s.parse::<Uri>().unwrap();
        assert_eq!(resume_point(&uri("/events"), &headers(None)), Ok(None));
        assert_eq!(resume_point(&uri("/events?after=12"), &headers(None)), Ok(Some(12)));
        assert_eq!(resume_point(&uri("/events"), &headers(Some("40"))), Ok(Some(40)));
        assert_eq!(resume_point(&uri("/events?after=3"), &headers(Some("40"))), Ok(Some(3)), "the query wins");
        assert!(resume_point(&uri("/events?after=x"), &headers(None)).unwrap_err().contains("`after`"));
        assert!(resume_point(&uri("/events?since=1"), &headers(None)).unwrap_err().contains("since"));
        assert!(resume_point(&uri("/events"), &headers(Some("abc"))).is_err());
    }

    #[tokio::test]
    async fn event_streams_end_when_the_server_says_so() {
        let (sender, receiver) = broadcast::channel(8);
        let (end, streams_end) = watch::channel(Phase::Serving);
        let reading = tokio::spawn(text_of(event_stream(receiver, streams_end, Vec::new(), 0, 0)));
        sender.send(frame(event(1, "session_created"))).unwrap();
        sender.send(frame(event(2, "session_state_changed"))).unwrap();
        end.send(Phase::StreamsEnded).unwrap();
        // The events sent before the end are delivered, however the reader was scheduled.
        let text = reading.await.unwrap();
        let data = |seq, kind| serde_json::to_string(&event(seq, kind)).unwrap();
        assert_eq!(
            text,
            format!(
                ": subscribed\n\nevent: session_created\nid: 1\ndata: {}\n\nevent: session_state_changed\nid: 2\ndata: {}\n\n",
                data(1, "session_created"),
                data(2, "session_state_changed")
            )
        );
        drop(sender);
    }

    #[tokio::test]
    async fn shutdown_cuts_off_a_request_still_in_flight_after_the_grace_with_503() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let dir = tempfile::tempdir().unwrap();
        let api = Api::new(ApiOptions { db: dir.path().join("store.db"), work_dir: None, max_parallel: Some(1) });
        let config = ServeConfig { shutdown_grace: Duration::from_millis(50), ..ServeConfig::default() };
        let server = Server::start(api, config).await.unwrap();
        let mut stream = tokio::net::TcpStream::connect(server.addr()).await.unwrap();
        let head = format!(
            "POST /jobs/get_session HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {}\r\n\
             Content-Length: 100\r\nExpect: 100-continue\r\n\r\n",
            server.token()
        );
        stream.write_all(head.as_bytes()).await.unwrap();
        // `100 Continue` comes when the job's handler starts reading the body: it is in flight.
        let mut seen = Vec::new();
        while !String::from_utf8_lossy(&seen).contains("\r\n\r\n") {
            let mut buffer = [0u8; 256];
            let n = stream.read(&mut buffer).await.unwrap();
            assert!(n > 0, "closed early: {}", String::from_utf8_lossy(&seen));
            seen.extend_from_slice(&buffer[..n]);
        }
        assert!(String::from_utf8_lossy(&seen).starts_with("HTTP/1.1 100 Continue"));
        stream.write_all(b"{\"argu").await.unwrap();
        let stopped = server.shutdown().await;
        assert!(stopped.is_empty());
        let mut rest = Vec::new();
        stream.read_to_end(&mut rest).await.unwrap();
        let rest = String::from_utf8_lossy(&rest);
        assert!(rest.starts_with("HTTP/1.1 503"), "{rest}");
        assert!(rest.contains("\"error\":\"shutting_down\""), "{rest}");
    }

    #[test]
    fn the_connection_cap_keeps_a_quarter_of_the_descriptors_at_least_256_for_the_runner() {
        let cases = [(64, 16), (512, 256), (1024, 768), (2048, 1536), (4096, 3072), (5462, 4096), (20_000, 4096)];
        for (limit, cap) in cases {
            assert_eq!(connection_cap(limit), cap, "{limit}");
        }
        assert_eq!(connection_cap(u64::MAX), MAX_CONNECTIONS);
    }

    #[test]
    fn this_server_is_127_0_0_1_localhost_or_ipv6_loopback_with_its_port_or_none() {
        for good in
            ["127.0.0.1:4000", "localhost:4000", "LocalHost:4000", "[::1]:4000", "127.0.0.1", "localhost", "[::1]"]
        {
            assert!(is_this_server(good, 4000), "{good}");
        }
        for bad in [
            "127.0.0.1:4001",
            "localhost:40000",
            "127.0.0.1:",
            "127.0.0.1:+4000",
            "127.0.0.1:4000:4000",
            "127.0.0.2:4000",
            "evil.example:4000",
            "localhost.evil.example",
            "127.0.0.1.nip.io:4000",
            "[::1",
            "[::1]4000",
            "[::2]:4000",
            "::1",
            "0.0.0.0:4000",
            "",
        ] {
            assert!(!is_this_server(bad, 4000), "{bad}");
        }
    }

    #[tokio::test]
    async fn a_request_to_another_host_name_or_from_a_web_origin_is_refused_before_the_token() {
        let f = fixture();
        let auth = format!("Bearer {TOKEN}");
        for host in ["evil.example", "evil.example:4000", "127.0.0.1:4001", "localhost.evil.example:4000"] {
            for auth in [Some(auth.as_str()), None] {
                let (status, response) = send_with(&f.app, "GET", "/jobs", &[("host", host)], auth, Vec::new()).await;
                assert_eq!(status, StatusCode::MISDIRECTED_REQUEST, "{host} {auth:?}");
                let body = json_of(response).await;
                assert_eq!(body["error"], "wrong_host", "{body}");
                assert!(body["message"].as_str().unwrap().contains(host), "{body}");
            }
        }
        // No Host at all, and an absolute target naming another host.
        let (status, _) = send_with(&f.app, "GET", "/jobs", &[], Some(&auth), Vec::new()).await;
        assert_eq!(status, StatusCode::MISDIRECTED_REQUEST);
        let (status, response) = send_with(
            &f.app,
            "GET",
            "http://evil.example/jobs",
            &[("host", "127.0.0.1:4000")],
            Some(&auth),
            Vec::new(),
        )
        .await;
        assert_eq!(status, StatusCode::MISDIRECTED_REQUEST);
        assert!(json_of(response).await["message"].as_str().unwrap().contains("evil.example"));
        for origin in
            ["http://evil.example", "null", "https://127.0.0.1:4000", "http://127.0.0.1:4001", "http://localhost.evil"]
        {
            let headers = [("host", "127.0.0.1:4000"), ("origin", origin)];
            let (status, response) =
                send_with(&f.app, "POST", "/jobs/get_session", &headers, Some(&auth), Vec::new()).await;
            assert_eq!(status, StatusCode::FORBIDDEN, "{origin}");
            let body = json_of(response).await;
            assert_eq!(body["error"], "wrong_origin", "{body}");
            assert!(body["message"].as_str().unwrap().contains(origin), "{body}");
        }
        for (host, origin) in [
            ("127.0.0.1:4000", None),
            ("localhost:4000", Some("http://localhost:4000")),
            ("[::1]:4000", Some("http://[::1]:4000")),
            ("LOCALHOST", None),
        ] {
            let mut headers = vec![("host", host)];
            headers.extend(origin.map(|o| ("origin", o)));
            let (status, _) = send_with(&f.app, "GET", "/jobs", &headers, Some(&auth), Vec::new()).await;
            assert_eq!(status, StatusCode::OK, "{host} {origin:?}");
        }
    }

    /// A server of its own on a free port, with `config` but a fresh store.
    async fn serving(config: ServeConfig) -> (tempfile::TempDir, Server) {
        let dir = tempfile::tempdir().unwrap();
        let api = Api::new(ApiOptions { db: dir.path().join("store.db"), work_dir: None, max_parallel: Some(1) });
        let server = Server::start(api, config).await.unwrap();
        (dir, server)
    }

    /// Reads until the server closes the connection (or resets it): what it sent.
    async fn read_all(stream: &mut (impl tokio::io::AsyncRead + Unpin)) -> String {
        use tokio::io::AsyncReadExt;
        let mut seen = Vec::new();
        let mut buffer = [0u8; 4096];
        let read = async {
            loop {
                match stream.read(&mut buffer).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => seen.extend_from_slice(&buffer[..n]),
                }
            }
        };
        tokio::time::timeout(Duration::from_secs(120), read).await.expect("the server never closed the connection");
        String::from_utf8_lossy(&seen).into_owned()
    }

    #[tokio::test]
    async fn a_body_over_the_limit_is_413_whatever_its_framing_over_a_real_connection() {
        use tokio::io::AsyncWriteExt;
        let (_dir, server) = serving(ServeConfig::default()).await;
        let chunk = vec![b' '; 64 * 1024];
        let over = BODY_LIMIT / chunk.len() + 1;
        for framing in ["chunked", "content-length"] {
            let stream = TcpStream::connect(server.addr()).await.unwrap();
            let (mut reading, mut writing) = stream.into_split();
            let length = match framing {
                "chunked" => "Transfer-Encoding: chunked".to_string(),
                _ => format!("Content-Length: {}", over * chunk.len()),
            };
            let head = format!(
                "POST /jobs/get_session HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\nConnection: close\r\n\
                 {length}\r\n\r\n",
                server.addr(),
                server.token()
            );
            let chunk = chunk.clone();
            let framing_ = framing;
            // The whole body is sent, as a client that reads the answer only then would.
            let writer = tokio::spawn(async move {
                writing.write_all(head.as_bytes()).await?;
                for _ in 0..over {
                    if framing_ == "chunked" {
                        writing.write_all(format!("{:x}\r\n", chunk.len()).as_bytes()).await?;
                        writing.write_all(&chunk).await?;
                        writing.write_all(b"\r\n").await?;
                    } else {
                        writing.write_all(&chunk).await?;
                    }
                }
                if framing_ == "chunked" {
                    writing.write_all(b"0\r\n\r\n").await?;
                }
                // Not shut down: hyper takes a client that half-closes before its answer for
                // one that went away.
                Ok::<_, io::Error>(writing)
            });
            let answer = read_all(&mut reading).await;
            writer.await.unwrap().unwrap();
            assert!(answer.starts_with("HTTP/1.1 413"), "{framing}: {}", &answer[..answer.len().min(300)]);
            assert!(answer.contains("\"error\":\"body_too_large\""), "{framing}: {answer}");
        }
        server.shutdown().await;
    }

    #[tokio::test]
    async fn silent_and_slow_header_connections_are_closed_by_the_header_timeout() {
        use tokio::io::AsyncWriteExt;
        let timeout = Duration::from_millis(300);
        let (_dir, server) = serving(ServeConfig { header_timeout: timeout, ..ServeConfig::default() }).await;
        // Silent.
        let began = std::time::Instant::now();
        let mut silent = TcpStream::connect(server.addr()).await.unwrap();
        let answer = read_all(&mut silent).await;
        println!("a silent connection closed after {:?} (header timeout {timeout:?})", began.elapsed());
        assert!(!answer.contains("HTTP/1.1 200"), "{answer}");
        // A byte of the head every 50 ms, for ever.
        let began = std::time::Instant::now();
        let slow = TcpStream::connect(server.addr()).await.unwrap();
        let (mut reading, mut writing) = slow.into_split();
        let dripping = tokio::spawn(async move {
            writing.write_all(b"GET /jobs HTTP/1.1\r\nX-Slow: ").await?;
            loop {
                tokio::time::sleep(Duration::from_millis(50)).await;
                writing.write_all(b"a").await?;
            }
            #[allow(unreachable_code)]
            Ok::<(), io::Error>(())
        });
        read_all(&mut reading).await;
        println!("a slow-header connection closed after {:?}", began.elapsed());
        dripping.abort();
        // Idle after an answer (keep-alive): closed by the same timeout.
        let mut idle = TcpStream::connect(server.addr()).await.unwrap();
        let request = format!(
            "GET /jobs HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\n\r\n",
            server.addr(),
            server.token()
        );
        idle.write_all(request.as_bytes()).await.unwrap();
        let answer = read_all(&mut idle).await;
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        server.shutdown().await;
    }

    #[tokio::test]
    async fn an_event_stream_outlives_the_header_timeout() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let timeout = Duration::from_millis(200);
        let (_dir, server) = serving(ServeConfig { header_timeout: timeout, ..ServeConfig::default() }).await;
        let mut stream = TcpStream::connect(server.addr()).await.unwrap();
        let request = format!(
            "GET /events HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\n\r\n",
            server.addr(),
            server.token()
        );
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut seen = Vec::new();
        while !String::from_utf8_lossy(&seen).contains(": subscribed") {
            let mut buffer = [0u8; 1024];
            let n = stream.read(&mut buffer).await.unwrap();
            assert!(n > 0, "closed: {}", String::from_utf8_lossy(&seen));
            seen.extend_from_slice(&buffer[..n]);
        }
        // Five header timeouts later it is still open: the timeout bounds waiting for a request,
        // not an answer being streamed.
        let mut buffer = [0u8; 1024];
        let waited = tokio::time::timeout(timeout * 5, stream.read(&mut buffer)).await;
        assert!(waited.is_err(), "the stream was closed or sent something: {waited:?}");
        // It ends with the server.
        server.shutdown().await;
        read_all(&mut stream).await;
    }

    #[tokio::test]
    async fn a_body_that_does_not_arrive_in_time_is_408() {
        use tokio::io::AsyncWriteExt;
        let config = ServeConfig { body_timeout: Duration::from_millis(300), ..ServeConfig::default() };
        let (_dir, server) = serving(config).await;
        let mut stream = TcpStream::connect(server.addr()).await.unwrap();
        let head = format!(
            "POST /jobs/get_session HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\nContent-Length: 100\r\n\r\n{{\"arg",
            server.addr(),
            server.token()
        );
        stream.write_all(head.as_bytes()).await.unwrap();
        let answer = read_all(&mut stream).await;
        assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
        assert!(answer.contains("\"error\":\"body_timeout\""), "{answer}");
        server.shutdown().await;
    }

    #[tokio::test]
    async fn connections_beyond_the_cap_are_closed_at_once_and_served_again_once_one_goes() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let (_dir, server) = serving(ServeConfig { max_connections: 2, ..ServeConfig::default() }).await;
        let request = format!(
            "GET /jobs HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\n\r\n",
            server.addr(),
            server.token()
        );
        // Two held (one answered and kept alive, one silent).
        let mut first = TcpStream::connect(server.addr()).await.unwrap();
        first.write_all(request.as_bytes()).await.unwrap();
        let mut buffer = [0u8; 64];
        let n = first.read(&mut buffer).await.unwrap();
        assert!(buffer[..n].starts_with(b"HTTP/1.1 200"));
        let second = TcpStream::connect(server.addr()).await.unwrap();
        // The third is closed without an answer.
        let mut third = TcpStream::connect(server.addr()).await.unwrap();
        let _ = third.write_all(request.as_bytes()).await;
        assert_eq!(read_all(&mut third).await, "", "beyond the cap");
        // Once one goes, a new one is served.
        drop(second);
        let began = std::time::Instant::now();
        loop {
            let mut next = TcpStream::connect(server.addr()).await.unwrap();
            let _ = next.write_all(request.replace("\r\n\r\n", "\r\nConnection: close\r\n\r\n").as_bytes()).await;
            if read_all(&mut next).await.starts_with("HTTP/1.1 200") {
                break;
            }
            assert!(began.elapsed() < Duration::from_secs(120), "never served again");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        println!("served again {:?} after a connection went", began.elapsed());
        drop(first);
        server.shutdown().await;
    }
}
