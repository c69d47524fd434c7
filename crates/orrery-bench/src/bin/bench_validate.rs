//! Times Orrery loading and validating one blueprint file.
//!
//!   bench_validate FILE [--runs N] [--library INNER.json]... [--json] [--phases] [--only MEASURE]...
//!
//! First checks the file once (with `check_sources`, the `--library` files given as the
//! blueprints its composites may call) and prints the diagnostics by code; exits 3 when the
//! reference server would refuse the blueprint (any `server_rejects` diagnostic) or Orrery
//! finds an error. Then, after one warm-up, times each measure `--runs` times (default 9) and
//! prints the median and minimum in milliseconds:
//!
//! - `load`: `orrery_blueprint::load(&text)`, text already in memory;
//! - `validate`: `validate_encoded(.., &Library::new())` on the loaded blueprint;
//! - `load_validate`: both, text in memory;
//! - `read_load_validate`: read the file from disk (page cache), then both;
//! - `check_sources`: `Source::read` + `check_sources` (what `orrery validate` does).
//!
//! `--phases` also times public pieces of the pipeline (JSON parse, model building, graph,
//! scopes, condition parsing) to locate a hot spot. `--json` prints one JSON object instead
//! of text. `--only` (repeatable) runs just the measures named, e.g. under a profiler:
//! `perf record -g bench_validate FILE --only validate --runs 50`.
use orrery_blueprint::{check, condition, dataflow, graph::TaskGraph, load, scope, validate, Library};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::hint::black_box;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

struct Measure {
    name: &'static str,
    samples_ms: Vec<f64>,
}

impl Measure {
    fn median(&self) -> f64 {
        let mut s = self.samples_ms.clone();
        s.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let n = s.len();
        if n % 2 == 1 {
            s[n / 2]
        } else {
            (s[n / 2 - 1] + s[n / 2]) / 2.0
        }
    }
    fn min(&self) -> f64 {
        self.samples_ms.iter().copied().fold(f64::INFINITY, f64::min)
    }
}

fn time<R>(name: &'static str, runs: usize, mut f: impl FnMut() -> R) -> Measure {
    if !wanted(name) {
        return Measure { name, samples_ms: Vec::new() };
    }
    black_box(f()); // warm-up
    let mut samples_ms = Vec::with_capacity(runs);
    for _ in 0..runs {
        let t = Instant::now();
        let r = f();
        samples_ms.push(t.elapsed().as_secs_f64() * 1e3);
        drop(black_box(r));
    }
    Measure { name, samples_ms }
}

static ONLY: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();

fn wanted(name: &str) -> bool {
    ONLY.get().is_none_or(|only| only.is_empty() || only.iter().any(|o| o == name))
}

