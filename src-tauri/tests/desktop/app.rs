//! The real app under test: its own X server, tauri-driver and WebDriver session, and what a
//! user does with it (click, type, read, use the native file dialog).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::Duration;

use fantoccini::{Client, Locator};
use serde_json::{json, Value};

use super::driver::{connect, eventually, start_tauri_driver, start_xvfb, Stopped, PATIENCE};

/// One app at a time: two WebKit windows on two cores make every step's timing a gamble.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

pub struct App {
    pub client: Client,
    pub display: String,
    /// Scratch folder: the store, the config (recent files) and the test's blueprints.
    pub dir: tempfile::TempDir,
    pub shots: PathBuf,
    /// The user's actions so far: each click, each key pressed (a shortcut is one), each drag.
    actions: std::sync::atomic::AtomicUsize,
    // Dropped last, in this order: the driver (and the app) before the X server.
    _driver: Stopped,
    _xvfb: Stopped,
    _serial: tokio::sync::MutexGuard<'static, ()>,
}

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

impl App {
    /// Starts the built app; `prepare` fills the scratch folder first and answers the blueprint
    /// to open at start, if any.
    pub async fn start(prepare: impl FnOnce(&Path) -> Option<PathBuf>) -> App {
        App::start_with(|dir| (prepare(dir), Vec::new())).await
    }

