import { fileName, folderOf } from "../paths";
import { ModeSwitch } from "../ModeSwitch";
import { useEditor, useWorkspace } from "../store/context";

export function Toolbar() {
  const path = useEditor((s) => s.path);
  const hasBlueprint = useEditor((s) => s.blueprint !== null);
  const canUndo = useEditor((s) => s.past.length > 0);
  const canRedo = useEditor((s) => s.future.length > 0);
  const openFile = useWorkspace((s) => s.openFile);
  const newBlueprint = useWorkspace((s) => s.newBlueprint);
  const exportFile = useEditor((s) => s.exportFile);
  const save = useEditor((s) => s.save);
  const saveAs = useEditor((s) => s.saveAs);
  const undo = useEditor((s) => s.undo);
  const redo = useEditor((s) => s.redo);
  const autoLayout = useEditor((s) => s.autoLayout);
  const direction = useEditor((s) => s.direction);
  const setDirection = useEditor((s) => s.setDirection);
  const selection = useEditor((s) => s.selection);
  const createScope = useEditor((s) => s.createScope);
  const prepareRun = useWorkspace((s) => s.prepareRun);
  return (
    <header className="toolbar">
      <ModeSwitch />
      <span className="separator" />
      <button type="button" onClick={newBlueprint} title="A new blueprint with a start and an end (Ctrl+N)" data-testid="new">
        New
      </button>
      <button type="button" onClick={() => void openFile()} title="Open a blueprint (Ctrl+O)" data-testid="open">
        Open…
      </button>
      <RecentMenu />
      <button type="button" onClick={save} disabled={!hasBlueprint} title="Save (Ctrl+S)" data-testid="save">
        Save
      </button>
      <button type="button" onClick={saveAs} disabled={!hasBlueprint} title="Save as (Ctrl+Shift+S)">
        Save as…
      </button>
      <button type="button" onClick={() => void exportFile()} disabled={!hasBlueprint} title="Export for an antikythera server (Ctrl+E)" data-testid="export">
        Export…
      </button>
      <span className="separator" />
      <button type="button" onClick={undo} disabled={!canUndo} title="Undo (Ctrl+Z)" data-testid="undo">
        Undo
      </button>
      <button type="button" onClick={redo} disabled={!canRedo} title="Redo (Ctrl+Shift+Z)" data-testid="redo">
        Redo
      </button>
      <span className="separator" />
      <button type="button" onClick={autoLayout} disabled={!hasBlueprint} title="Lay every task out again (Ctrl+L)" data-testid="auto-layout">
        Auto-layout
      </button>
      <select
        value={direction}
        onChange={(e) => void setDirection(e.target.value as typeof direction)}
        disabled={!hasBlueprint}
        aria-label="Which way the tasks flow"
        title="Which way the tasks flow: down the page or across it (kept for this file)"
        data-testid="layout-direction"
      >
        <option value="down">↓ Down</option>
        <option value="right">→ Right</option>
      </select>
      <button
        type="button"
        onClick={() => void createScope(selection)}
        disabled={selection.length === 0}
        title="Put the selected tasks in a scope of their own (Ctrl+G)"
        data-testid="scope-from-selection"
      >
        Scope
      </button>
      <span className="separator" />
      <button type="button" className="primary" onClick={() => prepareRun()} disabled={!hasBlueprint} title="Run this blueprint (F5)" data-testid="run">
        ▶ Run
      </button>
      <span className="path" data-testid="path">
        {path ?? (hasBlueprint ? "Not saved yet" : "No blueprint open")}
      </span>
    </header>
  );
}

/** The recent files, newest first, in a drop-down. */
function RecentMenu() {
  const recent = useWorkspace((s) => s.recent);
  const openRecent = useWorkspace((s) => s.openRecent);
  return (
    <details className="dropdown" data-testid="recent-menu">
      <summary title="Open a recent blueprint">Recent</summary>
      <ul>
        {recent.length === 0 && <li className="hint">No recent blueprints</li>}
        {recent.map((path) => (
          <li key={path}>
            <button
              type="button"
              title={path}
              onClick={(e) => {
                e.currentTarget.closest("details")?.removeAttribute("open");
                void openRecent(path);
              }}
            >
              {fileName(path)} <span className="folder">{folderOf(path)}</span>
            </button>
          </li>
        ))}
      </ul>
    </details>
  );
}
