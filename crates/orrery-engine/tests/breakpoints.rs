//! Breakpoints through the runner: a task held each time it would start (every iteration of a
//! loop), released through the session's control, and the events that say where it holds.

mod common;
use common::*;

use std::time::Duration;

use orrery_blueprint::SessionState;
use orrery_engine::runner::{run_session, BreakAt, Breakpoint, Release, SessionControl};
use orrery_store::EventData;
use serde_json::Map;

/// The next hold or release, as its event says it: (what, node, every task held now).
async fn next_hold(events: &mut tokio::sync::broadcast::Receiver<std::sync::Arc<orrery_store::Event>>) -> Hold {
    loop {
        let event = events.recv().await.expect("the session's events");
        if let Some(EventData::Breakpoints(holds)) = event.data() {
            let held = holds.held.iter().map(|h| (h.node.clone(), h.at.clone())).collect();
            return (holds.what.clone(), holds.node.clone(), held);
        }
    }
}

type Hold = (String, String, Vec<(String, String)>);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_breakpoint_in_a_loop_holds_at_every_iteration_and_a_step_holds_again_after_the_task() {
    let fx = Fixture::new();
    let ran = fx.path("ran.txt");
    let mut tasks = vec![start()];
    tasks.extend(counting_loop(&ran, "true"));
    tasks.push(end("loop_end"));
    let root = blueprint("root", tasks);
    let (valid, library) = valid(&root, &[]);

    let control = SessionControl::new();
    let (mut options, mut events) = fx.options(Some(&control));
    options.breakpoints = vec![Breakpoint { task: "body".into(), at: BreakAt::Before }];
    let db = fx.db();
    let run = tokio::spawn(async move { run_session(&db, valid, library, Map::new(), options).await });

    let before = |n: &str| vec![(n.to_string(), "before".to_string())];
    let lines = || std::fs::read_to_string(&ran).unwrap_or_default().lines().count();
    let wait = Duration::from_secs(20);

    // The run says its breakpoints as it starts.
    let set = tokio::time::timeout(wait, next_hold(&mut events)).await.expect("said in time");
    assert_eq!(set, ("set".into(), "root.body".into(), vec![]));
    // First iteration: held before body; a step runs it and holds after it.
    let held = tokio::time::timeout(wait, next_hold(&mut events)).await.expect("held in time");
    assert_eq!(held, ("held".into(), "root.body".into(), before("root.body")));
    assert_eq!(lines(), 0, "body waits");
    control.release(Some("body"), Release::Step);
    assert_eq!(
        tokio::time::timeout(wait, next_hold(&mut events)).await.unwrap(),
        ("step".into(), "root.body".into(), vec![])
    );
    let after = vec![("root.body".to_string(), "after".to_string())];
    assert_eq!(
        tokio::time::timeout(wait, next_hold(&mut events)).await.unwrap(),
        ("held".into(), "root.body".into(), after)
    );
    assert_eq!(lines(), 1);
    // Let go after it: the loop goes round and body holds again before its second run, and its third.
    for iteration in 2..=3 {
        control.release(None, Release::Continue);
        assert_eq!(tokio::time::timeout(wait, next_hold(&mut events)).await.unwrap().0, "continue");
        let held = tokio::time::timeout(wait, next_hold(&mut events)).await.expect("held again in time");
        assert_eq!(held, ("held".into(), "root.body".into(), before("root.body")), "iteration {iteration}");
        assert_eq!(lines(), iteration - 1);
    }
    // An unknown task is refused by name, and nothing changes.
    control.release(Some("nope"), Release::Continue);
    control.release(Some("body"), Release::Continue);
    assert_eq!(tokio::time::timeout(wait, next_hold(&mut events)).await.unwrap().0, "continue");
    let report = tokio::time::timeout(wait, run).await.expect("the session ended").unwrap().unwrap();
    assert_eq!(report.state, SessionState::Completed);
    assert_eq!(lines(), 3, "the loop ran three times, held before each");
}
