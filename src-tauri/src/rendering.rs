//! How WebKit draws the page on a machine without a GPU (docs/desktop.md#drawing-without-a-gpu).
//! WebKitGTK paints with Skia on the GPU and composites the page's layers with OpenGL; without a
//! GPU both run in Mesa's software renderer (llvmpipe), slower than drawing on the CPU: a frame
//! while dragging a task of a 2,000-task blueprint took a median 51 ms, 19 ms with Skia painting
//! on the CPU, 13 ms without compositing too. So when the machine has no GPU render node the app
//! asks WebKit to paint on the CPU and not to composite, each unless the user chose.

use std::ffi::OsStr;
use std::path::Path;

/// WebKit's variable that makes Skia paint on the CPU (`1`) or on the GPU (`0`).
pub const CPU_PAINTING: &str = "WEBKIT_SKIA_ENABLE_CPU_RENDERING";

/// WebKit's variable that turns its accelerated compositing off (`1`; WebKitGTK 2.50 composites
/// with `0`).
pub const NO_COMPOSITING: &str = "WEBKIT_DISABLE_COMPOSITING_MODE";

/// What the app asks of WebKit without a GPU: each of these variables set to `1`.
pub const WITHOUT_GPU: [&str; 2] = [CPU_PAINTING, NO_COMPOSITING];

/// Where the kernel lists the GPUs' device nodes.
const DRI: &str = "/dev/dri";

/// Whether the app sets a variable of [`WITHOUT_GPU`]: the user did not (`chosen`), and `dri`
/// holds no render node (`renderD*`, what a GPU driver offers to draw with).
pub fn sets(dri: &Path, chosen: Option<&OsStr>) -> bool {
    chosen.is_none() && !has_render_node(dri)
}

fn has_render_node(dri: &Path) -> bool {
    std::fs::read_dir(dri)
        .map(|entries| entries.flatten().any(|e| e.file_name().to_string_lossy().starts_with("renderD")))
        .unwrap_or(false)
}

/// Sets each variable of [`WITHOUT_GPU`] that [`sets`] says to. Called while the process has
/// one thread, before WebKit starts.
pub fn choose() {
    for variable in WITHOUT_GPU {
        if sets(Path::new(DRI), std::env::var_os(variable).as_deref()) {
            std::env::set_var(variable, "1");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_machine_without_a_render_node_is_asked_for() {
        let dri = tempfile::tempdir().unwrap();
        assert!(sets(dri.path(), None), "an empty /dev/dri");
        assert!(sets(&dri.path().join("absent"), None), "no /dev/dri at all");
        // A display controller's node alone (card0) draws nothing itself.
        std::fs::write(dri.path().join("card0"), "").unwrap();
        assert!(sets(dri.path(), None));
    }

    #[test]
    fn a_gpu_or_the_users_choice_leaves_webkit_as_it_is() {
        let dri = tempfile::tempdir().unwrap();
        assert!(!sets(dri.path(), Some(OsStr::new("0"))), "the user asked for the GPU");
        assert!(!sets(dri.path(), Some(OsStr::new("1"))), "already set: nothing to do");
        std::fs::write(dri.path().join("renderD128"), "").unwrap();
        assert!(!sets(dri.path(), None), "a GPU's render node");
    }
}
