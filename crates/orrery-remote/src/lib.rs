//! A client of an antikythera server's HTTP API (docs/format.md §5): what Orrery asks of a
//! server (upload a blueprint, start and control a session, follow it), and the server's own
//! answer when it refuses.
//!
//! HTTP/1.1 over plain TCP (`http://host:port`, as servers listen on a LAN) or TLS
//! (`https://`, behind a reverse proxy): rustls, the system's root certificates (`SSL_CERT_FILE`
//! or `SSL_CERT_DIR` name others, as for curl); a certificate that is not trusted is an error
//! that says so. A token, when the server is configured with one, goes as `Authorization:
//! Bearer`. Every request has a deadline ([`TIMEOUT`]): a server that went away is an error,
//! never a hang.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{header, Method, Request, StatusCode, Uri};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use hyper_util::rt::TokioExecutor;
use orrery_blueprint::FailureCode;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The longest a request may take, connection included.
pub const TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum RemoteError {
    #[error("{url} is not a server address: {why}")]
    BadAddress { url: String, why: String },
    #[error("the server at {url} cannot be reached: {why}")]
    Unreachable { url: String, why: String },
    /// The server answered no, with its reasons: a blueprint's problems, a session it does not know.
    #[error("the server refused ({status}): {message}")]
    Refused { status: u16, message: String, problems: Vec<String> },
    /// The server failed on its side (a 5xx): nothing was refused, the same request may pass later.
    #[error("the server failed ({status}): {message}")]
    ServerFailed { status: u16, message: String },
    #[error("the server answered {status} with something Orrery cannot read: {body}")]
    Unexpected { status: u16, body: String },
}

impl RemoteError {
    /// A stable code for the facade's failures.
    pub fn code(&self) -> FailureCode {
        match self {
            RemoteError::BadAddress { .. } => FailureCode::InvalidArgument,
            RemoteError::Unreachable { .. } => FailureCode::Unreachable,
            RemoteError::Refused { .. } => FailureCode::Refused,
            RemoteError::ServerFailed { .. } | RemoteError::Unexpected { .. } => FailureCode::Remote,
        }
    }
}

/// What a server said to an upload it accepted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Uploaded {
    pub blueprint_id: String,
    pub message: String,
}

/// A session's data on the server (`GET /sessions/{id}/data`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SessionData {
    /// The root blueprint's.
    pub root: Map<String, Value>,
    /// Each inner instance's, by its id.
    pub inner: Vec<(String, Map<String, Value>)>,
}

/// A session as the server lists it (`GET /sessions`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RemoteSession {
    pub session_id: String,
    pub blueprint_id: String,
    /// pending, running, completed, failed, stopped (the server's spelling).
    pub state: String,
    /// ISO 8601, UTC.
    pub started_at: Option<String>,
    pub ended_at: Option<String>,
}

impl RemoteSession {
    /// Whether it has ended: completed, failed or stopped.
    pub fn ended(&self) -> bool {
        ended(&self.state)
    }
}

/// Whether a session state is terminal.
pub fn ended(state: &str) -> bool {
    matches!(state.to_ascii_lowercase().as_str(), "completed" | "failed" | "stopped")
}

/// What the server says to a session action: the session (a new one for a restart) and a message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SessionAnswer {
    pub session_id: String,
    pub message: String,
}

/// One event of a session's stream (`GET /sessions/{id}/stream`): `task_state_changed`
/// `{blueprint_id, task_id, state}`, `session_state_changed` `{state}` or `datastore_updated`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RemoteEvent {
    pub event: String,
    pub data: Value,
}

/// One antikythera server.
#[derive(Clone)]
pub struct Server {
    /// Its address without a trailing slash, as given.
    url: String,
    token: Option<String>,
    client: Client<HttpsConnector<HttpConnector>, Full<Bytes>>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The token stays out of logs and messages.
        f.debug_struct("Server").field("url", &self.url).field("token", &self.token.as_ref().map(|_| "…")).finish()
    }
}

