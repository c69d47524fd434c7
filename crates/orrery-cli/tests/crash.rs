//! A real `orrery run` killed with SIGKILL at several points of a run (between two tasks,
//! where a scope loops, during a task), resumed each time: no task that finished runs again,
//! and the session completes with the right data.

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use orrery_store::{AttemptState, Store};
use serde_json::{json, Value};

/// Runs `orrery ARGS` in `dir` and SIGKILLs it once the `nth` line of its output containing
/// `pattern` was printed; the lines it printed.
fn run_until_killed(dir: &Path, args: &[&str], pattern: &str, nth: usize) -> Vec<String> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_orrery"))
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("orrery runs");
    let mut seen = Vec::new();
    let mut matches = 0;
    for line in std::io::BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        let hit = line.contains(pattern);
        seen.push(line);
        if hit {
            matches += 1;
            if matches == nth {
                break;
            }
        }
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    assert_eq!(matches, nth, "the run ended before line {nth} with {pattern:?}:\n{}", seen.join("\n"));
    seen
}

fn orrery(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_orrery")).args(args).current_dir(dir).output().expect("orrery runs")
}

#[test]
fn a_run_killed_between_tasks_at_a_scope_loop_and_during_a_task_resumes_to_the_right_end() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("crash-loop-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("ran.txt");
    let log = log.to_str().unwrap();
    let blueprint = json!({"id": "loop", "name": "loop", "version": "1.0", "tasks": [
        {"id": "start", "type": "system.start"},
        {"id": "init", "type": "shell.run", "depends_on": [{"id": "start"}],
         "outputs": [{"name": "n", "value": 0}],
         "params": [{"name": "command", "value": format!("echo init >> {log}; printf '{{\"n\": 4}}' > \"$ORRERY_OUTPUTS\"")}]},
        {"id": "body", "type": "shell.run", "depends_on": [{"id": "init"}],
         "scope_start": {"name": "count down", "while_policy": {"condition": "n > 0", "max_iterations": 10}},
         "inputs": [{"name": "n"}],
         "params": [{"name": "command", "value": format!("echo body $ORRERY_INPUT_N >> {log}; sleep 0.1")}]},
        {"id": "dec", "type": "shell.run", "depends_on": [{"id": "body"}], "scope_end": "body",
         "inputs": [{"name": "n"}], "outputs": [{"name": "n"}],
         "params": [{"name": "command", "value": format!(
             "echo dec $ORRERY_INPUT_N >> {log}; sleep 0.1; printf '{{\"n\": %d}}' $((ORRERY_INPUT_N - 1)) > \"$ORRERY_OUTPUTS\"")}]},
        {"id": "after", "type": "shell.run", "depends_on": [{"id": "dec"}],
         "params": [{"name": "command", "value": format!("echo after >> {log}")}]},
        {"id": "end", "type": "system.end", "depends_on": [{"id": "after"}]}
    ]});
    std::fs::write(dir.join("loop.json"), serde_json::to_string_pretty(&blueprint).unwrap()).unwrap();
    let db = dir.join("store.db");
    let db = db.to_str().unwrap();

    // 1. Between two tasks: init's success is committed, body is about to start.
    run_until_killed(&dir, &["run", "--db", db, "--max-parallel", "2", "loop.json"], "SUCCEEDED  loop.init", 1);
    let store = Store::open(Path::new(db)).unwrap();
    let session = store.sessions(&Default::default()).unwrap().remove(0).id;
    // 2. Where the scope loops: the second pass's end settled (the loop decision follows).
    run_until_killed(&dir, &["resume", "--db", db, &session], "SUCCEEDED  loop.dec", 2);
    // 3. During a task: the first body this resume starts. (The pass whose body was in flight
    // at the second kill is not run again: its attempt is adopted and settled from its record,
    // with no new RUNNING line. Before supervisors it ran again, so this waited for the second.)
    run_until_killed(&dir, &["resume", "--db", db, &session], "RUNNING    loop.body", 1);
    // 4. To the end.
    let o = orrery(&dir, &["resume", "--db", db, &session]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );

    let ran = std::fs::read_to_string(dir.join("ran.txt")).unwrap();
    let count = |line: &str| ran.lines().filter(|l| *l == line).count();
    assert_eq!(count("init"), 1, "init finished before the first kill and never ran again:\n{ran}");
    assert_eq!(count("after"), 1, "{ran}");
    assert_eq!(count("dec 0") + count("body 0"), 0, "the loop stopped at n == 0:\n{ran}");

    let session_row = store.session(&session).unwrap();
    assert_eq!(session_row.state, orrery_blueprint::SessionState::Completed);
    assert_eq!(store.data_value(&session, "loop", "n").unwrap(), Some(json!(0)));
    assert_eq!(store.scope_iterations(&session, "loop", "loop.body").unwrap(), 3, "4 passes: 3 loops");
    let attempts = store.attempts(&session).unwrap();
    for node in ["loop.body", "loop.dec"] {
        for n in 1..=4 {
            let of_pass: Vec<&orrery_store::Attempt> = attempts
                .iter()
                .filter(|a| a.node == node && a.inputs.as_ref().and_then(|i| i.get("n")) == Some(&json!(n)))
                .collect();
            let succeeded = of_pass.iter().filter(|a| a.state == AttemptState::Succeeded).count();
            assert_eq!(succeeded, 1, "{node} with n = {n} succeeded exactly once: {of_pass:#?}");
            // Every attempt but the succeeded one was interrupted; none came after it.
            let last = of_pass.iter().map(|a| a.attempt).max().unwrap();
            assert!(of_pass.iter().all(|a| a.state != AttemptState::Succeeded || a.attempt == last), "{of_pass:#?}");
            let task = node.trim_start_matches("loop.");
            let lines = count(&format!("{task} {n}"));
            assert!(
                lines >= 1 && lines <= of_pass.len(),
                "{task} {n}: {lines} runs, {} attempts:\n{ran}",
                of_pass.len()
            );
        }
    }
    let value: Value = serde_json::from_str(&String::from_utf8_lossy(
        &orrery(&dir, &["status", "--db", db, "--format", "json", &session]).stdout,
    ))
    .unwrap();
    assert_eq!(value["session"]["state"], "completed");
}

