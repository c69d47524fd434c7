//! The live progress display of `orrery run` and `orrery resume` when standard output is a
//! terminal (and `--format text`): a small block redrawn in place at the bottom of the terminal,
//! with permanent lines scrolling above it for what the user must keep.
//!
//! Three parts, so that what is drawn can be tested without a terminal:
//! - [`LiveState`] folds the session's committed events into what the display shows: each
//!   task's state, the attempt and progress step of the running ones, and the [`Notice`]s
//!   (failed tasks with their error, notifications, prompts, scope loops) still to print.
//! - [`block`], [`Notice::line`] and [`summary`] render that state into [`Line`]s: pure
//!   functions of the state, the time and the terminal [`Size`]; [`Line::paint`] truncates a
//!   line to the width (never wrapping it) and colours it, or not (`NO_COLOR`).
//! - [`Screen`] owns the terminal output: it erases the block it drew (cursor up, clear to the
//!   end of the screen), prints the new permanent lines, and draws the block again, all in one
//!   write. [`follow`] drives it from the event channel and a 100 ms ticker: events are
//!   coalesced, so the block is redrawn at most ten times a second, and the ticker moves the
//!   elapsed times; an unchanged frame is not written again.
//!
//! No alternate screen and no hidden cursor: whatever happens to the process, the terminal is
//! left usable. A prompt asked on the terminal erases the block first and the display waits
//! while the answer is typed. Messages that would otherwise be written over the block (the
//! Ctrl-C acknowledgements) come in as notes and are printed as permanent lines.

use crate::run::ask;
use orrery_api::{Api, Event, EventData, Outcome, SessionControl, SessionView};
use orrery_blueprint::{SessionState, TaskState};
use serde_json::Value;
use std::collections::HashMap;
use std::io::Write;
use std::time::Duration;
use tokio::sync::{broadcast, mpsc};
use unicode_width::UnicodeWidthChar;

/// The terminal's size in character cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Size {
    pub width: usize,
    pub height: usize,
}

/// The size of the terminal on standard output; 80x24 when it cannot be told (a pseudo-terminal
/// nobody sized reports 0x0).
pub fn terminal_size() -> Size {
    // SAFETY: TIOCGWINSZ only writes a `winsize` into the struct it is given.
    let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
    let known = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut ws) } == 0;
    let or = |n: u16, fallback: usize| if known && n > 0 { usize::from(n) } else { fallback };
    Size { width: or(ws.ws_col, 80), height: or(ws.ws_row, 24) }
}

/// How a piece of a line is coloured; the codes follow the CLI's diagnostics (bold red for
/// errors, bold yellow for warnings, bold cyan for information).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tone {
    Plain,
    Bold,
    Dim,
    Error,
    Warning,
    Info,
    Good,
}

impl Tone {
    fn sgr(self) -> Option<&'static str> {
        match self {
            Tone::Plain => None,
            Tone::Bold => Some("1"),
            Tone::Dim => Some("2"),
            Tone::Error => Some("1;31"),
            Tone::Warning => Some("1;33"),
            Tone::Info => Some("1;36"),
            Tone::Good => Some("32"),
        }
    }
}

/// One line of output as toned pieces of text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Line(Vec<(Tone, String)>);

impl Line {
    fn new() -> Line {
        Line(Vec::new())
    }

    fn with(mut self, tone: Tone, text: impl Into<String>) -> Line {
        self.0.push((tone, text.into()));
        self
    }

    fn plain(self, text: impl Into<String>) -> Line {
        self.with(Tone::Plain, text)
    }

