// What the zoomed-out canvas of a large blueprint draws on one <canvas> (editor/Overview.tsx):
// a rectangle per task, filled by its kind (or its run state) and outlined by its problems, a
// line per dependency, and behind them a tinted rectangle per scope. Built once per change of the blueprint, its positions or its marks; drawn
// on every frame of a pan, culled to the view; and which task a click lands on.
import type { FileReport } from "../backend/generated";
import type { Blueprint } from "../blueprint";
import { kindOf } from "../nodes/registry";
import type { Positions } from "../store/positions";
import { NODE_HEIGHT, NODE_WIDTH, type RunMarks } from "./graph";
import type { Region } from "./scopes";

/** Which colour a rectangle takes: a name of the palette. */
export type Fill = "task" | "terminal" | "composite" | "running" | "succeeded" | "failed" | "skipped";
export type Stroke = "border" | "error" | "warning";

export type OverviewScene = {
  /** Per task: x, y of its top-left corner (flow coordinates). */
  tasks: { id: string; x: number; y: number; fill: Fill; stroke: Stroke; selected: boolean }[];
  /** Per dependency: x1, y1, x2, y2, from the bottom middle of one task to the top middle of the other. */
  lines: Float64Array;
  /** Per scope, outermost first: its rectangle (flow coordinates) and policy. */
  scopes: { x: number; y: number; width: number; height: number; policy: ScopePolicy; selected: boolean }[];
};

type ScopePolicy = Region["policy"];
export type Palette = Record<Fill | Stroke | "edge" | "selected" | ScopePolicy, string>;

const RUN_FILLS: Partial<Record<string, Fill>> = {
  RUNNING: "running",
  SUCCEEDED: "succeeded",
  FAILED: "failed",
  SKIPPED: "skipped",
  SKIP_REQUESTED: "skipped",
};

export function overviewScene(
  blueprint: Blueprint,
  positions: Positions,
  report: FileReport | null,
  selection: ReadonlySet<string>,
  marks?: RunMarks,
  regions: readonly Region[] = [],
  selectedScope: string | null = null,
  lines: Float64Array = overviewLines(blueprint, positions),
): OverviewScene {
  const problems = new Map<string, Stroke>();
  for (const d of report?.diagnostics ?? []) {
    if (!d.task_id) continue;
    if (d.severity === "error") problems.set(d.task_id, "error");
    else if (d.severity === "warning" && !problems.has(d.task_id)) problems.set(d.task_id, "warning");
  }
  const tasks = blueprint.tasks.map((task) => {
    const at = positions[task.id] ?? { x: 0, y: 0 };
    const kind = kindOf(task.type);
    const runFill = marks ? RUN_FILLS[marks[task.id]?.state ?? ""] : undefined;
    const fill: Fill = runFill ?? (kind === "terminal" || kind === "composite" ? kind : "task");
    return { id: task.id, x: at.x, y: at.y, fill, stroke: problems.get(task.id) ?? "border", selected: selection.has(task.id) };
  });
  const scopes = [...regions]
    .sort((a, b) => a.depth - b.depth)
    .map(({ x, y, width, height, policy, start }) => ({ x, y, width, height, policy, selected: start === selectedScope }));
  return { tasks, lines, scopes };
}

/**
 * The overview's dependency lines: they change with the blueprint and its layout only, so a run
 * whose states change many times a second (time travel) does not make them again each time.
 */
export function overviewLines(blueprint: Blueprint, positions: Positions): Float64Array {
  const lines: number[] = [];
  for (const task of blueprint.tasks) {
    const to = positions[task.id];
    for (const d of task.depends_on ?? []) {
      const from = positions[d.id];
      if (!from || !to) continue;
      lines.push(from.x + NODE_WIDTH / 2, from.y + NODE_HEIGHT, to.x + NODE_WIDTH / 2, to.y);
    }
  }
  return Float64Array.from(lines);
}

/** The part of the flow in view: left, top, right, bottom. */
export type ViewRect = [number, number, number, number];

/** The flow rectangle a viewport of `width` × `height` shows at `transform` ([x, y, zoom]). */
export function viewRect(transform: readonly [number, number, number], width: number, height: number): ViewRect {
  const [x, y, zoom] = transform;
  return [-x / zoom, -y / zoom, (width - x) / zoom, (height - y) / zoom];
}

