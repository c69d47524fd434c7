//! The editor on large blueprints, measured in the real window (issue 5): for each blueprint,
//! the time from starting the app to a canvas that shows its nodes and answers, the automatic
//! layout, and the frame times while panning the canvas (fitted: a large blueprint is then its
//! overview) and while dragging a node (zoomed in until cards are drawn).
//!
//!   bench_editor --app target/release/orrery-desktop --out target/bench/editor.md \
//!       [--shots target/e2e] BASELINE.json OTHER.json...
//!
//! Each blueprint is copied into a fresh folder with the `inner.json` beside it (the composites'
//! inner blueprint) so that no saved layout is found: every open runs the automatic layout. The
//! first blueprint is the baseline: the table gives each other one's ratio to it. Run through
//! `scripts/bench_editor.sh`; built only with the `bench-editor` feature, so never by `cargo test`.

#[path = "../tests/desktop/driver.rs"]
mod driver;
#[path = "common/frames.rs"]
mod frames;
#[path = "common/marks.rs"]
mod marks;
#[path = "common/table.rs"]
mod table;

use std::path::{Path, PathBuf};
use std::time::Duration;

use fantoccini::actions::{InputSource, MouseActions, PointerAction, MOUSE_BUTTON_LEFT};
use fantoccini::{Client, Locator};
use serde_json::Value;

use driver::{connect, screenshot, start_tauri_driver, start_xvfb};
use frames::{frames_during, numbers, RECORD_FRAMES, RECORD_ON, STOP_FRAMES, TWO_FRAMES};
use marks::{epoch_ms, wait_for_mark, OPEN_PATIENCE};
use table::{max, quantile, under_a_frame};

/// How long the idle frames are recorded.
const IDLE: Duration = Duration::from_secs(5);

#[derive(Default)]
struct Figures {
    tasks: usize,
    /// From starting the app (the WebDriver session) to a painted canvas that answers.
    interactive_ms: f64,
    /// Inside the page, from the file opened to its positions known (the automatic layout).
    open_layout_ms: f64,
    /// Inside the page, from the positions known to the first painted frame with the nodes.
    open_render_ms: f64,
    /// Nodes in the DOM at that frame.
    nodes_drawn: usize,
    /// Auto-layout clicked to the new positions painted, and its two parts.
    auto_layout_ms: f64,
    auto_layout_compute_ms: f64,
    auto_layout_render_ms: f64,
    /// Frame times with nothing moving.
    idle: Vec<f64>,
    pan: Vec<f64>,
    drag: Vec<f64>,
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut app = None;
    let mut out = None;
    let mut shots = None;
    let mut files = Vec::new();
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--app" => app = it.next().map(PathBuf::from),
            "--out" => out = it.next().map(PathBuf::from),
            "--shots" => shots = it.next().map(PathBuf::from),
            _ => files.push(PathBuf::from(a)),
        }
    }
    let usage = "usage: bench_editor --app APP --out TABLE.md [--shots DIR] BASELINE.json OTHER.json...";
    let (Some(app), Some(out)) = (app, out) else { panic!("{usage}") };
    assert!(!files.is_empty(), "{usage}");
    let app = std::fs::canonicalize(&app).unwrap_or_else(|e| panic!("no app at {}: {e}", app.display()));

    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let logs = tempfile::tempdir().unwrap();
    let (_xvfb, display) = start_xvfb(&logs.path().join("xvfb.log"));
    let mut all = Vec::new();
    for file in &files {
        eprintln!("bench_editor: {}", file.display());
        let figures = runtime.block_on(measure(&app, file, &display, logs.path(), shots.as_deref()));
        eprintln!("bench_editor: {}", summary(&figures));
        all.push(figures);
    }
    let table = table(&all);
    if let Some(dir) = out.parent() {
        std::fs::create_dir_all(dir).unwrap();
    }
    std::fs::write(&out, &table).unwrap();
    print!("{table}");
}