    /// The line as written to the terminal: control characters become spaces, and with a
    /// `width` it is cut to that many cells, its last visible cell an ellipsis when cut.
    pub fn paint(&self, width: Option<usize>, colour: bool) -> String {
        let mut out = String::new();
        let mut used = 0;
        let total: usize = self.0.iter().flat_map(|(_, t)| t.chars()).map(cell_width).sum();
        let limit = match width {
            Some(w) if total > w => Some(w.saturating_sub(1)),
            _ => None,
        };
        'pieces: for (tone, text) in &self.0 {
            let code = tone.sgr().filter(|_| colour);
            if let Some(code) = code {
                out.push_str(&format!("\x1b[{code}m"));
            }
            for c in text.chars() {
                let c = if c.is_control() { ' ' } else { c };
                let w = cell_width(c);
                if limit.is_some_and(|limit| used + w > limit) {
                    if code.is_some() {
                        out.push_str("\x1b[0m");
                    }
                    break 'pieces;
                }
                used += w;
                out.push(c);
            }
            if code.is_some() {
                out.push_str("\x1b[0m");
            }
        }
        if limit.is_some() && width.is_some_and(|w| w > 0) {
            out.push('…');
        }
        out
    }
}

fn cell_width(c: char) -> usize {
    if c.is_control() {
        1
    } else {
        c.width().unwrap_or(0)
    }
}

/// A line printed once above the block, for the user to keep.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// A task failed; its attempt's error when known.
    Failed {
        node: String,
        attempt: u32,
        error: Option<String>,
    },
    Notification {
        node: String,
        text: String,
    },
    Prompt {
        node: String,
        message: String,
    },
    /// A scope went round again: `first` and the `reset` tasks of the scope are PENDING again
    /// for pass number `pass`.
    Loop {
        first: String,
        pass: u32,
        reset: usize,
    },
    /// A message of `orrery` itself (a Ctrl-C acknowledgement).
    Said(String),
}

impl Notice {
    pub fn line(&self) -> Line {
        match self {
            Notice::Failed { node, attempt, error } => {
                let mut line = Line::new().with(Tone::Error, "FAILED").plain(format!("     {node}"));
                if *attempt > 1 {
                    line = line.plain(format!(" (attempt {attempt})"));
                }
                if let Some(error) = error {
                    line = line.plain(format!(": {error}"));
                }
                line
            }
            Notice::Notification { node, text } => {
                Line::new().with(Tone::Info, "notify").plain(format!("     {node} {text}"))
            }
            Notice::Prompt { node, message } => {
                Line::new().with(Tone::Warning, "prompt").plain(format!("     {node} {message}"))
            }
            Notice::Loop { first, pass, reset } => Line::new().with(Tone::Info, "loop").plain(format!(
                "       {first} again, pass {pass} ({reset} task{} reset)",
                if *reset == 1 { "" } else { "s" }
            )),
            Notice::Said(text) => Line::new().with(Tone::Warning, text.clone()),
        }
    }
}

/// How many tasks are in each state; `pending` counts every state that has yet to run
/// (PENDING, READY, SKIP_REQUESTED).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub pending: usize,
    pub running: usize,
    pub succeeded: usize,
    pub failed: usize,
    pub skipped: usize,
}

impl Counts {
    pub fn total(&self) -> usize {
        self.pending + self.running + self.finished()
    }

    pub fn finished(&self) -> usize {
        self.succeeded + self.failed + self.skipped
    }
}

#[derive(Debug, Clone)]
struct TaskView {
    node: String,
    state: TaskState,
    attempt: u32,
    /// When its current attempt started (ms since the epoch, the store's clock).
    since_ms: i64,
    step: Option<StepView>,
    /// The error of its last failed attempt.
    error: Option<String>,
}

#[derive(Debug, Clone)]
struct StepView {
    name: String,
    percentage: Option<u64>,
}

/// How the session ended, once it did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Ended {
    state: SessionState,
    at_ms: i64,
}

/// What the live display knows of a session, folded from its events.
#[derive(Debug, Clone)]
pub struct LiveState {
    started_ms: i64,
    session_id: String,
    blueprint: String,
    tasks: Vec<TaskView>,
    by_node: HashMap<String, usize>,
    by_run: HashMap<String, usize>,
    ended: Option<Ended>,
    /// The tasks are all known: the session's state was announced, or the store was read.
    begun: bool,
    /// The session was announced running (so a task going back to PENDING is a loop, not the
    /// retry of a resume).
    running: bool,
    notices: Vec<Notice>,
    /// A scope loop whose resets are still arriving (consecutive events), and the last seq.
    open_loop: Option<(Notice, u64)>,
    passes: HashMap<String, u32>,
}

