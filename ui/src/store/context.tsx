import { createContext, useContext, type ReactNode } from "react";
import { useStore } from "zustand";
import type { EditorState, EditorStore } from "./editor";
import type { RunsState } from "./runs";
import type { WorkspaceState, WorkspaceStore } from "./workspace";

const EditorContext = createContext<EditorStore | null>(null);

export function EditorProvider({ store, children }: { store: EditorStore; children: ReactNode }) {
  return <EditorContext.Provider value={store}>{children}</EditorContext.Provider>;
}

export function useEditorStore(): EditorStore {
  const store = useContext(EditorContext);
  if (!store) throw new Error("the editor needs an EditorProvider");
  return store;
}

export function useEditor<T>(selector: (state: EditorState) => T): T {
  return useStore(useEditorStore(), selector);
}

const WorkspaceContext = createContext<WorkspaceStore | null>(null);

export function WorkspaceProvider({ store, children }: { store: WorkspaceStore; children: ReactNode }) {
  return <WorkspaceContext.Provider value={store}>{children}</WorkspaceContext.Provider>;
}

export function useWorkspaceStore(): WorkspaceStore {
  const store = useContext(WorkspaceContext);
  if (!store) throw new Error("the app needs a WorkspaceProvider");
  return store;
}

export function useWorkspace<T>(selector: (state: WorkspaceState) => T): T {
  return useStore(useWorkspaceStore(), selector);
}

/** Opens a composite's inner blueprint, where the editor sits in a window's workspace (not in a lone editor). */
export function useDrillInto(): WorkspaceState["drillInto"] | null {
  const store = useContext(WorkspaceContext);
  return store ? store.getState().drillInto : null;
}

/** Runs a task alone ("test this task"), where the editor sits in a window's workspace (not in a lone editor). */
export function usePrepareTest(): WorkspaceState["prepareTest"] | null {
  const store = useContext(WorkspaceContext);
  return store ? store.getState().prepareTest : null;
}

/** The window's runs (store/runs.ts), from its workspace. */
export function useRuns<T>(selector: (state: RunsState) => T): T {
  return useStore(useWorkspaceStore().getState().runs, selector);
}
