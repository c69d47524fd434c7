// What the run timeline shows and where, without a canvas: the rows (one per task, under a
// header per blueprint instance), the iterations of the scopes that looped, the time scale, which
// bars a viewport holds, which bar a pointer is on, the axis ticks and where the arrow keys move
// the selection. Everything here is pure, so the component only draws and listens, and a session
// of 10,000 attempts is tested without a browser. Each query costs what is in view (uniform rows,
// then a binary search along a row), never a scan of every attempt, because the component asks
// them once per frame.
import type { Attempt } from "../../backend/generated";

/** One attempt, as the timeline places it. */
export type AttemptRef = { node: string; attempt: number };

/** The height of every row, headers included: a row's place is its index times this. */
export const ROW_HEIGHT = 22;
/** A bar narrower than this still takes a pointer this wide, centred on it. */
export const MIN_HIT_PX = 6;
/** The finest zoom: a hundredth of a millisecond per pixel. */
export const MIN_MS_PER_PX = 0.01;

export type Bar = {
  attempt: Attempt;
  /** The index of its row in `TimelineModel.rows`. */
  row: number;
  /** Its place among its row's bars, which are in start order. */
  index: number;
  start: number;
  /** When it finished; null while it runs, when it ends at the current time. */
  finished: number | null;
};

/**
 * A retry or while scope of an instance that ran more than once, as its members' attempts
 * recorded it (each attempt names the iteration of every loop around its task). Its passes are
 * in time order: pass k (from 1) starts with the earliest attempt that ran in it and ends where
 * the next one starts; the last ends with the latest end among the attempts that ran in it. A
 * loop nested in another runs its iterations again in each pass of the outer one, so its passes
 * go 1, 2, 3, 1, 2, 3, ...
 */
export type Loop = {
  instance: string;
  /** The id of its start task, which names the scope. */
  start: string;
  /** What the user reads: the scope's name, else its start's id. */
  name: string;
  /** How many loops hold it. */
  depth: number;
  /** When each pass started, ascending: pass k at `starts[k - 1]`. */
  starts: number[];
  /** The iteration each pass was, as recorded. */
  iterations: number[];
  /** The latest finish among the attempts that ran in its last pass. */
  lastFinish: number;
  /** Whether one of those still runs: the last pass then reaches the current time. */
  lastRunning: boolean;
};

export type InstanceRow = {
  kind: "instance";
  instance: string;
  tasks: number;
  /** Its loops, the outermost first: their iterations are marked on its header. */
  loops: Loop[];
};

export type TaskRow = {
  kind: "task";
  instance: string;
  task: string;
  node: string;
  bars: Bar[];
  /**
   * The latest end among `bars[0..=i]` (Infinity once one runs). It never decreases, so the first
   * bar that may reach into a time range is found by binary search even if two attempts overlap.
   */
  reach: number[];
  /** The loops that hold its task, the innermost first. */
  loops: Loop[];
};

export type Row = InstanceRow | TaskRow;

export type TimelineModel = {
  rows: Row[];
  /** Every bar by `refKey`. */
  byRef: Map<string, Bar>;
  attempts: number;
  tasks: number;
  instances: number;
  running: number;
  /** Attempts left out because their times are unknown (a mirror's tasks that ran on the server before it followed). */
  untimed: number;
  /** The earliest start: the origin of the axis. */
  startMs: number;
  /** The latest time an attempt records (a start or a finish); running ones reach further. */
  endMs: number;
  /** Each attempt's iteration of the innermost loop that ran more than once in its round, by `refKey`. */
  iterationOf: Map<string, IterationOf>;
};

/** The part of the timeline in view, in the coordinates of its bar area (below the axis, right of the labels). */
export type View = {
  /** The time at the left edge. */
  t0: number;
  msPerPx: number;
  /** How far the rows are scrolled, in pixels. */
  scrollTop: number;
  width: number;
  height: number;
};

export function refKey(ref: AttemptRef): string {
  return `${ref.node}#${ref.attempt}`;
}

