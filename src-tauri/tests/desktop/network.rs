//! The app on the network (issue 7), against the real thing (tests/compat/server/
//! serve_reference.py stands up Mosquitto, the reference's agents and its server on loopback):
//! agents on a broker set in the app run the tasks of its runs.

use crate::app::{reference_python, repo_root, App};
use crate::driver::eventually;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStdin, Command, Stdio};

/// A deployment; stopped when dropped (its stdin closes and it stops what it started).
struct Deployment {
    started: Value,
    child: Child,
    stdin: Option<ChildStdin>,
}

impl Drop for Deployment {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}

fn deploy(options: &[&str]) -> Deployment {
    let script = repo_root().join("tests/compat/server/serve_reference.py");
    let mut child = Command::new(reference_python())
        .arg(&script)
        .args(options)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let started =
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("the deployment did not start ({e}): {line:?}"));
    Deployment { started, child, stdin }
}

/// Runs a command of the palette by its title.
async fn command(app: &App, title: &str) {
    app.ctrl('k').await;
    app.wait_count("[data-testid=command-palette]", 1).await;
    app.retype("[data-testid=command-palette-filter]", title).await;
    app.wait_count("[data-testid=command-item]", 1).await;
    app.click("[data-testid=command-item]").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agents_on_a_broker_set_in_the_app_run_its_tasks() {
    let deployment = deploy(&["--broker-only", "--agents"]);
    let broker = format!("mqtt://127.0.0.1:{}", deployment.started["broker_port"]);
    let app = App::start(|dir| {
        let file = dir.join("relay.json");
        let blueprint = json!({"id": "relay", "name": "relay", "version": "1.0", "tasks": [
            {"id": "start", "type": "system.start"},
            {"id": "echo", "type": "reference.passthrough", "inputs": [{"name": "word", "value": "hello"}],
                "outputs": [{"name": "word"}], "depends_on": [{"id": "start"}]},
            {"id": "end", "type": "system.end", "depends_on": [{"id": "echo"}]},
        ]});
        std::fs::write(&file, serde_json::to_string_pretty(&blueprint).unwrap()).unwrap();
        Some(file)
    })
    .await;
    app.wait_count("[data-testid=task-node]", 3).await;

    // The broker, set in the app: checked, then saved.
    command(&app, "Agents on a broker").await;
    app.wait_count("[data-testid=broker-dialog]", 1).await;
    app.retype("[data-testid=broker-address]", &broker).await;
    app.click("[data-testid=broker-check]").await;
    app.wait_attr("[data-testid=broker-check-result]", "data-reachable", "true").await;
    app.click("[data-testid=broker-save]").await;
    app.wait_count("[data-testid=broker-saved]", 1).await;
    app.screenshot("network-broker-settings.png").await;
    app.click("[data-testid=broker-cancel]").await;
    app.wait_count("[data-testid=broker-dialog]", 0).await;

    // A run: the reference's agent runs the task Orrery has no agent for; the details say which.
    // Nothing to ask (no server saved, no elements): Run starts it.
    app.click("[data-testid=run]").await;
    app.wait_attr("[data-testid=run-header]", "data-state", "completed").await;
    app.click("[data-testid=task-node][data-task-id='echo']").await;
    let dispatch = eventually("the broker's steps in the details", || async {
        app.content("[data-testid=attempt-dispatch]").await.filter(|t| t.contains("allocated to agent"))
    })
    .await;
    assert!(!dispatch.contains("orrery"), "a reference launcher ran it: {dispatch}");
    app.screenshot("network-broker-run.png").await;
}

/// Uploads `blueprint` to the server at `url` and starts a session of it there (the reference's
/// HTTP API, from its own Python); the session's id.
fn start_on_server(url: &str, blueprint: &Value) -> String {
    let script = r#"
import json, sys, urllib.request
url, text = sys.argv[1], sys.argv[2]
body = ("--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"bp.json\"\r\n"
        "Content-Type: application/json\r\n\r\n" + text + "\r\n--b--\r\n").encode()
urllib.request.urlopen(urllib.request.Request(url + "/blueprints/upload", data=body,
    headers={"Content-Type": "multipart/form-data; boundary=b"}))
def post(path, payload):
    req = urllib.request.Request(url + path, data=json.dumps(payload).encode(), headers={"Content-Type": "application/json"})
    return json.loads(urllib.request.urlopen(req).read())
sid = post("/blueprints/start", {"blueprint_id": json.loads(text)["id"]})["session_id"]
post(f"/sessions/{sid}/start", {})
print(sid)
"#;
    let out = Command::new(reference_python()).args(["-c", script, url, &blueprint.to_string()]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_on_a_server_is_followed_in_the_run_views() {
    let deployment = deploy(&["--sys-agents"]);
    let url = deployment.started["url"].as_str().unwrap().to_string();
    let mut tasks = vec![json!({"id": "start", "type": "system.start"})];
    for (i, after) in ["start", "t0", "t1"].iter().enumerate() {
        tasks.push(json!({"id": format!("t{i}"), "type": "system.sleep",
            "params": [{"name": "duration", "value": 1.5}], "depends_on": [{"id": after}]}));
    }
    tasks.push(json!({"id": "end", "type": "system.end", "depends_on": [{"id": "t2"}]}));
    let app = App::start(|_| None).await;
    // Started once the app is up (tests take the window one at a time): it still runs when followed.
    let remote = start_on_server(&url, &json!({"id": "far", "name": "far", "version": "1.0", "tasks": tasks}));

    // The server's sessions, listed in the app; the one running is followed.
    app.click("[data-testid=mode-runs]").await;
    app.click("[data-testid=servers-runs-open]").await;
    app.wait_count("[data-testid=servers-runs-dialog]", 1).await;
    app.retype("[data-testid=servers-runs-address]", &url).await;
    app.click("[data-testid=servers-runs-list-sessions]").await;
    let row = format!("[data-testid=servers-runs-row][data-session='{remote}']");
    app.wait_count(&row, 1).await;
    app.screenshot("network-server-runs.png").await;
    app.click(&format!("{row} [data-testid=servers-runs-follow]")).await;

    // Its run views, live: marked remote, the graph following the server's states.
    app.wait_count("[data-testid=run-header] [data-testid=run-remote]", 1).await;
    app.wait_attr("[data-testid=run-header] [data-testid=remote-link]", "data-reachable", "true").await;
    app.screenshot("network-remote-run-live.png").await;
    app.wait_attr("[data-testid=run-header]", "data-state", "completed").await;
    app.wait_attr("[data-testid=task-node][data-task-id='t2']", "data-state", "SUCCEEDED").await;
    assert_eq!(
        app.count("[data-testid=run-item] [data-testid=run-remote]").await,
        1,
        "listed beside local runs, marked"
    );
    // The tasks it saw run have their bars on the timeline (drawn at the next frame after the
    // run's end fits the view: under a loaded machine that frame may come late).
    eventually("the bars of t1 and t2 at least", || async {
        let bars: usize = app.attr("[data-testid=timeline]", "data-bars").await.and_then(|b| b.parse().ok())?;
        (bars >= 2).then_some(bars)
    })
    .await;
    // Its start task had ended on the server before the app followed: counted, not drawn.
    eventually("the start task counted without a bar", || async {
        let summary = app.text(".timeline-summary").await?;
        summary.contains("not drawn (times unknown)").then_some(summary)
    })
    .await;
    app.screenshot("network-remote-run.png").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blueprint_is_run_on_a_server_from_the_launch_dialog_and_watched_in_the_app() {
    use fantoccini::Locator;
    let deployment = deploy(&["--sys-agents"]);
    let url = deployment.started["url"].as_str().unwrap().to_string();
    let app = App::start(|dir| {
        let file = dir.join("naps.json");
        let blueprint = json!({"id": "naps", "name": "naps", "version": "1.0", "tasks": [
            {"id": "start", "type": "system.start"},
            {"id": "nap", "type": "system.sleep", "params": [{"name": "duration", "value": 0.5}],
                "depends_on": [{"id": "start"}]},
            {"id": "end", "type": "system.end", "depends_on": [{"id": "nap"}]},
        ]});
        std::fs::write(&file, serde_json::to_string_pretty(&blueprint).unwrap()).unwrap();
        Some(file)
    })
    .await;
    app.wait_count("[data-testid=task-node]", 3).await;

    // The server saved in the publish dialog (shared with the CLI).
    command(&app, "Publish to a server").await;
    app.wait_count("[data-testid=publish-dialog]", 1).await;
    // No server saved yet: the list of saved servers is open, with the form to add one.
    app.retype("[data-testid=server-name]", "lab").await;
    app.retype("[data-testid=server-url]", &url).await;
    app.screenshot("network-save-server.png").await;
    app.click("[data-testid=server-save]").await;
    app.wait_count("[data-testid=server-remove]", 1).await;
    app.keys("\u{E00C}").await; // Escape
    app.wait_count("[data-testid=publish-dialog]", 0).await;

    // ▶ Run on the server: published, started there, its mirror opened in the run views.
    app.click("[data-testid=run]").await;
    app.wait_count("[data-testid=launch-where]", 1).await;
    let select = app.client.find(Locator::Css("[data-testid=launch-where]")).await.unwrap();
    select.select_by_value("lab").await.unwrap();
    app.screenshot("network-launch-on-server.png").await;
    app.click("[data-testid=launch-start]").await;
    app.wait_count("[data-testid=run-header] [data-testid=run-remote]", 1).await;
    app.wait_attr("[data-testid=run-header]", "data-state", "completed").await;
    app.wait_attr("[data-testid=task-node][data-task-id='nap']", "data-state", "SUCCEEDED").await;
    // Followed from before it started: every task has its bar.
    let bars = eventually("the timeline's bars", || async {
        app.attr("[data-testid=timeline]", "data-bars").await.filter(|b| b == "3")
    })
    .await;
    assert_eq!(bars, "3");
    app.screenshot("network-launched-on-server.png").await;
}
