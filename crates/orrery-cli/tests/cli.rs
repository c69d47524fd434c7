//! The `orrery` binary as a black box: real files in a temp folder, real exit codes.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn orrery(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_orrery")).args(args).current_dir(dir).output().expect("orrery runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn examples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("cli-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        for f in ["assembly.json", "place_element.json"] {
            std::fs::copy(examples().join(f), dir.join(f)).unwrap();
        }
        Scratch(dir)
    }
    fn write(&self, name: &str, text: &str) {
        std::fs::write(self.0.join(name), text).unwrap();
    }
    fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.0.join(name)).unwrap()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

const ORPHAN: &str = r#"{"id": "o", "name": "o", "version": "1.0", "tasks": [
  {"id": "start", "type": "system.start"},
  {"id": "lost", "type": "system.sleep"},
  {"id": "end", "type": "system.end", "depends_on": [{"id": "start"}]}]}"#;

#[test]
fn validate_exits_zero_on_the_examples_and_resolves_composites_among_the_files() {
    let s = Scratch::new("valid");
    let o = orrery(&["validate", "--format", "json", "assembly.json", "place_element.json"], &s.0);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let reports: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(reports.as_array().unwrap().len(), 2);
    assert_eq!(reports[0]["file"], "assembly.json");
    assert_eq!(reports[0]["valid"], true);
    assert_eq!(reports[0]["server_accepts"], true);
    assert_eq!(reports[0]["diagnostics"], Value::Array(vec![]), "the inner blueprint is found among the files");

    let alone = orrery(&["validate", "assembly.json"], &s.0);
    assert_eq!(alone.status.code(), Some(0), "a missing inner blueprint is only a warning");
    assert!(
        stdout(&alone).contains("assembly.json:place:$.tasks[3].params[0].value: warning[composite-target-missing]"),
        "{}",
        stdout(&alone)
    );
}

#[test]
fn validate_exits_one_on_an_error_and_prints_one_line_per_diagnostic() {
    let s = Scratch::new("invalid");
    s.write("orphan.json", ORPHAN);
    let o = orrery(&["validate", "orphan.json", "assembly.json", "place_element.json"], &s.0);
    assert_eq!(o.status.code(), Some(1));
    let out = stdout(&o);
    assert!(out.starts_with("orphan.json:lost:$.tasks[1]: error[orphan-task]: task 'lost' is an orphan"), "{out}");
    assert!(stderr(&o).contains("the reference server would refuse 1"), "{}", stderr(&o));

    let json = orrery(&["validate", "--format", "json", "orphan.json"], &s.0);
    let reports: Value = serde_json::from_str(&stdout(&json)).unwrap();
    let d = &reports[0]["diagnostics"][0];
    for key in ["code", "severity", "task_id", "path", "message", "server_rejects"] {
        assert!(d.get(key).is_some(), "diagnostics carry {key}: {d}");
    }
    assert_eq!(d["code"], "orphan-task");
    assert_eq!(reports[0]["server_accepts"], false);
}

#[test]
fn validate_exits_two_on_an_unreadable_file_or_bad_arguments() {
    let s = Scratch::new("unreadable");
    let o = orrery(&["validate", "nowhere.json"], &s.0);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("cannot read nowhere.json"), "{}", stderr(&o));
    assert_eq!(orrery(&["validate", "--format", "yaml", "assembly.json"], &s.0).status.code(), Some(2));
    assert_eq!(orrery(&["validate"], &s.0).status.code(), Some(2));
}

#[test]
fn validate_places_the_diagnostics_of_a_large_file_it_does_not_hold_where_a_held_text_places_them() {
    let s = Scratch::new("large");
    // 9 MB or so: its text is given up once loaded, and the file read again to place.
    let tasks: Vec<Value> = std::iter::once(serde_json::json!({"id": "start", "type": "system.start"}))
        .chain((0..20_000).map(|i| {
            serde_json::json!({"id": format!("t{i}"), "type": "system.sleep", "description": "é 東".repeat(60),
                "inputs": [{"name": "x", "get_from": "nobody"}],
                "depends_on": [{"id": if i == 0 { "start".to_string() } else { format!("t{}", i - 1) }}]})
        }))
        .collect();
    let text =
        serde_json::to_string_pretty(&serde_json::json!({"id": "big", "name": "B", "version": "1.0", "tasks": tasks}))
            .unwrap();
    assert!(text.len() > 8 << 20);
    s.write("big.json", &text);
    let files: Vec<PathBuf> = ["big.json", "assembly.json"].iter().map(|f| s.0.join(f)).collect();
    let args: Vec<&str> = files.iter().map(|f| f.to_str().unwrap()).collect();
    let o = orrery(&[&["validate", "--format", "json"][..], &args].concat(), &s.0);
    let held = orrery_blueprint::check_files(&files);
    assert_eq!(o.status.code(), Some(if held.iter().all(|r| r.valid) { 0 } else { 1 }), "{}", stderr(&o));
    assert_eq!(stdout(&o), serde_json::to_string_pretty(&held).unwrap() + "\n");
    let reports: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert!(reports[0]["diagnostics"].as_array().unwrap().iter().filter(|d| d["line"].is_u64()).count() >= 20_000);
}

const BAD_PARAM: &str = r#"{"id": "p", "name": "p", "version": "1.0", "tasks": [
  {"id": "start", "type": "system.start"},
  {"id": "nap", "type": "system.sleep", "params": [{"name": "duration", "value": "soon"}], "depends_on": [{"id": "start"}]},
  {"id": "end", "type": "system.end", "depends_on": [{"id": "nap"}]}]}"#;

#[test]
fn validate_reports_a_param_that_breaks_its_schema_like_any_other_error() {
    let s = Scratch::new("bad-param");
    s.write("bad_param.json", BAD_PARAM);
    let o = orrery(&["validate", "bad_param.json"], &s.0);
    assert_eq!(o.status.code(), Some(1), "a param the agent would refuse is an error");
    let out = stdout(&o);
    assert!(
        out.starts_with("bad_param.json:nap:$.tasks[1].params[0].value: error[param-schema]: task 'nap': param 'duration': expected number, found string (line 3, column"),
        "{out}"
    );
    assert!(
        stderr(&o).contains("the reference server would refuse 0"),
        "the reference passes params through: {}",
        stderr(&o)
    );

    let json = orrery(&["validate", "--format", "json", "bad_param.json"], &s.0);
    assert_eq!(json.status.code(), Some(1));
    let reports: Value = serde_json::from_str(&stdout(&json)).unwrap();
    let d = &reports[0]["diagnostics"][0];
    assert_eq!(d["code"], "param-schema");
    assert_eq!(d["task_id"], "nap");
    assert_eq!(d["path"], "$.tasks[1].params[0].value");
    assert_eq!(d["server_rejects"], false);
    assert_eq!(
        (reports[0]["valid"].clone(), reports[0]["server_accepts"].clone()),
        (Value::Bool(false), Value::Bool(true))
    );
}

#[test]
fn fmt_rewrites_canonically_once_and_check_reports_what_would_change() {
    let s = Scratch::new("fmt");
    let messy = r#"{"tasks": [{"type": "system.start", "id": "start"},
        {"depends_on": [{"id": "start"}], "type": "system.end", "id": "end", "x-note": "kept"}],
        "version": "1.0", "name": "Messy", "id": "messy"}"#;
    s.write("messy.json", messy);
    let check = orrery(&["fmt", "--check", "messy.json", "assembly.json"], &s.0);
    assert_eq!(check.status.code(), Some(1));
    assert_eq!(stdout(&check).trim(), "messy.json", "the example is already canonical");
    assert_eq!(s.read("messy.json"), messy, "--check changes nothing");

    assert_eq!(orrery(&["fmt", "messy.json"], &s.0).status.code(), Some(0));
    let formatted = s.read("messy.json");
    let keys: Vec<&str> = formatted.lines().filter(|l| l.starts_with("    \"")).collect();
    assert_eq!(
        keys,
        ["    \"id\": \"messy\",", "    \"name\": \"Messy\",", "    \"version\": \"1.0\",", "    \"tasks\": ["]
    );
    assert!(formatted.contains("\"type\": \"FS\""), "dependency types are written out");
    assert!(formatted.contains("\"x-note\": \"kept\""), "unknown keys survive");
    assert_eq!(orrery(&["fmt", "--check", "messy.json"], &s.0).status.code(), Some(0), "formatting is idempotent");
}

