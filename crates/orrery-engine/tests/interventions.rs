//! Interventions on a stored session that is not running ([`orrery_engine::interventions`]):
//! skip a task, reset a task (with downstream, with outputs cleared), reset a scope; then
//! [`resume_session`] goes on with the session.

use std::time::Duration;

use orrery_blueprint::{Blueprint, SessionState, TaskState};
use orrery_engine::interventions::{reset_scope, reset_task, skip_task, InterventionError};
use orrery_engine::runner::{resume_session, run_session, RunReport, SessionControl};
use serde_json::{json, Map, Value};

mod common;
use common::*;

impl Fixture {
    async fn run(&self, root: &Blueprint) -> RunReport {
        let (options, _) = self.options(None);
        let db = self.db();
        let run = run_session(&db, valid(root, &[]).0, vec![root.clone()], Map::new(), options);
        tokio::time::timeout(Duration::from_secs(60), run).await.expect("in time").expect("runs")
    }

    /// Starts `root`; returns the handle, its control and once `node` has begun an attempt.
    async fn start_until(
        &self,
        root: &Blueprint,
        node: &str,
    ) -> (tokio::task::JoinHandle<Result<RunReport, orrery_engine::runner::RunError>>, SessionControl, String) {
        let control = SessionControl::new();
        let (options, mut receiver) = self.options(Some(&control));
        let (db, (valid, library)) = (self.db(), valid(root, &[]));
        let handle = tokio::spawn(async move { run_session(&db, valid, library, Map::new(), options).await });
        let session_id = wait_for_attempt(&mut receiver, node).await.session_id.clone();
        (handle, control, session_id)
    }

    async fn stop(
        handle: tokio::task::JoinHandle<Result<RunReport, orrery_engine::runner::RunError>>,
        control: &SessionControl,
    ) -> RunReport {
        control.stop();
        let report = tokio::time::timeout(Duration::from_secs(30), handle)
            .await
            .expect("stopped in time")
            .expect("no panic")
            .expect("ran");
        assert_eq!(report.state, SessionState::Stopped);
        report
    }

    async fn resume(&self, session_id: &str) -> RunReport {
        let (options, _) = self.options(None);
        tokio::time::timeout(Duration::from_secs(60), resume_session(&self.db(), session_id, options))
            .await
            .expect("in time")
            .expect("resumes")
    }