/**
 * Groups the attempts into rows: instances in the order they first started (the root first, since
 * its tasks start the ones that open inner instances), each with its tasks in the order they first
 * started, each task with its attempts in start order. The loops come from the iterations the
 * attempts recorded.
 */
export function buildModel(all: readonly Attempt[]): TimelineModel {
  const attempts = all.filter((a) => !a.times_unknown);
  const order = attempts.map((_, i) => i).sort((a, b) => attempts[a]!.started_ms - attempts[b]!.started_ms || a - b);
  const instances = new Map<string, Map<string, Attempt[]>>();
  let endMs = -Infinity;
  let running = 0;
  for (const i of order) {
    const attempt = attempts[i]!;
    let tasks = instances.get(attempt.instance);
    if (!tasks) instances.set(attempt.instance, (tasks = new Map()));
    let atNode = tasks.get(attempt.node);
    if (!atNode) tasks.set(attempt.node, (atNode = []));
    atNode.push(attempt);
    endMs = Math.max(endMs, attempt.started_ms, attempt.finished_ms ?? -Infinity);
    if (attempt.finished_ms == null) running += 1;
  }

  const rows: Row[] = [];
  const byRef = new Map<string, Bar>();
  const headers = new Map<string, InstanceRow>();
  let taskCount = 0;
  for (const [instance, tasks] of instances) {
    const header: InstanceRow = { kind: "instance", instance, tasks: tasks.size, loops: [] };
    headers.set(instance, header);
    rows.push(header);
    for (const [node, atNode] of tasks) {
      const row = rows.length;
      const bars = atNode.map((attempt, index): Bar => {
        const finished = attempt.finished_ms == null ? null : Math.max(attempt.started_ms, attempt.finished_ms);
        return { attempt, row, index, start: attempt.started_ms, finished };
      });
      const reach: number[] = [];
      let latest = -Infinity;
      for (const bar of bars) {
        latest = Math.max(latest, bar.finished ?? Infinity);
        reach.push(latest);
        byRef.set(refKey(bar.attempt), bar);
      }
      const taskRow: TaskRow = { kind: "task", instance, task: atNode[0]!.task, node, bars, reach, loops: [] };
      rows.push(taskRow);
      taskCount += 1;
    }
  }
  const iterationOf = placeLoops(rows, headers);
  const startMs = attempts.length === 0 ? 0 : attempts[order[0]!]!.started_ms;
  return {
    rows,
    byRef,
    attempts: attempts.length,
    tasks: taskCount,
    instances: instances.size,
    running,
    untimed: all.length - attempts.length,
    startMs,
    endMs: attempts.length === 0 ? 0 : endMs,
    iterationOf,
  };
}

/** The first index of `[0, length)` where `before` turns false (it is true, then false, along the range). */
function firstIndex(length: number, before: (i: number) => boolean): number {
  let low = 0;
  let high = length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (before(mid)) low = mid + 1;
    else high = mid;
  }
  return low;
}

/** A loop as its passes are gathered; a pass is named by the iterations of the loops around it and its own. */
type Gathering = {
  loop: Loop;
  passes: Map<string, { start: number; iteration: number; round: string; lastFinish: number; running: boolean }>;
  /** The most iterations seen per round (per pass of the loops around it). */
  rounds: Map<string, number>;
  rows: Set<TaskRow>;
};

/**
 * The loops that ran more than once, from the iterations each attempt recorded, added to the
 * rows of their tasks (the innermost first) and to their instance's header (the outermost
 * first); and, per attempt, its iteration of the innermost loop that ran more than once in the
 * attempt's round.
 */
