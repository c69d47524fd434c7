// The editor's copy, cut, paste and duplicate: the selected tasks as blueprint text (clipboard.ts),
// and that text back as tasks, each paste one undo step. The system clipboard is the UI's
// business (editor/system-clipboard.ts); the store only makes and takes the text.
import { boundsOf, copyFragment, pasteFragment, placeBelow } from "../clipboard";
import type { CopyPasteSlice, GetEditor, SetEditor } from "./editor-state";
import type { Positions } from "./positions";

/** How far a paste lands from the tasks it copies, so that the copies do not hide them. */
export const PASTE_OFFSET = 40;

function tasks(n: number): string {
  return n === 1 ? "1 task" : `${n} tasks`;
}

export function copyPasteSlice(set: SetEditor, get: GetEditor): CopyPasteSlice {
  // The last copy made here, to paste it beside its tasks rather than below everything: where
  // they were, in which file, and how many times it was pasted (each paste lands further off).
  let last: { text: string; path: string | null; positions: Positions; pasted: number } | null = null;

  const notice = (text: string, error = false) => set({ notice: { text, error } });

  /** The selection as text, with where its tasks sit; null when nothing is selected. */
  function fragment(): { text: string; count: number; positions: Positions } | null {
    const { blueprint, selection, positions } = get();
    if (!blueprint || selection.length === 0) return null;
    const chosen = new Set(selection);
    const at: Positions = {};
    for (const id of chosen) if (positions[id]) at[id] = positions[id];
    return { text: copyFragment(blueprint, chosen), count: chosen.size, positions: at };
  }

  /**
   * Pastes `text`; with `origin` (where the copied tasks sat, by their id in the text) the
   * copies land `shift` steps of PASTE_OFFSET from them, else below every task.
   */
  function insert(text: string, origin: Positions | null, shift: number, done: (n: number) => string) {
    const { blueprint, positions, taskTypes } = get();
    if (!blueprint) return;
    const result = pasteFragment(blueprint, text, boundsOf(taskTypes));
    if ("error" in result) return notice(`Cannot paste: ${result.error}`, true);
    const leftOut = result.skipped.length > 0 ? ` (left out ${result.skipped.join(", ")}: the blueprint has its own)` : "";
    if (result.ids.length === 0) return notice(`Nothing pasted${leftOut}`);

    const textId = new Map(result.ids.map((id) => [id, id]));
    for (const [from, to] of Object.entries(result.renamed)) textId.set(to, from);
    const known = origin !== null && result.ids.every((id) => origin[textId.get(id) ?? id]);
    let placed: Positions;
    if (known) {
      placed = {};
      for (const id of result.ids) {
        const at = origin[textId.get(id) ?? id]!;
        placed[id] = { x: at.x + shift * PASTE_OFFSET, y: at.y + shift * PASTE_OFFSET };
      }
    } else {
      const added = new Set(result.ids);
      placed = placeBelow(result.blueprint.tasks.filter((t) => added.has(t.id)), positions);
    }
    set({ positions: { ...positions, ...placed } });
    get().edit(() => result.blueprint);
    const [first] = result.ids as [string];
    // Below everything, the copies may be out of view: the canvas is asked to show them.
    if (known) get().select(first);
    else get().focusTask(first);
    set({ selection: result.ids });
    notice(done(result.ids.length) + leftOut);
  }

  return {
    copy() {
      const copied = fragment();
      if (!copied) {
        notice("Select tasks to copy");
        return null;
      }
      last = { text: copied.text, path: get().path, positions: copied.positions, pasted: 0 };
      notice(`Copied ${tasks(copied.count)}`);
      return copied.text;
    },

    cut() {
      const copied = fragment();
      if (!copied) {
        notice("Select tasks to cut");
        return null;
      }
      // The first paste of a cut puts the tasks back where they were.
      last = { text: copied.text, path: get().path, positions: copied.positions, pasted: -1 };
      get().deleteSelection();
      notice(`Cut ${tasks(copied.count)}`);
      return copied.text;
    },

    paste(text) {
      const mine = last !== null && last.text === text && last.path === get().path ? last : null;
      if (mine) mine.pasted += 1;
      insert(text, mine?.positions ?? null, mine?.pasted ?? 0, (n) => `Pasted ${tasks(n)}`);
    },

    duplicate() {
      const copied = fragment();
      if (!copied) return notice("Select tasks to duplicate");
      insert(copied.text, copied.positions, 1, (n) => `Duplicated ${tasks(n)}`);
    },

    clipboardRefused(key) {
      notice(`This window may not use the clipboard from a command: press ${key}`, true);
    },
  };
}
