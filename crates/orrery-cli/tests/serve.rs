//! `orrery serve` as a black box: the real binary on a free port of 127.0.0.1, a real store,
//! spoken to over plain HTTP/1.1 written by hand on a `TcpStream`.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A guard against a hung server: no assertion depends on it.
const HANG: Duration = Duration::from_secs(120);

struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("serve-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }
    fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.0.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A running `orrery serve`; killed if a test fails before it stops it.
struct Serving {
    child: Option<Child>,
    /// `127.0.0.1:PORT`
    addr: String,
    token: String,
}

impl Serving {
    fn start(db: &Path, dir: &Path, token: Option<&str>) -> Serving {
        Serving::start_with(db, dir, &[], token)
    }

    /// With more arguments of `orrery serve`, and `token` as `ORRERY_TOKEN`.
    fn start_with(db: &Path, dir: &Path, args: &[&str], token: Option<&str>) -> Serving {
        let mut command = Command::new(env!("CARGO_BIN_EXE_orrery"));
        command
            .args(["serve", "--port", "0", "--db", db.to_str().unwrap()])
            .args(args)
            .current_dir(dir)
            .env_remove("ORRERY_TOKEN")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(token) = token {
            command.env("ORRERY_TOKEN", token);
        }
        let mut child = command.spawn().unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        // orrery serve: http://127.0.0.1:PORT token TOKEN
        let words: Vec<&str> = line.split_whitespace().collect();
        assert_eq!((words.len(), words[0], words[3]), (5, "orrery", "token"), "{line}");
        let addr = words[2].strip_prefix("http://").unwrap_or_else(|| panic!("{line}")).to_string();
        assert!(addr.starts_with("127.0.0.1:"), "{line}");
        Serving { child: Some(child), addr, token: words[4].to_string() }
    }

    fn bearer(&self) -> String {
        format!("Bearer {}", self.token)
    }

    /// A request with the right token.
    fn call(&self, method: &str, path: &str, body: Option<&str>) -> Reply {
        request(&self.addr, method, path, Some(&self.bearer()), body)
    }

    fn job(&self, name: &str, arguments: Value) -> Reply {
        self.call("POST", &format!("/jobs/{name}"), Some(&json!({ "arguments": arguments }).to_string()))
    }

    /// SIGINT, as Ctrl-C; answers the exit code and what it wrote on stderr.
    fn interrupt(self) -> (Option<i32>, String) {
        self.signal("-INT")
    }

    fn signal(mut self, signal: &str) -> (Option<i32>, String) {
        let mut child = self.child.take().unwrap();
        let sent = Command::new("kill").args([signal, &child.id().to_string()]).status().unwrap();
        assert!(sent.success());
        let status = child.wait().unwrap();
        let mut stderr = String::new();
        child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
        (status.code(), stderr)
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

struct Reply {
    status: u16,
    head: String,
    body: Vec<u8>,
}

impl Reply {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("{e}: {}\n{}", self.head, String::from_utf8_lossy(&self.body)))
    }
    fn header(&self, name: &str) -> Option<String> {
        self.head.lines().skip(1).find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.eq_ignore_ascii_case(name).then(|| value.trim().to_string())
        })
    }
}

fn connect(addr: &str) -> TcpStream {
    let stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(HANG)).unwrap();
    stream
}

fn request(addr: &str, method: &str, path: &str, auth: Option<&str>, body: Option<&str>) -> Reply {
    let mut stream = connect(addr);
    let mut text = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    if let Some(auth) = auth {
        text.push_str(&format!("Authorization: {auth}\r\n"));
    }
    let body = body.unwrap_or("");
    text.push_str(&format!("Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}", body.len()));
    stream.write_all(text.as_bytes()).unwrap();
    let mut reader = BufReader::new(stream);
    let head = read_head(&mut reader);
    let status = head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or_else(|| panic!("{head}"));
    let mut reply = Reply { status, head, body: Vec::new() };
    if reply.header("transfer-encoding").is_some_and(|t| t.eq_ignore_ascii_case("chunked")) {
        while let Some(chunk) = read_chunk(&mut reader) {
            reply.body.extend(chunk);
        }
    } else {
        reader.read_to_end(&mut reply.body).unwrap();
    }
    reply
}

/// The status line and headers, up to the blank line.
fn read_head(reader: &mut impl BufRead) -> String {
    let mut head = String::new();
    loop {
        let mut line = String::new();
        assert!(reader.read_line(&mut line).unwrap() > 0, "the connection closed in the head: {head}");
        if line == "\r\n" {
            return head;
        }
        head.push_str(&line);
    }
}

/// One chunk of a chunked body; `None` after the last.
fn read_chunk(reader: &mut impl BufRead) -> Option<Vec<u8>> {
    let mut size = String::new();
    if reader.read_line(&mut size).unwrap() == 0 {
        return None;
    }
    let size = usize::from_str_radix(size.trim(), 16).unwrap_or_else(|e| panic!("{e}: chunk size {size:?}"));
    let mut chunk = vec![0; size + 2];
    reader.read_exact(&mut chunk).unwrap();
    assert_eq!(&chunk[size..], b"\r\n");
    chunk.truncate(size);
    (size > 0).then_some(chunk)
}

/// `GET /events`, read line by line.
struct Events {
    reader: BufReader<TcpStream>,
    pending: String,
}

impl Events {
    /// Opens the stream and reads up to its `: subscribed` comment: from then on it sees every
    /// event.
    fn open(serving: &Serving) -> Events {
        Events::open_at(serving, "/events")
    }

    fn open_at(serving: &Serving, path: &str) -> Events {
        let events = Events::request(serving, "GET", path, None);
        events.expect_subscribed()
    }

    /// Sends the request and reads the response head: an event stream.
    fn request(serving: &Serving, method: &str, path: &str, body: Option<&str>) -> Events {
        let mut stream = connect(&serving.addr);
        let body = body.unwrap_or("");
        let text = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nAuthorization: {}\r\nAccept: text/event-stream\r\n\
             Content-Length: {}\r\n\r\n{body}",
            serving.addr,
            serving.bearer(),
            body.len()
        );
        stream.write_all(text.as_bytes()).unwrap();
        let mut reader = BufReader::new(stream);
        let head = read_head(&mut reader);
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        assert!(head.to_ascii_lowercase().contains("content-type: text/event-stream"), "{head}");
        Events { reader, pending: String::new() }
    }

    fn expect_subscribed(mut self) -> Events {
        assert_eq!(self.line().as_deref(), Some(": subscribed"));
        assert_eq!(self.line().as_deref(), Some(""));
        self
    }

    /// The next line of the stream; `None` once it ended.
    fn line(&mut self) -> Option<String> {
        while !self.pending.contains('\n') {
            let chunk = read_chunk(&mut self.reader)?;
            self.pending.push_str(std::str::from_utf8(&chunk).unwrap());
        }
        let end = self.pending.find('\n').unwrap();
        let line = self.pending[..end].to_string();
        self.pending.drain(..=end);
        Some(line)
    }

    /// The next SSE event, `(kind, id, data)`, skipping comments; each must be `event: KIND`,
    /// perhaps `id: N`, one `data: JSON` line, then a blank line. `None` once the stream ended.
    fn next_sse(&mut self) -> Option<(String, Option<u64>, Value)> {
        loop {
            let first = self.line()?;
            if first.starts_with(':') {
                assert_eq!(self.line().as_deref(), Some(""), "a comment stands alone");
                continue;
            }
            let kind = first.strip_prefix("event: ").unwrap_or_else(|| panic!("not an event line: {first:?}"));
            let mut line = self.line().expect("an id or data line");
            let mut id = None;
            if let Some(given) = line.strip_prefix("id: ") {
                id = Some(given.parse().unwrap_or_else(|_| panic!("not an id line: {line:?}")));
                line = self.line().expect("a data line");
            }
            let data = line.strip_prefix("data: ").unwrap_or_else(|| panic!("not a data line: {line:?}"));
            let data: Value = serde_json::from_str(data).unwrap_or_else(|e| panic!("{e}: {data}"));
            assert_eq!(self.line().as_deref(), Some(""), "one data line per event");
            return Some((kind.to_string(), id, data));
        }
    }

    /// The next event of `/events`, `(kind, data)`: a stored event has its `global_seq` as its
    /// id; a transient `log_grew` has none. `None` once the stream ended.
    fn next(&mut self) -> Option<(String, Value)> {
        let (kind, id, data) = self.next_sse()?;
        assert_eq!(data["kind"], kind);
        if kind == "log_grew" {
            assert_eq!((id, data["seq"].as_u64()), (None, Some(0)), "a transient event has no id");
        } else {
            assert_eq!(Some(data["global_seq"].as_u64().unwrap()), id, "the id is the event's global_seq");
        }
        Some((kind, data))
    }

    /// Events of `/events` until the first for which `done` holds (included).
    fn until(&mut self, done: impl Fn(&str, &Value) -> bool) -> Vec<(String, Value)> {
        let mut seen = Vec::new();
        while let Some((kind, data)) = self.next() {
            let last = done(&kind, &data);
            seen.push((kind, data));
            if last {
                return seen;
            }
        }
        panic!("the stream ended before the event waited for: {seen:?}");
    }

    /// Events up to and including the session's change to `state`.
    fn until_session(&mut self, session: &str, state: &str) -> Vec<(String, Value)> {
        self.until(|kind, data| {
            kind == "session_state_changed"
                && data["session_id"] == session
                && data["payload"]["value"]["state"] == state
        })
    }
}

