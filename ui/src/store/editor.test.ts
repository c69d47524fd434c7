import { describe, expect, it, vi } from "vitest";
import { blueprintEncoding } from "../backend/editor-jobs";
import { MemoryBackend, type JobHandlers } from "../backend/memory";
import { BackendError } from "../backend/types";
import type { FileReport, Scope, TaskTypeSummary } from "../backend/generated";
import { connect, newBlueprint, parseBlueprint, type Blueprint } from "../blueprint";
import { setScopePolicy } from "../scopeEdit";
import { createEditorStore, type EditorStore, type Positions } from "./editor";
import { layeredLayout } from "../editor/layout";
import { mergeLayout, NODE_HEIGHT, NODE_WIDTH, placeBeside } from "./positions";
import { showsMinimap } from "./view";

const text = JSON.stringify({
  id: "bp",
  tasks: [
    { id: "start", type: "system.start" },
    { id: "work", type: "shell.run", depends_on: [{ id: "start", type: "FS" }] },
    { id: "end", type: "system.end", depends_on: [{ id: "work", type: "FS" }] },
  ],
});

/** A validator that finds one error per task without dependencies other than `start`. */
function orphans(blueprint: Blueprint): FileReport {
  const diagnostics = blueprint.tasks
    .filter((t) => t.id !== "start" && !t.depends_on)
    .map((t) => ({
      code: "orphan-task" as const,
      severity: "error" as const,
      task_id: t.id,
      path: "$",
      message: `${t.id} is an orphan`,
      server_rejects: true,
    }));
  return { file: "blueprint.json", valid: diagnostics.length === 0, server_accepts: true, diagnostics };
}

function setup(layouts: Record<string, Positions> = {}, handlers: JobHandlers = {}) {
  const saves: { file: string; positions: Positions }[] = [];
  const backend = new MemoryBackend(
    {
      validate_blueprint: ({ text }) => {
        const parsed = parseBlueprint(text ?? "");
        if ("error" in parsed) throw new Error(parsed.error);
        return [orphans(parsed.blueprint)];
      },
      format_blueprint: ({ text }) => ({ text: JSON.stringify(JSON.parse(text)) + "\n", changed: true }),
      blueprint_encoding: blueprintEncoding,
      // The core's verdict, canned: one task makes a scope of its own; `start` and `end` would hold `work` too.
      check_scope: ({ tasks }) =>
        tasks.length === 1
          ? { verdict: "fits", start: tasks[0]!, end: tasks[0]! }
          : { verdict: "refused", reason: "A scope from start to end would also hold work: select it too." },
      list_task_types: () => [{ name: "shell.run", description: "Runs a command." }],
      read_layout: ({ file }) => {
        const positions = layouts[file];
        return { layout_file: `${file}.layout`, found: positions !== undefined, positions: positions ?? {}, direction: "down" };
      },
      save_layout: ({ file, positions, direction }) => {
        layouts[file] = positions;
        saves.push({ file, positions });
        return { layout_file: `${file}.layout`, found: true, positions, direction: direction ?? "down" };
      },
      task_names: ({ task_id }) => ({
        task_id,
        produced: [{ key: "total", producers: ["work"], upstream: task_id === "end" }],
        own: [],
      }),
      ...handlers,
    },
    { "/bp.json": text },
    "/bp.json",
  );
  const layout = async (b: Blueprint): Promise<Positions> =>
    Object.fromEntries(b.tasks.map((t, i) => [t.id, { x: 0, y: i * 100 }]));
  return { backend, saves, layouts, store: createEditorStore(backend, layout, { layoutSaveDelayMs: 50 }) };
}

/** The test's blueprint opened, as the workspace opens the one given at start. */
async function opened(store: EditorStore) {
  store.getState().setTaskTypes([{ name: "shell.run", description: "Runs a command." }]);
  await store.getState().open("/bp.json", text);
}

const settled = () => new Promise((resolve) => setTimeout(resolve, 0));

/** The catalogue with its start and end: a paste leaves out the ones the blueprint has. */
const withBounds: TaskTypeSummary[] = [
  { name: "shell.run", description: "Runs a command." },
  { name: "system.start", description: "Opens a blueprint.", bound: "start" },
  { name: "system.end", description: "Closes a blueprint.", bound: "end" },
];

