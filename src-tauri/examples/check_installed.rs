//! The installed app, started as a desktop launcher starts it (docs/install.md): run by
//! `tests/package/check.sh` after the package is installed.
//!
//!   check_installed DESKTOP_ENTRY HOME
//!
//! HOME is a fresh folder, made the user's home for this run: its `.bash_profile` puts a folder
//! of its own on PATH, and a tool is installed there (`orrery-check-tool`), so a task finds the
//! tool only if the app took the PATH of the user's login shell. The app is started from the
//! `Exec` line of the desktop entry, with a blueprint for its `%F`, by tauri-driver running with
//! nothing but `DISPLAY` and `HOME` in its environment (`env -i`), as a launcher gives; the
//! blueprint's one `shell.run` task calls the tool. The check passes when the run completes, the
//! tool's output is in the file the task wrote and the run's details show the task's PATH with
//! the tool's folder; the store is the user's default one, under
//! HOME. Fails with what it saw; screenshots go to `target/e2e/installed-*.png`.
//!
//! Built only with the `package-check` feature, so never by `cargo test`.

#[path = "../tests/desktop/driver.rs"]
mod driver;

use std::path::{Path, PathBuf};
use std::time::Duration;

use driver::{eventually, free_ports, screenshot, start_xvfb, Stopped};
use fantoccini::{ClientBuilder, Locator};
use serde_json::json;

const TOOL: &str = "orrery-check-tool";

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [entry, home] = args.as_slice() else {
        eprintln!("usage: check_installed DESKTOP_ENTRY HOME");
        std::process::exit(2);
    };
    let home = PathBuf::from(home);
    let (program, exec_args) = exec_line(Path::new(entry));

    // The tool, on a PATH only the login shell's profile sets.
    let tools = home.join("tools/bin");
    std::fs::create_dir_all(&tools).unwrap();
    let tool = tools.join(TOOL);
    std::fs::write(&tool, "#!/bin/sh\necho \"found by the login shell's PATH\"\n").unwrap();
    std::fs::set_permissions(&tool, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    std::fs::write(home.join(".bash_profile"), format!("export PATH=\"{}:$PATH\"\n", tools.display())).unwrap();

    let out = home.join("tool-output.txt");
    let blueprint = home.join("check.blueprint.json");
    let command = format!("{TOOL} > '{}'", out.display());
    let text = json!({
        "id": "check-installed", "name": "Check installed", "version": "1.0",
        "tasks": [
            {"id": "start", "type": "system.start"},
            {"id": "use-tool", "type": "shell.run", "params": [{"name": "command", "value": command}],
             "depends_on": [{"id": "start"}]},
            {"id": "end", "type": "system.end", "depends_on": [{"id": "use-tool"}]}
        ]
    });
    std::fs::write(&blueprint, serde_json::to_string_pretty(&text).unwrap()).unwrap();
    let app_args: Vec<String> = exec_args
        .iter()
        .flat_map(|a| match a.as_str() {
            "%F" | "%f" | "%U" | "%u" => vec![blueprint.display().to_string()],
            code if code.starts_with('%') => vec![],
            other => vec![other.to_string()],
        })
        .collect();

    let shots = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/e2e");
    std::fs::create_dir_all(&shots).unwrap();
    let (_xvfb, display) = start_xvfb(&shots.join("installed-xvfb.log"));
    let (port, native_port) = free_ports();
    let log = std::fs::File::create(shots.join("installed-tauri-driver.log")).unwrap();
    let driver = which("tauri-driver");
    let native = which("WebKitWebDriver");
    // A launcher's environment: the display and the home folder, nothing else.
    let _driver = Stopped(
        std::process::Command::new("env")
            .args(["-i", &format!("DISPLAY={display}"), &format!("HOME={}", home.display())])
            .arg(&driver)
            .args(["--port", &port.to_string(), "--native-port", &native_port.to_string()])
            .arg("--native-driver")
            .arg(&native)
            .stdin(std::process::Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("start tauri-driver"),
    );
    let mut capabilities = serde_json::Map::new();
    capabilities.insert("browserName".into(), json!("wry"));
    capabilities.insert("tauri:options".into(), json!({"application": program, "args": app_args}));
    let client = eventually("a WebDriver session with the installed app", || async {
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        ClientBuilder::new(connector)
            .capabilities(capabilities.clone())
            .connect(&format!("http://127.0.0.1:{port}"))
            .await
            .ok()
    })
    .await;

    eventually("the blueprint open, with its Run button", || async {
        client.find(Locator::Css("[data-testid=run]:not([disabled])")).await.ok()
    })
    .await;
    screenshot(&client, &shots.join("installed-launched.png")).await;
    client.find(Locator::Css("[data-testid=run]")).await.unwrap().click().await.unwrap();
    let state = eventually("the run to end", || async {
        let header = client.find(Locator::Css("[data-testid=run-header]")).await.ok()?;
        let state = header.attr("data-state").await.ok()??;
        matches!(state.as_str(), "completed" | "failed" | "stopped").then_some(state)
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    screenshot(&client, &shots.join("installed-run.png")).await;
    // The run's details say which environment the task saw: the login shell's PATH.
    let node = "[data-testid=task-node][data-task-id='use-tool']";
    client.find(Locator::Css(node)).await.unwrap().click().await.unwrap();
    let summary = eventually("the task's environment in the run's details", || async {
        client.find(Locator::Css("[data-testid=attempt-environment] summary")).await.ok()
    })
    .await;
    summary.click().await.unwrap();
    let script = "return document.querySelector('[data-testid=attempt-environment] [data-variable=PATH]')?.textContent";
    let path = client.execute(script, vec![]).await.ok().and_then(|v| v.as_str().map(str::to_string));
    tokio::time::sleep(Duration::from_millis(300)).await;
    screenshot(&client, &shots.join("installed-environment.png")).await;
    let _ = client.close().await;
    let written = std::fs::read_to_string(&out).unwrap_or_default();
    if state != "completed" || !written.contains("found by the login shell's PATH") {
        eprintln!("check_installed: the run {state}; the task wrote {written:?} (screenshots in {})", shots.display());
        std::process::exit(1);
    }
    if !path.as_deref().is_some_and(|p| std::env::split_paths(p).any(|d| d == tools)) {
        eprintln!("check_installed: the run's details show the task's PATH as {path:?}, without {}", tools.display());
        std::process::exit(1);
    }
    println!(
        "check_installed: started from {entry} with only DISPLAY and HOME, the run completed, its task found {TOOL}"
    );
}

/// The program and arguments of a desktop entry's `Exec` line (no quoting: the package writes
/// none).
fn exec_line(entry: &Path) -> (String, Vec<String>) {
    let text = std::fs::read_to_string(entry).unwrap_or_else(|e| panic!("{}: {e}", entry.display()));
    let exec = text.lines().find_map(|l| l.strip_prefix("Exec=")).expect("an Exec line");
    let mut words = exec.split_whitespace().map(str::to_string);
    let program = words.next().expect("a program on the Exec line");
    // A launcher looks the program up on its own PATH: the package puts it in /usr/bin.
    let program = if program.contains('/') { program } else { format!("/usr/bin/{program}") };
    (program, words.collect())
}

fn which(program: &str) -> PathBuf {
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("{program} is not on PATH: run scripts/setup.sh"))
}
