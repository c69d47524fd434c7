//! Differential test against the reference implementation (antikythera-sdk 0.5.1).
//!
//! For every corpus file and every generated mutant, Orrery's "the reference server accepts it"
//! must equal what `POST /blueprints/upload` of the reference decides (computed by
//! `reference_verdict.py` with the reference's own code), and `condition::free_names` must find
//! the same names as the reference's `_free_names` in every condition the reference examines.
//!
//! The reference runs in a venv made by `setup_reference.sh` (or the python named by
//! `ORRERY_REFERENCE_PYTHON`). If there is no reference, the test fails: it never skips.

use orrery_blueprint::check::check_files;
use orrery_blueprint::condition::free_names;
use serde_json::Value;
use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

mod common;
use common::*;

fn run_python(python: &Path, args: &[&std::ffi::OsStr]) -> String {
    let out = Command::new(python)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("REFERENCE UNAVAILABLE: cannot run {}: {e}", python.display()));
    if !out.status.success() {
        panic!(
            "{} {:?} failed ({})\n--- stderr ---\n{}",
            python.display(),
            args,
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    String::from_utf8(out.stdout).expect("reference output is UTF-8")
}

fn kind_of(file: &Path, corpus: &Path) -> String {
    let name = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    if file.starts_with(corpus) {
        return "corpus".to_owned();
    }
    let stem = name.strip_suffix(".json").unwrap_or(&name);
    match stem.split_once('-') {
        Some((num, kind)) if num.chars().all(|c| c.is_ascii_digit()) => kind.to_owned(),
        _ => stem.to_owned(),
    }
}

fn short(s: &str, max: usize) -> String {
    // Control characters (newlines, NUL, ...) are shown escaped so each row stays one line.
    let one_line: String =
        s.chars().map(|c| if c.is_control() { c.escape_debug().to_string() } else { c.to_string() }).collect();
    if one_line.chars().count() <= max {
        one_line
    } else {
        let cut: String = one_line.chars().take(max).collect();
        format!("{cut}…")
    }
}

struct Mismatch {
    file: String,
    /// The mutation kind (from the file name), or "corpus".
    kind: String,
    /// What was compared: "verdict", or the condition whose names differ.
    what: String,
    reference: String,
    orrery: String,
}

#[test]
fn orrery_agrees_with_the_reference_server() {
    let python = reference_python();
    let corpus = corpus_dir();
    let tmp_root = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    sweep_old_scratch(&tmp_root, "differential-");
    let scratch = tmp_root.join(format!("differential-{}", std::process::id()));
    let mutants = scratch.join("mutants");
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&mutants).expect("create the mutants directory");

    run_python(
        &python,
        &[
            compat_dir().join("mutate.py").as_os_str(),
            "--corpus".as_ref(),
            corpus.as_os_str(),
            "--out".as_ref(),
            mutants.as_os_str(),
            // Enough for more than 1,000 COMPAS envelope mutants among the ~150 kinds.
            "--count".as_ref(),
            "3000".as_ref(),
        ],
    );
    let verdicts = run_python(
        &python,
        &[compat_dir().join("reference_verdict.py").as_os_str(), corpus.as_os_str(), mutants.as_os_str()],
    );

    let mut mismatches: Vec<Mismatch> = Vec::new();
    let mut files = 0usize;
    let mut accepted = 0usize;
    let mut corpus_files = 0usize;
    let mut conditions = 0usize;

    for line in verdicts.lines().filter(|l| !l.trim().is_empty()) {
        let v: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("bad reference line ({e}): {line}"));
        let file = PathBuf::from(v["file"].as_str().expect("file"));
        let kind = kind_of(&file, &corpus);
        let display = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        files += 1;
        if kind == "corpus" {
            corpus_files += 1;
        }
        let ref_accepts = v["server_accepts"].as_bool().expect("server_accepts");
        if ref_accepts {
            accepted += 1;
        }

        // The verdict: one file at a time, as the reference judges it.
        let reports = check_files(std::slice::from_ref(&file));
        assert_eq!(reports.len(), 1, "check_files gave {} reports for {}", reports.len(), file.display());
        let report = &reports[0];
        if report.server_accepts != ref_accepts {
            let reference = if ref_accepts {
                "accepts".to_owned()
            } else {
                // For a dataflow refusal the problems say more than the summary message.
                let problems: Vec<String> = v["problems"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|p| p.as_str().map(|p| short(p, 140)))
                    .collect();
                let why = if problems.is_empty() {
                    short(v["error"].as_str().unwrap_or(""), 160)
                } else {
                    problems.join(" | ")
                };
                format!("refuses at {}: {why}", v["stage"].as_str().unwrap_or("?"))
            };
            let rejecting: Vec<String> = report
                .diagnostics
                .iter()
                .filter(|d| d.server_rejects)
                .map(|d| format!("{} {}: {}", d.code, d.path, short(&d.message, 100)))
                .collect();
            let orrery = if report.server_accepts {
                "accepts".to_owned()
            } else if rejecting.is_empty() {
                "refuses (no server_rejects diagnostic!)".to_owned()
            } else {
                format!("refuses: {}", rejecting.join(" | "))
            };
            mismatches.push(Mismatch {
                file: display.clone(),
                kind: kind.clone(),
                what: "verdict".to_owned(),
                reference,
                orrery,
            });
        }

        // The names each examined condition reads.
        for c in v["conditions"].as_array().into_iter().flatten() {
            if c.get("internal_error").is_some() {
                continue;
            }
            conditions += 1;
            let expression = c["expression"].as_str().unwrap_or_default();
            let ref_names: Option<BTreeSet<String>> =
                c["names"].as_array().map(|a| a.iter().filter_map(|n| n.as_str().map(str::to_owned)).collect());
            let ours = free_names(expression);
            let agree = match (&ref_names, &ours) {
                (Some(r), Ok(o)) => r == o,
                (None, Err(_)) => true,
                _ => false,
            };
            if !agree {
                let reference = match &ref_names {
                    Some(r) => format!("names {:?}", r),
                    None => "SyntaxError".to_owned(),
                };
                let orrery = match &ours {
                    Ok(o) => format!("names {:?}", o),
                    Err(e) => format!("syntax error: {}", short(&e.message, 80)),
                };
                mismatches.push(Mismatch {
                    file: display.clone(),
                    kind: kind.clone(),
                    what: format!(
                        "names in the {} of task {}: `{}`",
                        c["kind"].as_str().unwrap_or("condition"),
                        c["task_id"],
                        short(expression, 80)
                    ),
                    reference,
                    orrery,
                });
            }
        }
    }

    let summary = format!(
        "{files} files, {accepted} accepted by the reference, {} mismatches ({corpus_files} corpus files, {conditions} conditions compared)",
        mismatches.len()
    );
    println!("{summary}");
    assert!(corpus_files >= 18, "expected the 18 corpus files, the reference judged {corpus_files}");
    assert!(files >= corpus_files + 100, "too few mutants were judged ({files} files in all)");

    if !mismatches.is_empty() {
        mismatches.sort_by(|a, b| (a.kind.as_str(), a.file.as_str()).cmp(&(b.kind.as_str(), b.file.as_str())));
        let mut table = String::new();
        let _ = writeln!(
            table,
            "file [kind] what\n    REF: the reference (stage: error)\n    ORR: Orrery (server_rejects diagnostics)\n"
        );
        for m in &mismatches {
            let _ = writeln!(table, "{} [{}] {}", m.file, m.kind, m.what);
            let _ = writeln!(table, "    REF: {}", m.reference);
            let _ = writeln!(table, "    ORR: {}", m.orrery);
        }
        panic!(
            "Orrery disagrees with the reference on {} point(s).\n{summary}\nmutants kept in {}\n\n{table}\n{summary}",
            mismatches.len(),
            mutants.display()
        );
    }
    let _ = std::fs::remove_dir_all(&scratch);
}

/// The table of classes Orrery knows the server's decoder by (`compas_classes.tsv`) is what the
/// reference's own environment answers now: a new release of a COMPAS package, a class moved or
/// renamed, shows here first.
#[test]
fn the_class_table_is_the_reference_environments_own() {
    let python = reference_python();
    let now = run_python(&python, &[compat_dir().join("compas_classes.py").as_os_str()]);
    let table = compat_dir().join("../../crates/orrery-blueprint/src/compas_classes.tsv");
    let kept = std::fs::read_to_string(&table).expect("read compas_classes.tsv");
    assert!(
        now == kept,
        "{} is not what tests/compat/compas_classes.py answers now: run it with the reference venv's python \
         and write its output there",
        table.display()
    );
}