    /// As [`App::start`], the app also started with the variables `prepare` answers.
    pub async fn start_with(prepare: impl FnOnce(&Path) -> (Option<PathBuf>, Vec<(&'static str, PathBuf)>)) -> App {
        let serial = ONE_AT_A_TIME.lock().await;
        let dir = tempfile::tempdir().unwrap();
        let (open, variables) = prepare(dir.path());
        let shots = repo_root().join("target/e2e");
        std::fs::create_dir_all(&shots).unwrap();
        let (xvfb, display) = start_xvfb(&shots.join("xvfb.log"));
        let db = dir.path().join("orrery.db");
        let mut env = vec![("ORRERY_DB", db.as_path()), ("ORRERY_CONFIG_DIR", dir.path())];
        if let Some(open) = &open {
            env.push(("ORRERY_OPEN", open.as_path()));
        }
        env.extend(variables.iter().map(|(name, value)| (*name, value.as_path())));
        let (driver, port) = start_tauri_driver(&env, &display, &shots.join("tauri-driver.log"));
        let client = connect(port, Path::new(env!("CARGO_BIN_EXE_orrery-desktop"))).await;
        // The page up, its editor mounted with its keyboard shortcuts, before a test acts on it: a
        // key sent earlier is lost.
        eventually("the editor drawn", || async {
            client.find(Locator::Css("[data-testid=palette-filter]")).await.ok().map(|_| ())
        })
        .await;
        App { client, display, dir, shots, actions: Default::default(), _driver: driver, _xvfb: xvfb, _serial: serial }
    }

    /// How many actions (clicks, keys, drags) the user has taken so far.
    pub fn actions(&self) -> usize {
        self.actions.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn acted(&self, n: usize) {
        self.actions.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
    }

    /// Clicks the element as a user would, once it is there and takes clicks: a node may be
    /// moving or re-rendering for a moment after an edit (WebDriver answers "not interactable").
    pub async fn click(&self, css: &str) {
        self.acted(1);
        self.click_once_it_takes_it(css).await;
    }

    async fn click_once_it_takes_it(&self, css: &str) {
        let last = Mutex::new(String::new());
        let probe = || async {
            let answer = match self.client.find(Locator::Css(css)).await {
                Ok(element) => element.click().await.map(|_| ()),
                Err(e) => Err(e),
            };
            answer.map_err(|e| *last.lock().unwrap() = format!("{e:?}")).ok()
        };
        let deadline = std::time::Instant::now() + PATIENCE;
        while probe().await.is_none() {
            let answered = last.lock().unwrap().clone();
            assert!(std::time::Instant::now() < deadline, "{css} takes no click; WebDriver answers {answered}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    pub async fn count(&self, css: &str) -> usize {
        self.client.find_all(Locator::Css(css)).await.map(|found| found.len()).unwrap_or(0)
    }

    pub async fn text(&self, css: &str) -> Option<String> {
        self.client.find(Locator::Css(css)).await.ok()?.text().await.ok()
    }

    /// Waits until the element matching `css` holds the text `expected`.
    pub async fn wait_text(&self, css: &str, expected: &str) {
        let seen = Mutex::new(None);
        let deadline = std::time::Instant::now() + PATIENCE;
        loop {
            // Its text content: a long path is cut short on screen but not in the page.
            let script = "return document.querySelector(arguments[0])?.textContent ?? null";
            let shown =
                self.client.execute(script, vec![json!(css)]).await.ok().and_then(|v| v.as_str().map(String::from));
            if shown.as_deref() == Some(expected) {
                return;
            }
            *seen.lock().unwrap() = shown;
            let last = seen.lock().unwrap().clone();
            assert!(std::time::Instant::now() < deadline, "{css} shows {last:?}, not {expected:?}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Waits until `n` elements match `css`.
    pub async fn wait_count(&self, css: &str, n: usize) {
        eventually(&format!("{n} of {css}"), || async { (self.count(css).await == n).then_some(()) }).await;
    }

    /// The page rectangle of the first element matching `css`: left, top, right, bottom.
    pub async fn rect(&self, css: &str) -> Option<[f64; 4]> {
        let script = "const e = document.querySelector(arguments[0]); if (!e) return null; \
                      const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom];";
        let value = self.client.execute(script, vec![json!(css)]).await.ok()?;
        let v: Vec<f64> = value.as_array()?.iter().filter_map(Value::as_f64).collect();
        v.try_into().ok()
    }

    /// Replaces the text of the input matching `css` with `typed`, as a user selecting it all and
    /// typing, once the input is there (a dialog or palette just opened may take a frame or two).
    pub async fn retype(&self, css: &str, typed: &str) {
        self.acted(1 + typed.chars().count());
        let input =
            eventually(&format!("{css} to type in"), || async { self.client.find(Locator::Css(css)).await.ok() }).await;
        self.client.execute("arguments[0].focus(); arguments[0].select();", vec![json!(input)]).await.unwrap();
        input.send_keys(typed).await.unwrap();
    }

    /// Replaces the text of the code editor matching `css` (CodeMirror's editable content): a
    /// click into it, Ctrl+A, and the new text typed over it.
    pub async fn retype_code(&self, css: &str, typed: &str) {
        self.acted(2 + typed.chars().count());
        let content = self.client.find(Locator::Css(css)).await.unwrap_or_else(|_| panic!("no {css} to type in"));
        content.click().await.unwrap();
        content.send_keys("\u{E009}a\u{E009}").await.unwrap();
        content.send_keys(typed).await.unwrap();
    }

    /// An attribute of the first element matching `css`.
    pub async fn attr(&self, css: &str, name: &str) -> Option<String> {
        let script = "return document.querySelector(arguments[0])?.getAttribute(arguments[1]) ?? null";
        self.client.execute(script, vec![json!(css), json!(name)]).await.ok()?.as_str().map(String::from)
    }

    /// Waits until the first element matching `css` has the attribute `name` set to `expected`.
    pub async fn wait_attr(&self, css: &str, name: &str, expected: &str) {
        eventually(&format!("{css} with {name}={expected}"), || async {
            (self.attr(css, name).await.as_deref() == Some(expected)).then_some(())
        })
        .await;
    }

    /// The text an element holds (its text content).
    pub async fn content(&self, css: &str) -> Option<String> {
        let script = "return document.querySelector(arguments[0])?.textContent ?? null";
        self.client.execute(script, vec![json!(css)]).await.ok()?.as_str().map(String::from)
    }

    /// Types keys into the page (to whatever has the focus), as WebDriver key strings.
    pub async fn keys(&self, keys: &str) {
        // Ctrl (U+E009) pressed and released around a key is one shortcut.
        self.acted(keys.chars().filter(|&c| c != '\u{E009}').count());
        let body = self.client.find(Locator::Css("body")).await.unwrap();
        body.send_keys(keys).await.unwrap();
    }

    /// Presses Ctrl with `key` on the focused element (the page when nothing has the focus).
    pub async fn ctrl(&self, key: char) {
        self.keys(&format!("\u{E009}{key}\u{E009}")).await;
    }

    /// Waits for the native file dialog (a window titled `title`), types `path` into it and
    /// confirms, as a user would.
    pub async fn answer_file_dialog(&self, title: &str, path: &Path) {
        // A user types the file's name in the folder the dialog opens, and Enter.
        self.acted(path.file_name().map_or(0, |n| n.to_string_lossy().chars().count()) + 1);
        let pattern = format!("^{title}$");
        eventually(&format!("the {title} dialog"), || async { self.window_titled(&pattern).then_some(()) }).await;
        // Let the dialog take the keyboard before typing into it.
        tokio::time::sleep(Duration::from_millis(700)).await;
        // Pasted, not typed: GTK completes a typed location while it is typed, racing the keys.
        self.set_clipboard(path.to_str().unwrap());
        // A "/" opens the chooser's location field; the path pasted over it replaces it.
        self.xdotool(&["type", "/"]);
        tokio::time::sleep(Duration::from_millis(500)).await;
        self.xdotool(&["key", "ctrl+a", "ctrl+v"]);
        tokio::time::sleep(Duration::from_millis(500)).await;
        self.xdotool(&["key", "Return"]);
        eventually(&format!("the {title} dialog gone"), || async { (!self.window_titled(&pattern)).then_some(()) })
            .await;
    }

    pub fn window_titled(&self, pattern: &str) -> bool {
        // Only shown windows: GTK keeps a closed dialog's window, unmapped.
        let args = ["search", "--onlyvisible", "--name", pattern];
        let found = Command::new("xdotool").args(args).env("DISPLAY", &self.display).output();
        found.is_ok_and(|o| o.status.success() && !o.stdout.is_empty())
    }

    /// Puts `text` on the X clipboard of the app's display (xclip serves it until replaced).
    pub fn set_clipboard(&self, text: &str) {
        use std::io::Write;
        let mut xclip = Command::new("xclip")
            .args(["-selection", "clipboard"])
            .env("DISPLAY", &self.display)
            .stdin(std::process::Stdio::piped())
            .spawn()
            .expect("xclip (scripts/setup.sh installs it)");
        xclip.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
        assert!(xclip.wait().unwrap().success(), "xclip failed");
    }

    /// Where on the X screen the page's point (x, y) is: the window's place plus the menu bar
    /// above the page.
    pub async fn screen_point(&self, x: f64, y: f64) -> (i64, i64) {
        let chrome = self.client.execute("return [window.screenX, window.screenY, window.outerHeight - window.innerHeight, window.outerWidth - window.innerWidth]", vec![]).await.unwrap();
        let v: Vec<f64> = chrome.as_array().unwrap().iter().filter_map(Value::as_f64).collect();
        ((v[0] + v[3] + x).round() as i64, (v[1] + v[2] + y).round() as i64)
    }

    /// Drags with the real (X) pointer from the middle of `from` to the page point `to`, in steps.
    pub async fn drag_with_pointer(&self, from: &str, to: (f64, f64)) {
        self.acted(1);
        let r = self.rect(from).await.unwrap_or_else(|| panic!("no {from}"));
        let (sx, sy) = self.screen_point((r[0] + r[2]) / 2.0, (r[1] + r[3]) / 2.0).await;
        let (tx, ty) = self.screen_point(to.0, to.1).await;
        self.xdotool(&["mousemove", &sx.to_string(), &sy.to_string()]);
        self.xdotool(&["mousedown", "1"]);
        for i in 1..=10 {
            let x = sx + (tx - sx) * i / 10;
            let y = sy + (ty - sy) * i / 10;
            tokio::time::sleep(Duration::from_millis(60)).await;
            self.xdotool(&["mousemove", &x.to_string(), &y.to_string()]);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        self.xdotool(&["mouseup", "1"]);
    }

    /// Clicks with the real (X) pointer at the page point (x, y).
    pub async fn click_at(&self, x: f64, y: f64) {
        self.acted(1);
        let (sx, sy) = self.screen_point(x, y).await;
        self.xdotool(&["mousemove", &sx.to_string(), &sy.to_string()]);
        tokio::time::sleep(Duration::from_millis(100)).await;
        self.xdotool(&["click", "1"]);
    }

    pub fn xdotool(&self, args: &[&str]) {
        let status = Command::new("xdotool").args(args).env("DISPLAY", &self.display).status().unwrap();
        assert!(status.success(), "xdotool {args:?} failed");
    }

    pub async fn screenshot(&self, name: &str) {
        super::driver::screenshot(&self.client, &self.shots.join(name)).await;
    }

    /// Where React Flow draws a task (its position in flow coordinates), from the node's transform.
    pub async fn node_position(&self, task: &str) -> Option<(f64, f64)> {
        let script = "const n = document.querySelector(`.react-flow__node[data-id=\"${arguments[0]}\"]`); \
                      return n ? n.style.transform : null;";
        let transform = self.client.execute(script, vec![json!(task)]).await.ok()?;
        let numbers: Vec<f64> = transform
            .as_str()?
            .split(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-'))
            .filter_map(|n| n.parse().ok())
            .collect();
        match numbers[..] {
            [x, y] => Some((x, y)),
            _ => None,
        }
    }

    /// Drags from the bottom handle of `from` to the top handle of `to`: `to` depends on `from`.
    pub async fn connect_tasks(&self, from: &str, to: &str) {
        use fantoccini::actions::{InputSource, MouseActions, PointerAction, MOUSE_BUTTON_LEFT};
        self.fit_view().await;
        self.acted(1);
        let source = format!(".react-flow__node[data-id=\"{from}\"] .react-flow__handle.source");
        let target = format!(".react-flow__node[data-id=\"{to}\"] .react-flow__handle.target");
        self.wait_until_still(&[&source, &target]).await;
        let source = self.client.find(Locator::Css(&source)).await.unwrap();
        let target = self.client.find(Locator::Css(&target)).await.unwrap();
        let drag = MouseActions::new("mouse".into())
            .then(PointerAction::MoveToElement { element: source, duration: None, x: 0.0, y: 0.0 })
            .then(PointerAction::Down { button: MOUSE_BUTTON_LEFT })
            .then(PointerAction::MoveBy { duration: Some(Duration::from_millis(100)), x: 5.0, y: 5.0 })
            .then(PointerAction::MoveToElement {
                element: target,
                duration: Some(Duration::from_millis(200)),
                x: 0.0,
                y: 0.0,
            })
            .then(PointerAction::Up { button: MOUSE_BUTTON_LEFT });
        self.client.perform_actions(drag).await.unwrap();
        self.client.release_actions().await.unwrap();
    }

    /// Waits until the elements `selectors` name are on screen and have stopped moving (the
    /// fitted view's animation ends at the next frames, late on a loaded machine), at most 10 s.
    pub async fn wait_until_still(&self, selectors: &[&str]) {
        let script = "return arguments[0].map(s => { const e = document.querySelector(s); \
                      if (!e) return null; const r = e.getBoundingClientRect(); \
                      return [r.x, r.y, r.width, r.height, innerWidth, innerHeight]; });";
        let selectors: Vec<&str> = selectors.to_vec();
        let mut last = None;
        let until = std::time::Instant::now() + Duration::from_secs(10);
        while std::time::Instant::now() < until {
            let boxes = self.client.execute(script, vec![json!(selectors)]).await.unwrap();
            let on_screen = boxes.as_array().is_some_and(|all| {
                all.iter().all(|b| match b.as_array().map(|v| v.iter().filter_map(Value::as_f64).collect::<Vec<_>>()) {
                    Some(v) if v.len() == 6 => v[2] > 0.0 && v[0] >= 0.0 && v[1] >= 0.0 && v[0] < v[4] && v[1] < v[5],
                    _ => false,
                })
            });
            if on_screen && last.as_ref() == Some(&boxes) {
                return;
            }
            last = Some(boxes);
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("{selectors:?} did not come to rest on screen within 10 s: {last:?}");
    }

    /// Zooms the canvas to show every task, and waits for the animation to end.
    pub async fn fit_view(&self) {
        self.click(".react-flow__controls-fitview").await;
        tokio::time::sleep(Duration::from_millis(400)).await;
    }

    /// Adds a task of `task_type` from the palette (filtered, Enter adds the first match).
    pub async fn add_from_palette(&self, task_type: &str) {
        let before = self.count("[data-testid=task-node]").await;
        self.retype("[data-testid=palette-filter]", task_type).await;
        let filter = self.client.find(Locator::Css("[data-testid=palette-filter]")).await.unwrap();
        filter.send_keys("\u{E007}").await.unwrap();
        self.wait_count("[data-testid=task-node]", before + 1).await;
    }

    /// Double-clicks the element matching `css` with the pointer, as a user does.
    pub async fn double_click(&self, css: &str) {
        use fantoccini::actions::{InputSource, MouseActions, PointerAction, MOUSE_BUTTON_LEFT};
        self.acted(1);
        let element = self.client.find(Locator::Css(css)).await.unwrap_or_else(|_| panic!("no {css}"));
        let twice = MouseActions::new("mouse".into())
            .then(PointerAction::MoveToElement { element, duration: None, x: 0.0, y: 0.0 })
            .then(PointerAction::Down { button: MOUSE_BUTTON_LEFT })
            .then(PointerAction::Up { button: MOUSE_BUTTON_LEFT })
            .then(PointerAction::Down { button: MOUSE_BUTTON_LEFT })
            .then(PointerAction::Up { button: MOUSE_BUTTON_LEFT });
        self.client.perform_actions(twice).await.unwrap();
        self.client.release_actions().await.unwrap();
    }

    /// Clicks the nodes of `tasks` with Shift held: they become the selection, with what was
    /// selected before.
    pub async fn shift_click(&self, tasks: &[&str]) {
        use fantoccini::actions::MOUSE_BUTTON_LEFT;
        use fantoccini::actions::{Actions, InputSource, KeyAction, KeyActions, MouseActions, PointerAction};
        const SHIFT: char = '\u{E008}';
        self.acted(tasks.len());
        let tick = Duration::from_millis(50);
        // Key and pointer sequences advance together, one action of each per tick.
        let mut keys = KeyActions::new("keys".into()).then(KeyAction::Down { value: SHIFT });
        let mut mouse = MouseActions::new("mouse".into()).then(PointerAction::Pause { duration: tick });
        for task in tasks {
            let css = format!(".react-flow__node[data-id=\"{task}\"]");
            let node = self.client.find(Locator::Css(&css)).await.unwrap();
            mouse = mouse
                .then(PointerAction::MoveToElement { element: node, duration: None, x: 0.0, y: 0.0 })
                .then(PointerAction::Down { button: MOUSE_BUTTON_LEFT })
                .then(PointerAction::Up { button: MOUSE_BUTTON_LEFT });
            for _ in 0..3 {
                keys = keys.then(KeyAction::Pause { duration: tick });
            }
        }
        keys = keys.then(KeyAction::Up { value: SHIFT });
        mouse = mouse.then(PointerAction::Pause { duration: tick });
        self.client.perform_actions(Actions::from(keys).and(mouse)).await.unwrap();
        self.client.release_actions().await.unwrap();
    }

    /// What the X clipboard of the app's display holds.
    pub fn clipboard(&self) -> String {
        let out = Command::new("xclip")
            .args(["-selection", "clipboard", "-o"])
            .env("DISPLAY", &self.display)
            .output()
            .expect("xclip (scripts/setup.sh installs it)");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Selects a task by clicking its node, once the canvas stands still (fitting the view after
    /// an open, or to a panel that opened, moves every node for a moment) and nothing covers the
    /// node's centre; a node something covers (the inspector) is first brought into view as a
    /// user finds a task (Ctrl+F). Clicks again when a click did not take.
    pub async fn select_task(&self, id: &str) {
        let css = format!("[data-testid=task-node][data-task-id=\"{id}\"]");
        let shown = || async {
            let field = self.client.find(Locator::Css("[data-testid=inspector-id]")).await.ok()?;
            (field.prop("value").await.ok()?? == id).then_some(())
        };
        self.acted(1);
        let deadline = std::time::Instant::now() + PATIENCE;
        loop {
            assert!(std::time::Instant::now() < deadline, "{id} is not selected by clicking it");
            if !self.still_and_uncovered(&css).await {
                self.ctrl('f').await;
                self.retype("[data-testid=command-palette-filter]", &format!("{id}\u{E007}")).await;
                continue;
            }
            self.click_once_it_takes_it(&css).await;
            let clicked = std::time::Instant::now();
            while clicked.elapsed() < Duration::from_secs(3) {
                if shown().await.is_some() {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }

    /// Waits until the element's box is the same at two looks in a row: whether the element is
    /// then the topmost at its centre (or holds what is).
    async fn still_and_uncovered(&self, css: &str) -> bool {
        let script = "const n = document.querySelector(arguments[0]); if (!n) return null; \
                      const r = n.getBoundingClientRect(); \
                      const top = document.elementFromPoint(r.x + r.width / 2, r.y + r.height / 2); \
                      return [r.x, r.y, r.width, r.height, !!top && n.contains(top)];";
        let last = Mutex::new(None);
        eventually(&format!("{css} standing still"), || async {
            let now = self.client.execute(script, vec![json!(css)]).await.ok().filter(|v| !v.is_null());
            let before = std::mem::replace(&mut *last.lock().unwrap(), now.clone());
            let still = now.is_some() && before == now;
            still.then(|| now.and_then(|v| v[4].as_bool()).unwrap_or(false))
        })
        .await
    }
}

/// The Python of the reference venv the test script prepares (`ORRERY_REFERENCE_PYTHON`, else
/// set up here).
pub fn reference_python() -> PathBuf {
    match std::env::var_os("ORRERY_REFERENCE_PYTHON") {
        Some(python) => PathBuf::from(python),
        None => {
            let setup = repo_root().join("tests/compat/setup_reference.sh");
            let out = Command::new("bash").arg(setup).output().unwrap();
            assert!(out.status.success(), "the reference venv: {}", String::from_utf8_lossy(&out.stderr));
            PathBuf::from(String::from_utf8_lossy(&out.stdout).lines().last().unwrap().trim())
        }
    }
}

/// The reference implementation's verdict on a file (tests/compat/reference_verdict.py).
pub fn reference_verdict(file: &Path) -> Value {
    let compat = repo_root().join("tests/compat");
    let out = Command::new(reference_python()).arg(compat.join("reference_verdict.py")).arg(file).output().unwrap();
    assert!(out.status.success(), "reference_verdict.py: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(String::from_utf8_lossy(&out.stdout).lines().next().unwrap().as_bytes()).unwrap()
}
