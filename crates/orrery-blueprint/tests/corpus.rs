//! The compatibility corpus (the reference's own example blueprints): every file loads,
//! round-trips losslessly in both encodings, saves byte-stably, and gets the reference's
//! verdict as the corpus README records it.

use orrery_blueprint::{check_sources, load, save, Code, Encoding, Source};
use std::path::PathBuf;

fn corpus_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("ORRERY_CORPUS") {
        return PathBuf::from(dir);
    }
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/compat/corpus")
}

fn corpus_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(corpus_dir())
        .expect("the corpus folder is readable")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json") && !p.ends_with("blueprint.v1.schema.json"))
        .collect();
    files.sort();
    assert_eq!(files.len(), 18, "the corpus README lists 18 blueprints");
    files
}

#[test]
fn every_corpus_file_round_trips_losslessly_and_byte_stably_in_both_encodings() {
    for path in corpus_files() {
        let text = std::fs::read_to_string(&path).unwrap();
        let loaded = load(&text).unwrap_or_else(|e| panic!("{} does not load: {:?}", path.display(), e.diagnostics));
        assert_eq!(loaded.encoding, Encoding::Plain);
        for encoding in [Encoding::Plain, Encoding::Compas] {
            let saved = save::to_string(&loaded.blueprint, encoding);
            let again = load(&saved)
                .unwrap_or_else(|e| panic!("{} saved as {encoding:?} does not load: {e:?}", path.display()));
            assert_eq!(again.encoding, encoding);
            assert_eq!(again.blueprint, loaded.blueprint, "{} changed through {encoding:?}", path.display());
            assert_eq!(
                save::to_string(&again.blueprint, encoding),
                saved,
                "{} is not byte-stable in {encoding:?}",
                path.display()
            );
        }
    }
}

#[test]
fn the_fast_loader_gives_what_the_careful_one_gives_on_the_corpus() {
    for path in corpus_files() {
        let text = std::fs::read_to_string(&path).unwrap();
        let fast = load(&text).unwrap();
        let careful = orrery_blueprint::load::load_carefully(&text).unwrap();
        assert_eq!(fast.blueprint, careful.blueprint, "{}", path.display());
        assert_eq!(fast.notes, careful.notes, "{}", path.display());
    }
}

#[test]
fn the_corpus_gets_the_reference_verdicts() {
    let files = corpus_files();
    let sources: Vec<Source> = files.iter().map(|p| Source::read(p).unwrap()).collect();
    for report in check_sources(&sources) {
        let name = PathBuf::from(&report.file).file_name().unwrap().to_string_lossy().into_owned();
        let refused: Vec<_> = report.diagnostics.iter().filter(|d| d.server_rejects).collect();
        if name == "scope_skip.json" {
            assert!(!report.server_accepts, "scope_skip.json reads a name no task outputs: the server refuses it");
            assert_eq!(refused.len(), 1, "one dataflow problem: {refused:?}");
            assert_eq!(refused[0].code, Code::ConditionUnknownName);
            assert!(refused[0].message.contains("needs_processing"), "{}", refused[0].message);
        } else {
            assert!(report.server_accepts, "the server accepts {name}, Orrery says it refuses: {refused:?}");
        }
    }
}

#[test]
fn the_stale_corpus_files_are_explained() {
    let files = corpus_files();
    let sources: Vec<Source> = files.iter().map(|p| Source::read(p).unwrap()).collect();
    let reports = check_sources(&sources);
    let report = |name: &str| reports.iter().find(|r| r.file.ends_with(name)).unwrap();

    let tp6 = report("toy_problem_6.json");
    assert!(!tp6.valid, "toy_problem_6 writes dynamic.blueprint where the reference reads blueprint_id");
    assert!(tp6.diagnostics.iter().any(|d| d.code == Code::CompositeParam && d.path.ends_with(".dynamic.blueprint")));

    let tp5 = report("toy_problem_5.json");
    let missing = tp5
        .diagnostics
        .iter()
        .find(|d| d.code == Code::CompositeTargetMissing)
        .expect("TP5 names its inner blueprint by file name");
    assert!(missing.message.contains("TP5-inner"), "the message points at the id the file has: {}", missing.message);

    let tp4 = report("toy_problem_4.json");
    assert!(
        !tp4.diagnostics.iter().any(|d| d.code == Code::CompositeTargetMissing),
        "TP4's inner blueprint is among the files given: {:?}",
        tp4.diagnostics
    );

    let shared = report("toy_problem_12_notification.json");
    assert!(
        shared.diagnostics.iter().any(|d| d.code == Code::DuplicateBlueprintId),
        "toy_problem_10 and 12 share one id: {:?}",
        shared.diagnostics
    );

    let while_file = report("scope_while.json");
    assert!(while_file.diagnostics.iter().any(|d| d.code == Code::DeprecatedIoType && d.line.is_some()));
}
