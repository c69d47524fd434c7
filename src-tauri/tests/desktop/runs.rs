//! Running from the desktop, as a user does it: a blueprint of shell tasks with a retried scope,
//! a prompt and a condition is launched from the editor; its states change on the graph and its
//! attempts appear on the timeline; a running task's log shows its lines as they are written;
//! a failure is fixed and the run retried from it without running again what had succeeded; the
//! prompt is answered in the app; an input is traced back to the attempt that wrote it; the run
//! is restarted, answered otherwise, followed back to the run it restarts, and the two runs
//! compared. A long task is cancelled.

use std::path::Path;

use serde_json::{json, Value};

use super::app::App;
use super::driver::{eventually, poll_until};

fn sh(id: &str, command: &str, after: &str) -> Value {
    json!({"id": id, "type": "shell.run", "params": [{"name": "command", "value": command}], "depends_on": [{"id": after}]})
}

fn write_blueprint(path: &Path, id: &str, tasks: Vec<Value>) {
    let mut all = vec![json!({"id": "start", "type": "system.start"})];
    let last = tasks.last().and_then(|t| t["id"].as_str()).unwrap_or("start").to_string();
    all.extend(tasks);
    all.push(json!({"id": "end", "type": "system.end", "depends_on": [{"id": last}]}));
    let blueprint = json!({"id": id, "name": id, "version": "1.0", "tasks": all});
    std::fs::write(path, serde_json::to_string_pretty(&blueprint).unwrap()).unwrap();
}

/// How a card on the run's graph stands.
fn card(task: &str) -> String {
    format!("[data-testid=task-node][data-task-id='{task}']")
}

