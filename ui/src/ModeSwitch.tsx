// The window's two places, side by side in every toolbar: the blueprint editor and the runs.
import { useWorkspace } from "./store/context";

export function ModeSwitch() {
  const mode = useWorkspace((s) => s.mode);
  const setMode = useWorkspace((s) => s.setMode);
  return (
    <nav className="mode-switch" aria-label="Orrery">
      <span className="brand">Orrery</span>
      <button type="button" aria-pressed={mode === "edit"} onClick={() => setMode("edit")} data-testid="mode-edit" title="Author blueprints (Ctrl+Shift+E)">
        Blueprints
      </button>
      <button type="button" aria-pressed={mode === "runs"} onClick={() => setMode("runs")} data-testid="mode-runs" title="Launch and watch runs (Ctrl+Shift+R)">
        Runs
      </button>
    </nav>
  );
}
