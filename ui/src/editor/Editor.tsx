import { ReactFlowProvider } from "@xyflow/react";
import { useEffect } from "react";
import { useEditor, useEditorStore, useWorkspace, useWorkspaceStore } from "../store/context";
import { canRun, commandForKey } from "../commands";
import { ErrorBoundary } from "../ErrorBoundary";
import { Inspector } from "../inspector/Inspector";
import { Canvas } from "./Canvas";
import { DependencyInspector } from "./DependencyInspector";
import { CommandPalette } from "./CommandPalette";
import { Palette } from "./Palette";
import { Problems, ProblemsSummary, useHasProblems } from "./Problems";
import { listenToClipboard } from "./system-clipboard";
import { ServerVerdict } from "./ServerVerdict";
import { ScopeInspector } from "./ScopeInspector";
import { Toolbar } from "./Toolbar";
import { Tabs } from "./Tabs";
import { isTyping } from "./typing";
import { Welcome } from "./Welcome";

export function Editor() {
  const store = useEditorStore();
  const workspace = useWorkspaceStore();
  const hasBlueprint = useEditor((s) => s.blueprint !== null);
  const laidOut = useEditor((s) => s.laidOut);
  const notice = useEditor((s) => s.notice);
  const activity = useWorkspace((s) => s.activity);
  const scopeSelected = useEditor((s) => s.selectedScope !== null);
  const dependencySelected = useEditor((s) => s.selectedDependency !== null);
  const hasProblems = useHasProblems();

  useEffect(() => {
    function onKey(e: KeyboardEvent) {
      const command = commandForKey(e, isTyping(document.activeElement));
      if (!command) return;
      // The key is the editor's even when its command cannot run now (undo with no history).
      e.preventDefault();
      const state = store.getState();
      if (canRun(command, state)) void command.run(state, workspace.getState());
    }
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [store, workspace]);

  useEffect(() => listenToClipboard(store), [store]);

  return (
    <div className={hasProblems ? "editor with-problems" : "editor"}>
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
      <ErrorBoundary area="inspector">
        {scopeSelected ? <ScopeInspector /> : dependencySelected ? <DependencyInspector /> : <Inspector />}
      </ErrorBoundary>
      <Problems />
      <footer className="status">
        <ProblemsSummary />
        <ServerVerdict />
        {notice && <span className={notice.error ? "notice error" : "notice"}>{notice.text}</span>}
        {activity && <span className="event">{activity}</span>}
      </footer>
      <CommandPalette />
    </div>
  );
}