const QUICK: &str = r#"{"id":"x","name":"x","version":"1.0","tasks":[
  {"id":"start","type":"system.start"},
  {"id":"a","type":"shell.run","params":[{"name":"command","value":"sleep 0.2"}],"depends_on":[{"id":"start"}]},
  {"id":"end","type":"system.end","depends_on":[{"id":"a"}]}]}"#;

#[test]
fn serve_answers_jobs_over_http_behind_a_token_and_streams_session_events() {
    let s = Scratch::new("jobs");
    let blueprint = s.write("quick.json", QUICK);
    let serving = Serving::start(&s.0.join("store.db"), &s.0, None);
    assert_eq!(serving.token.len(), 64, "a generated token: 32 random bytes in hex");

    // No token, a wrong one: 401, with a JSON body and the challenge.
    for auth in [None, Some("Bearer not-the-token-at-all"), Some(&format!("Basic {}", serving.token)[..])] {
        let reply = request(&serving.addr, "GET", "/jobs", auth, None);
        assert_eq!(reply.status, 401, "{auth:?}");
        assert_eq!(reply.header("www-authenticate").as_deref(), Some("Bearer"));
        assert_eq!(reply.json()["error"], "unauthorized");
    }
    let reply = request(&serving.addr, "POST", "/jobs/list_installed_task_definitions", None, Some("{}"));
    assert_eq!(reply.status, 401, "calls need it too");

    // The catalogue, and a call.
    let reply = serving.call("GET", "/jobs", None);
    assert_eq!(reply.status, 200);
    let jobs = reply.json();
    let names: Vec<&str> = jobs.as_array().unwrap().iter().map(|j| j["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"list_installed_task_definitions") && names.contains(&"start_session"), "{names:?}");
    let reply = serving.job("list_installed_task_definitions", json!({}));
    assert_eq!(reply.status, 200);
    let envelope = reply.json();
    assert_eq!(envelope["success"], true, "{envelope}");
    assert!(envelope["answer"].as_array().unwrap().iter().any(|t| t["name"] == "shell.run"), "{envelope}");
    assert_eq!(envelope["metadata"]["job"], "list_installed_task_definitions");

    // Refused before running: an unknown job, arguments that break the schema, a broken body.
    let reply = serving.job("no_such_job", json!({}));
    assert_eq!((reply.status, reply.json()["error"].as_str()), (404, Some("unknown_job")));
    for (arguments, message) in [
        (json!({}), "missing field `session_id`"),
        (json!({"session_id": 42}), "invalid type"),
        (json!({"session_id": "s", "colour": "red"}), "unknown field `colour`"),
    ] {
        let reply = serving.job("get_session", arguments.clone());
        assert_eq!(reply.status, 422, "{arguments}");
        let answer = reply.json();
        assert_eq!((answer["error"].as_str(), answer["job"].as_str()), (Some("invalid_argument"), Some("get_session")));
        assert!(answer["message"].as_str().unwrap().contains(message), "{answer}");
    }
    let reply = serving.call("POST", "/jobs/get_session", Some("{\"arguments\": "));
    assert_eq!(reply.status, 422);
    let answer = reply.json();
    assert_eq!(answer["error"], "invalid_request");
    assert!(answer["message"].as_str().unwrap().contains("not JSON"), "{answer}");

    // A business failure is an answer.
    let reply = serving.job("get_session", json!({"session_id": "no-such-session"}));
    assert_eq!(reply.status, 200);
    let envelope = reply.json();
    assert_eq!(
        (envelope["success"].as_bool(), envelope["metadata"]["error"].as_str()),
        (Some(false), Some("not_found"))
    );

    // A real session, watched over SSE from before it starts.
    let mut events = Events::open(&serving);
    let reply = serving.job("start_session", json!({"file": blueprint}));
    assert_eq!(reply.status, 200);
    let started = reply.json();
    assert_eq!(started["success"], true, "{started}");
    let session = started["answer"]["session_id"].as_str().unwrap().to_string();
    let reply = serving.job("wait_session", json!({"session_id": session, "timeout_s": HANG.as_secs()}));
    let waited = reply.json();
    assert_eq!((waited["success"].as_bool(), waited["answer"]["ended"].as_bool()), (Some(true), Some(true)));
    assert_eq!(waited["answer"]["session"]["state"], "completed", "{waited}");

    let seen = events.until_session(&session, "completed");
    let kinds: Vec<&str> = seen.iter().map(|(kind, _)| kind.as_str()).collect();
    assert_eq!(kinds[0], "session_created", "{kinds:?}");
    let settled: Vec<&Value> = seen.iter().filter(|(k, _)| k == "attempt_settled").map(|(_, d)| d).collect();
    assert_eq!(settled.len(), 3, "start, a, end: {kinds:?}");
    let a = settled.iter().find(|d| d["payload"]["value"]["node"] == "x.a").expect("a settled");
    // The event carries the attempt's row as settled, with its instance and task.
    assert_eq!(a["payload"]["value"]["state"], "succeeded");
    assert_eq!(
        (a["payload"]["value"]["instance"].as_str(), a["payload"]["value"]["task"].as_str()),
        (Some("x"), Some("a"))
    );
    let seqs: Vec<u64> = seen.iter().map(|(_, d)| d["seq"].as_u64().unwrap()).collect();
    assert!(seen.iter().all(|(_, d)| d["session_id"] == session.as_str()));
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>(), "every event, in commit order");

    // A client that reconnects after the third event is replayed the rest from the store.
    let third = seen[2].1["global_seq"].as_u64().unwrap();
    let mut resumed = Events::open_at(&serving, &format!("/events?after={third}"));
    let replayed = resumed.until_session(&session, "completed");
    let globals: Vec<u64> = replayed.iter().map(|(_, d)| d["global_seq"].as_u64().unwrap()).collect();
    let expected: Vec<u64> = seen[3..].iter().map(|(_, d)| d["global_seq"].as_u64().unwrap()).collect();
    assert_eq!(globals, expected);
    let reply = serving.call("GET", "/events?after=soon", None);
    assert_eq!(reply.status, 422, "a resume point that is not a number is refused");

    let (code, stderr) = serving.interrupt();
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("orrery serve: stopping"), "{stderr}");
    assert!(events.next().is_none(), "the event stream ends with the server");
}

#[test]
fn ctrl_c_stops_the_sessions_it_runs_and_exits_zero() {
    let s = Scratch::new("stop");
    let db = s.0.join("store.db");
    let blueprint = s.write(
        "slow.json",
        r#"{"id": "slow", "name": "slow", "version": "1.0", "tasks": [
      {"id": "start", "type": "system.start"},
      {"id": "wait", "type": "shell.run", "params": [{"name": "command", "value": "sleep 30"}], "depends_on": [{"id": "start"}]},
      {"id": "after", "type": "shell.run", "params": [{"name": "command", "value": "touch after-ran"}], "depends_on": [{"id": "wait"}]},
      {"id": "end", "type": "system.end", "depends_on": [{"id": "after"}]}]}"#,
    );
    let token = "a-token-the-user-chose-1234";
    let serving = Serving::start(&db, &s.0, Some(token));
    assert_eq!(serving.token, token, "ORRERY_TOKEN is the token");
    let mut events = Events::open(&serving);
    let started = serving.job("start_session", json!({"file": blueprint})).json();
    let session = started["answer"]["session_id"].as_str().unwrap().to_string();
    // Ctrl-C once `wait` runs.
    while let Some((kind, data)) = events.next() {
        if kind == "attempt_started" && data["payload"]["value"]["node"] == "slow.wait" {
            break;
        }
    }
    let (code, stderr) = serving.interrupt();
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains(&format!("orrery serve: stopped session {session}")), "{stderr}");
    // The stream carried the session to its end, then ended.
    let seen = events.until_session(&session, "stopped");
    assert!(
        seen.iter().any(|(k, d)| k == "attempt_settled" && d["payload"]["value"]["node"] == "slow.wait"),
        "{seen:?}"
    );
    assert!(events.next().is_none());

    let status = Command::new(env!("CARGO_BIN_EXE_orrery"))
        .args(["status", &session, "--db", db.to_str().unwrap(), "--format", "json"])
        .output()
        .unwrap();
    let status: Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(status["session"]["state"], "stopped", "{status}");
    assert!(!s.0.join("after-ran").exists(), "nothing runs after the stop");
}