#[test]
fn fmt_refuses_to_rewrite_what_it_cannot_load() {
    let s = Scratch::new("fmt-broken");
    s.write("broken.json", "{\"id\": ");
    let o = orrery(&["fmt", "broken.json"], &s.0);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("json-syntax"), "{}", stderr(&o));
    assert_eq!(s.read("broken.json"), "{\"id\": ", "the file is untouched");
}

#[test]
fn export_writes_both_encodings_and_refuses_what_the_server_would() {
    let s = Scratch::new("export");
    let o = orrery(
        &["export", "--to", "compas", "-o", "assembly.compas.json", "assembly.json", "place_element.json"],
        &s.0,
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let envelope: Value = serde_json::from_str(&s.read("assembly.compas.json/assembly.json")).unwrap();
    assert_eq!(envelope["dtype"], "antikythera.models/Blueprint");
    assert_eq!(envelope["data"]["scopes"][0]["data"]["policy_type"], "while");

    let back =
        orrery(&["export", "--to", "antikythera", "-o", "plain.json", "assembly.compas.json/assembly.json"], &s.0);
    assert_eq!(back.status.code(), Some(0), "{}", stderr(&back));
    assert_eq!(s.read("plain.json"), s.read("assembly.json"), "COMPAS and back gives the canonical plain file");

    s.write("orphan.json", ORPHAN);
    let refused = orrery(&["export", "--to", "antikythera", "orphan.json"], &s.0);
    assert_eq!(refused.status.code(), Some(1));
    assert!(stdout(&refused).is_empty(), "nothing is written for a refused blueprint");
    assert!(stderr(&refused).contains("an antikythera server would refuse it"), "{}", stderr(&refused));
    assert!(stderr(&refused).contains("orphan-task"));
}

#[test]
fn graph_draws_scopes_as_clusters_in_dot_and_mermaid() {
    let s = Scratch::new("graph");
    let dot = orrery(&["graph", "--format", "dot", "assembly.json"], &s.0);
    assert_eq!(dot.status.code(), Some(0));
    let dot = stdout(&dot);
    assert!(dot.starts_with("digraph \"assembly\" {"), "{dot}");
    assert!(dot.contains("subgraph \"cluster_pick\""), "{dot}");
    assert!(dot.contains("label=\"placement loop [while elements_remaining > 0 (max 10)]\""), "{dot}");
    let mermaid = stdout(&orrery(&["graph", "--format", "mermaid", "assembly.json"], &s.0));
    assert!(mermaid.starts_with("flowchart TD\n"));
    assert!(
        mermaid.contains("subgraph s0[\"placement loop [while elements_remaining #gt; 0 (max 10)]\"]"),
        "{mermaid}"
    );
}

#[test]
fn run_executes_a_blueprint_with_the_inner_blueprints_of_its_folder_to_completion() {
    let s = Scratch::new("run");
    let db = s.0.join("store.db");
    let o = orrery(&["run", "--db", db.to_str().unwrap(), "assembly.json"], &s.0);
    assert_eq!(o.status.code(), Some(0), "{}\n{}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    assert_eq!(out.matches("SUCCEEDED  assembly.check").count(), 3, "the while scope runs once per element:\n{out}");
    assert!(out.contains("SUCCEEDED  place_element_place.release"), "the inner blueprint ran:\n{out}");
    assert!(out.trim_end().ends_with("session    completed"), "{out}");
    assert!(stderr(&o).contains("completed (store"), "{}", stderr(&o));
    assert!(db.exists(), "the session is stored");

    let listed = orrery(&["sessions", "--db", db.to_str().unwrap(), "--format", "json"], &s.0);
    let sessions: Value = serde_json::from_str(&stdout(&listed)).unwrap();
    assert_eq!(sessions.as_array().unwrap().len(), 1);
    assert_eq!(sessions[0]["state"], "completed");
    let id = sessions[0]["id"].as_str().unwrap();
    let status = orrery(&["status", "--db", db.to_str().unwrap(), id], &s.0);
    assert_eq!(status.status.code(), Some(0));
    // With the pass of the loop its latest attempt ran in.
    let said = stdout(&status);
    assert!(said.contains("SUCCEEDED  assembly.check (3 attempts, in placement loop #3)"), "{said}");
    let unknown = orrery(&["status", "--db", db.to_str().unwrap(), "no-such-session"], &s.0);
    assert_eq!(unknown.status.code(), Some(1));
    assert!(stderr(&unknown).contains("session \"no-such-session\" not found"), "{}", stderr(&unknown));
}

#[test]
fn run_exits_one_for_a_failing_task_and_for_an_invalid_blueprint() {
    let s = Scratch::new("run-fail");
    let db = s.0.join("store.db");
    s.write("fails.json", r#"{"id": "f", "name": "f", "version": "1.0", "tasks": [
      {"id": "start", "type": "system.start"},
      {"id": "boom", "type": "shell.run", "params": [{"name": "command", "value": "echo no; exit 3"}], "depends_on": [{"id": "start"}]},
      {"id": "end", "type": "system.end", "depends_on": [{"id": "boom"}]}]}"#);
    let o = orrery(&["run", "--db", db.to_str().unwrap(), "fails.json"], &s.0);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("TOOL_FAILURE"), "{}", stderr(&o));
    s.write("orphan.json", ORPHAN);
    let o = orrery(&["run", "--db", db.to_str().unwrap(), "orphan.json"], &s.0);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("orphan-task"), "{}", stderr(&o));
    let o = orrery(&["run", "--db", db.to_str().unwrap(), "--param", "novalue", "fails.json"], &s.0);
    assert_eq!(o.status.code(), Some(2), "a malformed --param is an argument error");
}

#[test]
fn run_stops_cleanly_on_ctrl_c_and_exits_130() {
    let s = Scratch::new("run-stop");
    let db = s.0.join("store.db");
    s.write("slow.json", r#"{"id": "slow", "name": "slow", "version": "1.0", "tasks": [
      {"id": "start", "type": "system.start"},
      {"id": "wait", "type": "shell.run", "params": [{"name": "command", "value": "sleep 30"}], "depends_on": [{"id": "start"}]},
      {"id": "after", "type": "shell.run", "params": [{"name": "command", "value": "touch after-ran"}], "depends_on": [{"id": "wait"}]},
      {"id": "end", "type": "system.end", "depends_on": [{"id": "after"}]}]}"#);
    let (child, mut lines) = spawn(&["run", "--db", db.to_str().unwrap(), "slow.json"], &s.0);
    // Send Ctrl-C once `wait` is running, as a user would.
    let mut seen = Vec::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        let running = line.contains("RUNNING    slow.wait");
        seen.push(line);
        if running {
            break;
        }
    }
    let sent = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(sent.success());
    seen.extend(lines.map(Result::unwrap));
    let o = child.wait_with_output().unwrap();
    let out = seen.join("\n");
    assert_eq!(o.status.code(), Some(130), "{out}\n{}", stderr(&o));
    assert!(out.ends_with("session    stopped"), "{out}");
    assert!(!s.0.join("after-ran").exists(), "nothing runs after the stop");
}

