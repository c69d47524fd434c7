//! Orrery's desktop shell (docs/architecture.md): thin Tauri adapters over the `orrery-api` facade.
//! It owns windows, native dialogs and the files the user chose; every decision about
//! blueprints and sessions belongs to the facade, reached through [`commands`].
//!
//! `tauri.conf.json` keeps a strict CSP and no global Tauri object; `freezePrototype` stays off
//! because React assigns `constructor` on its component prototypes, which a frozen
//! `Object.prototype` refuses (the page stays blank).

pub mod bindings;
pub mod commands;
pub mod login_env;
pub mod menu;
pub mod notify;
pub mod recent;
pub mod rendering;
#[cfg(unix)]
pub mod single_instance;
pub mod window_memory;

use std::path::PathBuf;
use std::sync::Arc;

use orrery_api::{Api, ApiOptions};
use tauri::{AppHandle, Builder, Emitter, Manager, Runtime, Window, WindowEvent};
use tokio::sync::broadcast::error::RecvError;

/// The Tauri event that carries each committed store event of the sessions this app runs.
pub const EVENT: &str = "orrery://event";
/// Emitted, with how many were missed, when the app fell behind the event stream: a client
/// catches up with the `read_events` job (the editor does not follow runs yet).
pub const EVENTS_LAGGED: &str = "orrery://events-lagged";
/// Emitted when the user closes a window that holds unsaved changes: the window stays open and
/// the UI asks what to do, then calls `close_window`.
pub const CLOSE_REQUESTED: &str = "orrery://close-requested";

/// What the app is started with.
#[derive(Debug)]
pub struct Settings {
    /// The task store.
    pub db: PathBuf,
    /// A blueprint to open at start.
    pub open: Option<PathBuf>,
    /// Where the recent files list is kept (none: in memory only).
    pub recent: Option<PathBuf>,
    /// Where the window's size and place are kept (none: not kept).
    pub window: Option<PathBuf>,
    /// The login shell asked for the tasks' environment ([`login_env::LoginShell`]).
    pub login: Arc<login_env::LoginShell>,
}

impl Settings {
    /// `ORRERY_DB` or the user's store; the blueprint to open is the first argument, else
    /// `ORRERY_OPEN`; the recent files list is `recent.json` and the window's size and place
    /// `window.json` in `ORRERY_CONFIG_DIR`, else in the user's config folder
    /// (`~/.config/orrery`).
    pub fn from_env() -> Result<Settings, String> {
        let db = match std::env::var_os("ORRERY_DB") {
            Some(db) => PathBuf::from(db),
            None => orrery_api::default_db_path().ok_or("this machine has no data directory: set ORRERY_DB")?,
        };
        let open = std::env::args_os().nth(1).or_else(|| std::env::var_os("ORRERY_OPEN")).map(PathBuf::from);
        let config = std::env::var_os("ORRERY_CONFIG_DIR")
            .map(PathBuf::from)
            .or_else(|| Some(dirs::config_dir()?.join("orrery")));
        Ok(Settings {
            db,
            open,
            recent: config.as_ref().map(|dir| dir.join("recent.json")),
            window: config.map(|dir| dir.join("window.json")),
            login: Arc::default(),
        })
    }
}

/// Registers the facade, the commands and the event forwarding on `builder`: the app calls it
/// with `Builder::default()`, tests with `tauri::test::mock_builder()`.
pub fn configure<R: Runtime>(builder: Builder<R>, settings: Settings) -> Builder<R> {
    let options = ApiOptions { db: settings.db, work_dir: None, max_parallel: None };
    // The facade needs a tokio runtime; Tauri's async runtime is one.
    let api = tauri::async_runtime::block_on(async move { Api::new(options) });
    builder
        .manage(api)
        .manage(commands::Files::new(settings.open))
        .manage(recent::Recent::load(settings.recent))
        .manage(commands::Unsaved::default())
        .manage(commands::Launch { login: settings.login })
        .manage(window_memory::WindowMemory::new(settings.window))
        .plugin(tauri_plugin_dialog::init())
        .plugin(tauri_plugin_notification::init())
        .menu(menu::build)
        .on_menu_event(menu::on_event)
        .on_window_event(|window, event| match event {
            WindowEvent::CloseRequested { api, .. } if ask_before_closing(window) => api.prevent_close(),
            WindowEvent::Moved(_) | WindowEvent::Resized(_) => {
                window.state::<window_memory::WindowMemory>().remember(window);
            }
            _ => {}
        })
        .invoke_handler(tauri::generate_handler![
            commands::list_jobs,
            commands::call_job,
            commands::startup_blueprint_file,
            commands::open_blueprint_file,
            commands::save_blueprint_file,
            commands::save_blueprint_file_as,
            commands::recent_blueprint_files,
            commands::open_recent_blueprint_file,
            commands::open_library_blueprint_file,
            commands::export_blueprint_file,
            commands::set_window_state,
            commands::close_window,
            commands::save_attempt_log,
            commands::about,
        ])
        .setup(|app| {
            if let Some(window) = app.get_webview_window("main") {
                app.state::<window_memory::WindowMemory>().restore(&window);
            }
            forward_events(app.handle().clone());
            Ok(())
        })
}

/// Opens the files a second launch handed over ([`single_instance`]) as the user opens a recent
/// file (each in its tab, the one already open brought to the front), and brings the window
/// forward.
pub fn open_handed<R: Runtime>(app: &AppHandle<R>, files: Vec<PathBuf>) {
    for file in files {
        app.state::<recent::Recent>().add(&file);
        let action = menu::MenuAction { command: "open_recent".into(), path: Some(file) };
        if let Err(e) = app.emit(menu::MENU, action) {
            eprintln!("orrery-desktop: a file handed over could not reach the window: {e}");
        }
    }
    menu::refresh_recent(app);
    if let Some(window) = app.get_webview_window("main") {
        let _ = window.unminimize();
        let _ = window.show();
        let _ = window.set_focus();
    }
}

/// Whether a window about to close holds unsaved changes; if so, it asks the UI, as
/// [`CLOSE_REQUESTED`], and must stay open.
pub fn ask_before_closing<R: Runtime>(window: &Window<R>) -> bool {
    if !window.state::<commands::Unsaved>().get() {
        return false;
    }
    if let Err(e) = window.emit(CLOSE_REQUESTED, ()) {
        // The UI cannot be asked: closing would lose its changes without a word, so it stays open.
        eprintln!("orrery-desktop: the window could not be asked to close: {e}");
    }
    true
}

/// Emits every event of the facade's sessions to the windows as [`EVENT`], and
/// [`EVENTS_LAGGED`] (how many were missed) when the app fell behind; a run that ends or waits
/// for an answer is told as a desktop notification too.
pub fn forward_events<R: Runtime>(app: AppHandle<R>) {
    let mut events = app.state::<Api>().subscribe();
    tauri::async_runtime::spawn(async move {
        loop {
            let sent = match events.recv().await {
                Ok(event) => {
                    notify::tell(&app, &event);
                    app.emit(EVENT, event)
                }
                Err(RecvError::Lagged(missed)) => app.emit(EVENTS_LAGGED, missed),
                Err(RecvError::Closed) => break,
            };
            if let Err(e) = sent {
                eprintln!("orrery-desktop: an event could not reach the window: {e}");
            }
        }
    });
}