describe("the editor store", () => {
  it("opens the blueprint given at start, lays it out and validates it", async () => {
    const { store } = setup();
    await opened(store);
    await settled();
    const state = store.getState();
    expect(state.blueprint?.tasks.map((t) => t.id)).toEqual(["start", "work", "end"]);
    expect(state.positions.end).toEqual({ x: 0, y: 200 });
    expect(state.report?.valid).toBe(true);
    expect(state.taskTypes.map((t) => t.name)).toEqual(["shell.run"]);
  });

  it("adds a task wired in: before the end, after the selected task, or into a dependency", async () => {
    const { store } = setup();
    await opened(store);
    const deps = () => Object.fromEntries(store.getState().blueprint!.tasks.map((t) => [t.id, (t.depends_on ?? []).map((d) => `${d.id}:${d.type}`)]));
    // Nothing selected: before the end, in its place; the end one step down.
    store.getState().addTask("shell.run");
    expect(deps()).toMatchObject({ work: ["start:FS"], run_1: ["work:FS"], end: ["run_1:FS"] });
    expect(store.getState().positions).toMatchObject({ run_1: { x: 0, y: 200 }, end: { x: 0, y: 320 } });
    expect(store.getState().focus?.task).toBe("run_1");
    // After the selected task: what depended on it depends on the new one, and moves down.
    store.getState().select("work");
    store.getState().addTask("shell.run");
    expect(deps()).toMatchObject({ run_2: ["work:FS"], run_1: ["run_2:FS"], end: ["run_1:FS"] });
    expect(store.getState().positions).toMatchObject({ run_2: { x: 0, y: 220 }, run_1: { x: 0, y: 320 }, end: { x: 0, y: 440 } });
    expect(store.getState().selected).toBe("run_2");
    // The end selected: before it. Undo takes one addition back at a time.
    store.getState().select("end");
    store.getState().addTask("shell.run");
    expect(deps()).toMatchObject({ run_3: ["run_1:FS"], end: ["run_3:FS"] });
    store.getState().undo();
    expect(deps()).toMatchObject({ end: ["run_1:FS"] });
    expect(deps().run_3).toBeUndefined();
  });

  it("adds a dropped task where it was dropped: into the dependency it fell on, else unwired", async () => {
    const { store } = setup();
    await opened(store);
    store.getState().edit((b) => ({ ...b, tasks: b.tasks.map((t) => (t.id === "end" ? { ...t, depends_on: [{ id: "work", type: "SS" }] } : t)) }));
    store.getState().addTask("shell.run", { x: 420, y: 150 }, { into: { from: "work", to: "end" } });
    const tasks = store.getState().blueprint!.tasks;
    expect(tasks.find((t) => t.id === "run_1")?.depends_on).toEqual([{ id: "work", type: "FS" }]);
    expect(tasks.find((t) => t.id === "end")?.depends_on).toEqual([{ id: "run_1", type: "SS" }]);
    expect(store.getState().positions.run_1).toEqual({ x: 420, y: 150 });
    store.getState().addTask("shell.run", { x: 420, y: 64 }, null);
    expect(store.getState().blueprint!.tasks.find((t) => t.id === "run_2")?.depends_on).toBeUndefined();
    expect(store.getState().positions.run_2).toEqual({ x: 420, y: 64 });
    expect(store.getState().selected).toBe("run_2");
  });

  it("validates every edit and undoes and redoes them in order", async () => {
    const { store } = setup();
    await opened(store);
    store.getState().addTask("shell.run", { x: 0, y: 320 }, null);
    await settled();
    expect(store.getState().report?.diagnostics.map((d) => d.task_id)).toEqual(["run_1"]);
    expect(store.getState().positions.run_1).toEqual({ x: 0, y: 320 });

    store.getState().edit((b) => connect(b, "work", "run_1"));
    await settled();
    expect(store.getState().report?.valid).toBe(true);

    store.getState().undo();
    await settled();
    expect(store.getState().report?.valid).toBe(false);
    store.getState().undo();
    expect(store.getState().blueprint?.tasks).toHaveLength(3);
    store.getState().redo();
    store.getState().redo();
    expect(store.getState().blueprint?.tasks.find((t) => t.id === "run_1")?.depends_on).toEqual([
      { id: "work", type: "FS" },
    ]);
    expect(store.getState().future).toEqual([]);
  });

  it("saves the canonical text the format job answers to the open file", async () => {
    const { backend, store } = setup();
    await opened(store);
    await store.getState().save();
    expect(backend.files.get("/bp.json")).toBe(JSON.stringify(JSON.parse(text)) + "\n");
    expect(store.getState().notice).toEqual({ text: "Saved /bp.json", error: false });
  });

  it("edits a COMPAS envelope as plain JSON and saves it back as an envelope", async () => {
    const envelope = JSON.stringify({ dtype: "antikythera.models/Blueprint", data: JSON.parse(text) });
    const asked: (string | null | undefined)[] = [];
    const { backend, store } = setup({}, {
      format_blueprint: ({ text: given, to }) => {
        asked.push(to);
        const value = JSON.parse(given);
        const plain = value.dtype ? value.data : value;
        const out = to === "compas" ? { dtype: "antikythera.models/Blueprint", data: plain } : plain;
        return { text: JSON.stringify(out), changed: true };
      },
    });
    backend.files.set("/env.json", envelope);
    await store.getState().open("/env.json", envelope);
    expect(store.getState().encoding).toBe("compas");
    expect(store.getState().blueprint?.tasks.map((t) => t.id)).toEqual(["start", "work", "end"]);
    await store.getState().save();
    expect(asked).toEqual(["antikythera", "compas"]);
    expect(JSON.parse(backend.files.get("/env.json") ?? "").dtype).toBe("antikythera.models/Blueprint");

    // A plain file is saved plain.
    await store.getState().open("/bp.json", text);
    expect(store.getState().encoding).toBe("antikythera");
  });

  it("converts a text only when the facade says it is an envelope", async () => {
    // A `dtype` without `data` is plain JSON to the loader, so the editor opens it as it is.
    const dtyped = JSON.stringify({ ...JSON.parse(text), dtype: "antikythera.models/Blueprint" });
    const asked: string[] = [];
    const { store } = setup({}, {
      blueprint_encoding: ({ text: given }) => {
        asked.push(given);
        return { encoding: "antikythera" };
      },
      format_blueprint: () => {
        throw new Error("a plain text is not converted");
      },
    });
    await store.getState().open("/dtyped.json", dtyped);
    expect(asked).toEqual([dtyped]);
    expect(store.getState().notice).toBeNull();
    expect(store.getState().encoding).toBe("antikythera");
    expect(store.getState().blueprint?.dtype).toBe("antikythera.models/Blueprint");
  });

  it("tells why an envelope that does not convert cannot be opened", async () => {
    const { store } = setup({}, {
      format_blueprint: () => {
        throw new Error("it cannot be rewritten");
      },
    });
    await opened(store);
    await store.getState().open("/bad.json", JSON.stringify({ dtype: "x", data: {} }));
    expect(store.getState().path).toBe("/bp.json");
    expect(store.getState().notice?.text).toContain("Cannot open /bad.json: it cannot be rewritten");
  });

  it("tells why a file that is not a blueprint cannot be opened, and keeps what was open", async () => {
    const { store } = setup();
    await opened(store);
    await store.getState().open("/other.json", "{\"tasks\": 3}");
    expect(store.getState().path).toBe("/bp.json");
    expect(store.getState().notice?.error).toBe(true);
    expect(store.getState().notice?.text).toContain("not a blueprint");
  });

  it("saves as where the user chooses, then saves there", async () => {
    const { backend, store } = setup();
    await opened(store);
    backend.nextDialogPath = "/copy.json";
    await store.getState().saveAs();
    expect(store.getState().path).toBe("/copy.json");
    store.getState().addTask("shell.run");
    await store.getState().save();
    expect(backend.files.get("/copy.json")).toContain("run_1");
    expect(backend.files.get("/bp.json")).toBe(text);
    // What it holds now is saved: nothing is unsaved.
    expect(store.getState().saved).toBe(store.getState().blueprint);
  });
  it("names a new blueprint from the file it is first saved as, in the file too", async () => {
    const { backend, store } = setup();
    await store.getState().create(newBlueprint(1));
    backend.nextDialogPath = "/work/nightly-report.blueprint.json";
    await store.getState().save();
    expect(store.getState().blueprint).toMatchObject({ id: "nightly-report", name: "Nightly report" });
    expect(JSON.parse(backend.files.get("/work/nightly-report.blueprint.json")!)).toMatchObject({
      id: "nightly-report",
      name: "Nightly report",
    });
    expect(store.getState().saved).toBe(store.getState().blueprint);
    // A blueprint with names of its own keeps them, whatever the file is called.
    await opened(store);
    backend.nextDialogPath = "/elsewhere.json";
    await store.getState().saveAs();
    expect(store.getState().blueprint?.id).toBe("bp");
  });
});

