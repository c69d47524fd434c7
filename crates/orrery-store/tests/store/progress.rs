use orrery_store::FailureCode;
use orrery_store::{Outcome, ProgressReport, StepState};
use serde_json::json;

use crate::Fixture;

fn report(step: &str, state: StepState, percentage: Option<u8>) -> ProgressReport {
    ProgressReport { step: step.into(), state, percentage }
}

#[test]
fn steps_keep_the_order_of_their_first_appearance() {
    let mut fixture = Fixture::open();
    let (_, run) = fixture.running_attempt();
    for name in ["fetch", "build", "fetch", "test"] {
        fixture.store.report_progress(&run, &report(name, StepState::InProgress, None)).unwrap();
    }
    let steps = fixture.store.steps(&run).unwrap();
    let names: Vec<(&str, u32)> = steps.iter().map(|s| (s.name.as_str(), s.position)).collect();
    assert_eq!(names, vec![("fetch", 0), ("build", 1), ("test", 2)], "a step is unique and keeps its first position");
}

#[test]
fn a_lower_percentage_is_ignored_and_said_so() {
    let mut fixture = Fixture::open();
    let (_, run) = fixture.running_attempt();
    fixture.store.report_progress(&run, &report("build", StepState::InProgress, Some(60))).unwrap();
    let update = fixture.store.report_progress(&run, &report("build", StepState::InProgress, Some(40))).unwrap();
    assert_eq!(update.step.percentage, Some(60), "percentage never goes backwards within a step");
    assert!(update.ignored.as_deref().unwrap_or("").contains("40"), "the answer says what was ignored: {update:?}");
    assert!(update.event.is_none(), "nothing changed, nothing announced");
    let forward = fixture.store.report_progress(&run, &report("build", StepState::InProgress, Some(80))).unwrap();
    assert_eq!(forward.step.percentage, Some(80));
    assert!(forward.ignored.is_none());
}

#[test]
fn a_percentage_above_100_is_invalid() {
    let mut fixture = Fixture::open();
    let (_, run) = fixture.running_attempt();
    let err = fixture.store.report_progress(&run, &report("build", StepState::InProgress, Some(101))).unwrap_err();
    assert_eq!(err.code(), FailureCode::InvalidArgument);
    assert!(fixture.store.steps(&run).unwrap().is_empty(), "nothing was written");
}

#[test]
fn starting_a_step_completes_the_one_in_progress() {
    let mut fixture = Fixture::open();
    let (_, run) = fixture.running_attempt();
    fixture.store.report_progress(&run, &report("fetch", StepState::InProgress, Some(30))).unwrap();
    let update = fixture.store.report_progress(&run, &report("build", StepState::InProgress, None)).unwrap();
    assert_eq!(update.auto_completed.as_deref(), Some("fetch"));
    let steps = fixture.store.steps(&run).unwrap();
    assert_eq!((steps[0].state, steps[0].percentage), (StepState::Done, Some(100)));
    assert_eq!(steps[1].state, StepState::InProgress);
    let in_progress = steps.iter().filter(|s| s.state == StepState::InProgress).count();
    assert_eq!(in_progress, 1, "at most one step is in progress per run");
}

#[test]
fn a_done_step_stays_done_and_points_at_its_event() {
    let mut fixture = Fixture::open();
    let (_, run) = fixture.running_attempt();
    let done = fixture.store.report_progress(&run, &report("fetch", StepState::Done, None)).unwrap();
    let seq = done.event.as_ref().expect("done is announced").seq;
    assert_eq!(done.step.result_event_seq, Some(seq));
    let again = fixture.store.report_progress(&run, &report("fetch", StepState::InProgress, Some(10))).unwrap();
    assert_eq!(again.step.state, StepState::Done, "a done step does not reopen");
    assert_eq!(again.step.percentage, Some(100));
    assert!(again.ignored.is_some());
}

#[test]
fn success_marks_every_step_done() {
    let mut fixture = Fixture::open();
    let (_, run) = fixture.running_attempt();
    fixture.store.report_progress(&run, &report("a", StepState::Pending, None)).unwrap();
    fixture.store.report_progress(&run, &report("b", StepState::InProgress, Some(50))).unwrap();
    fixture.store.settle_attempt(&run, Outcome::Succeeded { exit_code: Some(0), outputs: json!({}) }).unwrap();
    let steps = fixture.store.steps(&run).unwrap();
    assert!(steps.iter().all(|s| s.state == StepState::Done && s.percentage == Some(100)), "{steps:?}");
}

#[test]
fn a_step_left_in_progress_by_a_crash_becomes_unknown() {
    let mut fixture = Fixture::open();
    let (_, run) = fixture.running_attempt();
    fixture.store.report_progress(&run, &report("a", StepState::Done, None)).unwrap();
    fixture.store.report_progress(&run, &report("b", StepState::InProgress, Some(50))).unwrap();
    let mut fixture = fixture.reopen();
    assert_eq!(fixture.store.mark_unknown_in_progress(&run).unwrap(), 1);
    let steps = fixture.store.steps(&run).unwrap();
    assert_eq!(steps.iter().map(|s| s.state).collect::<Vec<_>>(), vec![StepState::Done, StepState::Unknown]);
    assert_eq!(steps[1].percentage, Some(50), "the last known percentage is kept");
    assert_eq!(fixture.store.mark_unknown_in_progress(&"run-404".into()).unwrap_err().code(), FailureCode::NotFound);
}

#[test]
fn progress_on_a_settled_run_is_refused() {
    let mut fixture = Fixture::open();
    let (_, run) = fixture.running_attempt();
    fixture.store.settle_attempt(&run, Outcome::Cancelled { exit_code: Some(130) }).unwrap();
    let err = fixture.store.report_progress(&run, &report("late", StepState::InProgress, None)).unwrap_err();
    assert_eq!(err.code(), FailureCode::StaleRun);
    assert!(fixture.store.steps(&run).unwrap().is_empty());
}

#[test]
fn the_resume_view_shows_50_steps_and_counts_all() {
    let mut fixture = Fixture::open();
    let (_, run) = fixture.running_attempt();
    for i in 0..70 {
        fixture.store.report_progress(&run, &report(&format!("step-{i:02}"), StepState::Done, None)).unwrap();
    }
    fixture.store.report_progress(&run, &report("last", StepState::InProgress, Some(5))).unwrap();
    fixture.store.report_progress(&run, &report("later", StepState::Pending, None)).unwrap();
    let view = fixture.store.progress_view(&run).unwrap();
    assert_eq!(view.steps.len(), 50, "the view is bounded");
    assert_eq!(view.steps[0].name, "step-00");
    assert_eq!(view.steps[49].name, "step-49");
    assert_eq!(view.total_steps, 72);
    assert_eq!((view.counts.done, view.counts.in_progress, view.counts.pending, view.counts.unknown), (70, 1, 1, 0));
    let session_last = fixture.store.last_event_seq(&view.session_id).unwrap();
    assert_eq!(view.last_event_seq, Some(session_last), "the last event is the last progress report");
}
