//! Transparent huge pages turned off for the engine, in a test binary of its own (the switch is
//! the whole process's): the engine and its spawner go without them, and every task gets back
//! what the engine had, whether the spawner or the engine itself started it.

mod common;

use common::{forked_by, sleeper, sleeper_from_the_spawner, stopped};
use orrery_engine::process::without_huge_pages;

/// `THP_enabled` of a process's status: whether it may have transparent huge pages.
fn huge_pages(pid: u32) -> bool {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("THP_enabled:")).expect("the kernel says (Linux 5.0 or later)");
    line.split_whitespace().nth(1) == Some("1")
}

#[tokio::test]
async fn the_engine_goes_without_huge_pages_and_its_tasks_keep_what_it_had() {
    let dir = tempfile::tempdir().unwrap();
    let engine = std::process::id();
    let had = huge_pages(engine);
    without_huge_pages();
    assert!(!huge_pages(engine), "the engine goes without");
    // A second call changes nothing: the tasks still get back what the engine had at first.
    without_huge_pages();

    let (from_spawner, spawner) = sleeper_from_the_spawner(dir.path(), "spawned").await;
    assert!(!huge_pages(spawner), "the spawner goes without, as the engine that started it");
    assert_eq!(huge_pages(from_spawner.pid()), had, "the task has what the engine had");

    // 200 KB of environment does not fit a request to the spawner: the engine forks this one.
    let big = vec![("BIG1".to_string(), "x".repeat(100_000)), ("BIG2".to_string(), "y".repeat(100_000))];
    let from_engine = sleeper(dir.path(), "forked", big).await;
    assert_eq!(forked_by(&from_engine), engine, "started by the engine");
    assert_eq!(huge_pages(from_engine.pid()), had, "the task has what the engine had");
    assert!(!huge_pages(engine), "the engine still goes without");

    stopped(from_spawner).await;
    stopped(from_engine).await;
}