describe("deleting tasks", () => {
  it("bridges over a deleted task, and a scope that lost its closing task closes at the one before", async () => {
    const scoped = JSON.stringify({
      id: "bp",
      tasks: [
        { id: "start", type: "system.start" },
        { id: "a", type: "shell.run", depends_on: [{ id: "start", type: "FS" }], scope_start: { name: "s" } },
        { id: "b", type: "shell.run", depends_on: [{ id: "a", type: "FS" }] },
        { id: "c", type: "shell.run", depends_on: [{ id: "b", type: "FS" }], scope_end: "a" },
        { id: "end", type: "system.end", depends_on: [{ id: "c", type: "FS" }] },
      ],
    });
    const { store } = setup();
    await store.getState().open("/bp.json", scoped);
    store.getState().deleteTasks(["c"]);
    const tasks = store.getState().blueprint!.tasks;
    expect(tasks.find((t) => t.id === "b")?.scope_end).toBe("a");
    expect(tasks.find((t) => t.id === "end")?.depends_on).toEqual([{ id: "b", type: "FS" }]);
    expect(store.getState().notice?.text).toContain("Scope a now ends at b (c closed it).");
    // Its last task but the start gone too: the scope closes at its start.
    store.getState().deleteTasks(["b"]);
    expect(store.getState().blueprint!.tasks.find((t) => t.id === "a")?.scope_end).toBe("a");
    store.getState().undo();
    store.getState().undo();
    expect(store.getState().blueprint!.tasks.find((t) => t.id === "c")?.scope_end).toBe("a");
  });
});

describe("the layout's direction", () => {
  it("lays out left to right when asked, keeps it beside the file, reads it back, and adds tasks along it", async () => {
    const kept: Record<string, { positions: Positions; direction: "down" | "right" }> = {};
    const { backend } = setup({}, {
      read_layout: ({ file }) => {
        const found = kept[file];
        return { layout_file: `${file}.layout`, found: found !== undefined, positions: found?.positions ?? {}, direction: found?.direction ?? "down" };
      },
      save_layout: ({ file, positions, direction }) => {
        kept[file] = { positions, direction: direction ?? "down" };
        return { layout_file: `${file}.layout`, found: true, positions, direction: direction ?? "down" };
      },
    });
    const store = createEditorStore(backend, layeredLayout, { layoutSaveDelayMs: 10 });
    await opened(store);
    expect(store.getState().direction).toBe("down");
    await store.getState().setDirection("right");
    const { positions } = store.getState();
    expect(positions.work!.x).toBeGreaterThan(positions.start!.x);
    expect(positions.work!.y).toBe(positions.start!.y);
    await vi.waitFor(() => expect(kept["/bp.json"]?.direction).toBe("right"));

    // Opened again, it flows right as it was left.
    await store.getState().open("/bp.json", text);
    expect(store.getState().direction).toBe("right");
    // A task added after `work` goes to its right, and `end` one step further right.
    const endBefore = store.getState().positions.end!.x;
    store.getState().select("work");
    store.getState().addTask("shell.run");
    const after = store.getState().positions;
    expect(after.run_1!.x).toBeGreaterThan(after.work!.x + NODE_WIDTH);
    expect(after.run_1!.y).toBe(after.work!.y);
    expect(after.end!.x).toBeGreaterThan(endBefore);
  });
});