function placeLoops(rows: Row[], headers: ReadonlyMap<string, InstanceRow>): Map<string, IterationOf> {
  const gathered = new Map<string, Gathering>();
  // Each attempt's place in each loop around it: the loop and the round it ran in.
  const places: [Bar, [Gathering, string, number][]][] = [];
  for (const row of rows) {
    if (row.kind !== "task") continue;
    for (const bar of row.bars) {
      const { iterations } = bar.attempt;
      if (iterations.length === 0) continue;
      const mine: [Gathering, string, number][] = [];
      let round = "";
      iterations.forEach((it, depth) => {
        const key = JSON.stringify([it.instance, it.scope]);
        let g = gathered.get(key);
        if (!g) {
          const loop: Loop = {
            instance: it.instance,
            start: it.scope,
            name: it.name,
            depth,
            starts: [],
            iterations: [],
            lastFinish: -Infinity,
            lastRunning: false,
          };
          gathered.set(key, (g = { loop, passes: new Map(), rounds: new Map(), rows: new Set() }));
        }
        const passKey = `${round}${JSON.stringify([it.instance, it.scope, it.iteration])}`;
        let pass = g.passes.get(passKey);
        if (!pass) g.passes.set(passKey, (pass = { start: bar.start, iteration: it.iteration, round, lastFinish: bar.start, running: false }));
        pass.start = Math.min(pass.start, bar.start);
        if (bar.finished === null) pass.running = true;
        else pass.lastFinish = Math.max(pass.lastFinish, bar.finished);
        g.rounds.set(round, Math.max(g.rounds.get(round) ?? 0, it.iteration));
        g.rows.add(row);
        mine.push([g, round, it.iteration]);
        round = passKey;
      });
      places.push([bar, mine]);
    }
  }

  const looped = new Set<Gathering>();
  for (const g of gathered.values()) {
    if (g.passes.size < 2) continue;
    looped.add(g);
    const passes = [...g.passes.values()].sort((a, b) => a.start - b.start);
    const { loop } = g;
    for (const pass of passes) {
      loop.starts.push(pass.start);
      loop.iterations.push(pass.iteration);
    }
    const last = passes[passes.length - 1]!;
    loop.lastFinish = last.lastFinish;
    loop.lastRunning = last.running;
    headers.get(loop.instance)?.loops.push(loop);
    for (const row of g.rows) row.loops.push(loop);
  }
  for (const header of headers.values()) header.loops.sort((a, b) => a.depth - b.depth);
  for (const row of rows) if (row.kind === "task") row.loops.sort((a, b) => b.depth - a.depth);

  const iterationOf = new Map<string, IterationOf>();
  for (const [bar, mine] of places) {
    for (let j = mine.length - 1; j >= 0; j--) {
      const [g, round, iteration] = mine[j]!;
      const of = g.rounds.get(round)!;
      if (!looped.has(g) || of < 2) continue;
      iterationOf.set(refKey(bar.attempt), { scope: g.loop.start, name: g.loop.name, iteration, of });
      break;
    }
  }
  return iterationOf;
}

/** The last model built for each list of attempts: a list is replaced, never changed, when attempts come. */
const built = new WeakMap<readonly Attempt[], TimelineModel>();

/**
 * The model of a session's attempts, built once per list of attempts however many views ask:
 * the timeline draws it, the details panel names an attempt's iteration from it.
 */
export function modelOf(attempts: readonly Attempt[]): TimelineModel {
  let model = built.get(attempts);
  if (!model) built.set(attempts, (model = buildModel(attempts)));
  return model;
}

/** Where a bar ends: its finish, or the current time while it runs (never before its start). */
export function barEnd(bar: Bar, nowMs: number): number {
  return bar.finished ?? Math.max(bar.start, nowMs);
}

/** The latest time the timeline must show: running attempts reach the current time. */
export function modelEnd(model: TimelineModel, nowMs: number): number {
  return model.running > 0 ? Math.max(model.endMs, nowMs) : model.endMs;
}

export function timeToX(view: View, t: number): number {
  return (t - view.t0) / view.msPerPx;
}

export function xToTime(view: View, x: number): number {
  return view.t0 + x * view.msPerPx;
}

/** The label of a row: a task's id with its number of attempts when it has several, or the instance's id. */
export function rowLabel(row: Row): string {
  if (row.kind === "instance") return row.instance;
  return row.bars.length > 1 ? `${row.task} ×${row.bars.length}` : row.task;
}