impl Server {
    /// A server at `url` (`http://host:port`, perhaps with a path prefix).
    pub fn new(url: &str, token: Option<String>) -> Result<Server, RemoteError> {
        let trimmed = url.trim().trim_end_matches('/');
        let bad = |why: &str| RemoteError::BadAddress { url: url.to_string(), why: why.to_string() };
        let base: Uri = trimmed.parse().map_err(|e| bad(&format!("{e}")))?;
        if !matches!(base.scheme_str(), Some("http" | "https")) {
            return Err(bad("it must start with http:// or https://"));
        }
        if base.host().is_none_or(str::is_empty) {
            return Err(bad("it names no host"));
        }
        let tls = tls_config().map_err(|why| bad(&why))?;
        let connector =
            hyper_rustls::HttpsConnectorBuilder::new().with_tls_config(tls).https_or_http().enable_http1().build();
        let client = Client::builder(TokioExecutor::new()).build(connector);
        Ok(Server { url: trimmed.to_string(), token: token.filter(|t| !t.is_empty()), client })
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    /// `POST /blueprints/upload`: the blueprint's JSON text as the multipart file `file_name`
    /// (which must end in `.json`, as the server checks).
    pub async fn upload(&self, file_name: &str, text: &str) -> Result<Uploaded, RemoteError> {
        let boundary = format!("orrery-{:x}", fnv(text.as_bytes()));
        let name = file_name.replace(['"', '\r', '\n'], "_");
        let mut body = Vec::with_capacity(text.len() + 256);
        body.extend_from_slice(format!("--{boundary}\r\n").as_bytes());
        body.extend_from_slice(
            format!("Content-Disposition: form-data; name=\"file\"; filename=\"{name}\"\r\n").as_bytes(),
        );
        body.extend_from_slice(b"Content-Type: application/json\r\n\r\n");
        body.extend_from_slice(text.as_bytes());
        body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
        let content_type = format!("multipart/form-data; boundary={boundary}");
        let (status, answer) = self.send(Method::POST, "/blueprints/upload", Some((content_type, body))).await?;
        expect(status, answer)
    }

    /// `POST /blueprints/start`: a new session of a blueprint the server holds, pending until
    /// [`Server::resume`] starts it (the server's "preview" mode). Params go as text, as the
    /// server takes them.
    pub async fn create_session(
        &self,
        blueprint_id: &str,
        params: &serde_json::Map<String, Value>,
        name: Option<&str>,
    ) -> Result<SessionAnswer, RemoteError> {
        let params: serde_json::Map<String, Value> = params
            .iter()
            .map(|(k, v)| (k.clone(), Value::String(v.as_str().map_or_else(|| v.to_string(), str::to_string))))
            .collect();
        let mut body = serde_json::json!({"blueprint_id": blueprint_id, "params": params});
        if let Some(name) = name {
            body["session_name"] = Value::String(name.to_string());
        }
        self.post_json("/blueprints/start", &body).await
    }

    /// `POST /sessions/{id}/start`: runs a pending session, or resumes a paused, stopped or failed one.
    pub async fn resume(&self, session_id: &str) -> Result<SessionAnswer, RemoteError> {
        self.post_json(&format!("/sessions/{}/start", segment(session_id)), &serde_json::json!({})).await
    }

    /// `POST /sessions/{id}/pause`.
    pub async fn pause(&self, session_id: &str) -> Result<SessionAnswer, RemoteError> {
        self.post_json(&format!("/sessions/{}/pause", segment(session_id)), &serde_json::json!({})).await
    }

    /// `POST /sessions/{id}/stop`.
    pub async fn stop(&self, session_id: &str) -> Result<SessionAnswer, RemoteError> {
        self.post_json(&format!("/sessions/{}/stop", segment(session_id)), &serde_json::json!({})).await
    }

    /// `POST /sessions/{id}/restart`: a new session of the same blueprint (its id in the answer).
    pub async fn restart(&self, session_id: &str) -> Result<SessionAnswer, RemoteError> {
        self.post_json(&format!("/sessions/{}/restart", segment(session_id)), &serde_json::json!({})).await
    }

    /// `POST /sessions/{id}/tasks/reset`: a task of a paused, stopped or failed session back to
    /// PENDING (with what runs after it when `downstream`; its outputs cleared when `clear_outputs`).
    pub async fn reset_task(
        &self,
        session_id: &str,
        blueprint_id: &str,
        task_id: &str,
        downstream: bool,
        clear_outputs: bool,
    ) -> Result<SessionAnswer, RemoteError> {
        let body = serde_json::json!({"blueprint_id": blueprint_id, "task_id": task_id, "include_downstream": downstream, "clear_outputs": clear_outputs});
        self.post_json(&format!("/sessions/{}/tasks/reset", segment(session_id)), &body).await
    }

    /// `POST /sessions/{id}/tasks/skip`: a task skipped when it would start.
    pub async fn skip_task(
        &self,
        session_id: &str,
        blueprint_id: &str,
        task_id: &str,
    ) -> Result<SessionAnswer, RemoteError> {
        let body = serde_json::json!({"blueprint_id": blueprint_id, "task_id": task_id});
        self.post_json(&format!("/sessions/{}/tasks/skip", segment(session_id)), &body).await
    }

    /// `POST /sessions/{id}/scopes/{name}/reset`: a scope's tasks back to PENDING, its counter to 0.
    pub async fn reset_scope(&self, session_id: &str, scope: &str) -> Result<SessionAnswer, RemoteError> {
        self.post_json(
            &format!("/sessions/{}/scopes/{}/reset", segment(session_id), segment(scope)),
            &serde_json::json!({}),
        )
        .await
    }

    /// `GET /sessions`: the server's sessions, at most `limit` (1..=1000).
    pub async fn sessions(&self, limit: u32) -> Result<Vec<RemoteSession>, RemoteError> {
        let (status, answer) =
            self.send(Method::GET, &format!("/sessions?limit={}", limit.clamp(1, 1000)), None).await?;
        expect(status, answer)
    }

    /// One session, from the server's list (the server has no smaller answer with its state).
    pub async fn session(&self, session_id: &str) -> Result<RemoteSession, RemoteError> {
        self.sessions(1000).await?.into_iter().find(|s| s.session_id == session_id).ok_or_else(|| {
            RemoteError::Refused {
                status: 404,
                message: format!("the server has no session {session_id}"),
                problems: Vec::new(),
            }
        })
    }

    /// `GET /sessions/{id}`: the whole session as the server keeps it (a COMPAS envelope whose
    /// `data` holds `blueprint` and `inner_blueprints` with every task's state, `state`,
    /// `params`, `last_task_error`, ...).
    pub async fn snapshot(&self, session_id: &str) -> Result<Value, RemoteError> {
        let (status, answer) = self.send(Method::GET, &format!("/sessions/{}", segment(session_id)), None).await?;
        expect(status, answer)
    }

    /// `GET /sessions/{id}/data`: the session's data as the server stores it, each value
    /// unwrapped from the server's `{"value", "type"}`.
    pub async fn session_data(&self, session_id: &str) -> Result<SessionData, RemoteError> {
        let (status, body) = self.send(Method::GET, &format!("/sessions/{}/data", segment(session_id)), None).await?;
        let answer: Value = expect(status, body)?;
        // `data` is the JSON text of {"main_blueprint": {...}, "inner_blueprints": {id: {...}}}.
        let data: Value = match &answer["data"] {
            Value::String(text) => orrery_blueprint::json::from_str(text)
                .map_err(|_| RemoteError::Unexpected { status: status.as_u16(), body: answer.to_string() })?,
            other => other.clone(),
        };
        let values = |instance: &Value| -> Map<String, Value> {
            let entries = instance.as_object().into_iter().flatten();
            entries.map(|(k, v)| (k.clone(), v.get("value").cloned().unwrap_or_else(|| v.clone()))).collect()
        };
        let inner = data["inner_blueprints"].as_object().into_iter().flatten();
        Ok(SessionData {
            root: values(&data["main_blueprint"]),
            inner: inner.map(|(id, instance)| (id.clone(), values(instance))).collect(),
        })
    }

    /// `GET /sessions/{id}/stream`: the session's events as they come, until the server closes
    /// the stream (it does at a terminal state) or the receiver is dropped. The server sends no
    /// snapshot first: open it before starting the session, or read the state after.
    pub async fn follow(
        &self,
        session_id: &str,
    ) -> Result<tokio::sync::mpsc::Receiver<Result<RemoteEvent, RemoteError>>, RemoteError> {
        let request =
            self.request(Method::GET, &format!("/sessions/{}/stream", segment(session_id)), "text/event-stream", None)?;
        let unreachable = |why: String| RemoteError::Unreachable { url: self.url.clone(), why };
        let response = tokio::time::timeout(TIMEOUT, self.client.request(request))
            .await
            .map_err(|_| unreachable(format!("no answer within {} s", TIMEOUT.as_secs())))?
            .map_err(|e| unreachable(describe(&e)))?;
        let status = response.status();
        if !status.is_success() {
            let body = response.into_body().collect().await.map_err(|e| unreachable(e.to_string()))?.to_bytes();
            return Err(expect::<Value>(status, body)
                .err()
                .unwrap_or(RemoteError::Unexpected { status: status.as_u16(), body: String::new() }));
        }
        let (tx, rx) = tokio::sync::mpsc::channel(256);
        let url = self.url.clone();
        let mut body = response.into_body();
        tokio::spawn(async move {
            let mut events = SseParser::default();
            while let Some(frame) = body.frame().await {
                let chunk = match frame {
                    Ok(frame) => frame.into_data().unwrap_or_default(),
                    Err(e) => {
                        let _ = tx
                            .send(Err(RemoteError::Unreachable {
                                url: url.clone(),
                                why: format!("the stream broke: {e}"),
                            }))
                            .await;
                        return;
                    }
                };
                for event in events.push(&chunk) {
                    if tx.send(Ok(event)).await.is_err() {
                        return;
                    }
                }
            }
        });
        Ok(rx)
    }

    async fn post_json<T: serde::de::DeserializeOwned>(&self, path: &str, body: &Value) -> Result<T, RemoteError> {
        let (status, answer) =
            self.send(Method::POST, path, Some(("application/json".into(), body.to_string().into_bytes()))).await?;
        expect(status, answer)
    }

    /// `GET /blueprints`: the blueprints the server holds (also a check that it answers).
    pub async fn blueprints(&self) -> Result<Vec<Value>, RemoteError> {
        let (status, answer) = self.send(Method::GET, "/blueprints", None).await?;
        expect(status, answer)
    }

    /// A request to `path` of the server, its token with it.
    fn request(
        &self,
        method: Method,
        path: &str,
        accept: &str,
        body: Option<(String, Vec<u8>)>,
    ) -> Result<Request<Full<Bytes>>, RemoteError> {
        let bad = |why: String| RemoteError::BadAddress { url: self.url.clone(), why };
        let uri: Uri = format!("{}{path}", self.url).parse().map_err(|e| bad(format!("{e}")))?;
        let mut request = Request::builder().method(method).uri(uri).header(header::ACCEPT, accept);
        if let Some(token) = &self.token {
            request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
        }
        match body {
            Some((content_type, bytes)) => {
                request.header(header::CONTENT_TYPE, content_type).body(Full::new(Bytes::from(bytes)))
            }
            None => request.body(Full::new(Bytes::new())),
        }
        .map_err(|e| bad(e.to_string()))
    }

    async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<(String, Vec<u8>)>,
    ) -> Result<(StatusCode, Bytes), RemoteError> {
        let request = self.request(method, path, "application/json", body)?;
        let unreachable = |why: String| RemoteError::Unreachable { url: self.url.clone(), why };
        let exchange = async {
            let response = self.client.request(request).await.map_err(|e| unreachable(describe(&e)))?;
            let status = response.status();
            let bytes = response.into_body().collect().await.map_err(|e| unreachable(e.to_string()))?.to_bytes();
            Ok((status, bytes))
        };
        tokio::time::timeout(TIMEOUT, exchange)
            .await
            .map_err(|_| unreachable(format!("no answer within {} s", TIMEOUT.as_secs())))?
    }
}