describe("breakpoints", () => {
  it("are kept beside the file, read back, follow a renamed task and are not kept for a deleted one", async () => {
    const kept: Record<string, Record<string, "before" | "after">> = {};
    const { backend } = setup({}, {
      read_layout: ({ file }) => ({ layout_file: `${file}.layout`, found: false, positions: {}, direction: "down", breakpoints: kept[file] ?? {} }),
      save_layout: ({ file, positions, direction, breakpoints }) => {
        kept[file] = breakpoints ?? {};
        return { layout_file: `${file}.layout`, found: true, positions, direction: direction ?? "down" };
      },
    });
    const store = createEditorStore(backend, layeredLayout, { layoutSaveDelayMs: 10 });
    await opened(store);
    store.getState().setBreakpoint("work", "before");
    store.getState().setBreakpoint("end", "after");
    await vi.waitFor(() => expect(kept["/bp.json"]).toEqual({ work: "before", end: "after" }));
    store.getState().setBreakpoint("end", null);
    await vi.waitFor(() => expect(kept["/bp.json"]).toEqual({ work: "before" }));

    await store.getState().open("/bp.json", text);
    expect(store.getState().breakpoints).toEqual({ work: "before" });
    expect(store.getState().renameTask("work", "build")).toBeNull();
    expect(store.getState().breakpoints.build).toBe("before");
    store.getState().moveTask("build", { x: 5, y: 5 });
    // The old id is no task now: its breakpoint is not kept.
    await vi.waitFor(() => expect(kept["/bp.json"]).toEqual({ build: "before" }));
  });
});

describe("the layout beside the file", () => {
  it("is used when found; the tasks it lacks go under their upstream", async () => {
    const { store } = setup({ "/bp.json": { start: { x: 500, y: 7 }, work: { x: 500, y: 200 }, gone: { x: 1, y: 1 } } });
    await opened(store);
    const { positions } = store.getState();
    expect(positions.start).toEqual({ x: 500, y: 7 });
    expect(positions.work).toEqual({ x: 500, y: 200 });
    expect(positions.end?.x).toBe(500);
    expect(positions.end!.y).toBeGreaterThan(200 + NODE_HEIGHT);
    expect(positions.gone).toBeUndefined();
  });

  it("is not written on open, only once nodes rest after a move, and on save", async () => {
    vi.useFakeTimers();
    try {
      const { store, saves, layouts } = setup();
      await opened(store);
      await vi.advanceTimersByTimeAsync(1000);
      expect(saves).toEqual([]);

      store.getState().moveTask("work", { x: 10.4, y: 20.6 });
      store.getState().moveTask("work", { x: 30.4, y: 40.6 });
      await vi.advanceTimersByTimeAsync(20);
      expect(saves).toEqual([]);
      await vi.advanceTimersByTimeAsync(100);
      expect(saves).toHaveLength(1);
      expect(layouts["/bp.json"]).toEqual({ start: { x: 0, y: 0 }, work: { x: 30, y: 41 }, end: { x: 0, y: 200 } });

      await store.getState().save();
      expect(saves).toHaveLength(2);
    } finally {
      vi.useRealTimers();
    }
  });

  it("is never written for a blueprint without a file", async () => {
    vi.useFakeTimers();
    try {
      const { store, saves } = setup();
      store.setState({ blueprint: (parseBlueprint(text) as { blueprint: Blueprint }).blueprint, path: null });
      store.getState().moveTask("work", { x: 1, y: 1 });
      await vi.advanceTimersByTimeAsync(1000);
      expect(saves).toEqual([]);
    } finally {
      vi.useRealTimers();
    }
  });

  it("an unreadable layout is replaced by the automatic one, and the user told why", async () => {
    const { store } = setup(
      {},
      {
        read_layout: () => {
          throw new BackendError("invalid_layout", "/bp.json.layout: not an Orrery layout");
        },
      },
    );
    await opened(store);
    expect(store.getState().positions.end).toEqual({ x: 0, y: 200 });
    expect(store.getState().notice).toEqual({ text: "/bp.json.layout: not an Orrery layout", error: true });
  });

  it("after a rename, saving writes the layout under the new id only", async () => {
    const { store, layouts } = setup();
    await opened(store);
    expect(store.getState().renameTask("work", "build")).toBeNull();
    await store.getState().save();
    expect(Object.keys(layouts["/bp.json"] ?? {})).toEqual(["start", "build", "end"]);
  });

  it("an automatic layout is one undo step, and redo lays out again", async () => {
    const { store } = setup({ "/bp.json": { start: { x: 500, y: 7 }, work: { x: 500, y: 200 }, end: { x: 9, y: 9 } } });
    await opened(store);
    await store.getState().autoLayout();
    expect(store.getState().positions.start).toEqual({ x: 0, y: 0 });
    store.getState().undo();
    expect(store.getState().positions.start).toEqual({ x: 500, y: 7 });
    expect(store.getState().blueprint?.tasks).toHaveLength(3);
    store.getState().redo();
    expect(store.getState().positions.end).toEqual({ x: 0, y: 200 });
  });
});

