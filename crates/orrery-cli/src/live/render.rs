//! The rendering of the display: [`block`], [`summary`] and [`Notice::line`] turn the state into
//! [`Line`]s, pure functions of the state, the time and the terminal [`Size`], so they are
//! tested without a terminal.

use super::state::{Ended, LiveState, Notice, TaskView};
use orrery_blueprint::{SessionState, TaskState};
use unicode_width::UnicodeWidthChar;

/// The terminal's size in character cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Size {
    pub width: usize,
    pub height: usize,
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
    pub(super) fn new() -> Line {
        Line(Vec::new())
    }

    pub(super) fn with(mut self, tone: Tone, text: impl Into<String>) -> Line {
        self.0.push((tone, text.into()));
        self
    }

    pub(super) fn plain(self, text: impl Into<String>) -> Line {
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
            Notice::Held { node, at, session } => Line::new()
                .with(Tone::Warning, "held")
                .plain(format!("       {node} ({at}): orrery continue {session} [--step | --skip]")),
            Notice::Loop { first, pass, reset } => Line::new().with(Tone::Info, "loop").plain(format!(
                "       {first} again, pass {pass} ({reset} task{} reset)",
                if *reset == 1 { "" } else { "s" }
            )),
            Notice::Said(text) => Line::new().with(Tone::Warning, text.clone()),
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
