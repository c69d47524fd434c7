//! The per-attempt log cap (issue 16, item 10) with real processes: past the cap, output is
//! read and dropped, one note at the end of the log says how much, and the attempt says so;
//! and the exit record the supervisor writes beside the attempt's files.

use std::time::Duration;

use orrery_engine::agents::{shell, AgentOutcome};
use orrery_engine::process::{spawn, supervisor, Exit, ProcessSpec};
use serde_json::{json, Map, Value};

const HANG: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn output_past_the_cap_is_dropped_with_one_note_saying_how_much() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("a.log");
    // 1 MB of output, in many writes, from the leader and a child of it.
    let mut spec =
        ProcessSpec::shell("head -c 600000 /dev/zero | tr '\\0' x; head -c 400000 /dev/zero | tr '\\0' y", &log);
    spec.log_cap = 1000;
    spec.exit_record = Some(dir.path().join("a"));
    let started = std::time::Instant::now();
    let supervised = spawn(spec).await.unwrap();
    let finished = tokio::time::timeout(HANG, supervised.wait()).await.expect("in time");
    eprintln!("1 MB through a 1000-byte cap in {:?}", started.elapsed());
    assert_eq!(finished.exit, Exit::Exited { code: 0 });
    assert_eq!((finished.log.written, finished.log.dropped, finished.log.cap), (1000, 999_000, 1000));
    let text = std::fs::read_to_string(&log).unwrap();
    assert_eq!(&text[..1000], "x".repeat(1000));
    let note = &text[1000..];
    assert_eq!(
        note,
        "\norrery: this attempt's log reached its cap of 1000 bytes; the 999000 bytes of output after it were dropped\n"
    );
    let record = supervisor::read_record(&dir.path().join("a"), None).unwrap().expect("the exit was recorded");
    assert_eq!((record.code, record.signal, record.log_dropped), (Some(0), None, 999_000));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_log_under_the_cap_is_whole_and_has_no_note() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("a.log");
    let mut spec = ProcessSpec::shell("echo hello; echo world >&2; exit 3", &log);
    spec.log_cap = 12;
    let finished = tokio::time::timeout(HANG, spawn(spec).await.unwrap().wait()).await.unwrap();
    assert_eq!(finished.exit, Exit::Exited { code: 3 });
    assert_eq!(finished.log.dropped, 0);
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "hello\nworld\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn processes_ending_together_each_find_their_own_record_in_the_folders_records_file() {
    let dir = tempfile::tempdir().unwrap();
    // Names a record must escape, and a run id that only one of two same-named records has.
    let stems: Vec<_> = (0..40).map(|n| dir.path().join(format!("t{n} \"q\\.attempt-1"))).collect();
    let mut running = Vec::new();
    for (n, stem) in stems.iter().enumerate() {
        let mut spec = ProcessSpec::shell(format!("exit {n}"), shell::attempt_file(stem, "log"));
        spec.exit_record = Some(stem.clone());
        spec.record_id = Some(format!("run-{n}"));
        running.push(spawn(spec).await.unwrap());
    }
    for supervised in running {
        tokio::time::timeout(HANG, supervised.wait()).await.expect("in time");
    }
    for (n, stem) in stems.iter().enumerate() {
        let record = supervisor::read_record(stem, Some(&format!("run-{n}"))).unwrap().expect("recorded");
        assert_eq!((record.code, record.run_id.as_deref()), (Some(n as i32), Some(format!("run-{n}").as_str())));
    }
    let records = std::fs::read_to_string(dir.path().join(supervisor::RECORDS_FILE)).unwrap();
    assert_eq!(records.lines().filter(|line| !line.is_empty()).count(), 80, "a start and an exit each, none spoilt");
    let files: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(files, [supervisor::RECORDS_FILE], "one records file, no log of a process that wrote nothing");
}

fn params(value: Value) -> Map<String, Value> {
    value.as_object().unwrap().clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_log_cap_bytes_param_caps_a_shell_task_and_its_failure_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let stem = dir.path().join("t.attempt-1");
    let log = shell::attempt_file(&stem, "log");
    let attempt = shell::ShellAttempt::new(
        params(json!({"command": "head -c 5000 /dev/zero | tr '\\0' z; exit 2", "log_cap_bytes": 100})),
        Map::new(),
        &stem,
        &log,
    );
    let end = tokio::time::timeout(HANG, shell::run_attempt(attempt, |_| {}, |_| {})).await.unwrap();
    let summary = end.log.expect("a process ran");
    assert_eq!((summary.written, summary.dropped, summary.cap), (100, 4900, 100));
    let AgentOutcome::Failed { error, exit_code } = end.outcome else { panic!("{:?}", end.outcome) };
    assert_eq!(exit_code, Some(2));
    let details = error.details.expect("details");
    assert_eq!(details["log_capped"], json!({"cap_bytes": 100, "dropped_bytes": 4900}), "{details}");
    assert!(error.message.contains("4900 bytes of output after it were dropped"), "{}", error.message);
    let record = supervisor::read_record(&stem, None).unwrap().unwrap();
    assert_eq!(record.code, Some(2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_log_cap_bytes_is_a_binding_error_naming_the_param() {
    let dir = tempfile::tempdir().unwrap();
    for bad in [json!(0), json!(-5), json!(1.5), json!("big")] {
        let attempt = shell::ShellAttempt::new(
            params(json!({"command": "true", "log_cap_bytes": bad})),
            Map::new(),
            dir.path().join("t"),
            dir.path().join("t.log"),
        );
        let outcome = shell::run(attempt, |_| {}, |_| {}).await;
        let AgentOutcome::Failed { error, .. } = outcome else { panic!("{outcome:?}") };
        assert_eq!(error.code.as_str(), "TOOL_BINDING_ERROR");
        assert!(error.message.contains("log_cap_bytes"), "{}", error.message);
    }
}