async fn measure(app: &Path, file: &Path, display: &str, logs: &Path, shots: Option<&Path>) -> Figures {
    let dir = tempfile::tempdir().unwrap();
    let blueprint = dir.path().join("blueprint.json");
    std::fs::copy(file, &blueprint).unwrap();
    let inner = file.with_file_name("inner.json");
    if inner.exists() {
        std::fs::copy(&inner, dir.path().join("inner.json")).unwrap();
    }
    let text = std::fs::read_to_string(&blueprint).unwrap();
    let parsed = serde_json::from_str::<Value>(&text).unwrap();
    let tasks = parsed["tasks"].as_array().map_or(0, Vec::len);
    // The task a drag starts from when the view is zoomed in: one in the middle of the blueprint.
    let middle = parsed["tasks"][tasks / 2]["id"].as_str().unwrap_or("start").to_string();
    let db = dir.path().join("orrery.db");
    let env = [("ORRERY_OPEN", blueprint.as_path()), ("ORRERY_DB", db.as_path())];
    let (_driver, port) = start_tauri_driver(&env, display, &logs.join("tauri-driver.log"));

    let started = epoch_ms();
    let client = connect(port, app).await;
    let (origin, marks) = wait_for_mark(&client, "open-painted").await;
    let answered = client.execute_async(TWO_FRAMES, vec![]).await.unwrap().as_f64().unwrap();
    let at = |name: &str| marks[name]["at"].as_f64().unwrap_or_else(|| panic!("no mark {name}"));
    let mut figures = Figures {
        tasks,
        interactive_ms: origin + answered - started,
        open_layout_ms: at("laid-out") - at("open"),
        open_render_ms: at("open-painted") - at("laid-out"),
        nodes_drawn: marks["open-painted"]["detail"]["nodes"].as_u64().unwrap_or(0) as usize,
        ..Figures::default()
    };
    // The facade checks the blueprint after it is shown: its verdict lands before anything else.
    wait_until("the facade's verdict", || async {
        let summary = client.find(Locator::Css("[data-testid=problems-summary]")).await.ok()?.text().await.ok()?;
        (summary != "Checking…").then_some(())
    })
    .await;
    if let Some(shots) = shots {
        std::fs::create_dir_all(shots).unwrap();
        screenshot(&client, &shots.join(format!("editor-{tasks}.png"))).await;
    }

    client.find(Locator::Css("[data-testid=auto-layout]")).await.unwrap().click().await.unwrap();
    let (_, marks) = wait_for_mark(&client, "auto-layout-painted").await;
    let at = |name: &str| marks[name]["at"].as_f64().unwrap_or_else(|| panic!("no mark {name}"));
    figures.auto_layout_ms = at("auto-layout-painted") - at("auto-layout");
    figures.auto_layout_compute_ms = at("auto-laid-out") - at("auto-layout");
    figures.auto_layout_render_ms = at("auto-layout-painted") - at("auto-laid-out");
    client.execute_async(TWO_FRAMES, vec![]).await.unwrap();

    client.execute(RECORD_FRAMES, vec![]).await.unwrap();
    client.execute(RECORD_ON, vec![]).await.unwrap();
    tokio::time::sleep(IDLE).await;
    figures.idle = numbers(&client.execute(STOP_FRAMES, vec![]).await.unwrap());
    // Its loop ends at its next frame: the gestures' recorder is a new one.
    client.execute_async(TWO_FRAMES, vec![]).await.unwrap();
    figures.pan = frames_during(&client, |step| pan(&client, step)).await;
    zoom_in_to_cards(&client, &middle).await;
    figures.drag = frames_during(&client, |step| drag(&client, step)).await;
    client.close().await.unwrap();
    figures
}

/// Polls `probe` every 20 ms until it answers `Some`.
async fn wait_until<T, F, Fut>(what: &str, probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    driver::poll_until(what, OPEN_PATIENCE, Duration::from_millis(20), probe).await
}

/// A drag of `from` by small steps, as a hand moves a mouse: 24 moves of 100 ms, there and
/// back every other gesture so that the view stays over the blueprint.
async fn pointer_drag(client: &Client, from: PointerAction, step: usize) -> Result<(), String> {
    let sign = if step.is_multiple_of(2) { -1.0 } else { 1.0 };
    let mut drag = MouseActions::new("mouse".into()).then(from).then(PointerAction::Down { button: MOUSE_BUTTON_LEFT });
    for _ in 0..24 {
        let duration = Some(Duration::from_millis(100));
        drag = drag.then(PointerAction::MoveBy { duration, x: sign * 10.0, y: sign * 5.0 });
    }
    drag = drag.then(PointerAction::Up { button: MOUSE_BUTTON_LEFT });
    client.perform_actions(drag).await.map_err(|e| format!("performing: {e:?}"))?;
    client.release_actions().await.map_err(|e| format!("releasing: {e:?}"))
}

/// Pans by dragging the empty pane: from the point nearest the middle of the canvas that no node
/// covers, so that the gesture stays inside the window.
async fn pan(client: &Client, step: usize) -> Result<(), String> {
    let script = r#"
const pane = document.querySelector('.react-flow__pane').getBoundingClientRect();
const [cx, cy] = [pane.left + pane.width / 2, pane.top + pane.height / 2];
const spots = [];
for (let dy = -200; dy <= 200; dy += 8) for (let dx = -300; dx <= 300; dx += 8) spots.push([cx + dx, cy + dy]);
spots.sort((a, b) => Math.hypot(a[0] - cx, a[1] - cy) - Math.hypot(b[0] - cx, b[1] - cy));
for (const [x, y] of spots) {
  const hit = document.elementFromPoint(x, y);
  if (hit && hit.classList.contains('react-flow__pane')) return [Math.round(x), Math.round(y)];
}
return null;"#;
    let free = client.execute(script, vec![]).await.unwrap();
    let [x, y] = [0, 1].map(|i| free[i].as_f64().expect("an empty spot of the pane"));
    pointer_drag(client, PointerAction::MoveTo { duration: None, x, y }, step).await
}