/// Launches the open blueprint from the editor: with nothing to ask, Run starts it at once
/// (no dialog); the run view opens.
async fn launch(app: &App) {
    app.click("[data-testid=run]").await;
    app.wait_count("[data-testid=run-header]", 1).await;
    assert_eq!(app.count("[data-testid=launch-dialog]").await, 0, "nothing was asked");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_is_watched_live_fixed_after_a_failure_retried_from_it_and_its_prompt_answered() {
    let app = App::start(|dir| {
        let ready = dir.join("ready.txt");
        // build writes a coloured line every 300 ms; check, in a scope run twice, fails until
        // ready.txt exists; ask waits for an answer, and ship runs only on a yes.
        let build =
            sh("build", "for i in 1 2 3 4 5 6; do printf '\\033[32mstep %s\\033[0m\\n' $i; sleep 0.3; done", "start");
        let mut open = sh("verify", "true", "build");
        open["scope_start"] = json!({"retry_policy": {"retries": 1}});
        let check = sh("check", &format!("test -f '{}'", ready.display()), "verify");
        let mut close = sh("verified", "true", "check");
        close["scope_end"] = json!("verify");
        let ask = json!({"id": "ask", "type": "user_prompt.confirm", "depends_on": [{"id": "verified"}],
            "params": [{"name": "message", "value": "Ship it?"}, {"name": "options", "value": ["Yes", "No"]}],
            "outputs": [{"name": "result"}]});
        let mut ship = sh("ship", "echo shipped", "ask");
        ship["condition"] = json!("result == 'Yes'");
        ship["inputs"] = json!([{"name": "result"}]);
        let file = dir.join("deploy.json");
        write_blueprint(&file, "deploy", vec![build, open, check, close, ask, ship]);
        Some(file)
    })
    .await;
    app.wait_count("[data-testid=task-node]", 8).await;
    launch(&app).await;

    // The graph follows the run: build runs, and its log grows while it does.
    app.wait_attr(&card("build"), "data-state", "RUNNING").await;
    app.click(&card("build")).await;
    app.wait_attr("[data-testid=attempt-details]", "data-node", "deploy.build").await;
    let lines =
        || async { app.attr("[data-testid=log-view]", "data-lines").await.and_then(|n| n.parse::<usize>().ok()) };
    let early = eventually("the first lines of build's log", || async { lines().await.filter(|n| *n >= 1) }).await;
    assert!(early < 6, "the log was read before build finished ({early} lines)");
    eventually("more lines while build runs", || async { lines().await.filter(|n| *n >= early + 2) }).await;
    app.screenshot("runs-live-log.png").await;
    app.wait_attr(&card("build"), "data-state", "SUCCEEDED").await;

    // check fails: so does the run, which then shows its failure first; the timeline has a bar
    // per attempt.
    app.wait_attr("[data-testid=run-header]", "data-state", "failed").await;
    app.wait_attr(&card("check"), "data-state", "FAILED").await;
    app.wait_attr("[data-testid=attempt-details]", "data-node", "deploy.check").await;
    // build's log, opened again once it ended, holds every line.
    app.click(&card("build")).await;
    app.wait_attr("[data-testid=attempt-details]", "data-node", "deploy.build").await;
    eventually("every line of build", || async { lines().await.filter(|n| *n == 6) }).await;
    assert!(app.content("[data-testid=log-view]").await.unwrap().contains("step 6"));
    let summary = app.content("[data-testid=timeline] .timeline-summary").await.unwrap();
    assert!(summary.starts_with("4 attempts · 4 tasks"), "start, build, verify, check: {summary}");
    // The ended run fits the timeline (at its next frame): every bar drawn.
    app.wait_attr("[data-testid=timeline]", "data-bars", "4").await;
    app.click(&card("check")).await;
    app.wait_count("[data-testid=attempt-error]", 1).await;
    app.screenshot("runs-failed.png").await;

    // Its input fixed, the run is retried from the failure: build is not run again.
    std::fs::write(app.dir.path().join("ready.txt"), "yes").unwrap();
    app.click("[data-testid=resume]").await;
    app.wait_attr(&card("check"), "data-state", "SUCCEEDED").await;

    // The prompt waits; it is answered in the app, and ship runs on the yes.
    app.click("[data-testid=waiting]").await;
    app.wait_text("[data-testid=prompt] .prompt-message", "Ship it?").await;
    app.screenshot("runs-prompt.png").await;
    app.click("[data-testid=prompt-option]").await;
    app.wait_attr("[data-testid=run-header]", "data-state", "completed").await;
    app.wait_attr(&card("ship"), "data-state", "SUCCEEDED").await;
    assert_eq!(app.count(&format!("{} .run-attempts", card("build"))).await, 0, "build ran once");
    assert_eq!(app.count(&format!("{} .run-attempts", card("check"))).await, 1, "check ran again");
    // The scope ran twice (its retry policy), as its label says.
    assert_eq!(app.content("[data-testid=scope-label] .scope-iteration").await.as_deref(), Some(" · iteration 2"));
    // The graph opened readable, from its start: fitted whole, ship at its end shows too.
    app.fit_view().await;
    app.click(&card("ship")).await;
    eventually("ship's log", || async {
        app.content("[data-testid=log-view]").await.filter(|t| t.contains("shipped"))
    })
    .await;
    // ship read the answer that ask wrote: its lineage leads back there.
    app.wait_text("[data-testid=lineage] .lineage-value", "Yes").await;
    app.click("[data-testid=lineage-link]").await;
    app.wait_attr("[data-testid=attempt-details]", "data-node", "deploy.ask").await;
    app.screenshot("runs-completed.png").await;

    // Run again with the same versions, answered no this time: ship is skipped. The two runs
    // compared show what differs.
    let first = app.attr("[data-testid=run-header]", "data-session-id").await.unwrap();
    app.click("[data-testid=restart]").await;
    eventually("the second run opened", || async {
        app.attr("[data-testid=run-header]", "data-session-id").await.filter(|id| *id != first)
    })
    .await;
    app.click("[data-testid=waiting]").await;
    app.wait_text("[data-testid=prompt] .prompt-message", "Ship it?").await;
    app.click("[data-testid=prompt-option]:last-child").await;
    app.wait_attr("[data-testid=run-header]", "data-state", "completed").await;
    app.wait_attr(&card("ship"), "data-state", "SKIPPED").await;
    // The restart names the run it restarts; ship's lineage leads to ship in that run, whose
    // header names its restart: back there in one click.
    let second = app.attr("[data-testid=run-header]", "data-session-id").await.unwrap();
    app.wait_attr("[data-testid=run-lineage-link]", "data-session-id", &first).await;
    app.fit_view().await;
    app.click(&card("ship")).await;
    app.wait_attr("[data-testid=attempt-details]", "data-node", "deploy.ship").await;
    app.click("[data-testid=lineage-run]").await;
    app.wait_attr("[data-testid=run-header]", "data-session-id", &first).await;
    app.wait_attr("[data-testid=attempt-details]", "data-node", "deploy.ship").await;
    app.wait_attr(&card("ship"), "data-state", "SUCCEEDED").await;
    app.screenshot("runs-lineage.png").await;
    app.click(&format!("[data-testid=run-lineage-link][data-session-id='{second}']")).await;
    app.wait_attr("[data-testid=run-header]", "data-session-id", &second).await;
    app.wait_count("[data-testid=run-item]", 2).await;
    app.click("[data-testid=compare-picker] summary").await;
    app.click(&format!("[data-testid=compare-with][data-session-id='{first}']")).await;
    app.wait_count("[data-testid=compare]", 1).await;
    let row = "[data-testid=compare-row][data-node='deploy.ship']";
    let shown = app.content(row).await.unwrap();
    assert!(shown.contains("SUCCEEDED") && shown.contains("SKIPPED"), "{shown}");
    assert_eq!(app.count("[data-testid=compare-row][data-node='deploy.build']").await, 0, "build ran alike");
    let data = app.content("[data-testid=compare-data]").await.unwrap();
    assert!(data.contains("deploy.result") && data.contains("Yes") && data.contains("No"), "{data}");
    app.screenshot("runs-compared.png").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failure_is_shown_first_then_fixed_in_the_editor_and_retried_with_the_saved_blueprint() {
    let app = App::start(|dir| {
        let made = dir.join("a.log");
        let a = sh("a", &format!("echo made >> '{}'", made.display()), "start");
        let b = sh("b", "echo about to fail; exit 3", "a");
        write_blueprint(&dir.join("fix.json"), "fix", vec![a, b, sh("c", "true", "b")]);
        Some(dir.join("fix.json"))
    })
    .await;
    app.wait_count("[data-testid=task-node]", 5).await;
    launch(&app).await;

    // The failed run leads to its failure: b selected, named in the header, its log shown.
    app.wait_attr("[data-testid=run-header]", "data-state", "failed").await;
    app.wait_attr("[data-testid=attempt-details]", "data-node", "fix.b").await;
    app.wait_text("[data-testid=run-error-task]", "b failed").await;
    eventually("b's log", || async {
        app.content("[data-testid=log-view]").await.filter(|t| t.contains("about to fail"))
    })
    .await;
    app.screenshot("runs-failure-first.png").await;
    // Its whole log saved to a file the user picks.
    let saved_log = app.dir.path().join("b-failed.log");
    app.click("[data-testid=log-save]").await;
    app.answer_file_dialog("Save File", &saved_log).await;
    eventually("the log saved", || async {
        std::fs::read_to_string(&saved_log).ok().filter(|t| t.contains("about to fail"))
    })
    .await;
    let first = app.attr("[data-testid=run-header]", "data-session-id").await.unwrap();

    // Fixed in the editor and saved.
    app.click("[data-testid=mode-edit]").await;
    app.select_task("b").await;
    app.wait_count("[data-testid=param-script]", 1).await;
    app.retype_code("[data-testid=param-script]", "echo fixed").await;
    app.ctrl('s').await;
    let file = app.dir.path().join("fix.json");
    eventually("the fix saved", || async { std::fs::read_to_string(&file).ok().filter(|t| t.contains("echo fixed")) })
        .await;

    // Retried from the failure: the app says what changed and offers the saved blueprint or the
    // version the run ran.
    app.click("[data-testid=mode-runs]").await;
    app.click("[data-testid=resume]").await;
    app.wait_count("[data-testid=rerun-dialog]", 1).await;
    app.wait_text("[data-testid=rerun-changes]", "Changed: b: command changed").await;
    app.screenshot("runs-rerun-choice.png").await;
    app.click("[data-testid=rerun-saved]").await;
    eventually("the retry opened", || async {
        app.attr("[data-testid=run-header]", "data-session-id").await.filter(|id| *id != first)
    })
    .await;
    app.wait_attr("[data-testid=run-header]", "data-state", "completed").await;
    app.wait_attr("[data-testid=run-lineage-link]", "data-session-id", &first).await;
    // a finished in the first run and did not change: kept, not run again.
    assert_eq!(std::fs::read_to_string(app.dir.path().join("a.log")).unwrap(), "made\n");
    app.click(&card("a")).await;
    app.wait_count("[data-testid=kept-from]", 1).await;
    app.click(&card("b")).await;
    eventually("b's new log", || async { app.content("[data-testid=log-view]").await.filter(|t| t.contains("fixed")) })
        .await;
    app.screenshot("runs-retried-with-saved.png").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_from_a_chosen_task_keeps_what_came_before_and_runs_that_task_and_what_follows() {
    let app = App::start(|dir| {
        let runs = dir.join("runs.log");
        let note = |what: &str| format!("echo {what} >> '{}'", runs.display());
        let mut a = sh("a", &format!(r#"{}; printf '{{"n": 7}}' > "$ORRERY_OUTPUTS""#, note("a")), "start");
        a["outputs"] = json!([{"name": "n"}]);
        let mut b = sh("b", &format!("echo b read $ORRERY_INPUT_N; {}", note("b")), "a");
        b["inputs"] = json!([{"name": "n"}]);
        write_blueprint(&dir.join("chain.json"), "chain", vec![a, b, sh("c", &note("c"), "b")]);
        Some(dir.join("chain.json"))
    })
    .await;
    app.wait_count("[data-testid=task-node]", 5).await;
    launch(&app).await;
    app.wait_attr("[data-testid=run-header]", "data-state", "completed").await;
    let first = app.attr("[data-testid=run-header]", "data-session-id").await.unwrap();
    let runs = app.dir.path().join("runs.log");
    assert_eq!(std::fs::read_to_string(&runs).unwrap(), "a\nb\nc\n");

    app.click(&card("b")).await;
    app.wait_attr("[data-testid=attempt-details]", "data-node", "chain.b").await;
    app.click("[data-testid=run-from-here]").await;
    eventually("the new run opened", || async {
        app.attr("[data-testid=run-header]", "data-session-id").await.filter(|id| *id != first)
    })
    .await;
    app.wait_attr("[data-testid=run-header]", "data-state", "completed").await;
    app.wait_attr("[data-testid=run-lineage-link]", "data-session-id", &first).await;
    // a is kept (not run again); b ran again on a's kept output, then c.
    assert_eq!(std::fs::read_to_string(&runs).unwrap(), "a\nb\nc\nb\nc\n");
    app.click(&card("a")).await;
    app.wait_count("[data-testid=kept-from]", 1).await;
    app.click(&card("b")).await;
    eventually("b's new log", || async {
        app.content("[data-testid=log-view]").await.filter(|t| t.contains("b read 7"))
    })
    .await;
    app.screenshot("runs-from-here.png").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_breakpoint_set_in_the_editor_holds_the_run_until_step_and_continue() {
    let app = App::start(|dir| {
        let runs = dir.join("runs.log");
        let note = |what: &str| format!("echo {what} >> '{}'", runs.display());
        let mut a = sh("a", &format!(r#"{}; printf '{{"n": 7}}' > "$ORRERY_OUTPUTS""#, note("a")), "start");
        a["outputs"] = json!([{"name": "n"}]);
        let mut b = sh("b", &note("b $ORRERY_INPUT_N"), "a");
        b["inputs"] = json!([{"name": "n"}]);
        write_blueprint(&dir.join("held.json"), "held", vec![a, b, sh("c", &note("c"), "b")]);
        Some(dir.join("held.json"))
    })
    .await;
    app.wait_count("[data-testid=task-node]", 5).await;
    app.select_task("b").await;
    app.click("[data-testid=inspector-breakpoint] option[value=before]").await;
    // Marked on its card.
    app.wait_attr(&format!("{} [data-testid=breakpoint-mark]", card("b")), "data-at", "before").await;
    let layout = app.dir.path().join("held.json.layout");
    eventually("the breakpoint kept beside the file", || async {
        std::fs::read_to_string(&layout).ok().filter(|t| t.contains(r#""breakpoints": {"b": "before"}"#))
    })
    .await;
    launch(&app).await;

    // Held before b: a ran, b did not; the header says where, and b is shown with what it is
    // about to read.
    app.wait_attr("[data-testid=held]", "data-node", "held.b").await;
    app.wait_attr("[data-testid=held]", "data-at", "before").await;
    app.wait_attr("[data-testid=attempt-details]", "data-node", "held.b").await;
    app.wait_count(&format!("{} [data-testid=held-mark]", card("b")), 1).await;
    // What b is about to read: its input n, and the data of its instance, each value to change.
    eventually("b's inputs", || async {
        app.content("[data-testid=held-input][data-input=n] code").await.filter(|t| t == "7")
    })
    .await;
    app.wait_text("[data-testid=held-data][data-key=n] code", "7").await;
    let runs = app.dir.path().join("runs.log");
    assert_eq!(std::fs::read_to_string(&runs).unwrap(), "a\n");

    // Its input changed where it holds: b runs with the new value, and lineage names the edit.
    app.click("[data-testid=held-input-edit]").await;
    app.retype("[data-testid=held-input-value]", "8").await;
    app.screenshot("runs-held-before.png").await;
    app.click("[data-testid=held-input-set]").await;
    eventually("the new value shown", || async {
        app.content("[data-testid=held-input][data-input=n]").await.filter(|t| t.contains('8'))
    })
    .await;

    // A step runs b and holds after it; Continue lets c run and the run complete.
    app.click("[data-testid=held-step]").await;
    app.wait_attr("[data-testid=held]", "data-at", "after").await;
    assert_eq!(std::fs::read_to_string(&runs).unwrap(), "a\nb 8\n");
    eventually("lineage naming the edit", || async {
        app.content("[data-testid=lineage-edit]").await.filter(|t| t.starts_with("set by user at "))
    })
    .await;
    app.screenshot("runs-held-after-edit.png").await;
    assert_eq!(app.count("[data-testid=held-skip]").await, 0, "a task that ended is not skipped");
    // A breakpoint set from the run view while it holds: after c, marked on its card.
    app.click(&card("c")).await;
    app.wait_attr("[data-testid=attempt-details]", "data-node", "held.c").await;
    app.click("[data-testid=run-breakpoint] option[value=after]").await;
    app.wait_attr(&format!("{} [data-testid=breakpoint-mark]", card("c")), "data-at", "after").await;
    app.click("[data-testid=held-continue]").await;
    app.wait_attr("[data-testid=held]", "data-node", "held.c").await;
    app.wait_attr("[data-testid=held]", "data-at", "after").await;
    assert_eq!(std::fs::read_to_string(&runs).unwrap(), "a\nb 8\nc\n");
    app.click("[data-testid=held-continue]").await;
    app.wait_attr("[data-testid=run-header]", "data-state", "completed").await;
    assert_eq!(app.count("[data-testid=held]").await, 0);
    app.wait_count("[data-testid=held-mark]", 0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_finds_the_tools_the_users_login_shell_puts_on_path() {
    // The user's login shell (a stand-in: bash with its own HOME) puts a folder of tools on PATH;
    // the app, started without it, asks the shell in the background and its tasks find them.
    let app = App::start_with(|dir| {
        let home = dir.join("home");
        let tools = home.join("tools");
        std::fs::create_dir_all(&tools).unwrap();
        let tool = tools.join("greet-from-profile");
        std::fs::write(&tool, "#!/bin/sh\necho hello from the profile\n").unwrap();
        std::fs::set_permissions(&tool, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        std::fs::write(home.join(".bash_profile"), format!("export PATH='{}':/usr/bin:/bin\n", tools.display()))
            .unwrap();
        let shell = dir.join("login-shell");
        std::fs::write(&shell, format!("#!/bin/sh\nexec env -i HOME='{}' /bin/bash \"$@\"\n", home.display())).unwrap();
        std::fs::set_permissions(&shell, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let file = dir.join("greet.json");
        write_blueprint(&file, "greet", vec![sh("greet", "greet-from-profile", "start")]);
        (Some(file), vec![("SHELL", shell)])
    })
    .await;
    app.wait_count("[data-testid=task-node]", 3).await;
    launch(&app).await;
    app.wait_attr(&card("greet"), "data-state", "SUCCEEDED").await;
    app.click(&card("greet")).await;
    eventually("greet's log", || async {
        app.content("[data-testid=log-view]").await.filter(|log| log.contains("hello from the profile"))
    })
    .await;
    app.screenshot("login-shell-path.png").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_task_is_cancelled_from_its_details() {
    let app = App::start(|dir| {
        let file = dir.join("long.json");
        write_blueprint(&file, "long", vec![sh("slow", "echo started; sleep 120", "start")]);
        Some(file)
    })
    .await;
    app.wait_count("[data-testid=task-node]", 3).await;
    launch(&app).await;
    app.wait_attr(&card("slow"), "data-state", "RUNNING").await;
    app.click(&card("slow")).await;
    eventually("slow's first line", || async {
        app.content("[data-testid=log-view]").await.filter(|t| t.contains("started"))
    })
    .await;
    app.click("[data-testid=cancel-task]").await;
    poll_until(
        "the cancelled task failing",
        std::time::Duration::from_secs(30),
        std::time::Duration::from_millis(200),
        || async { (app.attr(&card("slow"), "data-state").await.as_deref() == Some("FAILED")).then_some(()) },
    )
    .await;
    app.wait_attr("[data-testid=run-header]", "data-state", "failed").await;
    app.screenshot("runs-cancelled.png").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_inner_blueprint_instance_is_opened_from_its_composite_with_its_own_states() {
    let app = App::start(|dir| {
        write_blueprint(&dir.join("inner.json"), "inner", vec![sh("work", "echo inside", "start")]);
        let composite = json!({"id": "call", "type": "system.composite", "depends_on": [{"id": "start"}],
            "params": [{"name": "blueprint", "value": {"static": "inner"}}]});
        let file = dir.join("outer.json");
        write_blueprint(&file, "outer", vec![composite]);
        Some(file)
    })
    .await;
    app.wait_count("[data-testid=task-node]", 3).await;
    launch(&app).await;
    app.wait_attr("[data-testid=run-header]", "data-state", "completed").await;
    app.wait_attr(&card("call"), "data-state", "SUCCEEDED").await;
    app.double_click(&card("call")).await;
    app.wait_count("[data-testid=run-crumb]", 2).await;
    app.wait_attr(&card("work"), "data-state", "SUCCEEDED").await;
    app.click(&card("work")).await;
    app.wait_attr("[data-testid=attempt-details]", "data-node", "inner_call.work").await;
    eventually("the inner task's log", || async {
        app.content("[data-testid=log-view]").await.filter(|t| t.contains("inside"))
    })
    .await;
    app.screenshot("runs-inner.png").await;
    app.click("[data-testid=run-crumb]:first-child").await;
    app.wait_count("[data-testid=run-crumb]", 0).await;
    app.wait_attr(&card("call"), "data-state", "SUCCEEDED").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_an_agent_started_shows_its_checklist_and_task_memory_beside_it() {
    let app = App::start(|dir| {
        write_blueprint(&dir.join("deploy.json"), "deploy", vec![sh("build", "echo built", "start")]);
        None
    })
    .await;
    // An agent on the same store, through the facade as its MCP or HTTP connection would be.
    let options = orrery_api::ApiOptions { db: app.dir.path().join("orrery.db"), work_dir: None, max_parallel: None };
    let agent = orrery_api::Api::new(options).as_caller(orrery_api::Caller::new("shop", "claude").unwrap());
    let ok = |job: &'static str, arguments: Value| {
        let agent = agent.clone();
        async move {
            let envelope = agent.call(job, arguments.clone()).await.unwrap();
            assert!(envelope.success, "{job} {arguments}: {envelope:?}");
            envelope.answer
        }
    };
    ok("create_task", json!({"name": "release-1.2", "goal": "Ship 1.2 to staging once the build is green"})).await;
    ok(
        "record_event",
        json!({"task_name": "release-1.2", "kind": "message", "role": "user", "payload": "Ship 1.2 please"}),
    )
    .await;
    let subtasks = ["validate the blueprint", "run it", "report"];
    ok("add_agent_task", json!({"title": "Ship 1.2", "subtasks": subtasks})).await;
    ok("start_agent_task", json!({"task_id": 1})).await;
    let file = app.dir.path().join("deploy.json");
    let started = ok("start_session", json!({"file": file})).await;
    let session = started["session_id"].as_str().unwrap().to_string();
    ok(
        "record_event",
        json!({"task_name": "release-1.2", "kind": "tool_call", "name": "start_session",
        "payload": format!("{{\"file\": \"deploy.json\"}} -> {session}")}),
    )
    .await;
    ok("wait_session", json!({"session_id": session, "timeout_s": 30})).await;
    for index in 0..2 {
        ok("update_agent_subtask", json!({"task_id": 1, "index": index, "status": "done"})).await;
    }
    ok("set_step", json!({"task_name": "release-1.2", "name": "run deploy", "state": "completed"})).await;
    ok("set_step", json!({"task_name": "release-1.2", "name": "tell the user", "state": "in_progress"})).await;
    ok(
        "record_event",
        json!({"task_name": "release-1.2", "kind": "note",
        "payload": "deploy completed: build printed 'built'. Next: tell the user."}),
    )
    .await;

    app.click("[data-testid=mode-runs]").await;
    app.wait_attr("[data-testid=run-item]", "data-session-id", &session).await;
    app.wait_text("[data-testid=run-agent]", "◆ claude").await;
    app.click("[data-testid=run-item]").await;
    app.wait_attr("[data-testid=agent-notes]", "data-agent", "claude").await;
    app.wait_count("[data-testid=agent-memory] .agent-event", 2).await;
    let task = "[data-testid=agent-checklist] .agent-task";
    app.wait_attr(task, "data-status", "in_progress").await;
    app.wait_text(&format!("{task} .agent-count"), "2/3").await;
    // Written after the app showed it: read again while shown.
    ok("update_agent_subtask", json!({"task_id": 1, "index": 2, "status": "done"})).await;
    ok("complete_agent_task", json!({"task_id": 1, "conclusion": "1.2 is on staging; the user was told."})).await;
    app.wait_attr(task, "data-status", "completed").await;
    app.wait_text(&format!("{task} .agent-conclusion"), "1.2 is on staging; the user was told.").await;
    app.screenshot("runs-agent-notes.png").await;
}

/// The processes of this machine whose command line holds `marker`.
fn processes_with(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) {
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            if cmdline.contains(marker) {
                found.push(cmdline);
            }
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_simulation_runs_the_loop_and_the_skip_for_real_and_starts_no_process() {
    // Every shell task would leave a line in runs.log and sleep with a marker the process table shows.
    let marker = format!("orrery-simulation-{}", std::process::id());
    let app = App::start(|dir| {
        let runs = dir.join("runs.log");
        let work = |what: &str| format!("echo {what} >> '{}'; sleep 20 # {marker}", runs.display());
        let mut open = sh("loop", &work("loop"), "start");
        open["scope_start"] = json!({"while_policy": {"condition": "count < 3", "max_iterations": 4}});
        let mut body = sh("body", &work("body"), "loop");
        body["outputs"] = json!([{"name": "count", "value": 0}]);
        let mut close = sh("close", &work("close"), "body");
        close["scope_end"] = json!("loop");
        let mut big = sh("big", &work("big"), "close");
        big["inputs"] = json!([{"name": "count"}]);
        big["condition"] = json!("count > 5");
        write_blueprint(&dir.join("looping.json"), "looping", vec![open, body, close, big]);
        Some(dir.join("looping.json"))
    })
    .await;
    app.wait_count("[data-testid=task-node]", 6).await;
    // Simulate… from the command palette: body's count set to 1, so the loop runs to its bound.
    app.ctrl('k').await;
    app.retype("[data-testid=command-palette-filter]", "simulate").await;
    app.click("[data-testid=command-item][data-command-id='run.simulate']").await;
    app.wait_count("[data-testid=launch-simulation]", 1).await;
    app.retype("[data-testid=launch-outputs]", r#"{"body": {"count": 1}}"#).await;
    app.screenshot("runs-simulate-dialog.png").await;
    app.click("[data-testid=launch-start]").await;

    app.wait_attr("[data-testid=run-header]", "data-state", "completed").await;
    app.wait_count("[data-testid=run-header] [data-testid=run-simulated]", 1).await;
    app.wait_count("[data-testid=run-item] [data-testid=run-simulated]", 1).await;
    app.wait_attr(&card("big"), "data-state", "SKIPPED").await;
    app.wait_attr(&card("body"), "data-state", "SUCCEEDED").await;
    // Four times round (count 1 < 3 each time, bounded by max_iterations), each an attempt of body.
    app.click(&card("body")).await;
    app.wait_attr("[data-testid=attempt-details]", "data-node", "looping.body").await;
    app.wait_attr("[data-testid=attempt-details]", "data-attempt", "4").await;
    app.screenshot("runs-simulated.png").await;
    assert!(processes_with(&marker).is_empty(), "no task process: {:?}", processes_with(&marker));
    assert!(!app.dir.path().join("runs.log").exists(), "no task wrote its line");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_says_its_time_left_from_past_runs_then_draws_its_critical_path_and_marks_the_slow_task() {
    let app = App::start(|dir| {
        let pace = dir.join("pace");
        std::fs::write(&pace, "2").unwrap();
        let b = sh("b", &format!("sleep $(cat '{}')", pace.display()), "a");
        write_blueprint(&dir.join("timed.json"), "timed", vec![sh("a", "sleep 0.2", "start"), b]);
        Some(dir.join("timed.json"))
    })
    .await;
    app.wait_count("[data-testid=task-node]", 4).await;
    // Two past runs where b takes 2 s: the first launched from the editor, the second a restart.
    launch(&app).await;
    app.wait_attr("[data-testid=run-header]", "data-state", "completed").await;
    let mut last = app.attr("[data-testid=run-header]", "data-session-id").await.unwrap();
    for pace in ["2", "8"] {
        std::fs::write(app.dir.path().join("pace"), pace).unwrap();
        app.click("[data-testid=restart]").await;
        last = eventually("the restart opened", || async {
            app.attr("[data-testid=run-header]", "data-session-id").await.filter(|id| *id != last)
        })
        .await;
        if pace == "2" {
            app.wait_attr("[data-testid=run-header]", "data-state", "completed").await;
        }
    }

    // The third run, b taking 8 s: the header and the list say the time left from the two past
    // runs, then that b takes longer than usual.
    let left =
        eventually("the time left", || async { app.text("[data-testid=run-header] [data-testid=time-left]").await })
            .await;
    assert!(left.ends_with(" s left") || left == "about to end" || left == "longer than usual", "{left}");
    app.wait_count(&format!("[data-testid=run-item][data-session-id='{last}'] [data-testid=time-left]"), 1).await;
    app.screenshot("runs-time-left.png").await;
    app.wait_text("[data-testid=run-header] [data-testid=time-left]", "longer than usual").await;
    let why = app.attr("[data-testid=run-header] [data-testid=time-left]", "title").await.unwrap();
    assert!(
        why.starts_with(
            "timed.b already took longer than usual. Estimated from the usual time of each task in 2 past runs"
        ),
        "{why}"
    );

    // Ended: its critical path runs through b, marked slow against its usual of about 2 s.
    app.wait_attr("[data-testid=run-header]", "data-state", "completed").await;
    assert_eq!(app.count("[data-testid=time-left]").await, 0, "nothing is left of a run that ended");
    app.wait_attr("[data-testid=critical-path]", "data-nodes", "timed.start timed.a timed.b timed.end").await;
    app.wait_attr("[data-testid=slow-tasks]", "data-nodes", "timed.b").await;
    app.click("[data-testid=slow-tasks] button").await;
    app.wait_attr("[data-testid=attempt-details]", "data-node", "timed.b").await;
    app.wait_attr("[data-testid=usual]", "data-slow", "true").await;
    let usual = app.text("[data-testid=usual]").await.unwrap();
    assert!(usual.starts_with("2.") && usual.contains("the median of 2 past runs; took 8."), "{usual}");
    app.screenshot("runs-critical-path.png").await;
}

/// The task states at `at` as the stored history says: each node's last change at or before it.
fn states_at(history: &Value, at: i64) -> std::collections::BTreeMap<String, String> {
    let nodes = history["nodes"].as_array().unwrap();
    let mut states = std::collections::BTreeMap::new();
    for change in history["changes"].as_array().unwrap() {
        if change["at"].as_i64().unwrap() <= at {
            let node = nodes[change["node"].as_u64().unwrap() as usize].as_str().unwrap();
            states.insert(node.to_string(), change["state"].as_str().unwrap().to_string());
        }
    }
    states
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_scrubber_shows_a_finished_run_as_it_stood_at_a_moment_and_steps_event_by_event() {
    let app = App::start(|dir| {
        let task = |id: &str, n: u32, after: &str| {
            let work =
                format!(r#"echo {id} begun; sleep 0.5; echo {id} done; printf '{{"n": {n}}}' > "$ORRERY_OUTPUTS""#);
            let mut t = sh(id, &work, after);
            t["outputs"] = json!([{"name": "n"}]);
            t
        };
        write_blueprint(
            &dir.join("travel.json"),
            "travel",
            vec![task("a", 1, "start"), task("b", 2, "a"), task("c", 3, "b")],
        );
        Some(dir.join("travel.json"))
    })
    .await;
    app.wait_count("[data-testid=task-node]", 5).await;
    launch(&app).await;
    app.wait_attr("[data-testid=run-header]", "data-state", "completed").await;
    let session = app.attr("[data-testid=run-header]", "data-session-id").await.unwrap();
    let options = orrery_api::ApiOptions { db: app.dir.path().join("orrery.db"), work_dir: None, max_parallel: None };
    let api = orrery_api::Api::new(options);
    let history = api.call("session_history", json!({"session_id": session})).await.unwrap().answer;

    // Travel, then the scrubber taken to its middle: the graph, the timeline and the details show
    // that moment as the stored events have it.
    app.click("[data-testid=travel-switch]").await;
    app.wait_count("[data-testid=travel]", 1).await;
    app.click("[data-testid=travel-slider]").await;
    let check = |at: i64| {
        let app = &app;
        let expected = states_at(&history, at);
        async move {
            for task in ["a", "b", "c"] {
                let state = expected.get(&format!("travel.{task}")).cloned().unwrap_or_else(|| "PENDING".into());
                app.wait_attr(&card(task), "data-state", &state).await;
            }
            app.wait_attr("[data-testid=timeline]", "data-cursor", &at.to_string()).await;
            expected
        }
    };
    let middle: i64 = eventually("the moment moved to the middle", || async {
        let at: i64 = app.attr("[data-testid=travel]", "data-at").await?.parse().ok()?;
        let end = history["changes"].as_array().unwrap().last().unwrap()["at"].as_i64().unwrap();
        (at < end).then_some(at)
    })
    .await;
    let then = check(middle).await;
    assert_eq!(then.get("travel.b").map(String::as_str), Some("RUNNING"), "the middle of three equal tasks: {then:?}");
    // What a wrote, and b running then.
    app.wait_attr("[data-testid=travel-value][data-key=n]", "data-key", "n").await;
    assert!(app.text("[data-testid=travel-value][data-key=n] code").await.unwrap().starts_with('1'));
    app.click(&card("b")).await;
    app.wait_attr("[data-testid=travel-attempt]", "data-then", "running").await;
    assert_eq!(app.count("[data-testid=exit-code]").await, 0, "no exit code yet at that moment");
    // Its log as it had written it then: begun, not done.
    let log = eventually("b's log of that moment", || async {
        app.content("[data-testid=log-view]").await.filter(|t| t.contains("b begun"))
    })
    .await;
    assert!(!log.contains("b done"), "{log}");
    app.screenshot("runs-time-travel.png").await;

    // A step forward: the next thing that happened (b's end, or its output), shown as it was.
    app.click("[data-testid=travel-forward]").await;
    let next: i64 = eventually("the next moment", || async {
        let at: i64 = app.attr("[data-testid=travel]", "data-at").await?.parse().ok()?;
        (at > middle).then_some(at)
    })
    .await;
    check(next).await;

    // Back to now: the run as it ended.
    app.click("[data-testid=travel-close]").await;
    app.wait_count("[data-testid=travel]", 0).await;
    for task in ["a", "b", "c"] {
        app.wait_attr(&card(task), "data-state", "SUCCEEDED").await;
    }
    app.wait_attr("[data-testid=timeline]", "data-cursor", "").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_tested_alone_from_the_editor_runs_with_the_latest_runs_input_changed_and_nothing_else() {
    let app = App::start(|dir| {
        let runs = dir.join("runs.log");
        let note = |what: &str| format!("echo {what} >> '{}'", runs.display());
        let mut a = sh("a", &format!(r#"{}; printf '{{"n": 7}}' > "$ORRERY_OUTPUTS""#, note("a")), "start");
        a["outputs"] = json!([{"name": "n"}]);
        let work = format!(r#"echo b read $ORRERY_INPUT_N; {}; printf '{{"m": 2}}' > "$ORRERY_OUTPUTS""#, note("b"));
        let mut b = sh("b", &work, "a");
        b["inputs"] = json!([{"name": "n"}]);
        b["outputs"] = json!([{"name": "m"}]);
        write_blueprint(&dir.join("alone.json"), "alone", vec![a, b, sh("c", &note("c"), "b")]);
        Some(dir.join("alone.json"))
    })
    .await;
    app.wait_count("[data-testid=task-node]", 5).await;
    launch(&app).await;
    app.wait_attr("[data-testid=run-header]", "data-state", "completed").await;
    let latest = app.attr("[data-testid=run-header]", "data-session-id").await.unwrap();
    let runs = app.dir.path().join("runs.log");
    assert_eq!(std::fs::read_to_string(&runs).unwrap(), "a\nb\nc\n");

    // Back in the editor, b tested alone: its n as the run gave it, changed to 8.
    app.click("[data-testid=mode-edit]").await;
    app.select_task("b").await;
    app.click("[data-testid=test-task]").await;
    app.wait_attr("[data-testid=alone-latest]", "data-session-id", &latest).await;
    eventually("n as the latest run gave it", || async {
        app.attr("[data-testid=alone-input][data-input=n]", "value").await.filter(|v| v == "7")
    })
    .await;
    app.retype("[data-testid=alone-input][data-input=n]", "8").await;
    app.click("[data-testid=alone-run]").await;
    app.wait_attr("[data-testid=alone-outcome]", "data-state", "completed").await;
    app.wait_text("[data-testid=alone-exit-code]", " · exit 0").await;
    app.wait_count("[data-testid=alone-outputs] [data-output=m]", 1).await;
    eventually("b's log", || async {
        app.content("[data-testid=alone-dialog] [data-testid=log-view]").await.filter(|t| t.contains("b read 8"))
    })
    .await;
    app.screenshot("editor-test-task.png").await;
    // Only b ran.
    assert_eq!(std::fs::read_to_string(&runs).unwrap(), "a\nb\nc\nb\n");
    // The run is one click from the Runs, named for its task.
    app.click("[data-testid=alone-open-run]").await;
    app.wait_count("[data-testid=alone-dialog]", 0).await;
    eventually("the run opened", || async {
        app.attr("[data-testid=run-header]", "data-session-id").await.filter(|id| *id != latest)
    })
    .await;
    app.wait_text("[data-testid=run-header] h2", "alone · b alone").await;
}
