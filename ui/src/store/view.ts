// What the editor shows around the blueprint: the notice in the status bar, and what commands
// ask for: the command palette, the minimap, a zoom to fit. Nothing of it is saved.
import type { EditorState, GetEditor, SetEditor, ViewSlice } from "./editor-state";

// The command palette takes its modes from here, beside the rest of what the view holds.
export type { PaletteMode } from "./editor-state";

/**
 * Up to this many tasks a blueprint fits the canvas at a readable zoom and needs no minimap; a
 * larger one shows it until the user hides it.
 */
export const MINIMAP_FROM = 31;
/**
 * From this many tasks on (the canvas's LARGE_FROM, where it starts drawing only what is in
 * view to stay fast to pan) the minimap is hidden until the user shows it. It keeps a rectangle
 * and a store subscription per task and measures every task on each frame of a pan: in a DOM
 * without painting (happy-dom), a step of a pan cost about 1.3 ms more with it at 500 tasks,
 * 2.5 ms at 1,000 and 6 to 15 ms at 2,000, too much of a 16 ms frame.
 */
export const MINIMAP_UP_TO = 499;

export function showsMinimap(state: Pick<EditorState, "minimap" | "blueprint">): boolean {
  const n = state.blueprint?.tasks.length ?? 0;
  return state.minimap ?? (n >= MINIMAP_FROM && n <= MINIMAP_UP_TO);
}

export function viewSlice(set: SetEditor, get: GetEditor): ViewSlice {
  return {
    notice: null,
    palette: null,
    adding: null,
    minimap: null,
    fitRequest: 0,
    notify(text, error) {
      set({ notice: { text, error } });
    },
    openPalette(mode) {
      set({ palette: mode, adding: mode === "add" ? (get().adding ?? {}) : null });
    },
    openAdd(adding = {}) {
      set({ palette: "add", adding });
    },
    toggleMinimap() {
      set({ minimap: !showsMinimap(get()) });
    },
    zoomToFit() {
      set({ fitRequest: get().fitRequest + 1 });
    },
  };
}
