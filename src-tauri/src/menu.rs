//! The native menu. Its items do nothing in Rust: each one is forwarded to the web view as
//! [`MENU`] with the item's id, and the UI runs its command of that id (ui/src/commands.ts) (the same one its
//! keyboard shortcut and command palette run). Cut, copy and paste are the platform's own items:
//! they act on the focused web view, which hands the UI the clipboard events it answers.
//!
//! Custom items carry no accelerator: GTK would take the key from the web view (Ctrl+Z in a text
//! field would undo the blueprint, not the field), and the UI handles its shortcuts itself.

use std::path::Path;

use tauri::menu::{Menu, MenuEvent, MenuItem, PredefinedMenuItem, Submenu};
use tauri::{AppHandle, Emitter, Manager, Runtime};

use crate::recent::Recent;

/// The Tauri event that carries a menu item's id to the UI.
pub const MENU: &str = "orrery://menu";
/// The id of the "Open Recent" submenu; its items are `recent:N`, N the index in the list.
const RECENT: &str = "recent";
const RECENT_PREFIX: &str = "recent:";

/// Menu items by id and label, `None` a separator. The ids are the UI's command ids.
const FILE: &[Option<(&str, &str)>] = &[
    Some(("file.new", "New Blueprint")),
    Some(("file.open", "Open…")),
    None,
    Some(("file.save", "Save")),
    Some(("file.save-as", "Save As…")),
    Some(("file.export", "Export for a Server…")),
    Some(("file.publish", "Publish to a Server…")),
    None,
    Some(("file.close-tab", "Close Tab")),
];
const EDIT_AFTER_CLIPBOARD: &[Option<(&str, &str)>] = &[
    Some(("edit.add-task", "Add a Task…")),
    Some(("edit.duplicate", "Duplicate")),
    Some(("edit.delete", "Delete")),
    Some(("edit.select-all", "Select All Tasks")),
    None,
    Some(("scope.from-selection", "Scope from Selection")),
    None,
    Some(("palette.find", "Find Task…")),
];
const VIEW: &[Option<(&str, &str)>] = &[
    Some(("palette.commands", "Command Palette…")),
    None,
    Some(("view.fit", "Zoom to Fit")),
    Some(("layout.auto", "Auto-Layout")),
    None,
    Some(("view.minimap", "Minimap")),
    Some(("view.wiring", "Data Wiring")),
];
const RUN: &[Option<(&str, &str)>] = &[
    Some(("run.start", "Run")),
    Some(("run.options", "Run with Options…")),
    Some(("run.simulate", "Simulate…")),
    None,
    Some(("view.blueprints", "Blueprints")),
    Some(("view.runs", "Runs")),
    None,
    Some(("run.broker", "Agents on a Broker…")),
    Some(("run.servers", "Runs on a Server…")),
];

/// The app's menu bar: File (with Open Recent), Edit, View, Run, Help.
pub fn build<R: Runtime>(app: &AppHandle<R>) -> tauri::Result<Menu<R>> {
    let recent = Submenu::with_id(app, RECENT, "Open Recent", true)?;
    fill_recent(app, &recent)?;
    let file = Submenu::new(app, "File", true)?;
    append(app, &file, &FILE[..2])?;
    file.append(&recent)?;
    append(app, &file, &FILE[2..])?;
    // Not the platform's Quit: that would end the app without asking about unsaved work.
    append(app, &file, &[None, Some(("file.quit", "Quit"))])?;

    let edit = Submenu::new(app, "Edit", true)?;
    append(app, &edit, &[Some(("edit.undo", "Undo")), Some(("edit.redo", "Redo")), None])?;
    edit.append(&PredefinedMenuItem::cut(app, None)?)?;
    edit.append(&PredefinedMenuItem::copy(app, None)?)?;
    edit.append(&PredefinedMenuItem::paste(app, None)?)?;
    append(app, &edit, EDIT_AFTER_CLIPBOARD)?;

    let view = Submenu::new(app, "View", true)?;
    append(app, &view, VIEW)?;

    let run = Submenu::new(app, "Run", true)?;
    append(app, &run, RUN)?;

    let help = Submenu::new(app, "Help", true)?;
    append(app, &help, &[Some(("help.about", "About Orrery"))])?;
    Menu::with_items(app, &[&file, &edit, &view, &run, &help])
}

fn append<R: Runtime>(app: &AppHandle<R>, menu: &Submenu<R>, items: &[Option<(&str, &str)>]) -> tauri::Result<()> {
    for item in items {
        match item {
            Some((id, label)) => menu.append(&MenuItem::with_id(app, *id, *label, true, None::<&str>)?)?,
            None => menu.append(&PredefinedMenuItem::separator(app)?)?,
        }
    }
    Ok(())
}

fn fill_recent<R: Runtime>(app: &AppHandle<R>, submenu: &Submenu<R>) -> tauri::Result<()> {
    let files = app.state::<Recent>().list();
    if files.is_empty() {
        return submenu.append(&MenuItem::with_id(app, "recent:none", "No Recent Blueprints", false, None::<&str>)?);
    }
    for (i, path) in files.iter().enumerate() {
        let label = label_of(path);
        submenu.append(&MenuItem::with_id(app, format!("{RECENT_PREFIX}{i}"), label, true, None::<&str>)?)?;
    }
    Ok(())
}

/// The file's name, then its folder: what tells two recent files apart at a glance.
fn label_of(path: &Path) -> String {
    let name = path.file_name().unwrap_or(path.as_os_str()).to_string_lossy();
    match path.parent() {
        Some(folder) if !folder.as_os_str().is_empty() => format!("{name}  ({})", folder.display()),
        _ => name.into_owned(),
    }
}

/// Rebuilds "Open Recent" from the list (after a file was opened or saved). A menu that cannot
/// be changed costs the menu's list, never the file: the recent files stay in the UI.
pub fn refresh_recent<R: Runtime>(app: &AppHandle<R>) {
    let Some(submenu) = recent_submenu(app) else { return };
    let refilled = submenu.items().and_then(|items| {
        for item in items {
            submenu.remove(&item)?;
        }
        fill_recent(app, &submenu)
    });
    if let Err(e) = refilled {
        eprintln!("orrery-desktop: the Open Recent menu could not be updated: {e}");
    }
}

/// File > Open Recent (a menu finds only its own items by id, not those of its submenus).
pub fn recent_submenu<R: Runtime>(app: &AppHandle<R>) -> Option<Submenu<R>> {
    let items = app.menu()?.items().ok()?;
    items.iter().filter_map(|item| item.as_submenu()?.get(RECENT)?.as_submenu().cloned()).next()
}

/// What the UI receives for a menu item: its command id, or for a recent file `open_recent`
/// with the file's path.
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub struct MenuAction {
    pub command: String,
    pub path: Option<std::path::PathBuf>,
}

/// Forwards a menu item's choice to the UI as [`MENU`].
pub fn on_event<R: Runtime>(app: &AppHandle<R>, event: MenuEvent) {
    let id = event.id().as_ref();
    let action = match id.strip_prefix(RECENT_PREFIX) {
        Some(index) => {
            let Some(path) = index.parse::<usize>().ok().and_then(|i| app.state::<Recent>().list().into_iter().nth(i))
            else {
                return;
            };
            MenuAction { command: "open_recent".into(), path: Some(path) }
        }
        None => MenuAction { command: id.to_string(), path: None },
    };
    if let Err(e) = app.emit(MENU, action) {
        eprintln!("orrery-desktop: a menu choice could not reach the window: {e}");
    }
}
