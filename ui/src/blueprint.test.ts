import { describe, expect, it } from "vitest";
import { cycleDependencyType, disconnect, removeTasks, type Blueprint } from "./blueprint";

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

  it("a dependency's type cycles FS, SS, FF, SF and back", () => {
    const seen = [];
    let b = blueprint;
    for (let i = 0; i < 4; i++) {
      b = cycleDependencyType(b, "a", "b");
      seen.push(b.tasks[1]?.depends_on?.[0]?.type);
    }
    expect(seen).toEqual(["SS", "FF", "SF", "FS"]);
    expect(cycleDependencyType(blueprint, "a", "c").tasks[2]?.depends_on?.[0]?.type).toBe("FS");
  });

  it("disconnecting leaves the blueprint unchanged when there is no such dependency", () => {
    expect(disconnect(blueprint, "c", "a")).toBe(blueprint);
    expect(disconnect(blueprint, "a", "b").tasks[1]).toEqual({ id: "b", type: "shell.run", params: [] });
  });
});
