import { ReactFlowProvider } from "@xyflow/react";
import { useEffect } from "react";
import { useEditor, useEditorStore, useWorkspace, useWorkspaceStore } from "../store/context";
import type { EditorState } from "../store/editor";
import type { WorkspaceState } from "../store/workspace";
import { Inspector } from "../inspector/Inspector";
import { Canvas } from "./Canvas";
import { Palette } from "./Palette";
import { Problems } from "./Problems";
import { Toolbar } from "./Toolbar";
import { Tabs } from "./Tabs";
import { Welcome } from "./Welcome";

/** Ctrl (or Cmd) shortcuts: the key, with Shift or not, and what it does. */
const SHORTCUTS: { key: string; shift: boolean; run: (s: EditorState, w: WorkspaceState) => unknown }[] = [
  { key: "n", shift: false, run: (_, w) => w.newBlueprint() },
  { key: "o", shift: false, run: (_, w) => w.openFile() },
  { key: "w", shift: false, run: (_, w) => w.closeTab(w.active) },
  { key: "q", shift: false, run: (_, w) => w.closeWindow() },
  { key: "e", shift: false, run: (s) => s.exportFile() },
  { key: "s", shift: false, run: (s) => s.save() },
  { key: "s", shift: true, run: (s) => s.saveAs() },
  { key: "z", shift: false, run: (s) => s.undo() },
  { key: "z", shift: true, run: (s) => s.redo() },
  { key: "y", shift: false, run: (s) => s.redo() },
  { key: "l", shift: false, run: (s) => s.autoLayout() },
];

export function Editor() {
  const store = useEditorStore();
  const workspace = useWorkspaceStore();
  const hasBlueprint = useEditor((s) => s.blueprint !== null);
  const laidOut = useEditor((s) => s.laidOut);
  const notice = useEditor((s) => s.notice);
  const lastEvent = useWorkspace((s) => s.lastEvent);

  useEffect(() => {
    function onKey(e: KeyboardEvent) {
      if (!(e.ctrlKey || e.metaKey)) return;
      const shortcut = SHORTCUTS.find((s) => s.key === e.key.toLowerCase() && s.shift === e.shiftKey);
      if (!shortcut) return;
      e.preventDefault();
      void shortcut.run(store.getState(), workspace.getState());
    }
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [store, workspace]);

  return (
    <div className="editor">
      <Toolbar />
      <Tabs />
      <Palette />
      <main className="canvas" aria-label="Blueprint">
        {!hasBlueprint && <Welcome />}
        {hasBlueprint && !laidOut && <p className="empty">Laying out…</p>}
        {hasBlueprint && laidOut && (
          <ReactFlowProvider>
            <Canvas />
          </ReactFlowProvider>
        )}
      </main>
      <Inspector />
      <Problems />
      <footer className="status">
        {notice && <span className={notice.error ? "notice error" : "notice"}>{notice.text}</span>}
        {lastEvent && (
          <span className="event">
            Session {lastEvent.session_id}: {lastEvent.kind}
          </span>
        )}
      </footer>
    </div>
  );
}
