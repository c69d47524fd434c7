import { describe, expect, it } from "vitest";
import type { Blueprint } from "./blueprint";
import { boundsOf, copyFragment, freshId, pasteFragment as pasteInto, placeBelow, type Pasted } from "./clipboard";

const blueprint: Blueprint = {
  id: "bp",
  tasks: [
    { id: "start", type: "system.start" },
    { id: "open", type: "shell.run", scope_start: { name: "loop" }, depends_on: [{ id: "start", type: "FS" }] },
    { id: "body", type: "shell.run", description: "works", depends_on: [{ id: "open", type: "SS" }] },
    { id: "close", type: "shell.run", scope_end: "open", depends_on: [{ id: "body", type: "FS" }] },
    { id: "end", type: "system.end", depends_on: [{ id: "close", type: "FS" }] },
  ],
};

// As the catalogue lists the start and the end (orrery-blueprint task_types.rs).
const bounds = boundsOf([
  { name: "system.start", description: "Opens a blueprint.", bound: "start" },
  { name: "system.end", description: "Closes a blueprint.", bound: "end" },
  { name: "shell.run", description: "Runs a command." },
]);
const pasteFragment = (into: Blueprint, text: string) => pasteInto(into, text, bounds);

function pasted(result: Pasted | { error: string }): Pasted {
  if ("error" in result) throw new Error(`expected a paste, got the error: ${result.error}`);
  return result;
}

describe("copying tasks", () => {
  it("writes a blueprint of the copied tasks in blueprint order, indented as files are", () => {
    const text = copyFragment(blueprint, ["close", "body"]);
    expect(text).toBe(
      JSON.stringify(
        {
          tasks: [
            { id: "body", type: "shell.run", description: "works" },
            { id: "close", type: "shell.run", depends_on: [{ id: "body", type: "FS" }] },
          ],
        },
        null,
        4,
      ),
    );
  });

  it("keeps a scope_end only with the task that opens its scope", () => {
    const fragment = JSON.parse(copyFragment(blueprint, ["open", "close"]));
    expect(fragment.tasks[1].scope_end).toBe("open");
    // The opening task keeps its own scope_start even when copied without its end.
    expect(JSON.parse(copyFragment(blueprint, ["open"])).tasks[0].scope_start).toEqual({ name: "loop" });
  });
});

