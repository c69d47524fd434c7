//! Transparent huge pages turned off for the engine, in a test binary of its own (the switch is
//! the whole process's): the engine and its spawner go without them, and every task gets back
//! what the engine had, whether the spawner or the engine itself started it.

use std::time::{Duration, Instant};

use orrery_engine::process::{spawn, without_huge_pages, Exit, ProcessSpec, Program, Supervised};

/// `THP_enabled` of a process's status: whether it may have transparent huge pages.
fn huge_pages(pid: u32) -> bool {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("THP_enabled:")).expect("the kernel says (Linux 5.0 or later)");
    line.split_whitespace().nth(1) == Some("1")
}

fn parent_of(pid: u32) -> u32 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    text[text.rfind(')').unwrap() + 1..].split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// A task running `sleep`, once it has exec'd it (before, it shares its supervisor's memory).
async fn sleeper(dir: &tempfile::TempDir, name: &str, env: Vec<(String, String)>) -> Supervised {
    let mut spec =
        ProcessSpec::new(Program::Argv(vec!["sleep".into(), "30".into()]), dir.path().join(format!("{name}.log")));
    spec.env = env;
    let task = spawn(spec).await.expect("the task starts");
    let until = Instant::now() + Duration::from_secs(10);
    while std::fs::read_to_string(format!("/proc/{}/comm", task.pid())).unwrap().trim() != "sleep" {
        assert!(Instant::now() < until, "the task did not exec");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    task
}

async fn stopped(task: Supervised) {
    task.canceller().cancel();
    let finished = tokio::time::timeout(Duration::from_secs(20), task.wait()).await.expect("it stops");
    assert_eq!(finished.exit, Exit::Cancelled);
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

    let from_spawner = sleeper(&dir, "spawned", vec![]).await;
    let spawner = parent_of(parent_of(from_spawner.pid()));
    assert_ne!(spawner, engine, "started by the spawner");
    assert!(!huge_pages(spawner), "the spawner goes without, as the engine that started it");
    assert_eq!(huge_pages(from_spawner.pid()), had, "the task has what the engine had");

    // 200 KB of environment does not fit a request to the spawner: the engine forks this one.
    let big = vec![("BIG1".to_string(), "x".repeat(100_000)), ("BIG2".to_string(), "y".repeat(100_000))];
    let from_engine = sleeper(&dir, "forked", big).await;
    assert_eq!(parent_of(parent_of(from_engine.pid())), engine, "started by the engine");
    assert_eq!(huge_pages(from_engine.pid()), had, "the task has what the engine had");
    assert!(!huge_pages(engine), "the engine still goes without");

    stopped(from_spawner).await;
    stopped(from_engine).await;
}
