// The window's blueprints: one tab per open blueprint, each a stack of editors (the blueprint,
// then the inner blueprints drilled into from its composites, the breadcrumb); the recent files;
// and the question asked before unsaved work would be lost (closing a tab, the window, or
// leaving an inner blueprint).
import { createStore, type StoreApi } from "zustand/vanilla";
import { eventWords } from "../runs/words";
import type { BreakpointArgument, PublishBlueprintsAnswer, PublishedBlueprint, ServerInfo, TaskTypeSummary } from "../backend/generated";
import type { Backend, MenuAction } from "../backend/types";
import { ioOf, newBlueprint } from "../blueprint";
import { findInner, innerOf } from "../inspector/composite";
import { fileName, folderOf } from "../paths";
import { createAlone, type AloneStore } from "./alone";
import { createBroker, type BrokerStore } from "./broker";
import { createAbout, type AboutStore } from "./about";
import { createRuns, type LaunchHow, type RunsStore } from "./runs";
import { createServerRuns, type ServerRunsStore } from "./serverRuns";
import { createServers, type ServersStore } from "./servers";
import { createEditorStore, isDirty, type EditorOptions, type EditorState, type EditorStore, type Layout } from "./editor";

/** One editor of a tab: the blueprint, or an inner one opened from the composite `via`. */
export type Level = { store: EditorStore; via: string | null };
export type Tab = { key: number; levels: Level[] };

export type Choice = { label: string; kind: "primary" | "danger" | "plain"; run: () => unknown };
/** A question the user must answer before going on. */
export type Ask = { title: string; message: string; choices: Choice[] };

/** A run about to start: the saved blueprint file and its id, and the dynamic composites asking for elements. */
export type Launching = {
  file: string;
  name: string;
  id: string;
  dynamic: string[];
  breakpoints: BreakpointArgument[];
  /** Opened to simulate the run (Simulate…): the dialog starts with its simulation chosen. */
  simulate: boolean;
};


/** Where the launch dialog starts the run, and how starting it on a server goes (while the dialog is open). */
export type RunOn = {
  /** The saved servers, read when the dialog opens. */
  servers: ServerInfo[];
  /** A saved server by name, or null for this machine: the last choice, kept while the app runs. */
  server: string | null;
  /** What Start is doing on the server. */
  step: "publishing" | "starting" | null;
  /** The publication that stopped the start: a blueprint did not go up. */
  published: PublishBlueprintsAnswer | null;
  error: string | null;
};

/** Where the choice to open the launch dialog before every run is kept. */
const ALWAYS_ASK_KEY = "orrery.launch.alwaysAsk";

function readAlwaysAsk(): boolean {
  try {
    return globalThis.localStorage?.getItem(ALWAYS_ASK_KEY) === "1";
  } catch {
    return false;
  }
}

/** The server the launch dialog runs on: the choice, if it is among the saved servers read; null: this machine. */
export function runOnServer({ server, servers }: RunOn): string | null {
  return servers.some((s) => s.name === server) ? server : null;
}

/** Why a blueprint did not go up: its first problem, else what the facade says of it. */
function notSent(b: PublishedBlueprint): string {
  return `${b.blueprint_id || b.file}: ${b.problems[0]?.message ?? b.message ?? b.outcome}`;
}