impl LiveState {
    /// An empty state; elapsed times of the session count from `started_ms`.
    pub fn new(started_ms: i64) -> LiveState {
        LiveState {
            started_ms,
            session_id: String::new(),
            blueprint: String::new(),
            tasks: Vec::new(),
            by_node: HashMap::new(),
            by_run: HashMap::new(),
            ended: None,
            begun: false,
            running: false,
            notices: Vec::new(),
            open_loop: None,
            passes: HashMap::new(),
        }
    }

    /// Adds what the store knows and the events did not say: the blueprint and the task
    /// states of a resumed session (a resume announces only what changes). Tasks already
    /// known from events keep their state unless `overwrite` (events were missed).
    pub fn seed(&mut self, blueprint: &str, nodes: impl IntoIterator<Item = (String, TaskState)>, overwrite: bool) {
        if self.blueprint.is_empty() {
            self.blueprint = blueprint.to_string();
        }
        self.begun = true;
        for (node, state) in nodes {
            if overwrite || !self.by_node.contains_key(&node) {
                let i = self.task(&node);
                self.tasks[i].state = state;
            }
        }
    }

    /// Whether the store must be read for what the events do not say: the first event is not
    /// the creation of the session.
    pub fn needs_seed(&self, event: &Event) -> bool {
        self.session_id.is_empty() && !matches!(event.data(), Some(EventData::SessionCreated(_)))
    }

    pub fn counts(&self) -> Counts {
        let mut counts = Counts::default();
        for t in &self.tasks {
            match t.state {
                TaskState::Running => counts.running += 1,
                TaskState::Succeeded => counts.succeeded += 1,
                TaskState::Failed => counts.failed += 1,
                TaskState::Skipped => counts.skipped += 1,
                TaskState::Pending | TaskState::Ready | TaskState::SkipRequested | TaskState::Unspecified => {
                    counts.pending += 1
                }
            }
        }
        counts
    }

    /// The notices to print now, oldest first; a scope loop whose resets may still be arriving
    /// waits for the next call (or [`LiveState::finish`]).
    pub fn take_notices(&mut self) -> Vec<Notice> {
        std::mem::take(&mut self.notices)
    }

    /// Closes what is still open at the end: the last scope loop.
    pub fn finish(&mut self) {
        self.close_loop();
    }

    fn task(&mut self, node: &str) -> usize {
        if let Some(&i) = self.by_node.get(node) {
            return i;
        }
        self.tasks.push(TaskView {
            node: node.to_string(),
            state: TaskState::Pending,
            attempt: 0,
            since_ms: 0,
            step: None,
            error: None,
        });
        self.by_node.insert(node.to_string(), self.tasks.len() - 1);
        self.tasks.len() - 1
    }

    fn close_loop(&mut self) {
        if let Some((notice, _)) = self.open_loop.take() {
            self.notices.push(notice);
        }
    }

