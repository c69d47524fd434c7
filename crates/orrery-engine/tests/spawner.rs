//! The spawner's failure paths, in a test binary of their own (a test here kills this binary's
//! spawner): a request too large for it and a spawner that has gone are forked by the engine
//! itself, and the tasks run all the same.

mod common;

use std::time::Duration;

use common::{forked_by, process_ended, sleeper, sleeper_from_the_spawner, stopped};

#[tokio::test]
async fn a_request_too_large_for_the_spawner_and_a_spawner_gone_are_forked_by_the_engine() {
    let dir = tempfile::tempdir().unwrap();
    let engine = std::process::id();

    let (first, spawner) = sleeper_from_the_spawner(dir.path(), "first").await;

    // 200 KB of environment does not fit one request: the engine forks this one.
    let big = vec![("BIG1".to_string(), "x".repeat(100_000)), ("BIG2".to_string(), "y".repeat(100_000))];
    let large = sleeper(dir.path(), "large", big).await;
    assert_eq!(forked_by(&large), engine);
    // The exec names the task before the kernel has laid out its new environment: wait for
    // that too.
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
    process_ended(spawner).await;
    let after = sleeper(dir.path(), "after", vec![]).await;
    assert_eq!(forked_by(&after), engine);
    stopped(after).await;
    // What the spawner had started goes on without it.
    stopped(first).await;
}
