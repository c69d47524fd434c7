//! Item 9: deeply nested scopes. Validating N nested scopes cost time and memory quadratic in
//! N (every scope's member list was built; 91 s and 5.3 GB for 20,000 in a release build), and
//! `orrery graph` of 10,000 overflowed the stack (one recursion per level). Now validation
//! contracts each scope once found (linear in N) and rendering walks the scope tree with an
//! explicit stack. `orrery validate` and `orrery graph` (both formats) of 20,000 nested scopes
//! succeed; the times of 5,000, 10,000 and 20,000 are printed (only a generous hang guard is
//! asserted).

use serde_json::{json, Value};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A guard against a hung or quadratic command only: no assertion depends on speed.
const HANG: Duration = Duration::from_secs(120);

pub struct Scratch(pub PathBuf);

impl Scratch {
    pub fn new(name: &str) -> Scratch {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("nesting-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `depth` scopes nested in one another: start -> open_1 -> ... -> open_N -> close_N -> ...
/// -> close_1 -> end, where `open_i` opens scope i (`scope_start`) and `close_i` closes it
/// (`scope_end: "open_i"`). 2N + 2 tasks.
pub fn nested_scopes(depth: usize) -> Value {
    let task = |id: String, after: String| {
        json!({"id": id, "type": "shell.run", "params": [{"name": "command", "value": "true"}],
               "depends_on": [{"id": after}]})
    };
    let mut tasks = vec![json!({"id": "start", "type": "system.start"})];
    let mut previous = "start".to_string();
    for i in 1..=depth {
        let mut open = task(format!("open_{i}"), previous);
        open["scope_start"] = json!({"name": format!("level {i}")});
        tasks.push(open);
        previous = format!("open_{i}");
    }
    for i in (1..=depth).rev() {
        let mut close = task(format!("close_{i}"), previous);
        close["scope_end"] = json!(format!("open_{i}"));
        tasks.push(close);
        previous = format!("close_{i}");
    }
    tasks.push(json!({"id": "end", "type": "system.end", "depends_on": [{"id": previous}]}));
    json!({"id": format!("nested_{depth}"), "name": "nested scopes", "version": "1.0", "tasks": tasks})
}

/// Runs `orrery ARGS`, killing it if it outlives [`HANG`]: (exit code, stdout, stderr, time).
pub fn orrery(dir: &Path, args: &[&str]) -> (Option<i32>, String, String, Duration) {
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_orrery"))
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out_pipe = child.stdout.take().unwrap();
    let mut err_pipe = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = out_pipe.read_to_string(&mut text);
        text
    });
    let err = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = err_pipe.read_to_string(&mut text);
        text
    });
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > HANG {
            let _ = child.kill();
            let _ = child.wait();
            panic!("orrery {args:?} still ran after {HANG:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    (status.code(), out.join().unwrap(), err.join().unwrap(), started.elapsed())
}

#[test]
fn twenty_thousand_nested_scopes_validate_and_graph() {
    let s = Scratch::new("deep");
    for depth in [5_000, 10_000, 20_000] {
        let file = s.0.join(format!("nested_{depth}.json"));
        std::fs::write(&file, serde_json::to_string_pretty(&nested_scopes(depth)).unwrap()).unwrap();
        let path = file.to_str().unwrap();

        let (code, out, err, took) = orrery(&s.0, &["validate", "--format", "json", path]);
        println!("validate, {depth} nested scopes: {took:?}");
        assert_eq!(code, Some(0), "validate {depth}: {err}");
        let report: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
        let text = report.to_string();
        assert!(
            !text.contains("scopes-interlaced") && !text.contains("scope-end-unreachable"),
            "{depth}: {text:.2000}"
        );

        let (code, dot, err, took) = orrery(&s.0, &["graph", "--format", "dot", path]);
        println!("graph --format dot, {depth} nested scopes: {took:?}, {} bytes", dot.len());
        assert_eq!(code, Some(0), "graph dot {depth}: {err}");
        assert_eq!(dot.matches("subgraph ").count(), depth, "one cluster per scope");
        assert!(dot.contains("\"cluster_open_1\"") && dot.contains(&format!("\"cluster_open_{depth}\"")));
        // Clusters nest: every cluster is closed, the innermost inside all the others.
        let innermost = dot.find(&format!("\"cluster_open_{depth}\"")).unwrap();
        assert_eq!(dot[..innermost].matches("subgraph ").count(), depth, "the innermost cluster opens last");
        assert!(!dot[innermost..].contains("subgraph "), "nothing opens inside the innermost cluster");
        assert!(dot.len() < 64 * depth * 10, "the text grows linearly: {} bytes", dot.len());

        let (code, mermaid, err, took) = orrery(&s.0, &["graph", "--format", "mermaid", path]);
        println!("graph --format mermaid, {depth} nested scopes: {took:?}, {} bytes", mermaid.len());
        assert_eq!(code, Some(0), "graph mermaid {depth}: {err}");
        assert_eq!(mermaid.matches("subgraph ").count(), depth);
        assert_eq!(mermaid.lines().filter(|l| l.trim() == "end").count(), depth, "every subgraph ends");
    }
}