/** The rows at least partly in view, as `[first, end)`. */
export function visibleRows(model: TimelineModel, view: View): { first: number; end: number } {
  const first = Math.max(0, Math.floor(view.scrollTop / ROW_HEIGHT));
  const end = Math.min(model.rows.length, Math.ceil((view.scrollTop + view.height) / ROW_HEIGHT));
  return { first, end: Math.max(first, end) };
}

/** The first bar of the row that may end at or after `from`. */
function firstReaching(row: TaskRow, from: number): number {
  let low = 0;
  let high = row.reach.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (row.reach[mid]! < from) low = mid + 1;
    else high = mid;
  }
  return low;
}

/** Adds to `out` the bars of `row` that overlap `[from, to]`. */
function barsBetween(row: TaskRow, from: number, to: number, nowMs: number, out: Bar[]): void {
  for (let i = firstReaching(row, from); i < row.bars.length; i++) {
    const bar = row.bars[i]!;
    if (bar.start > to) return;
    if (barEnd(bar, nowMs) >= from) out.push(bar);
  }
}

/**
 * The bars in view, row by row. The range is one pixel wider on each side so that a bar of no
 * width on an edge is still drawn.
 */
export function visibleBars(model: TimelineModel, view: View, nowMs: number): Bar[] {
  const { first, end } = visibleRows(model, view);
  const from = view.t0 - view.msPerPx;
  const to = xToTime(view, view.width + 1);
  const out: Bar[] = [];
  for (let r = first; r < end; r++) {
    const row = model.rows[r]!;
    if (row.kind === "task") barsBetween(row, from, to, nowMs, out);
  }
  return out;
}

/** The time range of pass `k` (from 1) of a loop. */
export function iterationRange(loop: Loop, k: number, nowMs: number): { start: number; end: number } {
  const start = loop.starts[k - 1]!;
  if (k < loop.starts.length) return { start, end: loop.starts[k]! };
  return { start, end: loop.lastRunning ? Math.max(loop.lastFinish, nowMs) : loop.lastFinish };
}

/** One pass of a loop, on a row in view: its place among the loop's passes, and the iteration it was. */
export type IterationSpan = { row: number; loop: Loop; pass: number; iteration: number; start: number; end: number };

/** Adds to `out` the iterations of `loop` that overlap `[from, to]`, on row `row`. */
function iterationsBetween(loop: Loop, row: number, from: number, to: number, nowMs: number, out: IterationSpan[]): void {
  // An iteration ends where the next one starts: the first to reach `from` is the one before the first start after it.
  const first = Math.max(0, firstIndex(loop.starts.length, (i) => loop.starts[i]! < from) - 1);
  for (let k = first + 1; k <= loop.starts.length && loop.starts[k - 1]! <= to; k++) {
    const { start, end } = iterationRange(loop, k, nowMs);
    if (end >= from) out.push({ row, loop, pass: k, iteration: loop.iterations[k - 1]!, start, end });
  }
}

/**
 * The iterations in view: on a task row, those of the innermost loop that holds its task (the
 * bands behind its bars); on an instance's header, those of each of its loops, the outermost
 * first (the marks of where each starts).
 */
export function visibleIterations(model: TimelineModel, view: View, nowMs: number): IterationSpan[] {
  const { first, end } = visibleRows(model, view);
  const from = view.t0;
  const to = xToTime(view, view.width);
  const out: IterationSpan[] = [];
  for (let r = first; r < end; r++) {
    const row = model.rows[r]!;
    const loops = row.kind === "task" ? row.loops.slice(0, 1) : row.loops;
    for (const loop of loops) iterationsBetween(loop, r, from, to, nowMs, out);
  }
  return out;
}

/** Which iteration of which looped scope an attempt ran in. */
export type IterationOf = {
  /** The id of the scope's start task. */
  scope: string;
  name: string;
  iteration: number;
  /** How many iterations the scope has run so far in that round (of the loops around it). */
  of: number;
};

/**
 * The iteration an attempt ran in, as it recorded it, of the innermost loop around its task that
 * ran more than once in its round. Null for an attempt of a task in no such loop.
 */
