//! The runs view measured in the real window (issue 6): the timeline of a stored session of many
//! attempts (how long it and the run's graph take to show, and its frame times while panning), how
//! long a line a running task writes takes to show in the log viewer, and a 100 MB log.
//!
//!   bench_runs --app target/release/orrery-desktop --cli target/release/orrery \
//!       --out target/bench/runs.md [--shots target/e2e] [--dir target/bench/runs] [--lines 300] \
//!       BASELINE_TASKS OTHER_TASKS...
//!
//! For each task count it writes a blueprint of that many instant tasks (`system.sleep` of 0 s,
//! in 10 parallel chains between `system.start` and `system.end`: the sleep is the task type that
//! runs without a process), runs it to completion with the CLI into a fresh store, then starts
//! the app on that store, opens the run from the list and measures: the click on the run to the
//! first frame whose timeline has bars, the frame times with nothing moving (the floor), while
//! dragging the timeline's canvas (a pan in time and rows), while Shift+wheel pans it in time, and
//! while time travel's scrubber is dragged across the run.
//! The first count is the baseline: the table gives each other one's ratio to it.
//!
//! Then the log: a blueprint of one `shell.run` task writing `line N <epoch ms>` every 30 ms is
//! launched from the app (only the app's own runs send log growth), its card clicked while it
//! runs, and inside the page every animation frame reads the log viewer's rendered lines: the
//! first frame a line is in the DOM, minus the time written in it, is its latency.
//!
//! Last, a log of 100 MB (a task run by the CLI): the click on its task to the viewer showing
//! its tail, and scrolling to the top window after window, each time to the earlier window shown.
//!
//! Run through `scripts/bench_runs.sh`; built only with the `bench-editor` feature, so never by
//! `cargo test`. Measured figures only: nothing here asserts a time.

#[path = "../tests/desktop/driver.rs"]
mod driver;
#[path = "common/frames.rs"]
mod frames;
#[path = "common/table.rs"]
mod table;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use fantoccini::actions::{
    InputSource, KeyAction, KeyActions, MouseActions, PointerAction, WheelAction, WheelActions, MOUSE_BUTTON_LEFT,
};
use fantoccini::key::Key;
use fantoccini::{Client, Locator};
use serde_json::{json, Value};

use driver::{connect, screenshot, start_tauri_driver, start_xvfb, Stopped};
use frames::{frames_during, numbers, RECORD_FRAMES, RECORD_ON, STOP_FRAMES, TWO_FRAMES};
use table::{max, quantile, under_a_frame};

/// How long a large run may take to appear before the benchmark is declared failed.
const OPEN_PATIENCE: Duration = Duration::from_secs(300);
/// Parallel chains of the timeline's blueprint.
const LANES: usize = 10;
/// How long the idle frames are recorded.
const IDLE: Duration = Duration::from_secs(5);
/// The pixels of one Shift+wheel step: 24 of them pan the time by 120 px, as a drag does, so
/// that the bars stay in view (the view is about 400 px wide).
const WHEEL_PX: i64 = 5;
/// The log task's id.
const TALKER: &str = "talk";
/// Ends a gesture without a pointer (a wheel), which `RECORD_ON` began.
const RECORD_OFF: &str = "window.__orreryFrames.down = false;";

/// Watches the opening of a run: the click on a run in the list, every frame until the timeline
/// has bars, the moment its `data-bars` first turns positive (set by its draw, inside a frame)
/// and the start of the frame after it (that frame painted); then every frame until the run's
/// graph is drawn (the overview's `data-tasks` > 0, or a task card), the longest of those frames.
const WATCH_OPEN: &str = r#"
const w = { clickAt: null, drawnAt: null, paintedAt: null, bars: 0, longest: 0, frames: 0, last: null,
  graphAt: null, graphLongest: 0 };
window.__orreryOpen = w;
addEventListener('click', (e) => {
  if (w.clickAt === null && e.target.closest && e.target.closest('[data-testid=run-item]')) w.clickAt = performance.now();
}, true);
new MutationObserver(() => {
  if (w.drawnAt !== null) return;
  const t = document.querySelector('[data-testid=timeline]');
  const bars = t ? Number(t.dataset.bars || 0) : 0;
  if (bars > 0) {
    w.drawnAt = performance.now();
    w.bars = bars;
    requestAnimationFrame((f) => { w.paintedAt = f; });
  }
}).observe(document.body, { subtree: true, attributes: true, attributeFilter: ['data-bars'] });
const graphDrawn = () => {
  const overview = document.querySelector('.run-graph [data-testid=overview]');
  return (overview && Number(overview.dataset.tasks || 0) > 0) || document.querySelector('.run-graph .react-flow__node') !== null;
};
const tick = (t) => {
  if (w.paintedAt === null) {
    if (w.clickAt !== null && w.last !== null) { w.longest = Math.max(w.longest, t - w.last); w.frames++; }
  } else if (w.last !== null) w.graphLongest = Math.max(w.graphLongest, t - w.last);
  w.last = t;
  if (w.paintedAt !== null && graphDrawn()) w.graphAt = t;
  if (w.graphAt === null) requestAnimationFrame(tick);
};
requestAnimationFrame(tick);
"#;