describe("merging a saved layout", () => {
  const blueprint = parseBlueprint(text) as { blueprint: Blueprint };

  it("leaves for the automatic layout the tasks without a placed upstream, placed beside the rest", () => {
    const merged = mergeLayout(blueprint.blueprint, { end: { x: 0, y: 0 } });
    expect(merged.unplaced).toEqual(["start", "work"]);
    const all = placeBeside(merged.positions, merged.unplaced, { start: { x: 50, y: 50 }, work: { x: 50, y: 150 } });
    expect(all.start).toEqual({ x: 264, y: 0 });
    expect(all.work).toEqual({ x: 264, y: 100 });
  });

  it("places a new task beside a task that already sits under the same upstream", () => {
    const b: Blueprint = {
      tasks: [
        { id: "s", type: "system.start" },
        { id: "x", type: "shell.run", depends_on: [{ id: "s", type: "FS" }] },
        { id: "y", type: "shell.run", depends_on: [{ id: "s", type: "FS" }] },
      ],
    };
    const merged = mergeLayout(b, { s: { x: 0, y: 0 }, x: { x: 0, y: 120 } });
    expect(merged.unplaced).toEqual([]);
    expect(merged.positions.y!.y).toBe(120);
    expect(merged.positions.y!.x).toBeGreaterThanOrEqual(200);
  });
});

describe("editing from the inspector", () => {
  it("renames through the store: one undo step, the selection follows, a taken id is refused", async () => {
    const { store } = setup();
    await opened(store);
    store.getState().select("work");
    expect(store.getState().renameTask("work", "end")).toBe("another task is already called end");
    expect(store.getState().renameTask("work", "build")).toBeNull();
    expect(store.getState().selected).toBe("build");
    expect(store.getState().blueprint?.tasks[2]?.depends_on).toEqual([{ id: "build", type: "FS" }]);
    expect(store.getState().positions.build).toEqual(store.getState().positions.work);
    store.getState().undo();
    expect(store.getState().blueprint?.tasks.map((t) => t.id)).toEqual(["start", "work", "end"]);
  });

  it("keystrokes of one field make one undo step", async () => {
    const { store } = setup();
    await opened(store);
    for (const condition of ["t", "to", "total"]) {
      store.getState().edit((b) => ({ ...b, tasks: b.tasks.map((t) => (t.id === "work" ? { ...t, condition } : t)) }), "work.condition");
    }
    expect(store.getState().past).toHaveLength(1);
    store.getState().undo();
    expect(store.getState().blueprint?.tasks[1]?.condition).toBeUndefined();
  });

  it("asks the facade for the names the selected task may read", async () => {
    const { store } = setup();
    await opened(store);
    store.getState().select("end");
    await settled();
    expect(store.getState().names).toEqual({
      task_id: "end",
      produced: [{ key: "total", producers: ["work"], upstream: true }],
      own: [],
    });
  });
});

