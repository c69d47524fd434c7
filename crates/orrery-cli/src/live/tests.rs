//! The display's state and rendering tested together: events in, lines out.

use super::render::{block, summary, Line, Size, Tone};
use super::state::{Counts, LiveState};
use orrery_api::{
    Attempt, AttemptState, BreakpointHolds, ErrorRecord, Event, EventData, EventPayload, HeldTask, NotificationShown,
    ProgressChanged, PromptWaiting, SessionCreated, SessionStateChanged, StepState, TaskStateChanged,
};
use orrery_blueprint::{SessionState, TaskState};
use serde_json::{json, Map};

/// The row of attempt `attempt` at `node`, as run `run`, in `state`.
fn attempt_row(node: &str, run: &str, attempt: u32, state: AttemptState, error: Option<ErrorRecord>) -> Attempt {
    let (instance, task) = node.rsplit_once('.').unwrap_or(("", node));
    Attempt {
        run_id: run.into(),
        session_id: "s".into(),
        node: node.into(),
        instance: instance.into(),
        task: task.into(),
        attempt,
        state,
        agent: "shell.run".into(),
        started_ms: 0,
        finished_ms: None,
        exit_code: None,
        error,
        process: None,
        log_path: None,
        inputs: None,
        outputs: None,
        iterations: Vec::new(),
        times_unknown: false,
        environment: None,
    }
}

fn session_state(state: SessionState) -> EventData {
    EventData::SessionStateChanged(SessionStateChanged { state, error: None })
}

fn task_state(node: &str, state: &str, previous: Option<&str>) -> EventData {
    let (instance, task_id) = node.rsplit_once('.').unwrap();
    EventData::TaskStateChanged(TaskStateChanged {
        node: node.into(),
        blueprint_id: instance.into(),
        task_id: task_id.into(),
        state: TaskState::parse(state).unwrap(),
        previous: previous.map(|p| TaskState::parse(p).unwrap()),
    })
}

const T0: i64 = 1_700_000_000_000;

/// Builds the events of one session as the store announces them, numbering them.
struct Session {
    seq: u64,
    state: LiveState,
}

impl Session {
    fn new() -> Session {
        Session { seq: 0, state: LiveState::new(T0) }
    }

    fn event(&mut self, at: i64, run: Option<&str>, data: EventData) -> &mut Session {
        self.seq += 1;
        let event = Event {
            session_id: "s-1".into(),
            seq: self.seq,
            global_seq: self.seq,
            time_ms: T0 + at,
            run_id: run.map(Into::into),
            payload: EventPayload::Whole(Box::new(data)),
        };
        self.state.apply(&event);
        self
    }

    fn created(&mut self, nodes: &[&str]) -> &mut Session {
        let created = SessionCreated {
            blueprint_hash: "h".into(),
            blueprint_id: "bp".into(),
            name: "Blueprint".into(),
            restarted_from: None,
        };
        self.event(0, None, EventData::SessionCreated(created));
        for node in nodes {
            self.task(0, node, "PENDING", None);
        }
        self.event(0, None, session_state(SessionState::Running))
    }

    fn task(&mut self, at: i64, node: &str, state: &str, previous: Option<&str>) -> &mut Session {
        self.event(at, None, task_state(node, state, previous))
    }

    /// The task turns RUNNING and its attempt `attempt` starts, as run `run`.
    fn start(&mut self, at: i64, node: &str, run: &str, attempt: u32) -> &mut Session {
        self.task(at, node, "RUNNING", Some("PENDING"));
        let started = attempt_row(node, run, attempt, AttemptState::Running, None);
        self.event(at, Some(run), EventData::AttemptStarted(started))
    }

    fn succeed(&mut self, at: i64, node: &str, run: &str) -> &mut Session {
        let settled = attempt_row(node, run, 1, AttemptState::Succeeded, None);
        self.event(at, Some(run), EventData::AttemptSettled(settled));
        self.task(at, node, "SUCCEEDED", Some("RUNNING"))
    }