export function iterationOf(model: TimelineModel, ref: AttemptRef): IterationOf | null {
  return model.iterationOf.get(refKey(ref)) ?? null;
}

/** An iteration as the user reads it. */
export function iterationLabel(of: IterationOf): string {
  return `Scope ${of.name}: iteration ${of.iteration} of ${of.of}`;
}

/**
 * The bar at `(x, y)` of the bar area. Each bar takes at least `MIN_HIT_PX` of the pointer, so
 * that an attempt of no visible width can still be picked; where several take the pointer, the
 * one nearest to it wins (then the one whose middle is nearest).
 */
export function hitTest(model: TimelineModel, view: View, x: number, y: number, nowMs: number): Bar | null {
  const row = model.rows[Math.floor((y + view.scrollTop) / ROW_HEIGHT)];
  if (!row || row.kind !== "task" || y < 0) return null;
  const candidates: Bar[] = [];
  barsBetween(row, xToTime(view, x - MIN_HIT_PX), xToTime(view, x + MIN_HIT_PX), nowMs, candidates);
  let best: Bar | null = null;
  let bestDistance = Infinity;
  let bestToMiddle = Infinity;
  for (const bar of candidates) {
    const x0 = timeToX(view, bar.start);
    const x1 = timeToX(view, barEnd(bar, nowMs));
    const grow = Math.max(0, (MIN_HIT_PX - (x1 - x0)) / 2);
    if (x < x0 - grow || x > x1 + grow) continue;
    const distance = x < x0 ? x0 - x : x > x1 ? x - x1 : 0;
    const toMiddle = Math.abs(x - (x0 + x1) / 2);
    if (distance < bestDistance || (distance === bestDistance && toMiddle < bestToMiddle)) {
      best = bar;
      bestDistance = distance;
      bestToMiddle = toMiddle;
    }
  }
  return best;
}

/** The bar of a task row whose start is nearest to `t`. */
function nearestByStart(row: TaskRow, t: number): Bar {
  let low = 0;
  let high = row.bars.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (row.bars[mid]!.start < t) low = mid + 1;
    else high = mid;
  }
  const after = row.bars[Math.min(low, row.bars.length - 1)]!;
  const before = row.bars[Math.max(low - 1, 0)]!;
  return t - before.start <= after.start - t ? before : after;
}

/** The nearest task row from `from` in direction `step` (headers are passed over), or null. */
function taskRowFrom(model: TimelineModel, from: number, step: 1 | -1): TaskRow | null {
  for (let r = from; r >= 0 && r < model.rows.length; r += step) {
    const row = model.rows[r]!;
    if (row.kind === "task") return row;
  }
  return null;
}

export type NavigationKey = "ArrowLeft" | "ArrowRight" | "ArrowUp" | "ArrowDown";

/**
 * Where an arrow key moves the selection: to the previous or next attempt on the same row, or to
 * the attempt that started nearest in time on the task row above or below. Without a selection,
 * any arrow selects the first attempt; at an edge the selection stays where it is.
 */
export function navigate(model: TimelineModel, selected: AttemptRef | null, key: NavigationKey): AttemptRef | null {
  const current = selected ? model.byRef.get(refKey(selected)) : undefined;
  if (!current) {
    const first = taskRowFrom(model, 0, 1);
    return first ? toRef(first.bars[0]!) : null;
  }
  const row = model.rows[current.row] as TaskRow;
  switch (key) {
    case "ArrowLeft":
      return toRef(row.bars[Math.max(0, current.index - 1)]!);
    case "ArrowRight":
      return toRef(row.bars[Math.min(row.bars.length - 1, current.index + 1)]!);
    case "ArrowUp":
    case "ArrowDown": {
      const next = taskRowFrom(model, current.row + (key === "ArrowUp" ? -1 : 1), key === "ArrowUp" ? -1 : 1);
      return toRef(next ? nearestByStart(next, current.start) : current);
    }
  }
}

export function toRef(bar: Bar): AttemptRef {
  return { node: bar.attempt.node, attempt: bar.attempt.attempt };
}

