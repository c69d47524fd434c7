//! Publishing to the real reference server (issue 7): an antikythera deployment (Redis,
//! Mosquitto, the reference's own orchestrator server from antikythera-sdk[deployment]) stood up
//! on loopback by server/serve_reference.py, and `orrery publish` as a user runs it.
//!
//! - Every corpus blueprint is sent (`--force`: the server decides, not Orrery's prediction)
//!   and the server's verdict is the one Orrery predicted (`orrery validate`'s `server_accepts`);
//!   a blueprint it refuses comes back with problems on the tasks Orrery named. What the server
//!   holds afterwards is what was uploaded, inner blueprints included.
//! - Without `--force`, a blueprint Orrery knows the server refuses is not sent, nor anything
//!   published with it.
//! - Saved servers (`orrery servers`) are used by name; a server that is not there is exit 2
//!   with its address named.
//! - A blueprint published is run on the server by the reference's own agents and followed
//!   from Orrery to its end (`orrery remote run`), then restarted there.

mod common;

use common::*;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The blueprints the server holds, by id.
fn held(url: &str) -> BTreeSet<String> {
    let list = get(url, "/blueprints");
    list.as_array().unwrap().iter().map(|b| b["id"].as_str().unwrap().to_string()).collect()
}

/// The server's JSON answer to `GET path` (HTTP/1.0 by hand: no client needed).
fn get(url: &str, path: &str) -> Value {
    use std::io::{Read, Write};
    let address = url.trim_start_matches("http://");
    let mut socket = std::net::TcpStream::connect(address).expect("the server listens");
    write!(socket, "GET {path} HTTP/1.0\r\nHost: {address}\r\n\r\n").unwrap();
    let mut answer = String::new();
    socket.read_to_string(&mut answer).unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").expect("an HTTP answer");
    assert!(head.starts_with("HTTP/1.1 200") || head.starts_with("HTTP/1.0 200"), "GET {path}: {head}");
    serde_json::from_str(body).unwrap_or_else(|e| panic!("GET {path}: not JSON ({e}): {body}"))
}

/// The corpus blueprint files (`*.json` but the schema).
fn corpus_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(corpus_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json") && !p.to_string_lossy().contains("schema"))
        .collect();
    files.sort();
    files
}

/// A blueprint whose condition reads a name no task writes: the reference's upload refuses it
/// (`check_dataflow`), and Orrery says so of task `b`.
fn refused_blueprint(dir: &Path) -> PathBuf {
    let file = dir.join("reads_nothing.json");
    let blueprint = json!({"id": "reads_nothing", "name": "reads nothing", "version": "1.0", "tasks": [
        {"id": "start", "type": "system.start"},
        {"id": "b", "type": "system.sleep", "condition": "nothing_writes_this > 1",
            "params": [{"name": "duration", "value": 0}], "depends_on": [{"id": "start", "type": "FS"}]},
        {"id": "end", "type": "system.end", "depends_on": [{"id": "b", "type": "FS"}]},
    ]});
    std::fs::write(&file, serde_json::to_string_pretty(&blueprint).unwrap()).unwrap();
    file
}

