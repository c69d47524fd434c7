//! The interactive agents through the runner: prompts answered through a [`SessionControl`],
//! pre-seeded or while they wait; unanswered prompts in a non-interactive run; notifications.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use orrery_blueprint::{load, Blueprint, Library, SessionState, TaskState, ValidBlueprint};
use orrery_engine::agents::interaction::{Answers, WhenUnanswered};
use orrery_engine::runner::{run_session, RunError, RunOptions, RunReport, SessionControl};
use orrery_store::{Event, Store};
use serde_json::{json, Map, Value};
use tokio::sync::broadcast;

fn blueprint(tasks: Vec<Value>) -> Blueprint {
    load(&json!({"id": "root", "name": "root", "version": "1.0", "tasks": tasks}).to_string())
        .expect("the test blueprint loads")
        .blueprint
}

fn confirm_blueprint() -> Blueprint {
    blueprint(vec![
        json!({"id": "start", "type": "system.start"}),
        json!({"id": "confirm", "type": "user_prompt.confirm",
               "params": [{"name": "message", "value": "Go on?"}, {"name": "options", "value": ["Yes", "No"]}],
               "outputs": [{"name": "result", "type_hint": "str", "set_to": "decision"}],
               "depends_on": [{"id": "start"}]}),
        json!({"id": "end", "type": "system.end", "depends_on": [{"id": "confirm"}]}),
    ])
}

struct Fixture {
    dir: tempfile::TempDir,
}

impl Fixture {
    fn new() -> Fixture {
        Fixture { dir: tempfile::tempdir().expect("a temp dir") }
    }

    fn db(&self) -> PathBuf {
        self.dir.path().join("orrery.db")
    }

    fn spawn(
        &self,
        root: &Blueprint,
        control: Option<SessionControl>,
    ) -> (tokio::task::JoinHandle<Result<RunReport, RunError>>, broadcast::Receiver<Arc<Event>>) {
        let library = vec![root.clone()];
        let valid = {
            let lib: Library = library.iter().collect();
            ValidBlueprint::new(root.clone(), &lib).expect("the root is valid")
        };
        let (sender, receiver) = broadcast::channel(10_000);
        let options = RunOptions {
            max_parallel: 2,
            work_dir: self.dir.path().join("work"),
            events: Some(sender),
            control,
            broker: None,
            retry: None,
            started_by: None,
            file: None,
            breakpoints: Vec::new(),
            hold_on_failure: false,
            simulation: None,
        };
        let db = self.db();
        let handle = tokio::spawn(async move {
            tokio::time::timeout(Duration::from_secs(30), run_session(&db, valid, library, Map::new(), options))
                .await
                .expect("the session ended in time")
        });
        (handle, receiver)
    }

    fn data(&self, report: &RunReport, key: &str) -> Option<Value> {
        Store::open(&self.db())
            .expect("the store opens")
            .data_value(&report.session_id, "root", key)
            .expect("data reads")
    }

    fn node_state(&self, report: &RunReport, node: &str) -> TaskState {
        Store::open(&self.db())
            .expect("the store opens")
            .task_node(&report.session_id, node)
            .expect("the node exists")
            .state
    }
}

/// The event's data as the wire carries it.
fn payload(event: &Event) -> Value {
    serde_json::to_value(event).expect("an event serializes")["payload"]["value"].clone()
}

const PROMPT_WAITING: &str = "prompt_waiting";
const PROMPT_ANSWERED: &str = "prompt_answered";
const NOTIFICATION: &str = "notification";

