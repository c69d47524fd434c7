//! `orrery mcp`, the Model Context Protocol server on standard input/output (docs/agents.md).
//!
//! - The real client (`tests/mcp/client.py`, the official MCP Python SDK) runs in `suites.rs`.
//! - Raw JSON-RPC from here, so that a failure reads without Python: initialize, tools/list
//!   against the catalogue, tool calls and their failures, and how it ends (EOF, SIGTERM) with
//!   the sessions it runs stopped.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

const ORRERY: &str = env!("CARGO_BIN_EXE_orrery");

/// The longest one answer may take here.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(60);

fn collect(mut pipe: impl Read + Send + 'static) -> thread::JoinHandle<String> {
    thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

/// A scratch folder, removed at the end.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("orrery-mcp-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `orrery mcp` spoken to line by line.
struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    /// Every line it wrote on stdout so far.
    seen: Vec<String>,
    stderr: Option<thread::JoinHandle<String>>,
    next_id: u64,
}

impl Server {
    fn start(db: &Path) -> Server {
        Server::start_with(db, &[])
    }

    fn start_with(db: &Path, flags: &[&str]) -> Server {
        let mut child = Command::new(ORRERY)
            .args(["mcp", "--db"])
            .arg(db)
            .args(flags)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("orrery mcp starts");
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stderr = Some(collect(child.stderr.take().unwrap()));
        Server { stdin: child.stdin.take(), child, lines, seen: Vec::new(), stderr, next_id: 1 }
    }

    fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    }

    /// The next message it writes, which must be one JSON-RPC message on one line.
    fn next(&mut self) -> Value {
        let line = self.lines.recv_timeout(ANSWER_TIMEOUT).unwrap_or_else(|e| {
            panic!("no message from orrery mcp within {ANSWER_TIMEOUT:?} ({e}); so far: {:#?}", self.seen)
        });
        self.seen.push(line.clone());
        let message: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout carries a line that is not JSON ({e}): {line}"));
        assert_eq!(message["jsonrpc"], "2.0", "not a JSON-RPC message: {line}");
        message
    }

    /// Sends a request and answers its response (notifications before it are kept aside).
    fn request(&mut self, method: &str, params: Value) -> (Value, Vec<Value>) {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let mut notifications = Vec::new();
        loop {
            let message = self.next();
            if message["id"] == json!(id) {
                return (message, notifications);
            }
            assert!(
                message.get("id").is_none() || message.get("method").is_some(),
                "an answer to another request: {message}"
            );
            notifications.push(message);
        }
    }

    fn initialize(&mut self) -> Value {
        let (answer, _) = self.request(
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "orrery-test", "version": "1"},
            }),
        );
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        answer
    }

    /// A tools/call's result (it must not be a protocol error).
    fn call(&mut self, tool: &str, arguments: Value) -> Value {
        let (answer, _) = self.request("tools/call", json!({"name": tool, "arguments": arguments}));
        assert!(answer.get("error").is_none(), "{tool}: a protocol error: {answer}");
        answer["result"].clone()
    }

    /// Closes stdin (or not) and waits for the exit, at most `within`.
    fn wait_exit(&mut self, within: Duration) -> (std::process::ExitStatus, String) {
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                let stderr = self.stderr.take().map(|h| h.join().unwrap()).unwrap_or_default();
                // Whatever else it wrote on stdout must still be JSON-RPC.
                while let Ok(line) = self.lines.recv_timeout(Duration::from_secs(2)) {
                    let parsed: Result<Value, _> = serde_json::from_str(&line);
                    assert!(parsed.is_ok(), "stdout carries a line that is not JSON: {line}\n{stderr}");
                }
                return (status, stderr);
            }
            if Instant::now() >= deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                let stderr = self.stderr.take().map(|h| h.join().unwrap()).unwrap_or_default();
                panic!("orrery mcp did not exit within {within:?}\n{stderr}");
            }
            thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The text of a tool result's first content block.
fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_else(|| panic!("no text content: {result}"))
}

