//! How WebKit paints the page on a machine without a GPU (docs/desktop.md#drawing-without-a-gpu).
//! WebKitGTK paints with Skia on the GPU by default; without one, Mesa's software renderer
//! (llvmpipe) runs that GPU painting on the CPU, slower than Skia's own CPU painting: dragging a
//! task of a 2,000-task blueprint took a median 51 ms a frame, 19 ms painted on the CPU. So the
//! app asks WebKit to paint on the CPU when the machine has no GPU render node, unless the user
//! chose either way.

use std::ffi::OsStr;
use std::path::Path;

/// WebKit's variable that makes Skia paint on the CPU (`1`) or on the GPU (`0`).
pub const CPU_PAINTING: &str = "WEBKIT_SKIA_ENABLE_CPU_RENDERING";

/// Where the kernel lists the GPUs' device nodes.
const DRI: &str = "/dev/dri";

/// Whether WebKit is asked to paint on the CPU: the user did not set [`CPU_PAINTING`], and `dri`
/// holds no render node (`renderD*`, what a GPU driver offers to draw with).
pub fn paints_on_cpu(dri: &Path, chosen: Option<&OsStr>) -> bool {
    chosen.is_none() && !has_render_node(dri)
}

fn has_render_node(dri: &Path) -> bool {
    std::fs::read_dir(dri)
        .map(|entries| entries.flatten().any(|e| e.file_name().to_string_lossy().starts_with("renderD")))
        .unwrap_or(false)
}

/// Sets [`CPU_PAINTING`] for WebKit's processes when [`paints_on_cpu`] says so. Called while the
/// process has one thread, before WebKit starts.
pub fn choose() {
    if paints_on_cpu(Path::new(DRI), std::env::var_os(CPU_PAINTING).as_deref()) {
        std::env::set_var(CPU_PAINTING, "1");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_machine_without_a_render_node_paints_on_the_cpu() {
        let dri = tempfile::tempdir().unwrap();
        assert!(paints_on_cpu(dri.path(), None), "an empty /dev/dri");
        assert!(paints_on_cpu(&dri.path().join("absent"), None), "no /dev/dri at all");
        // A display controller's node alone (card0) draws nothing itself.
        std::fs::write(dri.path().join("card0"), "").unwrap();
        assert!(paints_on_cpu(dri.path(), None));
    }

    #[test]
    fn a_gpu_or_the_users_choice_leaves_webkit_as_it_is() {
        let dri = tempfile::tempdir().unwrap();
        assert!(!paints_on_cpu(dri.path(), Some(OsStr::new("0"))), "the user asked for the GPU");
        assert!(!paints_on_cpu(dri.path(), Some(OsStr::new("1"))), "already set: nothing to do");
        std::fs::write(dri.path().join("renderD128"), "").unwrap();
        assert!(!paints_on_cpu(dri.path(), None), "a GPU's render node");
    }
}
