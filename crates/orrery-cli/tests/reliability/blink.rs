//! A session that ends in a blink: `orrery run` of start -> end sometimes answered "session …
//! ended before it was seen" (exit 2), when the runner's end and its first event were ready at
//! once and the end was picked. Each of many runs must end with its session completed.

use crate::nesting::{orrery, Scratch};
use serde_json::json;

#[test]
fn a_session_that_ends_at_once_is_still_seen() {
    let s = Scratch::new("blink");
    let bp = json!({"version": "1.0", "id": "blink", "name": "blink", "tasks": [
        {"id": "start", "type": "system.start"},
        {"id": "end", "type": "system.end", "depends_on": [{"id": "start"}]}]});
    std::fs::write(s.0.join("blink.json"), bp.to_string()).unwrap();
    // Eight at a time, each on its own store: a loaded machine is where the two met.
    let dir = &s.0;
    std::thread::scope(|scope| {
        for worker in 0..8 {
            scope.spawn(move || {
                let db = dir.join(format!("store-{worker}.db"));
                for run in 0..25 {
                    let (code, _, err, _) = orrery(dir, &["run", "--db", db.to_str().unwrap(), "blink.json"]);
                    assert_eq!(code, Some(0), "worker {worker}, run {run}: {err}");
                }
            });
        }
    });
}