/// Zoomed out, a large blueprint is an overview without cards (ui/src/editor/Overview.tsx): a
/// task is moved at a zoom where cards are drawn, as a user zooms in to move one. The view is
/// brought to `task` as a user finds it: Ctrl+F, its id, Enter.
async fn zoom_in_to_cards(client: &Client, task: &str) {
    if !client.find_all(Locator::Css(".react-flow__node")).await.unwrap().is_empty() {
        return;
    }
    let body = client.find(Locator::Css("body")).await.unwrap();
    body.send_keys("\u{E009}f\u{E009}").await.unwrap();
    let filter = wait_until("the find palette", || async {
        client.find(Locator::Css("[data-testid=command-palette-filter]")).await.ok()
    })
    .await;
    filter.send_keys(&format!("{task}\u{E007}")).await.unwrap();
    wait_until("cards drawn around the task found", || async {
        let drawn = client.find_all(Locator::Css(".react-flow__node")).await.ok()?;
        (!drawn.is_empty()).then_some(())
    })
    .await;
    // The view's move to it (300 ms) ends before the drag starts.
    tokio::time::sleep(Duration::from_millis(500)).await;
}

/// Drags the drawn node nearest the middle of the canvas.
async fn drag(client: &Client, step: usize) -> Result<(), String> {
    let script = r#"
const pane = document.querySelector('.react-flow__pane').getBoundingClientRect();
const [cx, cy] = [pane.left + pane.width / 2, pane.top + pane.height / 2];
let best = null, bestDistance = Infinity;
for (const n of document.querySelectorAll('.react-flow__node')) {
  const r = n.getBoundingClientRect();
  const d = Math.hypot(r.left + r.width / 2 - cx, r.top + r.height / 2 - cy);
  if (d < bestDistance) { best = n; bestDistance = d; }
}
return best && best.dataset.id;"#;
    let id = client.execute(script, vec![]).await.unwrap();
    let id = id.as_str().expect("a drawn node");
    let node =
        client.find(Locator::Css(&format!(".react-flow__node[data-id=\"{id}\"]"))).await.expect("a node to drag");
    pointer_drag(client, PointerAction::MoveToElement { element: node, duration: None, x: 0.0, y: 0.0 }, step).await
}

fn summary(f: &Figures) -> String {
    format!(
        "{} tasks: interactive {:.0} ms, auto-layout {:.0} ms, pan median {:.1} ms, drag median {:.1} ms",
        f.tasks,
        f.interactive_ms,
        f.auto_layout_ms,
        quantile(&f.pan, 0.5),
        quantile(&f.drag, 0.5)
    )
}

fn table(all: &[Figures]) -> String {
    type Row = table::Row<Figures>;
    let rows: [Row; 19] = [
        ("Time to interactive (app start → nodes painted, page answering)", |f| f.interactive_ms, "ms"),
        ("  open: file opened → positions known (layout)", |f| f.open_layout_ms, "ms"),
        ("  open: positions known → first frame with nodes", |f| f.open_render_ms, "ms"),
        ("  open: file opened → first frame with nodes", |f| f.open_layout_ms + f.open_render_ms, "ms"),
        ("Nodes in the DOM at that frame", |f| f.nodes_drawn as f64, ""),
        ("Auto-layout (click → new positions painted)", |f| f.auto_layout_ms, "ms"),
        ("  auto-layout: computing positions", |f| f.auto_layout_compute_ms, "ms"),
        ("  auto-layout: render and paint", |f| f.auto_layout_render_ms, "ms"),
        ("Idle, nothing moving: median frame (the floor)", |f| quantile(&f.idle, 0.5), "ms"),
        ("Idle: frames under 16.7 ms", |f| under_a_frame(&f.idle), "%"),
        ("Pan: frames", |f| f.pan.len() as f64, ""),
        ("Pan: median frame", |f| quantile(&f.pan, 0.5), "ms"),
        ("Pan: p95 frame", |f| quantile(&f.pan, 0.95), "ms"),
        ("Pan: max frame", |f| max(&f.pan), "ms"),
        ("Drag a node: frames", |f| f.drag.len() as f64, ""),
        ("Drag a node: median frame", |f| quantile(&f.drag, 0.5), "ms"),
        ("Drag a node: p95 frame", |f| quantile(&f.drag, 0.95), "ms"),
        ("Drag a node: max frame", |f| max(&f.drag), "ms"),
        ("Frames under 16.7 ms while panning", |f| under_a_frame(&f.pan), "%"),
    ];
    table::ratio_table(all, |f| f.tasks, &rows)
}