#[test]
fn run_with_a_breakpoint_holds_until_continue_from_another_terminal() {
    let s = Scratch::new("run-break");
    let db = s.0.join("store.db");
    let dbs = db.to_str().unwrap();
    s.write("hb.json", r#"{"id": "hb", "name": "hb", "version": "1.0", "tasks": [
      {"id": "start", "type": "system.start"},
      {"id": "a", "type": "shell.run", "params": [{"name": "command", "value": "echo a >> ran.txt"}], "depends_on": [{"id": "start"}]},
      {"id": "b", "type": "shell.run", "params": [{"name": "command", "value": "echo b >> ran.txt"}], "depends_on": [{"id": "a"}]},
      {"id": "end", "type": "system.end", "depends_on": [{"id": "b"}]}]}"#);
    let (child, mut lines) = spawn(&["run", "--db", dbs, "--break", "b", "hb.json"], &s.0);
    let mut seen = Vec::new();
    let mut until = |wanted: &str, seen: &mut Vec<String>| {
        for line in lines.by_ref() {
            let line = line.unwrap();
            let found = line.contains(wanted);
            seen.push(line);
            if found {
                return;
            }
        }
        panic!("no line with {wanted:?}: {}", seen.join("\n"));
    };
    until("break      held hb.b; held now: hb.b (before)", &mut seen);
    assert_eq!(std::fs::read_to_string(s.0.join("ran.txt")).unwrap(), "a\n", "b waits");
    let listed = json_of(&orrery(&["sessions", "--db", dbs, "--format", "json"], &s.0));
    let session = listed[0]["id"].as_str().unwrap().to_string();

    let wrong = orrery(&["continue", "--db", dbs, &session, "a"], &s.0);
    assert_eq!(wrong.status.code(), Some(1), "{}", stderr(&wrong));
    assert!(stderr(&wrong).contains("task a is not held at a breakpoint"), "{}", stderr(&wrong));
    let step = orrery(&["continue", "--db", dbs, "--step", &session, "b"], &s.0);
    assert_eq!(step.status.code(), Some(0), "{}", stderr(&step));
    assert_eq!(stdout(&step).trim(), "stepping hb.b");
    until("break      held hb.b; held now: hb.b (after)", &mut seen);
    assert_eq!(std::fs::read_to_string(s.0.join("ran.txt")).unwrap(), "a\nb\n");
    let go = orrery(&["continue", "--db", dbs, &session], &s.0);
    assert_eq!(go.status.code(), Some(0), "{}", stderr(&go));
    seen.extend(lines.map(Result::unwrap));
    let o = child.wait_with_output().unwrap();
    let out = seen.join("\n");
    assert_eq!(o.status.code(), Some(0), "{out}\n{}", stderr(&o));
    assert!(out.ends_with("session    completed"), "{out}");

    // On failure: held where it failed, then let fail.
    s.write("fails.json", r#"{"id": "fails", "name": "fails", "version": "1.0", "tasks": [
      {"id": "start", "type": "system.start"},
      {"id": "x", "type": "shell.run", "params": [{"name": "command", "value": "exit 4"}], "depends_on": [{"id": "start"}]},
      {"id": "end", "type": "system.end", "depends_on": [{"id": "x"}]}]}"#);
    let (failing, mut failing_lines) = spawn(&["run", "--db", dbs, "--break-on-failure", "fails.json"], &s.0);
    let held = failing_lines.by_ref().map(Result::unwrap).find(|l| l.contains("break      held fails.x"));
    assert!(held.unwrap_or_default().ends_with("break      held fails.x; held now: fails.x (failure)"));
    let listed = json_of(&orrery(&["sessions", "--db", dbs, "--format", "json"], &s.0));
    let failing_session = listed[0]["id"].as_str().unwrap().to_string();
    let go = orrery(&["continue", "--db", dbs, &failing_session], &s.0);
    assert_eq!(go.status.code(), Some(0), "{}", stderr(&go));
    failing_lines.for_each(drop);
    assert_eq!(failing.wait_with_output().unwrap().status.code(), Some(1), "the session failed once let go");

    let unknown = orrery(&["run", "--db", dbs, "--break", "nope:after", "hb.json"], &s.0);
    assert_eq!(unknown.status.code(), Some(1), "{}", stderr(&unknown));
    assert!(stderr(&unknown).contains("no task 'nope' to hold at"), "{}", stderr(&unknown));
    let empty = orrery(&["run", "--db", dbs, "--break", ":after", "hb.json"], &s.0);
    assert_eq!(empty.status.code(), Some(2), "{}", stderr(&empty));
    assert!(stderr(&empty).contains("names no task"), "{}", stderr(&empty));
}

/// `orrery ARGS` started in `dir` (no stdin, stderr kept), and the lines of its stdout as they come.
fn spawn(
    args: &[&str],
    dir: &Path,
) -> (std::process::Child, std::io::Lines<std::io::BufReader<std::process::ChildStdout>>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_orrery"))
        .args(args)
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("orrery starts");
    let lines = std::io::BufRead::lines(std::io::BufReader::new(child.stdout.take().expect("its stdout")));
    (child, lines)
}

fn json_of(o: &Output) -> Value {
    serde_json::from_str(&stdout(o)).unwrap_or_else(|e| panic!("{e}: {}\n{}", stdout(o), stderr(o)))
}

/// Whether any process of the group `pgid` still exists.
fn group_exists(pgid: u64) -> bool {
    Command::new("/bin/sh").args(["-c", &format!("kill -0 -{pgid} 2>/dev/null")]).status().unwrap().success()
}

