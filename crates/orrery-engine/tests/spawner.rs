//! The spawner's failure paths, in a test binary of their own (a test here kills this binary's
//! spawner): a request too large for it and a spawner that has gone are forked by the engine
//! itself, and the tasks run all the same.

use std::time::Duration;

use orrery_engine::process::{spawn, Exit, ProcessSpec, Program, Supervised};

fn parent_of(pid: u32) -> u32 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    text[text.rfind(')').unwrap() + 1..].split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Who forked the supervisor of a running task: the spawner or this process.
fn forked_by(supervised: &Supervised) -> u32 {
    parent_of(parent_of(supervised.pid()))
}

async fn sleeper(dir: &tempfile::TempDir, name: &str, env: Vec<(String, String)>) -> Supervised {
    let mut spec = ProcessSpec::new(Program::Shell("sleep 30".into()), dir.path().join(format!("{name}.log")));
    spec.env = env;
    spawn(spec).await.expect("the task starts")
}

async fn stopped(supervised: Supervised) {
    supervised.canceller().cancel();
    let finished = tokio::time::timeout(Duration::from_secs(20), supervised.wait()).await.expect("it stops");
    assert_eq!(finished.exit, Exit::Cancelled);
}

#[tokio::test]
async fn a_request_too_large_for_the_spawner_and_a_spawner_gone_are_forked_by_the_engine() {
    let dir = tempfile::tempdir().unwrap();
    let engine = std::process::id();

    let first = sleeper(&dir, "first", vec![]).await;
    let spawner = forked_by(&first);
    assert_ne!(spawner, engine, "a supervisor from the spawner");

    // 200 KB of environment does not fit one request: the engine forks this one.
    let big = vec![("BIG1".to_string(), "x".repeat(100_000)), ("BIG2".to_string(), "y".repeat(100_000))];
    let large = sleeper(&dir, "large", big).await;
    assert_eq!(forked_by(&large), engine);
    // The task is forked before it execs its program: until then its environment is its
    // supervisor's, so wait for the exec.
    let until = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let environ = std::fs::read(format!("/proc/{}/environ", large.pid())).unwrap();
        if environ.split(|b| *b == 0).any(|v| v.len() == 100_005 && v.starts_with(b"BIG2=y")) {
            break;
        }
        assert!(std::time::Instant::now() < until, "the task has it");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    stopped(large).await;

    // The spawner killed: the next task is forked by the engine, and runs.
    // SAFETY: kill has no memory-safety preconditions; the pid is our spawner's.
    unsafe { libc::kill(spawner as i32, libc::SIGKILL) };
    let until = std::time::Instant::now() + Duration::from_secs(10);
    while std::fs::read_to_string(format!("/proc/{spawner}/stat")).is_ok_and(|s| !s.contains(") Z ")) {
        assert!(std::time::Instant::now() < until, "the spawner did not die");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let after = sleeper(&dir, "after", vec![]).await;
    assert_eq!(forked_by(&after), engine);
    stopped(after).await;
    // What the spawner had started goes on without it.
    stopped(first).await;
}