#[test]
fn the_server_takes_what_orrery_predicts_it_takes_and_refuses_the_rest_on_the_tasks_orrery_named() {
    let deployment = deploy();
    let scratch = scratch_dir("publish-corpus");
    let db = scratch.join("orrery.db");
    let mut files = corpus_files();
    files.push(refused_blueprint(&scratch));
    let paths: Vec<&str> = files.iter().map(|p| p.to_str().unwrap()).collect();

    let predicted = json_of(&orrery(&[&["validate", "--format", "json"][..], &paths].concat(), &db));
    let mut checked = 0;
    let mut refused = 0;
    let mut uploaded = BTreeSet::new();
    for (file, report) in files.iter().zip(predicted.as_array().unwrap()) {
        let out = orrery(
            &["publish", "--force", "--format", "json", "--server", &deployment.url, file.to_str().unwrap()],
            &db,
        );
        let answer = json_of(&out);
        let sent = answer["blueprints"].as_array().unwrap();
        let given = sent.last().expect("something to send");
        assert_eq!(given["given"], true, "what it calls goes before it: {answer}");
        if file.ends_with("toy_problem_4.json") {
            let ids: Vec<&str> = sent.iter().map(|b| b["blueprint_id"].as_str().unwrap()).collect();
            assert_eq!(ids, ["TP4_PnP", "TP4"], "the inner blueprint it calls by id, found beside it, first");
        }
        let accepts = report["server_accepts"] == true;
        let name = file.file_name().unwrap().to_string_lossy();
        if given["outcome"] == "refused" {
            refused += 1;
            assert!(!accepts, "{name}: the server refused what Orrery predicted it takes: {given}");
            let named = |list: &Value, key: &str, only: fn(&Value) -> bool| -> BTreeSet<String> {
                list.as_array()
                    .unwrap()
                    .iter()
                    .filter(|p| only(p))
                    .filter_map(|p| p[key].as_str().map(str::to_string))
                    .collect()
            };
            let server_tasks = named(&given["problems"], "task_id", |_| true);
            let orrery_tasks = named(&report["diagnostics"], "task_id", |d| d["server_rejects"] == true);
            assert_eq!(
                server_tasks, orrery_tasks,
                "{name}: the server's problems are on the tasks Orrery named: {given}"
            );
            assert_eq!(out.status.code(), Some(1), "{name}");
        } else {
            // Uploaded, unless something it calls was refused first.
            assert_eq!(given["outcome"], "uploaded", "{name}: {answer}");
            assert!(accepts, "{name}: the server took what Orrery predicted it refuses: {}", report["diagnostics"]);
            for b in answer["blueprints"].as_array().unwrap() {
                uploaded.insert(b["blueprint_id"].as_str().unwrap().to_string());
            }
        }
        checked += 1;
    }
    assert_eq!(checked, files.len());
    assert!(refused >= 1, "at least the blueprint made to be refused was refused");
    assert!(uploaded.len() >= 10, "most of the corpus went up: {uploaded:?}");
    assert_eq!(held(&deployment.url), uploaded, "the server holds exactly what was uploaded");
}

#[test]
fn a_blueprint_known_to_be_refused_is_not_sent_nor_anything_with_it_and_saved_servers_go_by_name() {
    let deployment = deploy();
    let scratch = scratch_dir("publish-gate");
    let db = scratch.join("orrery.db");
    let bad = refused_blueprint(&scratch);
    let good = corpus_dir().join("toy_problem_1.json");

    let added = orrery(&["servers", "add", "lab", &deployment.url, "--token", "not-checked-by-the-reference"], &db);
    assert_eq!(added.status.code(), Some(0), "{}", String::from_utf8_lossy(&added.stderr));
    let listed = String::from_utf8_lossy(&orrery(&["servers"], &db).stdout).to_string();
    assert!(listed.contains("lab") && listed.contains(&deployment.url) && listed.contains("(token)"), "{listed}");

    let gated = orrery(&["publish", "--server", "lab", bad.to_str().unwrap(), good.to_str().unwrap()], &db);
    let text = String::from_utf8_lossy(&gated.stdout);
    assert_eq!(gated.status.code(), Some(1), "{text}");
    assert!(text.contains("invalid   reads_nothing") && text.contains("task b:"), "{text}");
    assert!(text.contains("not sent  toy-problem-1"), "{text}");
    assert!(held(&deployment.url).is_empty(), "nothing reached the server");

    let sent = orrery(&["publish", "--server", "lab", good.to_str().unwrap()], &db);
    assert_eq!(sent.status.code(), Some(0), "{}", String::from_utf8_lossy(&sent.stdout));
    assert_eq!(held(&deployment.url), BTreeSet::from(["toy-problem-1".to_string()]));

    // The deployment goes away: its address is named, exit 2.
    let url = deployment.url.clone();
    drop(deployment);
    let gone = orrery(&["publish", "--server", "lab", good.to_str().unwrap()], &db);
    assert_eq!(gone.status.code(), Some(2), "{}", String::from_utf8_lossy(&gone.stdout));
    let text = String::from_utf8_lossy(&gone.stdout);
    assert!(text.contains("failed") && text.contains(&url) && text.contains("cannot be reached"), "{text}");
    let removed = orrery(&["servers", "remove", "lab"], &db);
    assert_eq!(removed.status.code(), Some(0));
    let unknown = orrery(&["publish", "--server", "lab", good.to_str().unwrap()], &db);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&unknown.stderr).contains("no server named \"lab\""),
        "{}",
        String::from_utf8_lossy(&unknown.stderr)
    );
}

/// A scratch folder under the target directory, left for inspection when a test fails.