#[test]
fn serve_refuses_a_weak_token_a_port_in_use_and_a_store_that_is_not_a_database() {
    let s = Scratch::new("refuse");
    let run = |args: &[&str], token: Option<&str>| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_orrery"));
        command.arg("serve").args(args).current_dir(&s.0).env_remove("ORRERY_TOKEN");
        if let Some(token) = token {
            command.env("ORRERY_TOKEN", token);
        }
        command.output().unwrap()
    };
    let db = s.0.join("store.db");
    let db = db.to_str().unwrap();
    for (args, token) in [(vec!["--db", db, "--token", "short"], None), (vec!["--db", db], Some("short"))] {
        let o = run(&args, token);
        assert_eq!(o.status.code(), Some(2), "{args:?} {token:?}");
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(stderr.contains("the token must be at least 16 characters"), "{stderr}");
        assert!(o.stdout.is_empty());
    }
    let serving = Serving::start(&s.0.join("taken.db"), &s.0, None);
    let port = serving.addr.rsplit(':').next().unwrap();
    let o = run(&["--db", db, "--port", port], None);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("cannot listen on 127.0.0.1:"), "{o:?}");
    assert_eq!(serving.interrupt().0, Some(0));
    let garbage = s.write("garbage.db", "this is not a database, and it stays as it is");
    let o = run(&["--db", garbage.to_str().unwrap()], None);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("cannot open the task store"), "{o:?}");
    assert_eq!(std::fs::read_to_string(&garbage).unwrap(), "this is not a database, and it stays as it is");
}

#[test]
fn sigterm_sighup_or_ctrl_c_right_after_the_line_stop_it_cleanly() {
    let s = Scratch::new("signals");
    let db = s.0.join("store.db");
    for signal in ["-TERM", "-HUP", "-INT"] {
        let serving = Serving::start(&db, &s.0, None);
        let (code, stderr) = serving.signal(signal);
        assert_eq!(code, Some(0), "{signal}: {stderr}");
        assert!(stderr.contains("orrery serve: stopping"), "{stderr}");
    }
}

#[test]
fn serve_resumes_the_sessions_a_crash_interrupted() {
    let s = Scratch::new("serve-recover");
    let db = s.0.join("store.db");
    let go = s.0.join("go");
    let blueprint = s.0.join("wait.json");
    std::fs::write(
        &blueprint,
        json!({"id": "w", "name": "w", "version": "1.0", "tasks": [
            {"id": "start", "type": "system.start"},
            {"id": "a", "type": "shell.run", "depends_on": [{"id": "start"}],
             "params": [{"name": "command", "value": format!("test -f {} || sleep 30", go.display())}]},
            {"id": "end", "type": "system.end", "depends_on": [{"id": "a"}]}]})
        .to_string(),
    )
    .unwrap();
    // A run killed (SIGKILL) while its task runs leaves the session interrupted.
    let mut run = Command::new(env!("CARGO_BIN_EXE_orrery"))
        .args(["run", "--db", db.to_str().unwrap(), blueprint.to_str().unwrap()])
        .current_dir(&s.0)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    for line in BufReader::new(run.stdout.take().unwrap()).lines() {
        if line.unwrap().contains("RUNNING    w.a") {
            break;
        }
    }
    run.kill().unwrap();
    run.wait().unwrap();
    std::fs::write(&go, "").unwrap();

    let serving = Serving::start(&db, &s.0, None);
    let listed = serving.job("list_sessions", json!({})).json();
    let session = listed["answer"][0]["id"].as_str().unwrap().to_string();
    let waited = serving.job("wait_session", json!({"session_id": session, "timeout_s": HANG.as_secs()})).json();
    assert_eq!(waited["answer"]["session"]["state"], "completed", "{waited}");
    let (code, stderr) = serving.interrupt();
    assert_eq!(code, Some(0));
    assert!(stderr.contains(&format!("resumed interrupted session {session}")), "{stderr}");
}

/// Calls jobs over HTTP and remembers which were called.
struct Client<'a> {
    serving: &'a Serving,
    called: std::cell::RefCell<std::collections::BTreeSet<String>>,
}

impl Client<'_> {
    fn envelope(&self, name: &str, arguments: Value) -> Value {
        self.called.borrow_mut().insert(name.to_string());
        let reply = self.serving.job(name, arguments.clone());
        assert_eq!(reply.status, 200, "{name} {arguments}: {}", String::from_utf8_lossy(&reply.body));
        reply.json()
    }

    /// The answer of a job that must succeed.
    fn ok(&self, name: &str, arguments: Value) -> Value {
        let envelope = self.envelope(name, arguments.clone());
        assert_eq!(envelope["success"], true, "{name} {arguments}: {envelope}");
        envelope["answer"].clone()
    }

    /// The error code of a job that must answer a business failure.
    fn fails(&self, name: &str, arguments: Value) -> String {
        let envelope = self.envelope(name, arguments.clone());
        assert_eq!(envelope["success"], false, "{name} {arguments}: {envelope}");
        assert!(envelope["answer"].as_str().is_some_and(|a| !a.is_empty()), "a readable answer: {envelope}");
        envelope["metadata"]["error"].as_str().unwrap().to_string()
    }

    /// `stream_task` over SSE: opened, with its first item read.
    fn stream(&self, task_id: &str) -> Events {
        self.called.borrow_mut().insert("stream_task".into());
        let body = json!({"arguments": {"task_id": task_id}}).to_string();
        Events::request(self.serving, "POST", "/jobs/stream_task", Some(&body))
    }
}

const FLOW: &str = r#"{"id":"flow","name":"flow","version":"1.0","tasks":[
  {"id":"start","type":"system.start"},
  {"id":"a","type":"shell.run","params":[{"name":"command","value":"echo one; sleep 0.3; echo two; printf '{\"n\": 5}' > \"$ORRERY_OUTPUTS\""}],
   "outputs":[{"name":"n"}],"depends_on":[{"id":"start"}]},
  {"id":"b","type":"shell.run","params":[{"name":"command","value":"test \"$ORRERY_INPUT_N\" = 5"}],
   "inputs":[{"name":"n"}],"depends_on":[{"id":"a"}]},
  {"id":"end","type":"system.end","depends_on":[{"id":"b"}]}]}"#;

const ASKING: &str = r#"{"id":"asking","name":"asking","version":"1.0","tasks":[
  {"id":"start","type":"system.start"},
  {"id":"ask","type":"user_prompt.confirm","params":[{"name":"message","value":"Go on?"}],
   "outputs":[{"name":"result","set_to":"decision"}],"depends_on":[{"id":"start"}]},
  {"id":"slow","type":"shell.run","params":[{"name":"command","value":"sleep 30"}],"depends_on":[{"id":"ask"}],
   "scope_start":{"retry_policy":{"retries":0}},"scope_end":"slow"},
  {"id":"end","type":"system.end","depends_on":[{"id":"slow"}]}]}"#;