/// Every animation frame, reads the log viewer's rendered lines; the first frame a line
/// `line N <epoch ms>` is in the DOM gives its latency (Date.now() minus the time written, both
/// the wall clock). Lines written before `since` (the recorder's start) are counted apart.
const WATCH_LOG: &str = r#"
const since = Date.now();
const w = { since, seen: {}, before: 0, running: true, frames: 0 };
window.__orreryLog = w;
const pattern = /^line (\d+) (\d+)$/;
const tick = () => {
  const now = Date.now();
  w.frames++;
  const view = document.querySelector('[data-testid=log-view]');
  if (view) for (const el of view.querySelectorAll('.log-line')) {
    const m = pattern.exec((el.textContent || '').trim());
    if (!m || m[1] in w.seen) continue;
    const written = Number(m[2]);
    w.seen[m[1]] = written < since ? null : now - written;
    if (written < since) w.before++;
  }
  if (w.running) requestAnimationFrame(tick);
};
requestAnimationFrame(tick);
"#;
const STOP_LOG: &str =
    "const w = window.__orreryLog; w.running = false; return { seen: w.seen, before: w.before, frames: w.frames };";

/// The big log's task id and size.
const BIG: &str = "big";
const BIG_LOG_BYTES: u64 = 100_000_000;
/// How many earlier windows the benchmark loads by scrolling the big log to its top.
const EARLIER_LOADS: usize = 10;

/// Watches the opening of the big log: the click on its task's card, every frame until the
/// viewer holds lines, the longest of those frames.
const WATCH_BIG_OPEN: &str = r#"
const w = { clickAt: null, shownAt: null, longest: 0, last: null };
window.__orreryBig = w;
addEventListener('click', (e) => {
  if (w.clickAt === null && e.target.closest && e.target.closest('[data-testid=task-node]')) w.clickAt = performance.now();
}, true);
const tick = (t) => {
  if (w.clickAt !== null && w.last !== null) w.longest = Math.max(w.longest, t - w.last);
  w.last = t;
  const view = document.querySelector('[data-testid=log-view]');
  if (w.clickAt !== null && view && Number(view.dataset.lines) > 0) w.shownAt = t;
  if (w.shownAt === null) requestAnimationFrame(tick);
};
requestAnimationFrame(tick);
"#;

/// Scrolls the big log to its top `arguments[0]` times, each time waiting for the earlier window
/// to be held (the view's `data-start` going down) and the frame after; the time of each and the
/// longest frame meanwhile.
const LOAD_EARLIER: &str = r#"
const [loads, done] = [arguments[0], arguments[arguments.length - 1]];
const view = document.querySelector('[data-testid=log-view]');
const scroller = view.querySelector('.log-scroll');
const frame = () => new Promise((resolve) => requestAnimationFrame(resolve));
const out = { times: [], longest: 0 };
let last = null, running = true;
const tick = (t) => { if (last !== null) out.longest = Math.max(out.longest, t - last); last = t; if (running) requestAnimationFrame(tick); };
requestAnimationFrame(tick);
(async () => {
  for (let i = 0; i < loads; i++) {
    const start = Number(view.dataset.start);
    const t0 = performance.now();
    scroller.scrollTop = 0;
    scroller.dispatchEvent(new Event('scroll'));
    while (Number(view.dataset.start) === start && performance.now() - t0 < 10000) await frame();
    await frame();
    out.times.push(performance.now() - t0);
  }
  running = false;
  Object.assign(out, { start: Number(view.dataset.start), end: Number(view.dataset.end), lines: Number(view.dataset.lines) });
  done(out);
})();
"#;

#[derive(Default)]
struct Timeline {
    tasks: usize,
    /// Attempts of the stored session (from the timeline's summary).
    attempts: usize,
    /// The CLI's run of the blueprint, for the record.
    cli_run_ms: f64,
    /// Click on the run → `data-bars` > 0 (the draw, inside a frame), → the next frame's start.
    to_drawn_ms: f64,
    to_painted_ms: f64,
    /// The longest frame between the click and the bars, and how many frames there were.
    open_longest_frame_ms: f64,
    open_frames: usize,
    bars: usize,
    /// Click on the run → the first frame with its graph drawn; the longest frame from the
    /// timeline painted to then (the graph being made blocks the page that long).
    to_graph_ms: f64,
    graph_longest_frame_ms: f64,
    idle: Vec<f64>,
    drag: Vec<f64>,
    wheel: Vec<f64>,
    /// How the Shift+wheel was given: WebDriver wheel actions, or events made in the page.
    wheel_how: String,
    /// Frames while time travel's scrubber is dragged.
    scrub: Vec<f64>,
}

