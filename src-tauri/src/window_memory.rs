//! The main window's size and place, kept from one run of the app to the next (docs/desktop.md):
//! written to `window.json` in the config folder each time the window is moved or resized, and
//! given back to the window when the app starts, unless it would open off every screen (a
//! monitor unplugged since).

use std::path::PathBuf;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use tauri::{PhysicalPosition, PhysicalSize, Runtime, WebviewWindow, Window};

/// Where the window was, in the screen's pixels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Geometry {
    pub x: i32,
    pub y: i32,
    pub width: u32,
    pub height: u32,
    /// Maximized: the place and size are the ones it had before.
    #[serde(default)]
    pub maximized: bool,
}

/// The file the geometry is kept in (none: nothing is kept), and what was written last.
pub struct WindowMemory {
    file: Option<PathBuf>,
    last: Mutex<Option<Geometry>>,
}

impl WindowMemory {
    pub fn new(file: Option<PathBuf>) -> WindowMemory {
        WindowMemory { file, last: Mutex::new(None) }
    }

    /// The geometry kept by an earlier run; none when there is no file or it cannot be read.
    pub fn kept(&self) -> Option<Geometry> {
        let text = std::fs::read_to_string(self.file.as_ref()?).ok()?;
        serde_json::from_str(&text).ok()
    }

    /// Gives the window the kept geometry: its size always (no smaller than the window allows),
    /// its place when its top-left corner is on a monitor.
    pub fn restore<R: Runtime>(&self, window: &WebviewWindow<R>) {
        let Some(kept) = self.kept() else { return };
        *self.last.lock().unwrap() = Some(kept);
        let _ = window.set_size(PhysicalSize::new(kept.width, kept.height));
        let on_screen = window.available_monitors().unwrap_or_default().iter().any(|monitor| {
            let (at, size) = (monitor.position(), monitor.size());
            (at.x..at.x + size.width as i32).contains(&kept.x) && (at.y..at.y + size.height as i32).contains(&kept.y)
        });
        if on_screen {
            let _ = window.set_position(PhysicalPosition::new(kept.x, kept.y));
        }
        if kept.maximized {
            let _ = window.maximize();
        }
    }

    /// Keeps the window's geometry now (on each move or resize); a maximized window keeps the
    /// place and size it had before.
    pub fn remember<R: Runtime>(&self, window: &Window<R>) {
        let Some(file) = &self.file else { return };
        let maximized = window.is_maximized().unwrap_or(false);
        let mut last = self.last.lock().unwrap();
        let geometry = match (maximized, *last) {
            (true, Some(before)) => Geometry { maximized: true, ..before },
            _ => {
                let (Ok(at), Ok(size)) = (window.outer_position(), window.inner_size()) else { return };
                Geometry { x: at.x, y: at.y, width: size.width, height: size.height, maximized }
            }
        };
        if *last == Some(geometry) {
            return;
        }
        *last = Some(geometry);
        // Written whole, then renamed over the old file: a crash never leaves half of one.
        let partial = file.with_extension("json.partial");
        let written = file.parent().map_or(Ok(()), std::fs::create_dir_all).and_then(|()| {
            std::fs::write(&partial, serde_json::to_vec(&geometry).expect("a geometry serializes"))?;
            std::fs::rename(&partial, file)
        });
        if let Err(e) = written {
            eprintln!("orrery-desktop: the window's size and place could not be kept in {}: {e}", file.display());
        }
    }
}