fn drain(receiver: &mut broadcast::Receiver<Arc<Event>>) -> Vec<Event> {
    let mut events = Vec::new();
    while let Ok(e) = receiver.try_recv() {
        events.push(Event::clone(&e));
    }
    events
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_confirm_answered_while_it_waits_completes_and_its_answer_is_in_session_data() {
    let fx = Fixture::new();
    let control = SessionControl::new();
    let (handle, mut receiver) = fx.spawn(&confirm_blueprint(), Some(control.clone()));
    // Wait for the prompt: the task is RUNNING and its question is published.
    let prompt = loop {
        let event = tokio::time::timeout(Duration::from_secs(10), receiver.recv())
            .await
            .expect("a prompt in time")
            .expect("events");
        if event.kind() == PROMPT_WAITING {
            break payload(&event);
        }
    };
    assert_eq!(prompt["node"], json!("root.confirm"));
    assert_eq!(prompt["message"], json!("Go on?"));
    assert_eq!(prompt["options"], json!(["Yes", "No"]));
    assert!(!handle.is_finished(), "the session waits for the answer");

    control.answer("confirm", json!("No"));
    let report = handle.await.expect("the runner task").expect("the session runs");

    assert_eq!(report.state, SessionState::Completed, "{:?}", report.error);
    assert_eq!(fx.data(&report, "decision"), Some(json!("No")));
    let answered = std::iter::from_fn(|| receiver.try_recv().ok())
        .find(|e| e.kind() == PROMPT_ANSWERED)
        .expect("the answer is announced");
    assert_eq!(payload(&answered), json!({"node": "root.confirm", "outputs": {"result": "No"}}));
    assert_eq!(fx.node_state(&report, "root.confirm"), TaskState::Succeeded);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pre_seeded_answer_is_taken_at_once_and_one_outside_the_options_fails_the_task() {
    let fx = Fixture::new();
    let answers = Answers::new(WhenUnanswered::Fail);
    answers.answer("root.confirm", json!("Yes"));
    let (handle, mut rx) = fx.spawn(&confirm_blueprint(), Some(SessionControl::new().with_answers(answers)));
    let report = handle.await.expect("the runner task").expect("the session runs");
    assert_eq!(report.state, SessionState::Completed, "{:?}", report.error);
    assert_eq!(fx.data(&report, "decision"), Some(json!("Yes")));
    let kinds: Vec<String> = std::iter::from_fn(|| rx.try_recv().ok()).map(|e| e.kind().to_string()).collect();
    let waiting = kinds.iter().position(|k| k == PROMPT_WAITING).expect("the prompt was published");
    assert_eq!(kinds.get(waiting + 1).map(String::as_str), Some(PROMPT_ANSWERED), "{kinds:?}");

    let fx = Fixture::new();
    let answers = Answers::new(WhenUnanswered::Fail);
    answers.answer("confirm", json!("Maybe"));
    let (handle, _rx) = fx.spawn(&confirm_blueprint(), Some(SessionControl::new().with_answers(answers)));
    let report = handle.await.expect("the runner task").expect("the session runs");
    assert_eq!(report.state, SessionState::Failed);
    let error = report.error.expect("an error");
    assert_eq!(error.code, "TOOL_FAILURE");
    assert!(error.message.contains("\"Maybe\" is not one of its options"), "{}", error.message);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unanswered_prompt_in_a_non_interactive_run_fails_naming_the_task() {
    for control in [Some(SessionControl::new().with_answers(Answers::new(WhenUnanswered::Fail))), None] {
        let fx = Fixture::new();
        let (handle, _rx) = fx.spawn(&confirm_blueprint(), control);
        let report = handle.await.expect("the runner task").expect("the session runs");
        assert_eq!(report.state, SessionState::Failed);
        let error = report.error.clone().expect("an error");
        assert_eq!(error.code, "TOOL_FAILURE");
        assert!(error.message.contains("--answer root.confirm=VALUE"), "{}", error.message);
        assert_eq!(fx.node_state(&report, "root.confirm"), TaskState::Failed);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_while_a_prompt_waits_stops_the_session() {
    let fx = Fixture::new();
    let control = SessionControl::new();
    let (handle, mut receiver) = fx.spawn(&confirm_blueprint(), Some(control.clone()));
    loop {
        let event = tokio::time::timeout(Duration::from_secs(10), receiver.recv())
            .await
            .expect("a prompt in time")
            .expect("events");
        if event.kind() == PROMPT_WAITING {
            break;
        }
    }
    control.stop();
    let report = handle.await.expect("the runner task").expect("the session runs");
    assert_eq!(report.state, SessionState::Stopped);
    assert_eq!(fx.node_state(&report, "root.confirm"), TaskState::Pending);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notify_and_user_output_succeed_without_an_answer_and_user_input_takes_one() {
    let fx = Fixture::new();
    let root = blueprint(vec![
        json!({"id": "start", "type": "system.start"}),
        json!({"id": "ask", "type": "user_interaction.user_input", "outputs": [{"name": "name"}], "depends_on": [{"id": "start"}]}),
        json!({"id": "note", "type": "user_interaction.notify",
               "params": [{"name": "title", "value": "Hi {name}"}, {"name": "message", "value": "{name} {unknown}"}, {"name": "level", "value": "success"}],
               "inputs": [{"name": "name"}], "outputs": [{"name": "status"}], "depends_on": [{"id": "ask"}]}),
        json!({"id": "show", "type": "user_interaction.user_output", "inputs": [{"name": "name"}], "depends_on": [{"id": "note"}]}),
        json!({"id": "end", "type": "system.end", "depends_on": [{"id": "show"}]}),
    ]);
    let answers = Answers::new(WhenUnanswered::Fail);
    answers.answer("ask", json!("Ada"));
    let (handle, mut receiver) = fx.spawn(&root, Some(SessionControl::new().with_answers(answers)));
    let report = handle.await.expect("the runner task").expect("the session runs");
    assert_eq!(report.state, SessionState::Completed, "{:?}", report.error);
    assert_eq!(fx.data(&report, "name"), Some(json!("Ada")));
    assert_eq!(fx.data(&report, "status"), Some(json!("displayed")));

    let shown: Vec<Value> = drain(&mut receiver).iter().filter(|e| e.kind() == NOTIFICATION).map(payload).collect();
    assert_eq!(shown.len(), 2);
    assert_eq!(shown[0]["title"], json!("Hi Ada"));
    assert_eq!(shown[0]["message"], json!("{name} {unknown}"), "an unknown key keeps the template");
    assert_eq!(shown[0]["level"], json!("success"));
    assert_eq!(shown[1]["values"], json!({"name": "Ada"}));
}
