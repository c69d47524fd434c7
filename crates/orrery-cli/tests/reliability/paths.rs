//! Items 6, 7 and 8: paths. Ids that would leave the data folder as file names (`.` as a
//! blueprint id, `/../../../escaped` or 300 bytes as a task id) stay under the store's `runs/`;
//! atomic writes (`orrery fmt`, `write_blueprint_file`, `save_layout`) never follow a symlink
//! planted at the temporary name the old code used and keep the file's mode; and special files
//! (a FIFO named `x.json`, `/dev/zero`, a folder, a file over 128 MiB) are refused promptly by
//! `orrery validate`, `run`, `fmt`, `graph` and by `orrery serve`'s jobs, which go on answering.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A guard against a hang: no assertion depends on how long a command takes within it.
const HANG: Duration = Duration::from_secs(120);
const TOKEN: &str = "reliability-paths-token-0123456789";

struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("paths-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }
    fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.0.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }
    fn fifo(&self, name: &str) -> PathBuf {
        let path = self.0.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        assert!(Command::new("mkfifo").arg(&path).status().unwrap().success(), "mkfifo {}", path.display());
        path
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs `orrery ARGS` in `dir`, killed (and the test failed) past [`HANG`]; prints how long it
/// took.
fn orrery(args: &[&str], dir: &Path) -> Output {
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_orrery"))
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Drain both pipes on threads so that a chatty child never blocks on them.
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = out.read_to_end(&mut v);
        v
    });
    let err = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = err.read_to_end(&mut v);
        v
    });
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > HANG {
            let _ = child.kill();
            let _ = child.wait();
            panic!("orrery {args:?} still running after {HANG:?}: it hangs");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let output = Output { status, stdout: out.join().unwrap(), stderr: err.join().unwrap() };
    println!("orrery {args:?}: {:?} in {:?}", status.code(), started.elapsed());
    output
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Every file and symlink below `dir` (not following links).
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let entry = entry.unwrap();
            if entry.file_type().unwrap().is_dir() {
                todo.push(entry.path());
            } else {
                found.push(entry.path());
            }
        }
    }
    found
}

fn shell(id: &str, command: &str, after: &str) -> Value {
    json!({"id": id, "type": "shell.run", "params": [{"name": "command", "value": command}],
           "depends_on": [{"id": after, "type": "FS"}]})
}

fn blueprint(id: &str, tasks: Vec<Value>) -> String {
    let last = tasks.last().map(|t| t["id"].as_str().unwrap().to_string()).unwrap_or("start".into());
    let mut all = vec![json!({"id": "start", "type": "system.start"})];
    all.extend(tasks);
    all.push(json!({"id": "end", "type": "system.end", "depends_on": [{"id": last, "type": "FS"}]}));
    serde_json::to_string_pretty(&json!({"id": id, "name": id, "version": "1.0", "tasks": all})).unwrap()
}

