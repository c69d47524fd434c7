//! A new user's first hour, driven in the real window and counted: from an empty window, a
//! blueprint built from nothing, run, a task made to fail, the failure found, fixed in the
//! editor and retried with the saved blueprint, to a green run. Every click and key the user
//! gives is counted (a shortcut is one key, a drag one action, a file name typed in the save
//! dialog one key a character); the count goes to `target/e2e/first-hour.txt`.

use super::app::App;
use super::driver::eventually;

/// The actions the hour took when it was first counted in full: a change that makes it take
/// more fails here, and says which way the count went.
const BUDGET: usize = 75;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_hour_from_an_empty_window_to_a_fixed_green_run() {
    let app = App::start(|_| None).await;
    let file = app.dir.path().join("nightly-report.blueprint.json");
    let mut steps: Vec<(&str, usize)> = Vec::new();
    let mut mark = |step: &'static str, app: &App| {
        let before: usize = steps.iter().map(|(_, n)| n).sum();
        steps.push((step, app.actions() - before));
    };

    // A new blueprint: a start and an end.
    app.click("[data-testid=welcome-new]").await;
    app.wait_count("[data-testid=task-node]", 2).await;
    mark("new blueprint", &app);

    // A shell task from the palette: wired in before the end, selected, its command typed.
    app.click("[data-testid=palette-item][data-task-type='shell.run']").await;
    app.wait_count("[data-testid='rf__edge-run_1->end']", 1).await;
    app.wait_count("[data-testid=param-script]", 1).await;
    app.retype_code("[data-testid=param-script]", "echo checking; exit 3").await;
    mark("a task added and its command typed", &app);

    // Saved (Ctrl+S asks where): the blueprint takes its id and name from the file.
    app.ctrl('s').await;
    app.answer_file_dialog("Save File", &file).await;
    eventually("saved and named from the file", || async {
        std::fs::read_to_string(&file).ok().filter(|t| t.contains("\"id\": \"nightly-report\""))
    })
    .await;
    mark("saved", &app);

    // Run: nothing to ask, it starts at once; the failure is shown first.
    app.click("[data-testid=run]").await;
    app.wait_attr("[data-testid=run-header]", "data-state", "failed").await;
    app.wait_attr("[data-testid=attempt-details]", "data-node", "nightly-report.run_1").await;
    app.wait_text("[data-testid=run-error-task]", "run_1 failed").await;
    eventually("the failed task's log", || async {
        app.content("[data-testid=log-view]").await.filter(|t| t.contains("checking"))
    })
    .await;
    app.screenshot("first-hour-failed.png").await;
    mark("run and failure found", &app);

    // Fixed in the editor and saved.
    app.click("[data-testid=mode-edit]").await;
    app.wait_count("[data-testid=param-script]", 1).await;
    app.retype_code("[data-testid=param-script]", "echo fixed").await;
    app.ctrl('s').await;
    eventually("the fix saved", || async { std::fs::read_to_string(&file).ok().filter(|t| t.contains("echo fixed")) })
        .await;
    mark("fixed and saved", &app);

    // Retried from the failure with the saved blueprint: green.
    app.click("[data-testid=mode-runs]").await;
    app.click("[data-testid=resume]").await;
    app.click("[data-testid=rerun-saved]").await;
    app.wait_attr("[data-testid=run-header]", "data-state", "completed").await;
    // The new run's timeline shows it whole (it once kept the failed run's view, its bars cut at
    // the edge): both of its attempts drawn.
    app.wait_attr("[data-testid=timeline]", "data-bars", "2").await;
    app.screenshot("first-hour-green.png").await;
    mark("retried green", &app);

    let total = app.actions();
    let lines: Vec<String> = steps.iter().map(|(step, n)| format!("{n:>4}  {step}")).collect();
    let report = format!("{}\n{total:>4}  in all\n", lines.join("\n"));
    std::fs::write(app.shots.join("first-hour.txt"), &report).unwrap();
    eprintln!("the first hour:\n{report}");
    assert!(total <= BUDGET, "the first hour took {total} actions, more than {BUDGET}:\n{report}");
}
