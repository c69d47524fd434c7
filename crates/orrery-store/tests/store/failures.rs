//! Bad files: corrupt, read-only, full. Each gets a clear error and leaves the store consistent.
//!
//! Tests may run as root, where permission bits do not stop writes; there the file or folder is
//! made immutable (`chattr +i`), which stops root too. Either way the test first proves the
//! path really is unwritable, so it can never pass vacuously.

use orrery_store::FailureCode;
use std::fs::OpenOptions;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use orrery_store::{ManualClock, Store, StoreOptions};
use serde_json::json;

use crate::{options, Fixture};

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Makes `path` unwritable for this process until the guard is dropped.
struct Unwritable<'a> {
    path: &'a Path,
    root: bool,
    mode: u32,
}

impl<'a> Unwritable<'a> {
    fn new(path: &'a Path) -> Unwritable<'a> {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path).unwrap().permissions().mode();
        let root = is_root();
        if root {
            let status = Command::new("chattr").arg("+i").arg(path).status().expect("chattr runs (e2fsprogs)");
            assert!(status.success(), "as root, the test needs `chattr +i` to make {} read-only", path.display());
        } else {
            let ro = if path.is_dir() { 0o555 } else { 0o444 };
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(ro)).unwrap();
        }
        let guard = Unwritable { path, root, mode };
        let probe = if path.is_dir() {
            OpenOptions::new().write(true).create_new(true).open(path.join("probe")).map(|_| ())
        } else {
            OpenOptions::new().append(true).open(path).map(|_| ())
        };
        assert!(probe.is_err(), "{} must really be unwritable for this test to mean anything", path.display());
        guard
    }
}

impl Drop for Unwritable<'_> {
    fn drop(&mut self) {
        use std::os::unix::fs::PermissionsExt;
        if self.root {
            let _ = Command::new("chattr").arg("-i").arg(self.path).status();
        } else {
            let _ = std::fs::set_permissions(self.path, std::fs::Permissions::from_mode(self.mode));
        }
    }
}

#[test]
fn a_file_of_garbage_is_reported_as_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("garbage.db");
    std::fs::write(&path, b"this is not a SQLite database, just text. ".repeat(200)).unwrap();
    let err = Store::open(&path).expect_err("garbage must not open");
    assert_eq!(err.code(), FailureCode::Corrupt, "{err}");
    assert!(err.to_string().contains("garbage.db"), "names the file: {err}");
    assert_eq!(
        std::fs::read(&path).unwrap(),
        b"this is not a SQLite database, just text. ".repeat(200),
        "the file is left as it was"
    );
}

#[test]
fn a_database_with_damaged_pages_is_reported_as_corrupt() {
    let mut fixture = Fixture::open();
    let session = fixture.session();
    for i in 0..300 {
        let event = crate::note(format!("{i} {}", "x".repeat(200)));
        fixture.store.append_event(&session.id, &event, None).unwrap();
    }
    let path = fixture.path();
    drop(fixture.store);
    // Overwrite every page after the first two with garbage; the header stays valid.
    let mut bytes = std::fs::read(&path).unwrap();
    assert!(bytes.len() > 3 * 4096, "the database spans several pages");
    for b in bytes[2 * 4096..].iter_mut() {
        *b = 0xA5;
    }
    std::fs::write(&path, &bytes).unwrap();
    let outcome = Store::open(&path).and_then(|store| {
        store.check_integrity()?;
        store.events_after(&session.id, 0, 200).map(|_| ())
    });
    let err = outcome.expect_err("damaged pages must be noticed");
    assert_eq!(err.code(), FailureCode::Corrupt, "{err}");
}

#[test]
fn a_read_only_database_file_is_reported_as_read_only() {
    let fixture = Fixture::open();
    let path = fixture.path();
    drop(fixture.store);
    let _guard = Unwritable::new(&path);
    let err = Store::open(&path).expect_err("a read-only file cannot hold a task store");
    assert_eq!(err.code(), FailureCode::ReadOnly, "{err}");
    assert!(err.to_string().contains("orrery.db"), "names the file: {err}");
}

#[test]
fn a_read_only_folder_is_reported_as_read_only() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("locked");
    std::fs::create_dir(&folder).unwrap();
    let existing = folder.join("existing.db");
    Store::open(&existing).unwrap();
    let _guard = Unwritable::new(&folder);
    let err = Store::open(&existing).expect_err("WAL needs to write beside the database");
    assert_eq!(err.code(), FailureCode::ReadOnly, "existing file: {err}");
    let err = Store::open(&folder.join("new.db")).expect_err("a new file cannot be created");
    assert_eq!(err.code(), FailureCode::ReadOnly, "new file: {err}");
    assert!(err.to_string().contains("new.db"), "names the file: {err}");
}

