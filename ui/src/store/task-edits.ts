// The edits of the blueprint that the editor offers beyond a field's change: adding, renaming and
// removing tasks, removing dependencies, and making or unmaking scopes. Each is one undo step
// (history.ts's `edit`) and keeps the selection and the positions in step with the tasks.
import { addTask, bridgeOver, disconnect, downstreamOf, insertTask, removeTasks, renameTask, toText, type Blueprint, type Insertion } from "../blueprint";
import { TASK_TYPE } from "../backend/generated";
import { edgeId } from "../editor/graph";
import { keepScopesClosed, openScope, unwrapScope } from "../scopeEdit";
import type { EditorInternals, GetEditor, SetEditor, TaskEditsSlice } from "./editor-state";

/** How far below the task it follows a task added without a place goes; how far right, in a layout that flows right. */
const NEW_TASK_GAP = 120;
const NEW_TASK_GAP_RIGHT = 280;

/** Where a task added without a say goes: after the selected task, else before the end task. */
function insertionFor(blueprint: Blueprint, selected: string | null): Insertion | null {
  const task = blueprint.tasks.find((t) => t.id === selected);
  if (task && task.type !== TASK_TYPE.END) return { after: task.id };
  const end = task ?? blueprint.tasks.find((t) => t.type === TASK_TYPE.END);
  return end ? { before: end.id } : null;
}

/** The task a new one is placed by. */
function anchorOf(place: Insertion): string {
  if ("after" in place) return place.after;
  if ("before" in place) return place.before;
  if ("from" in place) return place.from;
  return place.into.from;
}

export function taskEditsSlice(set: SetEditor, get: GetEditor, internals: EditorInternals): TaskEditsSlice {
  return {
    renameTask(from, to) {
      const { blueprint, positions, breakpoints, selected, selection } = get();
      if (!blueprint) return "no blueprint is open";
      const renamed = renameTask(blueprint, from, to);
      if ("error" in renamed) return renamed.error;
      // The old id keeps its place (and breakpoint) too, for an undo of the rename.
      const at = positions[from];
      if (at) set({ positions: { ...positions, [to]: at } });
      const held = breakpoints[from];
      if (held) set({ breakpoints: { ...breakpoints, [to]: held } });
      if (selected === from) set({ selected: to });
      if (selection.includes(from)) set({ selection: selection.map((id) => (id === from ? to : id)) });
      get().edit(() => renamed.blueprint);
      return null;
    },

    addTask(type, at, where) {
      const { blueprint, positions, selected, direction } = get();
      if (!blueprint) return;
      const place = where === undefined ? insertionFor(blueprint, selected) : where;
      const added = place ? insertTask(blueprint, type, place) : addTask(blueprint, type);
      const next = added.blueprint;
      const moved = { ...positions };
      if (at) moved[added.id] = at;
      else {
        // After the task it follows, a step further along the flow (for one put before a task:
        // in that task's place), and what runs after it one step further, so that nothing is
        // drawn over it. Along the flow is down, or right in a layout that flows right.
        const [along, across, gap] = direction === "right" ? (["x", "y", NEW_TASK_GAP_RIGHT] as const) : (["y", "x", NEW_TASK_GAP] as const);
        const anchor = place && anchorOf(place);
        const near = anchor ? positions[anchor] : undefined;
        const placed = Object.values(positions);
        const side = near?.[across] ?? (placed.length > 0 ? Math.min(...placed.map((p) => p[across])) : 0);
        const step = near ? (place && "before" in place ? near[along] : near[along] + gap) : placed.length > 0 ? Math.max(...placed.map((p) => p[along])) + gap : 0;
        moved[added.id] = { [along]: step, [across]: side } as { x: number; y: number };
        for (const id of downstreamOf(next, added.id)) {
          const p = moved[id];
          if (p && p[along] >= step - gap / 2) moved[id] = { ...p, [along]: p[along] + gap };
        }
      }
      set({ positions: moved });
      get().edit(() => next);
      // Dropped where the user looks, it is in view already: only a task placed here moves the view.
      if (at) get().select(added.id);
      else get().focusTask(added.id);
    },

    deleteTasks(ids, dependencies = []) {
      const { blueprint, selected } = get();
      if (!blueprint) return;
      const present = new Set(blueprint.tasks.map((t) => t.id));
      const gone = new Set(ids.filter((id) => present.has(id)));
      if (gone.size === 0 && dependencies.length === 0) return;
      // What waited for a removed task waits for what it waited for; a removed dependency is just gone.
      const removed = gone.size > 0 ? removeTasks(bridgeOver(blueprint, gone), gone) : blueprint;
      const cut = dependencies.reduce((acc, d) => disconnect(acc, d.from, d.to), removed);
      const kept = keepScopesClosed(blueprint, cut, gone);
      get().edit(() => kept.blueprint);
      // A scope that lost the task closing it is told of: closed further up, or gone.
      const said = [
        ...kept.moved.map((m) => `Scope ${m.start} now ends at ${m.to} (${m.from} closed it).`),
        ...kept.dropped.map((start) => `Scope ${start} was removed: no task was left to close it.`),
      ];
      if (said.length > 0) set({ notice: { text: `${said.join(" ")} Undo (Ctrl+Z) puts it back.`, error: false } });
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
