//! An embedder's values of the inherited variables ([`inherit_from`]) win over the engine's own
//! environment, asked at each spawn. A test binary of its own: the setting is for the process.

use orrery_engine::process::{inherit_from, spawn, Exit, ProcessSpec};

#[tokio::test]
async fn the_values_an_embedder_gives_replace_the_engines_own() {
    let dir = tempfile::tempdir().unwrap();
    let tools = dir.path().join("tools");
    std::fs::create_dir(&tools).unwrap();
    let path = format!("{}:/usr/bin:/bin", tools.display());
    let given = path.clone();
    // A variable not in the inherited list is not taken, even when given.
    inherit_from(move || {
        vec![("PATH".into(), given.clone().into()), ("LANG".into(), "C.UTF-8".into()), ("EDITOR".into(), "ed".into())]
    });
    // A program found by the given PATH only: the engine's own PATH does not hold that folder.
    let script = tools.join("only-here");
    std::fs::write(&script, "#!/bin/sh\nenv\n").unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();

    let spec = ProcessSpec::argv(["only-here"], dir.path().join("attempt.log"));
    let log_path = spec.log_path.clone();
    let finished = spawn(spec).await.expect("found by the given PATH").wait().await;
    assert_eq!(finished.exit, Exit::Exited { code: 0 });
    let log = std::fs::read_to_string(log_path).unwrap();
    assert!(log.lines().any(|l| l == format!("PATH={path}")), "{log}");
    assert!(log.lines().any(|l| l == "LANG=C.UTF-8"), "{log}");
    assert!(!log.contains("EDITOR="), "{log}");
    // What is not given comes from the engine's environment, as before.
    if let Some(home) = std::env::var_os("HOME") {
        assert!(log.lines().any(|l| l == format!("HOME={}", home.to_string_lossy())), "{log}");
    }
}
