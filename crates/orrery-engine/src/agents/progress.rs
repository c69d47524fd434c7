//! Following the progress file of a running process: the JSON lines it appends to the file
//! named by `ORRERY_PROGRESS`, `{"step": NAME, "state": "in_progress"|"done", "percentage": 0-100}`.
//!
//! Rules this module owns:
//! - Only complete lines (ending in `\n`) are read while the process runs; the offset is kept
//!   between polls, so every line is read once and in order. After the process has exited,
//!   [`ProgressFollower::finish`] takes a last line without its newline too: nothing can
//!   complete it any more.
//! - A line that is not a valid report becomes a [`ProgressEvent::Warning`] and is skipped: a
//!   process's bad progress line never fails its task. Blank lines are ignored silently.
//! - `percentage` may be any number from 0 to 100; a fraction is rounded down (the store keeps
//!   whole percents). Unknown keys are ignored, so a process may add a message of its own.
//! - A line longer than [`MAX_LINE`] is reported and dropped without being held in memory.
//! - A file that shrinks (truncated or replaced) is reported and read again from its start.
//!
//! What the reports then mean (at most one step in progress, percentages never going back, all
//! done on success) is the store's rule (`orrery_store::progress`), applied by the runner.
//! [`ProgressLine`] has the wire shape of the store's `ProgressReport`.

use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use serde_json::Value;

/// The longest progress line taken, in bytes.
pub const MAX_LINE: usize = 64 * 1024;

/// A step's state as a process may report it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepState {
    InProgress,
    Done,
}

impl StepState {
    pub fn as_str(self) -> &'static str {
        match self {
            StepState::InProgress => "in_progress",
            StepState::Done => "done",
        }
    }
}

/// One valid progress line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProgressLine {
    pub step: String,
    pub state: StepState,
    pub percentage: Option<u8>,
}

/// What the progress callback receives, in the order of the file's lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProgressEvent {
    Report(ProgressLine),
    /// A line was skipped (or the file could not be followed); the task goes on.
    Warning(ProgressWarning),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProgressWarning {
    /// 1-based line number in the progress file, when the warning is about a line.
    pub line: Option<u64>,
    /// What is wrong, naming the file.
    pub message: String,
}

/// Parses one line (without its newline).
pub fn parse_line(text: &str) -> Result<ProgressLine, String> {
    let value: Value = orrery_blueprint::json::from_str(text).map_err(|e| format!("not JSON ({e})"))?;
    let Value::Object(object) = value else {
        return Err("not a JSON object".into());
    };
    let step = match object.get("step") {
        Some(Value::String(step)) if !step.is_empty() => step.clone(),
        Some(Value::String(_)) => return Err("\"step\" is empty".into()),
        Some(other) => return Err(format!("\"step\" must be a string, found {other}")),
        None => return Err("\"step\" is missing".into()),
    };
    let state = match object.get("state").and_then(Value::as_str) {
        Some("in_progress") => StepState::InProgress,
        Some("done") => StepState::Done,
        _ => {
            return Err(format!(
                "\"state\" must be \"in_progress\" or \"done\", found {}",
                object.get("state").map_or_else(|| "nothing".to_string(), Value::to_string)
            ))
        }
    };
    let percentage = match object.get("percentage") {
        None | Some(Value::Null) => None,
        Some(value) => match value.as_f64() {
            Some(p) if (0.0..=100.0).contains(&p) => Some(p.floor() as u8),
            _ => return Err(format!("\"percentage\" must be a number from 0 to 100, found {value}")),
        },
    };
    Ok(ProgressLine { step, state, percentage })
}

/// Reads a progress file incrementally. It need not exist yet.
#[derive(Debug)]
pub struct ProgressFollower {
    path: PathBuf,
    offset: u64,
    /// The bytes of a line whose newline has not been read yet.
    partial: Vec<u8>,
    /// The current line passed [`MAX_LINE`]: its bytes are dropped until its newline.
    overlong: bool,
    /// Lines completed so far (the number of the next one is this + 1).
    lines: u64,
    /// A read error already reported, so that a persisting one is reported once.
    reported_error: bool,
}

