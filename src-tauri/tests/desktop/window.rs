//! The real app in a real window: Xvfb, tauri-driver (WebKitWebDriver) and the built
//! `orrery-desktop` binary, driven over WebDriver. `scripts/setup.sh` installs what it needs.

use std::io::ErrorKind;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use orrery_api::{Api, ApiOptions};
use serde_json::{json, Value};

/// How long the app may take to show what a step waits for.
const PATIENCE: Duration = Duration::from_secs(30);

/// A child process stopped with SIGTERM when dropped: tauri-driver only stops its
/// WebKitWebDriver on TERM/INT/QUIT, and a leftover WebKitWebDriver keeps the run hanging.
struct Stopped(Child);

impl Drop for Stopped {
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-TERM", &self.0.id().to_string()]).status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.0.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `program` on `display`; its output goes to `log`, never to the test's own pipes, which
/// a leftover child would keep open.
fn spawn(program: &str, args: &[&str], env: &[(&str, &Path)], display: &str, log: &Path) -> Child {
    let log = std::fs::File::create(log).unwrap();
    let mut command = Command::new(program);
    command.args(args).env("DISPLAY", display).stdin(Stdio::null()).stdout(log.try_clone().unwrap()).stderr(log);
    for (key, value) in env {
        command.env(key, value);
    }
    command.spawn().unwrap_or_else(|e| match e.kind() {
        ErrorKind::NotFound => panic!("{program} is missing: run scripts/setup.sh (it installs the e2e tools)"),
        _ => panic!("cannot start {program}: {e}"),
    })
}

/// An X server on the first free display from :90.
fn start_xvfb(log: &Path) -> (Stopped, String) {
    for n in 90..200 {
        let socket = PathBuf::from(format!("/tmp/.X11-unix/X{n}"));
        if socket.exists() || Path::new(&format!("/tmp/.X{n}-lock")).exists() {
            continue;
        }
        let display = format!(":{n}");
        let mut xvfb =
            Stopped(spawn("Xvfb", &[&display, "-screen", "0", "1280x800x24", "-nolisten", "tcp"], &[], "", log));
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline && !socket.exists() {
            if let Ok(Some(_)) = xvfb.0.try_wait() {
                break; // another server took the display meanwhile: try the next one
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        if socket.exists() {
            return (xvfb, display);
        }
    }
    panic!("no free X display between :90 and :199");
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

async fn connect(port: u16, app: &Path) -> Client {
    let mut capabilities = serde_json::Map::new();
    capabilities.insert("browserName".into(), json!("wry"));
    capabilities.insert("tauri:options".into(), json!({"application": app}));
    let deadline = Instant::now() + PATIENCE;
    loop {
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        match ClientBuilder::new(connector)
            .capabilities(capabilities.clone())
            .connect(&format!("http://127.0.0.1:{port}"))
            .await
        {
            Ok(client) => return client,
            Err(e) if Instant::now() > deadline => panic!("tauri-driver did not start a session: {e}"),
            Err(_) => tokio::time::sleep(Duration::from_millis(250)).await,
        }
    }
}

/// Polls `probe` until it answers `Some`, or fails the test with `what`.
async fn eventually<T, F, Fut>(what: &str, mut probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + PATIENCE;
    loop {
        if let Some(value) = probe().await {
            return value;
        }
        assert!(Instant::now() < deadline, "after {PATIENCE:?}, still waiting for {what}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn count(client: &Client, css: &str) -> usize {
    client.find_all(Locator::Css(css)).await.map(|found| found.len()).unwrap_or(0)
}

async fn text(client: &Client, css: &str) -> Option<String> {
    client.find(Locator::Css(css)).await.ok()?.text().await.ok()
}

/// Saves what the window shows; waits two frames first, as a screenshot can lag the page.
async fn screenshot(client: &Client, path: &Path) {
    let frames = "const done = arguments[0]; requestAnimationFrame(() => requestAnimationFrame(() => done(true)));";
    client.execute_async(frames, vec![]).await.unwrap();
    let png = client.screenshot().await.expect("a screenshot");
    std::fs::write(path, png).unwrap();
}

fn window_titled(display: &str, title: &str) -> bool {
    let found = Command::new("xdotool").args(["search", "--name", title]).env("DISPLAY", display).output();
    found.is_ok_and(|o| o.status.success() && !o.stdout.is_empty())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_editor_shows_checks_edits_and_saves_a_blueprint_in_the_real_window() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let dir = tempfile::tempdir().unwrap();
    let blueprint = dir.path().join("assembly.json");
    std::fs::copy(root.join("examples/assembly.json"), &blueprint).unwrap();
    // Its composite's inner blueprint beside it, as in examples/: found when it is checked.
    std::fs::copy(root.join("examples/place_element.json"), dir.path().join("place_element.json")).unwrap();
    let original = std::fs::read_to_string(&blueprint).unwrap();
    let tasks = serde_json::from_str::<Value>(&original).unwrap()["tasks"].as_array().unwrap().len();
    let db = dir.path().join("orrery.db");
    let app = PathBuf::from(env!("CARGO_BIN_EXE_orrery-desktop"));
    let shots = root.join("target/e2e");

    std::fs::create_dir_all(&shots).unwrap();
    let (_xvfb, display) = start_xvfb(&shots.join("xvfb.log"));
    let (port, native_port) = (free_port(), free_port());
    let env = [("ORRERY_OPEN", blueprint.as_path()), ("ORRERY_DB", db.as_path())];
    let (port_arg, native_port_arg) = (port.to_string(), native_port.to_string());
    let args = ["--port", &port_arg, "--native-port", &native_port_arg];
    let _driver = Stopped(spawn("tauri-driver", &args, &env, &display, &shots.join("tauri-driver.log")));
    let client = connect(port, &app).await;

    // One node per task of the file, laid out, and the facade's verdict without errors.
    let shown = eventually("a node per task", || async {
        let n = count(&client, "[data-testid=task-node]").await;
        (n == tasks).then_some(n)
    })
    .await;
    assert_eq!(shown, tasks);
    let summary = eventually("the problems summary", || async {
        text(&client, "[data-testid=problems-summary]").await.filter(|s| s != "Checking…")
    })
    .await;
    assert_eq!(summary, "No problems", "the example is clean once its inner blueprint is found beside it");
    assert!(window_titled(&display, "^Orrery — assembly.json$"), "the window title names the open file");
    screenshot(&client, &shots.join("editor-open.png")).await;

    // Save writes the canonical text, as the format job makes it.
    let options = ApiOptions { db: db.clone(), work_dir: None, max_parallel: None };
    let formatted = Api::new(options).call("format_blueprint", json!({"text": original})).await.unwrap();
    let canonical = formatted.answer["text"].as_str().unwrap().to_string();
    client.find(Locator::Css("[data-testid=save]")).await.unwrap().click().await.unwrap();
    eventually("the file saved in canonical form", || async {
        (std::fs::read_to_string(&blueprint).ok()? == canonical).then_some(())
    })
    .await;

    // A task added from the palette depends on nothing: the facade calls it an orphan.
    let shell_run = client.find(Locator::Css("[data-testid=palette-item][data-task-type='shell.run']")).await;
    shell_run.expect("the palette lists shell.run").click().await.unwrap();
    eventually("one more node", || async {
        (count(&client, "[data-testid=task-node]").await == tasks + 1).then_some(())
    })
    .await;
    eventually("an error badge on the new task", || async {
        (count(&client, "[data-task-id=run_1] [data-testid=error-badge]").await == 1).then_some(())
    })
    .await;
    let summary = eventually("the error in the summary", || async {
        text(&client, "[data-testid=problems-summary]").await.filter(|s| s.contains("error"))
    })
    .await;
    assert!(summary.starts_with("1 error"), "one error, the orphan: {summary:?}");
    screenshot(&client, &shots.join("editor-invalid.png")).await;

    // A problem about a task selects that task (another one selected first).
    client.find(Locator::Css("[data-testid=task-node][data-task-id=start]")).await.unwrap().click().await.unwrap();
    eventually("start selected", || async {
        (count(&client, "[data-task-id=start].selected").await == 1
            && count(&client, "[data-task-id=run_1].selected").await == 0)
            .then_some(())
    })
    .await;
    client.find(Locator::Css("[data-testid=problem][data-task-id=run_1] button")).await.unwrap().click().await.unwrap();
    eventually("the task of the clicked problem selected", || async {
        (count(&client, "[data-task-id=run_1].selected").await == 1).then_some(())
    })
    .await;

    // Undo takes the added task away, and with it the error.
    client.find(Locator::Css("[data-testid=undo]")).await.unwrap().click().await.unwrap();
    eventually("the blueprint as it was", || async {
        let summary = text(&client, "[data-testid=problems-summary]").await?;
        (count(&client, "[data-testid=task-node]").await == tasks && !summary.contains("error")).then_some(())
    })
    .await;

    client.close().await.unwrap();
}