    /// Folds one committed event in.
    pub fn apply(&mut self, event: &Event) {
        if self.session_id.is_empty() {
            self.session_id = event.session_id.clone();
        }
        // A cut payload is a huge one (outputs, a long message), and a kind of another build
        // is not this display's: nothing the display needs.
        let data = event.data();
        let run = event.run_id.as_ref().map(|r| r.as_str().to_string());
        let is_reset = self.running
            && matches!(data, Some(EventData::TaskStateChanged(changed))
                if changed.state == TaskState::Pending
                    && matches!(changed.previous, Some(TaskState::Succeeded | TaskState::Failed | TaskState::Skipped)));
        if !is_reset {
            self.close_loop();
        }
        let Some(data) = data else { return };
        match data {
            EventData::SessionCreated(created) => {
                let name = &created.blueprint_id;
                self.blueprint = if name.is_empty() { created.name.clone() } else { name.clone() };
            }
            EventData::SessionStateChanged(changed) => {
                self.begun = true;
                let state = changed.state;
                self.running = state == SessionState::Running;
                self.ended = match state {
                    SessionState::Completed | SessionState::Failed | SessionState::Stopped => {
                        Some(Ended { state, at_ms: event.time_ms })
                    }
                    _ => None,
                };
            }
            EventData::TaskStateChanged(changed) => {
                let state = changed.state;
                let node = changed.node.clone();
                let i = self.task(&node);
                let task = &mut self.tasks[i];
                let was = task.state;
                task.state = state;
                if state == TaskState::Running && was != TaskState::Running {
                    task.since_ms = event.time_ms;
                    task.step = None;
                }
                if state == TaskState::Failed && was != TaskState::Failed {
                    let (attempt, error) = (task.attempt, task.error.clone());
                    self.notices.push(Notice::Failed { node, attempt, error });
                } else if is_reset {
                    self.reset(node, event.seq);
                }
            }
            EventData::AttemptStarted(started) => {
                let i = self.task(&started.node);
                let task = &mut self.tasks[i];
                task.attempt = started.attempt;
                task.since_ms = event.time_ms;
                task.step = None;
                task.error = None;
                if let Some(run) = run {
                    self.by_run.insert(run, i);
                }
            }
            EventData::AttemptSettled(settled) => {
                let i = self.task(&settled.node);
                if let Outcome::Failed { error, .. } | Outcome::Unknown { error } = &settled.outcome {
                    self.tasks[i].error = Some(format!("{}: {}", error.code, error.message));
                }
            }
            EventData::Progress(progress) => {
                let Some(&i) = run.as_ref().and_then(|r| self.by_run.get(r)) else { return };
                let name = progress.step.clone();
                self.tasks[i].step = Some(StepView { name, percentage: progress.percentage.map(u64::from) });
            }
            EventData::Notification(shown) => {
                let text_of_it = match &shown.values {
                    Some(values) => Value::Object(values.clone()).to_string(),
                    None => {
                        let level = shown.level.as_ref().and_then(Value::as_str).unwrap_or("");
                        let text = |t: &Option<String>| t.clone().unwrap_or_default();
                        format!("[{level}] {}: {}", text(&shown.title), text(&shown.message))
                    }
                };
                self.notices.push(Notice::Notification { node: shown.node.clone(), text: text_of_it });
            }
            EventData::PromptWaiting(prompt) => {
                self.notices.push(Notice::Prompt { node: prompt.node.clone(), message: prompt.message.clone() });
            }
            // Nothing of these is on the display.
            EventData::DataUpdated(_)
            | EventData::PromptAnswered(_)
            | EventData::SessionBlueprints(_)
            | EventData::BrokerDispatch(_)
            | EventData::LogCapped(_)
            | EventData::LogGrew(_)
            | EventData::RemoteLink(_) => {}
        }
    }

    /// A finished task went back to PENDING: a scope loops. The resets of one loop are
    /// consecutive events and make one notice, named after the first task reset.
    fn reset(&mut self, node: String, seq: u64) {
        match &mut self.open_loop {
            Some((Notice::Loop { reset, .. }, last)) if *last + 1 == seq => {
                *reset += 1;
                *last = seq;
            }
            _ => {
                self.close_loop();
                let pass = self.passes.entry(node.clone()).or_insert(1);
                *pass += 1;
                self.open_loop = Some((Notice::Loop { first: node, pass: *pass, reset: 1 }, seq));
            }
        }
    }
}

/// A duration for people: `42s`, `3m07s`, `2h05m`; with a tenth of a second under ten seconds
/// when `fine`.
pub fn duration(ms: i64, fine: bool) -> String {
    let ms = ms.max(0);
    let s = ms / 1000;
    if fine && s < 10 {
        format!("{}.{}s", s, (ms % 1000) / 100)
    } else if s < 60 {
        format!("{s}s")
    } else if s < 3600 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{}h{:02}m", s / 3600, (s % 3600) / 60)
    }
}

fn bar(done: usize, total: usize, cells: usize) -> String {
    let filled = (done.min(total) * cells).checked_div(total).unwrap_or(0);
    format!("[{}{}]", "#".repeat(filled), "-".repeat(cells - filled))
}