#[test]
fn every_job_of_the_catalogue_answers_over_http_as_the_job_protocol_says() {
    let s = Scratch::new("protocol");
    let flow_file = s.write("flow.json", FLOW);
    let asking_file = s.write("asking.json", ASKING);
    let serving = Serving::start(&s.0.join("store.db"), &s.0, None);
    let client = Client { serving: &serving, called: Default::default() };
    let catalogue: std::collections::BTreeSet<String> = serving
        .call("GET", "/jobs", None)
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["name"].as_str().unwrap().to_string())
        .collect();

    // The catalogue of task types, with the schemas forms are built from.
    let types = client.ok("list_task_types", json!({}));
    assert!(types.as_array().unwrap().iter().any(|t| t["name"] == "shell.run"));
    let shell = client.ok("get_task_type", json!({"name": "shell.run"}));
    assert_eq!(shell["outputs_schema"]["properties"]["exit_code"]["type"], "integer", "{shell}");
    assert_eq!(client.fails("get_task_type", json!({"name": "no.such"})), "not_found");

    // Blueprints: checked, formatted, exported, stored.
    assert_eq!(client.ok("validate_blueprint", json!({"text": FLOW}))[0]["valid"], true);
    let beside = client.ok("list_blueprint_files", json!({"folder": s.0}));
    assert_eq!(beside.as_array().unwrap().len(), 2, "flow.json and asking.json: {beside}");
    assert_eq!(client.ok("format_blueprint", json!({"text": FLOW}))["changed"], true);
    assert!(client.ok("export_blueprint", json!({"text": FLOW, "to": "compas"}))["text"]
        .as_str()
        .unwrap()
        .contains("dtype"));
    let written = s.0.join("written.json");
    assert_eq!(client.ok("write_blueprint_file", json!({"file": written, "text": FLOW}))["changed"], true);
    assert_eq!(client.ok("read_layout", json!({"file": written}))["found"], false);
    client.ok(
        "save_layout",
        json!({"file": written, "positions": {"a": {"x": 1, "y": 2}}, "breakpoints": {"a": "after"}}),
    );
    let layout = client.ok("read_layout", json!({"file": written}));
    assert_eq!((&layout["positions"]["a"]["y"], &layout["breakpoints"]), (&json!(2.0), &json!({"a": "after"})));
    let names = client.ok("task_names", json!({"text": FLOW, "task_id": "b"}));
    assert_eq!(names["produced"][0]["key"], "n", "{names}");
    let scopes = client.ok("blueprint_scopes", json!({"text": ASKING}));
    assert_eq!(scopes[0]["members"], json!(["slow"]), "a task that opens and closes its own scope: {scopes}");
    let wires = client.ok("blueprint_wiring", json!({"text": FLOW}));
    assert_eq!(wires, json!([{"from": "a", "to": "b", "key": "n", "output": "n", "input": "n"}]), "{wires}");
    let fits = client.ok("check_scope", json!({"text": FLOW, "tasks": ["a", "b"]}));
    assert_eq!(fits, json!({"verdict": "fits", "start": "a", "end": "b"}));
    assert_eq!(client.ok("blueprint_encoding", json!({"text": FLOW}))["encoding"], "antikythera");
    assert_eq!(client.ok("save_blueprint", json!({"text": FLOW}))["blueprint_id"], "flow");
    assert_eq!(client.ok("list_blueprints", json!({}))[0]["blueprint_id"], "flow");
    let stored = client.ok("get_blueprint_version", json!({"blueprint_id": "flow"}));
    assert!(stored["text"].as_str().unwrap().contains("\"id\": \"flow\""), "{stored}");
    assert_eq!(client.fails("get_blueprint_version", json!({"blueprint_id": "flow", "hash": "0"})), "not_found");

    // A named task: submitted, streamed from its start to its result, then read back.
    let task = "blueprint#flow#nightly";
    let registered = client.ok("list_installed_task_definitions", json!({}));
    assert!(registered.as_array().unwrap().iter().any(|t| t["name"] == "flow" && t["source"] == "plugin"));
    assert_eq!(client.ok("get_task_definition", json!({"task": "shell.run"}))["source"], "native");
    assert_eq!(client.fails("get_task_definition", json!({"task": "no.such"})), "not_found");
    let submitted = client.ok("submit", json!({"task": "flow", "task_name": "nightly"}));
    let run = submitted["run_id"].as_str().unwrap().to_string();
    let mut stream = client.stream(task);
    let mut items = Vec::new();
    while let Some((kind, id, data)) = stream.next_sse() {
        assert_eq!(id, None, "stream items have no id");
        items.push((kind, data));
    }
    let kinds: Vec<&str> = items.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(kinds.first(), Some(&"progress"), "{kinds:?}");
    assert_eq!(kinds.last(), Some(&"result"), "the stream closes after the result: {kinds:?}");
    assert_eq!(items.last().unwrap().1["state"], "succeeded");
    let log: String = items
        .iter()
        .filter(|(k, d)| k == "log" && d["node"] == "flow.a")
        .map(|(_, d)| d["content"].as_str().unwrap())
        .collect();
    assert_eq!(log, "one\ntwo\n");
    assert!(items.iter().any(|(k, d)| k == "artifact" && d["key"] == "n" && d["value"] == 5), "{kinds:?}");

    let done = client.ok("wait_task", json!({"task_id": task, "run_id": run}));
    assert_eq!(done["state"], "succeeded");
    assert_eq!(client.ok("stream_task", json!({"task_id": task}))["run_id"], run.as_str(), "without SSE: the status");
    assert_eq!(client.ok("status", json!({"task_id": task}))["run_id"], run.as_str());
    assert_eq!(client.ok("list_task_ids", json!({})), json!([task]));
    assert_eq!(client.ok("list_task_statuses", json!({}))[0]["state"], "succeeded");
    let window = client.ok("read_task_log", json!({"task_id": task, "task": "flow.a", "offset": 0}));
    assert_eq!(window["content"], "one\ntwo\n");
    assert_eq!(client.ok("get_task_context", json!({"task_id": task}))["status"]["result"]["n"], 5);
    assert_eq!(client.ok("get_task_graph", json!({"task_id": task}))["nodes"][0]["provisional"], false);
    assert_eq!(client.ok("cancel", json!({"task_id": task})), false, "a finished run: a no-op");
    assert_eq!(client.fails("wait_task", json!({"task_id": task, "run_id": "an-old-run"})), "stale_run");

    // An active task: a second submission is refused, delete skips it, a client that leaves
    // its stream does not cancel it, cancel does.
    let slow = "shell#shell.run#slow";
    let arguments = json!({"task": "shell.run", "task_name": "slow", "command": "sleep 30"});
    let slow_run = client.ok("submit", arguments.clone())["run_id"].as_str().unwrap().to_string();
    assert_eq!(client.fails("submit", arguments), "refused");
    assert_eq!(client.ok("delete_tasks", json!({"task_ids": [slow]})), json!([]), "an active task is skipped");
    let mut left = client.stream(slow);
    assert_eq!(left.next_sse().map(|(k, _, _)| k).as_deref(), Some("progress"));
    drop(left);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(client.ok("status", json!({"task_id": slow}))["state"], "running", "leaving a stream cancels nothing");
    assert_eq!(client.ok("cancel", json!({"task_id": slow})), true);
    let cancelled = client.envelope("wait_task", json!({"task_id": slow, "run_id": slow_run}));
    assert_eq!((&cancelled["success"], &cancelled["answer"]["state"]), (&json!(false), &json!("cancelled")));
    assert_eq!(client.ok("delete_tasks", json!({"task_ids": [task, slow]})), json!([task, slow]));

    // Sessions, read back every way a client reads them.
    let session = client.ok("start_session", json!({"file": flow_file}))["session_id"].as_str().unwrap().to_string();
    assert_eq!(
        client.ok("wait_session", json!({"session_id": session, "timeout_s": 30}))["session"]["state"],
        "completed"
    );
    assert!(client.ok("list_sessions", json!({"blueprint_id": "flow"})).as_array().unwrap().len() >= 2);
    assert_eq!(client.ok("get_session", json!({"session_id": session}))["attempts"].as_array().unwrap().len(), 4);
    assert_eq!(client.ok("read_session_data", json!({"session_id": session}))["flow"]["n"], 5);
    assert!(!client.ok("read_events", json!({"after": 0}))["events"].as_array().unwrap().is_empty());
    let details = client.ok("get_attempt", json!({"session_id": session, "task": "b"}));
    assert_eq!((details["attempt"]["node"].as_str(), details["steps"].clone()), (Some("flow.b"), json!([])));
    let compared = client.ok("compare_sessions", json!({"a": run, "b": session}));
    assert_eq!(compared["same_blueprint"], true, "the stored flow and flow.json are one version");
    assert_eq!(compared["data"], json!([]), "{compared}");
    assert_eq!(client.ok("blueprint_changes", json!({"session_id": session}))["summary"], "no change");
    let lineage = client.ok("get_lineage", json!({"session_id": session}));
    assert!(lineage.to_string().contains("\"n\""), "b's input n came from a: {lineage}");
    let ran = client.ok("get_session_blueprints", json!({"session_id": session}));
    assert_eq!(
        (ran["root"]["blueprint_id"].clone(), ran["instances"].clone()),
        (json!("flow"), lineage["instances"].clone())
    );
    assert_eq!(
        client.ok("read_attempt_log", json!({"session_id": session, "task": "a"}))["window"]["content"],
        "one\ntwo\n"
    );

    // Control: a prompt answered, a task cancelled, reset, skipped, the session resumed,
    // restarted, paused and stopped.
    let mut events = Events::open(&serving);
    let asking = client.ok("start_session", json!({"file": asking_file}))["session_id"].as_str().unwrap().to_string();
    events.until(|kind, data| kind == "prompt_waiting" && data["session_id"] == asking.as_str());
    assert_eq!(
        client.ok("answer_prompt", json!({"session_id": asking, "task": "ask", "value": "yes"}))["outcome"],
        "answer given to ask"
    );
    events.until(|kind, data| kind == "attempt_started" && data["payload"]["value"]["node"] == "asking.slow");
    assert_eq!(client.fails("skip_task", json!({"session_id": asking, "task": "end"})), "refused", "not while it runs");
    client.ok("cancel_task", json!({"session_id": asking, "task": "slow"}));
    assert_eq!(client.ok("wait_session", json!({"session_id": asking, "timeout_s": 30}))["session"]["state"], "failed");
    client.ok("reset_scope", json!({"session_id": asking, "scope_start": "slow"}));
    client.ok("reset_task", json!({"session_id": asking, "task": "slow", "downstream": true}));
    client.ok("skip_task", json!({"session_id": asking, "task": "slow"}));
    client.ok("resume_session", json!({"session_id": asking}));
    assert_eq!(
        client.ok("wait_session", json!({"session_id": asking, "timeout_s": 30}))["session"]["state"],
        "completed"
    );

    let again = client.ok("restart_session", json!({"session_id": asking}))["session_id"].as_str().unwrap().to_string();
    assert_ne!(again, asking);
    events.until(|kind, data| kind == "prompt_waiting" && data["session_id"] == again.as_str());
    client.ok("pause_session", json!({"session_id": again}));
    assert_eq!(client.ok("wait_session", json!({"session_id": again, "timeout_s": 30}))["session"]["state"], "stopped");
    client.ok("resume_session", json!({"session_id": again}));
    events.until(|kind, data| kind == "prompt_waiting" && data["session_id"] == again.as_str());
    client.ok("stop_session", json!({"session_id": again}));
    assert_eq!(client.ok("wait_session", json!({"session_id": again, "timeout_s": 30}))["session"]["state"], "stopped");

    // A breakpoint holds b until it is let go.
    let held = client.ok("start_session", json!({"file": flow_file, "breakpoints": [{"task": "b"}]}));
    let held = held["session_id"].as_str().unwrap().to_string();
    events.until(|kind, data| {
        kind == "breakpoints" && data["session_id"] == held.as_str() && data["payload"]["value"]["what"] == "held"
    });
    assert_eq!(client.ok("task_inputs", json!({"session_id": held, "task": "b"}))["inputs"], json!({"n": 5}));
    assert_eq!(
        client.ok("set_session_data", json!({"session_id": held, "key": "n", "value": 6}))["outcome"],
        "set flow.n"
    );
    assert_eq!(client.ok("task_inputs", json!({"session_id": held, "task": "b"}))["inputs"], json!({"n": 6}));
    // b checks that it reads 5: set back, or it fails.
    client.ok("set_session_data", json!({"session_id": held, "key": "n", "value": 5}));
    assert_eq!(
        client.ok("get_session", json!({"session_id": held}))["held"],
        json!([{"node": "flow.b", "at": "before"}])
    );
    let set = client.ok("set_breakpoint", json!({"session_id": held, "task": "b", "at": "after"}));
    assert_eq!(set["outcome"], "b holds after it ends");
    let cleared = client.ok("set_breakpoint", json!({"session_id": held, "task": "b"}));
    assert_eq!(cleared["outcome"], "the breakpoint of b is cleared");
    assert_eq!(client.ok("continue_session", json!({"session_id": held}))["outcome"], "continuing flow.b");
    assert_eq!(
        client.ok("wait_session", json!({"session_id": held, "timeout_s": 30}))["session"]["state"],
        "completed"
    );
    let timing = client.ok("session_timing", json!({"session_id": held}));
    assert_eq!(timing["critical_path"].as_array().unwrap().last(), Some(&json!("flow.end")), "{timing}");
    // b alone, n typed in: it reads 5 and succeeds, nothing else runs.
    let alone = client.ok("run_task_alone", json!({"file": flow_file, "task": "b", "inputs": {"n": 5}}));
    let alone = alone["session_id"].as_str().unwrap().to_string();
    let ended = client.ok("wait_session", json!({"session_id": alone, "timeout_s": 30}));
    assert_eq!(ended["session"]["state"], "completed", "{ended}");
    let ran = client.ok("get_session", json!({"session_id": alone}))["attempts"].clone();
    assert_eq!(ran.as_array().unwrap().iter().map(|a| a["task"].clone()).collect::<Vec<_>>(), [json!("b")]);
    // Its history: n as a wrote it, then as the person set it twice.
    let history = client.ok("session_history", json!({"session_id": held}));
    let values: Vec<&Value> =
        history["data"].as_array().unwrap().iter().filter(|w| w["key"] == "n").map(|w| &w["value"]).collect();
    assert_eq!(values, [&json!(5), &json!(6), &json!(5)], "{history}");

    // Servers: saved, listed, published to (nothing listens at its address), forgotten.
    client.ok("save_server", json!({"name": "nowhere", "url": "http://127.0.0.1:9/", "token": "t"}));
    assert_eq!(
        client.ok("list_servers", json!({})),
        json!([{"name": "nowhere", "url": "http://127.0.0.1:9", "has_token": true}])
    );
    let published = client.ok("publish_blueprints", json!({"server": "nowhere", "files": [written]}));
    assert_eq!(published["blueprints"][0]["outcome"], "failed", "{published}");
    for (job, arguments) in [
        ("remote_sessions", json!({"server": "nowhere"})),
        ("remote_run", json!({"server": "nowhere", "blueprint_id": "flow"})),
        ("remote_control", json!({"server": "nowhere", "session_id": "s", "action": "pause"})),
        ("remote_wait", json!({"server": "nowhere", "session_id": "s", "timeout_s": 1})),
        ("remote_intervene", json!({"server": "nowhere", "session_id": "s", "action": "skip", "task": "flow.a"})),
        ("follow_remote_session", json!({"server": "nowhere", "session_id": "s"})),
    ] {
        assert_eq!(client.fails(job, arguments), "unreachable", "{job}");
    }
    assert_eq!(client.ok("remove_server", json!({"name": "nowhere"}))["removed"], true);

    // A broker: saved (not checked then), checked (nothing listens), and a session launched
    // while it is set fails before it exists, naming it; cleared, sessions run again.
    assert_eq!(client.ok("broker_settings", json!({}))["broker"], Value::Null);
    assert_eq!(client.fails("save_broker_settings", json!({"broker": "amqp://h"})), "invalid_argument");
    assert_eq!(client.fails("save_broker_settings", json!({"broker": "h", "agent_timeout_s": -1})), "invalid_argument");
    let saved = client.ok("save_broker_settings", json!({"broker": "127.0.0.1:9", "via_broker": ["system.sleep"]}));
    assert_eq!(saved["broker"], "mqtt://127.0.0.1:9", "kept as understood");
    assert_eq!(client.ok("broker_settings", json!({})), saved);
    let check = client.ok("check_broker", json!({"broker": "mqtt://127.0.0.1:9"}));
    assert_eq!(check["reachable"], false, "{check}");
    let sessions_before = client.ok("list_sessions", json!({})).as_array().unwrap().len();
    let envelope = client.envelope("start_session", json!({"file": written}));
    assert_eq!(envelope["metadata"]["error"], "broker_unreachable", "{envelope}");
    assert!(envelope["answer"].as_str().unwrap().contains("mqtt://127.0.0.1:9"), "{envelope}");
    assert_eq!(client.ok("list_sessions", json!({})).as_array().unwrap().len(), sessions_before, "no session was made");
    client.ok("save_broker_settings", json!({}));
    assert_eq!(client.ok("broker_settings", json!({}))["broker"], Value::Null);

    // An agent's task memory, in the default project.
    assert_eq!(client.ok("create_task", json!({"name": "t", "goal": "g"}))["recorded"], true);
    assert_eq!(client.ok("record_event", json!({"task_name": "t", "kind": "note", "payload": "p"}))["event"]["seq"], 1);
    let step = client.ok("set_step", json!({"task_name": "t", "name": "s", "state": "unknown"}));
    assert_eq!(step["step"]["state"], "unknown");
    assert_eq!(client.ok("get_task", json!({"name": "t"}))["view"]["step_counts"]["unknown"], 1);
    assert_eq!(client.ok("list_events", json!({"task_name": "t"}))["events"][0]["author"], "user");
    assert_eq!(client.ok("list_steps", json!({"task_name": "t", "state": "unknown"}))[0]["name"], "s");

    // An agent's checklist.
    let added = client.ok("add_agent_task", json!({"title": "check", "subtasks": ["look"]}));
    assert_eq!(added, json!({"task_id": 1, "status": "pending"}));
    assert_eq!(client.ok("start_agent_task", json!({"task_id": 1}))["status"], "in_progress");
    assert_eq!(client.fails("complete_agent_task", json!({"task_id": 1, "conclusion": "ok"})), "refused");
    client.ok("update_agent_subtask", json!({"task_id": 1, "index": 0, "status": "done"}));
    assert_eq!(client.ok("complete_agent_task", json!({"task_id": 1, "conclusion": "ok"}))["status"], "completed");
    assert_eq!(client.ok("list_agent_tasks", json!({}))[0]["conclusion"], "ok");
    // Beside a session: its starter's notes while it was the starter's latest (until `asking`).
    let notes = client.ok("get_session_notes", json!({"session_id": session}));
    assert_eq!(notes["started_by"], json!({"project": "default", "agent": "user"}), "{notes}");
    assert!(notes["until"].is_string() && notes["memory"] == json!([]), "{notes}");

    let called = client.called.borrow().clone();
    let missed: Vec<&String> = catalogue.difference(&called).collect();
    assert!(missed.is_empty(), "every job of the catalogue was called over HTTP; not: {missed:?}");
    let (code, stderr) = serving.interrupt();
    assert_eq!(code, Some(0), "{stderr}");
}

