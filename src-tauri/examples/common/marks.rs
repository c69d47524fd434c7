//! The page's timing marks (`ui/src/timing.ts`) as the window benchmarks read them. Included by
//! `#[path]`, beside `driver.rs` (as `driver`).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fantoccini::Client;
use serde_json::Value;

/// How long a blueprint may take to open.
pub const OPEN_PATIENCE: Duration = Duration::from_secs(180);

/// The marks by name, in ms since the page started, and the page's start in ms since the epoch.
const MARKS: &str = r#"
const marks = {};
for (const m of performance.getEntriesByType('mark')) if (m.name.startsWith('orrery:')) marks[m.name.slice(7)] = { at: m.startTime, detail: m.detail };
return { origin: performance.timeOrigin, marks };
"#;

pub fn epoch_ms() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs_f64() * 1000.0
}

/// The page's start and its marks, once `name` is among them.
pub async fn wait_for_mark(client: &Client, name: &str) -> (f64, Value) {
    crate::driver::poll_until(&format!("the mark orrery:{name}"), OPEN_PATIENCE, Duration::from_millis(20), || async {
        let found = client.execute(MARKS, vec![]).await.ok()?;
        found["marks"].get(name)?;
        Some((found["origin"].as_f64()?, found["marks"].clone()))
    })
    .await
}
