//! The real app in a real window: Xvfb, tauri-driver (WebKitWebDriver) and the built
//! `orrery-desktop` binary, driven over WebDriver (driver.rs). `scripts/setup.sh` installs what
//! it needs.

use std::path::Path;
use std::time::Duration;

use fantoccini::actions::{InputSource, MouseActions, PointerAction, MOUSE_BUTTON_LEFT};
use fantoccini::Locator;
use orrery_api::{Api, ApiOptions};
use serde_json::{json, Value};

use super::app::{repo_root, App};
use super::driver::{app_processes, eventually};

/// The positions a layout file keeps, by task id.
fn layout_positions(file: &Path) -> Option<serde_json::Map<String, Value>> {
    let text = std::fs::read_to_string(file).ok()?;
    serde_json::from_str::<Value>(&text).ok()?["positions"].as_object().cloned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_editor_shows_checks_edits_and_saves_a_blueprint_in_the_real_window() {
    let root = repo_root();
    let original = std::fs::read_to_string(root.join("examples/assembly.json")).unwrap();
    let tasks = serde_json::from_str::<Value>(&original).unwrap()["tasks"].as_array().unwrap().len();
    let app = App::start(|dir| {
        // Its composite's inner blueprint beside it, as in examples/: found when it is checked.
        for name in ["assembly.json", "place_element.json"] {
            std::fs::copy(root.join("examples").join(name), dir.join(name)).unwrap();
        }
        Some(dir.join("assembly.json"))
    })
    .await;
    let blueprint = app.dir.path().join("assembly.json");
    let db = app.dir.path().join("orrery.db");
    let client = &app.client;

    // One node per task of the file, laid out, and the facade's verdict without errors.
    let shown = eventually("a node per task", || async {
        let n = app.count("[data-testid=task-node]").await;
        (n == tasks).then_some(n)
    })
    .await;
    assert_eq!(shown, tasks);
    let summary = eventually("the problems summary", || async {
        app.text("[data-testid=problems-summary]").await.filter(|s| s != "Checking…")
    })
    .await;
    assert_eq!(summary, "No problems", "the example is clean once its inner blueprint is found beside it");
    assert!(app.window_titled("^Orrery — assembly.json$"), "the window title names the open file");
    app.screenshot("editor-open.png").await;

    // The while scope of the example is a labelled region around its three tasks.
    let css = "[data-testid=scope-label][data-scope-start=pick]";
    let script = "return document.querySelector(arguments[0])?.textContent ?? null";
    let label = client.execute(script, vec![json!(css)]).await.unwrap();
    assert_eq!(label, json!("placement loop · while elements_remaining > 0, max 10"));
    let region = app.rect("[data-testid=scope-region][data-scope-start=pick]").await.expect("the scope's region");
    for member in ["pick", "place", "check"] {
        let node = app.rect(&format!(".react-flow__node[data-id={member}]")).await.unwrap();
        let inside = region[0] < node[0] && region[1] < node[1] && node[2] < region[2] && node[3] < region[3];
        assert!(inside, "the region {region:?} holds its member {member} at {node:?}");
    }
    let plan = app.rect(".react-flow__node[data-id=plan]").await.unwrap();
    assert!(plan[3] <= region[1] || plan[1] >= region[3], "plan, before the scope, is outside its region");

    // Its label selects the scope: its policy in the inspector, the while condition in a code
    // editor that completes the names the scope's tasks write.
    app.click("[data-testid=scope-label][data-scope-start=pick]").await;
    app.wait_count("[data-testid=scope-inspector][data-scope-start=pick]", 1).await;
    eventually("the while condition", || async {
        app.content("[data-testid=scope-while-condition]").await.filter(|c| c == "elements_remaining > 0")
    })
    .await;
    let field = client.find(Locator::Css("[data-testid=scope-while-condition]")).await.unwrap();
    field.click().await.unwrap();
    field.send_keys("\u{E010} and elem").await.unwrap(); // End, then a name begun
    eventually("the produced name offered", || async {
        app.content(".cm-tooltip-autocomplete").await.filter(|c| c.contains("elements_remaining"))
    })
    .await;
    field.send_keys("\u{E00C}").await.unwrap(); // Escape closes the list
    app.click("[data-testid=undo]").await;
    eventually("the condition as it was", || async {
        app.content("[data-testid=scope-while-condition]").await.filter(|c| c == "elements_remaining > 0")
    })
    .await;

    // Opening a file writes no layout beside it: not even after the nodes had time to rest.
    let layout = app.dir.path().join("assembly.json.layout");
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert!(!layout.exists(), "opening a blueprint leaves its folder as it was");

    // Moving a node writes the layout, with the position the node now has.
    let before = app.node_position("plan").await.expect("plan's position");
    let node = client.find(Locator::Css(".react-flow__node[data-id=plan]")).await.unwrap();
    let drag = MouseActions::new("mouse".into())
        .then(PointerAction::MoveToElement { element: node, duration: None, x: 0.0, y: 0.0 })
        .then(PointerAction::Down { button: MOUSE_BUTTON_LEFT })
        .then(PointerAction::MoveBy { duration: Some(Duration::from_millis(100)), x: 30.0, y: 0.0 })
        .then(PointerAction::MoveBy { duration: Some(Duration::from_millis(100)), x: 90.0, y: 0.0 })
        .then(PointerAction::Up { button: MOUSE_BUTTON_LEFT });
    client.perform_actions(drag).await.unwrap();
    client.release_actions().await.unwrap();
    let moved = app.node_position("plan").await.unwrap();
    assert!(moved.0 > before.0 + 20.0, "plan was dragged right: from {before:?} to {moved:?}");
    let saved = eventually("the layout beside the file", || async { layout_positions(&layout) }).await;
    assert_eq!(saved.len(), tasks, "the layout places every task: {saved:?}");
    let kept = (saved["plan"][0].as_f64(), saved["plan"][1].as_f64());
    assert_eq!(kept, (Some(moved.0.round()), Some(moved.1.round())), "the layout keeps where plan was dropped");

    // Opening the file again (the page reloads, as at start) places the tasks where the layout says.
    let mut edited = serde_json::from_str::<Value>(&std::fs::read_to_string(&layout).unwrap()).unwrap();
    edited["positions"]["plan"] = json!([1500, 40]);
    std::fs::write(&layout, serde_json::to_string(&edited).unwrap()).unwrap();
    client.refresh().await.unwrap();
    eventually("plan where the layout file puts it", || async {
        (app.node_position("plan").await? == (1500.0, 40.0)).then_some(())
    })
    .await;
    eventually("the facade's verdict after reopening", || async {
        app.text("[data-testid=problems-summary]").await.filter(|s| s == "No problems")
    })
    .await;

    // Auto-layout brings plan back among the others, as one step that undo takes back.
    app.click("[data-testid=auto-layout]").await;
    let relaid =
        eventually("plan laid out again", || async { app.node_position("plan").await.filter(|p| p.0 < 1000.0) }).await;
    app.click("[data-testid=undo]").await;
    eventually("plan back where the layout file put it", || async {
        (app.node_position("plan").await? == (1500.0, 40.0)).then_some(())
    })
    .await;
    assert_ne!(relaid, (1500.0, 40.0));

    // Save writes the canonical text, as the format job makes it.
    let options = ApiOptions { db: db.clone(), work_dir: None, max_parallel: None };
    let formatted = Api::new(options).call("format_blueprint", json!({"text": original})).await.unwrap();
    let canonical = formatted.answer["text"].as_str().unwrap().to_string();
    app.click("[data-testid=save]").await;
    eventually("the file saved in canonical form", || async {
        (std::fs::read_to_string(&blueprint).ok()? == canonical).then_some(())
    })
    .await;
    assert_eq!(layout_positions(&layout).unwrap()["plan"], json!([1500, 40]), "saving keeps the layout as shown");

    // The inspector: a condition with a syntax error is flagged under the field, on the node and
    // in the problems; fixed, every mark goes.
    app.click("[data-testid=task-node][data-task-id=inspect]").await;
    let shown = eventually("the inspector on inspect", || async {
        let value = app.content("[data-testid=condition]").await?;
        (app.text("[data-testid=inspector-type]").await? == "shell.run").then_some(value)
    })
    .await;
    assert_eq!(shown, "inspect and elements_remaining == 0");
    app.retype_code("[data-testid=condition]", "inspect and").await;
    // Each keystroke is checked: the problems of the text typed so far come and go on the way.
    eventually("the syntax error under the condition", || async {
        let p = app.text("[data-testid=condition-problem]").await;
        eprintln!("SEEN {p:?} / {:?}", app.content("[data-testid=condition]").await);
        p.filter(|p| p.contains("not a valid expression"))
    })
    .await;
    assert_eq!(app.content("[data-testid=condition]").await.as_deref(), Some("inspect and"));
    eventually("the error on the node and in the problems", || async {
        (app.count("[data-task-id=inspect] [data-testid=error-badge]").await == 1
            && app.count("[data-testid=problem][data-task-id=inspect]").await == 1
            && app.count("[data-testid=inspector-problem]").await == 1)
            .then_some(())
    })
    .await;
    app.screenshot("editor-condition-error.png").await;
    app.retype_code("[data-testid=condition]", "inspect and elements_remaining == 0").await;
    eventually("the condition clean again", || async {
        let summary = app.text("[data-testid=problems-summary]").await?;
        (summary == "No problems"
            && app.count("[data-testid=condition-problem]").await == 0
            && app.count("[data-task-id=inspect] [data-testid=error-badge]").await == 0)
            .then_some(())
    })
    .await;

    // An id another task has is refused, with the reason under the field; Escape takes it back.
    app.retype("[data-testid=inspector-id]", "plan\u{E007}").await;
    let refused = eventually("the refused id", || async { app.text("[data-testid=id-error]").await }).await;
    assert_eq!(refused, "another task is already called plan");
    assert_eq!(app.count("[data-testid=task-node][data-task-id=inspect]").await, 1, "inspect keeps its id");
    client.find(Locator::Css("[data-testid=inspector-id]")).await.unwrap().send_keys("\u{E00C}").await.unwrap();
    eventually("the id field as it was", || async {
        let id = client.find(Locator::Css("[data-testid=inspector-id]")).await.ok()?.prop("value").await.ok()??;
        (id == "inspect" && app.count("[data-testid=id-error]").await == 0).then_some(())
    })
    .await;

    // The inspector's tables: the composite's input and its output writing another name.
    app.click("[data-testid=task-node][data-task-id=place]").await;
    eventually("the inspector on place", || async {
        let id = client.find(Locator::Css("[data-testid=inspector-id]")).await.ok()?.prop("value").await.ok()??;
        (id == "place").then_some(())
    })
    .await;
    assert_eq!(app.count("[data-testid=inputs-row]").await, 1, "place reads one input");
    let set_to = client.find(Locator::Css("[data-testid=outputs-row] input[list]")).await.unwrap();
    assert_eq!(set_to.prop("value").await.unwrap().as_deref(), Some("elements_remaining"));
    app.screenshot("editor-inspector.png").await;

    // A task added from the palette (filtered, Enter adds the first match) is wired in, and
    // selected; a condition that does not parse is an error on it.
    let filter = client.find(Locator::Css("[data-testid=palette-filter]")).await.unwrap();
    filter.send_keys("shell.r").await.unwrap();
    let listed = eventually("the palette filtered", || async {
        let n = app.count("[data-testid=palette-item]").await;
        (app.count("[data-testid=palette-item][data-task-type='shell.run']").await == 1).then_some(n)
    })
    .await;
    assert_eq!(listed, 1, "only shell.run matches");
    filter.send_keys("\u{E007}").await.unwrap();
    eventually("one more node", || async { (app.count("[data-testid=task-node]").await == tasks + 1).then_some(()) })
        .await;
    eventually("run_1 wired in and selected", || async {
        let wired = app.count("[data-testid^='rf__edge-'][data-testid$='->run_1']").await == 1;
        let id = client.find(Locator::Css("[data-testid=inspector-id]")).await.ok()?.prop("value").await.ok()??;
        (wired && id == "run_1").then_some(())
    })
    .await;
    assert_eq!(app.count("[data-task-id=run_1] [data-testid=error-badge]").await, 0, "wired in, it is no orphan");
    app.retype_code("[data-testid=condition]", "1 <").await;
    eventually("an error badge on the new task", || async {
        (app.count("[data-task-id=run_1] [data-testid=error-badge]").await == 1).then_some(())
    })
    .await;
    let summary = eventually("the error in the summary", || async {
        app.text("[data-testid=problems-summary]").await.filter(|s| s.contains("error"))
    })
    .await;
    assert!(summary.starts_with("1 error"), "one error, the condition: {summary:?}");
    app.screenshot("editor-invalid.png").await;

    // A problem about a task selects that task (another one selected first).
    // Zoom to fit first: after the edits above, start may lie outside the canvas's view.
    app.click(".react-flow__controls-fitview").await;
    app.click("[data-testid=task-node][data-task-id=start]").await;
    eventually("start selected", || async {
        (app.count("[data-task-id=start].selected").await == 1 && app.count("[data-task-id=run_1].selected").await == 0)
            .then_some(())
    })
    .await;
    app.click("[data-testid=problem][data-task-id=run_1] button").await;
    eventually("the task of the clicked problem selected", || async {
        (app.count("[data-task-id=run_1].selected").await == 1).then_some(())
    })
    .await;

    // Undo takes the condition and then the added task away, and with them the error (the
    // condition's edits before stay).
    app.click("[data-testid=undo]").await;
    eventually("the condition undone", || async {
        let summary = app.text("[data-testid=problems-summary]").await?;
        (!summary.contains("error")).then_some(())
    })
    .await;
    app.click("[data-testid=undo]").await;
    eventually("the blueprint as it was", || async {
        let summary = app.text("[data-testid=problems-summary]").await?;
        (app.count("[data-testid=task-node]").await == tasks && !summary.contains("error")).then_some(())
    })
    .await;

    client.clone().close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn about_orrery_shows_the_version_the_store_and_the_log_folder() {
    let app = App::start(|_| None).await;
    // Help → About Orrery, here from the command palette (the native menu sends the same command).
    app.ctrl('k').await;
    app.retype("[data-testid=command-palette-filter]", "About").await;
    app.click("[data-testid=command-item]").await;
    app.wait_text("[data-testid=about-version]", env!("CARGO_PKG_VERSION")).await;
    let store = app.dir.path().join("orrery.db");
    app.wait_text("[data-testid=about-store]", &store.display().to_string()).await;
    app.wait_text("[data-testid=about-logs]", &app.dir.path().join("runs").display().to_string()).await;
    app.screenshot("about.png").await;
    app.click("[data-testid=about-close]").await;
    app.wait_count("[data-testid=about-dialog]", 0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_windows_size_and_place_are_kept_from_one_run_to_the_next() {
    // What an earlier run kept: the window opens so.
    let app = App::start(|dir| {
        let kept = json!({"x": 40, "y": 30, "width": 1000, "height": 700, "maximized": false});
        std::fs::write(dir.join("window.json"), kept.to_string()).unwrap();
        None
    })
    .await;
    eventually("the kept width given back", || async {
        let width = app.client.execute("return window.outerWidth", vec![]).await.ok()?.as_f64()?;
        (width == 1000.0).then_some(())
    })
    .await;
    // Resized and moved by the user (here xdotool, in the window manager's place): kept at once.
    app.xdotool(&[
        "search",
        "--onlyvisible",
        "--name",
        "Orrery",
        "windowsize",
        "900",
        "640",
        "windowmove",
        "120",
        "90",
    ]);
    let file = app.dir.path().join("window.json");
    let kept = eventually("the new size and place kept", || async {
        let kept: Value = serde_json::from_str(&std::fs::read_to_string(&file).ok()?).ok()?;
        (kept["width"] == 900 && kept["height"] == 640 && kept["x"] == 120).then_some(kept)
    })
    .await;
    assert_eq!(kept["maximized"], false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_launch_opens_its_file_in_the_running_window_and_ends() {
    let blueprint = |id: &str| {
        json!({"id": id, "name": id, "version": "1.0", "tasks": [
            {"id": "start", "type": "system.start"},
            {"id": "end", "type": "system.end", "depends_on": [{"id": "start"}]}]})
        .to_string()
    };
    let app = App::start(|dir| {
        for id in ["first", "second"] {
            std::fs::write(dir.join(format!("{id}.blueprint.json")), blueprint(id)).unwrap();
        }
        Some(dir.join("first.blueprint.json"))
    })
    .await;
    let tab = |path: &Path| format!("[data-testid=tab] .tab-title[title='{}']", path.display());
    let (first, second) = (app.dir.path().join("first.blueprint.json"), app.dir.path().join("second.blueprint.json"));
    app.wait_count(&tab(&first), 1).await;

    // Launched again on the same store, from elsewhere, with a relative path (as a file manager
    // or a terminal does): it hands the file over and ends at once.
    let launch = |file: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_orrery-desktop"))
            .arg(file)
            .current_dir(app.dir.path())
            .env("DISPLAY", &app.display)
            .env("ORRERY_DB", app.dir.path().join("orrery.db"))
            .env("ORRERY_CONFIG_DIR", app.dir.path())
            .output()
            .unwrap()
    };
    let started = std::time::Instant::now();
    let handed = launch("second.blueprint.json");
    assert!(handed.status.success(), "{}", String::from_utf8_lossy(&handed.stderr));
    assert!(started.elapsed() < Duration::from_secs(10), "it did not run a window of its own");
    app.wait_count(&tab(&second), 1).await;
    app.wait_count("[data-testid=tab][aria-selected=true] .tab-title[title$='second.blueprint.json']", 1).await;

    // A file already open is brought to the front, not opened twice.
    assert!(launch("first.blueprint.json").status.success());
    app.wait_count("[data-testid=tab][aria-selected=true] .tab-title[title$='first.blueprint.json']", 1).await;
    assert_eq!(app.count("[data-testid=tab]").await, 2);
    app.screenshot("second-launch.png").await;
}

/// The status (`/proc/PID/status`) and the pid of each of the app's web processes.
fn web_processes() -> Vec<(u32, String)> {
    let app = std::fs::canonicalize(env!("CARGO_BIN_EXE_orrery-desktop")).unwrap();
    app_processes(&app)
        .into_iter()
        .map(|pid| (pid, std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default()))
        .filter(|(_, status)| field(status, "Name:").starts_with("WebKitWebProces"))
        .collect()
}

fn field(status: &str, name: &str) -> String {
    status.lines().find_map(|l| l.strip_prefix(name)).unwrap_or("").trim().to_string()
}

/// The resident memory of the app's web processes, in MB.
fn web_process_mb() -> u64 {
    web_processes()
        .iter()
        .map(|(_, s)| field(s, "VmRSS:").trim_end_matches("kB").trim().parse::<u64>().unwrap_or(0) / 1024)
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_blueprint_opens_as_its_overview_with_its_scopes_drawn_on_it() {
    let (blueprint, stats) = orrery_bench::generate(&orrery_bench::Config::new(600));
    assert!(stats.scopes > 0, "the generated blueprint has scopes");
    let scope_start = blueprint["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t.get("scope_start").is_some())
        .and_then(|t| t["id"].as_str())
        .unwrap()
        .to_string();
    let app = App::start(|dir| {
        std::fs::write(dir.join("inner.json"), orrery_bench::to_text(&orrery_bench::inner_blueprint())).unwrap();
        let file = dir.join("large.json");
        std::fs::write(&file, orrery_bench::to_text(&blueprint)).unwrap();
        Some(file)
    })
    .await;
    // Fitted whole, 600 tasks are too small to read: the overview draws every task and, once the
    // facade has answered which scopes there are, every scope; the page holds no element of them.
    eventually("every task and scope on the overview", || async {
        let tasks = app.attr("[data-testid=overview]", "data-tasks").await?;
        let scopes = app.attr("[data-testid=overview]", "data-scopes").await?;
        (tasks == "600" && scopes == stats.scopes.to_string()).then_some(())
    })
    .await;
    assert_eq!(app.count("[data-testid=scope-region]").await, 0);
    assert_eq!(app.count("[data-testid=task-node]").await, 0, "no card is drawn");
    app.screenshot("overview-scopes.png").await;
    // Zoomed in on a scope's start (Ctrl+F), the cards and the scope's region are elements again.
    app.ctrl('f').await;
    app.retype("[data-testid=command-palette-filter]", &format!("{scope_start}\u{E007}")).await;
    app.wait_count(&format!("[data-testid=scope-region][data-scope-start=\"{scope_start}\"]"), 1).await;
    assert_eq!(app.count("[data-testid=overview]").await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_gpu_the_page_is_painted_on_the_cpu_without_compositing() {
    use orrery_desktop::rendering::{sets, WITHOUT_GPU};
    let _app = App::start(|_| None).await;
    let processes = web_processes();
    assert!(!processes.is_empty(), "the app's web process is found");
    for variable in WITHOUT_GPU {
        let chosen = std::env::var(variable).ok();
        let set = sets(Path::new("/dev/dri"), chosen.as_deref().map(std::ffi::OsStr::new));
        let expected = if set { Some("1".to_string()) } else { chosen };
        for (pid, _) in &processes {
            let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap();
            let value = environ.split(|b| *b == 0).find_map(|var| {
                let var = String::from_utf8_lossy(var);
                var.strip_prefix(&format!("{variable}=")).map(str::to_string)
            });
            assert_eq!(value, expected, "{variable} in the environment of web process {pid}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_selected_among_thousands_of_dependencies_leaves_the_page_drawing_in_bounded_memory() {
    // 300 tasks in layers of 8: 2,330 dependencies, each an <svg> of React Flow's. Selecting one
    // task once made WebKit give each dependency a layer of its own: no frame for seconds, and
    // the web process grew by gigabytes a second until WebKit killed it.
    let app = App::start(|dir| {
        let file = dir.join("dense.json");
        std::fs::write(&file, orrery_bench::to_text(&orrery_bench::dense_layers(300, 8))).unwrap();
        Some(file)
    })
    .await;
    app.wait_count("[data-testid=task-node]", 300).await;
    let before = web_process_mb();
    assert!(before > 0, "the app's web process is found");
    app.select_task("t00020").await;
    let mut most = 0;
    for _ in 0..10 {
        tokio::time::sleep(Duration::from_millis(500)).await;
        most = most.max(web_process_mb());
    }
    assert!(most < before + 1024, "the web process grew from {before} MB to {most} MB after a task was selected");
    // The page still follows the user: another task is selected by a click (one in view: a
    // click on a node out of view has WebDriver scroll the canvas's container first).
    app.select_task("t00010").await;
    app.screenshot("dense-selected.png").await;
}