/// The block drawn at the bottom of the terminal: a header (blueprint, session, elapsed time),
/// the progress bar with the counts by state, then one line per running task, oldest first;
/// at most `size.height - 1` lines (the cursor waits on the line below), the running tasks
/// that do not fit summed up as `+N more running`.
pub fn block(state: &LiveState, now_ms: i64, size: Size) -> Vec<Line> {
    let counts = state.counts();
    let blueprint = if state.blueprint.is_empty() { "orrery run" } else { state.blueprint.as_str() };
    let mut header = Line::new().with(Tone::Bold, blueprint);
    if !state.session_id.is_empty() {
        header = header.plain(format!("  session {}", state.session_id));
    }
    header = header.plain(format!("  {}", duration(now_ms - state.started_ms, false)));
    // Every count is shown, the zero ones left out but for `running`, so that the line fits an
    // ordinary terminal.
    let cells = if size.width >= 100 { 20 } else { 10 };
    let mut totals = Line::new().with(Tone::Good, bar(counts.finished(), counts.total(), cells)).plain(format!(
        " {}/{}  {} running",
        counts.finished(),
        counts.total(),
        counts.running
    ));
    for (n, what, tone) in [
        (counts.succeeded, "succeeded", Tone::Plain),
        (counts.failed, "failed", Tone::Error),
        (counts.skipped, "skipped", Tone::Plain),
        (counts.pending, "pending", Tone::Plain),
    ] {
        if n > 0 {
            totals = totals.plain("  ").with(tone, format!("{n} {what}"));
        }
    }

    let room = size.height.saturating_sub(1);
    let mut lines: Vec<Line> = vec![header, totals];
    lines.truncate(room);
    let mut running: Vec<&TaskView> = state.tasks.iter().filter(|t| t.state == TaskState::Running).collect();
    running.sort_by_key(|t| t.since_ms);
    let slots = room.saturating_sub(lines.len());
    if running.is_empty() || slots == 0 {
        return lines;
    }
    let shown = if running.len() > slots { slots - 1 } else { running.len() };
    let key_width = running[..shown].iter().map(|t| t.node.chars().count()).max().unwrap_or(0).min(40);
    for t in &running[..shown] {
        let mut line =
            Line::new().plain(format!("  {:<key_width$}  {:>6}", t.node, duration(now_ms - t.since_ms, false)));
        if let Some(step) = &t.step {
            line = line.plain(format!("  {}", step.name));
            if let Some(p) = step.percentage {
                line = line.with(Tone::Bold, format!(" {p}%"));
            }
        }
        if t.attempt > 1 {
            line = line.with(Tone::Dim, format!("  attempt {}", t.attempt));
        }
        lines.push(line);
    }
    if shown < running.len() {
        lines.push(Line::new().with(Tone::Dim, format!("  +{} more running", running.len() - shown)));
    }
    lines
}

/// The lines that replace the block when the session ended (or the run ended without saying
/// how, after an error).
pub fn summary(state: &LiveState, now_ms: i64) -> Vec<Line> {
    let counts = state.counts();
    let (word, tone, at) = match state.ended {
        Some(Ended { state: SessionState::Completed, at_ms }) => ("completed", Tone::Good, at_ms),
        Some(Ended { state: SessionState::Failed, at_ms }) => ("failed", Tone::Error, at_ms),
        Some(Ended { state: SessionState::Stopped, at_ms }) => ("stopped", Tone::Warning, at_ms),
        _ => ("ended", Tone::Plain, now_ms),
    };
    let mut parts = Vec::new();
    for (n, what) in [
        (counts.succeeded, "succeeded"),
        (counts.failed, "failed"),
        (counts.skipped, "skipped"),
        (counts.running, "running"),
        (counts.pending, "not run"),
    ] {
        if n > 0 {
            parts.push(format!("{n} {what}"));
        }
    }
    let tasks = counts.total();
    vec![Line::new().plain("session    ").with(tone, word).plain(format!(
        " after {}: {tasks} task{}{}{}",
        duration(at - state.started_ms, true),
        if tasks == 1 { "" } else { "s" },
        if parts.is_empty() { "" } else { ", " },
        parts.join(", ")
    ))]
}

