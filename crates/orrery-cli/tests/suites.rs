//! The black-box suites in Python, run against this build's `orrery`, each a client that knows
//! only a published interface:
//!
//! - `tests/protocol/axonx_suite.py`: every job of the task job API and its failures (kill -9 and
//!   restart for an idempotent submit);
//! - `tests/memory/agrag_suite.py`: the task memory jobs as the task memory interface describes
//!   them (kill -9 and restart for an idempotent write);
//! - `tests/mcp/client.py`: the official MCP Python SDK, from nothing to a finished session and
//!   its log, over `orrery mcp` (stdio) and over `/mcp` of `orrery serve` (streamable HTTP).
//!
//! The first two use Python's standard library only (`ORRERY_REFERENCE_PYTHON`, else `python3`);
//! the MCP client its pinned venv (`ORRERY_MCP_PYTHON`, else the one `tests/mcp/setup_client.sh`
//! makes now; never skipped). Each prints one line per check, shown when it fails.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// A suite bounds its own waits; this is the guard against one that hangs anyway.
const HARD_TIMEOUT: Duration = Duration::from_secs(600);

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn collect(mut pipe: impl Read + Send + 'static) -> thread::JoinHandle<String> {
    thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

/// The standard library's Python.
fn plain_python() -> String {
    std::env::var("ORRERY_REFERENCE_PYTHON").unwrap_or_else(|_| "python3".to_string())
}

/// The MCP client's Python: `ORRERY_MCP_PYTHON` (scripts/test.sh sets it), else the venv the
/// setup script makes (or finds) now.
fn mcp_python() -> String {
    if let Ok(python) = std::env::var("ORRERY_MCP_PYTHON") {
        if !python.is_empty() {
            return python;
        }
    }
    let setup = repo_root().join("tests/mcp/setup_client.sh");
    let out = Command::new("bash").arg(&setup).stderr(Stdio::inherit()).output().expect("the setup script runs");
    assert!(out.status.success(), "{} failed ({}); it needs python3 and PyPI", setup.display(), out.status);
    let stdout = String::from_utf8_lossy(&out.stdout);
    stdout.lines().last().expect("the setup script prints the venv's python").trim().to_string()
}

/// Runs `script` (under the repository) with `python` against this build's `orrery`, in its own
/// process group (a timeout takes the servers it started too); fails with its output.
fn run_suite(python: &str, script: &str, extra: &[&str]) {
    let script = repo_root().join(script);
    let mut child = Command::new(python)
        .arg(&script)
        .args(["--orrery", env!("CARGO_BIN_EXE_orrery")])
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap_or_else(|e| panic!("{python} {}: {e}", script.display()));
    let stdout = collect(child.stdout.take().unwrap());
    let stderr = collect(child.stderr.take().unwrap());
    let deadline = Instant::now() + HARD_TIMEOUT;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if Instant::now() >= deadline {
            let _ = Command::new("kill").args(["-KILL", "--", &format!("-{}", child.id())]).status();
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        thread::sleep(Duration::from_millis(100));
    };
    let output = format!("{}{}", stdout.join().unwrap(), stderr.join().unwrap());
    let name = script.display();
    match status {
        None => panic!("{name} did not end within {HARD_TIMEOUT:?}; killed\n{output}"),
        Some(status) if !status.success() => panic!("{name} failed ({status})\n{output}"),
        Some(_) => println!("{output}"),
    }
}

#[test]
fn the_task_job_api_passes_the_protocol_suite() {
    run_suite(&plain_python(), "tests/protocol/axonx_suite.py", &[]);
}

#[test]
fn the_task_memory_jobs_pass_the_memory_suite() {
    run_suite(&plain_python(), "tests/memory/agrag_suite.py", &[]);
}

#[test]
fn the_official_python_client_drives_orrery_mcp_from_nothing_to_a_finished_session() {
    run_suite(&mcp_python(), "tests/mcp/client.py", &["--transport", "stdio"]);
}

#[test]
fn the_official_python_client_drives_mcp_over_streamable_http_under_orrery_serve() {
    run_suite(&mcp_python(), "tests/mcp/client.py", &["--transport", "http"]);
}
