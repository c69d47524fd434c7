import { describe, expect, it } from "vitest";
import {
  addIo,
  bridgeOver,
  setDependencyType,
  disconnect,
  parseJsonValue,
  removeIo,
  removeTasks,
  renameTask,
  setParam,
  setTaskField,
  updateIo,
  withIoKey,
  type Blueprint,
} from "./blueprint";

const blueprint: Blueprint = {
  id: "bp",
  tasks: [
    { id: "a", type: "system.start" },
    { id: "b", type: "shell.run", depends_on: [{ id: "a", type: "FS" }], params: [] },
    { id: "c", type: "system.end", depends_on: [{ id: "a", type: "SF" }, { id: "b", type: "FS" }] },
  ],
};

describe("blueprint edits", () => {
  it("removing a task removes the dependencies on it and keeps every other field", () => {
    const changed = removeTasks(blueprint, new Set(["a"]));
    expect(changed.tasks).toEqual([
      { id: "b", type: "shell.run", params: [] },
      { id: "c", type: "system.end", depends_on: [{ id: "b", type: "FS" }] },
    ]);
    expect(changed.id).toBe("bp");
  });

  it("a dependency takes the type chosen, and only that dependency", () => {
    const changed = setDependencyType(blueprint, "a", "b", "SS");
    expect(changed.tasks[1]?.depends_on).toEqual([{ id: "a", type: "SS" }]);
    expect(changed.tasks[2]).toBe(blueprint.tasks[2]);
    expect(setDependencyType(blueprint, "a", "c", "FF").tasks[2]?.depends_on).toEqual([
      { id: "a", type: "FF" },
      { id: "b", type: "FS" },
    ]);
  });

  it("bridges over removed tasks: what waited for one waits for what it waited for", () => {
    const chain: Blueprint = {
      tasks: [
        { id: "a", type: "system.start" },
        { id: "b", type: "shell.run", depends_on: [{ id: "a", type: "FS" }] },
        { id: "c", type: "shell.run", depends_on: [{ id: "b", type: "FS" }] },
        { id: "d", type: "system.end", depends_on: [{ id: "c", type: "FS" }, { id: "b", type: "SS" }] },
      ],
    };
    // b and c out: d waits for a; its SS dependency on b says nothing of a and just goes.
    const bridged = removeTasks(bridgeOver(chain, new Set(["b", "c"])), new Set(["b", "c"]));
    expect(bridged.tasks.map((t) => [t.id, t.depends_on ?? []])).toEqual([
      ["a", []],
      ["d", [{ id: "a", type: "FS" }]],
    ]);
    expect(bridgeOver(chain, new Set(["d"]))).toBe(chain);
  });

  it("disconnecting leaves the blueprint unchanged when there is no such dependency", () => {
    expect(disconnect(blueprint, "c", "a")).toBe(blueprint);
    expect(disconnect(blueprint, "a", "b").tasks[1]).toEqual({ id: "b", type: "shell.run", params: [] });
  });
});

describe("renaming a task", () => {
  const scoped: Blueprint = {
    tasks: [
      { id: "a", type: "system.start" },
      { id: "loop", type: "shell.run", scope_start: { name: "l" }, depends_on: [{ id: "a", type: "FS" }] },
      { id: "body", type: "shell.run", depends_on: [{ id: "loop", type: "SS", lag: 1 }] },
      { id: "close", type: "shell.run", scope_end: "loop", depends_on: [{ id: "body", type: "FS" }] },
    ],
  };

  it("renames the dependencies on it and the scope_end that closes its scope", () => {
    const renamed = renameTask(scoped, "loop", "repeat");
    if ("error" in renamed) throw new Error(renamed.error);
    expect(renamed.blueprint.tasks.map((t) => t.id)).toEqual(["a", "repeat", "body", "close"]);
    expect(renamed.blueprint.tasks[2]?.depends_on).toEqual([{ id: "repeat", type: "SS", lag: 1 }]);
    expect(renamed.blueprint.tasks[3]?.scope_end).toBe("repeat");
    expect(renamed.blueprint.tasks[1]?.scope_start).toEqual({ name: "l" });
  });

  it("refuses an id another task has, and an empty one, saying why", () => {
    expect(renameTask(scoped, "loop", "body")).toEqual({ error: "another task is already called body" });
    expect(renameTask(scoped, "loop", " ")).toEqual({ error: "a task needs an id" });
    expect(renameTask(scoped, "nope", "x")).toEqual({ error: "there is no task nope" });
  });

  it("to its own id changes nothing", () => {
    expect(renameTask(scoped, "loop", "loop")).toEqual({ blueprint: scoped });
  });
});

