// What the facade says about the open blueprint: its verdict, its scopes, its wiring, the names
// the selected task may read and the definitions of task types. The questions are asked after
// every change (history.ts) and every choice of a task (selection.ts); the answer to an older
// question is dropped, as only the newest blueprint's counts.
import type { Backend } from "../backend/types";
import { toText, type Blueprint } from "../blueprint";
import type { EditorInternals, FacadeQuestions, FacadeSlice, GetEditor, SetEditor } from "./editor-state";

export function facadeQuestions(backend: Backend, set: SetEditor, get: GetEditor, fail: (e: unknown) => void): FacadeQuestions {
  let validation = 0;
  let naming = 0;
  let scoping = 0;
  let wiring = 0;

  async function validate(blueprint: Blueprint) {
    const mine = ++validation;
    try {
      // Checked as the file it is saved as: composites find the blueprints beside it.
      const file = get().path ?? undefined;
      const [report] = await backend.call("validate_blueprint", { text: toText(blueprint), file });
      if (mine === validation) set({ report: report ?? null });
    } catch (e) {
      if (mine === validation) fail(e);
    }
    if (mine === validation) await refreshNames();
  }

  async function refreshScopes(blueprint: Blueprint) {
    const mine = ++scoping;
    try {
      const scopes = await backend.call("blueprint_scopes", { text: toText(blueprint) });
      if (mine === scoping) set({ scopes });
    } catch {
      // A blueprint the facade cannot read has no scopes to draw; validation says why.
      if (mine === scoping) set({ scopes: [] });
    }
  }

  async function refreshWiring() {
    const mine = ++wiring;
    const { blueprint, showWiring } = get();
    if (!showWiring || !blueprint) {
      set({ wires: null });
      return;
    }
    try {
      const wires = await backend.call("blueprint_wiring", { text: toText(blueprint) });
      if (mine === wiring) set({ wires });
    } catch {
      // A blueprint the facade cannot read has no wiring to draw; validation says why.
      if (mine === wiring) set({ wires: [] });
    }
  }

  async function refreshNames() {
    const mine = ++naming;
    const { blueprint, selected, selectedScope } = get();
    const shown = selected ?? selectedScope;
    const task = blueprint?.tasks.find((t) => t.id === shown);
    if (!blueprint || !task) {
      set({ names: null });
      return;
    }
    try {
      const names = await backend.call("task_names", { text: toText(blueprint), task_id: task.id });
      if (mine === naming) set({ names });
    } catch {
      // A blueprint the facade cannot read has no names to offer; validation says why.
      if (mine === naming) set({ names: null });
    }
  }

  async function loadDefinition(type: string) {
    if (type in get().definitions) return;
    set({ definitions: { ...get().definitions, [type]: null } });
    try {
      const definition = await backend.call("get_task_type", { name: type });
      set({ definitions: { ...get().definitions, [type]: definition } });
    } catch {
      // Not installed here: the inspector offers no param names for it.
    }
  }

  return { validate, refreshScopes, refreshWiring, refreshNames, loadDefinition };
}

export function facadeSlice(set: SetEditor, get: GetEditor, internals: EditorInternals): FacadeSlice {
  return {
    report: null,
    scopes: [],
    taskTypes: [],
    names: null,
    definitions: {},
    showWiring: false,
    wires: null,

    revalidate() {
      const { blueprint } = get();
      if (blueprint) void internals.validate(blueprint);
    },

    setTaskTypes(taskTypes) {
      set({ taskTypes });
    },

    toggleWiring() {
      set({ showWiring: !get().showWiring });
      void internals.refreshWiring();
    },
  };
}