describe("selecting several tasks", () => {
  it("adds the tasks of Shift+clicks and selection boxes; the last one chosen is the one the inspector shows", async () => {
    const { store } = setup();
    await opened(store);
    store.getState().changeSelection([{ id: "start", selected: true }]);
    store.getState().changeSelection([{ id: "end", selected: true }, { id: "work", selected: true }]);
    expect(store.getState().selection).toEqual(["start", "end", "work"]);
    expect(store.getState().selected).toBe("work");

    // Shift+click on a selected task takes it out; the inspector falls back to one still selected.
    store.getState().changeSelection([{ id: "work", selected: false }]);
    expect(store.getState().selection).toEqual(["start", "end"]);
    expect(store.getState().selected).toBe("end");

    // A plain click selects one task: React Flow deselects the others in the same change.
    store.getState().changeSelection([{ id: "start", selected: false }, { id: "work", selected: true }, { id: "end", selected: false }]);
    expect(store.getState().selection).toEqual(["work"]);
    expect(store.getState().selected).toBe("work");
  });

  it("a click on the pane clears the selection, and select chooses one task alone", async () => {
    const { store } = setup();
    await opened(store);
    store.getState().selectAll();
    store.getState().select("work");
    expect(store.getState().selection).toEqual(["work"]);
    store.getState().select(null);
    expect(store.getState().selection).toEqual([]);
    expect(store.getState().selected).toBeNull();
  });

  it("selects every task at once and keeps the task the inspector shows", async () => {
    const { store } = setup();
    await opened(store);
    store.getState().select("work");
    store.getState().selectAll();
    expect(store.getState().selection).toEqual(["start", "work", "end"]);
    expect(store.getState().selected).toBe("work");
  });

  it("keeps the selected dependency when React Flow deselects the nodes after an edge click", async () => {
    const { store } = setup();
    await opened(store);
    store.getState().changeSelection([{ id: "work", selected: true }]);
    store.getState().selectDependency("start->work");
    store.getState().changeSelection([{ id: "work", selected: false }]);
    expect(store.getState().selectedDependency).toBe("start->work");
    expect(store.getState().selection).toEqual([]);
  });

  it("deletes every selected task and the dependencies on them as one undo step", async () => {
    const { store } = setup();
    await opened(store);
    store.getState().changeSelection([{ id: "work", selected: true }, { id: "end", selected: true }]);
    store.getState().deleteSelection();
    expect(store.getState().blueprint?.tasks.map((t) => t.id)).toEqual(["start"]);
    expect(store.getState().selection).toEqual([]);
    expect(store.getState().selected).toBeNull();
    expect(store.getState().past).toHaveLength(1);
    store.getState().undo();
    expect(store.getState().blueprint?.tasks.map((t) => t.id)).toEqual(["start", "work", "end"]);
    expect(store.getState().blueprint?.tasks[2]?.depends_on).toEqual([{ id: "work", type: "FS" }]);
  });

  it("deletes tasks and a dependency between others together (the Delete key) as one undo step", async () => {
    const { store } = setup();
    await opened(store);
    store.getState().deleteTasks(["end"], [{ from: "start", to: "work" }]);
    expect(store.getState().blueprint?.tasks).toEqual([
      { id: "start", type: "system.start" },
      { id: "work", type: "shell.run" },
    ]);
    expect(store.getState().past).toHaveLength(1);
    store.getState().deleteTasks(["nothing"]);
    expect(store.getState().past).toHaveLength(1);
  });

  it("deletes the selected dependency when no task is selected", async () => {
    const { store } = setup();
    await opened(store);
    store.getState().selectDependency("work->end");
    store.getState().deleteSelection();
    expect(store.getState().blueprint?.tasks[2]?.depends_on).toBeUndefined();
    expect(store.getState().selectedDependency).toBeNull();
  });

  it("drops from the selection the tasks an undo removes", async () => {
    const { store } = setup();
    await opened(store);
    store.getState().addTask("shell.run");
    store.getState().changeSelection([{ id: "run_1", selected: true }, { id: "work", selected: true }]);
    store.getState().undo();
    expect(store.getState().selection).toEqual(["work"]);
  });
});

describe("copy, cut, paste and duplicate", () => {
  it("copies the selection as blueprint text and says how many tasks", async () => {
    const { store } = setup();
    await opened(store);
    expect(store.getState().copy()).toBeNull();
    store.getState().changeSelection([{ id: "end", selected: true }, { id: "work", selected: true }]);
    const text = store.getState().copy();
    expect(JSON.parse(text ?? "").tasks.map((t: { id: string }) => t.id)).toEqual(["work", "end"]);
    expect(store.getState().notice).toEqual({ text: "Copied 2 tasks", error: false });
    expect(store.getState().past).toEqual([]);
  });

  it("pastes a copy beside its tasks as one undo step, selected, and each paste further off", async () => {
    const { store } = setup();
    await opened(store);
    store.getState().addTask("shell.run", { x: 0, y: 320 }, null);
    store.getState().edit((b) => connect(b, "work", "run_1"));
    store.getState().changeSelection([{ id: "work", selected: true }, { id: "run_1", selected: true }]);
    const text = store.getState().copy()!;
    store.getState().paste(text);
    const state = store.getState();
    expect(state.blueprint?.tasks.map((t) => t.id)).toEqual(["start", "work", "end", "run_1", "work_copy", "run_1_copy"]);
    expect(state.blueprint?.tasks[5]?.depends_on).toEqual([{ id: "work_copy", type: "FS" }]);
    expect(state.positions.work_copy).toEqual({ x: 40, y: 140 });
    expect(state.selection).toEqual(["work_copy", "run_1_copy"]);
    expect(state.selected).toBe("work_copy");
    expect(state.notice).toEqual({ text: "Pasted 2 tasks", error: false });
    expect(state.past).toHaveLength(3);

    store.getState().paste(text);
    expect(store.getState().positions.work_copy_2).toEqual({ x: 80, y: 180 });
    store.getState().undo();
    store.getState().undo();
    expect(store.getState().blueprint?.tasks.map((t) => t.id)).toEqual(["start", "work", "end", "run_1"]);
    expect(store.getState().selection).toEqual([]);
  });

  it("places text copied elsewhere below every task and brings it into view", async () => {
    const { store } = setup();
    await opened(store);
    store.getState().paste(JSON.stringify({ tasks: [{ id: "work", type: "shell.run" }] }));
    expect(store.getState().positions.work_copy!.y).toBeGreaterThan(200);
    expect(store.getState().focus?.task).toBe("work_copy");
    expect(store.getState().selection).toEqual(["work_copy"]);
  });

  it("cuts as one undo step, and the first paste of a cut puts the tasks back in place", async () => {
    const { store } = setup();
    await opened(store);
    store.getState().moveTask("work", { x: 300, y: 120 });
    store.getState().select("work");
    const text = store.getState().cut()!;
    expect(store.getState().blueprint?.tasks.map((t) => t.id)).toEqual(["start", "end"]);
    expect(store.getState().past).toHaveLength(1);
    expect(store.getState().notice?.text).toBe("Cut 1 task");
    store.getState().paste(text);
    expect(store.getState().blueprint?.tasks.map((t) => t.id)).toEqual(["start", "end", "work"]);
    expect(store.getState().positions.work).toEqual({ x: 300, y: 120 });
  });

  it("refuses text that is not blueprint tasks, changing nothing and saying why", async () => {
    const { store } = setup();
    await opened(store);
    store.getState().paste('[{"id": "a", "type": "t"}, {"id": "b"}]');
    expect(store.getState().notice).toEqual({ text: 'Cannot paste: task 2 has no "type"', error: true });
    expect(store.getState().past).toEqual([]);
  });

  it("says which start or end it left out", async () => {
    const { store } = setup();
    await opened(store);
    store.getState().setTaskTypes(withBounds);
    store.getState().paste(text);
    expect(store.getState().blueprint?.tasks.map((t) => t.id)).toEqual(["start", "work", "end", "work_copy"]);
    expect(store.getState().blueprint?.tasks[3]?.depends_on).toEqual([{ id: "start", type: "FS" }]);
    expect(store.getState().notice?.text).toBe("Pasted 1 task (left out start, end: the blueprint has its own)");
  });

  it("duplicates the selection beside it without making it the copy to paste", async () => {
    const { store } = setup();
    await opened(store);
    store.getState().setTaskTypes(withBounds);
    store.getState().select("start");
    const copied = store.getState().copy()!;
    store.getState().select("work");
    store.getState().duplicate();
    expect(store.getState().blueprint?.tasks.map((t) => t.id)).toEqual(["start", "work", "end", "work_copy"]);
    expect(store.getState().positions.work_copy).toEqual({ x: 40, y: 140 });
    expect(store.getState().notice?.text).toBe("Duplicated 1 task");
    expect(store.getState().past).toHaveLength(1);
    // The copy made before is still the one that pastes beside its task.
    store.getState().paste(copied);
    expect(store.getState().notice?.text).toContain("left out start");
  });
});