/// The terminal output of the display: what it drew last, to erase and redraw it.
pub struct Screen<W: Write> {
    out: W,
    colour: bool,
    /// Lines of the block on the terminal, the cursor on the line below them.
    drawn: usize,
    shown: Vec<String>,
    /// A write failed (a closed terminal): nothing more is written.
    broken: bool,
}

impl<W: Write> Screen<W> {
    pub fn new(out: W, colour: bool) -> Screen<W> {
        Screen { out, colour, drawn: 0, shown: Vec::new(), broken: false }
    }

    /// Erases the block, prints `above` for good, and draws `block` truncated to `width`; one
    /// write. Writes nothing when there is nothing new.
    pub fn draw(&mut self, above: &[Line], block: &[Line], width: usize) {
        let block: Vec<String> = block.iter().map(|l| l.paint(Some(width), self.colour)).collect();
        if self.broken || (above.is_empty() && block == self.shown) {
            return;
        }
        let mut text = String::from("\r");
        if self.drawn > 0 {
            text.push_str(&format!("\x1b[{}A", self.drawn));
        }
        text.push_str("\x1b[J");
        for line in above {
            text.push_str(&line.paint(None, self.colour));
            text.push('\n');
        }
        for line in &block {
            text.push_str(line);
            text.push('\n');
        }
        if self.out.write_all(text.as_bytes()).and_then(|()| self.out.flush()).is_err() {
            self.broken = true;
        }
        self.drawn = block.len();
        self.shown = block;
    }

    /// Erases the block (to ask a question, or at the end), printing `above` for good.
    pub fn clear(&mut self, above: &[Line]) {
        self.draw(above, &[], 0);
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

/// Reads from the store what a resume does not announce; a store that cannot be read leaves
/// the display with what the events say.
async fn seed_from_store(state: &mut LiveState, api: &Api, session_id: &str, overwrite: bool) {
    let Ok(envelope) = api.call("get_session", serde_json::json!({ "session_id": session_id })).await else { return };
    let Ok(view) = serde_json::from_value::<SessionView>(envelope.answer) else { return };
    state.seed(&view.session.blueprint_id, view.tasks.into_iter().map(|n| (n.node, n.state)), overwrite);
}

/// Shows the session's events live on the terminal until the event channel closes, then
/// replaces the block with the summary. `notes` are messages to print above the block;
/// prompts are asked on the terminal when `interactive`.
pub async fn follow(
    mut events: broadcast::Receiver<Event>,
    mut notes: mpsc::UnboundedReceiver<String>,
    control: SessionControl,
    interactive: bool,
    api: Api,
) {
    let mut state = LiveState::new(now_ms());
    let mut screen = Screen::new(std::io::stdout(), crate::commands::colour(true));
    let mut ticker = tokio::time::interval(Duration::from_millis(100));
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut notes_open = true;
    loop {
        tokio::select! {
            event = events.recv() => match event {
                Ok(event) => {
                    if state.needs_seed(&event) {
                        seed_from_store(&mut state, &api, &event.session_id, false).await;
                    }
                    state.apply(&event);
                    if interactive && matches!(event.data(), Some(EventData::PromptWaiting(_))) {
                        // The question asked is the line kept: no `prompt` notice besides it.
                        let mut notices = state.take_notices();
                        notices.retain(|n| !matches!(n, Notice::Prompt { .. }));
                        screen.clear(&notices.iter().map(Notice::line).collect::<Vec<_>>());
                        ask(&event, &control).await;
                    }
                }
                // Events were missed (the display waited for an answer): the store has them.
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    let id = state.session_id.clone();
                    if !id.is_empty() {
                        seed_from_store(&mut state, &api, &id, true).await;
                    }
                }
                Err(broadcast::error::RecvError::Closed) => break,
            },
            note = notes.recv(), if notes_open => match note {
                Some(note) => state.notices.push(Notice::Said(note)),
                None => notes_open = false,
            },
            // Nothing is drawn before the tasks are known.
            _ = ticker.tick(), if state.begun => {
                let size = terminal_size();
                let above: Vec<Line> = state.take_notices().iter().map(Notice::line).collect();
                screen.draw(&above, &block(&state, now_ms(), size), size.width);
            }
        }
    }
    while let Ok(note) = notes.try_recv() {
        state.notices.push(Notice::Said(note));
    }
    state.finish();
    let mut above: Vec<Line> = state.take_notices().iter().map(Notice::line).collect();
    above.extend(summary(&state, now_ms()));
    screen.clear(&above);
}

#[cfg(test)]
mod tests {
    use super::*;
    use orrery_api::{
        AttemptSettled, AttemptStarted, EventPayload, NotificationShown, ProgressChanged, PromptWaiting,
        SessionCreated, SessionStateChanged, StepState, TaskStateChanged,
    };
    use serde_json::{json, Map};

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
                payload: EventPayload::Whole(data),
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
            let started = AttemptStarted { node: node.into(), attempt, agent: "shell.run".into(), log_path: None };
            self.event(at, Some(run), EventData::AttemptStarted(started))
        }

