import { describe, expect, it } from "vitest";
import type { FileReport } from "../backend/generated";
import type { Blueprint } from "../blueprint";
import { NODE_HEIGHT, NODE_WIDTH } from "./graph";
import { around, cardIn, cardsBounds, covers, drawOverview, overviewScene, redrawChanged, taskAt, viewRect, type Palette } from "./overview";
import type { Region } from "./scopes";

const blueprint: Blueprint = {
  tasks: [
    { id: "start", type: "system.start" },
    { id: "a", type: "shell.run", depends_on: [{ id: "start", type: "FS" }] },
    { id: "c", type: "system.composite", depends_on: [{ id: "a", type: "FS" }] },
    { id: "far", type: "shell.run", depends_on: [{ id: "a", type: "SS" }] },
  ],
};
const positions = { start: { x: 0, y: 0 }, a: { x: 0, y: 100 }, c: { x: 0, y: 200 }, far: { x: 5000, y: 5000 } };
const report: FileReport = {
  file: "",
  valid: false,
  server_accepts: false,
  diagnostics: [
    { code: "cycle", severity: "warning", task_id: "a", path: "$", message: "", server_rejects: false },
    { code: "cycle", severity: "error", task_id: "a", path: "$", message: "", server_rejects: true },
    { code: "cycle", severity: "warning", task_id: "c", path: "$", message: "", server_rejects: false },
  ],
};
const palette: Palette = {
  task: "T", terminal: "M", composite: "C", running: "R", succeeded: "S", failed: "F", skipped: "K",
  border: "b", error: "e", warning: "w", edge: "g", selected: "x", while: "W", retry: "Y", skip: "P",
};

/** A 2D context that writes down what is drawn: each fill and stroke with its rectangles or segments. */
function recorder() {
  const drawn: { op: "fill" | "stroke"; style: string; shapes: number[][]; alpha: number; dashed: boolean }[] = [];
  let shapes: number[][] = [];
  let dashed = false;
  const ctx = {
    fillStyle: "",
    strokeStyle: "",
    lineWidth: 1,
    globalAlpha: 1,
    setLineDash: (dashes: number[]) => (dashed = dashes.length > 0),
    setTransform: () => {},
    clearRect: () => {},
    beginPath: () => (shapes = []),
    rect: (x: number, y: number, w: number, h: number) => shapes.push([x, y, w, h]),
    moveTo: (x: number, y: number) => shapes.push([x, y]),
    lineTo: (x: number, y: number) => shapes.at(-1)!.push(x, y),
    fill: () => drawn.push({ op: "fill", style: ctx.fillStyle, shapes, alpha: ctx.globalAlpha, dashed: false }),
    stroke: () => drawn.push({ op: "stroke", style: ctx.strokeStyle, shapes, alpha: ctx.globalAlpha, dashed }),
  };
  return { ctx: ctx as unknown as CanvasRenderingContext2D, drawn };
}

