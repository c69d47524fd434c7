import { describe, expect, it } from "vitest";
import type { Blueprint, Task } from "../blueprint";
import { NODE_HEIGHT, NODE_WIDTH } from "../store/positions";
import { fitInOrder, layered } from "./layered";

const task = (id: string, ...deps: string[]): Task => ({
  id,
  type: "shell.run",
  ...(deps.length > 0 ? { depends_on: deps.map((d) => ({ id: d, type: "FS" as const })) } : {}),
});

/** A diamond, two lanes after it, and a late task that depends on nothing but feeds the end. */
const blueprint: Blueprint = {
  tasks: [
    task("start"),
    task("left", "start"),
    task("right", "start"),
    task("join", "left", "right"),
    task("a1", "join"),
    task("a2", "a1"),
    task("b1", "join"),
    task("late"),
    task("end", "a2", "b1", "late"),
  ],
};

describe("the layered layout", () => {
  it("flows left to right when asked: every task right of what it depends on, none on another", () => {
    const at = layered(blueprint, "right");
    for (const t of blueprint.tasks) {
      for (const d of t.depends_on ?? []) expect(at[t.id]!.x, `${t.id} right of ${d.id}`).toBeGreaterThan(at[d.id]!.x + NODE_WIDTH);
    }
    const all = Object.entries(at);
    for (const [a, p] of all) {
      for (const [b, q] of all) {
        const overlap = a !== b && Math.abs(p.x - q.x) < NODE_WIDTH && Math.abs(p.y - q.y) < NODE_HEIGHT;
        expect(overlap, `${a} and ${b} overlap`).toBe(false);
      }
    }
  });

  it("places every task below the tasks it depends on, and no two tasks on top of each other", () => {
    const at = layered(blueprint);
    expect(Object.keys(at).sort()).toEqual(blueprint.tasks.map((t) => t.id).sort());
    for (const t of blueprint.tasks) {
      for (const d of t.depends_on ?? []) expect(at[t.id]!.y, `${t.id} below ${d.id}`).toBeGreaterThan(at[d.id]!.y);
    }
    const all = Object.entries(at);
    for (const [a, p] of all) {
      for (const [b, q] of all) {
        const overlap = a !== b && Math.abs(p.x - q.x) < NODE_WIDTH && Math.abs(p.y - q.y) < NODE_HEIGHT;
        expect(overlap, `${a} and ${b} overlap`).toBe(false);
      }
    }
  });

  it("puts a task nothing comes before just above the task that needs it", () => {
    const at = layered(blueprint);
    expect(at["late"]!.y).toBe(at["a2"]!.y);
    expect(at["start"]!.y).toBe(0);
  });

  it("lays out a blueprint with a cycle (being edited) rather than failing", () => {
    const cyclic: Blueprint = { tasks: [task("a", "c"), task("b", "a"), task("c", "b"), task("d", "c")] };
    const at = layered(cyclic);
    expect(Object.keys(at)).toHaveLength(4);
    expect(at["d"]!.y).toBeGreaterThan(at["c"]!.y);
  });

  it("keeps the order and the gap of a layer nearest where its tasks want to be", () => {
    expect(fitInOrder([0, 300, 600], 100)).toEqual([0, 300, 600]);
    expect(fitInOrder([0, 0], 100)).toEqual([-50, 50]);
    expect(fitInOrder([500, 0, 1000], 100)).toEqual([200, 300, 1000]);
  });
});
