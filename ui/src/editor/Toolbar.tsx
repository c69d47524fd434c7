import { useEditor } from "../store/context";

export function Toolbar() {
  const path = useEditor((s) => s.path);
  const hasBlueprint = useEditor((s) => s.blueprint !== null);
  const canUndo = useEditor((s) => s.past.length > 0);
  const canRedo = useEditor((s) => s.future.length > 0);
  const openFile = useEditor((s) => s.openFile);
  const save = useEditor((s) => s.save);
  const saveAs = useEditor((s) => s.saveAs);
  const undo = useEditor((s) => s.undo);
  const redo = useEditor((s) => s.redo);
  const autoLayout = useEditor((s) => s.autoLayout);
  return (
    <header className="toolbar">
      <span className="brand">Orrery</span>
      <button type="button" onClick={openFile} title="Open a blueprint (Ctrl+O)">
        Open…
      </button>
      <button type="button" onClick={save} disabled={!hasBlueprint} title="Save (Ctrl+S)" data-testid="save">
        Save
      </button>
      <button type="button" onClick={saveAs} disabled={!hasBlueprint} title="Save as (Ctrl+Shift+S)">
        Save as…
      </button>
      <span className="separator" />
      <button type="button" onClick={undo} disabled={!canUndo} title="Undo (Ctrl+Z)" data-testid="undo">
        Undo
      </button>
      <button type="button" onClick={redo} disabled={!canRedo} title="Redo (Ctrl+Shift+Z)">
        Redo
      </button>
      <span className="separator" />
      <button type="button" onClick={autoLayout} disabled={!hasBlueprint} title="Lay every task out again (Ctrl+L)" data-testid="auto-layout">
        Auto-layout
      </button>
      <span className="path" data-testid="path">
        {path ?? "No blueprint open"}
      </span>
    </header>
  );
}
