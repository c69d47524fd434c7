// The editor's state: the open blueprint with its undo history, where its nodes sit, and what
// the facade says about it. Every change of the blueprint is validated through the backend.
import { createStore } from "zustand/vanilla";
import type { Backend } from "../backend/types";
import type { BlueprintFile } from "../backend/generated";
import { addTask, disconnect, parseBlueprint, removeTasks, renameTask, toText, type Blueprint } from "../blueprint";
import { edgeId } from "../editor/graph";
import { folderOf } from "../paths";
import { openScope, scopeStartOf, unwrapScope } from "../scopeEdit";
import { mark, markNextRender } from "../timing";
import { copyPasteSlice } from "./copy-paste";
import type { EditorState, EditorStore, Snapshot } from "./editor-state";
import { viewSlice } from "./view";
import { layoutToSave, mergeLayout, placeBeside, type Position, type Positions } from "./positions";

export type { EditorState, EditorStore, Position, Positions, Snapshot };
/** Places the tasks of a blueprint (the app uses editor/layered.ts). */
export type Layout = (blueprint: Blueprint) => Promise<Positions>;

export type EditorOptions = {
  /** How long the nodes must rest before their layout is written beside the file. */
  layoutSaveDelayMs?: number;
};

/** Whether the open blueprint differs from its file (undoing back to it makes it clean again). */
export function isDirty(state: EditorState): boolean {
  return state.blueprint !== state.saved;
}

const HISTORY_LIMIT = 200;
const NEW_TASK_GAP = 120;