#[test]
fn a_store_in_a_read_only_folder_can_still_be_listed_and_read_but_not_written() {
    let mut fixture = Fixture::open();
    let session = fixture.session();
    let path = fixture.path();
    let folder = path.parent().unwrap().to_path_buf();
    drop(fixture.store);
    assert!(!folder.join("orrery.db-shm").exists(), "closed cleanly: no -shm file is left to read with");
    let _guard = Unwritable::new(&folder);
    let mut store = Store::open_read_only(&path).expect("a read-only store opens to be read");
    let listed = store.sessions(&orrery_store::SessionFilter::default()).expect("its sessions are listed");
    assert_eq!(listed.iter().map(|s| s.id.as_str()).collect::<Vec<_>>(), [session.id.as_str()]);
    assert_eq!(store.events_after(&session.id, 0, 200).unwrap().len(), 1, "its events are read");
    let err = store.append_event(&session.id, &crate::note("hi"), None).expect_err("nothing is written");
    assert_eq!(err.code(), FailureCode::ReadOnly, "{err}");
    let err = Store::open_read_only(&folder.join("missing.db")).expect_err("a missing store is not created");
    assert_eq!(err.code(), FailureCode::NotFound, "{err}");
}

#[test]
fn sqlite_opened_read_only_by_the_os_is_reported_as_read_only() {
    // The same mapping seen from SQLite's side: a write through a read-only connection.
    let fixture = Fixture::open();
    let path = fixture.path();
    drop(fixture.store);
    let conn = rusqlite::Connection::open_with_flags(&path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    let raw = conn.execute("DELETE FROM sessions", []).unwrap_err();
    let rusqlite::Error::SqliteFailure(code, _) = raw else { panic!("a SQLite failure") };
    assert_eq!(code.code, rusqlite::ErrorCode::ReadOnly, "the file refused the write as read-only");
}

#[test]
fn a_full_disk_is_reported_and_leaves_the_store_consistent() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("small.db");
    let clock = Arc::new(ManualClock::new(crate::START_MS));
    let mut store = Store::open_with(&path, StoreOptions { max_page_count: Some(80), ..options(&clock) })
        .expect("the schema fits in 80 pages");
    let hash = store.put_blueprint_version("b", "{}").unwrap();
    let session = store
        .create_session(
            &orrery_store::NewSession {
                blueprint_hash: hash,
                name: "full".into(),
                params: json!({}),
                restarted_from: None,
                started_by: None,
                file: None,
                simulation: None,
            },
            None,
        )
        .unwrap();
    let big = crate::note("z".repeat(16 * 1024));
    let mut written = 0;
    let err = loop {
        match store.append_event(&session.id, &big, None) {
            Ok(_) => written += 1,
            Err(err) => break err,
        }
        assert!(written < 1000, "an 80-page database must fill up");
    };
    assert_eq!(err.code(), FailureCode::DiskFull, "{err}");
    assert!(err.to_string().contains("small.db"), "names the file: {err}");
    assert!(written > 0, "some events fitted before the disk was full");
    assert_eq!(store.last_event_seq(&session.id).unwrap(), 1 + written, "the failed write left nothing behind");
    drop(store);

    let mut store = Store::open(&path).expect("the store reopens without the limit");
    store.check_integrity().expect("integrity_check passes after the full disk");
    assert_eq!(store.last_event_seq(&session.id).unwrap(), 1 + written, "earlier events are intact");
    let events = store.events_after(&session.id, 1, 200).unwrap();
    assert_eq!(events.len() as u64, written);
    let next = store.append_event(&session.id, &big, None).expect("with room again, writes work");
    assert_eq!(next.seq, 2 + written, "seqs continue without a gap");
}

#[test]
fn a_writer_held_up_past_the_busy_timeout_gets_busy_and_writes_nothing() {
    let mut fixture = Fixture::open();
    let session = fixture.session();
    let path = fixture.path();
    let clock = fixture.clock.clone();
    let mut impatient =
        Store::open_with(&path, StoreOptions { busy_timeout: std::time::Duration::from_millis(50), ..options(&clock) })
            .unwrap();
    let blocker = rusqlite::Connection::open(&path).unwrap();
    blocker.execute_batch("BEGIN IMMEDIATE").unwrap();
    let note = crate::note("hi");
    let err = impatient.append_event(&session.id, &note, None).unwrap_err();
    assert_eq!(err.code(), FailureCode::Busy, "{err}");
    assert!(err.to_string().contains("orrery.db"), "names the file: {err}");
    blocker.execute_batch("ROLLBACK").unwrap();
    let event =
        impatient.append_event(&session.id, &note, None).expect("once the lock is free, the write goes through");
    assert_eq!(event.seq, 2, "the refused write took no seq");
}

#[test]
fn a_relative_path_in_the_working_directory_opens() {
    // `orrery run --db orrery.db` gives a path with an empty parent.
    let dir = tempfile::tempdir().unwrap();
    let previous = std::env::current_dir().unwrap();
    std::env::set_current_dir(dir.path()).unwrap();
    let opened = Store::open(Path::new("relative.db"));
    std::env::set_current_dir(previous).unwrap();
    opened.expect("a bare file name opens in the working directory");
    assert!(dir.path().join("relative.db").exists());
}

#[test]
fn the_default_path_is_in_the_users_data_directory() {
    let path = orrery_store::default_path().expect("this machine has a data directory");
    assert!(path.ends_with("orrery/orrery.db"), "{}", path.display());
    assert_eq!(path.parent().and_then(Path::parent), dirs_data_dir().as_deref());
}

fn dirs_data_dir() -> Option<std::path::PathBuf> {
    std::env::var_os("XDG_DATA_HOME")
        .map(std::path::PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".local/share")))
}