#[test]
fn ids_never_leave_the_runs_folder() {
    let s = Scratch::new("ids");
    // The store in s/a/b: its runs/ is s/a/b/runs, the session's folder s/a/b/runs/SESSION,
    // so the key `../../../../escaped` (blueprint `.`, task `/../../../escaped`) would be s/escaped.
    let data = s.0.join("a/b");
    std::fs::create_dir_all(&data).unwrap();
    let db = data.join("orrery.db");
    let long = "L".repeat(300);
    let tasks = vec![
        shell("/../../../escaped", "echo escaped", "start"),
        shell("..", "echo dots", "/../../../escaped"),
        shell(&long, "echo long", ".."),
        shell("a/b%2Fc", "echo slash", &long),
        shell("a%2Fb/c", "echo percent", "a/b%2Fc"),
    ];
    let file = s.write("bp/escape.json", &blueprint(".", tasks));
    let o = orrery(&["validate", file.to_str().unwrap()], &s.0);
    println!("validate: {}{}", text(&o.stdout), text(&o.stderr));
    let o = orrery(&["run", "--db", db.to_str().unwrap(), file.to_str().unwrap()], &s.0);
    let (stdout, stderr) = (text(&o.stdout), text(&o.stderr));
    assert!(!s.0.join("escaped.attempt-1.log").exists(), "a log escaped to {}", s.0.display());
    let runs = data.join("runs");
    let mut under_runs = 0;
    for f in walk(&s.0) {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        if f.starts_with(&runs) {
            under_runs += 1;
            continue;
        }
        let expected = f == file || (f.parent() == Some(data.as_path()) && name.starts_with("orrery.db"));
        assert!(expected, "written outside the store's runs/: {}\n{stdout}{stderr}", f.display());
    }
    assert_eq!(o.status.code(), Some(0), "the run completes\n{stdout}{stderr}");
    // Five shell tasks, each a log of its own (distinct ids, distinct names), all under runs/.
    let logs: Vec<PathBuf> = walk(&runs).into_iter().filter(|f| f.to_string_lossy().ends_with(".log")).collect();
    assert_eq!(logs.len(), 5, "{logs:?}");
    for f in &logs {
        assert!(f.file_name().unwrap().len() <= 255);
        assert_eq!(f.parent().unwrap().parent(), Some(runs.as_path()), "flat in the session's folder: {}", f.display());
    }
    println!("{under_runs} files under runs/: {logs:?}");

    // The logs read back through the store's recorded paths.
    let o = orrery(&["sessions", "--db", db.to_str().unwrap(), "--format", "json"], &s.0);
    let sessions: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&o.stdout)));
    let session = sessions[0]["id"].as_str().or(sessions[0]["session_id"].as_str()).unwrap().to_string();
    for (task, said) in
        [("/../../../escaped", "escaped"), ("..", "dots"), (long.as_str(), "long"), ("a%2Fb/c", "percent")]
    {
        let o = orrery(&["logs", &session, task, "--db", db.to_str().unwrap()], &s.0);
        assert_eq!(o.status.code(), Some(0), "logs of {task}: {}", text(&o.stderr));
        assert!(text(&o.stdout).contains(said), "log of {task}: {}", text(&o.stdout));
    }
}

#[test]
fn special_files_never_hang_validate_run_fmt_or_graph() {
    let s = Scratch::new("special");
    let ok = s.write("f/ok.json", &blueprint("ok", vec![shell("hello", "echo hello", "start")]));
    let fifo = s.fifo("f/x.json");
    let dir = s.0.join("f");
    let db = s.0.join("store/orrery.db");
    let dbs = db.to_str().unwrap();

    // Listed with a good file: refused by name, at once.
    let o = orrery(&["validate", "ok.json", "x.json"], &dir);
    let stderr = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("x.json") && stderr.contains("not a regular file (a named pipe)"), "{stderr}");
    // Beside the blueprint: a candidate for composites that is not read.
    let o = orrery(&["validate", "ok.json"], &dir);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let o = orrery(&["run", "--db", dbs, "ok.json"], &dir);
    assert_eq!(o.status.code(), Some(0), "the run ignores the FIFO beside it: {}", text(&o.stderr));
    let o = orrery(&["run", "--db", dbs, "x.json"], &dir);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("not a regular file (a named pipe)"), "{}", text(&o.stderr));
    for args in [
        vec!["fmt", "x.json"],
        vec!["graph", "--format", "dot", "x.json"],
        vec!["export", "--to", "antikythera", "x.json"],
    ] {
        let o = orrery(&args, &dir);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o.stderr));
        assert!(text(&o.stderr).contains("not a regular file (a named pipe)"), "{args:?}: {}", text(&o.stderr));
    }

    // /dev/zero is never read to the end of memory; a folder and a huge file neither.
    for (path, why) in [
        ("/dev/zero", "not a regular file (a character device)"),
        (dir.to_str().unwrap(), "not a regular file (a directory)"),
    ] {
        for args in [vec!["validate", path], vec!["run", "--db", dbs, path]] {
            let o = orrery(&args, &dir);
            assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o.stderr));
            assert!(text(&o.stderr).contains(why), "{args:?}: {}", text(&o.stderr));
        }
    }
    let big = dir.join("big.json");
    let f = std::fs::File::create(&big).unwrap();
    f.set_len((128 << 20) + 1).unwrap();
    drop(f);
    let o = orrery(&["validate", "big.json"], &dir);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("larger than 128 MiB"), "{}", text(&o.stderr));
    let o = orrery(&["validate", "ok.json"], &dir);
    assert_eq!(o.status.code(), Some(0), "a huge file beside it is left out: {}", text(&o.stderr));
    assert!(ok.exists() && fifo.exists());
}

