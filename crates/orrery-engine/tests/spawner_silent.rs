//! A spawner that takes a request and never answers (stopped here with SIGSTOP), in a test
//! binary of its own: the engine does not wait for its answers, so it learns of it only when
//! the supervisor's first word does not come. After the spawner's patience (10 s) the task
//! fails to start with a clear error, the spawner is killed, and the next task is forked by the
//! engine and runs.

mod common;

use std::time::Duration;

use common::{forked_by, process_ended, sleeper, sleeper_from_the_spawner, stopped};
use orrery_engine::process::{spawn, ProcessError, ProcessSpec, Program};

#[tokio::test]
async fn a_spawner_that_never_answers_is_given_up_on_and_the_engine_forks_the_next_task() {
    let dir = tempfile::tempdir().unwrap();
    let engine = std::process::id();
    let (first, spawner) = sleeper_from_the_spawner(dir.path(), "first").await;

    // SAFETY: kill has no memory-safety preconditions; the pid is our spawner's.
    unsafe { libc::kill(spawner as i32, libc::SIGSTOP) };
    let spec = ProcessSpec::new(Program::Argv(vec!["sleep".into(), "30".into()]), dir.path().join("lost.log"));
    let lost = tokio::time::timeout(Duration::from_secs(30), spawn(spec)).await.expect("the engine gave up waiting");
    assert!(matches!(lost, Err(ProcessError::Supervision { .. })), "{:?}", lost.map(|t| t.pid()));
    process_ended(spawner).await;

    let after = sleeper(dir.path(), "after", vec![]).await;
    assert_eq!(forked_by(&after), engine);
    stopped(after).await;
    stopped(first).await;
}
