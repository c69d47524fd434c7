// Paints one frame of the run timeline on a 2D canvas: the row labels on the left, the time axis on
// top, and the bars of the rows in view over the bands of their scopes' iterations. It only
// paints: what is in view and where comes from model.ts, so a frame costs what it shows however
// long the session is.
import type { AttemptState } from "../../backend/generated";
import {
  ROW_HEIGHT,
  barEnd,
  rowLabel,
  ticks,
  timeToX,
  visibleBars,
  visibleIterations,
  visibleRows,
  type Bar,
  type IterationSpan,
  type TaskRow,
  type TimelineModel,
  type View,
} from "./model";

/** The height of the time axis above the rows. */
export const AXIS_HEIGHT = 26;
/** The width of the row labels' column. */
export const LABEL_WIDTH = 180;
/** How wide a bar must be to carry its attempt number. */
const NUMBER_MIN_PX = 26;
/** How wide an iteration must be for its label to be measured: narrower ones cannot hold one. */
const ITERATION_LABEL_MIN_PX = 24;
/** The least gap between two iteration ticks on a header. */
const TICK_MIN_GAP_PX = 3;
/** The space above and below a bar within its row. */
const BAR_INSET = 4;
/** How far a task's label is indented under its instance's header. */
const TASK_INDENT = 16;
const FONT = "12px system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif";
const HEADER_FONT = `600 ${FONT}`;
const NUMBER_FONT = "10px system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif";

export type Palette = Record<AttemptState, string> & {
  bg: string;
  panel: string;
  text: string;
  muted: string;
  border: string;
  accent: string;
  selected: string;
  /** The attempt number written on a bar: it must read on every state's colour. */
  onBar: string;
  /** The band behind every other iteration of a looped scope: light, since bars are drawn over it. */
  iteration: string;
  /** Over what came after time travel's moment. */
  veil: string;
};

/** The colours of the light theme, for when the stylesheet has not given one (as in a test). */
export const FALLBACK_PALETTE: Palette = {
  running: "#4c5fd5",
  succeeded: "#2f8f57",
  failed: "#c62f3b",
  cancelled: "#a86400",
  skipped: "#9aa1b5",
  unknown: "#7d849a",
  bg: "#f6f7fb",
  panel: "#ffffff",
  text: "#1c2033",
  muted: "#5d6478",
  border: "#d9dce6",
  accent: "#4c5fd5",
  selected: "#4c5fd5",
  onBar: "#ffffff",
  iteration: "rgba(76, 95, 213, 0.08)",
  veil: "rgba(93, 100, 120, 0.12)",
};

/**
 * The colours as the stylesheet sets them on `element` (timeline.css gives each state one, from
 * the app's variables). Read once per theme, since a computed style is too slow to ask per frame.
 */
export function readPalette(element: Element): Palette {
  const style = getComputedStyle(element);
  const read = (name: string, fallback: string) => style.getPropertyValue(name).trim() || fallback;
  return {
    running: read("--timeline-running", FALLBACK_PALETTE.running),
    succeeded: read("--timeline-succeeded", FALLBACK_PALETTE.succeeded),
    failed: read("--timeline-failed", FALLBACK_PALETTE.failed),
    cancelled: read("--timeline-cancelled", FALLBACK_PALETTE.cancelled),
    skipped: read("--timeline-skipped", FALLBACK_PALETTE.skipped),
    unknown: read("--timeline-unknown", FALLBACK_PALETTE.unknown),
    bg: read("--bg", FALLBACK_PALETTE.bg),
    panel: read("--panel", FALLBACK_PALETTE.panel),
    text: read("--text", FALLBACK_PALETTE.text),
    muted: read("--muted", FALLBACK_PALETTE.muted),
    border: read("--border", FALLBACK_PALETTE.border),
    accent: read("--accent", FALLBACK_PALETTE.accent),
    selected: read("--selected", FALLBACK_PALETTE.selected),
    onBar: read("--timeline-on-bar", FALLBACK_PALETTE.onBar),
    iteration: read("--timeline-iteration", FALLBACK_PALETTE.iteration),
    veil: read("--timeline-veil", FALLBACK_PALETTE.veil),
  };
}

