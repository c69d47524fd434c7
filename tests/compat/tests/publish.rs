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

/// The blueprints the server holds, by id (`GET /blueprints`, HTTP/1.0 by hand: no client needed).
fn held(url: &str) -> BTreeSet<String> {
    use std::io::{Read, Write};
    let address = url.trim_start_matches("http://");
    let mut socket = std::net::TcpStream::connect(address).expect("the server listens");
    write!(socket, "GET /blueprints HTTP/1.0\r\nHost: {address}\r\n\r\n").unwrap();
    let mut answer = String::new();
    socket.read_to_string(&mut answer).unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").expect("an HTTP answer");
    assert!(head.starts_with("HTTP/1.1 200") || head.starts_with("HTTP/1.0 200"), "{head}");
    let list: Value = serde_json::from_str(body).expect("the server lists its blueprints");
    list.as_array().unwrap().iter().map(|b| b["id"].as_str().unwrap().to_string()).collect()
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