impl ProgressFollower {
    pub fn new(path: impl Into<PathBuf>) -> Self {
        ProgressFollower {
            path: path.into(),
            offset: 0,
            partial: Vec::new(),
            overlong: false,
            lines: 0,
            reported_error: false,
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads what was appended since the last call and reports every complete line.
    pub fn poll(&mut self, on_event: &mut dyn FnMut(ProgressEvent)) {
        let mut appended = Vec::new();
        match self.read_appended(&mut appended) {
            Ok(shrunk) => {
                if shrunk {
                    self.warn(None, "shrank while being followed; reading it again from its start".into(), on_event);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => return,
            Err(e) => {
                if !self.reported_error {
                    self.reported_error = true;
                    self.warn(None, format!("cannot be read: {e}"), on_event);
                }
                return;
            }
        }
        let mut rest = &appended[..];
        while let Some(end) = rest.iter().position(|&b| b == b'\n') {
            self.take_bytes(&rest[..end]);
            self.end_line(on_event);
            rest = &rest[end + 1..];
        }
        self.take_bytes(rest);
    }

    /// The last read, once the process has exited: also takes a final line without newline.
    pub fn finish(&mut self, on_event: &mut dyn FnMut(ProgressEvent)) {
        self.poll(on_event);
        if !self.partial.is_empty() || self.overlong {
            self.end_line(on_event);
        }
    }

    /// Appends the bytes past the offset to `out`; true when the file had shrunk below it.
    fn read_appended(&mut self, out: &mut Vec<u8>) -> io::Result<bool> {
        // A regular file only (a FIFO there would block the open).
        let mut file = orrery_blueprint::fsio::open_regular_file(&self.path)?;
        let len = file.metadata()?.len();
        let shrunk = len < self.offset;
        if shrunk {
            self.offset = 0;
            self.partial.clear();
            self.overlong = false;
        }
        if len == self.offset {
            return Ok(shrunk);
        }
        file.seek(SeekFrom::Start(self.offset))?;
        // Only up to the length seen: bytes appended meanwhile are for the next poll.
        let read = file.take(len - self.offset).read_to_end(out)?;
        self.offset += read as u64;
        Ok(shrunk)
    }

    fn take_bytes(&mut self, bytes: &[u8]) {
        if self.overlong {
            return;
        }
        if self.partial.len() + bytes.len() > MAX_LINE {
            self.overlong = true;
            self.partial = Vec::new();
        } else {
            self.partial.extend_from_slice(bytes);
        }
    }

    fn end_line(&mut self, on_event: &mut dyn FnMut(ProgressEvent)) {
        self.lines += 1;
        let line = self.lines;
        let bytes = std::mem::take(&mut self.partial);
        if std::mem::replace(&mut self.overlong, false) {
            self.warn(Some(line), format!("line {line} is longer than {MAX_LINE} bytes; skipped"), on_event);
            return;
        }
        let text = match std::str::from_utf8(&bytes) {
            Ok(text) => text.trim(),
            Err(_) => {
                self.warn(Some(line), format!("line {line} is not UTF-8; skipped"), on_event);
                return;
            }
        };
        if text.is_empty() {
            return;
        }
        match parse_line(text) {
            Ok(report) => on_event(ProgressEvent::Report(report)),
            Err(reason) => self.warn(Some(line), format!("line {line} skipped: {reason}"), on_event),
        }
    }

    fn warn(&self, line: Option<u64>, what: String, on_event: &mut dyn FnMut(ProgressEvent)) {
        on_event(ProgressEvent::Warning(ProgressWarning {
            line,
            message: format!("progress file {}: {what}", self.path.display()),
        }));
    }
}