/** Keeps the rows within their scroll range and the zoom within what can be read. */
export function clampView(model: TimelineModel, view: View, nowMs: number): View {
  const maxScroll = Math.max(0, model.rows.length * ROW_HEIGHT - view.height);
  const span = Math.max(modelEnd(model, nowMs) - model.startMs, 1);
  // Zoomed out past four times the whole session, the bars are a smudge on one side.
  const msPerPx = Math.min(Math.max(view.msPerPx, MIN_MS_PER_PX), Math.max((span * 4) / Math.max(view.width, 1), MIN_MS_PER_PX));
  const visible = view.width * msPerPx;
  // A tenth of the view always shows some of the session, so a pan can't lose it.
  const t0 = Math.min(Math.max(view.t0, model.startMs - visible * 0.9), modelEnd(model, nowMs) - visible * 0.1);
  return { ...view, msPerPx, t0, scrollTop: Math.min(Math.max(view.scrollTop, 0), maxScroll) };
}

/** The part of the view left empty on each side of a fitted session. */
const FIT_MARGIN = 0.02;

/**
 * The zoom and left edge that show the whole session, or at least `minSpanMs` from its start (a
 * session that just began then grows into the view instead of filling it at once).
 */
export function fitView(model: TimelineModel, view: View, nowMs: number, minSpanMs = 0): View {
  const span = Math.max(modelEnd(model, nowMs) - model.startMs, minSpanMs, 1);
  const msPerPx = Math.max((span * (1 + 2 * FIT_MARGIN)) / Math.max(view.width, 1), MIN_MS_PER_PX);
  return { ...view, msPerPx, t0: model.startMs - span * FIT_MARGIN };
}

/**
 * The view that keeps the latest time in view at the current zoom: the session's start stays on
 * the left while the whole session fits, then the view moves with the right edge.
 */
export function followView(model: TimelineModel, view: View, nowMs: number): View {
  const visible = view.width * view.msPerPx;
  const margin = visible * FIT_MARGIN;
  const t0 = Math.max(model.startMs - margin, modelEnd(model, nowMs) + margin - visible);
  return { ...view, t0 };
}

/** Zooms by `factor` (above 1 zooms out) keeping the time under `x` where it is. */
export function zoomAt(view: View, x: number, factor: number): View {
  const msPerPx = Math.max(view.msPerPx * factor, MIN_MS_PER_PX);
  return { ...view, msPerPx, t0: view.t0 + x * (view.msPerPx - msPerPx) };
}

/**
 * The view with `bar` in it: its row scrolled just into view, and the bar centred if none of it
 * shows. The view is returned unchanged when the bar already shows.
 */
export function revealBar(view: View, bar: Bar, nowMs: number): View {
  const top = bar.row * ROW_HEIGHT;
  let scrollTop = view.scrollTop;
  if (top < scrollTop) scrollTop = top;
  else if (top + ROW_HEIGHT > scrollTop + view.height) scrollTop = top + ROW_HEIGHT - view.height;
  let t0 = view.t0;
  const end = barEnd(bar, nowMs);
  if (timeToX(view, end) < 0 || timeToX(view, bar.start) > view.width) {
    t0 = (bar.start + end) / 2 - (view.width / 2) * view.msPerPx;
  }
  return scrollTop === view.scrollTop && t0 === view.t0 ? view : { ...view, scrollTop, t0 };
}

export type Tick = { t: number; x: number; label: string };

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** The spacings a tick may have: round numbers of each unit, so labels read as whole units. */
const TICK_STEPS = [
  1, 2, 5, 10, 20, 50, 100, 200, 500,
  SECOND, 2 * SECOND, 5 * SECOND, 10 * SECOND, 15 * SECOND, 30 * SECOND,
  MINUTE, 2 * MINUTE, 5 * MINUTE, 10 * MINUTE, 15 * MINUTE, 30 * MINUTE,
  HOUR, 2 * HOUR, 3 * HOUR, 6 * HOUR, 12 * HOUR, DAY,
];