#[test]
fn fmt_never_follows_a_planted_symlink_and_keeps_the_mode() {
    let s = Scratch::new("fmt");
    let victim = s.write("victim.txt", "precious");
    let flow = s.write("flow.json", &blueprint("flow", vec![shell("a", "true", "start")]).replace("\n", "\n\n"));
    std::fs::set_permissions(&flow, std::fs::Permissions::from_mode(0o750)).unwrap();
    // The name the old `fmt` wrote through.
    std::os::unix::fs::symlink(&victim, s.0.join(".flow.json.orrery-tmp")).unwrap();
    let o = orrery(&["fmt", "flow.json"], &s.0);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious", "the planted symlink was followed");
    let meta = std::fs::symlink_metadata(&flow).unwrap();
    assert!(meta.file_type().is_file(), "flow.json is still a file");
    assert_eq!(meta.permissions().mode() & 0o7777, 0o750, "its mode kept");
    let o = orrery(&["fmt", "--check", "flow.json"], &s.0);
    assert_eq!(o.status.code(), Some(0), "formatted: {}", text(&o.stdout));
    let left: Vec<_> = walk(&s.0).into_iter().filter(|f| f.to_string_lossy().contains("orrery-tmp")).collect();
    assert_eq!(left, [s.0.join(".flow.json.orrery-tmp")], "no temporary file left but the planted one");
}

/// `orrery serve` on a free port; killed when dropped.
struct Serving {
    child: Child,
    addr: String,
}

impl Serving {
    fn start(db: &Path, dir: &Path) -> Serving {
        let mut child = Command::new(env!("CARGO_BIN_EXE_orrery"))
            .args(["serve", "--port", "0", "--db", db.to_str().unwrap()])
            .current_dir(dir)
            .env("ORRERY_TOKEN", TOKEN)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("orrery serve starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let addr = line
            .split_whitespace()
            .find_map(|word| word.strip_prefix("http://"))
            .unwrap_or_else(|| panic!("no address in {line:?}"))
            .to_string();
        Serving { child, addr }
    }

    /// A request's status and body; a request unanswered within [`HANG`] fails the test.
    fn call(&self, method: &str, path: &str, body: &str) -> (u16, Value) {
        let started = Instant::now();
        let mut stream = TcpStream::connect(&self.addr).expect("the server accepts");
        stream.set_read_timeout(Some(HANG)).unwrap();
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {TOKEN}\r\nConnection: close\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            self.addr,
            body.len()
        );
        stream.write_all(head.as_bytes()).unwrap();
        let mut reply = Vec::new();
        if let Err(e) = stream.read_to_end(&mut reply) {
            panic!("{method} {path} {body}: no answer within {HANG:?} ({e}): the request hangs");
        }
        println!("{method} {path}: answered in {:?}", started.elapsed());
        let reply = text(&reply);
        let (head, body) = reply.split_once("\r\n\r\n").unwrap_or_else(|| panic!("{path}: {reply}"));
        let status = head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
        let body = if head.to_ascii_lowercase().contains("transfer-encoding: chunked") {
            unchunk(body)
        } else {
            body.to_string()
        };
        (status, serde_json::from_str(&body).unwrap_or_else(|e| panic!("{path}: {e}: {body}")))
    }

