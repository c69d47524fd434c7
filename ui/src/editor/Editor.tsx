import { ReactFlowProvider } from "@xyflow/react";
import { useEffect } from "react";
import { useEditor, useEditorStore } from "../store/context";
import type { EditorState } from "../store/editor";
import { Inspector } from "../inspector/Inspector";
import { Canvas } from "./Canvas";
import { Palette } from "./Palette";
import { Problems } from "./Problems";
import { ScopeInspector } from "./ScopeInspector";
import { Toolbar } from "./Toolbar";

/** Ctrl (or Cmd) shortcuts: the key, with Shift or not, and what it does. */
const SHORTCUTS: { key: string; shift: boolean; run: (s: EditorState) => unknown }[] = [
  { key: "o", shift: false, run: (s) => s.openFile() },
  { key: "s", shift: false, run: (s) => s.save() },
  { key: "s", shift: true, run: (s) => s.saveAs() },
  { key: "z", shift: false, run: (s) => s.undo() },
  { key: "z", shift: true, run: (s) => s.redo() },
  { key: "y", shift: false, run: (s) => s.redo() },
  { key: "l", shift: false, run: (s) => s.autoLayout() },
];

export function Editor() {
  const store = useEditorStore();
  const hasBlueprint = useEditor((s) => s.blueprint !== null);
  const laidOut = useEditor((s) => s.laidOut);
  const notice = useEditor((s) => s.notice);
  const lastEvent = useEditor((s) => s.lastEvent);
  const scopeSelected = useEditor((s) => s.selectedScope !== null);

  useEffect(() => {
    function onKey(e: KeyboardEvent) {
      if (!(e.ctrlKey || e.metaKey)) return;
      const shortcut = SHORTCUTS.find((s) => s.key === e.key.toLowerCase() && s.shift === e.shiftKey);
      if (!shortcut) return;
      e.preventDefault();
      void shortcut.run(store.getState());
    }
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [store]);

  return (
    <div className="editor">
      <Toolbar />
      <Palette />
      <main className="canvas" aria-label="Blueprint">
        {!hasBlueprint && <p className="empty">Open a blueprint to see its tasks.</p>}
        {hasBlueprint && !laidOut && <p className="empty">Laying out…</p>}
        {hasBlueprint && laidOut && (
          <ReactFlowProvider>
            <Canvas />
          </ReactFlowProvider>
        )}
      </main>
      {scopeSelected ? <ScopeInspector /> : <Inspector />}
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