/** The rectangle around `view` that stretches one view further on every side. */
export function around(view: ViewRect): ViewRect {
  const [left, top, right, bottom] = view;
  const [w, h] = [right - left, bottom - top];
  return [left - w, top - h, right + w, bottom + h];
}

/**
 * Whether a slice taken `around` an earlier view still serves `view`: the view lies inside it,
 * and it is not far larger than `around(view)` would be (zoomed in from a wide view, it would
 * hold many tasks out of sight).
 */
export function covers(cover: ViewRect, view: ViewRect): boolean {
  const inside = view[0] >= cover[0] && view[1] >= cover[1] && view[2] <= cover[2] && view[3] <= cover[3];
  return inside && cover[2] - cover[0] <= 4 * (view[2] - view[0]);
}

/** Whether a task card whose top-left corner is at `at` overlaps `rect`. */
export function cardIn(at: { x: number; y: number }, rect: ViewRect): boolean {
  return at.x + NODE_WIDTH >= rect[0] && at.x <= rect[2] && at.y + NODE_HEIGHT >= rect[1] && at.y <= rect[3];
}

/** The flow rectangle that holds every task card of `blueprint` (a card at the origin when it has none). */
export function cardsBounds(blueprint: Blueprint, positions: Positions): { x: number; y: number; width: number; height: number } {
  let [left, top, right, bottom] = [Infinity, Infinity, -Infinity, -Infinity];
  for (const task of blueprint.tasks) {
    const at = positions[task.id] ?? { x: 0, y: 0 };
    [left, top] = [Math.min(left, at.x), Math.min(top, at.y)];
    [right, bottom] = [Math.max(right, at.x + NODE_WIDTH), Math.max(bottom, at.y + NODE_HEIGHT)];
  }
  if (left === Infinity) return { x: 0, y: 0, width: NODE_WIDTH, height: NODE_HEIGHT };
  return { x: left, y: top, width: right - left, height: bottom - top };
}

/** Fills and outlines `cards`, one path per colour. */
function paintCards(ctx: CanvasRenderingContext2D, cards: OverviewScene["tasks"], zoom: number, palette: Palette): void {
  const byColour = <K extends string>(key: (t: OverviewScene["tasks"][number]) => K) => {
    const groups = new Map<K, OverviewScene["tasks"]>();
    for (const t of cards) {
      const k = key(t);
      const group = groups.get(k);
      if (group) group.push(t);
      else groups.set(k, [t]);
    }
    return groups;
  };
  for (const [fill, group] of byColour((t) => t.fill)) {
    ctx.beginPath();
    for (const t of group) ctx.rect(t.x, t.y, NODE_WIDTH, NODE_HEIGHT);
    ctx.fillStyle = palette[fill];
    ctx.fill();
  }
  for (const [stroke, group] of byColour((t) => t.stroke)) {
    ctx.beginPath();
    for (const t of group) ctx.rect(t.x, t.y, NODE_WIDTH, NODE_HEIGHT);
    ctx.lineWidth = (stroke === "border" ? 1 : 2) / zoom;
    ctx.strokeStyle = palette[stroke];
    ctx.stroke();
  }
}

/** Draws the scene; answers how many tasks and scopes were in view. */
export function drawOverview(
  ctx: CanvasRenderingContext2D,
  scene: OverviewScene,
  transform: readonly [number, number, number],
  size: { width: number; height: number; dpr: number },
  palette: Palette,
): { tasks: number; scopes: number } {
  const { width, height, dpr } = size;
  const [x, y, zoom] = transform;
  const [left, top, right, bottom] = viewRect(transform, width, height);
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, width, height);
  ctx.setTransform(dpr * zoom, 0, 0, dpr * zoom, dpr * x, dpr * y);
  const scopes = drawScopes(ctx, scene.scopes, [left, top, right, bottom], zoom, palette);
  // One path per colour: a few fills and strokes a frame, not one per task.
  ctx.beginPath();
  const { lines } = scene;
  for (let i = 0; i < lines.length; i += 4) {
    const [x1, y1, x2, y2] = [lines[i]!, lines[i + 1]!, lines[i + 2]!, lines[i + 3]!];
    if (Math.max(x1, x2) < left || Math.min(x1, x2) > right || Math.max(y1, y2) < top || Math.min(y1, y2) > bottom) continue;
    ctx.moveTo(x1, y1);
    ctx.lineTo(x2, y2);
  }
  ctx.lineWidth = 1 / zoom;
  ctx.strokeStyle = palette.edge;
  ctx.stroke();

  const view: ViewRect = [left, top, right, bottom];
  const shown = scene.tasks.filter((t) => cardIn(t, view));
  paintCards(ctx, shown, zoom, palette);
  const selected = shown.filter((t) => t.selected);
  if (selected.length > 0) {
    ctx.beginPath();
    const gap = 4 / zoom;
    for (const t of selected) ctx.rect(t.x - gap, t.y - gap, NODE_WIDTH + 2 * gap, NODE_HEIGHT + 2 * gap);
    ctx.lineWidth = 2 / zoom;
    ctx.strokeStyle = palette.selected;
    ctx.stroke();
  }
  return { tasks: shown.length, scopes };
}

