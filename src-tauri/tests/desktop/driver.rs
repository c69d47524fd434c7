//! Driving the real app: Xvfb, tauri-driver (WebKitWebDriver) and the built `orrery-desktop`
//! binary, over WebDriver. Shared by the window's tests and the window benchmarks
//! (`examples/bench_*.rs`), which include this file.
#![allow(dead_code)] // each includer uses its own part

use std::io::ErrorKind;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder};
use serde_json::json;

/// How long the app may take to show what a step waits for.
pub const PATIENCE: Duration = Duration::from_secs(30);

/// A child process stopped with SIGTERM when dropped: tauri-driver only stops its
/// WebKitWebDriver on TERM/INT/QUIT, and a leftover WebKitWebDriver keeps the run hanging.
pub struct Stopped(pub Child);

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
pub fn spawn(program: &str, args: &[&str], env: &[(&str, &Path)], display: &str, log: &Path) -> Child {
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
pub fn start_xvfb(log: &Path) -> (Stopped, String) {
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

/// Starts tauri-driver on `display` with `env` for the app, on free ports; its log is `log`.
/// The driver, and the port a WebDriver client connects to ([`connect`]).
pub fn start_tauri_driver(env: &[(&str, &Path)], display: &str, log: &Path) -> (Stopped, u16) {
    let (port, native_port) = free_ports();
    let (port_arg, native_port_arg) = (port.to_string(), native_port.to_string());
    let args = ["--port", &port_arg, "--native-port", &native_port_arg];
    (Stopped(spawn("tauri-driver", &args, env, display, log)), port)
}

/// Two free ports for tauri-driver and the native driver behind it, told apart: both are bound
/// at once while they are picked (one after the other, the system may give the same port twice,
/// and then one of the drivers cannot listen).
pub fn free_ports() -> (u16, u16) {
    let bind = || TcpListener::bind("127.0.0.1:0").unwrap();
    let (first, second) = (bind(), bind());
    (first.local_addr().unwrap().port(), second.local_addr().unwrap().port())
}

/// The app's process and its children (WebKit's processes), the app first.
pub fn app_processes(app: &Path) -> Vec<u32> {
    let mut found = Vec::new();
    let mut children: Vec<(u32, u32)> = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        if std::fs::read_link(entry.path().join("exe")).is_ok_and(|exe| exe == app) {
            found.push(pid);
        }
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        // The parent's pid is the second field after the name, which ends at the last ')'.
        if let Some(ppid) = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse().ok()) {
            children.push((pid, ppid));
        }
    }
    let mut all = found.clone();
    let mut i = 0;
    while i < all.len() {
        let parent = all[i];
        all.extend(children.iter().filter(|(_, ppid)| *ppid == parent).map(|(pid, _)| *pid));
        i += 1;
    }
    all
}

pub async fn connect(port: u16, app: &Path) -> Client {
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
pub async fn eventually<T, F, Fut>(what: &str, probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    poll_until(what, PATIENCE, Duration::from_millis(200), probe).await
}

/// Polls `probe` every `every` until it answers `Some`; fails with `what` after `patience`.
pub async fn poll_until<T, F, Fut>(what: &str, patience: Duration, every: Duration, mut probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + patience;
    loop {
        if let Some(value) = probe().await {
            return value;
        }
        assert!(Instant::now() < deadline, "after {patience:?}, still waiting for {what}");
        tokio::time::sleep(every).await;
    }
}

/// Saves what the window shows; waits two frames first, as a screenshot can lag the page.
///
/// WebKit takes the screenshot after the page's next paint; when it paints without compositing
/// (as the app asks without a GPU, docs/desktop.md) a page with nothing to paint never gives
/// one, and the screenshot never comes. So an invisible pixel changes for a second after.
pub async fn screenshot(client: &Client, path: &Path) {
    let frames = "const done = arguments[0]; \
        const pixel = document.createElement('div'); \
        pixel.style.cssText = 'position:fixed;left:0;top:0;width:1px;height:1px;pointer-events:none;opacity:0.01'; \
        document.documentElement.appendChild(pixel); \
        let n = 0; \
        const change = () => { pixel.style.opacity = n % 2 ? '0.01' : '0.02'; if (++n < 60) setTimeout(change, 16); else pixel.remove(); }; \
        requestAnimationFrame(() => requestAnimationFrame(() => { change(); done(true); }));";
    client.execute_async(frames, vec![]).await.unwrap();
    let png = client.screenshot().await.expect("a screenshot");
    std::fs::write(path, png).unwrap();
}