fn catalogue() -> Vec<String> {
    let out = Command::new(ORRERY).args(["jobs", "--format", "json"]).output().unwrap();
    assert!(out.status.success());
    let jobs: Value = serde_json::from_slice(&out.stdout).unwrap();
    jobs.as_array().unwrap().iter().map(|j| j["name"].as_str().unwrap().to_string()).collect()
}

fn blueprint(command: &str) -> String {
    json!({
        "id": "flow", "name": "flow", "version": "1.0",
        "tasks": [
            {"id": "start", "type": "system.start"},
            {"id": "a", "type": "shell.run", "params": [{"name": "command", "value": command}],
             "depends_on": [{"id": "start"}]},
            {"id": "end", "type": "system.end", "depends_on": [{"id": "a"}]},
        ],
    })
    .to_string()
}

#[test]
fn raw_json_rpc_initialize_lists_the_catalogue_as_tools_and_calls_one() {
    let scratch = Scratch::new("raw");
    let mut server = Server::start(&scratch.0.join("orrery.db"));
    let init = server.initialize();
    let result = &init["result"];
    assert_eq!(result["serverInfo"]["name"], "orrery", "{init}");
    assert_eq!(result["serverInfo"]["version"], env!("CARGO_PKG_VERSION"), "{init}");
    assert!(result["capabilities"]["tools"].is_object() && result["capabilities"]["resources"].is_object(), "{init}");
    assert!(result["instructions"].as_str().unwrap_or("").contains("start_session"), "{init}");

    let (listed, _) = server.request("tools/list", json!({}));
    let tools = listed["result"]["tools"].as_array().unwrap_or_else(|| panic!("{listed}")).clone();
    let names: Vec<String> = tools.iter().map(|t| t["name"].as_str().unwrap().to_string()).collect();
    assert_eq!(names, catalogue(), "one tool per job, in the catalogue's order");
    for tool in &tools {
        assert_eq!(tool["inputSchema"]["type"], "object", "{tool}");
        if let Some(output) = tool.get("outputSchema") {
            assert_eq!(output["type"], "object", "{tool}");
        }
    }
    let get_session = tools.iter().find(|t| t["name"] == "get_session").unwrap();
    assert!(get_session["outputSchema"]["properties"]["tasks"].is_object(), "{get_session}");
    assert_eq!(get_session["annotations"]["readOnlyHint"], true, "{get_session}");
    let start = tools.iter().find(|t| t["name"] == "start_session").unwrap();
    assert_eq!(start["annotations"]["readOnlyHint"], false, "{start}");
    // An answer that is not an object declares no output schema (MCP wants objects).
    let listing = tools.iter().find(|t| t["name"] == "list_sessions").unwrap();
    assert!(listing.get("outputSchema").is_none(), "{listing}");

    let sessions = server.call("list_sessions", json!({}));
    assert_eq!(sessions["isError"], false, "{sessions}");
    assert_eq!(serde_json::from_str::<Value>(text(&sessions)).unwrap(), json!([]), "{sessions}");

    let file = scratch.0.join("flow.json");
    let written = server.call("write_blueprint_file", json!({"file": file, "text": blueprint("echo raw")}));
    assert_eq!(written["isError"], false, "{written}");
    assert_eq!(written["structuredContent"]["changed"], true, "{written}");
    assert_eq!(serde_json::from_str::<Value>(text(&written)).unwrap(), written["structuredContent"]);

    // A business failure: isError, the message and its code.
    let missing = server.call("get_session", json!({"session_id": "no-such-session"}));
    assert_eq!(missing["isError"], true, "{missing}");
    assert!(text(&missing).contains("no-such-session") && text(&missing).contains("not_found"), "{missing}");
    assert_eq!(missing["_meta"]["orrery/error"], "not_found", "{missing}");

    // Arguments the schema refuses: isError naming the field, not a protocol error.
    let refused = server.call("get_session", json!({"session_id": "x", "bogus": true}));
    assert_eq!(refused["isError"], true, "{refused}");
    assert!(text(&refused).contains("bogus"), "{refused}");

    // An unknown tool is the protocol's error.
    let (unknown, _) = server.request("tools/call", json!({"name": "no_such_tool", "arguments": {}}));
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    assert!(unknown["error"]["message"].as_str().unwrap().contains("no_such_tool"), "{unknown}");

    // The templates, and a resource that is not there.
    let (templates, _) = server.request("resources/templates/list", json!({}));
    let uris: Vec<&str> = templates["result"]["resourceTemplates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["uriTemplate"].as_str().unwrap())
        .collect();
    assert!(uris.contains(&"orrery://session/{session_id}/log/{task}"), "{templates}");
    let (nothing, _) = server.request("resources/read", json!({"uri": "orrery://nothing/here"}));
    assert!(nothing["error"]["code"].is_i64(), "{nothing}");

    drop(server.stdin.take());
    let (status, stderr) = server.wait_exit(Duration::from_secs(20));
    assert!(status.success(), "{status}\n{stderr}");
}

#[test]
fn a_session_reports_progress_while_waited_for_and_its_log_reads_as_a_resource() {
    let scratch = Scratch::new("progress");
    let mut server = Server::start(&scratch.0.join("orrery.db"));
    server.initialize();
    let file = scratch.0.join("flow.json");
    server.call("write_blueprint_file", json!({"file": file, "text": blueprint("sleep 2; echo slow")}));
    let started = server.call("start_session", json!({"file": file}));
    let session =
        started["structuredContent"]["session_id"].as_str().unwrap_or_else(|| panic!("{started}")).to_string();
    let (waited, notifications) = server.request(
        "tools/call",
        json!({"name": "wait_session", "arguments": {"session_id": session, "timeout_s": 30},
               "_meta": {"progressToken": "w1"}}),
    );
    assert_eq!(waited["result"]["structuredContent"]["session"]["state"], "completed", "{waited}");
    let progress: Vec<&Value> = notifications.iter().filter(|n| n["method"] == "notifications/progress").collect();
    assert!(progress.len() >= 2, "a notification at the start and one when it ended: {notifications:#?}");
    assert!(
        progress.iter().all(|n| n["params"]["progressToken"] == "w1" && n["params"]["total"].as_f64() == Some(3.0)),
        "{notifications:#?}"
    );
    let values: Vec<f64> = progress.iter().map(|n| n["params"]["progress"].as_f64().unwrap()).collect();
    assert!(values.windows(2).all(|w| w[0] < w[1]), "progress grows: {values:?}");
    assert_eq!(values.last(), Some(&3.0), "{notifications:#?}");

    let uri = format!("orrery://session/{session}/log/a");
    let (read, _) = server.request("resources/read", json!({"uri": uri}));
    assert_eq!(read["result"]["contents"][0]["text"], "slow\n", "{read}");
    assert_eq!(read["result"]["contents"][0]["uri"], uri.as_str(), "{read}");
    let (blueprint, _) =
        server.request("resources/read", json!({"uri": format!("orrery://session/{session}/blueprint")}));
    let text = blueprint["result"]["contents"][0]["text"].as_str().unwrap_or_else(|| panic!("{blueprint}"));
    assert_eq!(serde_json::from_str::<Value>(text).unwrap()["id"], "flow");

    let (listed, _) = server.request("resources/list", json!({}));
    let resources = listed["result"]["resources"].as_array().unwrap_or_else(|| panic!("{listed}"));
    assert!(resources.iter().any(|r| r["uri"] == "orrery://blueprint/flow"), "{listed}");
    drop(server.stdin.take());
    let (status, stderr) = server.wait_exit(Duration::from_secs(20));
    assert!(status.success(), "{status}\n{stderr}");
}

/// Runs `orrery job NAME ARGS --db DB` and answers the envelope.
fn job(db: &Path, name: &str, arguments: Value) -> Value {
    let out = Command::new(ORRERY).args(["job", name, &arguments.to_string(), "--db"]).arg(db).output().unwrap();
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{name}: {e}: {}", String::from_utf8_lossy(&out.stderr)))
}

/// Starts a session of a task that sleeps, through `server`, and waits until its task runs.
fn start_sleeper(server: &mut Server, folder: &Path, db: &Path) -> String {
    let file = folder.join("flow.json");
    server.call("write_blueprint_file", json!({"file": file, "text": blueprint("sleep 60")}));
    let started = server.call("start_session", json!({"file": file}));
    let session =
        started["structuredContent"]["session_id"].as_str().unwrap_or_else(|| panic!("{started}")).to_string();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let view = job(db, "get_session", json!({"session_id": session}));
        let tasks = view["answer"]["tasks"].as_array().cloned().unwrap_or_default();
        if tasks.iter().any(|t| t["task"] == "a" && t["state"] == "RUNNING") {
            return session;
        }
        assert!(Instant::now() < deadline, "task a does not run: {view}");
        thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn the_end_of_stdin_or_sigterm_ends_it_and_stops_the_sessions_it_runs() {
    for ending in ["eof", "sigterm"] {
        let scratch = Scratch::new(ending);
        let db = scratch.0.join("orrery.db");
        let mut server = Server::start(&db);
        server.initialize();
        let session = start_sleeper(&mut server, &scratch.0, &db);
        let began = Instant::now();
        match ending {
            "eof" => drop(server.stdin.take()),
            _ => {
                // SAFETY: a signal to the child this test started.
                assert_eq!(unsafe { libc::kill(server.child.id() as i32, libc::SIGTERM) }, 0);
            }
        }
        let (status, stderr) = server.wait_exit(Duration::from_secs(30));
        assert!(status.success(), "{ending}: {status}\n{stderr}");
        assert!(
            began.elapsed() < Duration::from_secs(30),
            "{ending}: it stopped the sleeper rather than waiting for it"
        );
        assert!(stderr.contains(&format!("stopped session {session}")), "{ending}: {stderr}");
        let view = job(&db, "get_session", json!({"session_id": session}));
        assert_eq!(view["answer"]["session"]["state"], "stopped", "{ending}: {view}");
    }
}

#[test]
fn the_task_memory_is_kept_in_the_servers_project_and_signed_with_the_clients_name() {
    let scratch = Scratch::new("memory");
    let db = scratch.0.join("orrery.db");
    let mut server = Server::start_with(&db, &["--project", "site"]);
    server.initialize();
    let created = server.call("create_task", json!({"name": "triage", "goal": "sort the failures"}));
    assert_eq!(created["isError"], false, "{created}");
    assert_eq!(created["structuredContent"]["task"]["author"], "orrery-test", "the client's name: {created}");
    let recorded = server.call("record_event", json!({"task_name": "triage", "kind": "note", "payload": "three"}));
    assert_eq!(recorded["structuredContent"]["event"]["seq"], 1, "{recorded}");
    let missing = server
        .call("set_step", json!({"task_name": "triage", "name": "x", "state": "completed", "result_event_seq": 5}));
    assert_eq!(
        (&missing["isError"], missing["_meta"]["orrery/error"].as_str()),
        (&json!(true), Some("event_not_found"))
    );
    drop(server);

    // The same store from a terminal: only the project the server wrote in has the task.
    let in_project = |project: &str| {
        let out = Command::new(ORRERY)
            .args(["job", "get_task", r#"{"name": "triage"}"#, "--project", project, "--db"])
            .arg(&db)
            .output()
            .unwrap();
        serde_json::from_slice::<Value>(&out.stdout).unwrap()["answer"].clone()
    };
    assert_eq!(in_project("site")["view"]["last_event_seq"], 1);
    assert_eq!(in_project("default")["found"], false);
    let refused = Command::new(ORRERY).args(["mcp", "--project", "", "--db"]).arg(&db).output().unwrap();
    assert_eq!(refused.status.code(), Some(2), "an empty project is refused at start");
}
