import type { WorkspaceState } from "./store/workspace";
import { describe, expect, it } from "vitest";
import { blueprintEncoding } from "./backend/editor-jobs";
import { MemoryBackend } from "./backend/memory";
import { commandForKey, COMMANDS, matchingCommands, shortcutText } from "./commands";
import { matchingTasks } from "./editor/find-task";
import { createEditorStore } from "./store/editor";

const key = (k: string, more: { shift?: boolean; ctrl?: boolean } = {}) => ({
  key: k,
  ctrlKey: more.ctrl ?? true,
  metaKey: false,
  shiftKey: more.shift ?? false,
});

describe("the commands", () => {
  it("have distinct ids and distinct shortcuts", () => {
    const ids = COMMANDS.map((c) => c.id);
    expect(new Set(ids).size).toBe(ids.length);
    const keys = COMMANDS.flatMap((c) => [c.shortcut, ...(c.otherShortcuts ?? [])])
      .filter((s) => s !== undefined)
      .map(shortcutText);
    expect(new Set(keys).size, `a shortcut runs two commands: ${keys.join(", ")}`).toBe(keys.length);
  });

  it("are found by the keys the editor handled before: save, save as, undo, redo both ways, layout", () => {
    expect(commandForKey(key("s"), false)?.id).toBe("file.save");
    expect(commandForKey(key("S", { shift: true }), false)?.id).toBe("file.save-as");
    expect(commandForKey(key("z"), false)?.id).toBe("edit.undo");
    expect(commandForKey(key("Z", { shift: true }), false)?.id).toBe("edit.redo");
    expect(commandForKey(key("y"), false)?.id).toBe("edit.redo");
    expect(commandForKey(key("l"), false)?.id).toBe("layout.auto");
    expect(commandForKey(key("P", { shift: true }), false)?.id).toBe("palette.commands");
    expect(commandForKey(key("s", { ctrl: false }), false)).toBeUndefined();
  });

  it("leave a text field its own Ctrl+A and Ctrl+D, but save from it", () => {
    expect(commandForKey(key("a"), false)?.id).toBe("edit.select-all");
    expect(commandForKey(key("a"), true)).toBeUndefined();
    expect(commandForKey(key("d"), true)).toBeUndefined();
    expect(commandForKey(key("s"), true)?.id).toBe("file.save");
  });

  it("leave the clipboard keys and Delete to the clipboard events and the canvas", () => {
    expect(commandForKey(key("c"), false)).toBeUndefined();
    expect(commandForKey(key("v"), false)).toBeUndefined();
    expect(commandForKey(key("Delete", { ctrl: false }), false)).toBeUndefined();
  });

  it("write their shortcuts as the user presses them", () => {
    expect(shortcutText({ key: "s", shift: true })).toBe("Ctrl+Shift+S");
    expect(shortcutText({ key: "Delete", bare: true })).toBe("Delete");
  });

  it("are filtered by every word typed, titles starting with it first", () => {
    expect(matchingCommands("sa").map((c) => c.id)).toEqual(["file.save", "file.save-as"]);
    expect(matchingCommands("all sel").map((c) => c.id)).toEqual(["edit.select-all"]);
    expect(matchingCommands("")).toHaveLength(COMMANDS.length);
  });
});

describe("finding a task", () => {
  const tasks = [
    { id: "start", type: "system.start" },
    { id: "fetch_data", type: "http.get" },
    { id: "data_check", type: "shell.run" },
    { id: "end", type: "system.end" },
  ];

  it("matches ids and types, ids starting with the query first", () => {
    expect(matchingTasks(tasks, "data", 10).map((t) => t.id)).toEqual(["data_check", "fetch_data"]);
    expect(matchingTasks(tasks, "system", 10).map((t) => t.id)).toEqual(["start", "end"]);
    expect(matchingTasks(tasks, "shell data", 10).map((t) => t.id)).toEqual(["data_check"]);
  });

  it("finds at most the limit", () => {
    expect(matchingTasks(tasks, "", 2).map((t) => t.id)).toEqual(["start", "fetch_data"]);
  });
});

describe("running commands against the editor", () => {
  const text = JSON.stringify({ tasks: [{ id: "start", type: "system.start" }, { id: "work", type: "shell.run" }] });

  async function store() {
    const backend = new MemoryBackend({
      validate_blueprint: () => [{ file: "bp.json", valid: true, server_accepts: true, diagnostics: [] }],
      blueprint_encoding: blueprintEncoding,
      read_layout: () => ({ layout_file: "bp.json.layout", found: false, positions: {}, direction: "down" }),
      task_names: ({ task_id }) => ({ task_id, produced: [], own: [] }),
    });
    const editor = createEditorStore(backend, async (b) => Object.fromEntries(b.tasks.map((t, i) => [t.id, { x: 0, y: i * 100 }])));
    await editor.getState().open("/bp.json", text);
    return editor;
  }
  const command = (id: string) => COMMANDS.find((c) => c.id === id)!;
  // The selection's commands act on the editor alone; no window around it is needed.
  const workspace = {} as WorkspaceState;

  it("offers the commands on the selection only when tasks are selected", async () => {
    const editor = await store();
    expect(command("edit.duplicate").enabled?.(editor.getState())).toBe(false);
    expect(command("edit.delete").enabled?.(editor.getState())).toBe(false);
    command("edit.select-all").run(editor.getState(), workspace);
    expect(command("edit.duplicate").enabled?.(editor.getState())).toBe(true);
  });

  it("selects all, duplicates, and deletes through the store", async () => {
    const editor = await store();
    editor.getState().setTaskTypes([{ name: "system.start", description: "Opens a blueprint.", bound: "start" }]);
    command("edit.select-all").run(editor.getState(), workspace);
    command("edit.duplicate").run(editor.getState(), workspace);
    // The blueprint has a start: the duplicate leaves it out.
    expect(editor.getState().blueprint?.tasks.map((t) => t.id)).toEqual(["start", "work", "work_copy"]);
    command("edit.delete").run(editor.getState(), workspace);
    expect(editor.getState().blueprint?.tasks.map((t) => t.id)).toEqual(["start", "work"]);
    command("palette.find").run(editor.getState(), workspace);
    expect(editor.getState().palette).toBe("tasks");
  });
});
