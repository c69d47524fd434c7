//! Time and identity are passed in, so tests and replays are deterministic (STYLE.md, rule 5).

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

/// Wall-clock time in milliseconds since the Unix epoch.
pub trait Clock: Send + Sync {
    fn now_ms(&self) -> i64;
}

/// Fresh identifiers for sessions and attempts.
pub trait IdSource: Send + Sync {
    fn session_id(&self) -> String;
    fn run_id(&self) -> String;
}

/// The real clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
    }
}

/// UUID v7: random yet time-ordered, so ids sort by creation and index well.
#[derive(Debug, Default, Clone, Copy)]
pub struct UuidV7Ids;

impl IdSource for UuidV7Ids {
    fn session_id(&self) -> String {
        uuid::Uuid::now_v7().to_string()
    }
    fn run_id(&self) -> String {
        uuid::Uuid::now_v7().to_string()
    }
}

/// A clock that moves only when told to; for tests and replays.
#[derive(Debug, Default)]
pub struct ManualClock(AtomicI64);

impl ManualClock {
    pub fn new(start_ms: i64) -> Self {
        ManualClock(AtomicI64::new(start_ms))
    }
    pub fn advance(&self, ms: i64) {
        self.0.fetch_add(ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}

/// `session-1`, `session-2`, ... and `run-1`, `run-2`, ...; for tests.
#[derive(Debug, Default)]
pub struct SequentialIds {
    sessions: AtomicU64,
    runs: AtomicU64,
}

impl IdSource for SequentialIds {
    fn session_id(&self) -> String {
        format!("session-{}", self.sessions.fetch_add(1, Ordering::SeqCst) + 1)
    }
    fn run_id(&self) -> String {
        format!("run-{}", self.runs.fetch_add(1, Ordering::SeqCst) + 1)
    }
}
