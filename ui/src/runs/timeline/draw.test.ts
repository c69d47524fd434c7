import { describe, expect, it } from "vitest";
import { AXIS_HEIGHT, FALLBACK_PALETTE, LABEL_WIDTH, MIN_BAR_PX, MIN_FAILED_BAR_PX, paint, type Scene } from "./draw";
import { ROW_HEIGHT, buildModel } from "./model";
import { T, attempt, inLoops } from "./testing";


/** A 2D context that keeps what is filled: each fill's colour and rectangles, and each text. */
class RecordingContext {
  fillStyle = "";
  strokeStyle = "";
  lineWidth = 1;
  font = "";
  textBaseline = "";
  fills: { style: string; rects: number[][] }[] = [];
  texts: { text: string; x: number; y: number }[] = [];
  private path: number[][] = [];
  beginPath() {
    this.path = [];
  }
  rect(x: number, y: number, w: number, h: number) {
    this.path.push([x, y, w, h]);
  }
  fill() {
    this.fills.push({ style: this.fillStyle, rects: this.path });
  }
  fillText(text: string, x: number, y: number) {
    this.texts.push({ text, x, y });
  }
  /** Six pixels a character, so that a test knows which labels fit. */
  measureText(text: string) {
    return { width: text.length * 6 };
  }
  setTransform() {}
  fillRect() {}
  strokeRect() {}
  save() {}
  restore() {}
  clip() {}
  moveTo() {}
  lineTo() {}
  stroke() {}
  setLineDash() {}
}

describe("painting the iterations of a looped scope", () => {
  // The scope `pick` runs three times (10, 60 and 110 ms); `gate` once.
  const pick = (k: number, node: string, n: number, start: number, finish: number) =>
    inLoops(attempt(node, n, start, finish), ["pick", "placement loop", k]);
  const model = buildModel([
    pick(1, "bp.pick", 1, 10, 20),
    pick(1, "bp.check", 1, 40, 50),
    pick(2, "bp.pick", 2, 60, 70),
    pick(2, "bp.check", 2, 95, 100),
    pick(3, "bp.pick", 3, 110, 120),
    pick(3, "bp.check", 3, 130, 140),
    inLoops(attempt("bp.gate", 1, 140, 150), ["gate", "gate", 1]),
  ]);
  // Four pixels a millisecond, from the session's start (10 ms): rows 1 and 2 are the loop's, row 3 the gate's.
  const scene: Scene = {
    model,
    view: { t0: T + 10, msPerPx: 0.25, scrollTop: 0, width: 600, height: 200 },
    nowMs: T + 200,
    selected: null,
    palette: FALLBACK_PALETTE,
    live: false,
    width: LABEL_WIDTH + 600,
    height: AXIS_HEIGHT + 200,
    dpr: 1,
  };
  const ctx = new RecordingContext();
  const bars = paint(ctx as unknown as CanvasRenderingContext2D, scene);
  const x = (ms: number) => LABEL_WIDTH + (ms - 10) * 4;
  const top = (row: number) => AXIS_HEIGHT + row * ROW_HEIGHT;

  it("bands every other iteration behind the rows of the scope's tasks, and no other row", () => {
    const bands = ctx.fills.filter((f) => f.style === FALLBACK_PALETTE.iteration).flatMap((f) => f.rects);
    expect(bands).toEqual([
      [x(10), top(1), x(60) - x(10), ROW_HEIGHT],
      [x(110), top(1), x(140) - x(110), ROW_HEIGHT],
      [x(10), top(2), x(60) - x(10), ROW_HEIGHT],
      [x(110), top(2), x(140) - x(110), ROW_HEIGHT],
    ]);
  });

  it("labels each iteration on the instance's header where it fits, and still paints every bar over the bands", () => {
    const labels = ctx.texts.filter((t) => t.y === top(0) + ROW_HEIGHT / 2 && t.x > LABEL_WIDTH);
    expect(labels.map((t) => [t.text, t.x])).toEqual([
      ["placement loop #1", x(10) + 3],
      ["placement loop #2", x(60) + 3],
      ["placement loop #3", x(110) + 3],
    ]);
    expect(bars).toBe(7);
    const bandsAt = ctx.fills.findIndex((f) => f.style === FALLBACK_PALETTE.iteration);
    const barsAt = ctx.fills.findIndex((f) => f.style === FALLBACK_PALETTE.succeeded);
    expect(bandsAt).toBeLessThan(barsAt);
  });

  it("leaves out a label that does not fit its iteration", () => {
    const narrow = new RecordingContext();
    paint(narrow as unknown as CanvasRenderingContext2D, { ...scene, view: { ...scene.view, msPerPx: 0.4 } });
    // Two and a half pixels a millisecond: the 30 ms of the last iteration (75 px) cannot hold its label (102 px).
    expect(narrow.texts.filter((t) => t.text.startsWith("placement loop")).map((t) => t.text)).toEqual([
      "placement loop #1",
      "placement loop #2",
    ]);
  });
});

