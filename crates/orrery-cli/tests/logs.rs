//! `orrery logs` as a black box: a real blueprint whose shell task prints lines (with
//! multi-byte characters) over time, read whole, as windows, and followed while it runs.

use serde_json::{json, Value};
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

fn orrery(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_orrery")).args(args).current_dir(dir).output().expect("orrery runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("logs-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    fn db(&self) -> String {
        self.0.join("store.db").to_str().unwrap().to_string()
    }

    /// `talk` prints `lines` lines, waiting for the file `go` after the third when `wait` is set.
    fn blueprint(&self, lines: u32, wait: bool) {
        let gate = if wait {
            format!("if [ $i = 3 ]; then while [ ! -f '{}/go' ]; do sleep 0.05; done; fi; ", self.0.display())
        } else {
            String::new()
        };
        let command = format!("for i in $(seq 1 {lines}); do echo \"é line $i: ünïcödé 🦀\"; {gate}sleep 0.02; done");
        let blueprint = serde_json::json!({"id": "pr", "name": "pr", "version": "1.0", "tasks": [
            {"id": "start", "type": "system.start"},
            {"id": "talk", "type": "shell.run", "params": [{"name": "command", "value": command}], "depends_on": [{"id": "start"}]},
            {"id": "end", "type": "system.end", "depends_on": [{"id": "talk"}]}]});
        std::fs::write(self.0.join("p.json"), blueprint.to_string()).unwrap();
    }

    /// Starts `orrery run` and returns once `talk` is running, with the session id.
    fn start_run(&self) -> (Child, String) {
        let mut run = Command::new(env!("CARGO_BIN_EXE_orrery"))
            .args(["run", "--db", &self.db(), "p.json"])
            .current_dir(&self.0)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let lines = std::io::BufReader::new(run.stdout.take().unwrap()).lines();
        for line in lines {
            if line.unwrap().contains("RUNNING    pr.talk") {
                break;
            }
        }
        let sessions: Value =
            serde_json::from_str(&stdout(&orrery(&["sessions", "--db", &self.db(), "--format", "json"], &self.0)))
                .unwrap();
        (run, sessions[0]["id"].as_str().unwrap().to_string())
    }

    /// Runs the blueprint to its end and returns the session id.
    fn run(&self) -> String {
        let o = orrery(&["run", "--db", &self.db(), "p.json"], &self.0);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let sessions: Value =
            serde_json::from_str(&stdout(&orrery(&["sessions", "--db", &self.db(), "--format", "json"], &self.0)))
                .unwrap();
        sessions[0]["id"].as_str().unwrap().to_string()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn expected(lines: u32) -> String {
    (1..=lines).map(|i| format!("é line {i}: ünïcödé 🦀\n")).collect()
}

#[test]
fn logs_prints_the_whole_log_and_windows_aligned_to_characters() {
    let s = Scratch::new("window");
    s.blueprint(40, false);
    let session = s.run();
    let whole = orrery(&["logs", "--db", &s.db(), &session, "talk"], &s.0);
    assert_eq!(whole.status.code(), Some(0), "{}", stderr(&whole));
    assert_eq!(stdout(&whole), expected(40), "the task id of the root blueprint names the task");

    let all = expected(40);
    let json = orrery(
        &["logs", "--db", &s.db(), "--format", "json", "--offset", "1", "--limit", "1024", &session, "pr.talk"],
        &s.0,
    );
    assert_eq!(json.status.code(), Some(0), "{}", stderr(&json));
    // The answer of the job `read_attempt_log`: the attempt and its window.
    let answer: Value = serde_json::from_str(&stdout(&json)).unwrap();
    assert_eq!(
        (&answer["node"], &answer["attempt"], &answer["running"]),
        (&json!("pr.talk"), &json!(1), &json!(false))
    );
    let w = &answer["window"];
    assert_eq!(w["start_offset"], 2, "offset 1 is inside 'é': the window starts after it");
    let next = w["next_offset"].as_u64().unwrap();
    assert!(next <= 1026 && next > 1000, "at most 1024 bytes: {w}");
    assert!(all.is_char_boundary(next as usize), "the window ends on a character boundary: {w}");
    assert_eq!(w["content"], all[2..next as usize], "the bytes from 2 to next_offset");
    assert_eq!(w["file_size"], all.len());
    assert_eq!(
        (w["has_more_before"].clone(), w["has_more_after"].clone(), w["reset"].clone()),
        (true.into(), true.into(), false.into())
    );

    let past = orrery(&["logs", "--db", &s.db(), "--format", "json", "--offset", "99999", &session, "talk"], &s.0);
    let answer: Value = serde_json::from_str(&stdout(&past)).unwrap();
    let w = &answer["window"];
    assert_eq!(
        (w["reset"].clone(), w["content"].clone()),
        (true.into(), Value::from(all.clone())),
        "past the end: the tail"
    );

    let tail = orrery(&["logs", "--db", &s.db(), "--offset", "-1", "--limit", "1024", &session, "talk"], &s.0);
    assert!(
        all.ends_with(&stdout(&tail)) && stdout(&tail).len() <= 1024 && stdout(&tail).len() > 1000,
        "{}",
        stdout(&tail)
    );
}

#[test]
fn follow_prints_every_line_in_order_and_ends_when_the_task_ends() {
    let s = Scratch::new("follow");
    s.blueprint(12, true);
    let (run, session) = s.start_run();
    let mut follow = Command::new(env!("CARGO_BIN_EXE_orrery"))
        .args(["logs", "--db", &s.db(), "--follow", &session, "talk"])
        .current_dir(&s.0)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(follow.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    // The task waits after line 3 until `go` exists: these lines came while it ran.
    while seen.len() < 3 {
        seen.push(lines.next().expect("a line while the task runs").unwrap());
    }
    std::fs::write(s.0.join("go"), "").unwrap();
    seen.extend(lines.map(Result::unwrap));
    let ended = follow.wait_with_output().unwrap();
    assert_eq!(ended.status.code(), Some(0), "{}", stderr(&ended));
    assert_eq!(seen.iter().map(|l| format!("{l}\n")).collect::<String>(), expected(12), "every line, in order");
    assert_eq!(run.wait_with_output().unwrap().status.code(), Some(0));
}

#[test]
fn follow_in_json_prints_chunks_whose_offsets_follow_each_other() {
    let s = Scratch::new("follow-json");
    s.blueprint(5, false);
    let session = s.run();
    let o = orrery(&["logs", "--db", &s.db(), "--follow", "--format", "json", &session, "talk"], &s.0);
    assert_eq!(o.status.code(), Some(0), "a settled attempt: print what is there and end\n{}", stderr(&o));
    let mut offset = 0;
    let mut text = String::new();
    for line in stdout(&o).lines() {
        let chunk: Value = serde_json::from_str(line).unwrap();
        assert_eq!(chunk["kind"], "chunk");
        assert_eq!(chunk["start_offset"], offset);
        offset = chunk["next_offset"].as_u64().unwrap();
        text.push_str(chunk["content"].as_str().unwrap());
    }
    assert_eq!(text, expected(5));
    assert_eq!(offset, expected(5).len() as u64);
}

#[test]
fn logs_refuses_an_unknown_session_task_or_attempt_and_a_task_without_a_log() {
    let s = Scratch::new("refusals");
    s.blueprint(1, false);
    let session = s.run();
    let db = s.db();
    let cases: [(&[&str], i32, &str); 6] = [
        (&["logs", "--db", &db, "no-such-session", "talk"], 1, "no session 'no-such-session'"),
        (&["logs", "--db", &db, &session, "nope"], 1, "has no task 'nope'"),
        (&["logs", "--db", &db, "--attempt", "2", &session, "talk"], 1, "task pr.talk of session"),
        (&["logs", "--db", &db, &session, "end"], 1, "has no log: only shell.run tasks write one"),
        (&["logs", "--db", &db, "--offset", "-2", &session, "talk"], 2, "offset -2 for log"),
        (&["logs", "--db", &db, "--follow", "--offset", "-5", &session, "talk"], 2, "offset -5 for log"),
    ];
    for (args, code, message) in cases {
        let o = orrery(args, &s.0);
        assert_eq!(o.status.code(), Some(code), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(message), "{args:?}: {}", stderr(&o));
        assert_eq!(stdout(&o), "", "{args:?} prints nothing on standard output");
    }
}

#[test]
fn follow_ends_on_ctrl_c_with_130_while_the_task_still_runs() {
    let s = Scratch::new("follow-int");
    s.blueprint(5, true);
    let (run, session) = s.start_run();
    let mut follow = Command::new(env!("CARGO_BIN_EXE_orrery"))
        .args(["logs", "--db", &s.db(), "--follow", &session, "talk"])
        .current_dir(&s.0)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(follow.stdout.take().unwrap()).lines();
    for _ in 0..3 {
        lines.next().expect("a line while the task runs").unwrap();
    }
    let sent = Command::new("kill").args(["-INT", &follow.id().to_string()]).status().unwrap();
    assert!(sent.success());
    let ended = follow.wait_with_output().unwrap();
    assert_eq!(ended.status.code(), Some(130), "{}", stderr(&ended));
    std::fs::write(s.0.join("go"), "").unwrap();
    assert_eq!(run.wait_with_output().unwrap().status.code(), Some(0), "the run itself was not touched");
}

#[test]
fn logs_of_a_run_with_a_relative_store_path_read_from_any_folder() {
    let s = Scratch::new("relative");
    s.blueprint(2, false);
    let o = orrery(&["run", "--db", "store.db", "p.json"], &s.0);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let sessions: Value =
        serde_json::from_str(&stdout(&orrery(&["sessions", "--db", &s.db(), "--format", "json"], &s.0))).unwrap();
    let session = sessions[0]["id"].as_str().unwrap();
    let elsewhere = orrery(&["logs", "--db", &s.db(), session, "talk"], Path::new("/"));
    assert_eq!(elsewhere.status.code(), Some(0), "{}", stderr(&elsewhere));
    assert_eq!(stdout(&elsewhere), expected(2), "the stored log path does not depend on the folder of the run");
}
