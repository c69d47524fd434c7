// The blueprint and its undo history. Every change of the blueprint, an edit, an undo, a file
// opened, goes through `replace`, which keeps of the selection what the blueprint still has and
// asks the facade about the new blueprint (facade.ts).
import type { Blueprint } from "../blueprint";
import { scopeStartOf } from "../scopeEdit";
import type {
  EditorInternals,
  FacadeQuestions,
  GetEditor,
  HistoryKeeping,
  HistorySlice,
  LayoutKeeping,
  SetEditor,
  Snapshot,
} from "./editor-state";
import type { Positions } from "./positions";

const HISTORY_LIMIT = 200;

/** `past` with one more undo step, the oldest forgotten beyond the limit. */
export function withStep(past: Snapshot[], step: Snapshot): Snapshot[] {
  return [...past, step].slice(-HISTORY_LIMIT);
}

export function historyKeeping(set: SetEditor, get: GetEditor, internals: FacadeQuestions & LayoutKeeping): HistoryKeeping {
  let lastCoalesce: string | undefined;

  function replace(blueprint: Blueprint, past: Snapshot[], future: Snapshot[], positions?: Positions) {
    const { selection } = get();
    const ids = selection.length > 0 ? new Set(blueprint.tasks.map((t) => t.id)) : null;
    const kept = ids ? selection.filter((id) => ids.has(id)) : selection;
    set({
      blueprint,
      past,
      future,
      ...(positions ? { positions } : {}),
      ...(kept.length !== selection.length ? { selection: kept } : {}),
    });
    // An undo may take away the scope being edited.
    const { selectedScope } = get();
    if (selectedScope !== null && !scopeStartOf(blueprint.tasks.find((t) => t.id === selectedScope))) {
      set({ selectedScope: null });
    }
    if (positions) internals.scheduleLayoutSave();
    void internals.validate(blueprint);
    void internals.refreshScopes(blueprint);
    void internals.refreshWiring();
  }

  return {
    replace,
    newStep() {
      lastCoalesce = undefined;
    },
    joins(coalesce) {
      const joined = coalesce !== undefined && coalesce === lastCoalesce;
      lastCoalesce = coalesce;
      return joined;
    },
  };
}

export function historySlice(get: GetEditor, internals: EditorInternals): HistorySlice {
  return {
    blueprint: null,
    past: [],
    future: [],

    edit(change, coalesce) {
      const { blueprint, past } = get();
      if (!blueprint) return;
      const changed = change(blueprint);
      if (changed === blueprint) return;
      const merge = internals.joins(coalesce) && past.length > 0;
      internals.replace(changed, merge ? past : withStep(past, { blueprint }), []);
    },

    undo() {
      const { blueprint, past, future, positions } = get();
      const previous = past.at(-1);
      if (!blueprint || !previous) return;
      internals.newStep();
      const current = { blueprint, ...(previous.positions ? { positions } : {}) };
      internals.replace(previous.blueprint, past.slice(0, -1), [current, ...future], previous.positions);
    },

    redo() {
      const { blueprint, past, future, positions } = get();
      const [next, ...rest] = future;
      if (!blueprint || !next) return;
      internals.newStep();
      const current = { blueprint, ...(next.positions ? { positions } : {}) };
      internals.replace(next.blueprint, [...past, current], rest, next.positions);
    },
  };
}
