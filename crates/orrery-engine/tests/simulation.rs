//! Simulated sessions through the runner: no process starts, the loops and conditions are
//! evaluated for real on outputs set by hand, replayed from a past run, or declared defaults.

mod common;
use common::*;

use orrery_blueprint::SessionState;
use orrery_engine::runner::{
    restart_session, resume_session, run_session, Restart, RunError, SimulatedFailure, Simulation,
};
use orrery_store::{Attempt, AttemptState};
use serde_json::{json, Map, Value};

/// A loop that counts to 3 with a shell task (each run appends a line to `ran`), a task run only
/// past 5, and a task whose output has a declared default.
fn counting(ran: &std::path::Path) -> (orrery_blueprint::ValidBlueprint, Vec<orrery_blueprint::Blueprint>) {
    let append = |what: &str| format!("echo {what} >> '{}'", ran.display());
    let mut big = sh("big", &append("big"), "loop_end");
    big["inputs"] = json!([{"name": "count"}]);
    big["condition"] = json!("count > 5");
    let mut label =
        sh("label", &format!(r#"{}; printf '{{"tag": "real"}}' > "$ORRERY_OUTPUTS""#, append("label")), "big");
    label["outputs"] = json!([{"name": "tag", "value": "declared"}]);
    let mut tasks = vec![start()];
    tasks.extend(counting_loop(ran, "sleep 0.2"));
    tasks.extend([big, label, end("label")]);
    let root = blueprint("counting", tasks);
    valid(&root, &[])
}

fn attempts_of(fx: &Fixture, session: &str) -> Vec<Attempt> {
    fx.store().attempts(session).unwrap()
}

fn ran(attempts: &[Attempt], node: &str) -> usize {
    attempts.iter().filter(|a| a.node == node).count()
}

fn outputs(attempts: &[Attempt], node: &str) -> Vec<Value> {
    attempts.iter().filter(|a| a.node == node).map(|a| a.outputs.clone().unwrap_or(Value::Null)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_simulation_replays_a_past_run_through_its_loop_without_a_process() {
    let fx = Fixture::new();
    let ran_file = fx.path("ran.txt");
    let (root, library) = counting(&ran_file);
    let (options, _events) = fx.options(None);
    let real = run_session(&fx.db(), root.clone(), library.clone(), Map::new(), options).await.unwrap();
    assert_eq!(real.state, SessionState::Completed);
    let lines = read(&ran_file);
    assert_eq!(lines, "body\nbody\nbody\nlabel\n");

    // Replayed: the loop goes round as it did (its n-th run takes the n-th count), the condition
    // skips `big` again, and each task takes at least as long as it took.
    let (mut options, _events) = fx.options(None);
    let simulation = Simulation { outputs_from: Some(real.session_id.clone()), durations: true, ..Default::default() };
    options.simulation = Some(simulation.clone());
    let simulated = run_session(&fx.db(), root, library, Map::new(), options).await.unwrap();
    assert_eq!(simulated.state, SessionState::Completed);
    assert_eq!(read(&ran_file), lines, "no process ran");
    let attempts = attempts_of(&fx, &simulated.session_id);
    assert_eq!(ran(&attempts, "counting.body"), 3);
    let real_attempts = attempts_of(&fx, &real.session_id);
    assert_eq!(outputs(&attempts, "counting.body"), outputs(&real_attempts, "counting.body"));
    assert_eq!(outputs(&attempts, "counting.body")[2]["count"], json!(3));
    assert_eq!(ran(&attempts, "counting.big"), 0);
    assert_eq!(outputs(&attempts, "counting.label")[0]["tag"], json!("real"));
    for a in &attempts {
        assert!(a.process.is_none() && a.log_path.is_none(), "{} has no process nor log", a.node);
    }
    let took = |a: &Attempt| a.finished_ms.unwrap() - a.started_ms;
    let body = |attempts: &[Attempt]| attempts.iter().filter(|a| a.node == "counting.body").map(took).min().unwrap();
    assert!(body(&attempts) >= body(&real_attempts).min(200), "a replayed body takes its time");
    let session = fx.store().session(&simulated.session_id).unwrap();
    assert_eq!(session.simulation, Some(simulation.clone()));
    assert_eq!(fx.store().session(&real.session_id).unwrap().simulation, None);

    // Restarted, it is simulated again: its data never feeds a real run.
    let (options, _events) = fx.options(None);
    let again =
        restart_session(&fx.db(), &simulated.session_id, Restart { keep_done: true, ..Default::default() }, options)
            .await
            .unwrap();
    assert_eq!(again.state, SessionState::Completed);
    assert_eq!(fx.store().session(&again.session_id).unwrap().simulation, Some(simulation));
    assert_eq!(read(&ran_file), lines);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_simulation_takes_the_outputs_set_then_the_declared_defaults_and_fails_where_told() {
    let fx = Fixture::new();
    let ran_file = fx.path("ran.txt");
    let (root, library) = counting(&ran_file);

    // A count set by hand: the loop ends after one run (7 is not < 3), `big` runs, and `label`
    // writes its declared default.
    let (mut options, _events) = fx.options(None);
    let seven = || [("body".to_string(), json!({"count": 7}).as_object().cloned().unwrap())].into_iter().collect();
    options.simulation = Some(Simulation { outputs: seven(), ..Default::default() });
    let report = run_session(&fx.db(), root.clone(), library.clone(), Map::new(), options).await.unwrap();
    assert_eq!(report.state, SessionState::Completed);
    let attempts = attempts_of(&fx, &report.session_id);
    assert_eq!(ran(&attempts, "counting.body"), 1);
    assert_eq!(ran(&attempts, "counting.big"), 1);
    let tag = fx.store().data_value(&report.session_id, "counting", "tag").unwrap();
    assert_eq!(tag, Some(json!("declared")));
    assert_eq!(read(&ran_file), "", "no process ran");

    // `label` set to fail: the session fails there.
    let (mut options, _events) = fx.options(None);
    options.simulation = Some(Simulation {
        outputs: seven(),
        fail: vec![SimulatedFailure { task: "counting.label".into(), attempts: None }],
        ..Default::default()
    });
    let report = run_session(&fx.db(), root.clone(), library.clone(), Map::new(), options).await.unwrap();
    assert_eq!(report.state, SessionState::Failed);
    let error = report.error.unwrap();
    assert!(error.message.contains("the simulation sets it to fail"), "{}", error.message);
    let attempts = attempts_of(&fx, &report.session_id);
    let label: Vec<_> = attempts.iter().filter(|a| a.node == "counting.label").map(|a| a.state).collect();
    assert_eq!(label, [AttemptState::Failed]);

    // A task or a past session the blueprint run does not have: refused before it starts.
    for simulation in [
        Simulation { fail: vec![SimulatedFailure { task: "nope".into(), attempts: None }], ..Default::default() },
        Simulation { outputs_from: Some("no-such-session".into()), ..Default::default() },
    ] {
        let (mut options, _events) = fx.options(None);
        options.simulation = Some(simulation);
        let refused = run_session(&fx.db(), root.clone(), library.clone(), Map::new(), options).await.unwrap_err();
        assert!(
            matches!(&refused, RunError::UnknownSimulated { task } if task == "nope")
                || refused.to_string().contains("no-such-session"),
            "{refused}"
        );
    }
    assert_eq!(fx.store().sessions(&Default::default()).unwrap().len(), 2, "nothing started");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_set_to_fail_its_first_attempt_succeeds_when_the_simulation_is_resumed() {
    let fx = Fixture::new();
    let ran_file = fx.path("ran.txt");
    let root = blueprint(
        "flaky",
        vec![start(), sh("flaky", &format!("echo flaky >> '{}'", ran_file.display()), "start"), end("flaky")],
    );
    let (root, library) = valid(&root, &[]);
    let (mut options, _events) = fx.options(None);
    options.simulation = Some(Simulation {
        fail: vec![SimulatedFailure { task: "flaky".into(), attempts: std::num::NonZeroU32::new(1) }],
        ..Default::default()
    });
    let report = run_session(&fx.db(), root, library, Map::new(), options).await.unwrap();
    assert_eq!(report.state, SessionState::Failed);
    // Resumed (as a retry from failure), it goes on simulated: the second attempt succeeds.
    let (options, _events) = fx.options(None);
    let resumed = resume_session(&fx.db(), &report.session_id, options).await.unwrap();
    assert_eq!(resumed.state, SessionState::Completed, "{:?}", resumed.error);
    let states: Vec<_> =
        attempts_of(&fx, &report.session_id).into_iter().filter(|a| a.node == "flaky.flaky").map(|a| a.state).collect();
    assert_eq!(states, [AttemptState::Failed, AttemptState::Succeeded]);
    assert_eq!(read(&ran_file), "", "no process ran");
}