#[test]
fn resume_after_a_sigkilled_run_adopts_the_running_task_and_never_runs_a_finished_task_twice() {
    let s = Scratch::new("resume-crash");
    let db = s.0.join("store.db");
    let dbs = db.to_str().unwrap();
    s.write("crash.json", r#"{"id": "crash", "name": "crash", "version": "1.0", "tasks": [
      {"id": "start", "type": "system.start"},
      {"id": "t1", "type": "shell.run", "params": [{"name": "command", "value": "echo one >> \"$DIR/ran.txt\""}], "depends_on": [{"id": "start"}]},
      {"id": "t2", "type": "shell.run", "params": [{"name": "command", "value": "while [ ! -f \"$DIR/go\" ]; do sleep 0.05; done; echo two >> \"$DIR/ran.txt\""}], "depends_on": [{"id": "t1"}]},
      {"id": "end", "type": "system.end", "depends_on": [{"id": "t2"}]}]}"#
        .replace("$DIR", s.0.to_str().unwrap())
        .as_str());
    let mut child = Command::new(env!("CARGO_BIN_EXE_orrery"))
        .args(["run", "--db", dbs, "crash.json"])
        .current_dir(&s.0)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let lines = std::io::BufRead::lines(std::io::BufReader::new(child.stdout.take().unwrap()));
    for line in lines {
        if line.unwrap().contains("RUNNING    crash.t2") {
            break;
        }
    }
    // Wait until t2's process is named on its attempt, then crash the runner.
    let sessions = json_of(&orrery(&["sessions", "--db", dbs, "--format", "json"], &s.0));
    let id = sessions[0]["id"].as_str().unwrap().to_string();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let old_pid = loop {
        let status = json_of(&orrery(&["status", "--db", dbs, "--format", "json", &id], &s.0));
        let t2 = status["attempts"].as_array().unwrap().iter().find(|a| a["node"] == "crash.t2").cloned();
        if let Some(pid) = t2.and_then(|a| a["process"]["pid"].as_u64()) {
            break pid;
        }
        assert!(std::time::Instant::now() < deadline, "t2's process was never recorded");
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    assert!(group_exists(old_pid), "the crashed runner's task outlives it");

    s.write("go", "");
    let o = orrery(&["resume", &id, "--db", dbs], &s.0);
    assert_eq!(o.status.code(), Some(0), "{}\n{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).trim_end().ends_with("session    completed"), "{}", stdout(&o));
    // Since supervisors (issue 16 item 3) the resume adopts t2's process, which goes on to
    // success, instead of killing it and running t2 again.
    assert_eq!(s.read("ran.txt"), "one\ntwo\n", "t1 ran once, t2 (adopted) went on to success");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while group_exists(old_pid) {
        assert!(std::time::Instant::now() < deadline, "the old t2 process group survived the resume");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let status = orrery(&["status", "--db", dbs, &id], &s.0);
    assert!(stdout(&status).contains("SUCCEEDED  crash.t2"), "{}", stdout(&status));
    let status = json_of(&orrery(&["status", "--db", dbs, "--format", "json", &id], &s.0));
    let t2: Vec<&Value> = status["attempts"].as_array().unwrap().iter().filter(|a| a["node"] == "crash.t2").collect();
    assert_eq!(t2.iter().map(|a| a["state"].as_str().unwrap()).collect::<Vec<_>>(), ["succeeded"]);

    // Nothing is left to resume; an unknown session is a clear error.
    let again = orrery(&["resume", &id, "--db", dbs], &s.0);
    assert_eq!(again.status.code(), Some(1));
    assert!(stderr(&again).contains("nothing to resume"), "{}", stderr(&again));
    let unknown = orrery(&["resume", "no-such-session", "--db", dbs], &s.0);
    assert_eq!(unknown.status.code(), Some(1));
    assert!(stderr(&unknown).contains("no-such-session"), "{}", stderr(&unknown));
}

#[test]
fn skip_then_resume_finishes_a_stopped_session_and_a_completed_one_refuses_a_reset() {
    let s = Scratch::new("skip-reset");
    let db = s.0.join("store.db");
    let dbs = db.to_str().unwrap();
    s.write("slow.json", r#"{"id": "slow", "name": "slow", "version": "1.0", "tasks": [
      {"id": "start", "type": "system.start"},
      {"id": "wait", "type": "shell.run", "params": [{"name": "command", "value": "sleep 30"}], "depends_on": [{"id": "start"}]},
      {"id": "after", "type": "shell.run", "params": [{"name": "command", "value": "touch after-ran"}], "depends_on": [{"id": "wait"}]},
      {"id": "end", "type": "system.end", "depends_on": [{"id": "after"}]}]}"#);
    let mut child = Command::new(env!("CARGO_BIN_EXE_orrery"))
        .args(["run", "--db", dbs, "slow.json"])
        .current_dir(&s.0)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(child.stdout.take().unwrap()));
    for line in lines.by_ref() {
        if line.unwrap().contains("RUNNING    slow.wait") {
            break;
        }
    }
    assert!(Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap().success());
    lines.for_each(drop);
    assert_eq!(child.wait().unwrap().code(), Some(130));
    let sessions = json_of(&orrery(&["sessions", "--db", dbs, "--format", "json"], &s.0));
    let id = sessions[0]["id"].as_str().unwrap().to_string();
    assert_eq!(sessions[0]["state"], "stopped");

    let unknown = orrery(&["skip", &id, "nope", "--db", dbs], &s.0);
    assert_eq!(unknown.status.code(), Some(1));
    assert!(stderr(&unknown).contains("no task 'nope'"), "{}", stderr(&unknown));
    let bad = orrery(&["skip", &id, "--db", dbs], &s.0);
    assert_eq!(bad.status.code(), Some(2), "a missing argument");

    let skipped = orrery(&["skip", &id, "wait", "--db", dbs, "--format", "json"], &s.0);
    assert_eq!(skipped.status.code(), Some(0), "{}", stderr(&skipped));
    let answer = json_of(&skipped);
    assert_eq!(answer["tasks"][0]["node"], "slow.wait");
    assert_eq!(answer["tasks"][0]["to"], "SKIP_REQUESTED");

    let resumed = orrery(&["resume", &id, "--db", dbs], &s.0);
    assert_eq!(resumed.status.code(), Some(0), "{}\n{}", stdout(&resumed), stderr(&resumed));
    assert!(s.0.join("after-ran").exists(), "the skipped task's downstream ran");
    let status = stdout(&orrery(&["status", "--db", dbs, &id], &s.0));
    assert!(status.contains("SKIPPED    slow.wait"), "{status}");

    let refused = orrery(&["reset", &id, "after", "--downstream", "--clear-outputs", "--db", dbs], &s.0);
    assert_eq!(refused.status.code(), Some(1));
    assert!(stderr(&refused).contains("is completed"), "{}", stderr(&refused));
    let scope = orrery(&["reset-scope", &id, "after", "--db", dbs], &s.0);
    assert_eq!(scope.status.code(), Some(1));
}

const CONFIRM: &str = r#"{"id": "c", "name": "c", "version": "1.0", "tasks": [
  {"id": "start", "type": "system.start"},
  {"id": "hello", "type": "user_interaction.notify", "params": [{"name": "title", "value": "Hello"}, {"name": "message", "value": "about to ask"}], "depends_on": [{"id": "start"}]},
  {"id": "confirm", "type": "user_prompt.confirm", "params": [{"name": "message", "value": "Go on?"}], "outputs": [{"name": "result"}], "depends_on": [{"id": "hello"}]},
  {"id": "end", "type": "system.end", "depends_on": [{"id": "confirm"}]}]}"#;

#[test]
fn run_takes_prompt_answers_from_answer_and_fails_with_a_hint_without_one_when_not_interactive() {
    let s = Scratch::new("answer");
    s.write("confirm.json", CONFIRM);
    let db = s.0.join("orrery.db");
    let db = db.to_str().unwrap();

    let o = orrery(&["run", "--db", db, "--answer", "confirm=true", "confirm.json"], &s.0);
    assert_eq!(o.status.code(), Some(0), "{}\n{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("[info] Hello: about to ask"), "{}", stdout(&o));
    let status = orrery(&["status", "--db", db, "--format", "json", &session_of(&o)], &s.0);
    assert_eq!(status.status.code(), Some(0), "{}", stderr(&status));

    // The test's stdin is not a terminal: nobody can answer, so the task fails at once.
    let o = orrery(&["run", "--db", db, "confirm.json"], &s.0);
    assert_eq!(o.status.code(), Some(1), "{}\n{}", stdout(&o), stderr(&o));
    assert!(stderr(&o).contains("TOOL_FAILURE"), "{}", stderr(&o));
    assert!(stderr(&o).contains("--answer c.confirm=VALUE"), "{}", stderr(&o));

    // A malformed --answer is a usage error.
    let o = orrery(&["run", "--db", db, "--answer", "confirm", "confirm.json"], &s.0);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--answer \"confirm\" is not KEY=VALUE"), "{}", stderr(&o));
}

/// The session id `orrery run` names on its last stderr line (`session ID STATE (store ...)`).
fn session_of(o: &Output) -> String {
    let err = stderr(o);
    let line = err.lines().find(|l| l.starts_with("session ")).expect("a session line");
    line.split_whitespace().nth(1).unwrap().to_string()
}

/// What a terminal shows after `raw` was written to it: enough of a terminal for the live
/// display (carriage return, line feed, cursor up, erase to the end of the screen or line;
/// colours ignored), the screen as long as it needs to be.
fn screen_after(raw: &str) -> Vec<String> {
    let mut rows: Vec<Vec<char>> = vec![Vec::new()];
    let (mut row, mut col) = (0usize, 0usize);
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' => col = 0,
            '\n' => {
                row += 1;
                if rows.len() <= row {
                    rows.push(Vec::new());
                }
            }
            '\x1b' if chars.peek() == Some(&'[') => {
                chars.next();
                let mut arg = String::new();
                let command = loop {
                    match chars.next() {
                        Some(c) if c.is_ascii_digit() || c == ';' || c == '?' => arg.push(c),
                        other => break other,
                    }
                };
                let n: usize = arg.parse().unwrap_or(1);
                match command {
                    Some('A') => row = row.saturating_sub(n),
                    Some('J') => {
                        rows.truncate(row + 1);
                        rows[row].truncate(col);
                    }
                    Some('K') => rows[row].truncate(col),
                    _ => {}
                }
            }
            c => {
                let line = &mut rows[row];
                while line.len() < col {
                    line.push(' ');
                }
                if col < line.len() {
                    line[col] = c;
                } else {
                    line.push(c);
                }
                col += 1;
            }
        }
    }
    rows.into_iter().map(|r| r.into_iter().collect::<String>().trim_end().to_string()).collect()
}