export type Scene = {
  model: TimelineModel;
  view: View;
  nowMs: number;
  selected: Bar | null;
  palette: Palette;
  /** Whether to draw the line of the current time. */
  live: boolean;
  /** Time travel's moment: nothing after it is drawn, what ran then is drawn running up to it. */
  cursor?: number | null;
  /** The tasks (node keys) on the run's critical path, and those slower than usual. */
  marks?: { critical: ReadonlySet<string>; slow: ReadonlyMap<string, unknown> } | null;
  /** The canvas's size in CSS pixels and its device pixels per CSS pixel. */
  width: number;
  height: number;
  dpr: number;
};

/** `text` cut with an ellipsis to fit `width`. */
function fitText(ctx: CanvasRenderingContext2D, text: string, width: number): string {
  if (ctx.measureText(text).width <= width) return text;
  let kept = text.length;
  while (kept > 0 && ctx.measureText(`${text.slice(0, kept)}…`).width > width) kept -= 1;
  return `${text.slice(0, kept)}…`;
}

/** The top of row `r` on the canvas. */
function rowTop(scene: Scene, r: number): number {
  return AXIS_HEIGHT + r * ROW_HEIGHT - scene.view.scrollTop;
}

/**
 * Paints the frame on `ctx` and answers how many bars are in it. Without a context (a test's DOM
 * has none) nothing is painted but the count is still right, since it is what tests check.
 */
export function paint(ctx: CanvasRenderingContext2D | null, scene: Scene): number {
  const { model, view, nowMs, palette } = scene;
  const cursor = scene.cursor ?? null;
  const inView = visibleBars(model, view, nowMs);
  const bars = cursor === null ? inView : inView.filter((bar) => bar.start <= cursor);
  if (!ctx) return bars.length;
  ctx.setTransform(scene.dpr, 0, 0, scene.dpr, 0, 0);
  ctx.fillStyle = palette.panel;
  ctx.fillRect(0, 0, scene.width, scene.height);
  const { first, end } = visibleRows(model, view);

  ctx.fillStyle = palette.bg;
  for (let r = first; r < end; r++) {
    if (model.rows[r]!.kind === "instance") ctx.fillRect(0, rowTop(scene, r), scene.width, ROW_HEIGHT);
  }

  const axisTicks = ticks(view, model.startMs);
  ctx.save();
  ctx.beginPath();
  ctx.rect(LABEL_WIDTH, AXIS_HEIGHT, view.width, view.height);
  ctx.clip();
  const iterations = visibleIterations(model, view, nowMs);
  paintBands(ctx, scene, iterations);
  ctx.strokeStyle = palette.border;
  ctx.lineWidth = 1;
  ctx.beginPath();
  for (const tick of axisTicks) {
    const x = Math.round(LABEL_WIDTH + tick.x) + 0.5;
    ctx.moveTo(x, AXIS_HEIGHT);
    ctx.lineTo(x, scene.height);
  }
  ctx.stroke();
  paintBars(ctx, scene, bars);
  paintIterationMarks(ctx, scene, iterations);
  if (scene.live) {
    const x = Math.round(LABEL_WIDTH + timeToX(view, nowMs)) + 0.5;
    ctx.strokeStyle = palette.accent;
    ctx.setLineDash([4, 3]);
    ctx.beginPath();
    ctx.moveTo(x, AXIS_HEIGHT);
    ctx.lineTo(x, scene.height);
    ctx.stroke();
    ctx.setLineDash([]);
  }
  if (cursor !== null) paintCursor(ctx, scene, cursor);
  ctx.restore();

  paintLabels(ctx, scene, first, end);
  paintAxis(ctx, scene, axisTicks);
  return bars.length;
}

