//! Run parity with the reference orchestrator (antikythera-sdk 0.5.1): the corpus blueprints
//! whose every task type (inner blueprints included) is one of Orrery's built-in agent types run
//! to the state the reference reaches, with the same session data.
//!
//! For each such file (and each answer set, for files with prompts) both sides run it for real:
//! - the reference through `parity/run_reference.py` (the reference's own `Orchestrator` and
//!   agents, over a real Mosquitto and a real Redis that the driver starts on loopback and
//!   stops; see the comment at its top);
//! - Orrery through the built `orrery` binary: `orrery run --db <scratch> --format json
//!   [--answer T=V]... FILE`, then `orrery status --format json SESSION` for the session state,
//!   the last error and every task state; session data and scope counters are read with
//!   `orrery-store` (the status report does not show them).
//!
//! Compared: the session state; the last error's code (messages are free text); the state of
//! every node (`"{instance}.{task}"`, the same on both sides); the session data of every
//! blueprint instance; the scope counters. Instance ids need no mapping: both name a static
//! inner instance `"{blueprint}_{composite task}"` (Orrery appends `~2` only where the
//! reference's would collide, which no corpus file does; a different name shows up as a missing
//! instance and fails). Normalised before comparing, and only this:
//! - numbers between 1e9 and 1e10 are wall-clock times in epoch seconds (`system.start` and
//!   `system.end` return `time.time()`); both sides' become `"<epoch seconds>"`, so a time in
//!   another unit (milliseconds) would still differ;
//! - numbers compare by value (`2` equals `2.0`: Python's JSON keeps the float, a Rust store
//!   may not);
//! - scope counters are keyed by bare scope-start task id (the reference's keying) and a zero
//!   counter equals an absent one (the reference pops counters it resets; Orrery stores 0).
//!
//! A file the reference refuses (the upload's checks, or session creation) must be refused by
//! `orrery run` too (exit 1, no session). Answers to prompts are given to both sides alike.
//! The test fails on any difference, with a per-file diff; it also fails if the set of files
//! compared is not exactly [`EXPECTED`] (a corpus or reference change must be looked at).
//! Both sides of all files run in parallel (the sleeps are idle time): about 90 s in all.
//!
//! The corpus has only FS dependencies; `parity/dependency_types/` holds 20 small blueprints
//! with SS, FF and SF (alone, repeated, into and out of scopes, with failing and skipped
//! predecessors). They run the same way, and each must reach the reference's state and data or
//! differ exactly as [`DEPENDENCY_TYPE_DIFFERENCES`] says (Orrery keeps SS, FF and SF's meaning;
//! the server runs them otherwise, which the portability warnings say).

use orrery_store::Store;
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::*;

/// Orrery's built-in agent types (crates/orrery-engine/src/agents).
const ORRERY_TYPES: &[&str] = &[
    "system.start",
    "system.end",
    "system.sleep",
    "system.composite",
    "shell.run",
    "user_interaction.user_input",
    "user_interaction.user_output",
    "user_interaction.notify",
    "user_prompt.confirm",
];

