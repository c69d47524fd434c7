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

/// Milliseconds since the epoch as ISO 8601 UTC: `2026-10-02T00:00:00Z`, with `.mmm` when the
/// milliseconds are not 0; `zone` `"+00:00"` writes that instead of `Z`.
pub fn iso_8601(ms: i64, zone: &str) -> String {
    let (secs, millis) = (ms.div_euclid(1000), ms.rem_euclid(1000));
    let (days, rest) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Days since 1970-01-01 to a civil date (the proleptic Gregorian calendar).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let fraction = if millis == 0 { String::new() } else { format!(".{millis:03}") };
    format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}{fraction}{zone}", rest / 3600, rest % 3600 / 60, rest % 60)
}