/** Time travel's moment: what came after it veiled, and a line at it down to the axis. */
function paintCursor(ctx: CanvasRenderingContext2D, scene: Scene, cursor: number): void {
  const x = clampedX(scene, cursor);
  ctx.fillStyle = scene.palette.veil;
  ctx.fillRect(x, AXIS_HEIGHT, LABEL_WIDTH + scene.view.width - x + 4, scene.height - AXIS_HEIGHT);
  ctx.strokeStyle = scene.palette.selected;
  ctx.lineWidth = 2;
  ctx.beginPath();
  ctx.moveTo(Math.round(x), AXIS_HEIGHT);
  ctx.lineTo(Math.round(x), scene.height);
  ctx.stroke();
}

/** An x on the canvas for time `t`, clamped near the bar area so that deep zooms keep small coordinates. */
function clampedX(scene: Scene, t: number): number {
  return Math.min(Math.max(LABEL_WIDTH + timeToX(scene.view, t), LABEL_WIDTH - 4), LABEL_WIDTH + scene.view.width + 4);
}

/**
 * Every other pass (the odd ones) of a task row's loop, as a band behind the row. Bands of a
 * row that touch are merged, as bars are: zoomed out, thousands of iterations are one tinted run.
 */
function paintBands(ctx: CanvasRenderingContext2D, scene: Scene, iterations: IterationSpan[]): void {
  ctx.fillStyle = scene.palette.iteration;
  ctx.beginPath();
  let band: { row: number; x0: number; x1: number } | null = null;
  for (const span of iterations) {
    if (span.pass % 2 === 0 || scene.model.rows[span.row]!.kind !== "task") continue;
    const x0 = clampedX(scene, span.start);
    const x1 = clampedX(scene, span.end);
    if (band && band.row === span.row && x0 <= band.x1 + 0.5) {
      band.x1 = Math.max(band.x1, x1);
      continue;
    }
    if (band) ctx.rect(band.x0, rowTop(scene, band.row), band.x1 - band.x0, ROW_HEIGHT);
    band = { row: span.row, x0, x1 };
  }
  if (band) ctx.rect(band.x0, rowTop(scene, band.row), band.x1 - band.x0, ROW_HEIGHT);
  ctx.fill();
}

/**
 * Where each iteration starts, on its instance's header: a tick, and `name #k` where the iteration
 * is wide enough and no other label (an outer loop's, drawn first) is there.
 */
function paintIterationMarks(ctx: CanvasRenderingContext2D, scene: Scene, iterations: IterationSpan[]): void {
  const { model, palette } = scene;
  ctx.strokeStyle = palette.muted;
  ctx.fillStyle = palette.muted;
  ctx.lineWidth = 1;
  ctx.font = NUMBER_FONT;
  ctx.textBaseline = "middle";
  ctx.beginPath();
  let row = -1;
  let labels: [number, number][] = [];
  let lastTick = -Infinity;
  for (const span of iterations) {
    if (model.rows[span.row]!.kind !== "instance") continue;
    if (span.row !== row) {
      row = span.row;
      labels = [];
      lastTick = -Infinity;
    }
    const top = rowTop(scene, span.row);
    const x = LABEL_WIDTH + timeToX(scene.view, span.start);
    // Ticks closer than a few pixels would be a solid line: zoomed out, one stands for them.
    if (x >= LABEL_WIDTH && Math.abs(x - lastTick) >= TICK_MIN_GAP_PX) {
      const tickX = Math.round(x) + 0.5;
      ctx.moveTo(tickX, top + 3);
      ctx.lineTo(tickX, top + ROW_HEIGHT - 3);
      lastTick = x;
    }
    // An iteration begun left of the view keeps its label at the view's edge.
    const from = Math.max(x, LABEL_WIDTH) + 3;
    const to = clampedX(scene, span.end) - 3;
    if (to - from < ITERATION_LABEL_MIN_PX) continue;
    const label = `${span.loop.name} #${span.iteration}`;
    const end = from + ctx.measureText(label).width;
    if (end > to || labels.some(([a, b]) => from < b + 6 && end > a - 6)) continue;
    labels.push([from, end]);
    ctx.fillText(label, from, top + ROW_HEIGHT / 2);
  }
  ctx.stroke();
}

