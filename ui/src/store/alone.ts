// "Test this task": one task of the blueprint open in the editor run alone (`run_task_alone`),
// as the dialog over the editor shows it: its inputs filled from the newest completed real run
// of the blueprint (each a value to keep or change), then the run followed to its end and its
// outcome: state, exit code, outputs, error and log, without leaving the editor.
import { createStore, type StoreApi } from "zustand/vanilla";
import type { Attempt, SessionState } from "../backend/generated";
import type { Backend } from "../backend/types";

/** One input of the task: its name, the data key it reads, and the latest run's value there. */
export type AloneInput = { name: string; key: string; latest?: unknown };

export type AloneState = {
  /** The task shown, or null when the dialog is closed. */
  task: {
    file: string;
    /** The blueprint's id: its root instance, whose data the inputs read. */
    blueprint: string;
    id: string;
    inputs: AloneInput[];
    /** The run the inputs' values come from; null while it is looked for or when there is none. */
    latest: { session_id: string; started_ms: number | null } | null;
  } | null;
  /** The session running it, once started. */
  session_id: string | null;
  /** How it ended: the session's state and the task's attempt (none when it was skipped). */
  outcome: { state: SessionState; attempt: Attempt | null } | null;
  running: boolean;
  error: string | null;

  open(file: string, blueprint: string, task: string, inputs: { name: string; key: string }[]): Promise<void>;
  /** Runs it: the inputs `typed` (by name) as given, the others from the latest run when there is one. */
  run(typed: Record<string, unknown>): Promise<void>;
  close(): void;
};

export type AloneStore = StoreApi<AloneState>;

const message = (e: unknown) => (e instanceof Error ? e.message : String(e));

export function createAlone(backend: Backend): AloneStore {
  // Answers about a task no longer shown are dropped.
  let serial = 0;
  return createStore<AloneState>()((set, get) => ({
    task: null,
    session_id: null,
    outcome: null,
    running: false,
    error: null,

    async open(file, blueprint, id, inputs) {
      const mine = ++serial;
      set({ task: { file, blueprint, id, inputs, latest: null }, session_id: null, outcome: null, running: false, error: null });
      try {
        // The newest completed run that was not a simulation: a simulation's data feeds no real task.
        const listed = await backend.call("list_sessions", { blueprint_id: blueprint, state: "completed", limit: 100 });
        const latest = listed.find((s) => !s.simulation);
        if (!latest || inputs.length === 0 || mine !== serial) return;
        const data = await backend.call("read_session_data", { session_id: latest.id, instance: blueprint });
        const values = data[blueprint] ?? {};
        const task = get().task;
        if (mine !== serial || !task) return;
        set({
          task: {
            ...task,
            inputs: task.inputs.map((i) => (i.key in values ? { ...i, latest: values[i.key] } : i)),
            latest: { session_id: latest.id, started_ms: latest.started_ms ?? null },
          },
        });
      } catch {
        // Without a past run the inputs are typed in.
      }
    },

    async run(typed) {
      const task = get().task;
      if (!task || get().running) return;
      const mine = ++serial;
      set({ running: true, outcome: null, session_id: null, error: null });
      try {
        const started = await backend.call("run_task_alone", {
          file: task.file,
          task: task.id,
          inputs: typed,
          ...(task.latest ? { inputs_from: task.latest.session_id } : {}),
        });
        if (mine !== serial) return;
        set({ session_id: started.session_id });
        let waited = { ended: false, session: { state: "running" as SessionState } };
        while (!waited.ended) {
          waited = await backend.call("wait_session", { session_id: started.session_id, timeout_s: 1 });
          if (mine !== serial) return;
        }
        const state = waited.session.state;
        const view = await backend.call("get_session", { session_id: started.session_id });
        const attempt = [...view.attempts].reverse().find((a) => a.instance === task.blueprint && a.task === task.id) ?? null;
        if (mine === serial) set({ outcome: { state, attempt }, running: false });
      } catch (e) {
        if (mine === serial) set({ error: message(e), running: false });
      }
    },

    close() {
      serial++;
      set({ task: null, session_id: null, outcome: null, running: false, error: null });
    },
  }));
}