/** The smallest round spacing that leaves at least `minGapPx` between ticks. */
export function tickStep(msPerPx: number, minGapPx: number): number {
  const wanted = msPerPx * minGapPx;
  return TICK_STEPS.find((step) => step >= wanted) ?? Math.ceil(wanted / DAY) * DAY;
}

/**
 * The ticks of the axis, labelled with the time since the session started, in the unit the
 * spacing calls for (ms, s, min, h): a run is read by how long things took, not by the clock.
 */
export function ticks(view: View, originMs: number, minGapPx = 80): Tick[] {
  const step = tickStep(view.msPerPx, minGapPx);
  const out: Tick[] = [];
  for (let k = Math.ceil((view.t0 - originMs) / step); ; k++) {
    const t = originMs + k * step;
    const x = timeToX(view, t);
    if (x > view.width) return out;
    out.push({ t, x, label: elapsedLabel(k * step, step) });
  }
}

function pad(n: number): string {
  return String(n).padStart(2, "0");
}

/** A time since the origin, as precise as a spacing of `step` needs: "250ms", "1.5s", "2m 05s", "1h 30m". */
export function elapsedLabel(ms: number, step: number): string {
  if (ms < 0) return `-${elapsedLabel(-ms, step)}`;
  if (ms === 0) return "0";
  if (step < SECOND) {
    if (ms < SECOND) return `${Math.round(ms)}ms`;
    return `${(ms / SECOND).toFixed(step >= 100 ? 1 : step >= 10 ? 2 : 3)}s`;
  }
  const days = Math.floor(ms / DAY);
  const hours = Math.floor((ms % DAY) / HOUR);
  const minutes = Math.floor((ms % HOUR) / MINUTE);
  const seconds = Math.round((ms % MINUTE) / SECOND);
  if (step < MINUTE) {
    if (ms < MINUTE) return `${seconds}s`;
    if (ms < HOUR) return `${minutes}m ${pad(seconds)}s`;
    return `${Math.floor(ms / HOUR)}h ${pad(minutes)}m ${pad(seconds)}s`;
  }
  if (step < HOUR) return ms < HOUR ? `${minutes}m` : `${Math.floor(ms / HOUR)}h ${pad(minutes)}m`;
  return days > 0 ? `${days}d ${hours}h` : `${hours}h`;
}

/** A duration as a person reads it, with precision that shrinks as it grows. */
export function durationLabel(ms: number): string {
  if (ms < SECOND) return `${Math.round(ms)} ms`;
  if (ms < MINUTE) return `${(ms / SECOND).toFixed(ms < 10 * SECOND ? 2 : 1)} s`;
  if (ms < HOUR) return `${Math.floor(ms / MINUTE)}m ${pad(Math.floor((ms % MINUTE) / SECOND))}s`;
  return `${Math.floor(ms / HOUR)}h ${pad(Math.floor((ms % HOUR) / MINUTE))}m`;
}

/** A wall-clock time, local, to the millisecond. */
export function clockLabel(ms: number): string {
  const d = new Date(ms);
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${String(d.getMilliseconds()).padStart(3, "0")}`;
}

/** The lines of a bar's tooltip: what ran, how it ended, how long it took and when it started. */
export function describeBar(model: TimelineModel, bar: Bar, nowMs: number): string[] {
  const { attempt } = bar;
  const duration = barEnd(bar, nowMs) - bar.start;
  const lines = [
    `${attempt.task} · attempt #${attempt.attempt}`,
    `${attempt.instance} · agent ${attempt.agent}`,
    `${attempt.state}${attempt.exit_code == null ? "" : ` (exit ${attempt.exit_code})`}`,
    `${durationLabel(duration)}${bar.finished == null ? " so far" : ""}`,
    `started ${clockLabel(bar.start)} (+${durationLabel(bar.start - model.startMs)})`,
  ];
  const iteration = iterationOf(model, attempt);
  if (iteration) lines.splice(2, 0, iterationLabel(iteration));
  if (attempt.error) lines.push(attempt.error.message);
  return lines;
}