#[test]
fn sessions_shows_a_crashed_run_as_interrupted_and_recover_finishes_it() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("crash-recover-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let blueprint = json!({"id": "two", "name": "two", "version": "1.0", "tasks": [
        {"id": "start", "type": "system.start"},
        {"id": "a", "type": "shell.run", "depends_on": [{"id": "start"}],
         "params": [{"name": "command", "value": "sleep 0.3"}]},
        {"id": "end", "type": "system.end", "depends_on": [{"id": "a"}]}
    ]});
    std::fs::write(dir.join("two.json"), blueprint.to_string()).unwrap();
    let db = dir.join("store.db");
    let db = db.to_str().unwrap();
    run_until_killed(&dir, &["run", "--db", db, "two.json"], "RUNNING    two.a", 1);

    let listed = orrery(&dir, &["sessions", "--db", db]);
    let text = String::from_utf8_lossy(&listed.stdout);
    assert!(text.lines().nth(1).is_some_and(|l| l.contains(" interrupted ")), "{text}");
    assert!(String::from_utf8_lossy(&listed.stderr).contains("orrery recover"));

    // A new run in the same store points at it too.
    let other = orrery(&dir, &["run", "--db", db, "two.json"]);
    assert_eq!(other.status.code(), Some(0));
    assert!(
        String::from_utf8_lossy(&other.stderr).contains("1 interrupted session(s)"),
        "{}",
        String::from_utf8_lossy(&other.stderr)
    );

    let recovered = orrery(&dir, &["recover", "--db", db]);
    assert_eq!(recovered.status.code(), Some(0), "{}", String::from_utf8_lossy(&recovered.stderr));
    assert!(String::from_utf8_lossy(&recovered.stdout).contains("session    completed"));
    let listed = orrery(&dir, &["sessions", "--db", db]);
    let text = String::from_utf8_lossy(&listed.stdout);
    assert_eq!(text.lines().filter(|l| l.contains(" completed ")).count(), 2, "{text}");

    let again = orrery(&dir, &["recover", "--db", db]);
    assert_eq!(again.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&again.stderr).contains("no interrupted session"));
}