    fn progress(&mut self, at: i64, run: &str, step: &str, percentage: Option<u8>) -> &mut Session {
        let progress =
            ProgressChanged { step: step.into(), state: StepState::InProgress, percentage, auto_completed: None };
        self.event(at, Some(run), EventData::Progress(progress))
    }
}

fn texts(lines: &[Line], width: Option<usize>) -> Vec<String> {
    lines.iter().map(|l| l.paint(width, false)).collect()
}

const WIDE: Size = Size { width: 120, height: 30 };

#[test]
fn the_block_counts_tasks_by_state_and_lists_running_tasks_with_their_step_and_attempt() {
    let mut s = Session::new();
    s.created(&["bp.start", "bp.build", "bp.lint", "bp.docs", "bp.end"])
        .start(100, "bp.start", "r1", 1)
        .succeed(200, "bp.start", "r1")
        .start(1_000, "bp.build", "r2", 1)
        .start(3_000, "bp.lint", "r3", 2)
        .progress(4_000, "r2", "compile", Some(40))
        .progress(4_500, "r3", "clippy", None)
        .task(5_000, "bp.docs", "SKIPPED", Some("PENDING"));
    let lines = texts(&block(&s.state, T0 + 12_300, WIDE), None);
    assert_eq!(
        lines,
        [
            "bp  session s-1  12s",
            "[########------------] 2/5  2 running  1 succeeded  1 skipped  1 pending",
            "  bp.build     11s  compile 40%",
            "  bp.lint       9s  clippy  attempt 2",
        ],
        "running tasks oldest first, the percentage only when reported, the attempt only after the first"
    );
    assert_eq!(s.state.counts(), Counts { pending: 1, running: 2, succeeded: 1, failed: 0, skipped: 1 });
}

#[test]
fn progress_moves_with_the_reports_and_a_new_attempt_starts_without_the_old_step() {
    let mut s = Session::new();
    s.created(&["bp.build"]).start(0, "bp.build", "r1", 1).progress(100, "r1", "fetch", Some(10));
    s.progress(200, "r1", "fetch", Some(75));
    assert_eq!(texts(&block(&s.state, T0 + 1_000, WIDE), None)[2], "  bp.build      1s  fetch 75%");
    s.progress(300, "r1", "link", Some(100));
    assert_eq!(texts(&block(&s.state, T0 + 1_000, WIDE), None)[2], "  bp.build      1s  link 100%");
    // A progress report of an unknown run (a stale one) changes nothing.
    s.progress(400, "old-run", "other", Some(5));
    assert_eq!(texts(&block(&s.state, T0 + 1_000, WIDE), None)[2], "  bp.build      1s  link 100%");
    s.task(500, "bp.build", "PENDING", Some("RUNNING")).start(2_000, "bp.build", "r2", 2);
    assert_eq!(texts(&block(&s.state, T0 + 65_000, WIDE), None)[2], "  bp.build   1m03s  attempt 2");
}

#[test]
fn running_tasks_beyond_the_terminal_height_are_summed_up() {
    let mut s = Session::new();
    let nodes: Vec<String> = (1..=6).map(|i| format!("bp.t{i}")).collect();
    s.created(&nodes.iter().map(String::as_str).collect::<Vec<_>>());
    for (i, node) in nodes.iter().enumerate() {
        s.start(i as i64 * 1_000, node, &format!("r{i}"), 1);
    }
    let lines = texts(&block(&s.state, T0 + 10_000, Size { width: 80, height: 6 }), None);
    assert_eq!(lines.len(), 5, "one line is left for the cursor: {lines:?}");
    assert_eq!(lines[2..], ["  bp.t1     10s", "  bp.t2      9s", "  +4 more running"]);
    let all = texts(&block(&s.state, T0 + 10_000, Size { width: 80, height: 9 }), None);
    assert_eq!(all.len(), 8, "six running tasks fit in nine lines: {all:?}");
    assert!(!all.iter().any(|l| l.contains("more running")), "{all:?}");
    let tiny = texts(&block(&s.state, T0, Size { width: 80, height: 2 }), None);
    assert_eq!(tiny, ["bp  session s-1  0s"], "a two-line terminal keeps only the header");
    assert!(block(&s.state, T0, Size { width: 80, height: 0 }).is_empty(), "no room, no block");
}