describe("pasting tasks", () => {
  it("gives taken ids a fresh one and makes the pasted dependencies and scope follow it", () => {
    const result = pasted(pasteFragment(blueprint, copyFragment(blueprint, ["open", "body", "close"])));
    expect(result.ids).toEqual(["open_copy", "body_copy", "close_copy"]);
    expect(result.renamed).toEqual({ open: "open_copy", body: "body_copy", close: "close_copy" });
    const added = result.blueprint.tasks.slice(5);
    expect(added[1]?.depends_on).toEqual([{ id: "open_copy", type: "SS" }]);
    expect(added[2]?.scope_end).toBe("open_copy");
    expect(result.blueprint.tasks.slice(0, 5)).toEqual(blueprint.tasks);
  });

  it("pastes a copy of a copy as _copy_2, not _copy_copy", () => {
    const once = pasted(pasteFragment(blueprint, copyFragment(blueprint, ["body"]))).blueprint;
    const twice = pasted(pasteFragment(once, copyFragment(once, ["body_copy"])));
    expect(twice.ids).toEqual(["body_copy_2"]);
    expect(freshId("free", new Set())).toBe("free");
  });

  it("does not give a renamed task the id another pasted task keeps", () => {
    const text = JSON.stringify({ tasks: [{ id: "body", type: "x" }, { id: "body_copy", type: "x" }] });
    expect(pasted(pasteFragment(blueprint, text)).ids).toEqual(["body_copy_2", "body_copy"]);
  });

  it("keeps dependencies on tasks of the blueprint and drops those on tasks found nowhere", () => {
    const text = JSON.stringify([
      { id: "late", type: "shell.run", depends_on: [{ id: "close", type: "FF" }, { id: "ghost", type: "FS" }], scope_end: "ghost" },
    ]);
    const task = pasted(pasteFragment(blueprint, text)).blueprint.tasks.at(-1);
    expect(task).toEqual({ id: "late", type: "shell.run", depends_on: [{ id: "close", type: "FF" }] });
  });

  it("accepts a whole blueprint file, a bare task and a list of tasks", () => {
    const empty: Blueprint = { tasks: [] };
    expect(pasted(pasteFragment(empty, JSON.stringify(blueprint))).ids).toEqual(["start", "open", "body", "close", "end"]);
    expect(pasted(pasteFragment(empty, '{"id": "one", "type": "shell.run"}')).ids).toEqual(["one"]);
    expect(pasted(pasteFragment(empty, '[{"id": "a", "type": "t"}, {"id": "b", "type": "t"}]')).ids).toEqual(["a", "b"]);
  });

  it("leaves out a start and an end the blueprint already has; what hung from the start hangs from its own", () => {
    const other: Blueprint = {
      tasks: [
        { id: "begin", type: "system.start" },
        { id: "finish", type: "system.end" },
      ],
    };
    const result = pasted(pasteFragment(other, JSON.stringify(blueprint)));
    expect(result.skipped).toEqual(["start", "end"]);
    expect(result.ids).toEqual(["open", "body", "close"]);
    expect(result.blueprint.tasks.find((t) => t.id === "open")?.depends_on).toEqual([{ id: "begin", type: "FS" }]);
  });

  it("refuses text that is not blueprint tasks and says what is wrong", () => {
    const error = (text: string) => {
      const result = pasteFragment(blueprint, text);
      return "error" in result ? result.error : "pasted";
    };
    expect(error("hello")).toContain("not JSON");
    expect(error('{"name": "x"}')).toBe('the text is not a blueprint: it has no "tasks"');
    expect(error('{"tasks": 3}')).toBe('its "tasks" is not a list');
    expect(error('{"tasks": []}')).toBe("the text has no tasks");
    expect(error('[{"id": "a", "type": "t"}, {"id": "b", "type": "t"}, {"id": "c"}]')).toBe('task 3 has no "type"');
    expect(error('[{"type": "t"}]')).toBe('task 1 has no "id"');
    expect(error('[{"id": "a", "type": "t"}, {"id": "a", "type": "t"}]')).toBe("tasks 1 and 2 are both called a");
    expect(error('[{"id": "a", "type": "t", "depends_on": [{"type": "FS"}]}]')).toBe('dependency 1 of task 1 (a) has no "id"');
    expect(error('[{"id": "a", "type": "t", "depends_on": {}}]')).toContain('"depends_on" that is not a list');
    expect(error('{"dtype": "antikythera.models/Blueprint", "data": {}}')).toContain("COMPAS envelope");
  });
});

describe("placing pasted tasks without known positions", () => {
  it("puts them below every task, each under the pasted tasks it depends on", () => {
    const tasks = [
      { id: "a", type: "t" },
      { id: "b", type: "t", depends_on: [{ id: "a", type: "FS" as const }] },
      { id: "c", type: "t", depends_on: [{ id: "a", type: "FS" as const }] },
    ];
    const placed = placeBelow(tasks, { x: { x: 100, y: 0 }, y: { x: 300, y: 400 } });
    expect(placed.a!.x).toBe(100);
    expect(placed.a!.y).toBeGreaterThan(400 + 56);
    expect(placed.b!.y).toBe(placed.c!.y);
    expect(placed.b!.y).toBeGreaterThan(placed.a!.y);
    expect(placed.c!.x).toBeGreaterThan(placed.b!.x);
  });

  it("does not loop on a cycle among them", () => {
    const tasks = [
      { id: "a", type: "t", depends_on: [{ id: "b", type: "FS" as const }] },
      { id: "b", type: "t", depends_on: [{ id: "a", type: "FS" as const }] },
    ];
    expect(Object.keys(placeBelow(tasks, {}))).toEqual(["a", "b"]);
  });
});