describe("the overview of a large blueprint", () => {
  it("fills each task by its kind or run state and outlines it by its worst problem", () => {
    const scene = overviewScene(blueprint, positions, report, new Set(["c"]));
    expect(scene.tasks.map((t) => [t.id, t.fill, t.stroke, t.selected])).toEqual([
      ["start", "terminal", "border", false],
      ["a", "task", "error", false],
      ["c", "composite", "warning", true],
      ["far", "task", "border", false],
    ]);
    const run = overviewScene(blueprint, positions, null, new Set(), { a: { state: "FAILED", attempts: 2 }, c: { state: "PENDING", attempts: 0 } });
    expect(run.tasks.map((t) => t.fill)).toEqual(["terminal", "failed", "composite", "task"]);
    // From the bottom middle of a task to the top middle of the one depending on it.
    expect([...run.lines.slice(0, 4)]).toEqual([NODE_WIDTH / 2, NODE_HEIGHT, NODE_WIDTH / 2, 100]);
    expect(run.lines.length).toBe(12);
  });

  it("draws only what is in view, one path per colour, the selection outlined", () => {
    const scene = overviewScene(blueprint, positions, report, new Set(["c"]));
    const { ctx, drawn } = recorder();
    const shown = drawOverview(ctx, scene, [10, 10, 0.5], { width: 400, height: 300, dpr: 1 }, palette);
    expect(shown).toEqual({ tasks: 3, scopes: 0 });
    const fills = drawn.filter((d) => d.op === "fill").map((d) => [d.style, d.shapes.length]);
    expect(fills).toEqual([
      ["M", 1],
      ["T", 1],
      ["C", 1],
    ]);
    // The line to far crosses the view though far is out of it.
    const edges = drawn.find((d) => d.style === "g")!;
    expect(edges.shapes).toHaveLength(3);
    expect(drawn.at(-1)).toMatchObject({ op: "stroke", style: "x" });
    expect(drawn.at(-1)!.shapes).toHaveLength(1);
    // Far from everything: nothing is drawn.
    drawn.length = 0;
    expect(drawOverview(ctx, scene, [-6000, -100, 1], { width: 400, height: 300, dpr: 1 }, palette).tasks).toBe(0);
    expect(drawn.flatMap((d) => d.shapes)).toEqual([]);
  });

  it("draws again only the cards whose colours changed, when nothing else did", () => {
    const size = { width: 400, height: 300, dpr: 1 };
    const view = [10, 10, 0.5] as const;
    const pending = overviewScene(blueprint, positions, null, new Set(), { a: { state: "PENDING", attempts: 0 } });
    const failed = overviewScene(blueprint, positions, null, new Set(), { a: { state: "FAILED", attempts: 1 } }, [], null, pending.lines);
    const { ctx, drawn } = recorder();
    expect(redrawChanged(ctx, pending, failed, view, size, palette)).toBe(1);
    expect(drawn.map((d) => [d.op, d.shapes])).toEqual([
      ["fill", [[positions.a!.x, positions.a!.y, NODE_WIDTH, NODE_HEIGHT]]],
      ["stroke", [[positions.a!.x, positions.a!.y, NODE_WIDTH, NODE_HEIGHT]]],
    ]);
    // Anything else changed (the lines made again, a selection): drawn whole.
    const made = overviewScene(blueprint, positions, null, new Set(), { a: { state: "FAILED", attempts: 1 } });
    expect(redrawChanged(ctx, pending, made, view, size, palette)).toBeNull();
    const chosen = overviewScene(blueprint, positions, null, new Set(["a"]), { a: { state: "FAILED", attempts: 1 } }, [], null, pending.lines);
    expect(redrawChanged(ctx, pending, chosen, view, size, palette)).toBeNull();
  });

  it("draws the scopes in view behind the tasks, tinted by policy, the selected one solid", () => {
    const region = (start: string, policy: Region["policy"], depth: number, x: number): Region => ({
      start, policy, depth, members: [start], label: start, inner: 0, x, y: 0, width: 100, height: 100,
    });
    const regions = [region("inner", "skip", 1, 10), region("outer", "while", 0, 0), region("far", "retry", 0, 9000)];
    const scene = overviewScene(blueprint, positions, null, new Set(), undefined, regions, "inner");
    expect(scene.scopes.map((s) => [s.policy, s.selected])).toEqual([
      ["while", false],
      ["retry", false],
      ["skip", true],
    ]);
    const { ctx, drawn } = recorder();
    expect(drawOverview(ctx, scene, [10, 10, 0.5], { width: 400, height: 300, dpr: 1 }, palette).scopes).toBe(2);
    // The outer scope, then the inner one over it; the far one is out of view.
    expect(drawn.slice(0, 4).map((d) => [d.op, d.style, d.alpha < 1, d.dashed])).toEqual([
      ["fill", "W", true, false],
      ["stroke", "W", false, true],
      ["fill", "P", true, false],
      ["stroke", "P", false, false],
    ]);
    expect(drawn.slice(4).some((d) => d.alpha < 1 || d.dashed), "the tasks and edges after them are drawn plain").toBe(false);
  });

  it("finds the task a click lands on, the one on top where two overlap", () => {
    const overlapping = { ...positions, c: { x: 10, y: 110 } };
    const scene = overviewScene(blueprint, overlapping, null, new Set());
    expect(taskAt(scene, { x: 5, y: 105 })).toBe("a");
    expect(taskAt(scene, { x: 15, y: 115 })).toBe("c");
    expect(taskAt(scene, { x: NODE_WIDTH + 20, y: 5 })).toBeNull();
  });

  it("knows which part of the flow a viewport shows", () => {
    expect(viewRect([100, 50, 2], 800, 600)).toEqual([-50, -25, 350, 275]);
  });

  it("slices a run's canvas around the view, taken again once the view leaves it or shrinks well inside it", () => {
    const view = viewRect([0, 0, 1], 800, 600);
    const cover = around(view);
    expect(cover).toEqual([-800, -600, 1600, 1200]);
    expect(covers(cover, viewRect([-700, 500, 1], 800, 600))).toBe(true);
    expect(covers(cover, viewRect([-900, 0, 1], 800, 600)), "panned more than a view away").toBe(false);
    expect(covers(cover, viewRect([0, 0, 0.5], 800, 600)), "zoomed out, still inside").toBe(true);
    expect(covers(cover, viewRect([0, 0, 0.4], 800, 600)), "zoomed out past it").toBe(false);
    expect(covers(cover, viewRect([0, 0, 4], 800, 600)), "zoomed in: the slice would hold far more than is in sight").toBe(false);
    const held = blueprint.tasks.filter((t) => cardIn(positions[t.id as keyof typeof positions], cover)).map((t) => t.id);
    expect(held).toEqual(["start", "a", "c"]);
    expect(cardIn({ x: -800 - NODE_WIDTH, y: 0 }, cover), "a card touching the edge").toBe(true);
    expect(cardIn({ x: -801 - NODE_WIDTH, y: 0 }, cover)).toBe(false);
  });

  it("fits by the positions of every task, held as a node or not", () => {
    expect(cardsBounds(blueprint, positions)).toEqual({ x: 0, y: 0, width: 5000 + NODE_WIDTH, height: 5000 + NODE_HEIGHT });
    expect(cardsBounds({ tasks: [{ id: "lost", type: "shell.run" }] }, {}), "a task with no position sits at the origin").toEqual({
      x: 0,
      y: 0,
      width: NODE_WIDTH,
      height: NODE_HEIGHT,
    });
    expect(cardsBounds({ tasks: [] }, {})).toEqual({ x: 0, y: 0, width: NODE_WIDTH, height: NODE_HEIGHT });
  });
});