export type WorkspaceState = {
  /** What the window shows: the blueprint editor, or the runs. */
  mode: "edit" | "runs";
  runs: RunsStore;
  servers: ServersStore;
  broker: BrokerStore;
  /** "Test this task": a task of the shown blueprint run alone. */
  alone: AloneStore;
  about: AboutStore;
  /** The sessions of a server, to follow one in the run views. */
  serverRuns: ServerRunsStore;
  launching: Launching | null;
  runOn: RunOn;
  tabs: Tab[];
  active: number;
  recent: string[];
  ask: Ask | null;
  taskTypes: TaskTypeSummary[];
  /** The last session event that says something to a user, in words (the status bar's). */
  activity: string | null;

  load(): Promise<void>;
  newBlueprint(): void;
  openFile(): Promise<void>;
  openRecent(path: string): Promise<void>;
  activate(key: number): void;
  /** Closes a tab, asking first when it holds unsaved work. */
  closeTab(key: number): void;
  /** Opens the inner blueprint of a composite task of the shown blueprint. */
  drillInto(task: string): Promise<void>;
  /** Goes back to the `depth`-th level of the active tab's breadcrumb (0: the blueprint). */
  backTo(depth: number): void;
  /** The window is being closed: closes it, asking first when work is unsaved. */
  closeWindow(): void;
  setMode(mode: WorkspaceState["mode"]): void;
  /**
   * Runs the shown blueprint: it must be saved (a run keeps the version of its file), errors
   * block, warnings ask; then it starts on this machine at once when nothing is to be asked (no
   * dynamic composite wants elements, no server is saved to choose from), else the launch dialog
   * asks. `ask` (Run with options…), or the kept choice to always ask, opens the dialog anyway.
   */
  prepareRun(ask?: boolean, simulate?: boolean): void;
  /**
   * "Test this task": task `taskId` of the shown blueprint run alone, in a dialog over the
   * editor. The blueprint must be saved first (the run reads its file).
   */
  prepareTest(taskId: string): void;
  /** Whether every run opens the launch dialog first, kept across restarts. */
  alwaysAsk: boolean;
  setAlwaysAsk(always: boolean): void;
  /**
   * Starts the run being launched with these parameters and shows it. On a server, the file and
   * the inner blueprints it calls are published there first, and the run is followed into a
   * local mirror; the dialog stays open with what went wrong.
   */
  launch(params: Record<string, unknown>, how?: LaunchHow): Promise<void>;
  /** Where the next run starts: a saved server by name, or null for this machine. */
  chooseRunOn(server: string | null): void;
  cancelLaunch(): void;
  /** Publishes the shown blueprint's file to an antikythera server: it must be saved first. */
  preparePublish(): void;
  /** Runs the native menu's choice (the commands of the editor are run by `runCommand`). */
  menu(action: MenuAction, runCommand: (id: string) => void): void;
};

export type WorkspaceStore = StoreApi<WorkspaceState>;

/** The editor shown: the deepest level of the active tab. */
export function currentEditor(state: WorkspaceState): EditorStore {
  const tab = state.tabs.find((t) => t.key === state.active) ?? state.tabs[0]!;
  return tab.levels.at(-1)!.store;
}

/** The levels with unsaved work, deepest first (the order they are saved in). */
function unsaved(levels: Level[]): Level[] {
  return levels.filter((l) => isDirty(l.store.getState())).reverse();
}

/** The name a tab or breadcrumb shows for an editor: its file's, or the blueprint's. */
export function titleOf({ path, blueprint }: EditorState): string {
  if (path !== null) return fileName(path);
  const name = blueprint?.name;
  return typeof name === "string" && name !== "" ? name : "Untitled";
}