describe("what commands ask of the view", () => {
  it("opens the palette in a mode and closes it", () => {
    const { store } = setup();
    store.getState().openPalette("tasks");
    expect(store.getState().palette).toBe("tasks");
    store.getState().openPalette(null);
    expect(store.getState().palette).toBeNull();
  });

  it("asks the canvas anew for each zoom to fit", () => {
    const { store } = setup();
    store.getState().zoomToFit();
    const first = store.getState().fitRequest;
    store.getState().zoomToFit();
    expect(store.getState().fitRequest).not.toBe(first);
  });
});

describe("the minimap", () => {
  const sized = (n: number): Blueprint => ({ tasks: Array.from({ length: n }, (_, i) => ({ id: `t${i}`, type: "shell.run" })) });

  it("shows for blueprints too large to read whole, but not yet for the largest ones", () => {
    expect(showsMinimap({ minimap: null, blueprint: sized(30) })).toBe(false);
    expect(showsMinimap({ minimap: null, blueprint: sized(31) })).toBe(true);
    expect(showsMinimap({ minimap: null, blueprint: sized(2000) })).toBe(false);
    expect(showsMinimap({ minimap: null, blueprint: null })).toBe(false);
  });

  it("follows the user's toggle whatever the size", () => {
    const { store } = setup();
    store.setState({ blueprint: sized(100) });
    store.getState().toggleMinimap();
    expect(showsMinimap(store.getState())).toBe(false);
    store.setState({ blueprint: sized(2000) });
    expect(showsMinimap(store.getState())).toBe(false);
    store.getState().toggleMinimap();
    expect(showsMinimap(store.getState())).toBe(true);
  });
});

describe("the data wiring on the canvas", () => {
  it("is hidden until toggled, and toggling it is no edit of the blueprint", async () => {
    const { store } = setup();
    await opened(store);
    expect(store.getState().showWiring).toBe(false);
    store.getState().toggleWiring();
    expect(store.getState().showWiring).toBe(true);
    expect(store.getState().past).toEqual([]);
    store.getState().toggleWiring();
    expect(store.getState().showWiring).toBe(false);
  });

  it("is the facade's answer for the newest blueprint while shown, and nothing once hidden", async () => {
    const asked: string[] = [];
    const { store } = setup({}, {
      blueprint_wiring: ({ text: given }) => {
        asked.push(given);
        const ids = (JSON.parse(given) as Blueprint).tasks.map((t) => t.id);
        return [{ from: ids[0]!, to: ids[ids.length - 1]!, key: "k", output: "o", input: "i" }];
      },
    });
    await opened(store);
    expect(asked).toEqual([]);
    store.getState().toggleWiring();
    await settled();
    expect(store.getState().wires).toEqual([{ from: "start", to: "end", key: "k", output: "o", input: "i" }]);
    store.getState().edit((b) => ({ ...b, tasks: [...b.tasks, { id: "last", type: "shell.run" }] }));
    await settled();
    expect(asked).toHaveLength(2);
    expect(store.getState().wires?.[0]?.to).toBe("last");
    store.getState().toggleWiring();
    await settled();
    expect(store.getState().wires).toBeNull();
    expect(asked).toHaveLength(2);
  });

  it("draws no wire for a blueprint the facade cannot read", async () => {
    const { store } = setup({}, {
      blueprint_wiring: () => {
        throw new Error("invalid_blueprint");
      },
    });
    await opened(store);
    store.getState().toggleWiring();
    await settled();
    expect(store.getState().wires).toEqual([]);
  });
});

