//! Authoring in the real window, as a user does it: a blueprint built from nothing, a corpus
//! blueprint changed and saved for the reference to check, a composite opened and left, and
//! unsaved work that is never lost without a question.

use std::path::Path;

use fantoccini::Locator;
use serde_json::Value;

use super::app::{reference_verdict, App};
use super::driver::eventually;

/// The antikythera corpus, kept in the repository.
const CORPUS: &str = "../tests/compat/corpus";

fn corpus(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(CORPUS).join(name)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blueprint_built_from_nothing_is_saved_in_the_canonical_form() {
    let app = App::start(|_| None).await;
    app.click("[data-testid=welcome-new]").await;
    app.wait_count("[data-testid=task-node]", 2).await;
    // A palette click puts the task before the end, wired in: start -> run_1 -> end.
    app.add_from_palette("shell.run").await;
    let edge = |from: &str, to: &str| format!("[data-testid='rf__edge-{from}->{to}']");
    app.wait_count(&edge("start", "run_1"), 1).await;
    app.wait_count(&edge("run_1", "end"), 1).await;
    assert_eq!(app.count(&edge("start", "end")).await, 0, "the new task took the end's place");
    // The second one dragged from the palette onto the dependency run_1 -> end: it lands there,
    // spliced into it.
    app.fit_view().await;
    app.wait_until_still(&["[data-testid=task-node][data-task-id=run_1]", "[data-testid=task-node][data-task-id=end]"])
        .await;
    let above = app.rect("[data-testid=task-node][data-task-id=run_1]").await.unwrap();
    let below = app.rect("[data-testid=task-node][data-task-id=end]").await.unwrap();
    let drop = ((above[0] + above[2]) / 2.0, (above[3] + below[1]) / 2.0);
    app.drag_with_pointer("[data-testid=palette-item][data-task-type='shell.run']", drop).await;
    app.wait_count("[data-testid=task-node]", 4).await;
    let landed = app.rect("[data-testid=task-node][data-task-id=run_2]").await.unwrap();
    let middle = ((landed[0] + landed[2]) / 2.0, (landed[1] + landed[3]) / 2.0);
    assert!(
        (middle.0 - drop.0).abs() < 12.0 && (middle.1 - drop.1).abs() < 12.0,
        "dropped at {drop:?}, drawn around {middle:?}"
    );
    // start -> run_1 -> run_2 -> end, nothing else.
    app.wait_count(&edge("run_1", "run_2"), 1).await;
    app.wait_count(&edge("run_2", "end"), 1).await;
    app.wait_count(".react-flow__edge", 3).await;
    app.click("[data-testid=auto-layout]").await;
    eventually("no problems left", || async {
        app.text("[data-testid=problems-summary]").await.filter(|s| s == "No problems")
    })
    .await;

    // run_1 and run_2 in a scope, from the selection, retried twice.
    app.select_task("run_1").await;
    app.shift_click(&["run_2"]).await;
    app.wait_count(".react-flow__node.selected", 2).await;
    app.click("[data-testid=scope-from-selection]").await;
    app.wait_count("[data-testid=scope-inspector][data-scope-start=run_1]", 1).await;
    let members = "[data-testid=scope-region][data-scope-start=run_1][data-scope-members='run_1 run_2']";
    app.wait_count(members, 1).await;
    app.retype("[data-testid=scope-name]", "work loop").await;
    app.click("[data-testid=scope-policy-retry]").await;
    app.retype("[data-testid=scope-retries]", "2").await;
    eventually("the scope's label", || async {
        app.content("[data-testid=scope-label][data-scope-start=run_1]").await.filter(|l| l == "work loop · repeat ×3")
    })
    .await;
    app.screenshot("authoring-new-scope.png").await;

    // A condition with an error is shown on the node, in the problems and in the inspector.
    app.select_task("run_2").await;
    app.retype_code("[data-testid=condition]", "1 <").await;
    eventually("the error everywhere", || async {
        (app.count("[data-task-id=run_2] [data-testid=error-badge]").await == 1
            && app.count("[data-testid=problem][data-task-id=run_2]").await == 1
            && app.count("[data-testid=inspector-problem]").await == 1)
            .then_some(())
    })
    .await;
    app.screenshot("authoring-new-error.png").await;
    app.retype_code("[data-testid=condition]", "1 < 2").await;
    eventually("the condition fixed", || async {
        app.text("[data-testid=problems-summary]").await.filter(|s| s == "No problems")
    })
    .await;

    // The tab marks the unsaved work; saving a new blueprint asks where.
    assert_eq!(
        app.client.find(Locator::Css("[data-testid=tab]")).await.unwrap().attr("data-dirty").await.unwrap().as_deref(),
        Some("true")
    );
    let file = app.dir.path().join("built.json");
    app.click("[data-testid=save]").await;
    app.answer_file_dialog("Save File", &file).await;
    // Saved from "Untitled", the blueprint takes its id and name from the file.
    let saved = eventually("the file written, named from the file", || async {
        std::fs::read_to_string(&file).ok().filter(|t| t.contains("\"id\": \"built\""))
    })
    .await;
    assert_eq!(saved, EXPECTED_BUILT);
    app.wait_text("[data-testid=path]", file.to_str().unwrap()).await;
    assert!(app.window_titled("^Orrery — built.json$"), "the title names the saved file, without the unsaved mark");
    app.screenshot("authoring-new-saved.png").await;
}

/// What the blueprint built above must be on disk: canonical key order, 4-space indents, the
/// dependency types written out, nothing the editor keeps for itself (no positions).
const EXPECTED_BUILT: &str = r#"{
    "id": "built",
    "name": "Built",
    "version": "1.0",
    "tasks": [
        {
            "id": "start",
            "type": "system.start"
        },
        {
            "id": "end",
            "type": "system.end",
            "depends_on": [
                {
                    "id": "run_2",
                    "type": "FS"
                }
            ]
        },
        {
            "id": "run_1",
            "type": "shell.run",
            "scope_start": {
                "name": "work loop",
                "retry_policy": {
                    "retries": 2
                }
            },
            "depends_on": [
                {
                    "id": "start",
                    "type": "FS"
                }
            ]
        },
        {
            "id": "run_2",
            "type": "shell.run",
            "condition": "1 < 2",
            "scope_end": "run_1",
            "depends_on": [
                {
                    "id": "run_1",
                    "type": "FS"
                }
            ]
        }
    ]
}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corpus_blueprint_changed_undone_redone_and_saved_is_still_accepted_by_the_reference() {
    let app = App::start(|dir| {
        for name in ["toy_problem_5.json", "toy_problem_5_inner_pnp.json"] {
            std::fs::copy(corpus(name), dir.join(name)).unwrap();
        }
        None
    })
    .await;
    let file = app.dir.path().join("toy_problem_5.json");
    app.click("[data-testid=open]").await;
    app.answer_file_dialog("Open File", &file).await;
    app.wait_count("[data-testid=task-node]", 3).await;

    // Change: X1's description; undo brings the file's back, redo the new one again.
    app.select_task("X1").await;
    app.retype("#inspector-description", "Pick and place, planned").await;
    app.wait_text("[data-testid=path]", file.to_str().unwrap()).await;
    let description =
        || async { app.client.find(Locator::Css("#inspector-description")).await.ok()?.prop("value").await.ok()? };
    eventually("the description typed", || async { (description().await? == "Pick and place, planned").then_some(()) })
        .await;
    app.click("[data-testid=undo]").await;
    eventually("the description undone", || async { (description().await? == "Pick and Place").then_some(()) }).await;
    app.click("[data-testid=redo]").await;
    eventually("the description redone", || async {
        (description().await? == "Pick and place, planned").then_some(())
    })
    .await;
    app.click("[data-testid=save]").await;
    let saved = eventually("the file saved", || async {
        let text = std::fs::read_to_string(&file).ok()?;
        text.contains("Pick and place, planned").then_some(text)
    })
    .await;
    let blueprint: Value = serde_json::from_str(&saved).unwrap();
    assert_eq!(blueprint["tasks"][1]["description"], "Pick and place, planned");
    let verdict = reference_verdict(&file);
    assert_eq!(verdict["server_accepts"], true, "the reference accepts what was saved: {verdict}");

    // Drill into the composite (a double-click) and back with the breadcrumb.
    app.double_click("[data-testid=task-node][data-task-id=X1]").await;
    app.wait_count("[data-testid=breadcrumb-item]", 2).await;
    app.wait_count("[data-testid=task-node]", 5).await;
    app.wait_text("[data-testid=breadcrumb-item][data-depth='1']", "toy_problem_5_inner_pnp.json").await;
    assert_eq!(app.count("[data-testid=task-node][data-task-id=pnp1]").await, 1);
    app.screenshot("authoring-drilled.png").await;
    // A change inside marks the tab; going back asks about it.
    let tab_dirty = || async {
        let tab = app.client.find(Locator::Css("[data-testid=tab]")).await.ok()?;
        tab.attr("data-dirty").await.ok()?
    };
    assert_eq!(tab_dirty().await.as_deref(), Some("false"));
    app.select_task("pnp0").await;
    app.retype("#inspector-description", "changed inside").await;
    eventually("the tab marked", || async { (tab_dirty().await? == "true").then_some(()) }).await;
    app.click("button[data-testid=breadcrumb-item][data-depth='0']").await;
    app.wait_text("#ask-title", "Save changes to toy_problem_5_inner_pnp.json?").await;
    app.click("[data-testid=ask-don-t-save]").await;
    app.wait_count("[data-testid=breadcrumb-item]", 0).await;
    eventually("the tab clean", || async { (tab_dirty().await? == "false").then_some(()) }).await;
    let inner = std::fs::read_to_string(app.dir.path().join("toy_problem_5_inner_pnp.json")).unwrap();
    assert!(!inner.contains("changed inside"), "Don't Save left the inner file as it was");
    app.wait_count("[data-testid=task-node]", 3).await;

    // The inspector of the composite opens it too.
    app.select_task("X1").await;
    app.click("[data-testid=open-inner]").await;
    app.wait_text("[data-testid=breadcrumb-item][data-depth='1']", "toy_problem_5_inner_pnp.json").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unsaved_work_is_never_lost_without_a_question() {
    let app = App::start(|dir| {
        std::fs::copy(corpus("toy_problem_1.json"), dir.join("toy.json")).unwrap();
        Some(dir.join("toy.json"))
    })
    .await;
    let file = app.dir.path().join("toy.json");
    let original = std::fs::read_to_string(&file).unwrap();
    eventually("the blueprint shown", || async { (app.count("[data-testid=task-node]").await > 0).then_some(()) })
        .await;
    let first = app.client.find(Locator::Css("[data-testid=task-node]")).await.unwrap();
    let id = first.attr("data-task-id").await.unwrap().unwrap();
    app.select_task(&id).await;
    app.retype("#inspector-description", "changed").await;
    eventually("the unsaved mark", || async { app.window_titled("^Orrery — toy.json •$").then_some(()) }).await;

    // Closing the tab asks; Cancel keeps everything.
    app.click("[data-testid=tab-close]").await;
    app.wait_text("#ask-title", "Save changes to toy.json?").await;
    app.screenshot("authoring-ask.png").await;
    app.click("[data-testid=ask-cancel]").await;
    app.wait_count("[data-testid=ask-dialog]", 0).await;
    assert_eq!(app.count("[data-testid=tab]").await, 1);

    // Quitting asks too; Save writes the file, then the window closes.
    app.ctrl('q').await;
    app.wait_text("#ask-title", "Save changes to toy.json?").await;
    app.click("[data-testid=ask-save]").await;
    eventually("the window closed", || async { (!app.window_titled("^Orrery")).then_some(()) }).await;
    let saved = std::fs::read_to_string(&file).unwrap();
    assert_ne!(saved, original);
    assert!(saved.contains("\"description\": \"changed\""), "{saved}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_of_tasks_is_copied_as_blueprint_text_and_pasted_back_with_fresh_ids() {
    let root = super::app::repo_root();
    let app = App::start(|dir| {
        for name in ["assembly.json", "place_element.json"] {
            std::fs::copy(root.join("examples").join(name), dir.join(name)).unwrap();
        }
        Some(dir.join("assembly.json"))
    })
    .await;
    eventually("the blueprint shown", || async { (app.count("[data-testid=task-node]").await == 7).then_some(()) })
        .await;

    // pick, place and check: the while scope's body.
    app.select_task("pick").await;
    app.shift_click(&["place", "check"]).await;
    app.wait_count(".react-flow__node.selected", 3).await;
    app.ctrl('c').await;
    // On the system clipboard: blueprint JSON text another window or a text editor takes.
    let copied = eventually("the group on the clipboard", || async {
        serde_json::from_str::<Value>(&app.clipboard()).ok().filter(|v| v["tasks"].is_array())
    })
    .await;
    let ids: Vec<&str> = copied["tasks"].as_array().unwrap().iter().map(|t| t["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["pick", "place", "check"]);
    assert_eq!(copied["tasks"][0]["depends_on"], Value::Null, "pick's dependency on plan, not copied, is left out");
    assert_eq!(copied["tasks"][2]["scope_end"], "pick", "the scope's end comes along with its start");

    app.ctrl('v').await;
    app.wait_count("[data-testid=task-node]", 10).await;
    for id in ["pick_copy", "place_copy", "check_copy"] {
        assert_eq!(app.count(&format!("[data-testid=task-node][data-task-id={id}]")).await, 1, "{id} pasted");
    }
    // The pasted tasks keep their dependencies among themselves, under their new ids.
    app.wait_count("[data-testid='rf__edge-pick_copy->place_copy']", 1).await;
    app.wait_count("[data-testid='rf__edge-place_copy->check_copy']", 1).await;
    app.wait_count(".react-flow__node.selected", 3).await;
    app.screenshot("authoring-pasted.png").await;

    // Text copied elsewhere (another window, a text editor) pastes as tasks too.
    app.set_clipboard(
        r#"{"tasks": [{"id": "note", "type": "shell.run", "params": [{"name": "command", "value": "echo hi"}]}]}"#,
    );
    app.ctrl('v').await;
    app.wait_count("[data-testid=task-node][data-task-id=note]", 1).await;
    // And undo takes each paste back as one step.
    app.click("[data-testid=undo]").await;
    app.wait_count("[data-testid=task-node]", 10).await;
    app.click("[data-testid=undo]").await;
    app.wait_count("[data-testid=task-node]", 7).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fast_typing_then_an_immediate_save_keeps_every_character() {
    // Enough tasks that every keystroke costs the window a render and a check.
    let app = App::start(|dir| {
        let mut tasks = vec![serde_json::json!({"id": "start", "type": "system.start"})];
        for i in 0..300 {
            let after = if i == 0 { "start".to_string() } else { format!("t{}", i - 1) };
            tasks.push(serde_json::json!({"id": format!("t{i}"), "type": "shell.run",
                "params": [{"name": "command", "value": "true"}], "depends_on": [{"id": after}]}));
        }
        tasks.push(serde_json::json!({"id": "end", "type": "system.end", "depends_on": [{"id": "t299"}]}));
        let file = dir.join("many.json");
        let text = serde_json::json!({"id": "many", "name": "many", "version": "1.0", "tasks": tasks});
        std::fs::write(&file, text.to_string()).unwrap();
        Some(file)
    })
    .await;
    eventually("the blueprint drawn", || async { (app.count("[data-testid=task-node]").await > 0).then_some(()) })
        .await;
    // Found by name (Ctrl+F), as a user finds a task in a big blueprint.
    app.ctrl('f').await;
    app.retype("[data-testid=command-palette-filter]", "t0").await;
    app.click("[data-testid=find-item]").await;
    app.wait_count("[data-testid=param-field][data-param=command]", 1).await;
    let typed = "for f in build/*.log; do grep -c error \"$f\" || echo none; done && echo the-last-words-of-it";
    // The save is pressed in the same burst as the keys, before the window caught up with them.
    app.wait_count("[data-testid=param-script]", 1).await;
    app.retype_code("[data-testid=param-script]", &format!("{typed}\u{E009}s\u{E009}")).await;
    let file = app.dir.path().join("many.json");
    let saved = eventually("the save", || async {
        std::fs::read_to_string(&file).ok().filter(|text| text.contains("for f in"))
    })
    .await;
    let blueprint: Value = serde_json::from_str(&saved).unwrap();
    let command = &blueprint["tasks"][1]["params"][0]["value"];
    assert_eq!(command.as_str(), Some(typed), "every character typed before the save is saved");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_is_added_wired_in_from_its_plus_the_command_palette_or_a_connection_dropped_on_the_canvas() {
    let app = App::start(|_| None).await;
    app.click("[data-testid=welcome-new]").await;
    app.wait_count("[data-testid=task-node]", 2).await;
    let edge = |from: &str, to: &str| format!("[data-testid='rf__edge-{from}->{to}']");
    // Chooses a task type in the palette opened to add one.
    let choose = |task_type: &'static str| {
        let app = &app;
        async move {
            app.wait_attr("[data-testid=command-palette]", "data-mode", "add").await;
            app.retype("[data-testid=command-palette-filter]", task_type).await;
            let filter = app.client.find(Locator::Css("[data-testid=command-palette-filter]")).await.unwrap();
            filter.send_keys("\u{E007}").await.unwrap();
            app.wait_count("[data-testid=command-palette]", 0).await;
        }
    };

    // The "+" under a selected task adds one after it.
    app.select_task("start").await;
    app.click("[data-testid=task-node][data-task-id=start] [data-testid=add-after]").await;
    choose("shell.run").await;
    app.wait_count(&edge("start", "run_1"), 1).await;
    app.wait_count(&edge("run_1", "end"), 1).await;
    assert_eq!(app.count(&edge("start", "end")).await, 0);

    // "Add a task…" of the command palette: after the selected task, the new run_1.
    app.ctrl('k').await;
    app.retype("[data-testid=command-palette-filter]", "add a task").await;
    app.click("[data-testid=command-item][data-command-id='edit.add-task']").await;
    choose("shell.run").await;
    app.wait_count(&edge("run_1", "run_2"), 1).await;
    app.wait_count(&edge("run_2", "end"), 1).await;

    // A connection dragged from run_2's output onto empty canvas opens the palette there: the
    // new task is a branch of run_2.
    app.fit_view().await;
    let handle = ".react-flow__node[data-id=\"run_2\"] .react-flow__handle.source";
    app.wait_until_still(&[handle]).await;
    let from = app.rect(handle).await.unwrap();
    let to = (from[2] + 260.0, from[3] + 40.0);
    app.drag_with_pointer(handle, to).await;
    let palette = app.rect("[data-testid=command-palette]").await.unwrap_or_else(|| panic!("no palette opened"));
    let window = app.rect("body").await.unwrap();
    assert!(palette[2] <= window[2] && palette[3] <= window[3], "inside the window: {palette:?} in {window:?}");
    assert!(
        (palette[0] - to.0).abs() < 600.0 && (palette[1] - to.1).abs() < 400.0,
        "opened by the pointer: {palette:?}"
    );
    app.screenshot("authoring-add-from-connection.png").await;
    choose("shell.run").await;
    app.wait_count(&edge("run_2", "run_3"), 1).await;
    app.wait_count(".react-flow__edge", 4).await;

    // The branch is joined back by a drag from its output onto end's input.
    app.connect_tasks("run_3", "end").await;
    app.wait_count(&edge("run_3", "end"), 1).await;
    app.wait_count(".react-flow__edge", 5).await;
    app.screenshot("authoring-added-wired.png").await;
}

/// The zoom of the canvas, from its viewport's transform.
async fn zoom(app: &App) -> f64 {
    let script = "const t = document.querySelector('.react-flow__viewport').style.transform; \
                  return Number(/scale\\(([^)]+)\\)/.exec(t)[1]);";
    app.client.execute(script, vec![]).await.unwrap().as_f64().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blueprint_opens_readable_flows_left_to_right_when_asked_and_fits_again_when_the_canvas_is_resized() {
    // A chain of seven tasks: top to bottom, too tall for the canvas at a readable zoom.
    let app = App::start(|dir| {
        let mut tasks = vec![serde_json::json!({"id": "start", "type": "system.start"})];
        let mut previous = "start".to_string();
        for i in 1..=5 {
            let id = format!("step_{i}");
            tasks.push(
                serde_json::json!({"id": id, "type": "shell.run", "params": [{"name": "command", "value": "true"}],
                "depends_on": [{"id": previous, "type": "FS"}]}),
            );
            previous = id;
        }
        tasks.push(
            serde_json::json!({"id": "end", "type": "system.end", "depends_on": [{"id": previous, "type": "FS"}]}),
        );
        let file = dir.join("chain.json");
        std::fs::write(
            &file,
            serde_json::json!({"id": "chain", "name": "Chain", "version": "1.0", "tasks": tasks}).to_string(),
        )
        .unwrap();
        Some(file)
    })
    .await;
    app.wait_count("[data-testid=task-node]", 7).await;
    app.wait_until_still(&["[data-testid=task-node][data-task-id=start]"]).await;
    let opened = zoom(&app).await;
    assert!(opened >= 0.75, "opened at a readable zoom, not {opened}");
    let name = app.rect("[data-testid=task-node][data-task-id=start] .task-id").await.unwrap();
    assert!(name[3] - name[1] >= 12.0, "a task's name is readable: {name:?}");
    app.screenshot("layout-opened-readable.png").await;

    // Left to right: each step to the right of the one before, at the same height.
    let select = app.client.find(Locator::Css("[data-testid=layout-direction]")).await.unwrap();
    select.select_by_value("right").await.unwrap();
    eventually("laid out left to right", || async {
        let (a, b) = (app.node_position("step_1").await?, app.node_position("step_2").await?);
        (b.0 > a.0 + 200.0 && (b.1 - a.1).abs() < 1.0).then_some(())
    })
    .await;
    // The handles moved to the sides the dependencies now come in and go out.
    assert_eq!(app.count(".react-flow__node[data-id=step_1] .react-flow__handle-left").await, 1);
    assert_eq!(app.count(".react-flow__node[data-id=step_1] .react-flow__handle-right").await, 1);
    let layout = app.dir.path().join("chain.json.layout");
    eventually("the direction kept beside the file", || async {
        std::fs::read_to_string(&layout).ok().filter(|t| t.contains("\"direction\": \"right\"")).map(|_| ())
    })
    .await;
    app.fit_view().await;
    app.screenshot("layout-left-to-right.png").await;

    // A narrower canvas fits again, while the user has not moved the view.
    let fitted = zoom(&app).await;
    app.client
        .execute("document.querySelector('.editor').style.gridTemplateColumns = '220px minmax(0, 1fr) 640px';", vec![])
        .await
        .unwrap();
    eventually("fitted again to the narrower canvas", || async {
        let now = zoom(&app).await;
        (now < fitted * 0.9).then_some(now)
    })
    .await;
    app.screenshot("layout-refit-narrower.png").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dependency_that_would_hide_behind_tasks_is_routed_around_them_pointed_out_as_implied_and_removed() {
    // Rewired start -> a -> b -> end, and end still on start: laid out in one column, that line
    // would run straight behind a and b.
    let app = App::start(|dir| {
        let run = |id: &str, on: &str| {
            serde_json::json!({"id": id, "type": "shell.run", "params": [{"name": "command", "value": "true"}],
                "depends_on": [{"id": on, "type": "FS"}]})
        };
        let tasks = serde_json::json!([
            {"id": "start", "type": "system.start"}, run("a", "start"), run("b", "a"),
            {"id": "end", "type": "system.end", "depends_on": [{"id": "b", "type": "FS"}, {"id": "start", "type": "FS"}]}
        ]);
        let file = dir.join("rewired.json");
        std::fs::write(&file, serde_json::json!({"id": "rewired", "name": "Rewired", "version": "1.0", "tasks": tasks}).to_string())
            .unwrap();
        Some(file)
    })
    .await;
    app.wait_count("[data-testid=task-node]", 4).await;
    let edge = "[data-testid='rf__edge-start->end']";
    app.wait_count(&format!("{edge}.dependency-implied"), 1).await;
    app.wait_until_still(&["[data-testid=task-node][data-task-id=start]", "[data-testid=task-node][data-task-id=end]"])
        .await;
    // Where the line runs, sampled along it: never over the cards of a and b, though they stand
    // between its ends.
    let script = "const path = document.querySelector(arguments[0] + ' .react-flow__edge-path'); \
                  const m = path.getScreenCTM(); const len = path.getTotalLength(); \
                  const cards = ['a', 'b'].map(id => document.querySelector(`[data-testid=task-node][data-task-id=${id}]`).getBoundingClientRect()); \
                  const start = document.querySelector('[data-testid=task-node][data-task-id=start]').getBoundingClientRect(); \
                  const between = cards.every(r => r.left < start.left + start.width / 2 && start.left + start.width / 2 < r.right); \
                  let over = 0; let middle = null; \
                  for (let i = 0; i <= 200; i++) { const p = new DOMPoint(path.getPointAtLength(len * i / 200).x, path.getPointAtLength(len * i / 200).y).matrixTransform(m); \
                    if (cards.some(r => p.x > r.left && p.x < r.right && p.y > r.top && p.y < r.bottom)) over++; if (i === 100) middle = [p.x, p.y]; } \
                  return [between, over, middle];";
    let seen = app.client.execute(script, vec![serde_json::json!(edge)]).await.unwrap();
    assert_eq!(seen[0], true, "a and b stand between start and end: {seen}");
    assert_eq!(seen[1], 0, "no point of the line is behind a card: {seen}");
    app.screenshot("dependency-routed-implied.png").await;

    // A click on the line selects it: the inspector says what implies it and offers to remove it.
    let (x, y) = (seen[2][0].as_f64().unwrap(), seen[2][1].as_f64().unwrap());
    app.click_at(x, y).await;
    app.wait_count("[data-testid=dependency-inspector][data-dependency='start->end']", 1).await;
    let note = app.text("[data-testid=implied-note]").await.unwrap();
    assert!(note.contains("start → a → b → end"), "{note}");
    // Its type is a visible choice, not a silent double-click.
    app.click("[data-testid=dependency-type-SS]").await;
    eventually("the type chosen", || async {
        app.text("[data-testid=dependency-type-says]").await.filter(|s| s.contains("end starts once start has started"))
    })
    .await;
    assert_eq!(app.count("[data-testid=implied-note]").await, 0, "an SS dependency is not implied by FS chains");
    app.screenshot("dependency-type-chosen.png").await;
    app.click("[data-testid=dependency-type-FS]").await;
    app.wait_count("[data-testid=remove-implied]", 1).await;
    app.click("[data-testid=remove-implied]").await;
    app.wait_count(edge, 0).await;
    app.wait_count(".react-flow__edge", 3).await;
}
