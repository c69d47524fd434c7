//! The faces reach Orrery through its facade: the command line and the desktop app depend on
//! `orrery-api` (and `orrery-blueprint` for pure file commands), never on the engine or the
//! store beneath it. Their tests may still open a store file to check it from outside.

use std::process::Command;

/// The crates `package`'s code depends on directly, as `cargo tree` lists them.
fn direct_dependencies(package: &str) -> Vec<String> {
    let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/../../Cargo.toml");
    let out = Command::new(env!("CARGO"))
        .args(["tree", "--offline", "--manifest-path", manifest, "-p", package])
        .args(["-e", "normal", "--depth", "1", "--prefix", "none", "--format", "{p}"])
        .output()
        .expect("cargo runs");
    assert!(out.status.success(), "cargo tree -p {package}: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    // The first line is the package itself.
    text.lines().skip(1).filter_map(|line| line.split_whitespace().next()).map(str::to_string).collect()
}

#[test]
fn the_cli_and_the_desktop_app_depend_on_the_facade_not_on_the_engine_or_the_store() {
    for package in ["orrery-cli", "orrery-desktop"] {
        let deps = direct_dependencies(package);
        assert!(deps.iter().any(|d| d == "orrery-api"), "{package} uses the facade: {deps:?}");
        for below in ["orrery-engine", "orrery-store"] {
            assert!(!deps.iter().any(|d| d == below), "{package} depends on {below} directly: {deps:?}");
        }
    }
}