#[test]
fn lines_are_cut_to_the_width_with_an_ellipsis_and_never_panic_on_a_zero_width() {
    let line = Line::new().with(Tone::Bold, "assembly").plain("  session 0123456789");
    assert_eq!(line.paint(Some(12), false), "assembly  s…");
    assert_eq!(line.paint(Some(28), false), "assembly  session 0123456789", "an exact fit is not cut");
    assert_eq!(line.paint(Some(1), false), "…");
    assert_eq!(line.paint(Some(0), false), "");
    assert_eq!(line.paint(Some(11), true), "\x1b[1massembly\x1b[0m  …", "colour codes take no cells");
    let wide = Line::new().plain("部品の配置");
    assert_eq!(wide.paint(Some(6), false), "部品…", "wide characters take two cells");
    let control = Line::new().plain("two\nlines\tand a tab");
    assert_eq!(control.paint(None, false), "two lines and a tab", "a control character cannot move the cursor");

    let mut s = Session::new();
    s.created(&["bp.a-task-with-a-long-name"]).start(0, "bp.a-task-with-a-long-name", "r1", 1);
    for line in texts(&block(&s.state, T0, Size { width: 16, height: 10 }), Some(16)) {
        assert!(line.chars().count() <= 16, "{line:?} is wider than the terminal");
    }
}

#[test]
fn a_failed_task_is_kept_with_its_error_and_a_scope_loop_is_one_notice() {
    let mut s = Session::new();
    s.created(&["bp.pick", "bp.check", "bp.boom"])
        .start(0, "bp.pick", "r1", 1)
        .succeed(10, "bp.pick", "r1")
        .start(20, "bp.check", "r2", 1)
        .succeed(30, "bp.check", "r2");
    assert!(s.state.take_notices().is_empty(), "successes are not kept");
    s.task(40, "bp.pick", "PENDING", Some("SUCCEEDED")).task(40, "bp.check", "PENDING", Some("SUCCEEDED"));
    assert!(s.state.take_notices().is_empty(), "a loop waits for all its resets");
    s.start(50, "bp.pick", "r3", 2);
    s.start(60, "bp.boom", "r4", 1);
    let error =
        ErrorRecord { code: "TOOL_FAILURE".into(), message: "the process exited with code 3".into(), details: None };
    let settled = attempt_row("bp.boom", "r4", 1, AttemptState::Failed, Some(error));
    s.event(70, Some("r4"), EventData::AttemptSettled(settled));
    s.task(70, "bp.boom", "FAILED", Some("RUNNING"));
    let notices: Vec<String> = s.state.take_notices().iter().map(|n| n.line().paint(None, false)).collect();
    assert_eq!(
        notices,
        [
            "loop       bp.pick again, pass 2 (2 tasks reset)",
            "FAILED     bp.boom: TOOL_FAILURE: the process exited with code 3",
        ]
    );
    assert_eq!(s.state.counts().failed, 1);
    assert!(
        texts(&block(&s.state, T0 + 100, WIDE), None)[1].contains("1 failed"),
        "the failure is counted in the block"
    );
}

#[test]
fn a_failed_task_put_back_to_pending_by_a_resume_is_no_loop() {
    let mut s = Session::new();
    s.task(0, "bp.boom", "PENDING", Some("FAILED"));
    s.event(10, None, session_state(SessionState::Running));
    s.start(20, "bp.boom", "r1", 2);
    assert!(s.state.take_notices().is_empty(), "{:?}", s.state.notices);
}

