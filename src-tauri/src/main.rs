// No console window on Windows release builds.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

fn main() {
    // First, while the process has one thread: started from a launcher, tasks still find what
    // the user's shell profile puts on PATH.
    let login_shell = orrery_desktop::login_env::adopt().map(|found| found.shell);
    let settings = match orrery_desktop::Settings::from_env() {
        Ok(settings) => orrery_desktop::Settings { login_shell, ..settings },
        Err(e) => {
            eprintln!("orrery-desktop: {e}");
            std::process::exit(2);
        }
    };
    orrery_desktop::configure(tauri::Builder::default(), settings)
        .run(tauri::generate_context!())
        .expect("orrery-desktop: the app failed to run");
}