/// Sends `head` (a request head without its blank line) then `body`, written on a thread of its
/// own as a client that reads the answer only once it sent everything; the answer.
fn send_raw(addr: &str, head: &str, body: Vec<u8>) -> Reply {
    let mut stream = connect(addr);
    let mut writing = stream.try_clone().unwrap();
    let head = format!("{head}\r\n\r\n");
    let writer = std::thread::spawn(move || {
        writing.write_all(head.as_bytes())?;
        writing.write_all(&body)
    });
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    let _ = writer.join();
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or_else(|| panic!("no answer: {answer:?}"));
    let status = head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or_else(|| panic!("{head}"));
    Reply { status, head: head.to_string(), body: body.as_bytes().to_vec() }
}

#[test]
fn a_chunked_body_over_8_mib_is_413_like_any_other() {
    let s = Scratch::new("chunked");
    let serving = Serving::start(&s.0.join("store.db"), &s.0, None);
    let head = |framing: &str| {
        format!(
            "POST /jobs/get_session HTTP/1.1\r\nHost: {}\r\nAuthorization: {}\r\nConnection: close\r\n{framing}",
            serving.addr,
            serving.bearer()
        )
    };
    let chunk = vec![b' '; 1 << 16];
    let mut chunked = Vec::new();
    for _ in 0..(8 << 20) / chunk.len() + 1 {
        chunked.extend(format!("{:x}\r\n", chunk.len()).into_bytes());
        chunked.extend(&chunk);
        chunked.extend(b"\r\n");
    }
    chunked.extend(b"0\r\n\r\n");
    let plain = vec![b' '; (8 << 20) + 1];
    let cases = [
        ("chunked", head("Transfer-Encoding: chunked"), chunked),
        ("content-length", head(&format!("Content-Length: {}", plain.len())), plain),
    ];
    for (framing, head, body) in cases {
        let reply = send_raw(&serving.addr, &head, body);
        assert_eq!(reply.status, 413, "{framing}: {}", reply.head);
        assert_eq!(reply.json()["error"], "body_too_large", "{framing}");
    }
    // A body within the limit, chunked, is read as any other.
    let small = br#"{"arguments": {"session_id": "nope"}}"#;
    let mut body = format!("{:x}\r\n", small.len()).into_bytes();
    body.extend(small);
    body.extend(b"\r\n0\r\n\r\n");
    let reply = send_raw(&serving.addr, &head("Transfer-Encoding: chunked"), body);
    assert_eq!(reply.status, 200, "{}", reply.head);
    assert_eq!(reply.json()["metadata"]["error"], "not_found");
}