#[derive(Default)]
struct LogLatency {
    written: usize,
    /// Latencies of the lines written after the recorder started.
    latencies: Vec<f64>,
    /// Lines seen that were written before the recorder started (not in the figures).
    before: usize,
    frames: usize,
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (mut app, mut cli, mut out, mut shots, mut dir) = (None, None, None, None, None);
    let mut lines = 300usize;
    let mut sizes = Vec::new();
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--app" => app = it.next().map(PathBuf::from),
            "--cli" => cli = it.next().map(PathBuf::from),
            "--out" => out = it.next().map(PathBuf::from),
            "--shots" => shots = it.next().map(PathBuf::from),
            "--dir" => dir = it.next().map(PathBuf::from),
            "--lines" => lines = it.next().and_then(|n| n.parse().ok()).expect("--lines N"),
            _ => sizes.push(a.parse::<usize>().unwrap_or_else(|_| panic!("not a task count: {a}"))),
        }
    }
    let usage = "usage: bench_runs --app APP --cli ORRERY --out TABLE.md [--shots DIR] [--dir WORK] [--lines N] BASELINE_TASKS OTHER_TASKS...";
    let (Some(app), Some(cli), Some(out)) = (app, cli, out) else { panic!("{usage}") };
    assert!(!sizes.is_empty(), "{usage}");
    let canonical = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|e| panic!("no {}: {e}", p.display()));
    let (app, cli) = (canonical(&app), canonical(&cli));
    let work = dir.unwrap_or_else(|| PathBuf::from("target/bench/runs"));
    std::fs::create_dir_all(&work).unwrap();
    if let Some(shots) = &shots {
        std::fs::create_dir_all(shots).unwrap();
    }

    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let logs = tempfile::tempdir().unwrap();
    let (_xvfb, display) = start_xvfb(&logs.path().join("xvfb.log"));
    let mut all = Vec::new();
    for &tasks in &sizes {
        eprintln!("bench_runs: timeline of {tasks} tasks");
        let store = tempfile::tempdir().unwrap();
        let blueprint = work.join(format!("timeline_{tasks}.json"));
        std::fs::write(&blueprint, serde_json::to_string_pretty(&timeline_blueprint(tasks)).unwrap()).unwrap();
        let cli_run_ms = run_with_cli(&cli, &blueprint, &store.path().join("orrery.db"));
        let mut figures =
            runtime.block_on(measure_timeline(&app, store.path(), &display, logs.path(), shots.as_deref(), tasks));
        figures.cli_run_ms = cli_run_ms;
        eprintln!("bench_runs: {}", summary(&figures));
        all.push(figures);
    }
    eprintln!("bench_runs: log latency, {lines} lines");
    let store = tempfile::tempdir().unwrap();
    let blueprint = store.path().join("log_latency.json");
    std::fs::write(&blueprint, serde_json::to_string_pretty(&log_blueprint(lines)).unwrap()).unwrap();
    let log =
        runtime.block_on(measure_log(&app, store.path(), &blueprint, &display, logs.path(), shots.as_deref(), lines));

    eprintln!("bench_runs: a log of {BIG_LOG_BYTES} bytes");
    let store = tempfile::tempdir().unwrap();
    let blueprint = store.path().join("big_log.json");
    std::fs::write(&blueprint, serde_json::to_string_pretty(&big_log_blueprint()).unwrap()).unwrap();
    run_with_cli(&cli, &blueprint, &store.path().join("orrery.db"));
    let big = runtime.block_on(measure_big_log(&app, store.path(), &display, logs.path(), shots.as_deref()));

    let table = table(&all, &log, &big);
    if let Some(parent) = out.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(&out, &table).unwrap();
    print!("{table}");
}

/// `tasks` tasks in all: start, end and `system.sleep`s of 0 s in [`LANES`] chains.
fn timeline_blueprint(tasks: usize) -> Value {
    assert!(tasks >= LANES + 2, "at least {} tasks", LANES + 2);
    let middle = tasks - 2;
    let mut all = vec![json!({"id": "start", "type": "system.start"})];
    let mut tails = Vec::new();
    for lane in 0..LANES {
        let count = middle / LANES + usize::from(lane < middle % LANES);
        let mut previous = "start".to_string();
        for i in 0..count {
            let id = format!("l{lane:02}_{i:05}");
            all.push(json!({"id": id, "type": "system.sleep",
                "params": [{"name": "duration", "value": 0, "type_hint": "float"}],
                "depends_on": [{"id": previous, "type": "FS"}]}));
            previous = id;
        }
        tails.push(previous);
    }
    let ends: Vec<Value> = tails.iter().map(|t| json!({"id": t, "type": "FS"})).collect();
    all.push(json!({"id": "end", "type": "system.end", "depends_on": ends}));
    json!({"id": format!("timeline_{tasks}"), "name": format!("timeline {tasks}"), "version": "1.0", "tasks": all})
}

/// One shell task that writes `lines` lines, one every 30 ms, each with the epoch ms it was
/// written at; it first waits 3 s, the time the benchmark takes to open its log.
fn log_blueprint(lines: usize) -> Value {
    let command = format!("sleep 3; for i in $(seq 1 {lines}); do echo \"line $i $(date +%s%3N)\"; sleep 0.03; done");
    json!({"id": "log_latency", "name": "log latency", "version": "1.0", "tasks": [
        {"id": "start", "type": "system.start"},
        {"id": TALKER, "type": "shell.run", "params": [{"name": "command", "value": command}],
            "depends_on": [{"id": "start", "type": "FS"}]},
        {"id": "end", "type": "system.end", "depends_on": [{"id": TALKER, "type": "FS"}]},
    ]})
}

/// One shell task that writes a log of [`BIG_LOG_BYTES`] at once: lines of 100 bytes.
fn big_log_blueprint() -> Value {
    let line = format!("a line of the big log {}", "0123456789".repeat(8));
    let command = format!("yes '{line}' | head -c {BIG_LOG_BYTES}");
    json!({"id": "big_log", "name": "big log", "version": "1.0", "tasks": [
        {"id": "start", "type": "system.start"},
        {"id": BIG, "type": "shell.run", "params": [{"name": "command", "value": command}],
            "depends_on": [{"id": "start", "type": "FS"}]},
        {"id": "end", "type": "system.end", "depends_on": [{"id": BIG, "type": "FS"}]},
    ]})
}

