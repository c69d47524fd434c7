import { describe, expect, it } from "vitest";
import { blueprintEncoding } from "../backend/editor-jobs";
import { MemoryBackend } from "../backend/memory";
import type { SessionEvent } from "../backend/generated";
import { connect, parseBlueprint, type Blueprint } from "../blueprint";
import type { Positions } from "./editor";
import { createWorkspace, currentEditor, type WorkspaceStore } from "./workspace";

const outer = JSON.stringify({
  id: "outer",
  tasks: [
    { id: "start", type: "system.start" },
    {
      id: "place",
      type: "system.composite",
      params: [{ name: "blueprint", value: { dynamic: { blueprint_id: "inner", sequencer: "basic_element_sequencer" } } }],
      depends_on: [{ id: "start", type: "FS" }],
    },
    { id: "end", type: "system.end", depends_on: [{ id: "place", type: "FS" }] },
  ],
});
const inner = JSON.stringify({
  id: "inner",
  tasks: [
    { id: "start", type: "system.start" },
    { id: "end", type: "system.end", depends_on: [{ id: "start", type: "FS" }] },
  ],
});

function setup(startup: string | null = "/w/outer.json") {
  const validated: string[] = [];
  const backend = new MemoryBackend(
    {
      validate_blueprint: ({ text, file }) => {
        const parsed = parseBlueprint(text ?? "");
        if ("error" in parsed) throw new Error(parsed.error);
        validated.push(file ?? "(no file)");
        return [{ file: file ?? "", valid: true, server_accepts: true, diagnostics: [] }];
      },
      format_blueprint: ({ text }) => ({ text: JSON.stringify(JSON.parse(text)) + "\n", changed: true }),
      blueprint_encoding: blueprintEncoding,
      export_blueprint: ({ text }) => ({ text: `exported ${JSON.parse(text).id}`, diagnostics: [] }),
      list_task_types: () => [{ name: "shell.run", description: "Runs a command." }],
      read_layout: ({ file }) => ({ layout_file: `${file}.layout`, found: false, positions: {}, direction: "down" }),
      save_layout: ({ file, positions, direction }) => ({ layout_file: `${file}.layout`, found: true, positions, direction: direction ?? "down" }),
      task_names: ({ task_id }) => ({ task_id, produced: [], own: [] }),
      list_blueprint_files: ({ folder }) =>
        folder === "/w"
          ? [
              { file: "/w/outer.json", blueprint_id: "outer", name: "Outer", version: "1.0", tasks: 3 },
              { file: "/w/inner.json", blueprint_id: "inner", name: "Inner", version: "1.0", tasks: 2 },
            ]
          : [],
    },
    { "/w/outer.json": outer, "/w/inner.json": inner, "/w/other.json": inner },
    startup,
  );
  const layout = async (b: Blueprint): Promise<Positions> =>
    Object.fromEntries(b.tasks.map((t, i) => [t.id, { x: 0, y: i * 100 }]));
  const workspace = createWorkspace(backend, layout, { layoutSaveDelayMs: 10 });
  return { backend, workspace, validated };
}

const settled = () => new Promise((resolve) => setTimeout(resolve, 0));
const editor = (w: WorkspaceStore) => currentEditor(w.getState()).getState();
/** Answers the question asked with the choice labelled `label`. */
async function answer(w: WorkspaceStore, label: string) {
  const choice = w.getState().ask?.choices.find((c) => c.label === label);
  if (!choice) throw new Error(`no question with a ${label} choice: ${JSON.stringify(w.getState().ask)}`);
  await choice.run();
  await settled();
}