#[test]
fn requests_for_another_host_or_from_a_web_origin_are_refused() {
    let s = Scratch::new("hosts");
    let serving = Serving::start(&s.0.join("store.db"), &s.0, None);
    let port = serving.addr.rsplit(':').next().unwrap().to_string();
    let get = |host: Option<&str>, origin: Option<&str>| {
        let mut head = "GET /jobs HTTP/1.1\r\nConnection: close".to_string();
        if let Some(host) = host {
            head.push_str(&format!("\r\nHost: {host}"));
        }
        if let Some(origin) = origin {
            head.push_str(&format!("\r\nOrigin: {origin}"));
        }
        head.push_str(&format!("\r\nAuthorization: {}", serving.bearer()));
        send_raw(&serving.addr, &head, Vec::new())
    };
    // A page of a site whose name was pointed at 127.0.0.1 (DNS rebinding) names that site.
    for host in ["rebind.example:".to_string() + &port, "rebind.example".into(), format!("127.0.0.1:{}", 1)] {
        let reply = get(Some(&host), None);
        assert_eq!(reply.status, 421, "{host}: {}", reply.head);
        let body = reply.json();
        assert_eq!(body["error"], "wrong_host");
        assert!(body["message"].as_str().unwrap().contains(&host), "{body}");
    }
    for origin in ["http://rebind.example", "null", &format!("http://evil.example:{port}")] {
        let reply = get(Some(&serving.addr), Some(origin));
        assert_eq!(reply.status, 403, "{origin}: {}", reply.head);
        assert_eq!(reply.json()["error"], "wrong_origin");
    }
    for (host, origin) in [
        (serving.addr.clone(), None),
        (format!("localhost:{port}"), Some(format!("http://localhost:{port}"))),
        (format!("[::1]:{port}"), None),
        ("127.0.0.1".to_string(), Some(format!("http://127.0.0.1:{port}"))),
    ] {
        let reply = get(Some(&host), origin.as_deref());
        assert_eq!(reply.status, 200, "{host} {origin:?}: {}", reply.head);
    }
}