#[test]
fn a_blueprint_runs_on_the_server_with_the_references_agents_and_is_followed_to_its_end() {
    let deployment = deploy_with(&["--sys-agents"]);
    let scratch = scratch_dir("remote-run");
    let db = scratch.join("orrery.db");
    let retry = corpus_dir().join("scope_retry.json");
    let sent = orrery(&["publish", "--server", &deployment.url, retry.to_str().unwrap()], &db);
    assert_eq!(sent.status.code(), Some(0), "{}", String::from_utf8_lossy(&sent.stdout));

    let server = ["--server", deployment.url.as_str()];
    let ran = orrery(
        &[&["remote", "run", "scope_retry_example", "--format", "json", "--timeout", "120"][..], &server].concat(),
        &db,
    );
    assert_eq!(
        ran.status.code(),
        Some(0),
        "{}\n{}",
        String::from_utf8_lossy(&ran.stdout),
        String::from_utf8_lossy(&ran.stderr)
    );
    let waited = json_of(&ran);
    assert_eq!(waited["session"]["state"], "completed", "{waited}");
    let states = |task: &str, state: &str| {
        waited["tasks"].as_array().unwrap().iter().filter(|t| t["task_id"] == task && t["state"] == state).count()
    };
    assert_eq!(states("start", "SUCCEEDED"), 1, "followed from its first task: {waited}");
    assert_eq!(states("scope_open", "SUCCEEDED"), 4, "the retried scope ran 4 times, as the reference runs it");
    assert_eq!(states("end", "SUCCEEDED"), 1);

    let session = waited["session"]["session_id"].as_str().unwrap().to_string();

    // Its last tasks reset, the session resumed: they run again, the rest does not.
    let reset = orrery(
        &[&["remote", "reset", session.as_str(), "scope_retry_example.post_assembly"][..], &server].concat(),
        &db,
    );
    assert_eq!(reset.status.code(), Some(0), "{}", String::from_utf8_lossy(&reset.stderr));
    assert!(
        String::from_utf8_lossy(&reset.stdout).contains("Reset 2 task(s)"),
        "post_assembly and end: {}",
        String::from_utf8_lossy(&reset.stdout)
    );
    let again = orrery(
        &[&["remote", "wait", session.as_str(), "--start", "--format", "json", "--timeout", "120"][..], &server]
            .concat(),
        &db,
    );
    assert_eq!(again.status.code(), Some(0), "{}", String::from_utf8_lossy(&again.stdout));
    let again = json_of(&again);
    assert_eq!(again["session"]["state"], "completed", "{again}");
    let ran: BTreeSet<&str> = again["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["state"] == "SUCCEEDED")
        .map(|t| t["task_id"].as_str().unwrap())
        .collect();
    assert_eq!(ran, BTreeSet::from(["post_assembly", "end"]), "only the tasks reset ran again: {again}");
    let listed = json_of(&orrery(&[&["remote", "sessions", "--format", "json"][..], &server].concat(), &db));
    assert!(
        listed.as_array().unwrap().iter().any(|s| s["session_id"] == session.as_str() && s["state"] == "completed"),
        "{listed}"
    );

    // A restart is a new session on the server, started: followed to its end too.
    let again =
        json_of(&orrery(&[&["remote", "restart", session.as_str(), "--format", "json"][..], &server].concat(), &db));
    let new = again["session_id"].as_str().unwrap();
    assert_ne!(new, session);
    let waited = orrery(&[&["remote", "wait", new, "--timeout", "120"][..], &server].concat(), &db);
    assert_eq!(waited.status.code(), Some(0), "{}", String::from_utf8_lossy(&waited.stdout));
    assert!(String::from_utf8_lossy(&waited.stdout).contains(&format!("{new} completed")));

    // A blueprint the server does not hold: its own answer, exit 1.
    let unknown = orrery(&[&["remote", "run", "no_such_blueprint"][..], &server].concat(), &db);
    assert_eq!(unknown.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&unknown.stderr).contains("Blueprint no_such_blueprint not found"),
        "{}",
        String::from_utf8_lossy(&unknown.stderr)
    );
}