        fn succeed(&mut self, at: i64, node: &str, run: &str) -> &mut Session {
            let outcome = Outcome::Succeeded { exit_code: Some(0), outputs: json!({}) };
            self.event(at, Some(run), EventData::AttemptSettled(AttemptSettled { node: node.into(), outcome }));
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
        let error = orrery_api::ErrorRecord {
            code: "TOOL_FAILURE".into(),
            message: "the process exited with code 3".into(),
            details: None,
        };
        let outcome = Outcome::Failed { exit_code: Some(3), error };
        s.event(70, Some("r4"), EventData::AttemptSettled(AttemptSettled { node: "bp.boom".into(), outcome }));
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
        let notices: Vec<String> = s.state.take_notices().iter().map(|n| n.line().paint(None, false)).collect();
        assert_eq!(notices, ["notify     bp.hello [info] Hello: about to ask", "prompt     bp.ask Go on?"]);
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
            payload: EventPayload::Whole(session_state(SessionState::Running)),
        };
        assert!(state.needs_seed(&resumed), "a resume does not start with session_created");
        state.apply(&resumed);
        assert!(!state.needs_seed(&resumed), "seeded once");
        let running = Event {
            seq: 41,
            global_seq: 41,
            payload: EventPayload::Whole(task_state("bp.b", "RUNNING", Some("PENDING"))),
            ..resumed
        };
        state.apply(&running);
        state.seed("bp", [("bp.a".to_string(), TaskState::Succeeded), ("bp.b".to_string(), TaskState::Pending)], false);
        assert_eq!(state.counts(), Counts { pending: 0, running: 1, succeeded: 1, failed: 0, skipped: 0 });
        assert_eq!(texts(&block(&state, T0, WIDE), None)[0], "bp  session s-1  0s");
    }

    #[test]
    fn the_screen_redraws_the_block_in_place_and_only_when_it_changed() {
        let mut screen = Screen::new(Vec::new(), false);
        let block = |n: u32| vec![Line::new().plain("header"), Line::new().plain(format!("  task {n}"))];
        screen.draw(&[], &block(1), 80);
        screen.draw(&[], &block(1), 80);
        screen.draw(&[Line::new().plain("FAILED     bp.x")], &block(2), 80);
        screen.clear(&[Line::new().plain("session    failed")]);
        let written = String::from_utf8(screen.out.clone()).unwrap();
        assert_eq!(
            written,
            concat!(
                "\r\x1b[Jheader\n  task 1\n",
                "\r\x1b[2A\x1b[JFAILED     bp.x\nheader\n  task 2\n",
                "\r\x1b[2A\x1b[Jsession    failed\n",
            ),
            "an unchanged frame is not written; the permanent line goes above the block"
        );
        assert_eq!(screen.drawn, 0, "the cursor is left on a clean line");
    }

    struct Closed;

    impl Write for Closed {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::Error::from(std::io::ErrorKind::BrokenPipe))
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_closed_terminal_stops_the_drawing_without_a_panic() {
        let mut screen = Screen::new(Closed, true);
        screen.draw(&[Line::new().plain("kept")], &[Line::new().plain("block")], 0);
        assert!(screen.broken);
        screen.clear(&[Line::new().plain("summary")]);
    }
}