export function createEditorStore(backend: Backend, layout: Layout, options: EditorOptions = {}): EditorStore {
  const layoutSaveDelay = options.layoutSaveDelayMs ?? 600;
  // Answers of older validations are dropped: only the newest blueprint's verdict counts.
  let validation = 0;
  let naming = 0;
  let scoping = 0;
  let wiring = 0;
  let focusSerial = 0;
  // A layout that arrives after another file was opened is dropped.
  let opened = 0;
  let lastCoalesce: string | undefined;
  let layoutTimer: ReturnType<typeof setTimeout> | undefined;

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
      if (mine === validation) await refreshNames();
    }

    /** The scopes of the newest blueprint, from the facade. */
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

    /** The wiring of the newest blueprint, from the facade, while it is shown. */
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

    /** What the selected task (or the task opening the selected scope) may read, from the facade. */
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
        const definition = await backend.call("get_task_definition", { name: type });
        set({ definitions: { ...get().definitions, [type]: definition } });
      } catch {
        // Not installed here: the inspector offers no param names for it.
      }
    }

    function replace(blueprint: Blueprint, past: Snapshot[], future: Snapshot[], positions?: Positions) {
      const { selection } = get();
      const ids = selection.length > 0 ? new Set(blueprint.tasks.map((t) => t.id)) : null;
      const kept = ids ? selection.filter((id) => ids.has(id)) : selection;
      set({
        blueprint,
        past,
        future,
        report: null,
        ...(positions ? { positions } : {}),
        ...(kept.length !== selection.length ? { selection: kept } : {}),
      });
      // An undo may take away the scope being edited.
      const { selectedScope } = get();
      if (selectedScope !== null && !scopeStartOf(blueprint.tasks.find((t) => t.id === selectedScope))) {
        set({ selectedScope: null });
      }
      if (positions) scheduleLayoutSave();
      void validate(blueprint);
      void refreshScopes(blueprint);
      void refreshWiring();
    }

    /**
     * Makes `selection` the selected tasks and `primary` the one the inspector shows. A choice
     * of no task keeps the selected dependency unless asked: React Flow deselects the nodes
     * right after it selects an edge.
     */
    function choose(primary: string | null, selection: string[], dropDependency: boolean) {
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
      if (type) void loadDefinition(type);
      void refreshNames();
    }

    /** Writes the layout beside the open file once the nodes rest; never for an unsaved blueprint. */
    function scheduleLayoutSave() {
      clearTimeout(layoutTimer);
      if (get().path === null) return;
      layoutTimer = setTimeout(() => void saveLayout(), layoutSaveDelay);
    }

    async function saveLayout() {
      clearTimeout(layoutTimer);
      const { blueprint, path, positions } = get();
      if (!blueprint || path === null) return;
      try {
        await backend.call("save_layout", { file: path, positions: layoutToSave(blueprint, positions) });
      } catch (e) {
        fail(e);
      }
    }

    /** The positions to show for a file: its saved layout, completed by the automatic one. */
    async function positionsFor(path: string, blueprint: Blueprint): Promise<Positions> {
      let saved: Positions | null = null;
      try {
        const found = await backend.call("read_layout", { file: path });
        if (found.found) saved = found.positions;
      } catch (e) {
        fail(e); // an unreadable layout is replaced by a fresh one, and the user told why
      }
      if (saved === null) return layout(blueprint);
      const merged = mergeLayout(blueprint, saved);
      if (merged.unplaced.length === 0) return merged.positions;
      return placeBeside(merged.positions, merged.unplaced, await layout(blueprint));
    }

    async function write(text: string, to: (canonical: string) => Promise<string | null>) {
      const { blueprint } = get();
      if (!blueprint) return;
      try {
        const formatted = await backend.call("format_blueprint", { text, to: get().encoding });
        const path = await to(formatted.text);
        if (path !== null) {
          set({ path, saved: blueprint, notice: { text: `Saved ${path}`, error: false } });
          await saveLayout();
        }
      } catch (e) {
        fail(e);
      }
    }

    return {
      path: null,
      encoding: "antikythera",
      blueprint: null,
      saved: null,
      past: [],
      future: [],
      positions: {},
      laidOut: false,
      report: null,
      scopes: [],
      selectedScope: null,
      taskTypes: [],
      selected: null,
      selection: [],
      selectedDependency: null,
      focus: null,
      names: null,
      definitions: {},
      notice: null,
      showWiring: false,
      wires: null,
      blueprintFiles: null,


      async open(path, text) {
        mark("open");
        let encoding: EditorState["encoding"];
        try {
          // Whether it is an envelope is the facade's to say: loading decides it, not the editor.
          ({ encoding } = await backend.call("blueprint_encoding", { text }));
          if (encoding === "compas") text = (await backend.call("format_blueprint", { text, to: "antikythera" })).text;
        } catch (e) {
          set({ notice: { text: `Cannot open ${path}: ${e instanceof Error ? e.message : String(e)}`, error: true } });
          return;
        }
        const parsed = parseBlueprint(text);
        if ("error" in parsed) {
          set({ notice: { text: `Cannot open ${path}: ${parsed.error}`, error: true } });
          return;
        }
        const mine = ++opened;
        clearTimeout(layoutTimer);
        lastCoalesce = undefined;
        set({ path, encoding, positions: {}, laidOut: false, selected: null, selection: [], selectedDependency: null, names: null, notice: null });
        set({ saved: parsed.blueprint });
        set({ scopes: [], selectedScope: null });
        replace(parsed.blueprint, [], []);
        let positions: Positions = {};
        try {
          positions = await positionsFor(path, parsed.blueprint);
        } catch (e) {
          fail(e);
        }
        if (mine !== opened) return;
        mark("laid-out");
        markNextRender("open");
        set({ positions, laidOut: true });
      },

      async create(blueprint) {
        const mine = ++opened;
        clearTimeout(layoutTimer);
        lastCoalesce = undefined;
        set({ path: null, encoding: "antikythera", saved: blueprint, positions: {}, laidOut: false, selected: null, selection: [] });
        set({ scopes: [], selectedScope: null });
        set({ selectedDependency: null, names: null, notice: null });
        replace(blueprint, [], []);
        let positions: Positions = {};
        try {
          positions = await layout(blueprint);
        } catch (e) {
          fail(e);
        }
        if (mine === opened) set({ positions, laidOut: true });
      },

      revalidate() {
        const { blueprint } = get();
        if (blueprint) void validate(blueprint);
      },

      setTaskTypes(taskTypes) {
        set({ taskTypes });
      },

      notify(text, error) {
        set({ notice: { text, error } });
      },

      async exportFile() {
        const { blueprint, encoding } = get();
        if (!blueprint) return;
        try {
          const path = await backend.exportFile(toText(blueprint), encoding);
          if (path !== null) set({ notice: { text: `Exported ${path}`, error: false } });
        } catch (e) {
          fail(e);
        }
      },

      edit(change, coalesce) {
        const { blueprint, past } = get();
        if (!blueprint) return;
        const changed = change(blueprint);
        if (changed === blueprint) return;
        const merge = coalesce !== undefined && coalesce === lastCoalesce && past.length > 0;
        lastCoalesce = coalesce;
        replace(changed, merge ? past : [...past, { blueprint }].slice(-HISTORY_LIMIT), []);
      },

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

      async autoLayout() {
        const { blueprint } = get();
        if (!blueprint) return;
        mark("auto-layout");
        const mine = opened;
        let positions: Positions;
        try {
          positions = await layout(blueprint);
        } catch (e) {
          fail(e);
          return;
        }
        const now = get();
        if (mine !== opened || now.blueprint === null) return;
        lastCoalesce = undefined;
        const step = { blueprint: now.blueprint, positions: now.positions };
        mark("auto-laid-out");
        markNextRender("auto-layout");
        replace(now.blueprint, [...now.past, step].slice(-HISTORY_LIMIT), [], { ...now.positions, ...positions });
      },

      undo() {
        const { blueprint, past, future, positions } = get();
        const previous = past.at(-1);
        if (!blueprint || !previous) return;
        lastCoalesce = undefined;
        const current = { blueprint, ...(previous.positions ? { positions } : {}) };
        replace(previous.blueprint, past.slice(0, -1), [current, ...future], previous.positions);
      },

      redo() {
        const { blueprint, past, future, positions } = get();
        const [next, ...rest] = future;
        if (!blueprint || !next) return;
        lastCoalesce = undefined;
        const current = { blueprint, ...(next.positions ? { positions } : {}) };
        replace(next.blueprint, [...past, current], rest, next.positions);
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

      moveTask(id, position) {
        set({ positions: { ...get().positions, [id]: position } });
        scheduleLayoutSave();
      },

      moveTasks(moved) {
        set({ positions: { ...get().positions, ...moved } });
        scheduleLayoutSave();
      },

      select(id) {
        const { selected, selection } = get();
        const alone = id === null ? selection.length === 0 : selection.length === 1 && selection[0] === id;
        if (id === null) set({ selectedScope: null });
        if (id === selected && alone && get().selectedScope === null) return;
        choose(id, id === null ? [] : [id], true);
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
        choose(primary, next, false);
      },

      selectAll() {
        const { blueprint, selected } = get();
        if (!blueprint) return;
        choose(selected, blueprint.tasks.map((t) => t.id), true);
      },

      deleteTasks(ids, dependencies = []) {
        const { blueprint, selected } = get();
        if (!blueprint) return;
        const present = new Set(blueprint.tasks.map((t) => t.id));
        const gone = new Set(ids.filter((id) => present.has(id)));
        if (gone.size === 0 && dependencies.length === 0) return;
        get().edit((b) => dependencies.reduce((acc, d) => disconnect(acc, d.from, d.to), gone.size > 0 ? removeTasks(b, gone) : b));
        if (selected !== null && gone.has(selected)) choose(get().selection.at(-1) ?? null, get().selection, true);
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

      selectDependency(id) {
        set({ selected: null, selection: [], selectedDependency: id, selectedScope: null });
      },

      focusTask(id) {
        get().select(id);
        set({ selectedDependency: null, focus: { task: id, serial: ++focusSerial } });
      },

      ...copyPasteSlice(set, get),
      ...viewSlice(set, get),

      toggleWiring() {
        set({ showWiring: !get().showWiring });
        void refreshWiring();
      },

      async loadBlueprintFiles() {
        const { path } = get();
        if (path === null) return;
        const folder = folderOf(path);
        let files: BlueprintFile[] = [];
        try {
          files = await backend.call("list_blueprint_files", { folder });
        } catch (e) {
          fail(e); // then none are offered, and the folder is not asked again and again
        }
        const now = get().path;
        if (now !== null && folderOf(now) === folder) set({ blueprintFiles: { folder, files } });
      },

      selectScope(start) {
        set({ selectedScope: start, selected: null, selection: [], selectedDependency: null, names: null });
        void refreshNames();
      },

      async createScope(ids, name) {
        const { blueprint } = get();
        if (!blueprint) return "no blueprint is open";
        let check;
        try {
          check = await backend.call("check_scope", { text: toText(blueprint), tasks: ids });
        } catch (e) {
          fail(e);
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
  });
}