describe("scopes in the editor", () => {
  it("asks what the scope's opening task may read, for its conditions' completion", async () => {
    const { store } = setup();
    await opened(store);
    store.getState().selectScope("work");
    await settled();
    expect(store.getState().names?.task_id).toBe("work");
    store.getState().select("end");
    await settled();
    expect(store.getState().names?.task_id).toBe("end");
  });

  const scope = (start: string, members: string[]): Scope => ({
    start,
    end: members.at(-1) ?? null,
    policy: "skip",
    members,
    depth: 0,
  });

  it("keeps the last verdict while the newest blueprint is checked, and says which blueprint it is about", async () => {
    const answers: (() => void)[] = [];
    const { store } = setup({}, {
      validate_blueprint: ({ text }) =>
        new Promise((resolve) => answers.push(() => resolve([orphans((parseBlueprint(text ?? "") as { blueprint: Blueprint }).blueprint)]))),
    });
    const opening = opened(store);
    await settled();
    answers[0]!();
    await opening;
    await settled();
    const first = store.getState().report;
    expect(first?.diagnostics).toEqual([]);
    expect(store.getState().checked).toBe(store.getState().blueprint);
    store.getState().addTask("shell.run", { x: 0, y: 900 }, null);
    // The orphan is not reported yet: the verdict before stays, about the blueprint before.
    expect(store.getState().report).toBe(first);
    expect(store.getState().checked).not.toBe(store.getState().blueprint);
    answers[1]!();
    await settled();
    expect(store.getState().report?.diagnostics.map((d) => d.task_id)).toEqual(["run_1"]);
    expect(store.getState().checked).toBe(store.getState().blueprint);
  });

  it("asks the facade for the scopes one blueprint at a time, and then of the newest only", async () => {
    const answers: ((scopes: Scope[]) => void)[] = [];
    const asked: string[] = [];
    const { store } = setup({}, {
      blueprint_scopes: ({ text }) => {
        asked.push(text);
        return new Promise((resolve) => answers.push(resolve));
      },
    });
    await opened(store);
    // Three changes while the question on the blueprint as opened is unanswered: none asked yet.
    store.getState().addTask("shell.run");
    store.getState().addTask("shell.run");
    store.getState().addTask("shell.run");
    expect(answers).toHaveLength(1);
    answers[0]!([]);
    await settled();
    // Then the newest blueprint only, with its three tasks.
    expect(answers).toHaveLength(2);
    expect(asked[1]).toContain("run_3");
    answers[1]!([scope("work", ["work"])]);
    await settled();
    expect(store.getState().scopes.map((s) => s.start)).toEqual(["work"]);
  });

  it("a blueprint the facade cannot read has no scopes", async () => {
    const { store } = setup({}, {
      blueprint_scopes: () => {
        throw new BackendError("invalid_blueprint", "not JSON");
      },
    });
    await opened(store);
    await settled();
    expect(store.getState().scopes).toEqual([]);
  });

  it("wraps tasks in a scope as one undo step and selects it; an undo takes the selection away", async () => {
    const { store } = setup();
    await opened(store);
    store.getState().select("work");
    expect(await store.getState().createScope(["work"], "once")).toBeNull();
    const work = () => store.getState().blueprint?.tasks.find((t) => t.id === "work");
    expect(work()).toMatchObject({ scope_start: { name: "once" }, scope_end: "work" });
    expect(store.getState().past).toHaveLength(1);
    expect([store.getState().selectedScope, store.getState().selected]).toEqual(["work", null]);
    store.getState().undo();
    expect(work()).not.toHaveProperty("scope_start");
    expect(store.getState().selectedScope).toBeNull();
  });

  it("refuses a selection that is not one stretch of tasks, with a notice naming the task left out", async () => {
    const { store } = setup();
    await opened(store);
    const refusal = await store.getState().createScope(["start", "end"]);
    expect(refusal).toContain("would also hold work");
    expect(store.getState().notice).toEqual({ text: `No scope made: ${refusal}`, error: true });
    expect(store.getState().past).toEqual([]);
  });

  it("edits and removes the selected scope as undoable steps; selecting a task or a scope clears the other", async () => {
    const { store } = setup();
    await opened(store);
    await store.getState().createScope(["work"]);
    store.getState().edit((b) => setScopePolicy(b, "work", "retry"));
    const startOf = () => store.getState().blueprint?.tasks.find((t) => t.id === "work")?.scope_start;
    expect(startOf()).toEqual({ retry_policy: { retries: 1 } });
    store.getState().undo();
    expect(startOf()).toEqual({});
    expect(store.getState().selectedScope).toBe("work");

    store.getState().select("end");
    expect([store.getState().selected, store.getState().selectedScope]).toEqual(["end", null]);
    store.getState().selectScope("work");
    expect([store.getState().selected, store.getState().selectedScope]).toEqual([null, "work"]);

    store.getState().removeScope("work");
    expect(store.getState().blueprint?.tasks[1]).toEqual(JSON.parse(text).tasks[1]);
    expect(store.getState().selectedScope).toBeNull();
    store.getState().undo();
    expect(startOf()).toEqual({});
  });
});