#[test]
fn run_on_a_terminal_redraws_a_live_block_and_leaves_a_summary() {
    let s = Scratch::new("live");
    let db = s.0.join("store.db");
    s.write("live.json", r#"{"id": "live", "name": "live", "version": "1.0", "tasks": [
      {"id": "start", "type": "system.start"},
      {"id": "build", "type": "shell.run", "params": [{"name": "command", "value": "echo '{\"step\": \"compile\", \"state\": \"in_progress\", \"percentage\": 40}' >> \"$ORRERY_PROGRESS\"; sleep 1.5"}], "depends_on": [{"id": "start"}]},
      {"id": "lint", "type": "shell.run", "params": [{"name": "command", "value": "sleep 1"}], "depends_on": [{"id": "start"}]},
      {"id": "end", "type": "system.end", "depends_on": [{"id": "build"}, {"id": "lint"}]}]}"#);
    // `script` runs orrery on a pseudo-terminal of 100x12 and copies what it writes.
    let command = format!(
        "stty cols 100 rows 12; exec '{}' run --max-parallel 2 --db '{}' live.json",
        env!("CARGO_BIN_EXE_orrery"),
        db.display()
    );
    let o = Command::new("script")
        .args(["-qfec", &command, "/dev/null"])
        .env("SHELL", "/bin/sh")
        .env("NO_COLOR", "1")
        .current_dir(&s.0)
        .output()
        .expect("script (util-linux) runs");
    let raw = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{raw:?}\n{}", stderr(&o));
    assert!(raw.contains("\r\x1b[J"), "the block is drawn after erasing below the cursor: {raw:?}");
    assert!(raw.contains("\x1b[4A\x1b[J"), "the block (header, totals, two tasks) is redrawn in place: {raw:?}");
    assert!(!raw.contains("\x1b[1m") && !raw.contains("\x1b[32m"), "NO_COLOR is respected: {raw:?}");
    assert!(!raw.contains("SUCCEEDED  live.build"), "no plain event lines on a terminal: {raw:?}");
    let frames: Vec<&str> = raw.split("\x1b[J").collect();
    assert!(
        frames.iter().any(|f| f.contains("  live.build") && f.contains("compile 40%")),
        "a frame shows the running task with its progress step: {raw:?}"
    );
    assert!(frames.iter().any(|f| f.contains("2 running")), "a frame counts both running tasks: {raw:?}");

    let screen: Vec<String> = screen_after(&raw).into_iter().filter(|l| !l.is_empty()).collect();
    let n = screen.len();
    assert!(n >= 2, "{screen:#?}");
    assert!(
        screen[n - 2].starts_with("session    completed after ") && screen[n - 2].ends_with(": 4 tasks, 4 succeeded"),
        "the block is replaced by the summary: {screen:#?}"
    );
    assert!(screen[n - 1].starts_with("session ") && screen[n - 1].contains(" completed (store "), "{screen:#?}");
    assert!(!screen.iter().any(|l| l.contains("running")), "no block is left on the screen: {screen:#?}");
    assert!(raw.ends_with("\r\n"), "the cursor is left at the start of a clean line: {raw:?}");
}

/// `orrery ARGS` in `dir` whose standard output's reader is gone before it writes anything.
fn with_stdout_closed(args: &[&str], dir: &Path) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_orrery"))
        .args(args)
        .current_dir(dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("orrery runs");
    drop(child.stdout.take());
    child.wait_with_output().expect("orrery ends")
}

#[test]
fn a_run_whose_output_reader_goes_away_still_runs_to_its_end() {
    let s = Scratch::new("closed-stdout");
    let db = s.0.join("store.db");
    // The reader goes away before the first line is written.
    let o = with_stdout_closed(&["run", "--db", db.to_str().unwrap(), "assembly.json"], &s.0);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("completed"), "{}", stderr(&o));
    let sessions = orrery(&["sessions", "--db", db.to_str().unwrap()], &s.0);
    assert!(stdout(&sessions).contains("completed"), "{}", stdout(&sessions));
}

#[test]
fn a_run_whose_output_nobody_reads_runs_its_tasks_to_the_end_meanwhile_and_then_prints_every_event() {
    let s = Scratch::new("unread-stdout");
    let db = s.0.join("store.db");
    // 5,000 tasks: their events' lines are far more than a pipe holds (64 KiB), and the events
    // more than the run's event channel keeps for a reader behind (16,384).
    let ids: Vec<String> = (0..5000).map(|i| format!("t{i:04}")).collect();
    let mut tasks = vec![serde_json::json!({"id": "start", "type": "system.start"})];
    tasks.extend(ids.iter().map(|id| {
        serde_json::json!({"id": id, "type": "shell.run", "params": [{"name": "command", "value": "true"}],
            "depends_on": [{"id": "start"}]})
    }));
    let all: Vec<Value> = ids.iter().map(|id| serde_json::json!({"id": id})).collect();
    tasks.push(serde_json::json!({"id": "end", "type": "system.end", "depends_on": all}));
    s.write(
        "wide.json",
        &serde_json::json!({"id": "wide", "name": "wide", "version": "1.0", "tasks": tasks}).to_string(),
    );
    let (mut child, lines) = spawn(&["run", "--db", db.to_str().unwrap(), "wide.json"], &s.0);
    // Its output is not read until the session is over in the store.
    let until = std::time::Instant::now() + std::time::Duration::from_secs(300);
    loop {
        let sessions = orrery(&["sessions", "--db", db.to_str().unwrap()], &s.0);
        if stdout(&sessions).contains("completed") {
            break;
        }
        assert!(std::time::Instant::now() < until, "the run stalled behind its unread output: {}", stdout(&sessions));
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let lines: Vec<String> = lines.map(Result::unwrap).collect();
    assert_eq!(child.wait().unwrap().code(), Some(0));
    // Each stored event once, in order (what the channel dropped was read from the store).
    let seqs: Vec<u64> =
        lines.iter().filter_map(|line| line.split_whitespace().next()?.parse().ok()).filter(|&seq| seq > 0).collect();
    assert!(seqs.len() > 16_384, "{} events", seqs.len());
    assert!(seqs.iter().enumerate().all(|(i, &seq)| seq == i as u64 + 1), "every event once, in order");
    let last = lines.iter().rev().find(|line| line.trim_start().starts_with(&seqs[seqs.len() - 1].to_string()));
    assert!(last.is_some_and(|line| line.contains("session    completed")), "to the last: {last:?}");
    assert_eq!(lines.iter().filter(|line| line.contains("SUCCEEDED")).count(), 5002);
}

#[test]
fn a_job_whose_output_reader_goes_away_still_sees_its_session_to_the_end_without_a_panic() {
    let s = Scratch::new("closed-stdout-job");
    let db = s.0.join("store.db");
    let file = s.0.join("assembly.json");
    let arguments = serde_json::json!({"file": file}).to_string();
    // The reader goes away before the answer is written.
    let o = with_stdout_closed(&["job", "--db", db.to_str().unwrap(), "start_session", &arguments], &s.0);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
    let sessions = orrery(&["sessions", "--db", db.to_str().unwrap()], &s.0);
    assert!(stdout(&sessions).contains("completed"), "the session ran to its end: {}", stdout(&sessions));
}

#[test]
fn restart_with_the_saved_file_keeps_what_finished_and_runs_the_fixed_rest() {
    let s = Scratch::new("restart-saved");
    let db = s.0.join("store.db");
    let db = db.to_str().unwrap();
    let log = s.0.join("a.log");
    let log = log.display();
    let blueprint = |b: &str| {
        format!(
            r#"{{"id": "fix", "name": "fix", "version": "1.0", "tasks": [
            {{"id": "start", "type": "system.start"}},
            {{"id": "a", "type": "shell.run", "depends_on": [{{"id": "start"}}],
             "params": [{{"name": "command", "value": "echo made >> {log}"}}]}},
            {{"id": "b", "type": "shell.run", "depends_on": [{{"id": "a"}}],
             "params": [{{"name": "command", "value": "{b}"}}]}},
            {{"id": "end", "type": "system.end", "depends_on": [{{"id": "b"}}]}}]}}"#
        )
    };
    std::fs::write(s.0.join("fix.json"), blueprint("exit 3")).unwrap();
    let first = orrery(&["run", "--db", db, "fix.json"], &s.0);
    assert_eq!(first.status.code(), Some(1), "{}", stderr(&first));
    let listed: serde_json::Value =
        serde_json::from_str(&stdout(&orrery(&["sessions", "--db", db, "--format", "json"], &s.0))).unwrap();
    let session = listed[0]["id"].as_str().unwrap().to_string();

    let both = orrery(&["restart", "--db", db, "--saved", "--file", "fix.json", &session], &s.0);
    assert_eq!(both.status.code(), Some(2), "{}", stderr(&both));
    std::fs::write(s.0.join("fix.json"), "{").unwrap();
    let broken = orrery(&["restart", "--db", db, "--saved", "--keep-done", &session], &s.0);
    assert_eq!(broken.status.code(), Some(1), "{}", stderr(&broken));
    assert!(stderr(&broken).contains("fix.json is not valid"), "{}", stderr(&broken));

    std::fs::write(s.0.join("fix.json"), blueprint("true")).unwrap();
    // Run from another folder: the session knows its file.
    let retried = orrery(&["restart", "--db", db, "--saved", "--keep-done", &session], std::path::Path::new("/"));
    assert_eq!(retried.status.code(), Some(0), "{}", stderr(&retried));
    assert_eq!(std::fs::read_to_string(s.0.join("a.log")).unwrap(), "made\n", "a was kept, not run again");
    let over = orrery(&["restart", "--db", db, "--saved", &session], &s.0);
    assert_eq!(over.status.code(), Some(0), "{}", stderr(&over));
    assert_eq!(std::fs::read_to_string(s.0.join("a.log")).unwrap(), "made\nmade\n", "from the start");

    // Run from a task: what came before it is kept, it and what follows run.
    let from_b = orrery(&["restart", "--db", db, "--saved", "--from", "b", &session], &s.0);
    assert_eq!(from_b.status.code(), Some(0), "{}", stderr(&from_b));
    assert_eq!(std::fs::read_to_string(s.0.join("a.log")).unwrap(), "made\nmade\n", "a was kept");
    let from_a = orrery(&["restart", "--db", db, "--saved", "--from", "fix.a", &session], &s.0);
    assert_eq!(from_a.status.code(), Some(0), "{}", stderr(&from_a));
    assert_eq!(std::fs::read_to_string(s.0.join("a.log")).unwrap(), "made\nmade\nmade\n", "a ran again");
    let count = |o: &std::process::Output| stdout(o).lines().count();
    let before = count(&orrery(&["sessions", "--db", db], &s.0));
    let unknown = orrery(&["restart", "--db", db, "--from", "nope", &session], &s.0);
    assert_eq!(unknown.status.code(), Some(1), "{}", stderr(&unknown));
    assert!(stderr(&unknown).contains("no task 'nope' to run from"), "{}", stderr(&unknown));
    assert_eq!(count(&orrery(&["sessions", "--db", db], &s.0)), before, "no session was started");
}

