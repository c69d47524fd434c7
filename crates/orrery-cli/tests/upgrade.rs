//! A store made by an older build, opened by this one: the store of a user who installs a newer
//! package. `tests/fixtures/upgrade/store` was written by `make_store.sh` with the `orrery` of
//! the commit in its `made-by` (store schema 16): two runs of `nightly.blueprint.json` (the
//! first failed, with its logs), a task of the job protocol, a saved server and an agent's task
//! memory.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{json, Value};

/// Where the store was made: it records its logs' absolute paths.
const MADE_IN: &str = "/tmp/orrery-upgrade-fixture";

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

fn schema_version(db: &Path) -> u32 {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.pragma_query_value(None, "user_version", |row| row.get(0)).unwrap()
}

struct Old {
    db: PathBuf,
}

impl Old {
    fn orrery(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_orrery")).args(args).env("ORRERY_DB", &self.db).output().expect("orrery runs")
    }

    fn json(&self, args: &[&str]) -> Value {
        let o = self.orrery(args);
        let text = String::from_utf8_lossy(&o.stdout);
        serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{args:?}: {e}: {text}{}", String::from_utf8_lossy(&o.stderr)))
    }
}

#[test]
fn a_store_made_by_an_older_build_is_migrated_and_keeps_its_runs_logs_and_settings() {
    let store = Path::new(MADE_IN).join("store");
    let _ = std::fs::remove_dir_all(&store);
    copy_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/upgrade/store"), &store);
    let old = Old { db: store.join("orrery.db") };
    let made_at = schema_version(&old.db);
    assert!(made_at < orrery_store::migrations::SCHEMA_VERSION, "the fixture is older than this build ({made_at})");

    // Its runs, as the older build left them.
    let sessions = old.json(&["sessions", "--format", "json"]);
    assert_eq!(schema_version(&old.db), orrery_store::migrations::SCHEMA_VERSION, "opening migrated it");
    let states: Vec<(&str, &str)> = sessions
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["blueprint_id"].as_str().unwrap(), s["state"].as_str().unwrap()))
        .collect();
    assert_eq!(states, [("submitted_shell_run", "completed"), ("nightly", "completed"), ("nightly", "failed")]);
    let failed = sessions[2]["id"].as_str().unwrap().to_string();
    let status = old.json(&["status", &failed, "--format", "json"]);
    let attempts: Vec<(&str, u64, &str)> = status["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (a["task"].as_str().unwrap(), a["attempt"].as_u64().unwrap(), a["state"].as_str().unwrap()))
        .collect();
    assert_eq!(
        attempts,
        [
            ("start", 1, "succeeded"),
            ("measure", 1, "succeeded"),
            ("flaky", 1, "succeeded"),
            ("flaky", 2, "succeeded"),
            ("flaky", 3, "succeeded"),
            ("report", 1, "succeeded"),
            ("broken", 1, "failed")
        ]
    );
    let first = old.json(&["job", "get_attempt", &json!({"session_id": failed, "task": "broken"}).to_string()]);
    assert!(first["answer"]["attempt"].get("environment").is_none(), "not recorded then: {first}");
    let log = old.orrery(&["logs", &failed, "broken"]);
    assert_eq!(String::from_utf8_lossy(&log.stdout), "about to fail\n");
    let data = old.json(&["job", "read_session_data", &json!({"session_id": failed}).to_string()]);
    assert_eq!(data["answer"]["nightly"]["size"], 42, "{data}");

    // Going on with the old run: the failed task runs again, now with what it was started with.
    let resumed = old.orrery(&["resume", &failed]);
    assert_eq!(resumed.status.code(), Some(1), "it fails the same way: {}", String::from_utf8_lossy(&resumed.stderr));
    let status = old.json(&["status", &failed, "--format", "json"]);
    let again = status["attempts"].as_array().unwrap().last().unwrap();
    assert_eq!((again["task"].as_str(), again["attempt"].as_u64()), (Some("broken"), Some(2)));
    let details = old.json(&["job", "get_attempt", &json!({"session_id": failed, "task": "broken"}).to_string()]);
    assert_eq!(details["answer"]["attempt"]["environment"]["program"], "/bin/sh", "{details}");

    // The rest of the store: the job protocol's task, the saved server, the task memory.
    let tasks = old.json(&["job", "list_task_ids"]);
    assert_eq!(tasks["answer"], json!(["shell#shell.run#one-off"]));
    let servers = old.orrery(&["servers"]);
    assert!(String::from_utf8_lossy(&servers.stdout).contains("lab"), "{servers:?}");
    let memory = old.json(&["job", "get_task", r#"{"name": "upgrade-the-store"}"#]);
    assert_eq!(memory["answer"]["found"], true, "{memory}");
    let check = rusqlite::Connection::open(&old.db).unwrap();
    let integrity: String = check.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
    assert_eq!(integrity, "ok");
}