describe("painting short attempts", () => {
  // A second of run on 600 px: a 1 ms attempt would be a sixth of a pixel.
  const model = buildModel([
    attempt("bp.a", 1, 0, 1, "succeeded"),
    attempt("bp.b", 1, 0, 1, "failed"),
    attempt("bp.c", 1, 0, 900, "succeeded"),
    attempt("bp.c", 2, 900, 901, "failed"),
  ]);
  const ctx = new RecordingContext();
  paint(ctx as unknown as CanvasRenderingContext2D, {
    model,
    view: { t0: T, msPerPx: 1000 / 600, scrollTop: 0, width: 600, height: 200 },
    nowMs: T + 1000,
    selected: null,
    palette: FALLBACK_PALETTE,
    live: false,
    width: LABEL_WIDTH + 600,
    height: AXIS_HEIGHT + 200,
    dpr: 1,
  });
  const fills = (style: string) => ctx.fills.filter((f) => f.style === style);

  it("gives each a visible width, a failed one wider, and paints the failed ones last", () => {
    const succeeded = fills(FALLBACK_PALETTE.succeeded!).flatMap((f) => f.rects);
    const failed = fills(FALLBACK_PALETTE.failed!).flatMap((f) => f.rects);
    expect(succeeded.map((r) => r[2])).toContain(MIN_BAR_PX);
    expect(failed).toHaveLength(2);
    for (const r of failed) expect(r[2]).toBe(MIN_FAILED_BAR_PX);
    const last = ctx.fills.filter((f) => f.style === FALLBACK_PALETTE.succeeded || f.style === FALLBACK_PALETTE.failed).at(-1);
    expect(last?.style).toBe(FALLBACK_PALETTE.failed);
  });
});

describe("painting the run's time", () => {
  // bp.a then bp.b on the critical path; bp.c beside them, slower than usual.
  const model = buildModel([attempt("bp.a", 1, 0, 100), attempt("bp.b", 1, 100, 300), attempt("bp.c", 1, 0, 250)]);
  const scene: Scene = {
    model,
    view: { t0: T, msPerPx: 1, scrollTop: 0, width: 600, height: 200 },
    nowMs: T + 300,
    selected: null,
    palette: FALLBACK_PALETTE,
    live: false,
    width: LABEL_WIDTH + 600,
    height: AXIS_HEIGHT + 200,
    dpr: 1,
  };
  const top = (row: number) => AXIS_HEIGHT + row * ROW_HEIGHT;

  it("underlines the bars of the critical path's tasks, and only theirs", () => {
    const ctx = new RecordingContext();
    paint(ctx as unknown as CanvasRenderingContext2D, { ...scene, marks: { critical: new Set(["bp.a", "bp.b"]), slow: new Map() } });
    const lines = ctx.fills.filter((f) => f.style === FALLBACK_PALETTE.accent).flatMap((f) => f.rects);
    // Rows: 0 the header, 1 bp.a, 2 bp.c (it started with a), 3 bp.b; each line 2 px under its bar.
    expect(lines).toEqual([
      [LABEL_WIDTH, top(1) + ROW_HEIGHT - 4 + 1, 100, 2],
      [LABEL_WIDTH + 100, top(3) + ROW_HEIGHT - 4 + 1, 200, 2],
    ]);
    const plain = new RecordingContext();
    paint(plain as unknown as CanvasRenderingContext2D, scene);
    expect(plain.fills.filter((f) => f.style === FALLBACK_PALETTE.accent)).toEqual([]);
  });

  it("says slow at the end of a slow task's label", () => {
    const ctx = new RecordingContext();
    paint(ctx as unknown as CanvasRenderingContext2D, { ...scene, marks: { critical: new Set(), slow: new Map([["bp.c", {}]]) } });
    const slow = ctx.texts.filter((t) => t.text === "slow");
    expect(slow.map((t) => t.y)).toEqual([top(2) + ROW_HEIGHT / 2]);
    expect(slow[0]!.x).toBeLessThan(LABEL_WIDTH);
  });
});

describe("painting a moment of time travel", () => {
  // a ran 0-100, b 100-300, c 150-250; the moment is 200.
  const model = buildModel([attempt("bp.a", 1, 0, 100), attempt("bp.b", 1, 100, 300), attempt("bp.c", 1, 250, 280)]);
  const scene: Scene = {
    model,
    view: { t0: T, msPerPx: 1, scrollTop: 0, width: 600, height: 200 },
    nowMs: T + 300,
    selected: null,
    palette: FALLBACK_PALETTE,
    live: false,
    cursor: T + 200,
    width: LABEL_WIDTH + 600,
    height: AXIS_HEIGHT + 200,
    dpr: 1,
  };

  it("draws what had begun by then, what ran then as running up to it, and nothing after", () => {
    const ctx = new RecordingContext();
    expect(paint(ctx as unknown as CanvasRenderingContext2D, scene)).toBe(2);
    const rects = (style: string) => ctx.fills.filter((f) => f.style === style).flatMap((f) => f.rects);
    expect(rects(FALLBACK_PALETTE.succeeded).map((r) => [r[0], r[2]])).toEqual([[LABEL_WIDTH, 100]]);
    // b ended at 300, after the moment: running, up to the moment.
    expect(rects(FALLBACK_PALETTE.running).map((r) => [r[0], r[2]])).toEqual([[LABEL_WIDTH + 100, 100]]);
  });
});
