//! The footprint benchmark (issue 22), run by `scripts/bench_footprint.sh`: the release app
//! started on a small blueprint in a real WebKitGTK window under Xvfb, over WebDriver
//! (tauri-driver), as it is and with each variant given (an environment to start it with, such
//! as WebKit's compositing turned off), in the same run:
//!
//! - **start to interactive**: from starting the app (the WebDriver session) to the blueprint
//!   painted and the page answering a frame later, median of `--runs` launches;
//! - **idle memory**: after the last launch has stood idle `--idle` seconds, each process of the
//!   app (the backend, WebKit's web and network processes) from `/proc/PID/smaps_rollup`: RSS,
//!   PSS (shared pages split between their users) and anonymous memory, and the mappings that
//!   hold the most of it: where the memory goes.
//!
//!   bench_footprint --app APP --out TABLE.md [--runs N] [--idle S] [--variant NAME:K=V[,K=V]]...
//!       BLUEPRINT.json
//!
//! Built only with the `bench-editor` feature, so never by `cargo test`.

#[path = "../tests/desktop/driver.rs"]
mod driver;
#[allow(dead_code)] // its TWO_FRAMES only
#[path = "common/frames.rs"]
mod frames;
#[path = "common/marks.rs"]
mod marks;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use driver::{app_processes, connect, start_tauri_driver, start_xvfb};
use frames::TWO_FRAMES;

/// One process's memory, in MB.
#[derive(Default, Clone)]
struct Memory {
    name: String,
    rss: f64,
    pss: f64,
    anonymous: f64,
    /// The mappings holding the most RSS: (MB, what).
    largest: Vec<(f64, String)>,
}

struct Figures {
    variant: String,
    interactive_ms: Vec<f64>,
    processes: Vec<Memory>,
}

fn main() {
    let mut args = std::env::args().skip(1);
    let (mut app, mut out, mut runs, mut idle, mut file) = (None, None, 5, 10, None);
    let mut variants: Vec<(String, Vec<(String, String)>)> = vec![("as it is".into(), Vec::new())];
    while let Some(a) = args.next() {
        match a.as_str() {
            "--app" => app = args.next().map(PathBuf::from),
            "--out" => out = args.next().map(PathBuf::from),
            "--runs" => runs = args.next().and_then(|n| n.parse().ok()).expect("--runs N"),
            "--idle" => idle = args.next().and_then(|n| n.parse().ok()).expect("--idle SECONDS"),
            "--variant" => {
                let given = args.next().expect("--variant NAME:K=V[,K=V]");
                let (name, env) = given.split_once(':').expect("--variant NAME:K=V[,K=V]");
                let env = env.split(',').filter_map(|kv| kv.split_once('=')).map(|(k, v)| (k.into(), v.into()));
                variants.push((name.into(), env.collect()));
            }
            _ => file = Some(PathBuf::from(a)),
        }
    }
    let usage =
        "usage: bench_footprint --app APP --out TABLE.md [--runs N] [--idle S] [--variant NAME:K=V]... BLUEPRINT";
    let (Some(app), Some(out), Some(file)) = (app, out, file) else { panic!("{usage}") };
    let app = std::fs::canonicalize(&app).unwrap_or_else(|e| panic!("no app at {}: {e}", app.display()));

    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let logs = tempfile::tempdir().unwrap();
    let (_xvfb, display) = start_xvfb(&logs.path().join("xvfb.log"));
    let mut all = Vec::new();
    for (variant, env) in &variants {
        let mut figures = Figures { variant: variant.clone(), interactive_ms: Vec::new(), processes: Vec::new() };
        for run in 0..runs {
            let last = run + 1 == runs;
            let (ms, processes) =
                runtime.block_on(launch(&app, &file, env, &display, logs.path(), last.then_some(idle)));
            eprintln!("bench_footprint: {variant}, launch {}/{runs}: interactive after {ms:.0} ms", run + 1);
            figures.interactive_ms.push(ms);
            if last {
                figures.processes = processes;
            }
        }
        all.push(figures);
    }
    let table = table(&all, runs, idle);
    if let Some(dir) = out.parent() {
        std::fs::create_dir_all(dir).unwrap();
    }
    std::fs::write(&out, &table).unwrap();
    print!("{table}");
}

