import { describe, expect, it } from "vitest";
import { MemoryBackend } from "../backend/memory";
import type { FileReport } from "../backend/generated";
import { connect, parseBlueprint, type Blueprint } from "../blueprint";
import { createEditorStore, type Positions } from "./editor";

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

function setup() {
  const backend = new MemoryBackend(
    {
      validate_blueprint: ({ text }) => {
        const parsed = parseBlueprint(text ?? "");
        if ("error" in parsed) throw new Error(parsed.error);
        return [orphans(parsed.blueprint)];
      },
      format_blueprint: ({ text }) => ({ text: JSON.stringify(JSON.parse(text)) + "\n", changed: true }),
      list_installed_task_definitions: () => [{ name: "shell.run", description: "Runs a command." }],
    },
    { "/bp.json": text },
    "/bp.json",
  );
  const layout = async (b: Blueprint): Promise<Positions> =>
    Object.fromEntries(b.tasks.map((t, i) => [t.id, { x: 0, y: i * 100 }]));
  return { backend, store: createEditorStore(backend, layout) };
}

const settled = () => new Promise((resolve) => setTimeout(resolve, 0));

describe("the editor store", () => {
  it("opens the blueprint given at start, lays it out and validates it", async () => {
    const { store } = setup();
    await store.getState().load();
    await settled();
    const state = store.getState();
    expect(state.blueprint?.tasks.map((t) => t.id)).toEqual(["start", "work", "end"]);
    expect(state.positions.end).toEqual({ x: 0, y: 200 });
    expect(state.report?.valid).toBe(true);
    expect(state.taskTypes.map((t) => t.name)).toEqual(["shell.run"]);
  });

  it("validates every edit and undoes and redoes them in order", async () => {
    const { store } = setup();
    await store.getState().load();
    store.getState().addTask("shell.run");
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
    await store.getState().load();
    await store.getState().save();
    expect(backend.files.get("/bp.json")).toBe(JSON.stringify(JSON.parse(text)) + "\n");
    expect(store.getState().notice).toEqual({ text: "Saved /bp.json", error: false });
  });

  it("tells why a file that is not a blueprint cannot be opened, and keeps what was open", async () => {
    const { store } = setup();
    await store.getState().load();
    await store.getState().open("/other.json", "{\"tasks\": 3}");
    expect(store.getState().path).toBe("/bp.json");
    expect(store.getState().notice?.error).toBe(true);
    expect(store.getState().notice?.text).toContain("not a blueprint");
  });

  it("saves as where the user chooses, then saves there, and opens what the dialog picks", async () => {
    const { backend, store } = setup();
    await store.getState().load();
    backend.nextDialogPath = "/copy.json";
    await store.getState().saveAs();
    expect(store.getState().path).toBe("/copy.json");
    store.getState().addTask("shell.run");
    await store.getState().save();
    expect(backend.files.get("/copy.json")).toContain("run_1");
    expect(backend.files.get("/bp.json")).toBe(text);

    backend.nextDialogPath = "/bp.json";
    await store.getState().openFile();
    expect(store.getState().path).toBe("/bp.json");
    expect(store.getState().blueprint?.tasks).toHaveLength(3);
    expect(store.getState().past).toEqual([]);
  });

  it("follows the facade's session events", async () => {
    const { backend, store } = setup();
    await store.getState().load();
    const event = { session_id: "s1", seq: 1, global_seq: 7, time_ms: 0, kind: "session_started", payload: null };
    backend.emit(event);
    expect(store.getState().lastEvent).toEqual(event);
  });
});