/// The answer of a successful request, or the server's refusal: FastAPI's `{"detail": ...}`,
/// where the detail is a message, `{message, problems}` (an upload's dataflow problems) or a
/// list of schema errors (422).
fn expect<T: serde::de::DeserializeOwned>(status: StatusCode, body: Bytes) -> Result<T, RemoteError> {
    let text = || String::from_utf8_lossy(&body).chars().take(2_000).collect::<String>();
    if status.is_success() {
        return orrery_blueprint::json::from_slice(&body)
            .map_err(|_| RemoteError::Unexpected { status: status.as_u16(), body: text() });
    }
    let detail = orrery_blueprint::json::from_slice::<Value>(&body).ok().and_then(|v| v.get("detail").cloned());
    if status.is_server_error() {
        let message = match detail {
            Some(Value::String(message)) => message,
            _ => text(),
        };
        return Err(RemoteError::ServerFailed { status: status.as_u16(), message });
    }
    let (message, problems) = match detail {
        Some(Value::String(message)) => (message, Vec::new()),
        Some(Value::Object(d)) => (
            d.get("message").and_then(Value::as_str).unwrap_or("no message").to_string(),
            d.get("problems")
                .and_then(Value::as_array)
                .map(|p| p.iter().map(|p| p.as_str().map_or_else(|| p.to_string(), str::to_string)).collect())
                .unwrap_or_default(),
        ),
        Some(Value::Array(errors)) => (
            "the request does not fit the server's schema".to_string(),
            errors
                .iter()
                .map(|e| e.get("msg").and_then(Value::as_str).map_or_else(|| e.to_string(), str::to_string))
                .collect(),
        ),
        _ if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN => {
            ("the token was refused: check the server's token".to_string(), Vec::new())
        }
        _ => return Err(RemoteError::Unexpected { status: status.as_u16(), body: text() }),
    };
    Err(RemoteError::Refused { status: status.as_u16(), message, problems })
}