    fn state(&self, session_id: &str, node: &str) -> TaskState {
        self.store().task_node(session_id, node).expect("the node exists").state
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn skipping_the_task_a_stopped_session_was_waiting_on_lets_its_downstream_run() {
    let fx = Fixture::new();
    let ran = fx.path("ran.txt");
    let root = blueprint(
        "root",
        vec![
            start(),
            sh("wait", "sleep 30", "start"),
            sh("after", &format!("echo after >> '{}'", ran.display()), "wait"),
            end("after"),
        ],
    );
    let (handle, control, _) = fx.start_until(&root, "root.wait").await;
    let stopped = Fixture::stop(handle, &control).await;
    let id = stopped.session_id;

    let done = skip_task(&fx.db(), &id, "wait").expect("the skip is accepted");
    assert_eq!(done.nodes.len(), 1);
    assert_eq!(
        (done.nodes[0].node.as_str(), done.nodes[0].from, done.nodes[0].to),
        ("root.wait", TaskState::Pending, TaskState::SkipRequested)
    );
    assert_eq!(done.session_after, SessionState::Stopped);
    assert_eq!(fx.state(&id, "root.wait"), TaskState::SkipRequested);
    // Asking again changes nothing.
    assert!(skip_task(&fx.db(), &id, "root.wait").expect("accepted").nodes.is_empty());

    let report = fx.resume(&id).await;
    assert_eq!(report.state, SessionState::Completed, "{:?}", report.error);
    assert_eq!(fx.state(&id, "root.wait"), TaskState::Skipped);
    assert_eq!(fx.state(&id, "root.after"), TaskState::Succeeded);
    assert_eq!(read(&ran), "after\n");

    // A task that already ended cannot be skipped (and a completed session is refused first).
    match skip_task(&fx.db(), &id, "after") {
        Err(e @ InterventionError::NotAllowed { state: SessionState::Completed, .. }) => {
            assert!(e.to_string().contains("is completed"), "{e}");
            assert!(e.is_refusal());
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resetting_a_task_with_downstream_on_a_failed_session_reruns_exactly_those_tasks_and_clears_outputs() {
    let fx = Fixture::new();
    let ran = fx.path("ran.txt");
    let go = fx.path("go");
    let mut t1 =
        sh("t1", &format!("echo one >> '{}'; printf '{{\"x\": 5}}' > \"$ORRERY_OUTPUTS\"", ran.display()), "start");
    t1["outputs"] = json!([{"name": "x", "set_to": "t1x"}]);
    let t0 = sh("t0", &format!("echo zero >> '{}'", ran.display()), "start");
    let mut t2 = sh("t2", &format!("echo two >> '{}'; [ -f '{}' ]", ran.display(), go.display()), "t1");
    // After t0 too, so that t0 has surely finished when t2 fails the session.
    t2["depends_on"] = json!([{"id": "t1"}, {"id": "t0"}]);
    let t3 = sh("t3", &format!("echo three >> '{}'", ran.display()), "t2");
    let mut e = end("t3");
    e["depends_on"] = json!([{"id": "t3"}, {"id": "t0"}]);
    let root = blueprint("root", vec![start(), t0, t1, t2, t3, e]);

    let failed = fx.run(&root).await;
    assert_eq!(failed.state, SessionState::Failed);
    let id = failed.session_id;
    let data = |key: &str| fx.store().data_value(&id, "root", key).expect("data reads");
    assert_eq!(data("t1x"), Some(json!(5)));
    let first = read(&ran);
    assert_eq!(first.lines().filter(|l| *l == "two").count(), 1);

    // Unknown nodes and scopes are refused by name.
    match reset_task(&fx.db(), &id, "nope", true, true) {
        Err(e @ InterventionError::UnknownNode { .. }) => {
            assert!(e.to_string().contains("'nope'") && e.to_string().contains(&id), "{e}");
            assert!(e.is_refusal());
        }
        other => panic!("expected an unknown node, got {other:?}"),
    }
    assert!(matches!(reset_scope(&fx.db(), &id, "t1"), Err(InterventionError::UnknownScope { .. })));
    match skip_task(&fx.db(), "no-such-session", "t1") {
        Err(e) => assert!(e.is_refusal(), "an unknown session is a refusal: {e}"),
        Ok(_) => panic!("an unknown session was changed"),
    }

    let done = reset_task(&fx.db(), &id, "root.t1", true, true).expect("the reset is accepted");
    let nodes: Vec<&str> = done.nodes.iter().map(|c| c.node.as_str()).collect();
    assert_eq!(nodes, ["root.t1", "root.t2", "root.t3", "root.end"]);
    assert_eq!(done.nodes[0].from, TaskState::Succeeded);
    assert_eq!(done.nodes[1].from, TaskState::Failed);
    assert_eq!(done.cleared_data, vec![("root".to_string(), "t1x".to_string())]);
    assert_eq!((done.session_before, done.session_after), (SessionState::Failed, SessionState::Stopped));
    assert_eq!(data("t1x"), Some(Value::Null), "cleared outputs are set to null");
    assert_eq!(fx.store().session(&id).unwrap().state, SessionState::Stopped);
    assert_eq!(fx.state(&id, "root.t0"), TaskState::Succeeded, "not downstream: untouched");

    std::fs::write(&go, "").unwrap();
    let report = fx.resume(&id).await;
    assert_eq!(report.state, SessionState::Completed, "{:?}", report.error);
    let all = read(&ran);
    let count = |w: &str| all.lines().filter(|l| *l == w).count();
    assert_eq!((count("zero"), count("one"), count("two"), count("three")), (1, 2, 2, 1), "{all}");
    assert_eq!(data("t1x"), Some(json!(5)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resetting_a_single_task_without_downstream_resets_only_it() {
    let fx = Fixture::new();
    let ran = fx.path("ran.txt");
    let t1 = sh("t1", &format!("echo one >> '{}'", ran.display()), "start");
    let t2 = sh("t2", "exit 4", "t1");
    let root = blueprint("root", vec![start(), t1, t2, end("t2")]);
    let id = fx.run(&root).await.session_id;
    let done = reset_task(&fx.db(), &id, "t1", false, false).expect("accepted");
    assert_eq!(done.nodes.len(), 1);
    assert!(done.cleared_data.is_empty());
    assert_eq!(fx.state(&id, "root.t1"), TaskState::Pending);
    assert_eq!(fx.state(&id, "root.t2"), TaskState::Failed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resetting_a_scope_clears_its_counter_and_runs_its_body_again() {
    let fx = Fixture::new();
    let ran = fx.path("ran.txt");
    let go = fx.path("go");
    let mut loop_start = sh("loop_start", "true", "start");
    loop_start["scope_start"] = json!({"retry_policy": {"retries": 1}});
    let mut loop_end = sh("loop_end", "true", "body");
    loop_end["scope_end"] = json!("loop_start");
    let root = blueprint(
        "root",
        vec![
            start(),
            loop_start,
            sh("body", &format!("echo run >> '{}'", ran.display()), "loop_start"),
            loop_end,
            sh("gate", &format!("[ -f '{}' ]", go.display()), "loop_end"),
            end("gate"),
        ],
    );
    let id = fx.run(&root).await.session_id;
    assert_eq!(read(&ran).lines().count(), 2);
    assert_eq!(fx.store().scope_iterations(&id, "root", "root.loop_start").unwrap(), 1);

    let done = reset_scope(&fx.db(), &id, "loop_start").expect("accepted");
    let nodes: Vec<&str> = done.nodes.iter().map(|c| c.node.as_str()).collect();
    assert_eq!(nodes, ["root.loop_start", "root.body", "root.loop_end"]);
    assert_eq!(done.cleared_counters, vec![("root".to_string(), "root.loop_start".to_string())]);
    assert_eq!(fx.store().scope_iterations(&id, "root", "root.loop_start").unwrap(), 0);
    assert_eq!(fx.state(&id, "root.gate"), TaskState::Failed, "outside the scope: untouched");

    std::fs::write(&go, "").unwrap();
    let report = fx.resume(&id).await;
    assert_eq!(report.state, SessionState::Completed, "{:?}", report.error);
    assert_eq!(read(&ran).lines().count(), 4, "the body ran twice more: the retry budget is whole again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_session_is_refused_until_it_is_stopped() {
    let fx = Fixture::new();
    let root = blueprint("root", vec![start(), sh("wait", "sleep 30", "start"), end("wait")]);
    let (handle, control, id) = fx.start_until(&root, "root.wait").await;
    match skip_task(&fx.db(), &id, "wait") {
        Err(e @ InterventionError::NotAllowed { state: SessionState::Running, .. }) => {
            assert!(e.to_string().contains("is running") && e.to_string().contains("stop it first"), "{e}");
        }
        other => panic!("a running session was changed: {other:?}"),
    }
    assert!(matches!(reset_task(&fx.db(), &id, "wait", true, true), Err(InterventionError::NotAllowed { .. })));
    Fixture::stop(handle, &control).await;
    assert!(skip_task(&fx.db(), &id, "wait").is_ok(), "once stopped it is accepted");
}
