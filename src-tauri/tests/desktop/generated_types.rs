//! `ui/src/backend/generated.ts` is what the generator makes of the current Rust declarations.

use std::path::Path;

use orrery_api::{Api, ApiOptions};
use orrery_desktop::{bindings, commands};

#[test]
fn the_committed_typescript_types_match_the_rust_declarations() {
    let dir = tempfile::tempdir().unwrap();
    let options = ApiOptions { db: dir.path().join("orrery.db"), work_dir: None, max_parallel: None };
    let api = tauri::async_runtime::block_on(async move { Api::new(options) });
    let expected = bindings::typescript(&api.jobs(), &commands::surface()).expect("every schema converts");
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(bindings::GENERATED_PATH);
    if std::env::var_os("ORRERY_BLESS").is_some() {
        std::fs::write(&path, &expected).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if committed != expected {
        let line = committed.lines().zip(expected.lines()).position(|(a, b)| a != b);
        let line = line.unwrap_or_else(|| committed.lines().count().min(expected.lines().count()));
        panic!(
            "{} is stale: it differs from what the job catalogue and the command surface generate, \
             from line {} on (committed: {:?}, generated: {:?}). Regenerate it with \
             `ORRERY_BLESS=1 cargo test -p orrery-desktop --test desktop generated_types` and commit it.",
            path.display(),
            line + 1,
            committed.lines().nth(line).unwrap_or("<end of file>"),
            expected.lines().nth(line).unwrap_or("<end of file>"),
        );
    }
}
