//! The task memory jobs' conformance suite, `tests/memory/agrag_suite.py`, run against this build's `orrery`:
//! a black box that starts `orrery serve` itself (and kills it with SIGKILL and restarts it on the same store),
//! checks create_task, get_task, list_events, list_steps, record_event and set_step as the published task
//! memory interface describes them, and prints one line per check. The Python is `ORRERY_REFERENCE_PYTHON`, else
//! `python3`; the suite uses its standard library only.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// The suite bounds its own waits; this is the guard against a suite that hangs anyway.
const HARD_TIMEOUT: Duration = Duration::from_secs(600);

fn collect(mut pipe: impl Read + Send + 'static) -> thread::JoinHandle<String> {
    thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

#[test]
fn the_task_memory_jobs_pass_the_memory_suite() {
    let suite = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/memory/agrag_suite.py");
    let python = std::env::var("ORRERY_REFERENCE_PYTHON").unwrap_or_else(|_| "python3".to_string());
    let mut child = Command::new(&python)
        .arg(suite)
        .args(["--orrery", env!("CARGO_BIN_EXE_orrery")])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own process group, so that a timeout takes the servers it started too.
        .process_group(0)
        .spawn()
        .unwrap_or_else(|e| panic!("{python} {suite}: {e}"));
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
    match status {
        None => panic!("the memory suite did not end within {HARD_TIMEOUT:?}; killed\n{output}"),
        Some(status) if !status.success() => panic!("the memory suite failed ({status})\n{output}"),
        Some(_) => println!("{output}"),
    }
}