/// Runs `blueprint` to completion with the CLI into the store `db`; its wall time in ms.
fn run_with_cli(cli: &Path, blueprint: &Path, db: &Path) -> f64 {
    let started = std::time::Instant::now();
    let out = Command::new(cli)
        .arg("run")
        .arg("--db")
        .arg(db)
        .arg(blueprint)
        .env("ORRERY_DB", db)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", cli.display()));
    let ms = started.elapsed().as_secs_f64() * 1000.0;
    assert!(
        out.status.success(),
        "orrery run {} failed: {}",
        blueprint.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    ms
}

/// Starts tauri-driver with the app's environment and a WebDriver session on the app.
async fn start_app(app: &Path, env: &[(&str, &Path)], display: &str, logs: &Path) -> (Stopped, Client) {
    let (driver, port) = start_tauri_driver(env, display, &logs.join("tauri-driver.log"));
    let client = connect(port, app).await;
    (driver, client)
}

async fn measure_timeline(
    app: &Path,
    store: &Path,
    display: &str,
    logs: &Path,
    shots: Option<&Path>,
    tasks: usize,
) -> Timeline {
    let db = store.join("orrery.db");
    let env = [("ORRERY_DB", db.as_path()), ("ORRERY_CONFIG_DIR", store)];
    let (_driver, client) = start_app(app, &env, display, logs).await;
    let mut figures = Timeline { tasks, ..Timeline::default() };

    click(&client, "[data-testid=mode-runs]").await;
    wait_until("the run in the list", || async { client.find(Locator::Css("[data-testid=run-item]")).await.ok() })
        .await;
    client.execute(WATCH_OPEN, vec![]).await.unwrap();
    client.execute_async(TWO_FRAMES, vec![]).await.unwrap();
    click(&client, "[data-testid=run-item]").await;
    let opened = wait_until("a timeline with bars", || async {
        let w = client.execute("return window.__orreryOpen;", vec![]).await.ok()?;
        w["paintedAt"].as_f64()?;
        Some(w)
    })
    .await;
    let at = |k: &str| opened[k].as_f64().unwrap_or_else(|| panic!("no {k} in {opened}"));
    figures.to_drawn_ms = at("drawnAt") - at("clickAt");
    figures.to_painted_ms = at("paintedAt") - at("clickAt");
    figures.open_longest_frame_ms = at("longest");
    figures.open_frames = at("frames") as usize;
    figures.bars = at("bars") as usize;
    let graph = wait_until("the run's graph", || async {
        let w = client.execute("return window.__orreryOpen;", vec![]).await.ok()?;
        w["graphAt"].as_f64()?;
        Some(w)
    })
    .await;
    figures.to_graph_ms = graph["graphAt"].as_f64().unwrap_or(f64::NAN) - at("clickAt");
    figures.graph_longest_frame_ms = graph["graphLongest"].as_f64().unwrap_or(f64::NAN);
    // Where the opening went: the page's timing marks (ui/src/timing.ts) after the click, up to the graph.
    let marks = client
        .execute("return performance.getEntriesByType('mark').filter((m, i, all) => m.name.startsWith('orrery:') && m.startTime >= arguments[0] && all.findIndex((n) => n.name === m.name) === i).map(m => [m.name, m.startTime]);", vec![json!(at("clickAt"))])
        .await
        .unwrap();
    for m in marks.as_array().into_iter().flatten() {
        eprintln!(
            "bench_runs: {tasks} tasks: {} at {:.0} ms after the click",
            m[0],
            m[1].as_f64().unwrap_or(0.0) - at("clickAt")
        );
    }
    client.execute_async(TWO_FRAMES, vec![]).await.unwrap();
    let summary = text(&client, "[data-testid=timeline] .timeline-summary").await;
    figures.attempts = summary.split_whitespace().next().and_then(|n| n.parse().ok()).unwrap_or(0);
    if let Some(shots) = shots {
        screenshot(&client, &shots.join(format!("bench-runs-timeline-{tasks}.png"))).await;
    }

    // The view on the middle of the session, so that the pans below keep bars in view: the rows
    // are in start order, so the middle rows' bars are in the middle of the time axis. A setup
    // step, not measured: one wheel event made in the page scrolls the rows there.
    client.execute(TO_THE_MIDDLE, vec![json!(figures.attempts)]).await.unwrap();
    client.execute_async(TWO_FRAMES, vec![]).await.unwrap();
    if let Some(shots) = shots {
        screenshot(&client, &shots.join(format!("bench-runs-timeline-{tasks}-middle.png"))).await;
    }

    client.execute(RECORD_FRAMES, vec![]).await.unwrap();
    client.execute(RECORD_ON, vec![]).await.unwrap();
    tokio::time::sleep(IDLE).await;
    let idle = client.execute(STOP_FRAMES, vec![]).await.unwrap();
    figures.idle = numbers(&idle);
    client.execute_async(TWO_FRAMES, vec![]).await.unwrap();

    figures.drag = frames_during(&client, |step| drag_canvas(&client, step)).await;
    if let Some(shots) = shots {
        screenshot(&client, &shots.join(format!("bench-runs-timeline-{tasks}-panned.png"))).await;
    }
    // Shift+wheel through WebDriver's wheel source when WebKitWebDriver takes it; else the same
    // wheel events made inside the page (the timeline's handler is the same).
    let probe = shift_wheel(&client, 0, 2).await;
    client.execute(STOP_FRAMES, vec![]).await.ok();
    let wheels = client.execute("return window.__orreryWheels;", vec![]).await.unwrap_or(Value::Null);
    let (all, shifted) = (wheels["all"].as_u64().unwrap_or(0), wheels["shift"].as_u64().unwrap_or(0));
    let webdriver_wheel = probe.is_ok() && shifted > 0;
    figures.wheel_how = match &probe {
        Ok(()) if webdriver_wheel => "WebDriver wheel actions with Shift held".into(),
        Ok(()) => format!(
            "WheelEvents with shiftKey made in the page: WebDriver's 2 wheel actions with Shift held reached the canvas as {all} wheel events, {shifted} with Shift"
        ),
        Err(e) => format!("WheelEvents with shiftKey made in the page: WebDriver's wheel actions failed ({e})"),
    };
    eprintln!("bench_runs: Shift+wheel by {}", figures.wheel_how);
    figures.wheel = if webdriver_wheel {
        frames_during(&client, |step| recorded_shift_wheel(&client, step)).await
    } else {
        frames_during(&client, |step| page_wheel(&client, step)).await
    };

    // Time travel: the scrubber dragged across the run, the graph, the timeline and the details
    // following it frame by frame.
    click(&client, "[data-testid=travel-switch]").await;
    wait_until("the scrubber", || async { client.find(Locator::Css("[data-testid=travel-slider]")).await.ok() }).await;
    client.execute_async(TWO_FRAMES, vec![]).await.unwrap();
    figures.scrub = frames_during(&client, |step| drag_slider(&client, step)).await;
    if let Some(shots) = shots {
        screenshot(&client, &shots.join(format!("bench-runs-travel-{tasks}.png"))).await;
    }
    client.close().await.unwrap();
    figures
}

/// A drag of time travel's scrubber from its middle by small steps: 24 moves of 100 ms of
/// (12, 0) px, there and back every other gesture (about a tenth of the run each way).
async fn drag_slider(client: &Client, step: usize) -> Result<(), String> {
    let slider = client.find(Locator::Css("[data-testid=travel-slider]")).await.map_err(|e| e.to_string())?;
    let sign = if step.is_multiple_of(2) { -1.0 } else { 1.0 };
    let from = PointerAction::MoveToElement { element: slider, duration: None, x: 0.0, y: 0.0 };
    let mut drag = MouseActions::new("mouse".into()).then(from).then(PointerAction::Down { button: MOUSE_BUTTON_LEFT });
    for _ in 0..24 {
        drag = drag.then(PointerAction::MoveBy { duration: Some(Duration::from_millis(100)), x: sign * 12.0, y: 0.0 });
    }
    drag = drag.then(PointerAction::Up { button: MOUSE_BUTTON_LEFT });
    client.perform_actions(drag).await.map_err(|e| format!("performing: {e:?}"))?;
    client.release_actions().await.map_err(|e| format!("releasing: {e:?}"))
}

/// Scrolls the timeline's rows by half of them (`arguments[0]` attempts of 22 px rows).
const TO_THE_MIDDLE: &str = r#"
const canvas = document.querySelector('[data-testid=timeline] canvas');
const r = canvas.getBoundingClientRect();
const dy = arguments[0] * 22 / 2 - r.height / 2;
canvas.dispatchEvent(new WheelEvent('wheel', { deltaY: dy, deltaMode: 0, clientX: r.left + r.width / 2, clientY: r.top + r.height / 2, bubbles: true, cancelable: true }));
"#;

/// Counts the wheel events that reach the canvas (to tell whether WebDriver's wheel works).
const COUNT_WHEELS: &str = r#"
if (!window.__orreryWheelCounter) {
  window.__orreryWheelCounter = true;
  window.__orreryWheels = { all: 0, shift: 0 };
  document.querySelector('[data-testid=timeline] canvas').addEventListener('wheel', (e) => { window.__orreryWheels.all++; if (e.shiftKey) window.__orreryWheels.shift++; }, true);
}
const r = document.querySelector('[data-testid=timeline] canvas').getBoundingClientRect();
return [Math.round(r.left + r.width / 2), Math.round(r.top + r.height / 2)];
"#;

/// `notches` Shift+wheel steps of [`WHEEL_PX`], 100 ms apart, over the canvas's middle; the direction
/// changes every other gesture so that the view stays over the session.
async fn shift_wheel(client: &Client, step: usize, notches: usize) -> Result<(), String> {
    let middle = client.execute(COUNT_WHEELS, vec![]).await.map_err(|e| e.to_string())?;
    let [x, y] = [0, 1].map(|i| middle[i].as_i64().expect("the canvas's middle"));
    let sign = if step.is_multiple_of(2) { 1 } else { -1 };
    let mut keys = KeyActions::new("keyboard".into()).then(KeyAction::Down { value: Key::Shift.into() });
    let mut wheel = WheelActions::new("wheel".into()).then(WheelAction::Pause { duration: Duration::ZERO });
    for _ in 0..notches {
        keys = keys.then(KeyAction::Pause { duration: Duration::from_millis(100) });
        wheel = wheel.then(WheelAction::Scroll {
            duration: Some(Duration::from_millis(100)),
            x,
            y,
            delta_x: 0,
            delta_y: sign * WHEEL_PX,
        });
    }
    keys = keys.then(KeyAction::Up { value: Key::Shift.into() });
    let actions = fantoccini::actions::Actions::from(keys).and(wheel);
    client.perform_actions(actions).await.map_err(|e| format!("performing: {e:?}"))?;
    client.release_actions().await.map_err(|e| format!("releasing: {e:?}"))
}

/// A [`shift_wheel`] of 24 notches, its frames recorded.
async fn recorded_shift_wheel(client: &Client, step: usize) -> Result<(), String> {
    client.execute(RECORD_ON, vec![]).await.map_err(|e| e.to_string())?;
    let done = shift_wheel(client, step, 24).await;
    client.execute(RECORD_OFF, vec![]).await.map_err(|e| e.to_string())?;
    done
}

/// The same gesture as [`shift_wheel`] made inside the page: 24 Shift+wheel events on
/// the canvas's middle, 100 ms apart, recorded as one gesture.
async fn page_wheel(client: &Client, step: usize) -> Result<(), String> {
    let script = r#"
const [sign, px, done] = arguments;
const canvas = document.querySelector('[data-testid=timeline] canvas');
const r = canvas.getBoundingClientRect();
const [x, y] = [r.left + r.width / 2, r.top + r.height / 2];
const s = window.__orreryFrames; s.down = true; s.last = null;
let n = 0;
const timer = setInterval(() => {
  canvas.dispatchEvent(new WheelEvent('wheel', { deltaY: sign * px, deltaMode: 0, shiftKey: true, clientX: x, clientY: y, bubbles: true, cancelable: true }));
  if (++n === 24) { clearInterval(timer); setTimeout(() => { s.down = false; done(true); }, 100); }
}, 100);
"#;
    let sign = if step.is_multiple_of(2) { 1 } else { -1 };
    client.execute_async(script, vec![json!(sign), json!(WHEEL_PX)]).await.map(|_| ()).map_err(|e| e.to_string())
}

/// A drag on the timeline's canvas from its middle by small steps, as a hand moves a mouse: 24
/// moves of 100 ms of (5, 5) px, there and back every other gesture (a pan in time and rows).
async fn drag_canvas(client: &Client, step: usize) -> Result<(), String> {
    let canvas = client.find(Locator::Css("[data-testid=timeline] canvas")).await.map_err(|e| e.to_string())?;
    let sign = if step.is_multiple_of(2) { -1.0 } else { 1.0 };
    let from = PointerAction::MoveToElement { element: canvas, duration: None, x: 0.0, y: 0.0 };
    let mut drag = MouseActions::new("mouse".into()).then(from).then(PointerAction::Down { button: MOUSE_BUTTON_LEFT });
    for _ in 0..24 {
        let duration = Some(Duration::from_millis(100));
        drag = drag.then(PointerAction::MoveBy { duration, x: sign * 5.0, y: sign * 5.0 });
    }
    drag = drag.then(PointerAction::Up { button: MOUSE_BUTTON_LEFT });
    client.perform_actions(drag).await.map_err(|e| format!("performing: {e:?}"))?;
    client.release_actions().await.map_err(|e| format!("releasing: {e:?}"))
}

async fn measure_log(
    app: &Path,
    store: &Path,
    blueprint: &Path,
    display: &str,
    logs: &Path,
    shots: Option<&Path>,
    lines: usize,
) -> LogLatency {
    let db = store.join("orrery.db");
    let env = [("ORRERY_DB", db.as_path()), ("ORRERY_CONFIG_DIR", store), ("ORRERY_OPEN", blueprint)];
    let (_driver, client) = start_app(app, &env, display, logs).await;
    wait_until("the blueprint in the editor", || async {
        let n = client.find_all(Locator::Css("[data-testid=task-node]")).await.ok()?.len();
        (n >= 3).then_some(())
    })
    .await;
    // Nothing to ask: ▶ starts the run at once.
    click(&client, "[data-testid=run]").await;
    let card = format!("[data-testid=task-node][data-task-id='{TALKER}'][data-state=RUNNING]");
    wait_until("the task running", || async { client.find(Locator::Css(&card)).await.ok() }).await;
    click(&client, &card).await;
    wait_until("the log viewer", || async { client.find(Locator::Css("[data-testid=log-view]")).await.ok() }).await;
    client.execute(WATCH_LOG, vec![]).await.unwrap();
    let end = format!("[data-testid=task-node][data-task-id='{TALKER}'][data-state=SUCCEEDED]");
    let patience = Duration::from_secs(60 + lines as u64 / 10);
    driver::poll_until("the task done", patience, Duration::from_millis(200), || async {
        client.find(Locator::Css(&end)).await.ok()
    })
    .await;
    // The last lines' growth is still on its way: a second for it to land.
    tokio::time::sleep(Duration::from_secs(1)).await;
    if let Some(shots) = shots {
        screenshot(&client, &shots.join("bench-runs-log.png")).await;
    }
    let found = client.execute(STOP_LOG, vec![]).await.unwrap();
    client.close().await.unwrap();
    let seen = found["seen"].as_object().cloned().unwrap_or_default();
    LogLatency {
        written: lines,
        latencies: seen.values().filter_map(Value::as_f64).collect(),
        before: found["before"].as_u64().unwrap_or(0) as usize,
        frames: found["frames"].as_u64().unwrap_or(0) as usize,
    }
}

#[derive(Default)]
struct BigLog {
    /// Click on the task → the first frame with lines in the viewer, and the longest frame then.
    open_ms: f64,
    open_longest_frame_ms: f64,
    /// Each scroll to the top → the earlier window held and painted.
    earlier_ms: Vec<f64>,
    earlier_longest_frame_ms: f64,
    /// What the viewer holds after the loads: bytes and lines.
    held_bytes: f64,
    held_lines: f64,
}

async fn measure_big_log(app: &Path, store: &Path, display: &str, logs: &Path, shots: Option<&Path>) -> BigLog {
    let db = store.join("orrery.db");
    let env = [("ORRERY_DB", db.as_path()), ("ORRERY_CONFIG_DIR", store)];
    let (_driver, client) = start_app(app, &env, display, logs).await;
    click(&client, "[data-testid=mode-runs]").await;
    wait_until("the run in the list", || async { client.find(Locator::Css("[data-testid=run-item]")).await.ok() })
        .await;
    click(&client, "[data-testid=run-item]").await;
    let card = format!("[data-testid=task-node][data-task-id='{BIG}']");
    wait_until("the task's card", || async { client.find(Locator::Css(&card)).await.ok() }).await;
    client.execute(WATCH_BIG_OPEN, vec![]).await.unwrap();
    client.execute_async(TWO_FRAMES, vec![]).await.unwrap();
    click(&client, &card).await;
    let opened = wait_until("the big log shown", || async {
        let w = client.execute("return window.__orreryBig;", vec![]).await.ok()?;
        w["shownAt"].as_f64()?;
        Some(w)
    })
    .await;
    let at = |k: &str| opened[k].as_f64().unwrap_or(f64::NAN);
    let mut figures =
        BigLog { open_ms: at("shownAt") - at("clickAt"), open_longest_frame_ms: at("longest"), ..BigLog::default() };
    let loaded = client.execute_async(LOAD_EARLIER, vec![json!(EARLIER_LOADS)]).await.unwrap();
    figures.earlier_ms = loaded["times"].as_array().into_iter().flatten().filter_map(Value::as_f64).collect();
    figures.earlier_longest_frame_ms = loaded["longest"].as_f64().unwrap_or(f64::NAN);
    figures.held_bytes = loaded["end"].as_f64().unwrap_or(0.0) - loaded["start"].as_f64().unwrap_or(0.0);
    figures.held_lines = loaded["lines"].as_f64().unwrap_or(0.0);
    if let Some(shots) = shots {
        screenshot(&client, &shots.join("bench-runs-big-log.png")).await;
    }
    client.close().await.unwrap();
    figures
}

async fn click(client: &Client, css: &str) {
    let element = wait_until(css, || async { client.find(Locator::Css(css)).await.ok() }).await;
    element.click().await.unwrap_or_else(|e| panic!("cannot click {css}: {e}"));
}

async fn text(client: &Client, css: &str) -> String {
    let element = wait_until(css, || async { client.find(Locator::Css(css)).await.ok() }).await;
    element.text().await.unwrap_or_default()
}

/// Polls `probe` every 20 ms until it answers `Some`.
async fn wait_until<T, F, Fut>(what: &str, probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    driver::poll_until(what, OPEN_PATIENCE, Duration::from_millis(20), probe).await
}

fn summary(f: &Timeline) -> String {
    format!(
        "{} tasks, {} attempts: click → bars painted {:.0} ms, idle median {:.1} ms, drag median {:.1} ms, wheel median {:.1} ms",
        f.tasks,
        f.attempts,
        f.to_painted_ms,
        quantile(&f.idle, 0.5),
        quantile(&f.drag, 0.5),
        quantile(&f.wheel, 0.5)
    )
}

fn table(all: &[Timeline], log: &LogLatency, big: &BigLog) -> String {
    type Row = table::Row<Timeline>;
    let rows: [Row; 30] = [
        ("Attempts in the session", |f| f.attempts as f64, ""),
        ("  (the CLI's run of the blueprint, for the record)", |f| f.cli_run_ms, "ms"),
        ("Open: click on the run → timeline bars drawn", |f| f.to_drawn_ms, "ms"),
        ("Open: click on the run → the frame after the bars were drawn", |f| f.to_painted_ms, "ms"),
        ("  of which: bars drawn → the frame after", |f| f.to_painted_ms - f.to_drawn_ms, "ms"),
        ("Open: longest frame between the click and the bars", |f| f.open_longest_frame_ms, "ms"),
        ("Open: frames between the click and the bars", |f| f.open_frames as f64, ""),
        ("Bars drawn in that frame", |f| f.bars as f64, ""),
        ("Open: click on the run → its graph drawn", |f| f.to_graph_ms, "ms"),
        ("  longest frame from the bars painted to the graph", |f| f.graph_longest_frame_ms, "ms"),
        ("Idle, nothing moving: median frame (the floor)", |f| quantile(&f.idle, 0.5), "ms"),
        ("Idle: p95 frame", |f| quantile(&f.idle, 0.95), "ms"),
        ("Idle: frames under 16.7 ms", |f| under_a_frame(&f.idle), "%"),
        ("Drag pan (time and rows): frames", |f| f.drag.len() as f64, ""),
        ("Drag pan: median frame", |f| quantile(&f.drag, 0.5), "ms"),
        ("Drag pan: p95 frame", |f| quantile(&f.drag, 0.95), "ms"),
        ("Drag pan: max frame", |f| max(&f.drag), "ms"),
        ("Drag pan: frames under 16.7 ms", |f| under_a_frame(&f.drag), "%"),
        ("Shift+wheel pan (time): frames", |f| f.wheel.len() as f64, ""),
        ("Shift+wheel pan: median frame", |f| quantile(&f.wheel, 0.5), "ms"),
        ("Shift+wheel pan: p95 frame", |f| quantile(&f.wheel, 0.95), "ms"),
        ("Shift+wheel pan: max frame", |f| max(&f.wheel), "ms"),
        ("Shift+wheel pan: frames under 16.7 ms", |f| under_a_frame(&f.wheel), "%"),
        ("Both pans: p95 frame", |f| quantile(&[f.drag.clone(), f.wheel.clone()].concat(), 0.95), "ms"),
        ("Both pans: frames under 16.7 ms", |f| under_a_frame(&[f.drag.clone(), f.wheel.clone()].concat()), "%"),
        ("Time travel, the scrubber dragged: frames", |f| f.scrub.len() as f64, ""),
        ("Scrubbing: median frame", |f| quantile(&f.scrub, 0.5), "ms"),
        ("Scrubbing: p95 frame", |f| quantile(&f.scrub, 0.95), "ms"),
        ("Scrubbing: max frame", |f| max(&f.scrub), "ms"),
        ("Scrubbing: frames under 16.7 ms", |f| under_a_frame(&f.scrub), "%"),
    ];
    let mut out = String::from("## Timeline of a stored session (release app, WebKitGTK under Xvfb)\n\n");
    out.push_str(&table::ratio_table(all, |f| f.tasks, &rows));
    let hows: Vec<String> = all.iter().map(|f| format!("{} tasks: {}", f.tasks, f.wheel_how)).collect();
    let _ = writeln!(
        out,
        "\nBlueprints: `system.sleep` of 0 s in {LANES} chains, run to completion by the CLI into a fresh store; the app then opened on that store \
         and the run clicked in the list. \"Bars drawn\": the timeline's draw set `data-bars` > 0 (inside a frame); \"the frame after\": the start of the \
         next animation frame, by which the bars were painted (anything else that frame ran, such as the run's graph, delays it). \
         Before the gestures the rows are scrolled to the middle of the session (one wheel event made in the page, not measured). \
         Drag: 24 moves of (5, 5) px 100 ms apart from the canvas's middle, there and back. \
         Shift+wheel: 24 steps of {WHEEL_PX} px 100 ms apart, there and back ({}). \
         Scrubbing: time travel opened (its history read), then its scrubber dragged from its middle by 24 moves of (12, 0) px 100 ms apart, \
         there and back: each moment redraws the graph's cards, the timeline and the details. Frames are the time between animation frames while a gesture lasts.",
        hows.join("; ")
    );

    let l = &log.latencies;
    let _ = writeln!(out, "\n## Log latency: a line written → in the log viewer's DOM at a frame\n");
    out.push_str("| Measure | Value |\n|---|---:|\n");
    let _ = writeln!(out, "| Lines written (one every 30 ms) | {} |", log.written);
    let _ = writeln!(out, "| Lines seen in the viewer, written after the recorder started | {} |", l.len());
    let _ = writeln!(out, "| Lines seen, written before it (left out) | {} |", log.before);
    let _ = writeln!(out, "| Frames the recorder saw | {} |", log.frames);
    for (name, q) in [("p50", 0.5), ("p95", 0.95), ("p99", 0.99)] {
        let _ = writeln!(out, "| Latency {name} | {:.0} ms |", quantile(l, q));
    }
    let _ = writeln!(out, "| Latency max | {:.0} ms |", max(l));
    let _ = writeln!(
        out,
        "| Lines under 100 ms | {:.0}% |",
        100.0 * l.iter().filter(|v| **v < 100.0).count() as f64 / l.len().max(1) as f64
    );
    out.push_str(
        "\nThe task (`shell.run`, launched from the app) writes `line N <epoch ms>` every 30 ms after a 3 s wait; every animation frame \
         the page reads the viewer's rendered lines and takes Date.now() minus the written time the first frame a line is there \
         (the viewer's rendered rows, its few overscan rows beyond the visible ones included). Lines the viewer skipped (scrolled past between two frames) are not seen. Target (issue 6): p99 under 100 ms.\n",
    );

    let _ = writeln!(out, "\n## A log of {} MB in the viewer\n", BIG_LOG_BYTES / 1_000_000);
    out.push_str("| Measure | Value |\n|---|---:|\n");
    let _ = writeln!(out, "| Click on the task → its log's tail shown | {:.0} ms |", big.open_ms);
    let _ = writeln!(out, "|   longest frame meanwhile | {:.0} ms |", big.open_longest_frame_ms);
    let e = &big.earlier_ms;
    let _ = writeln!(
        out,
        "| Scroll to the top → the earlier window shown: median of {} | {:.0} ms |",
        e.len(),
        quantile(e, 0.5)
    );
    let _ = writeln!(out, "|   slowest | {:.0} ms |", max(e));
    let _ = writeln!(out, "|   longest frame meanwhile | {:.0} ms |", big.earlier_longest_frame_ms);
    let _ = writeln!(
        out,
        "| Held by the viewer after them: bytes / lines | {:.0} / {:.0} |",
        big.held_bytes, big.held_lines
    );
    out.push_str(
        "\nThe task (`shell.run`, run by the CLI) writes 100 MB of 100-byte lines at once; the app opens that run and the task's card \
         is clicked: the viewer reads one window at the tail. Then the page scrolls the log to its top, once per earlier window, \
         and waits for the window to be held (the view's `data-start` going down) and a frame.\n",
    );
    out
}
