// The editor's state: the open blueprint with its undo history, where its nodes sit, and what
// the facade says about it. Every change of the blueprint is validated through the backend.
import { createStore, type StoreApi } from "zustand/vanilla";
import type { Backend } from "../backend/types";
import type { EventView, FileReport, TaskDefinitionSummary } from "../backend/generated";
import { addTask, parseBlueprint, toText, type Blueprint } from "../blueprint";

export type Position = { x: number; y: number };
export type Positions = Record<string, Position>;
/** Places the tasks of a blueprint (the app runs elkjs in a worker). */
export type Layout = (blueprint: Blueprint) => Promise<Positions>;

export type EditorState = {
  path: string | null;
  blueprint: Blueprint | null;
  past: Blueprint[];
  future: Blueprint[];
  /** Beside the blueprint, never in its file. */
  positions: Positions;
  /** Whether the layout of the open blueprint arrived: until then there is nothing to show. */
  laidOut: boolean;
  /** The facade's verdict on the current blueprint; null until it answers. */
  report: FileReport | null;
  taskTypes: TaskDefinitionSummary[];
  /** The selected task, or the selected dependency (an edge id of editor/graph.ts). */
  selected: string | null;
  selectedDependency: string | null;
  /** Asks the canvas to bring a task into view; `serial` tells repeated requests apart. */
  focus: { task: string; serial: number } | null;
  /** The last thing the user should know: saved, or why something failed. */
  notice: { text: string; error: boolean } | null;
  lastEvent: EventView | null;

  load(): Promise<void>;
  openFile(): Promise<void>;
  open(path: string, text: string): Promise<void>;
  edit(change: (blueprint: Blueprint) => Blueprint): void;
  undo(): void;
  redo(): void;
  save(): Promise<void>;
  saveAs(): Promise<void>;
  /** Adds a task of `type` below the others and brings it into view. */
  addTask(type: string): void;
  moveTask(id: string, position: Position): void;
  select(id: string | null): void;
  selectDependency(id: string | null): void;
  focusTask(id: string): void;
};

export type EditorStore = StoreApi<EditorState>;

const HISTORY_LIMIT = 200;
const NEW_TASK_GAP = 120;

export function createEditorStore(backend: Backend, layout: Layout): EditorStore {
  // Answers of older validations are dropped: only the newest blueprint's verdict counts.
  let validation = 0;
  let focusSerial = 0;
  // A layout that arrives after another file was opened is dropped.
  let opened = 0;

  return createStore<EditorState>()((set, get) => {
    const fail = (e: unknown) => set({ notice: { text: e instanceof Error ? e.message : String(e), error: true } });

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
    }

    function replace(blueprint: Blueprint, past: Blueprint[], future: Blueprint[]) {
      set({ blueprint, past, future, report: null });
      void validate(blueprint);
    }

    async function write(text: string, to: (canonical: string) => Promise<string | null>) {
      const { blueprint } = get();
      if (!blueprint) return;
      try {
        const formatted = await backend.call("format_blueprint", { text });
        const path = await to(formatted.text);
        if (path !== null) set({ path, notice: { text: `Saved ${path}`, error: false } });
      } catch (e) {
        fail(e);
      }
    }

    return {
      path: null,
      blueprint: null,
      past: [],
      future: [],
      positions: {},
      laidOut: false,
      report: null,
      taskTypes: [],
      selected: null,
      selectedDependency: null,
      focus: null,
      notice: null,
      lastEvent: null,

      async load() {
        backend.onEvent((event) => set({ lastEvent: event }));
        try {
          const [taskTypes, startup] = await Promise.all([
            backend.call("list_installed_task_definitions", {}),
            backend.startupFile(),
          ]);
          set({ taskTypes });
          if (startup) await get().open(startup.path, startup.text);
        } catch (e) {
          fail(e);
        }
      },

      async openFile() {
        try {
          const file = await backend.openFile();
          if (file) await get().open(file.path, file.text);
        } catch (e) {
          fail(e);
        }
      },

      async open(path, text) {
        const parsed = parseBlueprint(text);
        if ("error" in parsed) {
          set({ notice: { text: `Cannot open ${path}: ${parsed.error}`, error: true } });
          return;
        }
        const mine = ++opened;
        set({ path, positions: {}, laidOut: false, selected: null, selectedDependency: null, notice: null });
        replace(parsed.blueprint, [], []);
        let positions: Positions = {};
        try {
          positions = await layout(parsed.blueprint);
        } catch (e) {
          fail(e);
        }
        if (mine === opened) set({ positions, laidOut: true });
      },

      edit(change) {
        const { blueprint, past } = get();
        if (!blueprint) return;
        const changed = change(blueprint);
        if (changed === blueprint) return;
        replace(changed, [...past, blueprint].slice(-HISTORY_LIMIT), []);
      },

      undo() {
        const { blueprint, past, future } = get();
        const previous = past.at(-1);
        if (!blueprint || !previous) return;
        replace(previous, past.slice(0, -1), [blueprint, ...future]);
      },

      redo() {
        const { blueprint, past, future } = get();
        const [next, ...rest] = future;
        if (!blueprint || !next) return;
        replace(next, [...past, blueprint], rest);
      },

      async save() {
        const { blueprint, path } = get();
        if (!blueprint) return;
        if (path === null) return get().saveAs();
        await write(toText(blueprint), async (canonical) => {
          await backend.saveFile(path, canonical);
          return path;
        });
      },

      async saveAs() {
        const { blueprint } = get();
        if (!blueprint) return;
        await write(toText(blueprint), (canonical) => backend.saveFileAs(canonical));
      },

      addTask(type) {
        const { blueprint, positions } = get();
        if (!blueprint) return;
        const added = addTask(blueprint, type);
        const placed = Object.values(positions);
        const x = placed.length > 0 ? Math.min(...placed.map((p) => p.x)) : 0;
        const y = placed.length > 0 ? Math.max(...placed.map((p) => p.y)) + NEW_TASK_GAP : 0;
        set({ positions: { ...positions, [added.id]: { x, y } } });
        get().edit(() => added.blueprint);
        get().focusTask(added.id);
      },

      moveTask(id, position) {
        set({ positions: { ...get().positions, [id]: position } });
      },

      select(id) {
        set({ selected: id, selectedDependency: null });
      },

      selectDependency(id) {
        set({ selected: null, selectedDependency: id });
      },

      focusTask(id) {
        set({ selected: id, selectedDependency: null, focus: { task: id, serial: ++focusSerial } });
      },
    };
  });
}