/// A session id as one segment of a path: anything but what ids are made of is escaped.
fn segment(id: &str) -> String {
    id.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b == b'-' || b == b'_' {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// Server-Sent Events (`event: <kind>` / `data: <json>` lines, a blank line ends one) from
/// chunks cut anywhere, a line or a character included.
#[derive(Default)]
pub struct SseParser {
    pending: Vec<u8>,
    event: Option<String>,
    data: Vec<String>,
}

impl SseParser {
    /// The events `chunk` completes.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<RemoteEvent> {
        self.pending.extend_from_slice(chunk);
        let mut out = Vec::new();
        while let Some(end) = self.pending.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.pending.drain(..=end).collect();
            let line = String::from_utf8_lossy(&line);
            let line = line.trim_end_matches(['\n', '\r']);
            if line.is_empty() {
                if !self.data.is_empty() || self.event.is_some() {
                    let text = std::mem::take(&mut self.data).join("\n");
                    let data = orrery_blueprint::json::from_str(&text).unwrap_or(Value::String(text));
                    out.push(RemoteEvent { event: self.event.take().unwrap_or_else(|| "message".into()), data });
                }
            } else if let Some(kind) = line.strip_prefix("event:") {
                self.event = Some(kind.trim().to_string());
            } else if let Some(data) = line.strip_prefix("data:") {
                self.data.push(data.strip_prefix(' ').unwrap_or(data).to_string());
            }
            // Comments (`:`) and other fields (`id:`, `retry:`) say nothing Orrery uses.
        }
        out
    }
}

/// What went wrong on the way, the innermost cause included (hyper's own message is terse).
/// The TLS settings of every server: the system's roots, read once.
fn tls_config() -> Result<rustls::ClientConfig, String> {
    static CONFIG: std::sync::OnceLock<Result<rustls::ClientConfig, String>> = std::sync::OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let mut roots = rustls::RootCertStore::empty();
            let found = rustls_native_certs::load_native_certs();
            let (added, _) = roots.add_parsable_certificates(found.certs);
            if added == 0 {
                let why = found.errors.first().map(|e| format!(": {e}")).unwrap_or_default();
                return Err(format!("no root certificate of this system can be read for https{why}"));
            }
            let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
            Ok(rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .map_err(|e| e.to_string())?
                .with_root_certificates(roots)
                .with_no_client_auth())
        })
        .clone()
}

fn describe(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    if text.contains("invalid peer certificate") {
        text.push_str(" (no root this system trusts vouches for it: SSL_CERT_FILE names another)");
    }
    text
}

/// A multipart boundary that the content cannot hold by chance (FNV-1a of the content).
fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3))
}