#[test]
fn the_token_is_the_flag_or_orrery_token_and_only_the_flag_shows_in_the_process_table() {
    let s = Scratch::new("token");
    let db = s.0.join("store.db");
    let help = Command::new(env!("CARGO_BIN_EXE_orrery")).args(["serve", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout).to_string();
    assert!(help.contains("`ps`") && help.contains("ORRERY_TOKEN"), "{help}");
    let cmdline = |serving: &Serving| {
        let pid = serving.child.as_ref().unwrap().id();
        String::from_utf8_lossy(&std::fs::read(format!("/proc/{pid}/cmdline")).unwrap()).replace('\0', " ")
    };
    let flag = "a-token-given-on-the-command-line";
    let serving = Serving::start_with(&db, &s.0, &["--token", flag], None);
    assert_eq!(serving.token, flag);
    assert_eq!(serving.call("GET", "/jobs", None).status, 200);
    assert!(cmdline(&serving).contains(flag), "what ps shows: {}", cmdline(&serving));
    assert_eq!(serving.interrupt().0, Some(0));
    let env = "a-token-given-in-the-environment";
    let serving = Serving::start(&db, &s.0, Some(env));
    assert_eq!(serving.token, env);
    assert_eq!(serving.call("GET", "/jobs", None).status, 200);
    let wrong = request(&serving.addr, "GET", "/jobs", Some(&format!("Bearer {flag}")), None);
    assert_eq!(wrong.status, 401);
    assert!(!cmdline(&serving).contains(env), "what ps shows: {}", cmdline(&serving));
    assert_eq!(serving.interrupt().0, Some(0));
}

/// The CLI prints the facade's answers: `orrery status --format json` of a session the CLI ran
/// is the `get_session` answer over HTTP, field for field; the same for `orrery sessions` and
/// `list_sessions`.
#[test]
fn status_and_sessions_in_json_are_the_answers_of_get_session_and_list_sessions_over_http() {
    let dir = Scratch::new("status-json");
    let blueprint = dir.write("flow.json", FLOW);
    let db = dir.0.join("store.db");
    let orrery = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_orrery"))
            .args(args)
            .args(["--db", db.to_str().unwrap()])
            .current_dir(&dir.0)
            .output()
            .unwrap();
        assert!(out.status.success(), "orrery {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    orrery(&["run", "--format", "json", blueprint.to_str().unwrap()]);
    let listed: Value = serde_json::from_str(&orrery(&["sessions", "--format", "json"])).unwrap();
    let session = listed[0]["id"].as_str().expect("a session listed").to_string();
    let status: Value = serde_json::from_str(&orrery(&["status", &session, "--format", "json"])).unwrap();
    assert_eq!(status["session"]["state"], "completed", "{status}");
    let nodes: Vec<&str> = status["attempts"].as_array().unwrap().iter().filter_map(|a| a["node"].as_str()).collect();
    assert!(nodes.contains(&"flow.a") && nodes.contains(&"flow.b"), "{status}");

    let serving = Serving::start(&db, &dir.0, None);
    let over_http = serving.job("get_session", json!({ "session_id": session })).json();
    assert_eq!(over_http["success"], true, "{over_http}");
    assert_eq!(status, over_http["answer"]);
    let over_http = serving.job("list_sessions", json!({})).json();
    assert_eq!(listed, over_http["answer"]);
}

/// The sessions of the store, as `orrery sessions --format json` lists them (newest first).
fn stored_sessions(db: &Path, dir: &Path) -> Vec<Value> {
    let listed = Command::new(env!("CARGO_BIN_EXE_orrery"))
        .args(["sessions", "--db", db.to_str().unwrap(), "--format", "json"])
        .current_dir(dir)
        .output()
        .unwrap();
    let listed: Value = serde_json::from_slice(&listed.stdout).unwrap_or_else(|e| panic!("{e}: {listed:?}"));
    listed.as_array().cloned().unwrap_or_default()
}

/// A start sent again after a lost answer starts nothing twice: the same request id (the
/// argument, or the `Idempotency-Key` header) answers the session the first one started, also
/// when the server was killed (SIGKILL) between the write and the answer; the same id with
/// other arguments is refused, and so is a header that contradicts the argument.
#[test]
fn a_start_sent_again_with_its_request_id_starts_one_session() {
    let s = Scratch::new("serve-idempotent");
    let db = s.0.join("store.db");
    s.write(
        "wait.json",
        &json!({"id": "w", "name": "w", "version": "1.0", "tasks": [
            {"id": "start", "type": "system.start"},
            {"id": "a", "type": "shell.run", "depends_on": [{"id": "start"}],
             "params": [{"name": "command", "value": "true"}]},
            {"id": "end", "type": "system.end", "depends_on": [{"id": "a"}]}]})
        .to_string(),
    );
    let serving = Serving::start(&db, &s.0, None);
    let start = json!({"file": "wait.json", "request_id": "start-1"});
    let first = serving.job("start_session", start.clone()).json();
    let session = first["answer"]["session_id"].as_str().unwrap_or_else(|| panic!("{first}")).to_string();
    let again = serving.job("start_session", start).json();
    assert_eq!(again["answer"]["session_id"], session.as_str(), "{again}");
    let head = format!(
        "POST /jobs/start_session HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nAuthorization: {}\r\n\
         Idempotency-Key: start-1\r\nContent-Type: application/json\r\nContent-Length: {}",
        serving.addr,
        serving.bearer(),
        br#"{"arguments": {"file": "wait.json"}}"#.len()
    );
    let by_header = send_raw(&serving.addr, &head, br#"{"arguments": {"file": "wait.json"}}"#.to_vec()).json();
    assert_eq!(by_header["answer"]["session_id"], session.as_str(), "the header is the request id: {by_header}");
    let other = serving.job("start_session", json!({"file": "wait.json", "params": {"n": 1}, "request_id": "start-1"}));
    let other = other.json();
    assert_eq!(
        (other["success"].as_bool(), other["metadata"]["error"].as_str()),
        (Some(false), Some("request_id_reused"))
    );
    let contradicted = head.replace("Idempotency-Key: start-1", "Idempotency-Key: start-9").replace(
        &format!("Content-Length: {}", br#"{"arguments": {"file": "wait.json"}}"#.len()),
        &format!("Content-Length: {}", br#"{"arguments": {"file": "wait.json", "request_id": "start-1"}}"#.len()),
    );
    let body = br#"{"arguments": {"file": "wait.json", "request_id": "start-1"}}"#.to_vec();
    assert_eq!(send_raw(&serving.addr, &contradicted, body).status, 422, "a header and an argument that differ");
    // A key that is not a request id: refused before the job runs, naming the header.
    for key in ["x".repeat(65), "clé-1".into(), String::new()] {
        let with = head.replace("Idempotency-Key: start-1", &format!("Idempotency-Key: {key}"));
        let refused = send_raw(&serving.addr, &with, br#"{"arguments": {"file": "wait.json"}}"#.to_vec());
        assert_eq!(refused.status, 422, "Idempotency-Key {key:?}");
        let detail = refused.json()["detail"].to_string();
        assert!(detail.contains("Idempotency-Key"), "{key:?}: {detail}");
    }
    assert_eq!(stored_sessions(&db, &s.0).len(), 1, "one session for all those requests");

    // The server killed once the session exists, before its answer is read: the same request
    // to the next server answers that session.
    let mut lost = connect(&serving.addr);
    let body = json!({"arguments": {"file": "wait.json", "request_id": "start-2"}}).to_string();
    let text = format!(
        "POST /jobs/start_session HTTP/1.1\r\nHost: {}\r\nAuthorization: {}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        serving.addr,
        serving.bearer(),
        body.len()
    );
    lost.write_all(text.as_bytes()).unwrap();
    let until = std::time::Instant::now() + HANG;
    while stored_sessions(&db, &s.0).len() < 2 {
        assert!(std::time::Instant::now() < until, "the second session was never stored");
        std::thread::sleep(Duration::from_millis(20));
    }
    serving.signal("-KILL");
    drop(lost);
    let serving = Serving::start(&db, &s.0, None);
    let created = stored_sessions(&db, &s.0)[0]["id"].as_str().unwrap().to_string();
    let retried = serving.job("start_session", json!({"file": "wait.json", "request_id": "start-2"})).json();
    assert_eq!(retried["answer"]["session_id"], created.as_str(), "{retried}");
    assert_eq!(stored_sessions(&db, &s.0).len(), 2, "the retry started nothing");

    // The same request twice at once: one session, both answered it.
    let twice: Vec<Value> = std::thread::scope(|scope| {
        let sent: Vec<_> = (0..2)
            .map(|_| {
                let serving = &serving;
                scope.spawn(move || {
                    serving.job("start_session", json!({"file": "wait.json", "request_id": "start-3"})).json()
                })
            })
            .collect();
        sent.into_iter().map(|t| t.join().unwrap()).collect()
    });
    assert_eq!(twice[0]["answer"]["session_id"], twice[1]["answer"]["session_id"], "{twice:?}");
    assert!(twice[0]["answer"]["session_id"].is_string(), "{twice:?}");
    assert_eq!(stored_sessions(&db, &s.0).len(), 3, "one session for the two");
    let third = twice[0]["answer"]["session_id"].as_str().unwrap().to_string();
    for id in [&session, &created, &third] {
        let waited = serving.job("wait_session", json!({"session_id": id, "timeout_s": HANG.as_secs()})).json();
        assert_eq!(waited["answer"]["session"]["state"], "completed", "{waited}");
    }

    // Any job that writes takes the header: a file written once, its retry answered from the
    // journal, the file changed meanwhile left alone.
    let written = s.0.join("written.json");
    let body = json!({"arguments": {"file": written, "text": std::fs::read_to_string(s.0.join("wait.json")).unwrap()}})
        .to_string();
    let head = format!(
        "POST /jobs/write_blueprint_file HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nAuthorization: {}\r\n\
         Idempotency-Key: write-1\r\nContent-Type: application/json\r\nContent-Length: {}",
        serving.addr,
        serving.bearer(),
        body.len()
    );
    let first = send_raw(&serving.addr, &head, body.clone().into_bytes()).json();
    assert_eq!(first["answer"]["changed"], true, "{first}");
    std::fs::write(&written, "edited since").unwrap();
    let again = send_raw(&serving.addr, &head, body.into_bytes()).json();
    assert_eq!(again["answer"], first["answer"], "{again}");
    assert_eq!(std::fs::read_to_string(&written).unwrap(), "edited since");
}

/// A task memory job as the caller the headers name.
fn memory_job(serving: &Serving, project: &str, agent: &str, name: &str, arguments: Value) -> Reply {
    let body = json!({ "arguments": arguments }).to_string();
    let head = format!(
        "POST /jobs/{name} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nAuthorization: {}\r\n\
         X-Orrery-Project: {project}\r\nX-Orrery-Agent: {agent}\r\nContent-Type: application/json\r\n\
         Content-Length: {}",
        serving.addr,
        serving.bearer(),
        body.len()
    );
    send_raw(&serving.addr, &head, body.into_bytes())
}

#[test]
fn an_agents_task_memory_is_scoped_by_the_headers_and_a_retried_write_survives_a_kill() {
    let s = Scratch::new("serve-memory");
    let db = s.0.join("store.db");
    let serving = Serving::start(&db, &s.0, None);
    let ok = |serving: &Serving, project: &str, name: &str, arguments: Value| -> Value {
        let reply = memory_job(serving, project, "claude", name, arguments.clone()).json();
        assert_eq!(reply["success"], true, "{name} {arguments}: {reply}");
        reply["answer"].clone()
    };
    let created = ok(&serving, "alpha", "create_task", json!({"name": "fix-ci", "goal": "CI green"}));
    assert_eq!((&created["recorded"], &created["task"]["author"]), (&json!(true), &json!("claude")));
    let goal =
        memory_job(&serving, "alpha", "claude", "create_task", json!({"name": "fix-ci", "goal": "other"})).json();
    assert_eq!((&goal["metadata"]["error"], &goal["answer"]["error"]), (&json!("task_exists"), &json!("task_exists")));
    assert_eq!((&goal["answer"]["recorded"], &goal["answer"]["task"]), (&json!(false), &Value::Null));
    assert_eq!(ok(&serving, "beta", "get_task", json!({"name": "fix-ci"}))["found"], false, "another project");

    let record = json!({"task_name": "fix-ci", "kind": "note", "payload": "looked at the log", "request_id": "r-1"});
    let recorded = ok(&serving, "alpha", "record_event", record.clone());
    assert_eq!(recorded["event"]["seq"], 1);
    let step = json!({"task_name": "fix-ci", "name": "read log", "state": "completed", "result_event_seq": 1});
    assert_eq!(ok(&serving, "alpha", "set_step", step)["step"]["kind"], "other");
    let missing = memory_job(
        &serving,
        "alpha",
        "claude",
        "set_step",
        json!({"task_name": "fix-ci", "name": "x", "state": "completed", "result_event_seq": 9}),
    );
    assert_eq!(missing.json()["metadata"]["error"], "event_not_found");
    let no_task = memory_job(
        &serving,
        "beta",
        "claude",
        "record_event",
        json!({"task_name": "fix-ci", "kind": "note", "payload": "x"}),
    );
    assert_eq!(no_task.json()["metadata"]["error"], "task_not_found");
    for (name, arguments) in [
        ("list_events", json!({"task_name": "fix-ci", "limit": 0})),
        ("list_events", json!({"task_name": "fix-ci", "limit": 201})),
        ("record_event", json!({"task_name": "fix-ci", "kind": "gossip", "payload": "x"})),
        ("set_step", json!({"task_name": "fix-ci", "name": "x", "state": "maybe"})),
    ] {
        assert_eq!(memory_job(&serving, "alpha", "claude", name, arguments.clone()).status, 422, "{name} {arguments}");
    }
    let long_id = json!({"task_name": "fix-ci", "kind": "note", "payload": "x", "request_id": "x".repeat(65)});
    let long_id = memory_job(&serving, "alpha", "claude", "record_event", long_id).json();
    assert_eq!(long_id["answer"]["error"], "invalid_request_id", "{long_id}");
    let bad_header = memory_job(&serving, "", "claude", "get_task", json!({"name": "fix-ci"}));
    assert_eq!(bad_header.status, 422, "an empty project is no project");

    // Killed after the write was answered, then the same request to the next server: the
    // stored answer, one event.
    serving.signal("-KILL");
    let serving = Serving::start(&db, &s.0, None);
    assert_eq!(ok(&serving, "alpha", "record_event", record), recorded);
    let page = ok(&serving, "alpha", "list_events", json!({"task_name": "fix-ci"}));
    assert_eq!(page["events"].as_array().unwrap().len(), 1, "{page}");
    assert_eq!(page["events"][0]["author"], "claude");
    let view = ok(&serving, "alpha", "get_task", json!({"name": "fix-ci"}));
    assert_eq!((&view["view"]["last_event_seq"], &view["view"]["step_counts"]["completed"]), (&json!(1), &json!(1)));
    assert_eq!(view["view"]["steps"]["completed"][0]["name"], "read log", "{view}");
    // The agent's checklist is the project's and the agent's too.
    ok(&serving, "alpha", "add_agent_task", json!({"title": "fix CI", "request_id": "add-1"}));
    assert_eq!(ok(&serving, "alpha", "list_agent_tasks", json!({})).as_array().unwrap().len(), 1);
    assert_eq!(ok(&serving, "beta", "list_agent_tasks", json!({})), json!([]), "another project's");
    let done = ok(&serving, "alpha", "list_steps", json!({"task_name": "fix-ci", "state": "completed"}));
    assert_eq!(done[0]["name"], "read log");

    // A session the agent starts is its own: what it writes meanwhile shows beside it.
    s.write(
        "one.json",
        &json!({"id": "one", "name": "one", "version": "1.0", "tasks": [
            {"id": "start", "type": "system.start"},
            {"id": "end", "type": "system.end", "depends_on": [{"id": "start"}]}]})
        .to_string(),
    );
    let started = ok(&serving, "alpha", "start_session", json!({"file": "one.json"}));
    let session = started["session_id"].as_str().unwrap().to_string();
    ok(&serving, "alpha", "record_event", json!({"task_name": "fix-ci", "kind": "note", "payload": "started it"}));
    ok(&serving, "alpha", "start_agent_task", json!({"task_id": 1}));
    let notes = ok(&serving, "alpha", "get_session_notes", json!({"session_id": session}));
    assert_eq!(notes["started_by"], json!({"project": "alpha", "agent": "claude"}), "{notes}");
    let events = &notes["memory"][0]["events"];
    assert_eq!((events.as_array().map(Vec::len), &events[0]["payload"]), (Some(1), &json!("started it")), "{notes}");
    assert_eq!(notes["checklists"][0]["tasks"][0]["status"], "in_progress", "{notes}");
    let listed = serving.job("list_sessions", json!({})).json();
    assert_eq!(listed["answer"][0]["started_by"]["agent"], "claude", "{listed}");
}

/// A JSON-RPC message to `/mcp`, with the token unless `bearer` is `None`; the reply and the
/// messages of its body (a Server-Sent Events stream or one JSON document).
fn mcp_post(
    serving: &Serving,
    bearer: Option<&str>,
    session: Option<&str>,
    extra: &str,
    message: Value,
) -> (Reply, Vec<Value>) {
    let body = message.to_string();
    let mut head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nAccept: application/json, text/event-stream\r\n\
         Content-Type: application/json\r\nContent-Length: {}{extra}",
        serving.addr,
        body.len()
    );
    if let Some(bearer) = bearer {
        head.push_str(&format!("\r\nAuthorization: {bearer}"));
    }
    if let Some(session) = session {
        head.push_str(&format!("\r\nMcp-Session-Id: {session}"));
    }
    let reply = send_raw(&serving.addr, &head, body.into_bytes());
    let text = String::from_utf8_lossy(&reply.body).into_owned();
    let messages = match serde_json::from_str::<Value>(&text) {
        Ok(one) => vec![one],
        Err(_) => text
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str(d.trim()).ok())
            .collect(),
    };
    (reply, messages)
}

#[test]
fn mcp_over_streamable_http_is_served_at_mcp_behind_the_same_checks() {
    let s = Scratch::new("serve-mcp");
    let db = s.0.join("store.db");
    let serving = Serving::start(&db, &s.0, None);
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw-http", "version": "1"}}});
    let (refused, _) = mcp_post(&serving, None, None, "", initialize.clone());
    assert_eq!(refused.status, 401, "no token, no MCP");
    let bearer = serving.bearer();
    let (rebound, _) = mcp_post(&serving, Some(&bearer), None, "\r\nOrigin: http://rebind.example", initialize.clone());
    assert_eq!(rebound.status, 403, "another site's page is refused");

    let (init, messages) = mcp_post(&serving, Some(&bearer), None, "", initialize);
    assert_eq!(init.status, 200, "{}", String::from_utf8_lossy(&init.body));
    assert_eq!(messages[0]["result"]["serverInfo"]["name"], "orrery", "{messages:?}");
    let session = init.header("mcp-session-id").expect("a session id");
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    mcp_post(&serving, Some(&bearer), Some(&session), "", initialized);
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "create_task", "arguments": {"name": "over-http", "goal": "g"}}});
    let (_, answered) = mcp_post(&serving, Some(&bearer), Some(&session), "\r\nX-Orrery-Project: web", call);
    let result = &answered.last().unwrap_or_else(|| panic!("no answer"))["result"];
    assert_eq!(result["structuredContent"]["task"]["project_id"], "web", "the header's project: {result}");
    assert_eq!(result["structuredContent"]["task"]["author"], "raw-http", "the client's name: {result}");
    let (code, stderr) = serving.interrupt();
    assert_eq!(code, Some(0), "{stderr}");
}