// The same allocator as the `orrery` binary, so the figures are what users get.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let usage =
        "usage: bench_validate FILE [--runs N] [--library INNER.json]... [--json] [--phases] [--only MEASURE]...";
    let mut file: Option<PathBuf> = None;
    let mut runs = 9usize;
    let mut library_files: Vec<PathBuf> = Vec::new();
    let mut as_json = false;
    let mut phases = false;
    let mut only: Vec<String> = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--runs" => runs = args.next().and_then(|v| v.parse().ok()).unwrap_or(runs).max(1),
            "--library" => library_files.extend(args.next().map(PathBuf::from)),
            "--json" => as_json = true,
            "--phases" => phases = true,
            "--only" => only.extend(args.next()),
            "-h" | "--help" => {
                println!("{usage}");
                return ExitCode::SUCCESS;
            }
            _ if file.is_none() => file = Some(PathBuf::from(a)),
            _ => {
                eprintln!("{usage}");
                return ExitCode::from(2);
            }
        }
    }
    ONLY.set(only).expect("set once");
    let Some(file) = file else {
        eprintln!("{usage}");
        return ExitCode::from(2);
    };
    let text = match std::fs::read_to_string(&file) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("cannot read {}: {e}", file.display());
            return ExitCode::FAILURE;
        }
    };

    // The verdict, once, with the inner blueprints available.
    let mut sources = Vec::new();
    for p in std::iter::once(&file).chain(library_files.iter()) {
        match check::Source::read(p) {
            Ok(s) => sources.push(s),
            Err(e) => {
                eprintln!("cannot read {}: {e}", p.display());
                return ExitCode::FAILURE;
            }
        }
    }
    let report = check::check_sources(&sources).into_iter().next().expect("one report per file");
    let mut by_code: BTreeMap<String, usize> = BTreeMap::new();
    for d in &report.diagnostics {
        *by_code.entry(format!("{}:{}", d.severity.as_str(), d.code.as_str())).or_default() += 1;
    }
    let server_rejects = report.diagnostics.iter().filter(|d| d.server_rejects).count();
    let loaded = match load(&text) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("{} does not load: {e}", file.display());
            for d in e.diagnostics.iter().take(20) {
                eprintln!("  {d} at {}", d.path);
            }
            return ExitCode::from(3);
        }
    };
    let tasks = loaded.blueprint.tasks.len();
    let without_library = validate::validate_encoded(&loaded.blueprint, loaded.encoding, &Library::new());
    let mut by_code_empty_library: BTreeMap<String, usize> = BTreeMap::new();
    for d in &without_library {
        *by_code_empty_library.entry(format!("{}:{}", d.severity.as_str(), d.code.as_str())).or_default() += 1;
    }

    let mut measures = vec![
        time("load", runs, || load(&text).expect("loads")),
        time("validate", runs, || validate::validate_encoded(&loaded.blueprint, loaded.encoding, &Library::new())),
        time("load_validate", runs, || {
            let l = load(&text).expect("loads");
            validate::validate_encoded(&l.blueprint, l.encoding, &Library::new())
        }),
        time("read_load_validate", runs, || {
            let t = std::fs::read_to_string(&file).expect("readable");
            let l = load(&t).expect("loads");
            validate::validate_encoded(&l.blueprint, l.encoding, &Library::new())
        }),
        time("check_sources", runs, || {
            let s = check::Source::read(&file).expect("readable");
            check::check_sources(std::slice::from_ref(&s))
        }),
    ];
    if phases {
        let bp = &loaded.blueprint;
        measures.push(time("phase_json_parse", runs, || serde_json::from_str::<Value>(&text).expect("json")));
        // `from_value` consumes the parsed JSON: timed together with the parse; model building
        // alone is the difference between the two.
        measures.push(time("phase_json_parse+from_value", runs, || {
            load::from_value(serde_json::from_str::<Value>(&text).expect("json")).expect("loads")
        }));
        measures.push(time("phase_task_graph", runs, || TaskGraph::new(bp).len()));
        let graph = TaskGraph::new(bp);
        measures.push(time("phase_cycles", runs, || graph.cycles()));
        measures.push(time("phase_scopes", runs, || scope::scopes_in(bp, &graph)));
        measures.push(time("phase_produced_names", runs, || dataflow::produced_names(bp).len()));
        measures.push(time("phase_condition_free_names", runs, || {
            dataflow::condition_sites(bp)
                .iter()
                .map(|s| condition::free_names(s.expression).map(|n| n.len()).unwrap_or(0))
                .sum::<usize>()
        }));
    }

    measures.retain(|m| !m.samples_ms.is_empty());
    let ok = server_rejects == 0 && report.valid;
    if as_json {
        let mut timings = Map::new();
        for m in &measures {
            timings
                .insert(m.name.into(), json!({"median_ms": m.median(), "min_ms": m.min(), "runs": m.samples_ms.len()}));
        }
        let out = json!({
            "file": file.display().to_string(),
            "bytes": text.len(),
            "tasks": tasks,
            "valid": report.valid,
            "server_accepts": report.server_accepts,
            "server_rejects": server_rejects,
            "diagnostics": by_code,
            "diagnostics_without_library": by_code_empty_library,
            "timings": timings,
        });
        println!("{out}");
    } else {
        println!("{}: {tasks} tasks, {:.1} MB", file.display(), text.len() as f64 / 1e6);
        println!(
            "verdict (with {} library file(s)): valid={} server_accepts={} server_rejects={server_rejects}",
            library_files.len(),
            report.valid,
            report.server_accepts
        );
        for (code, n) in &by_code {
            println!("  {code} x{n}");
        }
        if by_code_empty_library != by_code {
            println!("validate_encoded with an empty library:");
            for (code, n) in &by_code_empty_library {
                println!("  {code} x{n}");
            }
        }
        println!("{:<28} {:>12} {:>12}   ({runs} runs after 1 warm-up)", "measure", "median ms", "min ms");
        for m in &measures {
            println!("{:<28} {:>12.2} {:>12.2}", m.name, m.median(), m.min());
        }
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        for d in report.diagnostics.iter().filter(|d| d.server_rejects || d.is_error()).take(20) {
            eprintln!("  {d} at {}", d.path);
        }
        ExitCode::from(3)
    }
}