/// A disk that fills up mid-run (here: a file size limit on the `orrery` process, SIGXFSZ
/// ignored so writes fail with EFBIG as on a full disk): a clear error naming the store, recorded
/// on the session, a store that stays consistent, and a resume with room again that finishes
/// without running any finished task again.
#[test]
fn a_run_that_fills_the_disk_stops_with_a_clear_error_and_resumes_once_there_is_room() {
    use std::os::unix::process::CommandExt;
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("crash-full-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("ran.txt");
    let mut tasks = vec![json!({"id": "start", "type": "system.start"})];
    let mut previous = "start".to_string();
    for i in 0..60 {
        let id = format!("t{i:02}");
        tasks.push(json!({"id": id, "type": "shell.run", "depends_on": [{"id": previous}],
            "params": [{"name": "command", "value": format!("echo {id} >> {}", log.display())}]}));
        previous = id;
    }
    tasks.push(json!({"id": "end", "type": "system.end", "depends_on": [{"id": previous}]}));
    let blueprint = json!({"id": "full", "name": "full", "version": "1.0", "tasks": tasks});
    std::fs::write(dir.join("full.json"), blueprint.to_string()).unwrap();
    let db = dir.join("store.db");
    let db = db.to_str().unwrap();
    // The limit leaves the store room for a few tasks beyond what a new store takes.
    assert_eq!(orrery(&dir, &["sessions", "--db", db]).status.code(), Some(0));
    let limit = std::fs::metadata(db).unwrap().len() + 64 * 1024;

    let mut command = Command::new(env!("CARGO_BIN_EXE_orrery"));
    command.args(["run", "--db", db, "full.json"]).current_dir(&dir);
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        command.pre_exec(move || {
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            let limit = libc::rlimit { rlim_cur: limit, rlim_max: limit };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let o = command.output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    // The runner records why it could not go on (a few bytes still fit): the session failed.
    assert_eq!(o.status.code(), Some(1), "the session failed over the full disk: {err}");
    assert!(err.contains("no space left to write") && err.contains("store.db"), "names the store: {err}");
    assert!(err.contains("file size limit"), "says why: {err}");

    let store = Store::open(Path::new(db)).unwrap();
    store.check_integrity().expect("the store is consistent after the full disk");
    let session = store.sessions(&Default::default()).unwrap().remove(0);
    assert_eq!(session.state, orrery_store::SessionState::Failed, "never left running without a word");
    let why = session.last_error.map(|e| e.message).unwrap_or_default();
    assert!(why.contains("could not go on") && why.contains("no space left"), "the session says why: {why}");
    let session = session.id;
    let finished: Vec<String> = store
        .attempts(&session)
        .unwrap()
        .into_iter()
        .filter(|a| a.state == AttemptState::Succeeded && a.node != "full.start")
        .map(|a| a.node.trim_start_matches("full.").to_string())
        .collect();
    assert!(finished.len() < 60, "the disk filled before the end ({} tasks finished)", finished.len());

    let o = orrery(&dir, &["resume", "--db", db, &session]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let ran = std::fs::read_to_string(&log).unwrap();
    for i in 0..60 {
        let task = format!("t{i:02}");
        let n = ran.lines().filter(|l| *l == task).count();
        assert!(n >= 1, "{task} ran:\n{ran}");
        // What had finished never runs again; what was in flight when the disk filled may.
        if finished.contains(&task) {
            assert_eq!(n, 1, "{task} had finished, yet ran {n} times:\n{ran}");
        }
    }
    store.check_integrity().unwrap();
}
