fn main() {
    // The web view is embedded at compile time (`tauri::generate_context!`), which does not tell
    // cargo about the files it reads: a UI built again must rebuild the app, or the app serves
    // the old page (whose lazy chunks are gone).
    println!("cargo:rerun-if-changed=../ui/dist");
    // Declaring the app's commands makes each one need a permission: the capability in
    // capabilities/main.json grants only those the UI calls.
    let commands = &[
        "list_jobs",
        "call_job",
        "startup_blueprint_file",
        "open_blueprint_file",
        "save_blueprint_file",
        "save_blueprint_file_as",
        "recent_blueprint_files",
        "open_recent_blueprint_file",
        "open_library_blueprint_file",
        "export_blueprint_file",
        "set_window_state",
        "close_window",
        "save_attempt_log",
        "about",
    ];
    tauri_build::try_build(
        tauri_build::Attributes::new().app_manifest(tauri_build::AppManifest::new().commands(commands)),
    )
    .expect("tauri-build failed");
}
