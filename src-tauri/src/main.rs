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
    // A second launch on the same store hands its files to the running app and ends.
    #[cfg(unix)]
    let listener = {
        use orrery_desktop::single_instance::{claim, runtime_dir, socket_path, Claim};
        let files: Vec<std::path::PathBuf> = std::env::args_os().skip(1).map(Into::into).collect();
        let claimed = match runtime_dir() {
            Ok(dir) => claim(&socket_path(&dir, &settings.db), &files),
            Err(why) => Claim::Alone(why),
        };
        match claimed {
            Claim::First(listener) => Some(listener),
            Claim::HandedOver => return,
            Claim::Alone(why) => {
                eprintln!("orrery-desktop: runs without answering later launches: {why}");
                None
            }
        }
    };
    // While the process has one thread: how WebKit is to paint without a GPU.
    orrery_desktop::rendering::choose();
    // Started from a launcher, tasks still find what the user's shell profile puts on PATH: the
    // login shell is asked while the window starts, and the first task waits for its answer.
    let login = std::sync::Arc::new(orrery_desktop::login_env::LoginShell::ask_in_background());
    let taken = login.clone();
    orrery_api::inherit_environment(move || taken.taken());
    let settings = orrery_desktop::Settings { login, ..settings };
    let app = orrery_desktop::configure(tauri::Builder::default(), settings)
        .build(tauri::generate_context!())
        .expect("orrery-desktop: the app failed to start");
    #[cfg(unix)]
    if let Some(listener) = listener {
        let handle = app.handle().clone();
        orrery_desktop::single_instance::serve(listener, move |files| orrery_desktop::open_handed(&handle, files));
    }
    app.run(|_, _| {});
}