#[test]
fn cancel_reaches_a_run_in_another_process_and_restart_runs_the_same_blueprint_as_a_new_session() {
    let s = Scratch::new("cancel");
    let db = s.0.join("store.db");
    let db = db.to_str().unwrap();
    std::fs::write(
        s.0.join("slow.json"),
        r#"{"id": "slowbp", "name": "slow", "version": "1.0", "tasks": [
            {"id": "start", "type": "system.start"},
            {"id": "slow", "type": "shell.run", "depends_on": [{"id": "start"}],
             "params": [{"name": "command", "value": "test -f flag || sleep 30"}]},
            {"id": "end", "type": "system.end", "depends_on": [{"id": "slow"}]}]}"#,
    )
    .unwrap();
    let run = Command::new(env!("CARGO_BIN_EXE_orrery"))
        .args(["run", "--db", db, "slow.json"])
        .current_dir(&s.0)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("orrery runs");
    // Wait for the task to run, as seen from outside.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let session = loop {
        assert!(std::time::Instant::now() < deadline, "the task never ran");
        std::thread::sleep(std::time::Duration::from_millis(100));
        let listed: serde_json::Value =
            serde_json::from_str(&stdout(&orrery(&["sessions", "--db", db, "--format", "json"], &s.0)))
                .unwrap_or_default();
        let Some(id) = listed[0]["id"].as_str() else { continue };
        let status: serde_json::Value =
            serde_json::from_str(&stdout(&orrery(&["status", "--db", db, "--format", "json", id], &s.0))).unwrap();
        let running =
            status["tasks"].as_array().unwrap().iter().any(|t| t["state"] == "RUNNING" && t["node"] == "slowbp.slow");
        if running {
            break id.to_string();
        }
    };

    let refused = orrery(&["cancel", "--db", db, &session, "end"], &s.0);
    assert_eq!(refused.status.code(), Some(1), "{}", stderr(&refused));
    assert!(stderr(&refused).contains("task end is not running"), "{}", stderr(&refused));
    let cancel = orrery(&["cancel", "--db", db, "--format", "json", &session, "slow"], &s.0);
    assert_eq!(cancel.status.code(), Some(0), "{}", stderr(&cancel));
    let answer: serde_json::Value = serde_json::from_str(&stdout(&cancel)).unwrap();
    assert_eq!(answer["outcome"], "cancelling slowbp.slow");
    let ran = run.wait_with_output().unwrap();
    assert_eq!(ran.status.code(), Some(1), "the cancelled task failed the run");
    assert!(String::from_utf8_lossy(&ran.stderr).contains("'slowbp.slow' was cancelled"));

    // The session is over: nothing more to ask of it.
    let late = orrery(&["pause", "--db", db, &session], &s.0);
    assert_eq!(late.status.code(), Some(1));
    assert!(stderr(&late).contains("is not running (it is failed)"), "{}", stderr(&late));

    // Restart: a new session of the same blueprint version, which completes now.
    std::fs::write(s.0.join("flag"), "").unwrap();
    let restart = orrery(&["restart", "--db", db, &session], &s.0);
    assert_eq!(restart.status.code(), Some(0), "{}", stderr(&restart));
    let listed: serde_json::Value =
        serde_json::from_str(&stdout(&orrery(&["sessions", "--db", db, "--format", "json"], &s.0))).unwrap();
    let listed = listed.as_array().unwrap();
    assert_eq!(listed.len(), 2);
    assert_ne!(listed[0]["id"], session.as_str());
    assert_eq!(listed[0]["state"], "completed");
    assert_eq!(listed[0]["blueprint_hash"], listed[1]["blueprint_hash"]);
    assert_eq!(listed[1]["state"], "failed", "the old session is left as it was");

    // Each names the other; the store is found through ORRERY_DB too, as the app finds it.
    let again = listed[0]["id"].as_str().unwrap();
    let by_env = |session: &str| {
        let o = Command::new(env!("CARGO_BIN_EXE_orrery"))
            .args(["status", session])
            .env("ORRERY_DB", db)
            .current_dir(&s.0)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        stdout(&o)
    };
    assert!(by_env(again).contains(&format!("restarts  {session}")), "{}", by_env(again));
    assert!(by_env(&session).contains(&format!("restarted as {again}")), "{}", by_env(&session));
}

#[test]
fn a_store_that_is_not_a_database_is_a_clear_error_and_stays_untouched() {
    let s = Scratch::new("garbage-store");
    let garbage: Vec<u8> = (0..4096u32).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect();
    std::fs::write(s.0.join("store.db"), &garbage).unwrap();
    for args in [
        vec!["run", "--db", "store.db", "assembly.json"],
        vec!["sessions", "--db", "store.db"],
        vec!["recover", "--db", "store.db"],
        vec!["cancel", "--db", "store.db", "some-session"],
    ] {
        let o = orrery(&args, &s.0);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("store.db is not a usable Orrery database"), "{args:?}: {}", stderr(&o));
    }
    assert_eq!(std::fs::read(s.0.join("store.db")).unwrap(), garbage, "the file is left as it was");
}

#[test]
fn asking_an_unknown_session_is_a_clear_refusal() {
    let s = Scratch::new("unknown-session");
    let db = s.0.join("store.db");
    let db = db.to_str().unwrap();
    for args in
        [vec!["cancel", "--db", db, "nope"], vec!["pause", "--db", db, "nope"], vec!["restart", "--db", db, "nope"]]
    {
        let o = orrery(&args, &s.0);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("session \"nope\" not found"), "{args:?}: {}", stderr(&o));
    }
}