/** The narrowest a bar is drawn, in CSS pixels, however short its attempt; a failed one's. */
export const MIN_BAR_PX = 3;
/** The line under the bars of the critical path's tasks. */
const CRITICAL_LINE_PX = 2;
/** The word on a slow task's label. */
const SLOW_WORD = "slow";
export const MIN_FAILED_BAR_PX = 5;

/** Where a bar is on the canvas, clamped near the bar area so that deep zooms keep small coordinates. */
function barBox(scene: Scene, bar: Bar): { x: number; y: number; w: number; h: number } {
  const left = LABEL_WIDTH - 4;
  const right = LABEL_WIDTH + scene.view.width + 4;
  const x0 = Math.max(left, LABEL_WIDTH + timeToX(scene.view, bar.start));
  const end = scene.cursor != null ? Math.min(barEnd(bar, scene.nowMs), scene.cursor) : barEnd(bar, scene.nowMs);
  const x1 = Math.min(right, LABEL_WIDTH + timeToX(scene.view, end));
  return { x: x0, y: rowTop(scene, bar.row) + BAR_INSET, w: Math.max(0, x1 - x0), h: ROW_HEIGHT - 2 * BAR_INSET };
}

/**
 * The bars, filled one state at a time (one path each, not one fill per bar), then their numbers
 * and the selection. Zoomed out, most bars are thinner than a pixel: consecutive ones of a row in
 * the same state that touch are merged into one rectangle, so the path holds what can be seen.
 */
function paintBars(ctx: CanvasRenderingContext2D, scene: Scene, bars: Bar[]): void {
  const rects = new Map<AttemptState, number[]>();
  const numbered: { bar: Bar; x: number; y: number; w: number; h: number }[] = [];
  let last: { row: number; state: AttemptState; box: number[]; at: number } | null = null;
  for (const bar of bars) {
    const { x, y, w, h } = barBox(scene, bar);
    // At time travel's moment, an attempt that had not ended yet was running.
    const cursor = scene.cursor;
    const state = cursor != null && (bar.finished === null || bar.finished > cursor) ? "running" : bar.attempt.state;
    // A short attempt is still a bar to see and to click; a failed one stands out wider.
    const width = Math.max(w, state === "failed" ? MIN_FAILED_BAR_PX : MIN_BAR_PX);
    if (last && last.row === bar.row && last.state === state && x <= last.box[last.at]! + last.box[last.at + 2]! + 0.5) {
      last.box[last.at + 2] = Math.max(last.box[last.at + 2]!, x + width - last.box[last.at]!);
    } else {
      let box = rects.get(state);
      if (!box) rects.set(state, (box = []));
      last = { row: bar.row, state, box, at: box.length };
      box.push(x, y, width, h);
    }
    const row = scene.model.rows[bar.row] as TaskRow;
    if (w >= NUMBER_MIN_PX && row.bars.length > 1) numbered.push({ bar, x, y, w, h });
  }
  // Failed bars last, over any wide bar beside them.
  const painted = [...rects].sort(([a], [b]) => Number(a === "failed") - Number(b === "failed"));
  for (const [state, box] of painted) {
    ctx.fillStyle = scene.palette[state] ?? scene.palette.unknown;
    ctx.beginPath();
    for (let i = 0; i < box.length; i += 4) ctx.rect(box[i]!, box[i + 1]!, box[i + 2]!, box[i + 3]!);
    ctx.fill();
  }

  // The critical path: a line under each bar of its tasks.
  const critical = scene.marks?.critical;
  if (critical && critical.size > 0) {
    ctx.fillStyle = scene.palette.accent;
    ctx.beginPath();
    for (const bar of bars) {
      if (!critical.has(bar.attempt.node)) continue;
      const { x, y, w, h } = barBox(scene, bar);
      ctx.rect(x, y + h + 1, Math.max(w, MIN_BAR_PX), CRITICAL_LINE_PX);
    }
    ctx.fill();
  }

  ctx.font = NUMBER_FONT;
  ctx.fillStyle = scene.palette.onBar;
  ctx.textBaseline = "middle";
  for (const { bar, x, y, w, h } of numbered) ctx.fillText(`#${bar.attempt.attempt}`, x + 3, y + h / 2, w - 6);

  const selected = scene.selected;
  if (selected) {
    const { x, y, w, h } = barBox(scene, selected);
    ctx.strokeStyle = scene.palette.selected;
    ctx.lineWidth = 2;
    // The outline stands off the bar so that a bar of no width shows as a small box.
    ctx.strokeRect(x - 2, y - 2, w + 4, h + 4);
  }
}

