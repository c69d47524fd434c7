// What is selected: tasks (one of them the inspector's), a dependency or a scope, one kind at a
// time; and the task the canvas is asked to bring into view. A task chosen has its definition and
// the names it may read asked of the facade (facade.ts).
import type { EditorInternals, FacadeQuestions, GetEditor, SelectionKeeping, SelectionSlice, SetEditor } from "./editor-state";

export function selectionKeeping(set: SetEditor, get: GetEditor, internals: FacadeQuestions): SelectionKeeping {
  return {
    choose(primary, selection, dropDependency) {
      const changed = primary !== get().selected;
      set({
        selected: primary,
        selection,
        ...(dropDependency || selection.length > 0 ? { selectedDependency: null } : {}),
        // A task chosen takes the place of the scope being edited.
        ...(selection.length > 0 ? { selectedScope: null } : {}),
        ...(changed ? { names: null } : {}),
      });
      if (!changed) return;
      const type = get().blueprint?.tasks.find((t) => t.id === primary)?.type;
      if (type) void internals.loadDefinition(type);
      void internals.refreshNames();
    },
  };
}

export function selectionSlice(set: SetEditor, get: GetEditor, internals: EditorInternals): SelectionSlice {
  let focusSerial = 0;

  return {
    selectedScope: null,
    selected: null,
    selection: [],
    selectedDependency: null,
    focus: null,

    select(id) {
      const { selected, selection } = get();
      const alone = id === null ? selection.length === 0 : selection.length === 1 && selection[0] === id;
      if (id === null) set({ selectedScope: null });
      if (id === selected && alone && get().selectedScope === null) return;
      internals.choose(id, id === null ? [] : [id], true);
    },

    changeSelection(changes) {
      const { selected, selection } = get();
      const chosen = new Set(selection);
      let primary = selected;
      for (const change of changes) {
        if (change.selected) {
          chosen.add(change.id);
          primary = change.id;
        } else {
          chosen.delete(change.id);
          if (primary === change.id) primary = null;
        }
      }
      const next = [...chosen];
      // The inspector goes on showing a task that is still selected rather than none.
      primary ??= next.at(-1) ?? null;
      const same = next.length === selection.length && next.every((id, i) => id === selection[i]);
      if (same && primary === selected) return;
      internals.choose(primary, next, false);
    },

    selectAll() {
      const { blueprint, selected } = get();
      if (!blueprint) return;
      internals.choose(selected, blueprint.tasks.map((t) => t.id), true);
    },

    selectDependency(id) {
      set({ selected: null, selection: [], selectedDependency: id, selectedScope: null });
    },

    focusTask(id) {
      get().select(id);
      set({ selectedDependency: null, focus: { task: id, serial: ++focusSerial } });
    },

    selectScope(start) {
      set({ selectedScope: start, selected: null, selection: [], selectedDependency: null, names: null });
      void internals.refreshNames();
    },
  };
}