describe("the workspace", () => {
  it("opens the blueprint given at start in a tab and names it in the window's title", async () => {
    const { backend, workspace } = setup();
    await workspace.getState().load();
    await settled();
    expect(workspace.getState().tabs).toHaveLength(1);
    expect(editor(workspace).path).toBe("/w/outer.json");
    expect(editor(workspace).taskTypes.map((t) => t.name)).toEqual(["shell.run"]);
    expect(backend.window).toEqual({ title: "Orrery — outer.json", unsaved: false, closed: false });
    expect(workspace.getState().recent).toEqual(["/w/outer.json"]);

    editor(workspace).edit((b) => connect(b, "start", "end"));
    expect(backend.window.title).toBe("Orrery — outer.json •");
    expect(backend.window.unsaved).toBe(true);
    // Undone back to what the file holds, nothing is unsaved any more.
    editor(workspace).undo();
    expect(backend.window.unsaved).toBe(false);
  });

  it("starts with an empty tab that a new or opened blueprint takes over", async () => {
    const { backend, workspace } = setup(null);
    await workspace.getState().load();
    expect(workspace.getState().tabs).toHaveLength(1);
    expect(editor(workspace).blueprint).toBeNull();
    expect(backend.window.title).toBe("Orrery");

    workspace.getState().newBlueprint();
    await settled();
    expect(workspace.getState().tabs).toHaveLength(1);
    expect(editor(workspace).blueprint?.tasks.map((t) => [t.id, t.type])).toEqual([
      ["start", "system.start"],
      ["end", "system.end"],
    ]);
    expect(editor(workspace).path).toBeNull();
    expect(backend.window.title).toBe("Orrery — Untitled");

    // The new blueprint is untouched: the opened file takes its place too.
    backend.nextDialogPath = "/w/outer.json";
    await workspace.getState().openFile();
    expect(workspace.getState().tabs).toHaveLength(1);
    workspace.getState().newBlueprint();
    await settled();
    expect(workspace.getState().tabs).toHaveLength(2);
    expect(editor(workspace).blueprint?.name).toBe("Untitled 2");
  });

  it("shows a file already open instead of opening it twice", async () => {
    const { backend, workspace } = setup();
    await workspace.getState().load();
    const first = workspace.getState().active;
    workspace.getState().newBlueprint();
    await settled();
    expect(workspace.getState().active).not.toBe(first);
    backend.nextDialogPath = "/w/outer.json";
    await workspace.getState().openFile();
    expect(workspace.getState().tabs).toHaveLength(2);
    expect(workspace.getState().active).toBe(first);
  });

  it("asks before closing a tab with unsaved work: cancel keeps it, don't save drops it", async () => {
    const { workspace } = setup();
    await workspace.getState().load();
    editor(workspace).edit((b) => connect(b, "start", "end"));
    const key = workspace.getState().active;

    workspace.getState().closeTab(key);
    expect(workspace.getState().ask?.title).toBe("Save changes to outer.json?");
    await answer(workspace, "Cancel");
    expect(workspace.getState().tabs.map((t) => t.key)).toEqual([key]);
    expect(workspace.getState().ask).toBeNull();

    workspace.getState().closeTab(key);
    await answer(workspace, "Don't Save");
    // The last tab closed leaves an empty one.
    expect(workspace.getState().tabs).toHaveLength(1);
    expect(editor(workspace).blueprint).toBeNull();
  });

  it("saves before closing the window when asked to, and stays open when the save is cancelled", async () => {
    const { backend, workspace } = setup(null);
    await workspace.getState().load();
    workspace.getState().newBlueprint();
    await settled();
    editor(workspace).edit((b) => ({ ...b, description: "changed" }));

    backend.requestClose();
    expect(backend.window.closed).toBe(false);
    expect(workspace.getState().ask?.title).toBe("Save changes to Untitled?");
    backend.nextDialogPath = null; // the save dialog is cancelled
    await answer(workspace, "Save");
    expect(backend.window.closed).toBe(false);

    backend.requestClose();
    backend.nextDialogPath = "/w/new.json";
    await answer(workspace, "Save");
    expect(JSON.parse(backend.files.get("/w/new.json")!).description).toBe("changed");
    expect(backend.window.closed).toBe(true);
  });

  it("drills into a composite's inner blueprint and back, asking about its unsaved work", async () => {
    const { backend, workspace, validated } = setup();
    await workspace.getState().load();
    await workspace.getState().drillInto("place");
    await settled();
    const levels = () => workspace.getState().tabs[0]!.levels;
    expect(levels().map((l) => [l.via, l.store.getState().path])).toEqual([
      [null, "/w/outer.json"],
      ["place", "/w/inner.json"],
    ]);
    expect(editor(workspace).blueprint?.id).toBe("inner");

    editor(workspace).edit((b) => ({ ...b, description: "inner changed" }));
    workspace.getState().backTo(0);
    expect(workspace.getState().ask?.title).toBe("Save changes to inner.json?");
    validated.length = 0;
    await answer(workspace, "Save");
    expect(JSON.parse(backend.files.get("/w/inner.json")!).description).toBe("inner changed");
    expect(levels()).toHaveLength(1);
    // The composite is checked again against the inner blueprint as saved.
    expect(validated).toContain("/w/outer.json");
  });

  it("says why a composite cannot be opened", async () => {
    const { workspace } = setup(null);
    await workspace.getState().load();
    workspace.getState().newBlueprint();
    await settled();
    editor(workspace).edit((b) => ({ ...b, tasks: [...b.tasks, { id: "c", type: "system.composite" }] }));
    await workspace.getState().drillInto("c");
    expect(editor(workspace).notice).toEqual({ text: "c names no inner blueprint: set its blueprint param first", error: true });
    editor(workspace).edit((b) => ({
      ...b,
      tasks: b.tasks.map((t) => (t.id === "c" ? { ...t, params: [{ name: "blueprint", value: { static: "inner" } }] } : t)),
    }));
    await workspace.getState().drillInto("c");
    expect(editor(workspace).notice?.text).toBe("Save the blueprint first: inner is looked for beside its file");
  });

  it("runs the menu's choices: a recent file, or a command by id", async () => {
    const { backend, workspace } = setup();
    await workspace.getState().load();
    backend.recent.unshift("/w/other.json");
    const ran: string[] = [];
    workspace.getState().menu({ command: "open_recent", path: "/w/other.json" }, (id) => ran.push(id));
    await settled();
    expect(editor(workspace).path).toBe("/w/other.json");
    workspace.getState().menu({ command: "save", path: null }, (id) => ran.push(id));
    expect(ran).toEqual(["save"]);
  });

  it("follows the facade's session events, in words", async () => {
    const { backend, workspace } = setup();
    await workspace.getState().load();
    const event: SessionEvent = {
      session_id: "s1",
      seq: 1,
      global_seq: 7,
      time_ms: 0,
      kind: "session_state_changed",
      payload: { form: "whole", value: { state: "running", error: null } },
    };
    backend.emit(event);
    expect(workspace.getState().activity).toBe("Run #s1 running");
    // An event that only feeds a view leaves the words as they were.
    backend.emit({ ...event, seq: 2, kind: "data_updated", payload: { form: "whole", value: { keys: {} } } });
    expect(workspace.getState().activity).toBe("Run #s1 running");
    backend.emit({
      ...event,
      seq: 3,
      kind: "session_state_changed",
      payload: { form: "whole", value: { state: "failed", error: { code: "task_failed", message: "b failed" } } },
    });
    expect(workspace.getState().activity).toBe("Run #s1 failed: b failed");
  });

  it("exports what the export job answers to the file the user picks", async () => {
    const { backend, workspace } = setup();
    await workspace.getState().load();
    backend.nextDialogPath = "/w/out.json";
    await editor(workspace).exportFile();
    expect(backend.files.get("/w/out.json")).toBe("exported outer");
    expect(editor(workspace).notice).toEqual({ text: "Exported /w/out.json", error: false });
  });
});
