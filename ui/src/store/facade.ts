// What the facade says about the open blueprint: its verdict, its scopes, its wiring, the names
// the selected task may read and the definitions of task types. The questions are asked after
// every change (history.ts) and every choice of a task (selection.ts); the answer to an older
// question is dropped, as only the newest blueprint's counts.
import type { Backend } from "../backend/types";
import { toText, type Blueprint } from "../blueprint";
import type { EditorInternals, FacadeQuestions, FacadeSlice, GetEditor, SetEditor } from "./editor-state";

export function facadeQuestions(backend: Backend, set: SetEditor, get: GetEditor, fail: (e: unknown) => void): FacadeQuestions {
  // The questions of one change are asked of the same blueprint: its text is made once (for
  // 10,000 tasks, a JSON.stringify of tens of ms).
  let texted: { blueprint: Blueprint; text: string } | null = null;
  const textOf = (blueprint: Blueprint) => {
    if (texted?.blueprint !== blueprint) texted = { blueprint, text: toText(blueprint) };
    return texted.text;
  };
  let validation = 0;
  let naming = 0;
  let scoping = 0;
  let wiring = 0;

  // Typing makes a blueprint a keystroke: each question is asked of one blueprint at a time,
  // and of the newest one when the answer comes, never of every one typed in between.
  const validate = newestOnly(async (blueprint: Blueprint) => {
    const mine = ++validation;
    try {
      // Checked as the file it is saved as: composites find the blueprints beside it.
      const file = get().path ?? undefined;
      const [report] = await backend.call("validate_blueprint", { text: textOf(blueprint), file });
      if (mine === validation) set({ report: report ?? null, checked: blueprint });
    } catch (e) {
      if (mine === validation) fail(e);
    }
    if (mine === validation) await refreshNames();
  });

  const refreshScopes = newestOnly(async (blueprint: Blueprint) => {
    const mine = ++scoping;
    try {
      const scopes = await backend.call("blueprint_scopes", { text: textOf(blueprint) });
      if (mine === scoping) set({ scopes });
    } catch {
      // A blueprint the facade cannot read has no scopes to draw; validation says why.
      if (mine === scoping) set({ scopes: [] });
    }
  });

  async function refreshWiring() {
    const mine = ++wiring;
    const { blueprint, showWiring } = get();
    if (!showWiring || !blueprint) {
      set({ wires: null });
      return;
    }
    try {
      const wires = await backend.call("blueprint_wiring", { text: textOf(blueprint) });
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
      const names = await backend.call("task_names", { text: textOf(blueprint), task_id: task.id });
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

/**
 * `ask` run for one blueprint at a time: a call while one runs waits, and only the newest of the
 * calls that waited runs after it. The promise of a call ends when its blueprint (or a newer one
 * in its place) has been asked about.
 */
function newestOnly(ask: (blueprint: Blueprint) => Promise<void>): (blueprint: Blueprint) => Promise<void> {
  let running: Promise<void> | null = null;
  let next: Blueprint | null = null;
  const run = async (blueprint: Blueprint): Promise<void> => {
    await ask(blueprint);
    const waiting = next;
    next = null;
    running = waiting === null ? null : run(waiting);
    return running ?? undefined;
  };
  return (blueprint) => {
    if (running === null) {
      running = run(blueprint);
      return running;
    }
    next = blueprint;
    return running;
  };
}

export function facadeSlice(set: SetEditor, get: GetEditor, internals: EditorInternals): FacadeSlice {
  return {
    report: null,
    checked: null,
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
