//! A blueprint checked in its folder reads only the files its composites call (found by the id
//! each file declares), and its report is the one it would have with every file of the folder
//! loaded: the same inner blueprints found, the same warnings, whatever the folder holds.

use std::path::{Path, PathBuf};

use orrery_blueprint::check::{blueprints_in, check_first, check_in_folder, Source};
use serde_json::{json, Value};

/// A blueprint whose composites call `calls` (static), with `extra` tasks' fields merged in.
fn blueprint(id: &str, calls: &[&str]) -> Value {
    let mut tasks = vec![json!({"id": "start", "type": "system.start"})];
    let mut last = "start".to_string();
    for (i, inner) in calls.iter().enumerate() {
        let id = format!("call{i}");
        tasks.push(json!({"id": id, "type": "system.composite", "depends_on": [{"id": last}],
            "params": [{"name": "blueprint", "value": {"static": inner}}]}));
        last = id;
    }
    tasks.push(json!({"id": "end", "type": "system.end", "depends_on": [{"id": last}]}));
    json!({"id": id, "name": id, "version": "1.0", "tasks": tasks})
}

/// What checking `file` says when every usable file of its folder is a candidate.
fn eager(file: &Path) -> Value {
    let mut sources = vec![Source::read(file).unwrap()];
    sources.extend(blueprints_in(file.parent().unwrap(), Some(file)).unwrap());
    serde_json::to_value(check_first(&sources)).unwrap()
}

fn lazy(file: &Path) -> Value {
    serde_json::to_value(check_in_folder(file, std::fs::read_to_string(file).unwrap()).unwrap()).unwrap()
}

#[test]
fn a_blueprint_checked_in_its_folder_finds_what_loading_every_file_finds() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: String| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    let files: Vec<PathBuf> = vec![
        // a chain: root -> a -> b, and a call back into root from c
        write("root.json", blueprint("root", &["a", "c", "missing", "named.json"]).to_string()),
        write("a.json", blueprint("a", &["b"]).to_string()),
        write("b.json", blueprint("b", &[]).to_string()),
        write("c.json", blueprint("c", &["root"]).to_string()),
        // two files with one id: the first in path order is not usable, the second is found
        write("d1.json", json!({"id": "d", "tasks": "not a list"}).to_string()),
        write("d2.json", blueprint("d", &[]).to_string()),
        write("d3.json", blueprint("d", &["b"]).to_string()),
        write("calls_d.json", blueprint("calls_d", &["d"]).to_string()),
        // a composite naming a file instead of an id
        write("named.json", blueprint("named_by_id", &[]).to_string()),
        // ids that take loading to know: a key given twice (the last wins), an envelope, a BOM
        write("twice.json", r#"{"id": "first", "name": "t", "version": "1.0", "tasks": [], "id": "a"}"#.into()),
        write(
            "envelope.json",
            json!({"dtype": "antikythera.models.blueprints/Blueprint", "guid": "6f1c0a52-3f0b-4a8f-9a55-0f3c1f6f2a11",
                "data": blueprint("b", &[])})
            .to_string(),
        ),
        write("bom.json", format!("\u{feff}{}", blueprint("c", &[]))),
        // not blueprints at all
        write("notes.json", "[1, 2, 3]".into()),
        write("broken.json", "{\"id\": \"a\", ".into()),
        write("shares_root_id.json", blueprint("root", &["b"]).to_string()),
        write("runs.json", blueprint("runs", &["a"]).to_string()),
    ];
    // (bom.json only as a candidate: an editor's text is already decoded.)
    for file in files.iter().filter(|f| !f.ends_with("bom.json")) {
        let (lazy, eager) = (lazy(file), eager(file));
        assert_eq!(lazy, eager, "{}", file.display());
    }
    // The runnable library holds what the root calls, not the whole folder.
    let runs = files.last().unwrap();
    let (_, library) = orrery_blueprint::load_runnable(runs).unwrap().unwrap_or_else(|r| panic!("{r:?}"));
    let ids: Vec<&str> = library.iter().map(|b| b.id.as_str()).collect();
    // twice.json: its id (the last "id", "a") takes loading to know.
    assert_eq!(
        ids,
        ["runs", "a", "b", "a"],
        "the root, then in path order what it calls and what takes loading to know"
    );
}
