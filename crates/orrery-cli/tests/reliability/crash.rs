//! Item 3: a run SIGKILLed at random points, again and again, then resumed each time: no task
//! whose process had finished runs twice. Each task's process runs under a supervisor that
//! outlives `orrery` and records its exit beside the attempt's files; recovery settles a task
//! from that record, or adopts it while its supervisor still runs it.
//!
//! Figures (printed by the test; `ORRERY_RELIABILITY_BIN` points it at another build): on the
//! code before the supervisor (cf7290d, built in a worktree), 5 kills of the 200-task run made
//! 32 and 37 tasks run twice in two runs (40 attempts settled `unknown`, run again), and the
//! `sleep 3` task wrote 2 lines; with it, 0 tasks ran twice (0 `unknown`) and 1 line.

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// The binary under test; `ORRERY_RELIABILITY_BIN` runs the same test on another build (the
/// code as it was, for the before figure).
fn bin() -> PathBuf {
    std::env::var_os("ORRERY_RELIABILITY_BIN").map(PathBuf::from).unwrap_or_else(|| env!("CARGO_BIN_EXE_orrery").into())
}

fn scratch(name: &str) -> PathBuf {
    let dir =
        PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("reliability-crash-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A small xorshift: the test needs no crate for its random points, and prints its seed.
struct Random(u64);

impl Random {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// Runs `orrery ARGS` in `dir`, SIGKILLs it once `kill_after` lines holding `SUCCEEDED` were
/// printed; true if it was killed, false if it ended first.
fn run_and_kill(dir: &Path, args: &[&str], kill_after: usize) -> bool {
    let mut child = Command::new(bin())
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("orrery runs");
    let mut seen = 0;
    let mut killed = false;
    for line in std::io::BufReader::new(child.stdout.take().unwrap()).lines() {
        let Ok(line) = line else { break };
        if line.contains("SUCCEEDED") {
            seen += 1;
            if seen == kill_after {
                child.kill().unwrap(); // SIGKILL
                killed = true;
                break;
            }
        }
    }
    child.wait().unwrap();
    killed
}

fn orrery(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(bin()).args(args).current_dir(dir).output().expect("orrery runs")
}

/// How many lines each task's file holds (one per run of its process to its end).
fn runs_per_task(lines: &Path, tasks: &[String]) -> Vec<(String, usize)> {
    tasks
        .iter()
        .map(|t| (t.clone(), std::fs::read_to_string(lines.join(t)).map(|s| s.lines().count()).unwrap_or(0)))
        .collect()
}

#[test]
fn sigkill_five_times_during_a_200_task_run_never_runs_a_finished_task_twice() {
    let began = Instant::now();
    let dir = scratch("200");
    let lines = dir.join("lines");
    std::fs::create_dir_all(&lines).unwrap();
    let seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64 | 1;
    eprintln!("seed {seed}");
    let mut random = Random(seed);

    // 4 layers of 50: each task waits for two of the layer before.
    let mut tasks_json = vec![json!({"id": "start", "type": "system.start"})];
    let mut names = Vec::new();
    let width = 50;
    for layer in 0..4 {
        for i in 0..width {
            let id = format!("l{layer}_{i:02}");
            let depends: Vec<Value> = if layer == 0 {
                vec![json!({"id": "start"})]
            } else {
                vec![
                    json!({"id": format!("l{}_{:02}", layer - 1, i)}),
                    json!({"id": format!("l{}_{:02}", layer - 1, (i + 1) % width)}),
                ]
            };
            let ms = random.below(301);
            // The line is the end of the process's work: one line, one finished run.
            let command = format!("sleep {}.{:03}; echo ran >> '{}'", ms / 1000, ms % 1000, lines.join(&id).display());
            tasks_json.push(json!({"id": id, "type": "shell.run", "depends_on": depends,
                "params": [{"name": "command", "value": command}]}));
            names.push(id);
        }
    }
    let last: Vec<Value> = (0..width).map(|i| json!({"id": format!("l3_{i:02}")})).collect();
    tasks_json.push(json!({"id": "end", "type": "system.end", "depends_on": last}));
    let blueprint = json!({"id": "many", "name": "many", "version": "1.0", "tasks": tasks_json});
    std::fs::write(dir.join("many.json"), blueprint.to_string()).unwrap();
    let db = dir.join("store.db");
    let db = db.to_str().unwrap();

    let mut kills = 0;
    let first = 5 + random.below(30) as usize;
    if run_and_kill(&dir, &["run", "--db", db, "--max-parallel", "8", "many.json"], first) {
        kills += 1;
    }
    let store = orrery_store::Store::open(Path::new(db)).unwrap();
    let session = store.sessions(&Default::default()).unwrap().remove(0).id;
    while kills < 5 {
        // A pause of up to 400 ms first: tasks in flight finish while no runner lives.
        std::thread::sleep(Duration::from_millis(random.below(400)));
        let after = 5 + random.below(30) as usize;
        if !run_and_kill(&dir, &["resume", "--db", db, "--max-parallel", "8", &session], after) {
            break;
        }
        kills += 1;
    }
    std::thread::sleep(Duration::from_millis(random.below(400)));
    let end = orrery(&dir, &["resume", "--db", db, "--max-parallel", "8", &session]);
    assert_eq!(
        end.status.code(),
        Some(0),
        "the session completes:\n{}\n{}",
        String::from_utf8_lossy(&end.stdout),
        String::from_utf8_lossy(&end.stderr)
    );

    let runs = runs_per_task(&lines, &names);
    let twice: Vec<&(String, usize)> = runs.iter().filter(|(_, n)| *n > 1).collect();
    let never: Vec<&(String, usize)> = runs.iter().filter(|(_, n)| *n == 0).collect();
    let attempts = store.attempts(&session).unwrap();
    let count = |state: orrery_store::AttemptState| attempts.iter().filter(|a| a.state == state).count();
    eprintln!(
        "{kills} kills, {} tasks: {} ran twice or more, {} never ran; attempts: {} succeeded, {} unknown, {} cancelled; {:?}",
        names.len(),
        twice.len(),
        never.len(),
        count(orrery_store::AttemptState::Succeeded),
        count(orrery_store::AttemptState::Unknown),
        count(orrery_store::AttemptState::Cancelled),
        began.elapsed()
    );
    assert!(kills >= 3, "the run was killed at least 3 times ({kills})");
    assert!(never.is_empty(), "every task ran: {never:?}");
    assert!(twice.is_empty(), "no finished task ran again: {twice:?}");
    assert!(began.elapsed() < Duration::from_secs(300), "hang guard");
}

/// The case: `sleep 3; echo >> f`, the runner killed at 1 s, recovered after 4 s (the
/// process finished meanwhile): one line, and the attempt succeeded from its record.
#[test]
fn a_task_that_finished_while_the_runner_was_dead_is_settled_from_its_record() {
    let dir = scratch("sleep3");
    let f = dir.join("f");
    let blueprint = json!({"id": "one", "name": "one", "version": "1.0", "tasks": [
        {"id": "start", "type": "system.start"},
        {"id": "slow", "type": "shell.run", "depends_on": [{"id": "start"}],
         "params": [{"name": "command", "value": format!("sleep 3; echo >> '{}'", f.display())}]},
        {"id": "end", "type": "system.end", "depends_on": [{"id": "slow"}]}
    ]});
    std::fs::write(dir.join("one.json"), blueprint.to_string()).unwrap();
    let db = dir.join("store.db");
    let db_s = db.to_str().unwrap();
    let mut child = Command::new(bin())
        .args(["run", "--db", db_s, "one.json"])
        .current_dir(&dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // 1 s after the task started (on a busy machine the runner itself may take a while).
    let lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let started = lines.map_while(Result::ok).any(|l| l.contains("RUNNING    one.slow"));
    assert!(started, "the task started");
    std::thread::sleep(Duration::from_secs(1));
    child.kill().unwrap();
    child.wait().unwrap();
    std::thread::sleep(Duration::from_secs(4));
    let o = orrery(&dir, &["recover", "--db", db_s]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&f).unwrap_or_default();
    eprintln!("sleep 3 killed at 1 s, recovered after 4 s: {} line(s)", text.lines().count());
    assert_eq!(text.lines().count(), 1, "the task ran once: {text:?}");
    let store = orrery_store::Store::open(&db).unwrap();
    let session = store.sessions(&Default::default()).unwrap().remove(0).id;
    let states: Vec<_> =
        store.attempts(&session).unwrap().into_iter().filter(|a| a.node == "one.slow").map(|a| a.state).collect();
    assert_eq!(states, vec![orrery_store::AttemptState::Succeeded], "one attempt, settled from its record");
}

/// Item 10's log cap through the command line: `orrery run --log-cap` caps each attempt's log
/// (a task's `log_cap_bytes` wins), one note says how much was dropped, and the attempt has a
/// `log_capped` event.
#[test]
fn run_log_cap_caps_each_attempt_log_with_one_note_and_an_event() {
    let dir = scratch("logcap");
    let blueprint = json!({"id": "loud", "name": "loud", "version": "1.0", "tasks": [
        {"id": "start", "type": "system.start"},
        {"id": "flag", "type": "shell.run", "depends_on": [{"id": "start"}],
         "params": [{"name": "command", "value": "head -c 200000 /dev/zero | tr '\\0' a"}]},
        {"id": "param", "type": "shell.run", "depends_on": [{"id": "start"}],
         "params": [{"name": "command", "value": "head -c 200000 /dev/zero | tr '\\0' b"},
                    {"name": "log_cap_bytes", "value": 10}]},
        {"id": "quiet", "type": "shell.run", "depends_on": [{"id": "start"}],
         "params": [{"name": "command", "value": "echo hi"}]},
        {"id": "end", "type": "system.end", "depends_on": [{"id": "flag"}, {"id": "param"}, {"id": "quiet"}]}
    ]});
    std::fs::write(dir.join("loud.json"), blueprint.to_string()).unwrap();
    let db = dir.join("store.db");
    let o = orrery(&dir, &["run", "--db", db.to_str().unwrap(), "--log-cap", "1000", "loud.json"]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));

    let store = orrery_store::Store::open(&db).unwrap();
    let session = store.sessions(&Default::default()).unwrap().remove(0).id;
    let attempts = store.attempts(&session).unwrap();
    let log_of = |node: &str| {
        let attempt = attempts.iter().find(|a| a.node == node).unwrap();
        std::fs::read_to_string(attempt.log_path.as_ref().unwrap()).unwrap()
    };
    let note = |cap: u64, dropped: u64| {
        format!("\norrery: this attempt's log reached its cap of {cap} bytes; the {dropped} bytes of output after it were dropped\n")
    };
    assert_eq!(log_of("loud.flag"), format!("{}{}", "a".repeat(1000), note(1000, 199_000)));
    assert_eq!(log_of("loud.param"), format!("{}{}", "b".repeat(10), note(10, 199_990)));
    assert_eq!(log_of("loud.quiet"), "hi\n");
    let capped: Vec<Value> = store
        .events_after(&session, 0, 200)
        .unwrap()
        .into_iter()
        .filter(|e| e.kind() == "log_capped")
        .map(|e| serde_json::to_value(&e).unwrap()["payload"]["value"].clone())
        .collect();
    let mut nodes: Vec<&str> = capped.iter().map(|v| v["node"].as_str().unwrap()).collect();
    nodes.sort();
    assert_eq!(nodes, vec!["loud.flag", "loud.param"], "{capped:?}");
    assert!(capped.iter().any(|v| v["cap_bytes"] == 10 && v["dropped_bytes"] == 199_990), "{capped:?}");

    let bad = orrery(&dir, &["run", "--db", db.to_str().unwrap(), "--log-cap", "0", "loud.json"]);
    assert_eq!(bad.status.code(), Some(2), "a cap of 0 is refused");
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--log-cap"), "{}", String::from_utf8_lossy(&bad.stderr));
}
