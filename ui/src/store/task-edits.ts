// The edits of the blueprint that the editor offers beyond a field's change: adding, renaming and
// removing tasks, removing dependencies, and making or unmaking scopes. Each is one undo step
// (history.ts's `edit`) and keeps the selection and the positions in step with the tasks.
import { addTask, disconnect, removeTasks, renameTask, toText } from "../blueprint";
import { edgeId } from "../editor/graph";
import { openScope, unwrapScope } from "../scopeEdit";
import type { EditorInternals, GetEditor, SetEditor, TaskEditsSlice } from "./editor-state";

/** How far below the lowest task a task added without a place goes. */
const NEW_TASK_GAP = 120;

export function taskEditsSlice(set: SetEditor, get: GetEditor, internals: EditorInternals): TaskEditsSlice {
  return {
    renameTask(from, to) {
      const { blueprint, positions, selected, selection } = get();
      if (!blueprint) return "no blueprint is open";
      const renamed = renameTask(blueprint, from, to);
      if ("error" in renamed) return renamed.error;
      // The old id keeps its place too, for an undo of the rename.
      const at = positions[from];
      if (at) set({ positions: { ...positions, [to]: at } });
      if (selected === from) set({ selected: to });
      if (selection.includes(from)) set({ selection: selection.map((id) => (id === from ? to : id)) });
      get().edit(() => renamed.blueprint);
      return null;
    },

    addTask(type, at) {
      const { blueprint, positions } = get();
      if (!blueprint) return;
      const added = addTask(blueprint, type);
      const placed = Object.values(positions);
      const x = at?.x ?? (placed.length > 0 ? Math.min(...placed.map((p) => p.x)) : 0);
      const y = at?.y ?? (placed.length > 0 ? Math.max(...placed.map((p) => p.y)) + NEW_TASK_GAP : 0);
      set({ positions: { ...positions, [added.id]: { x, y } } });
      get().edit(() => added.blueprint);
      // Dropped where the user looks, it is in view already: only a task added below moves the view.
      if (at) get().select(added.id);
      else get().focusTask(added.id);
    },

    deleteTasks(ids, dependencies = []) {
      const { blueprint, selected } = get();
      if (!blueprint) return;
      const present = new Set(blueprint.tasks.map((t) => t.id));
      const gone = new Set(ids.filter((id) => present.has(id)));
      if (gone.size === 0 && dependencies.length === 0) return;
      get().edit((b) => dependencies.reduce((acc, d) => disconnect(acc, d.from, d.to), gone.size > 0 ? removeTasks(b, gone) : b));
      if (selected !== null && gone.has(selected)) internals.choose(get().selection.at(-1) ?? null, get().selection, true);
    },

    deleteSelection() {
      const { blueprint, selection, selectedDependency } = get();
      if (!blueprint) return;
      if (selection.length > 0) return get().deleteTasks(selection);
      for (const task of blueprint.tasks) {
        const dependency = task.depends_on?.find((d) => edgeId(d.id, task.id) === selectedDependency);
        if (dependency) {
          get().deleteTasks([], [{ from: dependency.id, to: task.id }]);
          set({ selectedDependency: null });
          return;
        }
      }
    },

    async createScope(ids, name) {
      const { blueprint } = get();
      if (!blueprint) return "no blueprint is open";
      let check;
      try {
        check = await internals.backend.call("check_scope", { text: toText(blueprint), tasks: ids });
      } catch (e) {
        internals.fail(e);
        return e instanceof Error ? e.message : String(e);
      }
      if (check.verdict === "refused") {
        set({ notice: { text: `No scope made: ${check.reason}`, error: true } });
        return check.reason;
      }
      // Judged for the blueprint as it was asked about: one changed meanwhile is asked again.
      if (get().blueprint !== blueprint) return get().createScope(ids, name);
      const { start, end } = check;
      get().edit((b) => openScope(b, start, end, name));
      get().selectScope(start);
      return null;
    },

    removeScope(start) {
      get().edit((b) => unwrapScope(b, start));
      if (get().selectedScope === start) set({ selectedScope: null });
    },
  };
}