#[test]
fn notifications_and_prompts_are_kept() {
    let mut s = Session::new();
    s.created(&["bp.hello", "bp.ask"]);
    let shown = NotificationShown {
        node: "bp.hello".into(),
        task: "hello".into(),
        task_type: "user_interaction.notify".into(),
        title: Some("Hello".into()),
        message: Some("about to ask".into()),
        level: Some(json!("info")),
        values: None,
    };
    s.event(10, Some("r1"), EventData::Notification(shown));
    let asked = PromptWaiting {
        node: "bp.ask".into(),
        task: "ask".into(),
        task_type: "user_prompt.confirm".into(),
        message: "Go on?".into(),
        outputs: vec!["result".into()],
        inputs: Map::new(),
        options: None,
    };
    s.event(20, Some("r2"), EventData::PromptWaiting(asked));
    let holds = |what: &str, held: Vec<HeldTask>| {
        EventData::Breakpoints(BreakpointHolds {
            node: "bp.ship".into(),
            what: what.into(),
            held,
            breakpoints: Vec::new(),
        })
    };
    s.event(30, None, holds("held", vec![HeldTask { node: "bp.ship".into(), at: "before".into() }]));
    s.event(40, None, holds("continue", Vec::new()));
    let notices: Vec<String> = s.state.take_notices().iter().map(|n| n.line().paint(None, false)).collect();
    let session = &s.state.session_id;
    assert_eq!(
        notices,
        [
            "notify     bp.hello [info] Hello: about to ask".to_string(),
            "prompt     bp.ask Go on?".to_string(),
            format!("held       bp.ship (before): orrery continue {session} [--step | --skip]"),
        ],
        "a release is the user's own doing: not told"
    );
}

#[test]
fn the_summary_says_how_the_session_ended_and_what_each_task_became() {
    let mut s = Session::new();
    s.created(&["bp.a", "bp.b", "bp.c"]).start(0, "bp.a", "r1", 1).succeed(500, "bp.a", "r1");
    s.task(600, "bp.b", "SKIPPED", Some("PENDING"));
    s.event(3_456, None, session_state(SessionState::Stopped));
    assert_eq!(
        texts(&summary(&s.state, T0 + 99_000), None),
        ["session    stopped after 3.4s: 3 tasks, 1 succeeded, 1 skipped, 1 not run"],
        "the time is the session's end, not the moment the summary is drawn"
    );
    let unended = LiveState::new(T0);
    assert_eq!(texts(&summary(&unended, T0 + 75_000), None), ["session    ended after 1m15s: 0 tasks"]);
}

#[test]
fn a_resumed_session_is_seeded_from_the_store_without_undoing_newer_events() {
    let mut state = LiveState::new(T0);
    let resumed = Event {
        session_id: "s-1".into(),
        seq: 40,
        global_seq: 40,
        time_ms: T0,
        run_id: None,
        payload: EventPayload::Whole(Box::new(session_state(SessionState::Running))),
    };
    assert!(state.needs_seed(&resumed), "a resume does not start with session_created");
    state.apply(&resumed);
    assert!(!state.needs_seed(&resumed), "seeded once");
    let running = Event {
        seq: 41,
        global_seq: 41,
        payload: EventPayload::Whole(Box::new(task_state("bp.b", "RUNNING", Some("PENDING")))),
        ..resumed
    };
    state.apply(&running);
    state.seed("bp", [("bp.a".to_string(), TaskState::Succeeded), ("bp.b".to_string(), TaskState::Pending)], false);
    assert_eq!(state.counts(), Counts { pending: 0, running: 1, succeeded: 1, failed: 0, skipped: 0 });
    assert_eq!(texts(&block(&state, T0, WIDE), None)[0], "bp  session s-1  0s");
}