export function createWorkspace(backend: Backend, layout: Layout, options: EditorOptions = {}): WorkspaceStore {
  let serial = 0;
  let untitled = 0;
  const runs = createRuns(backend, layout);
  const servers = createServers(backend);
  const broker = createBroker(backend);
  const alone = createAlone(backend);
  const about = createAbout(backend);
  const serverRuns = createServerRuns(backend, runs);
  const watching = new Map<EditorStore, () => void>();

  return createStore<WorkspaceState>()((set, get) => {
    function editor(): EditorStore {
      const store = createEditorStore(backend, layout, options);
      store.getState().setTaskTypes(get().taskTypes);
      // The window's title and its unsaved mark follow every editor.
      watching.set(store, store.subscribe(() => showWindowState()));
      return store;
    }

    function drop(levels: Level[]) {
      for (const level of levels) {
        watching.get(level.store)?.();
        watching.delete(level.store);
      }
    }

    let shown = "";
    function showWindowState() {
      const { tabs } = get();
      if (tabs.length === 0) return;
      const current = currentEditor(get());
      const hasUnsaved = tabs.some((t) => unsaved(t.levels).length > 0);
      const shownState = current.getState();
      const title = shownState.blueprint === null ? "Orrery" : `Orrery — ${titleOf(shownState)}${isDirty(shownState) ? " •" : ""}`;
      const state = `${title}\n${hasUnsaved}`;
      if (state === shown) return;
      shown = state;
      void backend.setWindowState(title, hasUnsaved).catch(() => {
        // A title that cannot be set is cosmetic; the tabs show the same.
      });
    }

    function addTab(store: EditorStore) {
      const tab = { key: ++serial, levels: [{ store, via: null }] };
      // An untouched empty or new blueprint gives its place to the one opened.
      const replaced = get().tabs.find((t) => t.key === get().active && isBlank(t));
      if (replaced) drop(replaced.levels);
      const tabs = replaced ? get().tabs.map((t) => (t === replaced ? tab : t)) : [...get().tabs, tab];
      // A blueprint opened or made is one to look at: the editor shows it.
      set({ tabs, active: tab.key, mode: "edit" });
      showWindowState();
    }

    function isBlank(tab: Tab): boolean {
      const state = tab.levels[0]!.store.getState();
      return tab.levels.length === 1 && state.path === null && !isDirty(state) && (state.blueprint === null || state.past.length === 0);
    }

    async function openText(path: string, text: string) {
      const open = get().tabs.find((t) => t.levels[0]!.store.getState().path === path);
      if (open) {
        get().activate(open.key);
        set({ mode: "edit" });
        return;
      }
      const store = editor();
      addTab(store);
      await store.getState().open(path, text);
      void refreshRecent();
    }

    async function refreshRecent() {
      try {
        set({ recent: await backend.recentFiles() });
      } catch {
        // The list is a convenience: without it, Open… still works.
      }
    }

    function notify(text: string) {
      currentEditor(get()).getState().notify(text, true);
    }

    /**
     * Runs `then` once the unsaved levels are saved or given up, as the user chooses; nothing
     * when the user cancels (or a save fails or its dialog is cancelled).
     */
    function settle(levels: Level[], what: string, then: () => void) {
      const dirty = unsaved(levels);
      if (dirty.length === 0) return then();
      const names = dirty.map((l) => titleOf(l.store.getState()));
      const many = names.length > 1;
      set({
        ask: {
          title: many ? `Save changes to ${names.length} blueprints?` : `Save changes to ${names[0]}?`,
          message: `${many ? names.join(", ") + " have" : "It has"} unsaved changes. ${what}`,
          choices: [
            {
              label: "Save",
              kind: "primary",
              run: async () => {
                set({ ask: null });
                for (const level of dirty) {
                  await level.store.getState().save();
                  if (isDirty(level.store.getState())) return; // not saved: stay
                }
                then();
              },
            },
            { label: "Don't Save", kind: "danger", run: () => (set({ ask: null }), then()) },
            { label: "Cancel", kind: "plain", run: () => set({ ask: null }) },
          ],
        },
      });
    }

    /** Starts the run at once when there is nothing to ask, else opens the launch dialog. */
    async function openLaunch(state: EditorState, ask: boolean, simulate: boolean) {
      const dynamic = (state.blueprint?.tasks ?? []).filter((t) => innerOf(t)?.sequencer != null).map((t) => t.id);
      const id = state.blueprint?.id;
      // The editor's breakpoints of tasks the blueprint still has: where the run holds.
      const tasks = new Set((state.blueprint?.tasks ?? []).map((t) => t.id));
      const breakpoints = Object.entries(state.breakpoints)
        .filter(([task]) => tasks.has(task))
        .map(([task, at]) => ({ task, at }));
      const launching = { file: state.path!, name: titleOf(state), id: typeof id === "string" ? id : "", dynamic, breakpoints, simulate };
      if (!ask && !simulate && !get().alwaysAsk && dynamic.length === 0 && get().runOn.server === null) {
        let servers: ServerInfo[] = [];
        try {
          servers = await backend.call("list_servers", {});
        } catch {
          // Without the saved servers, the run starts on this machine.
        }
        if (servers.length === 0) {
          set({ launching, runOn: { ...get().runOn, servers, step: null, published: null, error: null } });
          return get().launch({});
        }
      }
      set({ launching, runOn: { ...get().runOn, servers: [], step: null, published: null, error: null } });
      void loadServers(launching);
    }

    /** What the launch dialog for `launching` learns, dropped once it is closed (or opened again). */
    function progress(launching: Launching, change: Partial<RunOn>) {
      if (get().launching === launching) set({ runOn: { ...get().runOn, ...change } });
    }

    async function loadServers(launching: Launching) {
      try {
        progress(launching, { servers: await backend.call("list_servers", {}) });
      } catch {
        // Without the saved servers, the run still starts on this machine.
      }
    }

    /** Publishes the file to `server`, then runs it there, followed into a local mirror that the run views open. */
    async function launchOn(server: string, launching: Launching, params: Record<string, unknown>) {
      if (get().runOn.step !== null) return; // already under way
      progress(launching, { step: "publishing", published: null, error: null });
      try {
        const published = await backend.call("publish_blueprints", { server, files: [launching.file] });
        const stopped = published.blueprints.find((b) => b.outcome !== "uploaded");
        if (stopped) return progress(launching, { published, error: notSent(stopped) });
        if (get().launching !== launching) return; // cancelled: nothing starts
        progress(launching, { step: "starting" });
        const { mirror, message } = await backend.call("remote_run", { server, blueprint_id: launching.id, params, follow: true });
        if (!mirror) throw new Error(`${message} (not followed here)`);
        // Started on the server: shown, even if the dialog was cancelled meanwhile.
        if (get().launching === launching) set({ launching: null, runOn: { ...get().runOn, step: null } });
        await runs.getState().refresh();
        await runs.getState().open(mirror);
        set({ mode: "runs" });
      } catch (e) {
        progress(launching, { error: e instanceof Error ? e.message : String(e) });
      } finally {
        progress(launching, { step: null });
      }
    }

    /**
     * Whether the blueprint of `store` is saved; else asks to save it (`why` says what needs the
     * file, `verb` names the action) and, once saved, calls `then` again.
     */
    function saved(store: EditorStore, verb: string, why: string, then: () => void): boolean {
      const state = store.getState();
      if (state.path !== null && !isDirty(state)) return true;
      set({
        ask: {
          title: `Save ${titleOf(state)} before ${verb === "Publish" ? "publishing" : verb === "Test" ? "testing a task of" : "running"} it?`,
          message: why,
          choices: [
            {
              label: `Save and ${verb}`,
              kind: "primary",
              run: async () => {
                set({ ask: null });
                await store.getState().save();
                const after = store.getState();
                if (after.path !== null && !isDirty(after)) then();
              },
            },
            { label: "Cancel", kind: "plain", run: () => set({ ask: null }) },
          ],
        },
      });
      return false;
    }

    /** The gate before a run: saved, no error, warnings accepted. */
    function gate(store: EditorStore, ask: boolean, simulate: boolean) {
      const state = store.getState();
      if (state.blueprint === null) return;
      if (!saved(store, "Run", "A run starts from the blueprint's file and keeps the exact version it ran.", () => gate(store, ask, simulate))) return;
      const diagnostics = state.checked === state.blueprint ? state.report?.diagnostics : undefined;
      if (diagnostics === undefined) return notify("The blueprint is still being checked: run it in a moment");
      const errors = diagnostics.filter((d) => d.severity === "error");
      if (errors.length > 0) {
        const where = errors[0]!.task_id ? ` (${errors[0]!.task_id})` : "";
        return notify(`Fix ${errors.length === 1 ? "the error" : `${errors.length} errors`} before running: ${errors[0]!.message}${where}`);
      }
      const warnings = diagnostics.filter((d) => d.severity === "warning");
      if (warnings.length === 0) return void openLaunch(state, ask, simulate);
      set({
        ask: {
          title: `Run with ${warnings.length === 1 ? "a warning" : `${warnings.length} warnings`}?`,
          message: warnings
            .slice(0, 3)
            .map((w) => (w.task_id ? `${w.task_id}: ${w.message}` : w.message))
            .join(" · "),
          choices: [
            { label: "Run Anyway", kind: "primary", run: () => (set({ ask: null }), void openLaunch(store.getState(), ask, simulate)) },
            { label: "Cancel", kind: "plain", run: () => set({ ask: null }) },
          ],
        },
      });
    }

    return {
      mode: "edit",
      runs,
      servers,
      broker,
      alone,
      about,
      serverRuns,
      launching: null,
      runOn: { servers: [], server: null, step: null, published: null, error: null },
      tabs: [],
      active: 0,
      recent: [],
      ask: null,
      taskTypes: [],
      activity: null,

      async load() {
        backend.onEvent((event) => {
          const words = eventWords(event);
          if (words !== null) set({ activity: words });
          runs.getState().event(event);
        });
        backend.onEventsLagged(() => runs.getState().resync());
        void runs.getState().refresh();
        backend.onCloseRequested(() => get().closeWindow());
        addTab(editor());
        try {
          const [taskTypes, startup] = await Promise.all([
            backend.call("list_task_types", {}),
            backend.startupFile(),
          ]);
          set({ taskTypes });
          for (const tab of get().tabs) for (const level of tab.levels) level.store.getState().setTaskTypes(taskTypes);
          if (startup) await openText(startup.path, startup.text);
        } catch (e) {
          notify(e instanceof Error ? e.message : String(e));
        }
        await refreshRecent();
      },

      newBlueprint() {
        untitled += 1;
        const store = editor();
        addTab(store);
        void store.getState().create(newBlueprint(untitled));
      },

      async openFile() {
        try {
          const file = await backend.openFile();
          if (file) await openText(file.path, file.text);
        } catch (e) {
          notify(e instanceof Error ? e.message : String(e));
        }
      },

      async openRecent(path) {
        try {
          const file = await backend.openRecent(path);
          await openText(file.path, file.text);
        } catch (e) {
          notify(e instanceof Error ? e.message : String(e));
          void refreshRecent();
        }
      },

      activate(key) {
        if (get().tabs.some((t) => t.key === key)) set({ active: key });
        showWindowState();
      },

      closeTab(key) {
        const tab = get().tabs.find((t) => t.key === key);
        if (!tab) return;
        settle(tab.levels, "Closing the tab loses them.", () => {
          drop(tab.levels);
          const at = get().tabs.indexOf(tab);
          const tabs = get().tabs.filter((t) => t !== tab);
          if (tabs.length === 0) {
            set({ tabs });
            addTab(editor());
            return;
          }
          const active = get().active === key ? tabs[Math.min(at, tabs.length - 1)]!.key : get().active;
          set({ tabs, active });
          showWindowState();
        });
      },

      async drillInto(taskId) {
        const tab = get().tabs.find((t) => t.key === get().active);
        if (!tab) return;
        const parent = tab.levels.at(-1)!.store.getState();
        const task = parent.blueprint?.tasks.find((t) => t.id === taskId);
        if (!task) return;
        const inner = innerOf(task);
        if (inner === null) return notify(`${taskId} names no inner blueprint: set its blueprint param first`);
        if (parent.path === null) {
          return notify(`Save the blueprint first: ${inner.id} is looked for beside its file`);
        }
        const folder = folderOf(parent.path);
        try {
          const files = await backend.call("list_blueprint_files", { folder });
          const found = findInner(files, inner.id);
          if (!found) return notify(`No blueprint with id ${inner.id} in ${folder}`);
          const opened = await backend.openLibraryFile(found.file);
          const store = editor();
          const levels = [...tab.levels, { store, via: taskId }];
          set({ tabs: get().tabs.map((t) => (t === tab ? { ...t, levels } : t)) });
          await store.getState().open(opened.path, opened.text);
        } catch (e) {
          notify(e instanceof Error ? e.message : String(e));
        }
      },

      backTo(depth) {
        const tab = get().tabs.find((t) => t.key === get().active);
        if (!tab || depth >= tab.levels.length - 1) return;
        const left = tab.levels.slice(depth + 1);
        settle(left, "Going back loses them.", () => {
          drop(left);
          const levels = tab.levels.slice(0, depth + 1);
          set({ tabs: get().tabs.map((t) => (t.key === tab.key ? { ...t, levels } : t)) });
          // The inner blueprint may have been saved: the composite is checked against it again.
          levels.at(-1)!.store.getState().revalidate();
          showWindowState();
        });
      },

      closeWindow() {
        const levels = get().tabs.flatMap((t) => t.levels);
        settle(levels, "Closing the window loses them.", () => {
          drop(levels);
          void backend.closeWindow();
        });
      },

      setMode(mode) {
        set({ mode });
        if (mode === "runs") void runs.getState().refresh();
      },

      prepareRun(ask = false, simulate = false) {
        gate(currentEditor(get()), ask, simulate);
      },

      prepareTest(taskId) {
        const store = currentEditor(get());
        const test = () => {
          const { blueprint, path } = store.getState();
          const task = blueprint?.tasks.find((t) => t.id === taskId);
          if (!blueprint || path === null || !task) return;
          const inputs = ioOf(task, "inputs").map((i) => ({ name: i.name, key: typeof i.get_from === "string" && i.get_from !== "" ? i.get_from : i.name }));
          void alone.getState().open(path, String(blueprint.id), task.id, inputs);
        };
        if (saved(store, "Test", `${taskId} runs from the blueprint's file, as it is saved.`, test)) test();
      },

      alwaysAsk: readAlwaysAsk(),
      setAlwaysAsk(always) {
        try {
          localStorage.setItem(ALWAYS_ASK_KEY, always ? "1" : "0");
        } catch {
          // Not kept: it still holds while the app runs.
        }
        set({ alwaysAsk: always });
      },

      async launch(params, how = {}) {
        const launching = get().launching;
        if (!launching) return;
        const server = runOnServer(get().runOn);
        if (server !== null) return launchOn(server, launching, params);
        set({ launching: null });
        const started = await runs.getState().launch(launching.file, params, launching.breakpoints, how);
        if (started !== null) set({ mode: "runs" });
        else notify(runs.getState().notice?.text ?? `${launching.name} did not start`);
      },

      chooseRunOn(server) {
        set({ runOn: { ...get().runOn, server, published: null, error: null } });
      },

      cancelLaunch() {
        set({ launching: null });
      },

      preparePublish() {
        const store = currentEditor(get());
        const publish = () => {
          const state = store.getState();
          if (state.blueprint !== null && state.path !== null) void servers.getState().open(state.path, titleOf(state));
        };
        if (store.getState().blueprint === null) return;
        if (saved(store, "Publish", "A server is sent the blueprint's file, with the inner blueprints beside it.", publish)) publish();
      },

      menu(action, runCommand) {
        if (action.command === "open_recent" && action.path) void get().openRecent(action.path);
        else runCommand(action.command);
      },
    };
  });
}