/// `orrery serve` on a free port, stopped when dropped.
struct Serving {
    child: std::process::Child,
    addr: String,
    token: String,
}

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(db: &Path) -> Serving {
    use std::io::BufRead;
    let mut child = std::process::Command::new(orrery_binary())
        .args(["serve", "--port", "0", "--db", db.to_str().unwrap()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    // orrery serve: http://127.0.0.1:PORT token TOKEN
    let words: Vec<&str> = line.split_whitespace().collect();
    Serving { addr: words[2].trim_start_matches("http://").to_string(), token: words[4].to_string(), child }
}

impl Serving {
    /// Calls a job over HTTP; its envelope.
    fn job(&self, name: &str, arguments: Value) -> Value {
        use std::io::{Read, Write};
        let body = json!({ "arguments": arguments }).to_string();
        let mut socket = std::net::TcpStream::connect(&self.addr).unwrap();
        write!(
            socket,
            "POST /jobs/{name} HTTP/1.0\r\nHost: {}\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            self.addr,
            self.token,
            body.len()
        )
        .unwrap();
        let mut answer = String::new();
        socket.read_to_string(&mut answer).unwrap();
        let (_, body) = answer.split_once("\r\n\r\n").expect("an HTTP answer");
        serde_json::from_str(body).unwrap_or_else(|e| panic!("{name}: not JSON ({e}): {body}"))
    }

    fn ok(&self, name: &str, arguments: Value) -> Value {
        let envelope = self.job(name, arguments.clone());
        assert_eq!(envelope["success"], true, "{name} {arguments}: {envelope}");
        envelope["answer"].clone()
    }

    /// The mirror's view once its follower is done: the server's last snapshot applied (or the
    /// test fails after 60 s).
    fn until_followed(&self, session: &str) -> Value {
        let start = std::time::Instant::now();
        loop {
            let view = self.ok("get_session", json!({ "session_id": session }));
            if view["link"]["following"] == false {
                return view;
            }
            assert!(start.elapsed().as_secs() < 60, "session {session} is still followed: {view}");
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }

    /// The mirror's view once its session is `state` (or the test fails after 60 s).
    fn until_state(&self, session: &str, state: &str) -> Value {
        let start = std::time::Instant::now();
        loop {
            let view = self.ok("get_session", json!({ "session_id": session }));
            if view["session"]["state"] == state {
                return view;
            }
            assert!(start.elapsed().as_secs() < 60, "session {session} is not {state}: {view}");
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }
}

#[test]
fn a_run_on_the_server_is_followed_into_a_local_mirror_that_the_run_views_read() {
    let deployment = deploy_with(&["--sys-agents"]);
    let scratch = scratch_dir("mirror");
    let db = scratch.join("orrery.db");
    let file = scratch.join("naps.json");
    let blueprint = json!({"id": "naps", "name": "naps", "version": "1.0", "tasks": [
        {"id": "start", "type": "system.start"},
        {"id": "a", "type": "system.sleep", "params": [{"name": "duration", "value": 0.3}], "depends_on": [{"id": "start"}]},
        {"id": "b", "type": "system.sleep", "params": [{"name": "duration", "value": 0.3}], "depends_on": [{"id": "a"}]},
        {"id": "end", "type": "system.end", "depends_on": [{"id": "b"}]},
    ]});
    std::fs::write(&file, serde_json::to_string_pretty(&blueprint).unwrap()).unwrap();
    let out = orrery(&["publish", "--server", &deployment.url, file.to_str().unwrap()], &db);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    let serving = serve(&db);
    let started = serving.ok("remote_run", json!({"server": deployment.url, "blueprint_id": "naps", "follow": true}));
    let mirror = started["mirror"].as_str().expect("the run is followed").to_string();
    let view = serving.until_state(&mirror, "completed");
    assert_eq!(view["session"]["remote"], json!({"url": deployment.url, "session_id": started["session_id"]}));
    let states: Vec<(String, String)> = view["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["node"].as_str().unwrap().to_string(), t["state"].as_str().unwrap().to_string()))
        .collect();
    for node in ["naps.start", "naps.a", "naps.b", "naps.end"] {
        assert!(states.contains(&(node.to_string(), "SUCCEEDED".to_string())), "{node}: {states:?}");
    }
    // The timeline's bars: the sleeps ran while the mirror followed, each for about 0.3 s.
    for node in ["naps.a", "naps.b"] {
        let attempt = view["attempts"].as_array().unwrap().iter().find(|a| a["node"] == node).expect(node);
        assert_eq!(attempt["state"], "succeeded", "{attempt}");
        let ran = attempt["finished_ms"].as_i64().unwrap() - attempt["started_ms"].as_i64().unwrap();
        assert!((200..3000).contains(&ran), "{node} ran {ran} ms");
    }
    // The graph: the blueprint version the server ran.
    let blueprints = serving.ok("get_session_blueprints", json!({ "session_id": mirror }));
    assert_eq!(blueprints["root"]["blueprint_id"], "naps");
    assert!(blueprints["root"]["text"].as_str().unwrap().contains("\"id\": \"b\""), "{blueprints}");
    // The local actions go to the server: a restart is a new session there, followed too.
    let again =
        serving.ok("restart_session", json!({ "session_id": mirror }))["session_id"].as_str().unwrap().to_string();
    assert_ne!(again, mirror);
    let view = serving.until_state(&again, "completed");
    assert_ne!(view["session"]["remote"]["session_id"], started["session_id"], "{view}");
    // Changed on the server behind Orrery's back: opening the ended mirror again looks there,
    // and shows it.
    let first = started["session_id"].as_str().unwrap();
    let out = orrery(&["remote", "--server", &deployment.url, "reset", first, "naps.b", "--alone"], &db);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let start = std::time::Instant::now();
    loop {
        let view = serving.ok("get_session", json!({ "session_id": mirror }));
        let b = view["tasks"].as_array().unwrap().iter().find(|t| t["node"] == "naps.b").unwrap()["state"].clone();
        if b == "PENDING" {
            break;
        }
        assert!(start.elapsed().as_secs() < 30, "the mirror did not see the reset: {view}");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    // A task no agent can cancel alone: refused, naming why.
    let refused = serving.job("cancel_task", json!({"session_id": again, "task": "naps.a"}));
    assert_eq!(refused["success"], false);
    assert!(refused["answer"].as_str().unwrap().contains("stop the session"), "{refused}");
    // The same from the command line, which goes through the same jobs: the cancel is refused
    // alike, and `orrery restart` of the mirror is a new session on the server, followed here
    // to its end.
    let out = orrery(&["cancel", again.as_str(), "naps.a"], &db);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("stop the session"));
    let out = orrery(&["restart", mirror.as_str(), "--format", "json"], &db);
    let said = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(0), "{said}");
    let third = said.split_whitespace().skip_while(|w| *w != "session").nth(1).expect("the session named").to_string();
    assert!(said.contains(&format!("session {third} completed")), "{said}");
    assert!(![mirror.as_str(), again.as_str()].contains(&third.as_str()), "a new mirror: {said}");
    let view = serving.ok("get_session", json!({ "session_id": third }));
    assert_eq!(view["session"]["state"], "completed", "{view}");
    assert!(view["session"]["remote"]["session_id"].is_string(), "a mirror of a server's session: {view}");
}

/// A TCP relay to the server that can be cut (every connection closed, new ones refused) and
/// restored: the server going away and coming back, as the mirror sees it.
struct Relay {
    url: String,
    down: std::sync::Arc<std::sync::atomic::AtomicBool>,
    open: std::sync::Arc<std::sync::Mutex<Vec<std::net::TcpStream>>>,
}

impl Relay {
    fn to(url: &str) -> Relay {
        use std::sync::atomic::Ordering;
        let upstream = url.trim_start_matches("http://").to_string();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let down = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let open = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let (is_down, conns) = (down.clone(), open.clone());
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                if is_down.load(Ordering::SeqCst) {
                    continue; // dropped: the connection is reset
                }
                let Ok(server) = std::net::TcpStream::connect(&upstream) else { continue };
                let pipe = |mut from: std::net::TcpStream, mut to: std::net::TcpStream| {
                    std::thread::spawn(move || {
                        let _ = std::io::copy(&mut from, &mut to);
                        let _ = to.shutdown(std::net::Shutdown::Both);
                    });
                };
                conns.lock().unwrap().extend([client.try_clone().unwrap(), server.try_clone().unwrap()]);
                pipe(client.try_clone().unwrap(), server.try_clone().unwrap());
                pipe(server, client);
            }
        });
        Relay { url, down, open }
    }

    fn cut(&self) {
        self.down.store(true, std::sync::atomic::Ordering::SeqCst);
        for socket in self.open.lock().unwrap().drain(..) {
            let _ = socket.shutdown(std::net::Shutdown::Both);
        }
    }

    fn restore(&self) {
        self.down.store(false, std::sync::atomic::Ordering::SeqCst);
    }
}

#[test]
fn a_mirror_shows_its_server_unreachable_and_catches_up_when_it_answers_again() {
    let deployment = deploy_with(&["--sys-agents"]);
    let scratch = scratch_dir("mirror-outage");
    let db = scratch.join("orrery.db");
    let file = scratch.join("slow.json");
    let mut tasks = vec![json!({"id": "start", "type": "system.start"})];
    for (i, after) in ["start", "t0", "t1", "t2"].iter().enumerate() {
        tasks.push(json!({"id": format!("t{i}"), "type": "system.sleep",
            "params": [{"name": "duration", "value": 1.0}], "depends_on": [{"id": after}]}));
    }
    tasks.push(json!({"id": "end", "type": "system.end", "depends_on": [{"id": "t3"}]}));
    let blueprint = json!({"id": "slow", "name": "slow", "version": "1.0", "tasks": tasks});
    std::fs::write(&file, serde_json::to_string_pretty(&blueprint).unwrap()).unwrap();
    assert!(orrery(&["publish", "--server", &deployment.url, file.to_str().unwrap()], &db).status.success());

    let relay = Relay::to(&deployment.url);
    let serving = serve(&db);
    let started = serving.ok("remote_run", json!({"server": relay.url, "blueprint_id": "slow", "follow": true}));
    let mirror = started["mirror"].as_str().unwrap().to_string();
    let state_of = |view: &Value, node: &str| {
        view["tasks"].as_array().unwrap().iter().find(|t| t["node"] == node).map(|t| t["state"].clone())
    };
    let wait = |what: &str, done: &dyn Fn(&Value) -> bool| {
        let start = std::time::Instant::now();
        loop {
            let view = serving.ok("get_session", json!({ "session_id": mirror }));
            if done(&view) {
                return view;
            }
            assert!(start.elapsed().as_secs() < 60, "{what}: {view}");
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    };
    wait("t0 succeeded", &|v| state_of(v, "slow.t0") == Some(json!("SUCCEEDED")));

    // The server goes away mid-run: the mirror says so and keeps what it has.
    relay.cut();
    let view = wait("the link lost", &|v| v["link"]["reachable"] == false);
    assert!(view["link"]["message"].as_str().is_some_and(|m| !m.is_empty()), "{view}");
    assert_eq!(state_of(&view, "slow.t0"), Some(json!("SUCCEEDED")), "nothing local is lost");
    std::thread::sleep(std::time::Duration::from_secs(2));

    // Back: the mirror catches up and follows the run to its end.
    relay.restore();
    let view = serving.until_state(&mirror, "completed");
    assert_eq!(view["link"]["reachable"], true, "{view}");
    for node in ["slow.t0", "slow.t1", "slow.t2", "slow.t3", "slow.end"] {
        assert_eq!(state_of(&view, node), Some(json!("SUCCEEDED")), "{node}: {view}");
    }
    let attempts = view["attempts"].as_array().unwrap();
    assert!(attempts.iter().any(|a| a["node"] == "slow.t0" && a["state"] == "succeeded"), "t0's bar is kept: {view}");
}

/// A blueprint whose dynamic composite runs an inner blueprint once per element of a model the
/// server holds (the reference's basic_sequencer), written to `scratch`; the model's id and its
/// element ids.
fn fan_out(deployment: &Deployment, scratch: &Path, db: &Path) -> (String, Vec<String>) {
    let part = json!({"id": "part", "name": "part", "version": "1.0", "tasks": [
        {"id": "start", "type": "system.start"},
        {"id": "cut", "type": "system.sleep", "params": [{"name": "duration", "value": 1.0}],
         "outputs": [{"name": "done", "value": "cut"}], "depends_on": [{"id": "start"}]},
        {"id": "end", "type": "system.end", "depends_on": [{"id": "cut"}]},
    ]});
    let fanout = json!({"id": "fanout", "name": "fan-out", "version": "1.0", "tasks": [
        {"id": "start", "type": "system.start", "outputs": [{"name": "process_start_time"}]},
        {"id": "prep", "type": "system.sleep", "params": [{"name": "duration", "value": 0.2}],
         "outputs": [{"name": "sheet", "value": "A4"}], "depends_on": [{"id": "start"}]},
        {"id": "each", "type": "system.composite", "description": "one part", "outputs": [{"name": "done"}],
         "params": [{"name": "blueprint", "value": {"dynamic": {"blueprint_id": "part", "sequencer": "basic_sequencer"}}}],
         "depends_on": [{"id": "prep"}]},
        {"id": "check", "type": "system.sleep", "inputs": [{"name": "done"}, {"name": "sheet"}],
         "params": [{"name": "duration", "value": 0.1}], "depends_on": [{"id": "each"}]},
        {"id": "end", "type": "system.end", "outputs": [{"name": "process_end_time"}], "depends_on": [{"id": "check"}]},
    ]});
    for (name, blueprint) in [("part", &part), ("fanout", &fanout)] {
        let file = scratch.join(format!("{name}.json"));
        std::fs::write(&file, serde_json::to_string_pretty(blueprint).unwrap()).unwrap();
        let out = orrery(&["publish", "--server", &deployment.url, file.to_str().unwrap()], db);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let upload = std::process::Command::new(reference_python())
        .arg(compat_dir().join("server/upload_model.py"))
        .args([deployment.url.as_str(), "parts", "3"])
        .output()
        .unwrap();
    assert!(upload.status.success(), "{}", String::from_utf8_lossy(&upload.stderr));
    let model: Value = serde_json::from_slice(&upload.stdout).unwrap();
    let elements = model["element_ids"].as_array().unwrap().iter().map(|e| e.as_str().unwrap().to_string()).collect();
    (model["model_id"].as_str().unwrap().to_string(), elements)
}

/// The server's session `id` once `done` holds of its snapshot (or the test fails after 60 s).
fn on_server(url: &str, id: &str, what: &str, done: &dyn Fn(&Value) -> bool) -> Value {
    let start = std::time::Instant::now();
    loop {
        let snapshot = get(url, &format!("/sessions/{id}"));
        if done(&snapshot["data"]) {
            return snapshot;
        }
        assert!(start.elapsed().as_secs() < 60, "{what}: {snapshot}");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// A time output (seconds) of a root task in a server's snapshot, in ms.
fn run_clock(snapshot: &Value, task: &str, output: &str) -> i64 {
    let tasks = snapshot["data"]["blueprint"]["data"]["tasks"].as_array().unwrap();
    let task = tasks.iter().find(|t| t["data"]["id"] == task).unwrap();
    let o = task["data"]["outputs"].as_array().unwrap().iter().find(|o| o["data"]["name"] == output).unwrap();
    (o["data"]["value"].as_f64().unwrap() * 1000.0).round() as i64
}

#[test]
fn a_session_followed_after_it_started_mirrors_every_attempt_of_its_dynamic_composite_with_data_and_server_times() {
    let deployment = deploy_with(&["--sys-agents"]);
    let scratch = scratch_dir("mirror-late");
    let db = scratch.join("orrery.db");
    let (model_id, elements) = fan_out(&deployment, &scratch, &db);
    let serving = serve(&db);
    let run = |follow: bool| -> String {
        let started = serving.ok(
            "remote_run",
            json!({"server": deployment.url, "blueprint_id": "fanout", "params": {"model_id": model_id}, "follow": follow}),
        );
        started["session_id"].as_str().unwrap_or_else(|| panic!("{started}")).to_string()
    };
    let first_cut_done = |d: &Value| {
        let inner = d["inner_blueprints"].as_object().into_iter().flatten();
        inner.filter(|(id, _)| id.starts_with("part_each_0_")).any(|(_, b)| {
            b["data"]["tasks"]
                .as_array()
                .unwrap()
                .iter()
                .any(|t| t["data"]["id"] == "cut" && t["data"]["state"] == "SUCCEEDED")
        })
    };
    let ended = |d: &Value| d["state"] == "COMPLETED" || d["state"] == "completed";

    // Followed from the middle of its run: its first element's part had been cut.
    let late = run(false);
    on_server(&deployment.url, &late, "the first part cut", &first_cut_done);
    let mirror = serving.ok("follow_remote_session", json!({"server": deployment.url, "session_id": late}));
    let mirror = mirror["session_id"].as_str().unwrap().to_string();
    serving.until_state(&mirror, "completed");
    let view = serving.until_followed(&mirror);
    let snapshot = on_server(&deployment.url, &late, "completed", &ended);
    let instance = |i: usize| format!("part_each_{i}_{}", &elements[i][..8]);
    let mut nodes: Vec<String> =
        ["start", "prep", "each_0", "each_1", "each_2", "check", "end"].iter().map(|t| format!("fanout.{t}")).collect();
    for i in 0..3 {
        nodes.extend(["start", "cut", "end"].iter().map(|t| format!("{}.{t}", instance(i))));
    }
    let attempts = view["attempts"].as_array().unwrap();
    let attempt = |node: &str| {
        let mine: Vec<&Value> = attempts.iter().filter(|a| a["node"] == node).collect();
        assert_eq!(mine.len(), 1, "{node} ran once on the server: {view}");
        mine[0].clone()
    };
    for node in &nodes {
        let a = attempt(node);
        assert_eq!(a["state"], "succeeded", "{node}: {a}");
    }
    // Ended before the mirror followed: the server's outputs, no times; since: timed bars.
    for node in ["fanout.start".to_string(), "fanout.prep".to_string(), format!("{}.cut", instance(0))] {
        assert_eq!(attempt(&node)["times_unknown"], true, "{node}");
    }
    for node in ["fanout.check".to_string(), format!("{}.cut", instance(2))] {
        assert!(attempt(&node).get("times_unknown").is_none(), "{node} ran while followed: {view}");
    }
    let last_cut = attempt(&format!("{}.cut", instance(2)));
    let ran = last_cut["finished_ms"].as_i64().unwrap() - last_cut["started_ms"].as_i64().unwrap();
    assert!((800..5000).contains(&ran), "a one-second cut ran {ran} ms");
    for i in 0..3 {
        assert_eq!(attempt(&format!("{}.cut", instance(i)))["outputs"], json!({"done": "cut"}));
    }
    assert_eq!(attempt("fanout.prep")["outputs"], json!({"sheet": "A4"}), "a task's outputs as the server holds them");
    let gathered: serde_json::Map<String, Value> = elements.iter().map(|e| (e.clone(), json!("cut"))).collect();
    assert_eq!(attempt("fanout.check")["inputs"], json!({"done": gathered, "sheet": "A4"}));
    // The data and its lineage: check read what the last element gathered and what prep wrote.
    let data = serving.ok("read_session_data", json!({ "session_id": mirror }));
    assert_eq!(data["fanout"]["done"], Value::Object(gathered.clone()), "{data}");
    let lineage = serving.ok("get_lineage", json!({ "session_id": mirror }));
    let source = |input: &str| {
        let found =
            lineage["inputs"].as_array().unwrap().iter().find(|i| i["node"] == "fanout.check" && i["input"] == input);
        found.map(|i| i["source"]["node"].clone())
    };
    assert_eq!(source("done"), Some(json!("fanout.each_2")), "{lineage}");
    assert_eq!(source("sheet"), Some(json!("fanout.prep")), "written before the mirror followed: {lineage}");
    // The run's own clock: its start task's start, its end task's end.
    assert_eq!(view["session"]["started_ms"], run_clock(&snapshot, "start", "process_start_time"), "{view}");
    assert_eq!(view["session"]["finished_ms"], run_clock(&snapshot, "end", "process_end_time"), "{view}");
    // The graph: the blueprint as published, its dynamic composite expanded as on the server.
    let blueprints = serving.ok("get_session_blueprints", json!({ "session_id": mirror }));
    let root: Value = serde_json::from_str(blueprints["root"]["text"].as_str().unwrap()).unwrap();
    let ids: Vec<&str> = root["tasks"].as_array().unwrap().iter().map(|t| t["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["start", "prep", "each", "check", "end"], "{root}");
    assert_eq!(
        root["tasks"][2]["params"][0]["value"],
        json!({"dynamic": {"blueprint_id": "part", "sequencer": "basic_sequencer"}})
    );
    assert_eq!(root["tasks"][2]["description"], "one part");
    let inner: Vec<&str> =
        blueprints["inner"].as_array().unwrap().iter().map(|b| b["blueprint_id"].as_str().unwrap()).collect();
    assert_eq!(inner, ["part"]);
    let instances: Vec<(String, Value)> = blueprints["instances"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| (i["id"].as_str().unwrap().to_string(), i["composite"].clone()))
        .collect();
    let expected: Vec<(String, Value)> = std::iter::once(("fanout".to_string(), Value::Null))
        .chain((0..3).map(|i| (instance(i), json!(format!("fanout.each_{i}")))))
        .collect();
    assert_eq!(instances, expected);

    // Followed once it had ended: every attempt from the server's snapshot, none timed, and
    // still the run's own start and end.
    let over = run(false);
    let snapshot = on_server(&deployment.url, &over, "completed", &ended);
    let mirror = serving.ok("follow_remote_session", json!({"server": deployment.url, "session_id": over}));
    let mirror = mirror["session_id"].as_str().unwrap().to_string();
    serving.until_state(&mirror, "completed");
    let view = serving.until_followed(&mirror);
    let attempts = view["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), nodes.len(), "{view}");
    assert!(attempts.iter().all(|a| a["times_unknown"] == true && a["state"] == "succeeded"), "{view}");
    assert_eq!(view["session"]["started_ms"], run_clock(&snapshot, "start", "process_start_time"));
    assert_eq!(view["session"]["finished_ms"], run_clock(&snapshot, "end", "process_end_time"));
}
