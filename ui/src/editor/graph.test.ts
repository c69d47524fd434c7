import { describe, expect, it } from "vitest";
import type { Blueprint } from "../blueprint";
import { NODE_HEIGHT } from "../store/positions";
import { dependencyAt, reusingEdges, reusingNodes } from "./graph";

const blueprint: Blueprint = {
  tasks: [
    { id: "start", type: "system.start" },
    { id: "a", type: "shell.run", depends_on: [{ id: "start", type: "FS" }] },
    { id: "b", type: "shell.run", depends_on: [{ id: "a", type: "SS" }] },
  ],
};
const positions = { start: { x: 0, y: 0 }, a: { x: 0, y: 100 }, b: { x: 0, y: 200 } };

describe("the canvas's nodes and edges on a change", () => {
  it("keeps the node object of every task a move did not touch, so that only the moved one draws again", () => {
    const toNodes = reusingNodes();
    const before = toNodes(blueprint, positions, null, null);
    const after = toNodes(blueprint, { ...positions, a: { x: 40, y: 100 } }, null, null);
    expect(after[0]).toBe(before[0]);
    expect(after[2]).toBe(before[2]);
    expect(after[1]).not.toBe(before[1]);
    expect(after[1]!.position).toEqual({ x: 40, y: 100 });
  });

  it("draws a node again when it is selected or the facade finds a problem in it", () => {
    const toNodes = reusingNodes();
    const before = toNodes(blueprint, positions, null, null);
    const selected = toNodes(blueprint, positions, null, "b");
    expect(selected[2]!.selected).toBe(true);
    expect(selected[1]).toBe(before[1]);
    const report = { diagnostics: [{ task_id: "a", severity: "error" }] } as never;
    const checked = toNodes(blueprint, positions, report, "b");
    expect(checked[1]!.data.errors).toBe(1);
    expect(checked[2]).toBe(selected[2]);
  });

  it("draws a run's node again when its state, its attempts, where it holds or its breakpoint change", () => {
    const toNodes = reusingNodes();
    const pending = { state: "PENDING", attempts: 0 } as const;
    const marks = { start: pending, a: pending, b: pending };
    const before = toNodes(blueprint, positions, null, null, marks);
    const held = toNodes(blueprint, positions, null, null, { ...marks, b: { ...pending, held: "before" } });
    expect(held[2]!.data.run?.held).toBe("before");
    expect(held[1]).toBe(before[1]);
    const released = toNodes(blueprint, positions, null, null, marks);
    expect(released[2]!.data.run?.held).toBeUndefined();
    expect(released[1]).toBe(before[1]);
    const marked = toNodes(blueprint, positions, null, null, { ...marks, b: { ...pending, breakpoint: "after" } });
    expect(marked[2]!.data.run?.breakpoint).toBe("after");
    expect(marked[1]).toBe(before[1]);
  });

  it("marks every task of a multiple selection and draws again only the nodes whose mark changed", () => {
    const toNodes = reusingNodes();
    const before = toNodes(blueprint, positions, null, new Set(["a"]));
    const after = toNodes(blueprint, positions, null, new Set(["a", "b"]));
    expect(after.map((n) => n.selected)).toEqual([false, true, true]);
    expect(after[0]).toBe(before[0]);
    expect(after[1]).toBe(before[1]);
    expect(after[2]).not.toBe(before[2]);
  });

  it("keeps edges across a selection elsewhere, names the types other than FS, and no type when zoomed out", () => {
    const toEdges = reusingEdges();
    const before = toEdges(blueprint, null);
    expect(before.map((e) => e.label)).toEqual([undefined, "SS"]);
    const selected = toEdges(blueprint, "a->b");
    expect(selected[0]).toBe(before[0]);
    expect(selected[1]!.selected).toBe(true);
    const zoomedOut = toEdges(blueprint, "a->b", false);
    expect(zoomedOut.map((e) => e.label)).toEqual([undefined, undefined]);
  });
});

describe("the dependency under a drop", () => {
  it("is the nearest line between two cards within reach, and none on a card or far from every line", () => {
    expect(dependencyAt(blueprint, positions, { x: 100, y: 78 })).toEqual({ from: "start", to: "a" });
    expect(dependencyAt(blueprint, positions, { x: 110, y: 180 })).toEqual({ from: "a", to: "b" });
    expect(dependencyAt(blueprint, positions, { x: 130, y: 78 })).toBeNull();
    expect(dependencyAt(blueprint, positions, { x: 100, y: 120 }), "on a's card").toBeNull();
    expect(dependencyAt(blueprint, { start: positions.start }, { x: 100, y: 78 }), "a task not placed yet").toBeNull();
  });

  it("follows the lines from side to side in a layout that flows right", () => {
    const across = { start: { x: 0, y: 0 }, a: { x: 300, y: 0 }, b: { x: 600, y: 0 } };
    const middle = NODE_HEIGHT / 2;
    expect(dependencyAt(blueprint, across, { x: 250, y: middle }, "right")).toEqual({ from: "start", to: "a" });
    expect(dependencyAt(blueprint, across, { x: 550, y: middle }, "right")).toEqual({ from: "a", to: "b" });
    expect(dependencyAt(blueprint, across, { x: 850, y: middle }, "right"), "past the last card").toBeNull();
  });
});