/**
 * Draws on the frame `drawOverview` painted for `before` what `after` changed, when only some
 * tasks' colours changed (a run's states: time travel changes them every frame): each such
 * task's card filled and outlined again over the old one, which covers what lay under it as a
 * full draw does, one path per colour as a full draw makes them. Answers how many it drew
 * again, or null when a full draw is wanted (anything else changed, or a changed task is
 * selected).
 */
export function redrawChanged(
  ctx: CanvasRenderingContext2D,
  before: OverviewScene,
  after: OverviewScene,
  transform: readonly [number, number, number],
  size: { width: number; height: number; dpr: number },
  palette: Palette,
): number | null {
  if (before.lines !== after.lines || before.tasks.length !== after.tasks.length) return null;
  const sameScopes =
    before.scopes.length === after.scopes.length &&
    before.scopes.every((s, i) => {
      const t = after.scopes[i]!;
      return s.x === t.x && s.y === t.y && s.width === t.width && s.height === t.height && s.policy === t.policy && s.selected === t.selected;
    });
  if (!sameScopes) return null;
  const changed: OverviewScene["tasks"] = [];
  for (let i = 0; i < after.tasks.length; i++) {
    const [a, b] = [before.tasks[i]!, after.tasks[i]!];
    if (a.id !== b.id || a.x !== b.x || a.y !== b.y || a.selected !== b.selected) return null;
    if (a.fill === b.fill && a.stroke === b.stroke) continue;
    if (b.selected) return null;
    changed.push(b);
  }
  const [x, y, zoom] = transform;
  const view = viewRect(transform, size.width, size.height);
  ctx.setTransform(size.dpr * zoom, 0, 0, size.dpr * zoom, size.dpr * x, size.dpr * y);
  const shown = changed.filter((t) => cardIn(t, view));
  paintCards(ctx, shown, zoom, palette);
  return shown.length;
}

/**
 * The scopes' regions in view, as the canvas draws them zoomed in: tinted, dashed, the selected
 * one solid. Answers how many were in view.
 */
function drawScopes(
  ctx: CanvasRenderingContext2D,
  scopes: OverviewScene["scopes"],
  [left, top, right, bottom]: ViewRect,
  zoom: number,
  palette: Palette,
): number {
  let shown = 0;
  for (const s of scopes) {
    if (s.x > right || s.y > bottom || s.x + s.width < left || s.y + s.height < top) continue;
    shown += 1;
    ctx.beginPath();
    ctx.rect(s.x, s.y, s.width, s.height);
    ctx.globalAlpha = SCOPE_TINT;
    ctx.fillStyle = palette[s.policy];
    ctx.fill();
    ctx.globalAlpha = 1;
    ctx.setLineDash(s.selected ? [] : [6 / zoom, 4 / zoom]);
    ctx.lineWidth = (s.selected ? 2 : 1.5) / zoom;
    ctx.strokeStyle = palette[s.policy];
    ctx.stroke();
  }
  ctx.setLineDash([]);
  return shown;
}

/** How much of its policy's colour a scope's region takes (as `.scope-region` in styles.css). */
const SCOPE_TINT = 0.09;

/** The task drawn at a flow point, the one drawn last (on top) when tasks overlap. */
export function taskAt(scene: OverviewScene, point: { x: number; y: number }): string | null {
  for (let i = scene.tasks.length - 1; i >= 0; i--) {
    const t = scene.tasks[i]!;
    if (point.x >= t.x && point.x <= t.x + NODE_WIDTH && point.y >= t.y && point.y <= t.y + NODE_HEIGHT) return t.id;
  }
  return null;
}
