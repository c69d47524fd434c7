// No console window on Windows release builds.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

fn main() {
    let settings = match orrery_desktop::Settings::from_env() {
        Ok(settings) => settings,
        Err(e) => {
            eprintln!("orrery-desktop: {e}");
            std::process::exit(2);
        }
    };
    orrery_desktop::configure(tauri::Builder::default(), settings)
        .run(tauri::generate_context!())
        .expect("orrery-desktop: the app failed to run");
}