describe("task fields and io rows", () => {
  it("an empty condition removes the key; setting the same value answers the same blueprint", () => {
    const withCondition = setTaskField(blueprint, "b", "condition", "x > 1");
    expect(withCondition.tasks[1]?.condition).toBe("x > 1");
    expect(setTaskField(withCondition, "b", "condition", "x > 1")).toBe(withCondition);
    expect("condition" in (setTaskField(withCondition, "b", "condition", "").tasks[1] ?? {})).toBe(false);
  });

  it("adds rows with free names, edits one key, and removes the list with its last row", () => {
    let b = addIo(blueprint, "b", "inputs");
    b = addIo(b, "b", "inputs");
    b = addIo(b, "b", "inputs", "count");
    expect((b.tasks[1]?.inputs as { name: string }[]).map((i) => i.name)).toEqual(["input_1", "input_2", "count"]);
    b = updateIo(b, "b", "inputs", 2, (io) => withIoKey(io, "get_from", "total"));
    expect((b.tasks[1]?.inputs as unknown[])[2]).toEqual({ name: "count", get_from: "total" });
    b = updateIo(b, "b", "inputs", 2, (io) => withIoKey(io, "get_from", ""));
    expect((b.tasks[1]?.inputs as unknown[])[2]).toEqual({ name: "count" });
    b = removeIo(removeIo(removeIo(b, "b", "inputs", 0), "b", "inputs", 0), "b", "inputs", 0);
    expect("inputs" in (b.tasks[1] ?? {})).toBe(false);
  });
});

describe("param values typed as JSON", () => {
  it("parses JSON of every kind, and nothing typed is no value", () => {
    expect(parseJsonValue("3")).toEqual({ value: 3 });
    expect(parseJsonValue('{"static": "x"}')).toEqual({ value: { static: "x" } });
    expect(parseJsonValue('"text"')).toEqual({ value: "text" });
    expect(parseJsonValue("  ")).toEqual({ value: undefined });
  });

  it("refuses text that is not JSON, saying so", () => {
    const parsed = parseJsonValue("echo hi");
    expect("error" in parsed && parsed.error.startsWith("not JSON")).toBe(true);
    expect("error" in parseJsonValue("{")).toBe(true);
  });
});

describe("params by name", () => {
  const task = (b: Blueprint) => b.tasks.find((t) => t.id === "b");

  it("adds a param as a {name, value} row, changes it in place, and removes it when cleared", () => {
    let b = setParam(blueprint, "b", "duration", 2);
    expect(task(b)?.params).toEqual([{ name: "duration", value: 2 }]);
    b = setParam(b, "b", "cwd", "/tmp");
    b = setParam(b, "b", "duration", 5);
    expect(task(b)?.params).toEqual([
      { name: "duration", value: 5 },
      { name: "cwd", value: "/tmp" },
    ]);
    b = setParam(b, "b", "duration", undefined);
    expect(task(b)?.params).toEqual([{ name: "cwd", value: "/tmp" }]);
    b = setParam(b, "b", "cwd", undefined);
    expect(task(b) && "params" in task(b)!).toBe(false);
  });

  it("keeps the other keys of a row and answers the same blueprint when nothing changes", () => {
    const described = setTaskField(blueprint, "b", "params", [{ name: "cwd", value: "/", description: "where" }]);
    expect(task(setParam(described, "b", "cwd", "/srv"))?.params).toEqual([{ name: "cwd", value: "/srv", description: "where" }]);
    expect(setParam(described, "b", "cwd", "/")).toBe(described);
    expect(setParam(described, "b", "other", undefined)).toBe(described);
  });
});