#[test]
fn jobs_lists_the_facade_and_job_calls_one_with_its_exit_code() {
    let s = Scratch::new("jobs");
    let db = s.0.join("store.db");
    let db = db.to_str().unwrap();
    let listed = json_of(&orrery(&["jobs", "--format", "json"], &s.0));
    let names: Vec<&str> = listed.as_array().unwrap().iter().map(|j| j["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"start_session") && names.contains(&"cancel_task"), "{names:?}");

    // A session started by `orrery job` runs in it: the envelope comes first, the exit after.
    let file = s.0.join("assembly.json");
    let args = serde_json::json!({"file": file}).to_string();
    let started = orrery(&["job", "start_session", &args, "--db", db], &s.0);
    assert_eq!(started.status.code(), Some(0), "{}", stderr(&started));
    let envelope = json_of(&started);
    assert_eq!(envelope["success"], true);
    let id = envelope["answer"]["session_id"].as_str().unwrap().to_string();
    let got = orrery(&["job", "get_session", &serde_json::json!({"session_id": id}).to_string(), "--db", db], &s.0);
    assert_eq!(json_of(&got)["answer"]["session"]["state"], "completed");

    let failure = orrery(&["job", "get_session", r#"{"session_id": "nope"}"#, "--db", db], &s.0);
    assert_eq!(failure.status.code(), Some(1));
    assert_eq!(json_of(&failure)["metadata"]["error"], "not_found");
    for (args, says) in [
        (vec!["job", "nope"], "no job named \"nope\""),
        (vec!["job", "get_session", "{}"], "missing field `session_id`"),
        (vec!["job", "get_session", "{not json"], "not JSON"),
    ] {
        let o = orrery(&[&args[..], &["--db", db]].concat(), &s.0);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
    }

    // The streaming job prints one JSON line per item, the result last.
    let submit = r#"{"task": "shell.run", "task_name": "hi", "command": "echo hi"}"#;
    let submitted = json_of(&orrery(&["job", "submit", submit, "--db", db], &s.0));
    let task = submitted["answer"]["task_id"].as_str().unwrap();
    let arguments = serde_json::json!({"task_id": task}).to_string();
    let streamed = orrery(&["job", "stream_task", &arguments, "--db", db], &s.0);
    assert_eq!(streamed.status.code(), Some(0), "{}", stderr(&streamed));
    let items: Vec<serde_json::Value> =
        String::from_utf8_lossy(&streamed.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let logged: Vec<&serde_json::Value> =
        items.iter().filter(|i| i["kind"] == "log").map(|i| &i["data"]["content"]).collect();
    assert_eq!(logged, ["hi\n"]);
    let last = items.last().unwrap();
    assert_eq!((last["kind"].as_str(), last["data"]["state"].as_str()), (Some("result"), Some("succeeded")));
    let unknown = serde_json::json!({"task_id": "shell#shell.run#none"}).to_string();
    let refused = orrery(&["job", "stream_task", &unknown, "--db", db], &s.0);
    assert_eq!(refused.status.code(), Some(1));
    assert_eq!(json_of(&refused)["metadata"]["error"], "not_found");
}

#[test]
fn lineage_traces_each_input_to_the_attempt_that_wrote_it() {
    let s = Scratch::new("lineage");
    let db = s.0.join("store.db");
    let db = db.to_str().unwrap();
    assert_eq!(orrery(&["run", "--db", db, "assembly.json"], &s.0).status.code(), Some(0));
    let id =
        json_of(&orrery(&["sessions", "--db", db, "--format", "json"], &s.0))[0]["id"].as_str().unwrap().to_string();
    let lineage = json_of(&orrery(&["lineage", "--db", db, "--format", "json", &id], &s.0));
    let instances: Vec<&str> =
        lineage["instances"].as_array().unwrap().iter().map(|i| i["id"].as_str().unwrap()).collect();
    assert_eq!(instances, ["assembly", "place_element_place"]);
    let pick = lineage["inputs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["node"] == "assembly.pick" && l["attempt"] == 2)
        .unwrap();
    assert_eq!(pick["source"]["node"], "assembly.place", "the second pass reads what the first placement left");
    let text = stdout(&orrery(&["lineage", "--db", db, &id], &s.0));
    assert!(text.contains("assembly.pick#1") && text.contains("<- assembly.plan#1"), "{text}");
    let unknown = orrery(&["lineage", "--db", db, "nope"], &s.0);
    assert_eq!(unknown.status.code(), Some(1));
    assert!(stderr(&unknown).contains("\"nope\" not found"), "{}", stderr(&unknown));
}

#[test]
fn the_broker_commands_say_what_is_wrong_with_their_arguments_or_the_broker() {
    let dir = Scratch::new("broker");
    let db = &dir.0.join("orrery.db");
    let db = db.to_str().unwrap();
    // Nothing listens on port 9 of loopback.
    let out = orrery(&["agent", "--broker", "mqtt://127.0.0.1:9"], &dir.0);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("cannot reach the MQTT broker at mqtt://127.0.0.1:9"), "{}", stderr(&out));
    let out = orrery(&["agent", "--broker", "mqtt://127.0.0.1:9", "--type", "user_prompt.confirm"], &dir.0);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("no type the agent can offer matches"), "prompts are not offered: {}", stderr(&out));
    let out = orrery(&["agent", "--broker", "mqtts://h:8883"], &dir.0);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("not TLS"), "{}", stderr(&out));
    // A run with a broker that does not answer starts nothing.
    let file = examples().join("assembly.json");
    let out = orrery(&["run", "--db", db, "--broker", "mqtt://127.0.0.1:9", file.to_str().unwrap()], &dir.0);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("mqtt://127.0.0.1:9"), "{}", stderr(&out));
    let out = orrery(&["sessions", "--db", db, "--format", "json"], &dir.0);
    assert_eq!(stdout(&out).trim(), "[]", "no session was made");
    // Saved settings: shown, checked, cleared.
    let out = orrery(
        &["broker", "--db", db, "set", "127.0.0.1:9", "--via-broker", "system.sleep", "--agent-timeout", "5"],
        &dir.0,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let shown = stdout(&orrery(&["broker", "--db", db], &dir.0));
    assert!(shown.contains("mqtt://127.0.0.1:9") && shown.contains("system.sleep") && shown.contains("5 s"), "{shown}");
    let out = orrery(&["broker", "--db", db, "check"], &dir.0);
    assert_eq!(out.status.code(), Some(2), "nothing answers: {}", stderr(&out));
    let out = orrery(&["broker", "--db", db, "set", "127.0.0.1:9", "--agent-timeout", "-1"], &dir.0);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(orrery(&["broker", "--db", db, "clear"], &dir.0).status.success());
    assert!(stdout(&orrery(&["broker", "--db", db], &dir.0)).contains("no broker"));
}

#[test]
fn run_simulate_starts_no_process_and_says_so() {
    let s = Scratch::new("run-simulate");
    let db = s.0.join("store.db");
    let dbs = db.to_str().unwrap();
    s.write(
        "sim.json",
        r#"{"id": "sim", "name": "sim", "version": "1.0", "tasks": [
      {"id": "start", "type": "system.start"},
      {"id": "a", "type": "shell.run", "params": [{"name": "command", "value": "echo a >> ran.txt"}],
       "outputs": [{"name": "n", "value": 0}], "depends_on": [{"id": "start"}]},
      {"id": "b", "type": "shell.run", "params": [{"name": "command", "value": "echo b >> ran.txt"}],
       "inputs": [{"name": "n"}], "condition": "n > 5", "depends_on": [{"id": "a"}]},
      {"id": "end", "type": "system.end", "depends_on": [{"id": "b"}]}]}"#,
    );
    let o = orrery(&["run", "--db", dbs, "--simulate", "--output", r#"a={"n": 9}"#, "sim.json"], &s.0);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("is a simulation: no process starts"), "{}", stderr(&o));
    assert!(stderr(&o).contains("simulated session "), "{}", stderr(&o));
    assert!(stdout(&o).contains("sim.b") && !s.0.join("ran.txt").exists(), "b ran, simulated: {}", stdout(&o));
    let listed = orrery(&["sessions", "--db", dbs], &s.0);
    assert!(stdout(&listed).lines().nth(1).unwrap().ends_with("  simulated"), "{}", stdout(&listed));

    // Set to fail: exit 1 with the simulation's error.
    let o = orrery(&["run", "--db", dbs, "--simulate", "--fail", "a", "sim.json"], &s.0);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("task 'sim.a' fails: the simulation sets it to fail"), "{}", stderr(&o));

    // Bad input names the flag; a task the blueprint does not have starts nothing.
    for (args, says) in [
        (vec!["--output", "a=7"], "not a JSON object"),
        (vec!["--fail", "a:0"], "at least 1"),
        (vec!["--output", "a={}"], "--simulate"),
        (vec!["--simulate", "--fail", "nope"], "the simulation names no task 'nope'"),
    ] {
        let o = orrery(&[&["run", "--db", dbs][..], &args, &["sim.json"]].concat(), &s.0);
        assert_ne!(o.status.code(), Some(0), "{args:?}");
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
    }
    let listed = json_of(&orrery(&["sessions", "--db", dbs, "--format", "json"], &s.0));
    assert_eq!(listed.as_array().unwrap().len(), 2);
    assert!(!s.0.join("ran.txt").exists());
}

#[test]
fn status_says_the_time_left_then_the_critical_path_and_the_slow_task() {
    let s = Scratch::new("status-timing");
    let db = s.0.join("store.db");
    let dbs = db.to_str().unwrap();
    s.write("pace", "0.1");
    s.write("tt.json", r#"{"id": "tt", "name": "tt", "version": "1.0", "tasks": [
      {"id": "start", "type": "system.start"},
      {"id": "a", "type": "shell.run", "params": [{"name": "command", "value": "sleep $(cat pace)"}], "depends_on": [{"id": "start"}]},
      {"id": "end", "type": "system.end", "depends_on": [{"id": "a"}]}]}"#);
    let newest = || {
        json_of(&orrery(&["sessions", "--db", dbs, "--format", "json"], &s.0))[0]["id"].as_str().unwrap().to_string()
    };
    for _ in 0..2 {
        assert_eq!(orrery(&["run", "--db", dbs, "tt.json"], &s.0).status.code(), Some(0));
    }

    // Held before a: its usual (0.1 s) is left.
    let (child, mut lines) = spawn(&["run", "--db", dbs, "--break", "a", "tt.json"], &s.0);
    assert!(lines.by_ref().map(Result::unwrap).any(|l| l.contains("break      held tt.a")));
    let held = newest();
    let status = stdout(&orrery(&["status", "--db", dbs, &held], &s.0));
    let left = status.lines().find(|l| l.starts_with("left ")).unwrap_or_else(|| panic!("{status}"));
    assert!(left.starts_with("left      about 0.") && left.ends_with("s (from 2 past runs)"), "{left}");

    // a takes 1.4 s this time: slow against its usual, on the critical path.
    s.write("pace", "1.4");
    assert_eq!(orrery(&["continue", "--db", dbs, &held], &s.0).status.code(), Some(0));
    assert_eq!(child.wait_with_output().unwrap().status.code(), Some(0));
    let status = stdout(&orrery(&["status", "--db", dbs, &held], &s.0));
    assert!(!status.contains("\nleft "), "{status}");
    assert!(status.contains("\ncritical  tt.start -> tt.a -> tt.end\n"), "{status}");
    let slow = status.lines().find(|l| l.starts_with("slow ")).unwrap_or_else(|| panic!("{status}"));
    assert!(
        slow.starts_with("slow      tt.a took 1.") && slow.contains(", usually 0.1s (median of 2 past runs)"),
        "{slow}"
    );
}

#[test]
fn run_alone_runs_one_task_with_its_inputs_typed_or_from_the_latest_run() {
    let s = Scratch::new("run-alone");
    let db = s.0.join("store.db");
    let dbs = db.to_str().unwrap();
    s.write("one.json", r#"{"id": "one", "name": "one", "version": "1.0", "tasks": [
      {"id": "start", "type": "system.start"},
      {"id": "a", "type": "shell.run", "params": [{"name": "command", "value": "echo a >> ran.txt; printf '{\"n\": 7}' > \"$ORRERY_OUTPUTS\""}],
       "outputs": [{"name": "n"}], "depends_on": [{"id": "start"}]},
      {"id": "b", "type": "shell.run", "params": [{"name": "command", "value": "echo b $ORRERY_INPUT_N >> ran.txt"}],
       "inputs": [{"name": "n"}], "depends_on": [{"id": "a"}]},
      {"id": "end", "type": "system.end", "depends_on": [{"id": "b"}]}]}"#);
    // No completed run yet to take inputs from: said, exit 1.
    let o = orrery(&["run", "--db", dbs, "--alone", "b", "--inputs-from", "latest", "one.json"], &s.0);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("has no completed session to take inputs from"), "{}", stderr(&o));

    assert_eq!(orrery(&["run", "--db", dbs, "one.json"], &s.0).status.code(), Some(0));
    let o = orrery(&["run", "--db", dbs, "--alone", "b", "--inputs-from", "latest", "one.json"], &s.0);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = orrery(&["run", "--db", dbs, "--alone", "b", "--input", "n=9", "one.json"], &s.0);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(s.0.join("ran.txt")).unwrap(), "a\nb 7\nb 7\nb 9\n");

    for (args, says) in [
        (vec!["--alone", "nope"], "no task 'nope' to run alone"),
        (vec!["--alone", "b", "--input", "zz=1"], "has no input 'zz'"),
        (vec!["--input", "n=1"], "--alone"),
    ] {
        let o = orrery(&[&["run", "--db", dbs][..], &args, &["one.json"]].concat(), &s.0);
        assert_ne!(o.status.code(), Some(0), "{args:?}");
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
    }
}

