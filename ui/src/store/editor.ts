// The editor's store: the open blueprint with its undo history, where its nodes sit, and what
// the facade says about it. Every change of the blueprint is validated through the backend. The
// store is made of slices, one module each; this one puts them together, with the helpers they
// share (editor-state.ts says what each holds).
import { createStore } from "zustand/vanilla";
import type { Backend } from "../backend/types";
import { copyPasteSlice } from "./copy-paste";
import type { EditorInternals, EditorState, EditorStore, Layout, Snapshot } from "./editor-state";
import { facadeQuestions, facadeSlice } from "./facade";
import { filesSlice } from "./files";
import { historyKeeping, historySlice } from "./history";
import { layoutKeeping, placementSlice } from "./placement";
import type { Position, Positions } from "./positions";
import { selectionKeeping, selectionSlice } from "./selection";
import { taskEditsSlice } from "./task-edits";
import { viewSlice } from "./view";

export type { EditorState, EditorStore, Layout, Position, Positions, Snapshot };

export type EditorOptions = {
  /** How long the nodes must rest before their layout is written beside the file. */
  layoutSaveDelayMs?: number;
};

/** Whether the open blueprint differs from its file (undoing back to it makes it clean again). */
export function isDirty(state: EditorState): boolean {
  return state.blueprint !== state.saved;
}

export function createEditorStore(backend: Backend, layout: Layout, options: EditorOptions = {}): EditorStore {
  const layoutSaveDelay = options.layoutSaveDelayMs ?? 600;

  return createStore<EditorState>()((set, get) => {
    const fail = (e: unknown) => set({ notice: { text: e instanceof Error ? e.message : String(e), error: true } });
    // Each helper is made from those it calls: the questions to the facade first, as the history
    // and the selection ask them.
    const questions = facadeQuestions(backend, set, get, fail);
    const layouts = layoutKeeping(backend, layout, layoutSaveDelay, get, fail);
    const internals: EditorInternals = {
      backend,
      layout,
      fail,
      ...questions,
      ...layouts,
      ...historyKeeping(set, get, { ...questions, ...layouts }),
      ...selectionKeeping(set, get, questions),
    };

    return {
      ...filesSlice(set, get, internals),
      ...historySlice(get, internals),
      ...placementSlice(set, get, internals),
      ...facadeSlice(set, get, internals),
      ...selectionSlice(set, get, internals),
      ...taskEditsSlice(set, get, internals),
      ...copyPasteSlice(set, get),
      ...viewSlice(set, get),
    };
  });
}