/// One launch: the time to interactive, and after `idle` seconds (when given) the memory of the
/// app's processes.
async fn launch(
    app: &Path,
    file: &Path,
    env: &[(String, String)],
    display: &str,
    logs: &Path,
    idle: Option<u64>,
) -> (f64, Vec<Memory>) {
    let dir = tempfile::tempdir().unwrap();
    let blueprint = dir.path().join("blueprint.json");
    std::fs::copy(file, &blueprint).unwrap();
    let db = dir.path().join("orrery.db");
    let mut vars: Vec<(&str, &Path)> =
        vec![("ORRERY_OPEN", &blueprint), ("ORRERY_DB", &db), ("ORRERY_CONFIG_DIR", dir.path())];
    vars.extend(env.iter().map(|(k, v)| (k.as_str(), Path::new(v))));
    let (driver, port) = start_tauri_driver(&vars, display, &logs.join("tauri-driver.log"));

    let started = marks::epoch_ms();
    let client = connect(port, app).await;
    let (origin, _) = marks::wait_for_mark(&client, "open-painted").await;
    let answered = client.execute_async(TWO_FRAMES, vec![]).await.unwrap().as_f64().unwrap();
    let interactive = origin + answered - started;
    let mut processes = Vec::new();
    if let Some(idle) = idle {
        tokio::time::sleep(Duration::from_secs(idle)).await;
        processes = app_processes(app).iter().map(|&pid| memory(pid)).collect();
    }
    let _ = client.close().await;
    drop(driver);
    (interactive, processes)
}

fn memory(pid: u32) -> Memory {
    let kb = |text: &str, key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key)?.trim().strip_suffix("kB")?.trim().parse::<f64>().ok())
            .unwrap_or(f64::NAN)
            / 1024.0
    };
    let rollup = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).unwrap_or_default();
    let name = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default().trim().to_string();
    // RSS by what is mapped: a library, the heap, or anonymous memory.
    let mut by_what: std::collections::HashMap<String, f64> = Default::default();
    let mut what = String::new();
    for line in std::fs::read_to_string(format!("/proc/{pid}/smaps")).unwrap_or_default().lines() {
        let head = line.split_whitespace().next().unwrap_or("");
        if head.contains('-') && head.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
            let path = line.split_whitespace().nth(5).unwrap_or("");
            what =
                if path.is_empty() { "anonymous".into() } else { path.rsplit('/').next().unwrap_or(path).to_string() };
        } else if let Some(rss) = line.strip_prefix("Rss:") {
            let rss = rss.trim().trim_end_matches("kB").trim().parse::<f64>().unwrap_or(0.0) / 1024.0;
            *by_what.entry(what.clone()).or_default() += rss;
        }
    }
    let mut largest: Vec<(f64, String)> = by_what.into_iter().map(|(w, mb)| (mb, w)).collect();
    largest.sort_by(|a, b| b.0.total_cmp(&a.0));
    largest.truncate(5);
    Memory { name, rss: kb(&rollup, "Rss:"), pss: kb(&rollup, "Pss:"), anonymous: kb(&rollup, "Anonymous:"), largest }
}

fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted.get(sorted.len() / 2).copied().unwrap_or(f64::NAN)
}

fn table(all: &[Figures], runs: usize, idle: u64) -> String {
    let mut t = String::new();
    let base = &all[0];
    let total = |f: &Figures, of: fn(&Memory) -> f64| f.processes.iter().map(of).sum::<f64>();
    let _ =
        writeln!(t, "Footprint: the release app on one blueprint; start to interactive, median of {runs} launches;");
    let _ = writeln!(t, "memory after {idle} s idle, per process (MB). The first row is the baseline of the ratios.\n");
    let _ =
        writeln!(t, "| variant | start to interactive | ratio | RSS, all | PSS, all | anonymous, all | ratio (RSS) |");
    let _ = writeln!(t, "|---|---:|---:|---:|---:|---:|---:|");
    for f in all {
        let (ms, rss) = (median(&f.interactive_ms), total(f, |m| m.rss));
        let _ = writeln!(
            t,
            "| {} | {ms:.0} ms | {:.2}x | {rss:.0} | {:.0} | {:.0} | {:.2}x |",
            f.variant,
            ms / median(&base.interactive_ms),
            total(f, |m| m.pss),
            total(f, |m| m.anonymous),
            rss / total(base, |m| m.rss),
        );
    }
    for f in all {
        let _ = writeln!(t, "\n{}: where the memory is\n", f.variant);
        let _ = writeln!(t, "| process | RSS | PSS | anonymous | largest mappings (RSS MB) |");
        let _ = writeln!(t, "|---|---:|---:|---:|---|");
        for m in &f.processes {
            let largest: Vec<String> = m.largest.iter().map(|(mb, what)| format!("{what} {mb:.0}")).collect();
            let _ = writeln!(
                t,
                "| {} | {:.0} | {:.0} | {:.0} | {} |",
                m.name,
                m.rss,
                m.pss,
                m.anonymous,
                largest.join(", ")
            );
        }
    }
    t
}