function paintLabels(ctx: CanvasRenderingContext2D, scene: Scene, first: number, end: number): void {
  const { model, palette } = scene;
  ctx.fillStyle = palette.panel;
  ctx.fillRect(0, AXIS_HEIGHT, LABEL_WIDTH, scene.height - AXIS_HEIGHT);
  ctx.textBaseline = "middle";
  const selectedRow = scene.selected?.row;
  for (let r = first; r < end; r++) {
    const row = model.rows[r]!;
    const middle = rowTop(scene, r) + ROW_HEIGHT / 2;
    if (row.kind === "instance") {
      ctx.fillStyle = palette.bg;
      ctx.fillRect(0, rowTop(scene, r), LABEL_WIDTH, ROW_HEIGHT);
      ctx.font = HEADER_FONT;
      ctx.fillStyle = palette.text;
      ctx.fillText(fitText(ctx, rowLabel(row), LABEL_WIDTH - 12), 6, middle);
    } else {
      const top = rowTop(scene, r);
      // On the critical path: a mark before the label. Slower than usual: said at its end.
      if (scene.marks?.critical.has(row.node)) {
        ctx.fillStyle = palette.accent;
        ctx.fillRect(TASK_INDENT - 8, top + BAR_INSET, 3, ROW_HEIGHT - 2 * BAR_INSET);
      }
      let room = LABEL_WIDTH - TASK_INDENT - 6;
      if (scene.marks?.slow.has(row.node)) {
        ctx.font = NUMBER_FONT;
        ctx.fillStyle = palette.cancelled;
        const w = ctx.measureText(SLOW_WORD).width;
        ctx.fillText(SLOW_WORD, LABEL_WIDTH - 6 - w, middle);
        room -= w + 6;
      }
      ctx.font = FONT;
      ctx.fillStyle = r === selectedRow ? palette.selected : palette.text;
      ctx.fillText(fitText(ctx, rowLabel(row), room), TASK_INDENT, middle);
    }
  }
  ctx.strokeStyle = palette.border;
  ctx.lineWidth = 1;
  ctx.beginPath();
  ctx.moveTo(LABEL_WIDTH - 0.5, 0);
  ctx.lineTo(LABEL_WIDTH - 0.5, scene.height);
  ctx.stroke();
}

function paintAxis(ctx: CanvasRenderingContext2D, scene: Scene, axisTicks: ReturnType<typeof ticks>): void {
  const { palette } = scene;
  ctx.fillStyle = palette.panel;
  ctx.fillRect(0, 0, scene.width, AXIS_HEIGHT);
  ctx.font = FONT;
  ctx.textBaseline = "middle";
  ctx.fillStyle = palette.muted;
  ctx.fillText("Task", 6, AXIS_HEIGHT / 2);
  ctx.save();
  ctx.beginPath();
  ctx.rect(LABEL_WIDTH, 0, scene.view.width, AXIS_HEIGHT);
  ctx.clip();
  ctx.strokeStyle = palette.border;
  ctx.beginPath();
  for (const tick of axisTicks) {
    const x = Math.round(LABEL_WIDTH + tick.x) + 0.5;
    ctx.moveTo(x, AXIS_HEIGHT - 6);
    ctx.lineTo(x, AXIS_HEIGHT);
    ctx.fillText(tick.label, x + 4, AXIS_HEIGHT / 2);
  }
  ctx.stroke();
  ctx.restore();
  ctx.strokeStyle = palette.border;
  ctx.beginPath();
  ctx.moveTo(0, AXIS_HEIGHT - 0.5);
  ctx.lineTo(scene.width, AXIS_HEIGHT - 0.5);
  ctx.stroke();
}