/// Answers to the prompts of a file: one run per answer set (label, pairs of node key or task
/// id and the answer as JSON). Files without prompts run once with no answers.
type AnswerSet = (&'static str, &'static str, &'static [(&'static str, &'static str)]);
const ANSWERS: &[AnswerSet] = &[
    ("toy_problem_1.json", "", &[("A1", r#""hello""#)]),
    ("toy_problem_4.json", "", &[("X1", r#""outer""#), ("TP4_PnP_X2.A1", r#""inner""#)]),
    ("toy_problem_4_inner.json", "", &[("A1", r#""alone""#)]),
    ("toy_problem_7.json", "", &[("A1-ask-user", r#""No""#)]),
    ("toy_problem_8.json", "yes", &[("A1-ask-user", r#""Yes""#), ("A1-extra", r#""I am sure""#)]),
    ("toy_problem_8.json", "no", &[("A1-ask-user", r#""No""#), ("A1-extra", r#""Actually no""#)]),
    ("toy_problem_10_competitive.json", "", &[("race_confirmation", r#""Me!""#)]),
    ("toy_problem_12_notification.json", "", &[("final_confirmation", r#""OK""#)]),
    (
        "toy_problem_13_test_skipping.json",
        "",
        &[
            ("race_confirmation_1", r#""Me!""#),
            ("race_confirmation_2", r#""Me!""#),
            ("race_confirmation_3", r#""Me!""#),
        ],
    ),
];

/// The runs this test must compare (file, or `file[label]`), given the corpus and the rule.
const EXPECTED: &[&str] = &[
    "scope_retry.json",
    "scope_skip.json",
    "scope_while.json",
    "toy_problem_0.json",
    "toy_problem_1.json",
    "toy_problem_10_competitive.json",
    "toy_problem_12_notification.json",
    "toy_problem_13_test_skipping.json",
    "toy_problem_4.json",
    "toy_problem_4_inner.json",
    "toy_problem_6.json",
    "toy_problem_6_inner.json",
    "toy_problem_7.json",
    "toy_problem_8.json[no]",
    "toy_problem_8.json[yes]",
];

/// How long one side of one run may take.
const RUN_TIMEOUT: Duration = Duration::from_secs(240);

/// A blueprint file's JSON without COMPAS envelopes (`{"dtype", "data"}` around blueprint, tasks).
fn plain(v: &Value) -> &Value {
    match v.get("dtype").and(v.get("data")) {
        Some(data) => data,
        None => v,
    }
}

fn tasks(blueprint: &Value) -> Vec<&Value> {
    plain(blueprint)["tasks"].as_array().map(|ts| ts.iter().map(plain).collect()).unwrap_or_default()
}

/// The inner blueprint id a composite names, if any (`dynamic.blueprint` is the stale spelling
/// some corpus files use; it is followed here only to judge the task types).
fn inner_id(task: &Value) -> Option<String> {
    let params = task["params"].as_array()?;
    let p = params.iter().map(plain).find(|p| p["name"] == "blueprint")?;
    let v = &p["value"];
    let id = v["static"]
        .as_str()
        .or_else(|| v["dynamic"]["blueprint_id"].as_str())
        .or_else(|| v["dynamic"]["blueprint"].as_str())?;
    Some(id.to_string())
}

/// Why a file is not run by this test (a type Orrery lacks, an inner blueprint not found), or
/// `None` when every task type, inner blueprints included, is Orrery's.
fn not_eligible(root: &Value, library: &BTreeMap<String, Value>) -> Option<String> {
    let mut seen = BTreeSet::new();
    let mut queue = vec![root.clone()];
    while let Some(bp) = queue.pop() {
        for t in tasks(&bp) {
            let ty = t["type"].as_str().unwrap_or("");
            if !ORRERY_TYPES.contains(&ty) {
                return Some(format!("task type {ty} has no Orrery agent"));
            }
            if ty == "system.composite" {
                let Some(id) = inner_id(t) else { return Some("a composite names no inner blueprint".into()) };
                let Some(inner) = library.get(&id) else {
                    return Some(format!("inner blueprint {id} not in the folder"));
                };
                if seen.insert(id) {
                    queue.push(inner.clone());
                }
            }
        }
    }
    None
}

struct Case {
    name: String,
    file: PathBuf,
    answers: Vec<(String, String)>,
}

fn cases(corpus: &Path) -> (Vec<Case>, Vec<(String, String)>) {
    let mut files: Vec<PathBuf> = std::fs::read_dir(corpus)
        .expect("read the corpus")
        .map(|e| e.expect("corpus entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json") && !p.to_string_lossy().ends_with(".schema.json"))
        .collect();
    files.sort();
    let parsed: Vec<(PathBuf, Value)> = files
        .into_iter()
        .map(|f| {
            let text = std::fs::read_to_string(&f).unwrap_or_else(|e| panic!("read {}: {e}", f.display()));
            let v: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("parse {}: {e}", f.display()));
            (f, v)
        })
        .collect();
    let mut library = BTreeMap::new();
    for (_, v) in &parsed {
        if let Some(id) = plain(v)["id"].as_str() {
            library.entry(id.to_string()).or_insert_with(|| v.clone());
        }
    }
    let mut runs = Vec::new();
    let mut skipped = Vec::new();
    for (file, v) in &parsed {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        if let Some(why) = not_eligible(v, &library) {
            skipped.push((name, why));
            continue;
        }
        let sets: Vec<_> = ANSWERS.iter().filter(|(f, _, _)| *f == name).collect();
        if sets.is_empty() {
            runs.push(Case { name: name.clone(), file: file.clone(), answers: Vec::new() });
        }
        for (_, label, pairs) in sets {
            runs.push(Case {
                name: if label.is_empty() { name.clone() } else { format!("{name}[{label}]") },
                file: file.clone(),
                answers: pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            });
        }
    }
    (runs, skipped)
}

/// Spawns with stdout and stderr into files (event streams can outgrow a pipe buffer).
fn spawn(cmd: &mut Command, out: &Path) -> Child {
    cmd.stdin(Stdio::null())
        .stdout(File::create(out.with_extension("out")).expect("stdout file"))
        .stderr(File::create(out.with_extension("err")).expect("stderr file"))
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"))
}

fn wait(mut child: Child, what: &str) -> Result<ExitStatus, String> {
    let deadline = Instant::now() + RUN_TIMEOUT;
    loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            return Ok(status);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("{what} did not finish within {} s", RUN_TIMEOUT.as_secs()));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// Runs the reference does not end, by file name, and how long it is given (s) before the
/// driver stops it.
const NEVER_ENDS: &[(&str, u32)] = &[("ff_chain_rev.json", 10)];

/// The reference's outcome, as run_reference.py prints it.
fn run_reference(python: &Path, case: &Case, base: &Path) -> Result<Value, String> {
    let file = case.file.file_name().unwrap_or_default().to_string_lossy();
    let timeout = NEVER_ENDS.iter().find(|(f, _)| *f == file).map_or(200, |(_, s)| *s);
    let mut cmd = Command::new(python);
    cmd.arg(compat_dir().join("parity/run_reference.py")).arg("--timeout").arg(timeout.to_string());
    for (k, v) in &case.answers {
        cmd.arg("--answer").arg(format!("{k}={v}"));
    }
    cmd.arg(&case.file);
    let status = wait(spawn(&mut cmd, base), "run_reference.py")?;
    let out = read(&base.with_extension("out"));
    if !status.success() {
        return Err(format!("run_reference.py failed ({status}):\n{}", read(&base.with_extension("err"))));
    }
    serde_json::from_str(out.trim()).map_err(|e| format!("run_reference.py printed no JSON ({e}): {out}"))
}

/// Orrery's outcome in the reference's shape.
fn run_orrery(orrery: &Path, case: &Case, base: &Path) -> Result<Value, String> {
    let db = base.with_extension("db");
    let mut cmd = Command::new(orrery);
    cmd.arg("run").arg("--db").arg(&db).arg("--format").arg("json");
    for (k, v) in &case.answers {
        cmd.arg("--answer").arg(format!("{k}={v}"));
    }
    cmd.arg(&case.file);
    let status = wait(spawn(&mut cmd, base), "orrery run")?;
    let out = read(&base.with_extension("out"));
    let err = read(&base.with_extension("err"));
    let first: Option<Value> = out.lines().next().and_then(|l| serde_json::from_str(l).ok());
    let Some(session) = first.as_ref().and_then(|e| e["session_id"].as_str()).map(str::to_string) else {
        // No session: refused before running (exit 1 with diagnostics).
        return match status.code() {
            Some(1) => Ok(json!({"refused": err.trim()})),
            _ => Err(format!("orrery run exited {status} without a session:\n{err}")),
        };
    };
    if !matches!(status.code(), Some(0 | 1)) {
        return Err(format!("orrery run exited {status}:\n{err}"));
    }
    let st = Command::new(orrery)
        .args(["status", "--format", "json", "--db"])
        .arg(&db)
        .arg(&session)
        .output()
        .map_err(|e| format!("orrery status: {e}"))?;
    if !st.status.success() {
        return Err(format!("orrery status failed: {}", String::from_utf8_lossy(&st.stderr)));
    }
    let report: Value = serde_json::from_slice(&st.stdout).map_err(|e| format!("orrery status JSON: {e}"))?;
    let mut tasks = Map::new();
    let mut nodes = Vec::new();
    for t in report["tasks"].as_array().ok_or("status has no tasks")? {
        let node = t["node"].as_str().ok_or("task without node")?.to_string();
        tasks.insert(node.clone(), t["state"].clone());
        nodes.push(node);
    }
    let store = Store::open(&db).map_err(|e| format!("open {}: {e}", db.display()))?;
    let mut data = Map::new();
    let mut scopes = Map::new();
    for node in &nodes {
        let (instance, task) = node.rsplit_once('.').ok_or_else(|| format!("node {node} is not instance.task"))?;
        if !data.contains_key(instance) {
            let d = store.instance_data(&session, instance).map_err(|e| e.to_string())?;
            data.insert(instance.to_string(), Value::Object(d.into_iter().collect()));
        }
        // Orrery keeps a scope's counter under its start node's key (crates/orrery-engine/src/scopes.rs).
        let n = store.scope_iterations(&session, instance, node).map_err(|e| e.to_string())?;
        if n > 0 {
            scopes.insert(task.to_string(), json!(n));
        }
    }
    let error = &report["session"]["last_error"];
    Ok(json!({
        "session_state": report["session"]["state"],
        "last_task_error": if error.is_null() { Value::Null } else { json!({"code": error["code"], "message": error["message"]}) },
        "tasks": tasks,
        "data": data,
        "scope_iterations": scopes,
    }))
}

/// See the module comment: wall-clock epoch seconds become a marker, numbers compare by value.
fn normalise(v: &Value) -> Value {
    match v {
        Value::Number(n) => match n.as_f64() {
            Some(f) if (1e9..1e10).contains(&f) => json!("<epoch seconds>"),
            Some(f) => Value::from(f),
            None => v.clone(),
        },
        Value::Array(a) => Value::Array(a.iter().map(normalise).collect()),
        Value::Object(o) => Value::Object(o.iter().map(|(k, v)| (k.clone(), normalise(v))).collect()),
        _ => v.clone(),
    }
}

fn show(v: Option<&Value>) -> String {
    match v {
        None => "(absent)".into(),
        Some(v) => v.to_string().replace(r#""<epoch seconds>""#, "<t>"),
    }
}

/// The differing keys of two objects, with both normalised values.
type KeyDiff = (String, Option<Value>, Option<Value>);

fn key_diffs(reference: &Value, orrery: &Value) -> Vec<KeyDiff> {
    let empty = Map::new();
    let r = reference.as_object().unwrap_or(&empty);
    let o = orrery.as_object().unwrap_or(&empty);
    let keys: BTreeSet<&String> = r.keys().chain(o.keys()).collect();
    keys.into_iter()
        .map(|k| (k.clone(), r.get(k).map(normalise), o.get(k).map(normalise)))
        .filter(|(_, rv, ov)| rv != ov)
        .collect()
}

fn diff_maps(what: &str, reference: &Value, orrery: &Value, out: &mut Vec<String>) {
    for (k, rv, ov) in key_diffs(reference, orrery) {
        out.push(format!("{what} {k}: reference {} | orrery {}", show(rv.as_ref()), show(ov.as_ref())));
    }
}

/// Every difference between the two outcomes, one line each.
fn compare(reference: &Value, orrery: &Value) -> Vec<String> {
    let mut out = Vec::new();
    match (reference.get("refused"), orrery.get("refused")) {
        (Some(_), Some(_)) => return out,
        (Some(r), None) => {
            out.push(format!("the reference refuses it ({r}) but orrery runs it"));
            return out;
        }
        (None, Some(o)) => {
            out.push(format!("orrery refuses it ({}) but the reference runs it", show(Some(o))));
            return out;
        }
        (None, None) => {}
    }
    if reference["timed_out"] == true {
        out.push("the reference did not finish in time".into());
    }
    if reference["session_state"] != orrery["session_state"] {
        out.push(format!(
            "session state: reference {} | orrery {}",
            reference["session_state"], orrery["session_state"]
        ));
    }
    let (rc, oc) = (&reference["last_task_error"]["code"], &orrery["last_task_error"]["code"]);
    if rc != oc {
        out.push(format!(
            "last error: reference {} | orrery {}",
            reference["last_task_error"], orrery["last_task_error"]
        ));
    }
    diff_maps("task", &reference["tasks"], &orrery["tasks"], &mut out);
    let empty = Map::new();
    let (rd, od) = (reference["data"].as_object().unwrap_or(&empty), orrery["data"].as_object().unwrap_or(&empty));
    let instances: BTreeSet<&String> = rd.keys().chain(od.keys()).collect();
    for i in instances {
        match (rd.get(i), od.get(i)) {
            (Some(r), Some(o)) => {
                for (k, rv, ov) in key_diffs(r, o) {
                    out.push(format!("data {i}: {k}: reference {} | orrery {}", show(rv.as_ref()), show(ov.as_ref())));
                }
            }
            (r, o) => out.push(format!("instance {i}: reference {} | orrery {}", show(r), show(o))),
        }
    }
    diff_maps("scope counter", &reference["scope_iterations"], &orrery["scope_iterations"], &mut out);
    out
}

/// (run name, the reference's outcome, Orrery's)
type Outcomes = (String, Result<Value, String>, Result<Value, String>);

/// Both sides of every case at once (the runs mostly sleep), each under `scratch`.
fn run_both(cases: &[Case], scratch: &Path) -> Vec<Outcomes> {
    let (python, orrery) = (reference_python(), orrery_binary());
    std::thread::scope(|s| {
        let handles: Vec<_> = cases
            .iter()
            .enumerate()
            .map(|(i, case)| {
                let (python, orrery) = (&python, &orrery);
                let r = s.spawn(move || run_reference(python, case, &scratch.join(format!("{i:02}-reference"))));
                let o = s.spawn(move || run_orrery(orrery, case, &scratch.join(format!("{i:02}-orrery"))));
                (case.name.clone(), r, o)
            })
            .collect();
        handles
            .into_iter()
            .map(|(n, r, o)| (n, r.join().expect("reference thread"), o.join().expect("orrery thread")))
            .collect()
    })
}

/// A fresh scratch folder `{prefix}{pid}` under the target's tmp folder (older ones swept).
fn scratch_for(prefix: &str) -> PathBuf {
    let tmp_root = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    sweep_old_scratch(&tmp_root, prefix);
    let scratch = tmp_root.join(format!("{prefix}{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch).expect("create the scratch directory");
    scratch
}

/// Every difference of one run, in compare()'s lines (or the errors of the sides that failed).
fn diffs_of(reference: &Result<Value, String>, orrery: &Result<Value, String>) -> Vec<String> {
    match (reference, orrery) {
        (Ok(r), Ok(o)) => compare(r, o),
        (r, o) => {
            [r.as_ref().err().map(|e| format!("reference: {e}")), o.as_ref().err().map(|e| format!("orrery: {e}"))]
                .into_iter()
                .flatten()
                .collect()
        }
    }
}

/// What the reference does differently from Orrery with SS, FF and SF dependencies (measured by
/// running each file on both; docs/format.md §4 "On an antikythera server"), as compare()
/// words it, one set of lines for each outcome the reference may reach (where the reference races
/// with itself, more than one). Every other file of parity/dependency_types reaches the same state
/// and data.
const DEPENDENCY_TYPE_DIFFERENCES: &[(&str, &[&[&str]])] = &[
    // FF chain finishing out of order: the server releases a held FF task only on another
    // report, and none comes; Orrery finishes d once b has.
    (
        "ff_chain_rev.json",
        &[&[
            "the reference did not finish in time",
            "session state: reference \"stopped\" | orrery \"completed\"",
            "task dt_ff_chain_rev.d: reference \"PENDING\" | orrery \"SUCCEEDED\"",
            "task dt_ff_chain_rev.end: reference \"PENDING\" | orrery \"SUCCEEDED\"",
            "data dt_ff_chain_rev: process_end_time: reference (absent) | orrery <t>",
        ]],
    ),
    // b (FF on a) ran at once on both; a fails: the server leaves b held RUNNING, Orrery
    // cancels it back to PENDING. Unless a's failure aborted the session on the server before
    // it dispatched b: then b is PENDING there too (seen in one run of the suite in five).
    (
        "ff_pred_fails.json",
        &[&[
            "task dt_ff_pred_fails.b: reference \"RUNNING\" | orrery \"PENDING\"",
        ], &[]],
    ),
    // SF is ignored by the server: the session ends at the first sink while s waits; Orrery
    // skips the scope and finishes x.
    (
        "sf_member_of_skip_scope.json",
        &[&[
            "task dt_sf_member_of_skip_scope.e: reference \"SUCCEEDED\" | orrery \"SKIPPED\"",
            "task dt_sf_member_of_skip_scope.s: reference \"PENDING\" | orrery \"SKIPPED\"",
            "task dt_sf_member_of_skip_scope.x: reference \"RUNNING\" | orrery \"SUCCEEDED\"",
        ]],
    ),
    // SF ignored on the server: b runs and succeeds; in Orrery b may finish only once a
    // started, and a failed.
    (
        "sf_pred_fails.json",
        &[&[
            "task dt_sf_pred_fails.b: reference \"SUCCEEDED\" | orrery \"PENDING\"",
        ]],
    ),
    // SS on the server waits for a report after a started (here a's own success), so flag
    // exists; Orrery starts b with a, before a wrote flag.
    (
        "ss_cond_reads_pred.json",
        &[&[
            "session state: reference \"completed\" | orrery \"failed\"",
            "last error: reference null | orrery {\"code\":\"TASK_DISPATCH_FAILED\",\"message\":\"task 'dt_ss_cond_reads_pred.b': cannot evaluate condition 'flag': NameError: name 'flag' is not defined\"}",
            "task dt_ss_cond_reads_pred.a: reference \"SUCCEEDED\" | orrery \"PENDING\"",
            "task dt_ss_cond_reads_pred.b: reference \"SUCCEEDED\" | orrery \"FAILED\"",
            "task dt_ss_cond_reads_pred.end: reference \"SUCCEEDED\" | orrery \"PENDING\"",
            "data dt_ss_cond_reads_pred: flag: reference true | orrery (absent)",
            "data dt_ss_cond_reads_pred: process_end_time: reference <t> | orrery (absent)",
        ]],
    ),
    // Here the report that releases b on the server is c's, before a wrote flag: both fail;
    // the server leaves a RUNNING and c done, Orrery cancels them.
    (
        "ss_cond_reads_pred_sibling.json",
        &[&[
            "task dt_ss_cond_reads_pred_sibling.a: reference \"RUNNING\" | orrery \"PENDING\"",
            "task dt_ss_cond_reads_pred_sibling.c: reference \"SUCCEEDED\" | orrery \"PENDING\"",
        ]],
    ),
];

#[test]
fn dependency_type_runs_reach_the_reference_state_or_its_known_difference() {
    let started = Instant::now();
    let (cases, skipped) = cases(&compat_dir().join("parity/dependency_types"));
    assert!(skipped.is_empty(), "{skipped:?}");
    let scratch = scratch_for("parity-deps-");
    let results = run_both(&cases, &scratch);
    let mut report = String::new();
    let mut failures = 0;
    for (name, reference, orrery) in &results {
        let diffs = diffs_of(reference, orrery);
        let outcomes: &[&[&str]] =
            DEPENDENCY_TYPE_DIFFERENCES.iter().find(|(f, _)| f == name).map_or(&[&[]], |(_, outcomes)| outcomes);
        let expected = outcomes.iter().any(|lines| diffs.iter().map(String::as_str).eq(lines.iter().copied()));
        let verdict = if expected { "as known" } else { "UNEXPECTED" };
        failures += usize::from(!expected);
        let _ = writeln!(report, "  {verdict:10} {name}");
        for d in &diffs {
            let _ = writeln!(report, "             {d}");
        }
    }
    println!("dependency types on the reference orchestrator ({:.0} s):\n{report}", started.elapsed().as_secs_f64());
    if failures == 0 {
        let _ = std::fs::remove_dir_all(&scratch);
    }
    assert_eq!(
        failures,
        0,
        "{failures} run(s) differ otherwise than known (outputs in {}):\n{report}",
        scratch.display()
    );
}

#[test]
fn corpus_runs_reach_the_reference_state_and_data() {
    let started = Instant::now();
    let corpus = corpus_dir();
    let (cases, skipped) = cases(&corpus);
    let scratch = scratch_for("parity-");
    let results = run_both(&cases, &scratch);

    let mut report = String::new();
    let mut failures = 0;
    let mut compared = Vec::new();
    for (name, reference, orrery) in &results {
        compared.push(name.clone());
        let diffs = diffs_of(reference, orrery);
        let verdict = match reference {
            Ok(r) if r.get("refused").is_some() => "refused by both".to_string(),
            Ok(r) => format!("{} ({} s on the reference)", r["session_state"].as_str().unwrap_or("?"), r["seconds"]),
            Err(_) => "error".to_string(),
        };
        if diffs.is_empty() {
            let _ = writeln!(report, "  same     {name}: {verdict}");
        } else {
            failures += 1;
            let _ = writeln!(report, "  DIFFERS  {name}: {verdict}");
            for d in diffs {
                let _ = writeln!(report, "             {d}");
            }
        }
    }
    for (name, why) in &skipped {
        let _ = writeln!(report, "  not run  {name}: {why}");
    }
    compared.sort();
    println!("parity with the reference orchestrator ({:.0} s):\n{report}", started.elapsed().as_secs_f64());
    if failures == 0 {
        let _ = std::fs::remove_dir_all(&scratch);
    }
    assert!(!compared.is_empty(), "no corpus blueprint was compared");
    let expected: Vec<String> = EXPECTED.iter().map(|s| s.to_string()).collect();
    assert_eq!(compared, expected, "the runs compared are not the expected ones\n{report}");
    assert_eq!(
        failures,
        0,
        "{failures} run(s) differ from the reference (outputs kept in {}):\n{report}",
        scratch.display()
    );
}
