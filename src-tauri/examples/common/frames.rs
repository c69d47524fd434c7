//! Frame times in the page, as the window benchmarks record them: the time between animation
//! frames while a gesture lasts (a pointer button down, or `RECORD_ON` for a gesture without a
//! pointer or for the idle floor). Included by `#[path]`.

use fantoccini::Client;
use serde_json::Value;

/// Frames recorded per gesture kind at least, as the issues ask.
pub const MIN_FRAMES: usize = 300;

/// Records the time between animation frames while a pointer button is down (the gesture), so
/// that the frames between two gestures do not dilute the figures; a recorder started before
/// stops.
pub const RECORD_FRAMES: &str = r#"
if (window.__orreryFrames) window.__orreryFrames.running = false;
const state = { deltas: [], down: false, last: null, running: true };
window.__orreryFrames = state;
addEventListener('pointerdown', () => { if (state.running) { state.down = true; state.last = null; } }, true);
addEventListener('pointerup', () => { state.down = false; }, true);
const tick = (t) => {
  if (state.down) { if (state.last !== null) state.deltas.push(t - state.last); state.last = t; }
  if (state.running) requestAnimationFrame(tick);
};
requestAnimationFrame(tick);
"#;
pub const STOP_FRAMES: &str =
    "const s = window.__orreryFrames; s.running = false; s.down = false; return s.deltas.splice(0);";
const FRAMES_SO_FAR: &str = "return window.__orreryFrames.deltas.length;";
/// Records as during a gesture with no pointer down: nothing moving (the floor the window's
/// frame pacing sets, under Xvfb and software rendering), or a wheel.
pub const RECORD_ON: &str = "window.__orreryFrames.down = true; window.__orreryFrames.last = null;";

/// Two frames later: the page has painted and its main thread answers.
pub const TWO_FRAMES: &str =
    "const done = arguments[0]; requestAnimationFrame(() => requestAnimationFrame(() => done(performance.now())));";

/// Frame times over gestures repeated until at least [`MIN_FRAMES`] frames were recorded.
pub async fn frames_during<F, Fut>(client: &Client, gesture: F) -> Vec<f64>
where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = Result<(), String>>,
{
    client.execute(RECORD_FRAMES, vec![]).await.unwrap();
    let mut step = 0;
    while client.execute(FRAMES_SO_FAR, vec![]).await.unwrap().as_u64().unwrap() < MIN_FRAMES as u64 {
        if let Err(e) = gesture(step).await {
            // WebKitWebDriver gives up on actions the page is too slow to take: report the
            // frames recorded until then rather than nothing.
            eprintln!("gesture {step} failed ({e}); keeping the frames recorded so far");
            let _ = client.release_actions().await;
            break;
        }
        step += 1;
        assert!(step < 50, "fewer than {MIN_FRAMES} frames after 50 gestures");
    }
    numbers(&client.execute(STOP_FRAMES, vec![]).await.unwrap())
}

/// The numbers of a JSON array.
pub fn numbers(v: &Value) -> Vec<f64> {
    v.as_array().map(|a| a.iter().filter_map(Value::as_f64).collect()).unwrap_or_default()
}
