//! What the compatibility tests share: where the corpus and the reference implementation are,
//! and tidying the scratch folders earlier failed runs kept.

// Each test binary uses some of these.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Output, Stdio};

use serde_json::Value;

pub fn compat_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The corpus is `tests/compat/corpus` (the reference's example blueprints and schema, MIT);
/// ORRERY_CORPUS overrides.
pub fn corpus_dir() -> PathBuf {
    std::env::var_os("ORRERY_CORPUS").map(PathBuf::from).unwrap_or_else(|| compat_dir().join("corpus"))
}

/// The reference venv's python: `$ORRERY_REFERENCE_PYTHON`, else what setup_reference.sh makes.
pub fn reference_python() -> PathBuf {
    if let Some(p) = std::env::var_os("ORRERY_REFERENCE_PYTHON") {
        return PathBuf::from(p);
    }
    let script = compat_dir().join("setup_reference.sh");
    let out =
        Command::new("bash").arg(&script).output().unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
    if !out.status.success() {
        panic!(
            "REFERENCE UNAVAILABLE: {} failed ({}); the compatibility tests need the reference \
             implementation (antikythera-sdk) in a Python venv. Fix the setup or point \
             ORRERY_REFERENCE_PYTHON at a python that has it.\n--- stderr ---\n{}",
            script.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last = stdout
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or_else(|| panic!("{} printed no python path", script.display()));
    PathBuf::from(last.trim())
}

/// Removes the scratch folders named `{prefix}*` that earlier (failed) runs kept under `root`,
/// once they are an hour old.
pub fn sweep_old_scratch(root: &Path, prefix: &str) {
    let Ok(entries) = std::fs::read_dir(root) else { return };
    for e in entries.flatten() {
        let old = e
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age.as_secs() > 3600);
        if old && e.file_name().to_string_lossy().starts_with(prefix) {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

pub fn workspace_root() -> PathBuf {
    compat_dir().join("../..").canonicalize().expect("workspace root")
}

/// The `orrery` binary: `$ORRERY_BIN`, else built here with cargo (a no-op when it is fresh;
/// this package cannot use `CARGO_BIN_EXE_orrery`, which only the orrery-cli package gets).
pub fn orrery_binary() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT.get_or_init(build_orrery).clone()
}

fn build_orrery() -> PathBuf {
    if let Some(p) = std::env::var_os("ORRERY_BIN") {
        return PathBuf::from(p);
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(&cargo)
        .args(["build", "--locked", "-p", "orrery-cli", "--bin", "orrery", "--message-format=json-render-diagnostics"])
        .current_dir(workspace_root())
        .stderr(Stdio::inherit())
        .output()
        .unwrap_or_else(|e| panic!("cannot run cargo to build orrery: {e}"));
    assert!(out.status.success(), "cargo build -p orrery-cli --bin orrery failed ({})", out.status);
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|m| m["reason"] == "compiler-artifact" && m["target"]["name"] == "orrery")
        .find_map(|m| m["executable"].as_str().map(PathBuf::from))
        .expect("cargo build reported no orrery executable")
}

/// A running antikythera deployment (server/serve_reference.py); stopped when dropped: its stdin closes, and it stops every service
/// and waits for them before it exits.
pub struct Deployment {
    /// The server's address; None with `--broker-only`.
    pub url: String,
    /// mqtt://127.0.0.1:PORT
    pub broker: String,
    child: Child,
    stdin: Option<ChildStdin>,
}

impl Drop for Deployment {
    fn drop(&mut self) {
        drop(self.stdin.take());
        for _ in 0..300 {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn deploy() -> Deployment {
    deploy_with(&[])
}

pub fn deploy_with(options: &[&str]) -> Deployment {
    let script = compat_dir().join("server/serve_reference.py");
    let mut child = Command::new(reference_python())
        .arg(&script)
        .args(options)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", script.display()));
    let stdin = child.stdin.take().unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let started: Value = serde_json::from_str(&line)
        .unwrap_or_else(|e| panic!("the deployment did not start ({e}): {line:?}; see its stderr above"));
    Deployment {
        url: started["url"].as_str().unwrap_or_default().to_string(),
        broker: format!("mqtt://127.0.0.1:{}", started["broker_port"]),
        child,
        stdin: Some(stdin),
    }
}

pub fn orrery(args: &[&str], db: &Path) -> Output {
    Command::new(orrery_binary()).args(args).env("ORRERY_DB", db).output().expect("orrery runs")
}

pub fn json_of(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!("not JSON ({e}): {}\n{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
    })
}

/// A fresh scratch folder under target/tmp for one test (earlier runs' folders are swept).
pub fn scratch_dir(name: &str) -> PathBuf {
    let root = workspace_root().join("target/tmp");
    sweep_old_scratch(&root, "orrery-compat-");
    let dir = root.join(format!("orrery-compat-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