#[test]
fn break_sets_and_clears_a_breakpoint_of_a_running_session() {
    let s = Scratch::new("break-live");
    let db = s.0.join("store.db");
    let dbs = db.to_str().unwrap();
    s.write("bl.json", r#"{"id": "bl", "name": "bl", "version": "1.0", "tasks": [
      {"id": "start", "type": "system.start"},
      {"id": "a", "type": "shell.run", "params": [{"name": "command", "value": "echo a >> ran.txt"}], "depends_on": [{"id": "start"}]},
      {"id": "b", "type": "shell.run", "params": [{"name": "command", "value": "echo b >> ran.txt"}], "depends_on": [{"id": "a"}]},
      {"id": "end", "type": "system.end", "depends_on": [{"id": "b"}]}]}"#);
    let (child, mut lines) = spawn(&["run", "--db", dbs, "--break", "a", "bl.json"], &s.0);
    let mut until = |wanted: &str| {
        assert!(lines.by_ref().map(Result::unwrap).any(|l| l.contains(wanted)), "no line with {wanted:?}")
    };
    until("break      held bl.a");
    let session =
        json_of(&orrery(&["sessions", "--db", dbs, "--format", "json"], &s.0))[0]["id"].as_str().unwrap().to_string();
    let set = orrery(&["break", "--db", dbs, &session, "b:after"], &s.0);
    assert_eq!((set.status.code(), stdout(&set).trim()), (Some(0), "b holds after it ends"), "{}", stderr(&set));
    let cleared = orrery(&["break", "--db", dbs, "--clear", &session, "a"], &s.0);
    assert_eq!(stdout(&cleared).trim(), "the breakpoint of a is cleared");
    let unknown = orrery(&["break", "--db", dbs, &session, "nope"], &s.0);
    assert_eq!(unknown.status.code(), Some(1));
    assert!(stderr(&unknown).contains("no task nope"), "{}", stderr(&unknown));
    assert_eq!(orrery(&["continue", "--db", dbs, &session], &s.0).status.code(), Some(0));
    until("break      held bl.b");
    assert_eq!(std::fs::read_to_string(s.0.join("ran.txt")).unwrap(), "a\nb\n");
    assert_eq!(orrery(&["continue", "--db", dbs, &session], &s.0).status.code(), Some(0));
    assert_eq!(child.wait_with_output().unwrap().status.code(), Some(0));
}