    /// A job's envelope (200 with `success` true or false).
    fn job(&self, name: &str, arguments: Value) -> Value {
        let (status, envelope) =
            self.call("POST", &format!("/jobs/{name}"), &json!({ "arguments": arguments }).to_string());
        assert_eq!(status, 200, "{name}: {envelope}");
        envelope
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn unchunk(body: &str) -> String {
    let mut out = String::new();
    let mut rest = body;
    while let Some((size, tail)) = rest.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || tail.len() < n {
            break;
        }
        out.push_str(&tail[..n]);
        rest = tail[n..].trim_start_matches("\r\n");
    }
    out
}

fn failure(envelope: &Value) -> String {
    assert_eq!(envelope["success"], false, "{envelope}");
    envelope["metadata"].to_string() + &envelope["answer"].to_string()
}

#[test]
fn special_files_never_hang_the_api_and_writes_never_follow_planted_symlinks() {
    let s = Scratch::new("serve");
    let ok = s.write("f/ok.json", &blueprint("ok", vec![shell("hello", "echo hello", "start")]));
    let fifo = s.fifo("f/x.json");
    s.fifo("f/ok.json.layout");
    let folder = s.0.join("f");
    let server = Serving::start(&s.0.join("store/orrery.db"), &s.0);

    let listed = server.job("list_blueprint_files", json!({ "folder": folder }));
    assert_eq!(listed["success"], true, "{listed}");
    let files: Vec<&str> = listed["answer"].as_array().unwrap().iter().map(|f| f["file"].as_str().unwrap()).collect();
    assert_eq!(files, [ok.to_str().unwrap()], "the FIFO is left out");

    let checked = server.job("validate_blueprint", json!({ "files": [fifo] }));
    assert!(checked.to_string().contains("not a regular file (a named pipe)"), "{checked}");
    let text = std::fs::read_to_string(&ok).unwrap();
    let checked = server.job("validate_blueprint", json!({ "text": text, "file": ok }));
    assert_eq!(checked["success"], true, "{checked}");
    assert_eq!(checked["answer"][0]["valid"], true, "{checked}");

    let started = server.job("start_session", json!({ "file": ok }));
    assert_eq!(started["success"], true, "the FIFO beside it is not read: {started}");
    for bad in [fifo.clone(), PathBuf::from("/dev/zero")] {
        let refused = server.job("start_session", json!({ "file": bad }));
        assert!(failure(&refused).contains("not a regular file"), "{refused}");
    }

    let layout = server.job("read_layout", json!({ "file": ok }));
    let why = failure(&layout);
    assert!(why.contains("ok.json.layout") && why.contains("not a regular file (a named pipe)"), "{layout}");
    let written = server.job("write_blueprint_file", json!({ "file": fifo, "text": text }));
    assert!(failure(&written).contains("a named pipe"), "{written}");

    // Atomic writes past symlinks planted at the names the old code used, modes kept.
    let victim = s.write("victim.txt", "precious");
    let flow = s.write("w/flow.json", "{}");
    std::fs::set_permissions(&flow, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::os::unix::fs::symlink(&victim, s.0.join("w/.flow.json.orrery-tmp")).unwrap();
    std::os::unix::fs::symlink(&victim, s.0.join("w/.flow.json.layout.orrery-tmp")).unwrap();
    let written = server.job("write_blueprint_file", json!({ "file": flow, "text": text }));
    assert_eq!(written["success"], true, "{written}");
    let layout = s.write("w/flow.json.layout", "{}");
    std::fs::set_permissions(&layout, std::fs::Permissions::from_mode(0o755)).unwrap();
    let saved = server.job("save_layout", json!({ "file": flow, "positions": {"hello": {"x": 1.0, "y": 2.0}} }));
    assert_eq!(saved["success"], true, "{saved}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious", "a planted symlink was followed");
    assert_eq!(std::fs::read_to_string(&flow).unwrap(), written["answer"]["text"].as_str().unwrap(), "written");
    assert_eq!(std::fs::metadata(&flow).unwrap().permissions().mode() & 0o7777, 0o600);
    assert_eq!(std::fs::metadata(&layout).unwrap().permissions().mode() & 0o7777, 0o755);
    let read = server.job("read_layout", json!({ "file": flow }));
    assert_eq!(read["answer"]["positions"]["hello"], json!({"x": 1.0, "y": 2.0}), "{read}");

    // And the API still answers.
    let (status, jobs) = server.call("GET", "/jobs", "");
    assert_eq!(status, 200, "{jobs}");
}

#[test]
fn a_task_that_makes_its_outputs_or_progress_file_special_never_hangs_the_runner() {
    let s = Scratch::new("outputs");
    let db = s.0.join("store/orrery.db");
    for (name, command, code, said) in [
        ("fifo", "mkfifo \"$ORRERY_OUTPUTS\"", 1, Some("not a regular file (a named pipe)")),
        ("zero", "ln -s /dev/zero \"$ORRERY_OUTPUTS\"", 1, Some("not a regular file (a character device)")),
        ("progress", "mkfifo \"$ORRERY_PROGRESS\"; sleep 0.5", 0, None),
    ] {
        let file = s.write(&format!("{name}.json"), &blueprint(name, vec![shell("t", command, "start")]));
        let o = orrery(&["run", "--db", db.to_str().unwrap(), file.to_str().unwrap()], &s.0);
        let out = text_of(&o);
        assert_eq!(o.status.code(), Some(code), "{name}: {out}");
        if let Some(said) = said {
            assert!(out.contains("TOOL_FAILURE") && out.contains(said), "{name}: {out}");
        }
    }
}

fn text_of(o: &Output) -> String {
    text(&o.stdout) + &text(&o.stderr)
}
