import { describe, expect, it } from "vitest";
import type { Attempt } from "../../backend/generated";
import {
  MIN_HIT_PX,
  ROW_HEIGHT,
  barEnd,
  buildModel,
  clampView,
  describeBar,
  elapsedLabel,
  fitView,
  followView,
  hitTest,
  iterationOf,
  iterationRange,
  navigate,
  revealBar,
  rowLabel,
  tickStep,
  ticks,
  timeToX,
  toRef,
  visibleBars,
  visibleIterations,
  visibleRows,
  zoomAt,
  type Bar,
  type InstanceRow,
  type Loop,
  type TaskRow,
  type View,
} from "./model";
import { generateAttempts, generateLoopingSession, sampleNow } from "./sample";
import { T, attempt, inLoops } from "./testing";

/** A view of the bar area that starts at the session's start, `msPerPx` wide per pixel. */
function viewAt(msPerPx: number, t0 = T, width = 1000, height = 400, scrollTop = 0): View {
  return { t0, msPerPx, scrollTop, width, height };
}

/** The y of the middle of row `r` in the bar area, with the rows not scrolled. */
const rowMiddle = (r: number) => r * ROW_HEIGHT + ROW_HEIGHT / 2;

function labels(attempts: Attempt[]): string[] {
  return buildModel(attempts).rows.map((row) => `${row.kind}:${rowLabel(row)}`);
}

describe("the rows of the timeline", () => {
  it("group the tasks under their instance, the instances and their tasks in the order they first started", () => {
    const rows = labels([
      attempt("deploy.start", 1, 0, 5),
      attempt("deploy.build", 1, 10, 50),
      attempt("pack_build.fetch", 1, 12, 20),
      attempt("deploy.test", 1, 15, 30),
      attempt("pack_build.zip", 1, 25, 40),
    ]);
    expect(rows).toEqual([
      "instance:deploy",
      "task:start",
      "task:build",
      "task:test",
      "instance:pack_build",
      "task:fetch",
      "task:zip",
    ]);
  });

  it("order by start even when the attempts do not come in start order", () => {
    const rows = labels([attempt("inner_x.b", 1, 30, 40), attempt("root.a", 1, 0, 50), attempt("inner_x.c", 1, 20, 25)]);
    expect(rows).toEqual(["instance:root", "task:a", "instance:inner_x", "task:c", "task:b"]);
  });

  it("keep every attempt of a task on its row, in start order, and count them in its label", () => {
    const model = buildModel([
      attempt("bp.loop", 1, 0, 10, "failed"),
      attempt("bp.other", 1, 5, 8),
      attempt("bp.loop", 2, 12, 20, "failed"),
      attempt("bp.loop", 3, 22, null),
    ]);
    const row = model.rows[1] as TaskRow;
    expect(rowLabel(row)).toBe("loop ×3");
    expect(row.bars.map((bar) => bar.attempt.attempt)).toEqual([1, 2, 3]);
    expect(rowLabel(model.rows[2]!)).toBe("other");
    expect(model.byRef.get("bp.loop#2")).toBe(row.bars[1]);
    expect(model).toMatchObject({ attempts: 4, tasks: 2, instances: 1, running: 1, startMs: T, endMs: T + 22 });
  });

});

describe("attempts whose times are unknown", () => {
  it("are counted but not drawn: a mirror's tasks that ran on the server before it followed", () => {
    const early = { ...attempt("bp.a", 1, 0, 0), times_unknown: true };
    const model = buildModel([early, attempt("bp.b", 1, 50, 150)]);
    expect(model).toMatchObject({ attempts: 1, tasks: 1, untimed: 1, startMs: T + 50, endMs: T + 150 });
    expect(model.byRef.has("bp.a#1")).toBe(false);
  });
});

describe("running attempts", () => {
  const model = buildModel([attempt("bp.a", 1, 0, 100), attempt("bp.b", 1, 50, null)]);
  const running = model.byRef.get("bp.b#1")!;

  it("end at the current time, and never before they started", () => {
    expect(barEnd(running, T + 400)).toBe(T + 400);
    expect(barEnd(running, T)).toBe(T + 50);
  });

  it("are in view wherever the current time has brought them", () => {
    const lateView = viewAt(1, T + 300, 100);
    expect(visibleBars(model, lateView, T + 250).map(toRef)).toEqual([]);
    expect(visibleBars(model, lateView, T + 350).map(toRef)).toEqual([{ node: "bp.b", attempt: 1 }]);
  });

  it("stretch a fitted view to the current time", () => {
    const fitted = fitView(model, viewAt(1), T + 1000);
    expect(timeToX(fitted, T + 1000)).toBeLessThanOrEqual(1000);
    expect(timeToX(fitted, T + 1000)).toBeGreaterThan(950);
    expect(timeToX(fitted, T)).toBeGreaterThanOrEqual(0);
  });
});

describe("hit testing", () => {
  // Row 1: a bar of no width at 100 ms and a wide one from 200 to 400 ms. Row 2: two bars of no width 3 px apart.
  const model = buildModel([
    attempt("bp.a", 1, 100, 100, "skipped"),
    attempt("bp.a", 2, 200, 400),
    attempt("bp.b", 1, 600, 600),
    attempt("bp.b", 2, 603, 603),
  ]);
  const view = viewAt(1);
  const at = (x: number, row: number) => {
    const bar = hitTest(model, view, x, rowMiddle(row), T + 1000);
    return bar && `${bar.attempt.node}#${bar.attempt.attempt}`;
  };

  it("picks a bar of no width within half the minimum hit width of it", () => {
    expect(at(100, 1)).toBe("bp.a#1");
    expect(at(100 + MIN_HIT_PX / 2 - 0.5, 1)).toBe("bp.a#1");
    expect(at(100 - MIN_HIT_PX / 2 + 0.5, 1)).toBe("bp.a#1");
    expect(at(100 + MIN_HIT_PX / 2 + 1, 1)).toBeNull();
  });

  it("picks a wide bar anywhere on it, and nothing between bars", () => {
    expect(at(300, 1)).toBe("bp.a#2");
    expect(at(150, 1)).toBeNull();
  });

  it("picks the nearest of two bars that both take the pointer", () => {
    expect(at(601, 2)).toBe("bp.b#1");
    expect(at(602, 2)).toBe("bp.b#2");
  });

  it("picks nothing on an instance's header or above the rows", () => {
    expect(at(100, 0)).toBeNull();
    expect(hitTest(model, view, 100, -5, T)).toBeNull();
  });

  it("follows the rows' scroll", () => {
    const scrolled = { ...view, scrollTop: ROW_HEIGHT };
    expect(hitTest(model, scrolled, 602, rowMiddle(1), T)?.attempt.node).toBe("bp.b");
  });
});

describe("the axis", () => {
  it("chooses round spacings of the unit the zoom calls for", () => {
    expect(tickStep(0.05, 80)).toBe(5);
    expect(tickStep(2, 80)).toBe(200);
    expect(tickStep(10, 80)).toBe(1000);
    expect(tickStep(1000, 80)).toBe(2 * 60_000);
    expect(tickStep(100_000, 80)).toBe(3 * 3_600_000);
    expect(tickStep(10_000_000, 80)).toBe(10 * 86_400_000);
  });

  it("labels ticks with the time since the session started", () => {
    // 390 px wide, so that no tick falls on the right edge.
    const labelsAt = (msPerPx: number, t0 = T) => ticks(viewAt(msPerPx, t0, 390), T).map((tick) => tick.label);
    expect(labelsAt(0.05)).toEqual(["0", "5ms", "10ms", "15ms"]);
    expect(labelsAt(2, T + 600)).toEqual(["600ms", "800ms", "1.0s", "1.2s"]);
    expect(labelsAt(10, T + 58_000)).toEqual(["58s", "59s", "1m 00s", "1m 01s"]);
    expect(labelsAt(1000, T + 3_400_000)).toEqual(["58m", "1h 00m", "1h 02m"]);
    expect(labelsAt(100_000)).toEqual(["0", "3h", "6h", "9h"]);
  });

  it("places ticks at their time and keeps them within the view", () => {
    const found = ticks(viewAt(10, T - 550), T);
    expect(found[0]).toMatchObject({ t: T, x: 55, label: "0" });
    expect(found.every((tick) => tick.x >= 0 && tick.x <= 1000)).toBe(true);
  });

  it("labels times before the session's start as negative", () => {
    expect(elapsedLabel(-2000, 1000)).toBe("-2s");
  });
});

describe("the visible range", () => {
  const attempts = generateAttempts(10_000, 7);
  const nowMs = sampleNow(attempts);
  const model = buildModel(attempts);
  const fitted = fitView(model, viewAt(1, T, 1200, 600), nowMs);
  // A typical close look: a tenth of the session, some rows down.
  const view = zoomAt({ ...fitted, scrollTop: 40 * ROW_HEIGHT }, 600, 0.1);

  it("holds exactly the bars that overlap the view", () => {
    const { first, end } = visibleRows(model, view);
    const expected = attempts.filter((a) => {
      const bar = model.byRef.get(`${a.node}#${a.attempt}`)!;
      const x0 = timeToX(view, bar.start);
      const x1 = timeToX(view, barEnd(bar, nowMs));
      return bar.row >= first && bar.row < end && x1 >= -1 && x0 <= view.width + 1;
    });
    const found = visibleBars(model, view, nowMs);
    expect(found.length).toBeGreaterThan(0);
    expect(new Set(found.map((bar) => bar.attempt))).toEqual(new Set(expected));
  });

  it("reads only the bars in view (and one past each row), not the 10,000", () => {
    let read = 0;
    const counted = {
      ...model,
      rows: model.rows.map((row) =>
        row.kind === "instance"
          ? row
          : {
              ...row,
              bars: new Proxy(row.bars, {
                get(target, key, receiver) {
                  if (typeof key === "string" && /^\d+$/.test(key)) read += 1;
                  return Reflect.get(target, key, receiver);
                },
              }),
            },
      ),
    };
    const found = visibleBars(counted, view, nowMs);
    const { first, end } = visibleRows(model, view);
    expect(read).toBeLessThanOrEqual(found.length + (end - first));
    expect(found.length).toBeLessThan(attempts.length / 20);
  });
});

describe("the arrow keys", () => {
  const model = buildModel([
    attempt("bp.a", 1, 0, 10),
    attempt("bp.a", 2, 20, 30),
    attempt("bp.a", 3, 40, 50),
    attempt("sub_c.x", 1, 5, 6),
    attempt("sub_c.x", 2, 38, 45),
  ]);
  const ref = (node: string, n: number) => ({ node, attempt: n });

  it("select the first attempt when none is", () => {
    expect(navigate(model, null, "ArrowDown")).toEqual(ref("bp.a", 1));
  });

  it("move along a row and stay at its ends", () => {
    expect(navigate(model, ref("bp.a", 2), "ArrowRight")).toEqual(ref("bp.a", 3));
    expect(navigate(model, ref("bp.a", 2), "ArrowLeft")).toEqual(ref("bp.a", 1));
    expect(navigate(model, ref("bp.a", 3), "ArrowRight")).toEqual(ref("bp.a", 3));
    expect(navigate(model, ref("bp.a", 1), "ArrowLeft")).toEqual(ref("bp.a", 1));
  });

  it("move to the attempt that started nearest in time on the task row below or above, over a header", () => {
    expect(navigate(model, ref("bp.a", 3), "ArrowDown")).toEqual(ref("sub_c.x", 2));
    expect(navigate(model, ref("bp.a", 1), "ArrowDown")).toEqual(ref("sub_c.x", 1));
    expect(navigate(model, ref("sub_c.x", 1), "ArrowUp")).toEqual(ref("bp.a", 1));
    expect(navigate(model, ref("bp.a", 2), "ArrowUp")).toEqual(ref("bp.a", 2));
  });
});

describe("moving the view", () => {
  const attempts = generateAttempts(2_000, 3);
  const nowMs = sampleNow(attempts);
  const model = buildModel(attempts);
  const fitted = fitView(model, viewAt(1, T, 800, 200), nowMs);

  it("zooms around the pointer", () => {
    const zoomed = zoomAt(fitted, 300, 0.25);
    expect(zoomed.msPerPx).toBeCloseTo(fitted.msPerPx / 4);
    expect(zoomed.t0 + 300 * zoomed.msPerPx).toBeCloseTo(fitted.t0 + 300 * fitted.msPerPx);
  });

  it("keeps the rows and the session within reach", () => {
    const lost = clampView(model, { ...fitted, scrollTop: 1e9, t0: 0 }, nowMs);
    expect(lost.scrollTop).toBe(model.rows.length * ROW_HEIGHT - fitted.height);
    expect(timeToX(lost, model.startMs)).toBeLessThan(lost.width);
  });

  it("brings a selected bar's row into view and centres a bar out of sight", () => {
    const last = model.rows[model.rows.length - 1] as TaskRow;
    const bar: Bar = last.bars[0]!;
    const zoomed = zoomAt(fitted, 0, 0.001);
    const shown = revealBar(zoomed, bar, nowMs);
    expect(shown.scrollTop).toBe(bar.row * ROW_HEIGHT + ROW_HEIGHT - zoomed.height);
    expect(timeToX(shown, bar.start)).toBeGreaterThan(0);
    expect(timeToX(shown, barEnd(bar, nowMs))).toBeLessThan(shown.width);
    expect(revealBar(shown, bar, nowMs)).toBe(shown);
  });

  it("follows the latest time: from the session's start while it fits, then with the right edge", () => {
    const young = buildModel([attempt("bp.a", 1, 0, null)]);
    const wide = viewAt(100, 0, 1000);
    expect(timeToX(followView(young, wide, T + 5_000), T)).toBeGreaterThan(0);
    expect(timeToX(followView(young, wide, T + 5_000), T)).toBeLessThanOrEqual(20);
    const old = followView(young, wide, T + 1_000_000);
    expect(timeToX(old, T + 1_000_000)).toBeLessThan(1000);
    expect(timeToX(old, T + 1_000_000)).toBeGreaterThan(950);
  });
});

describe("a bar's tooltip", () => {
  it("says what ran, how it ended, how long it took and when it started", () => {
    const model = buildModel([
      attempt("bp.a", 1, 0, 10),
      { ...attempt("bp.b", 1, 1_500, 4_000, "failed"), exit_code: 2, error: { code: "exit-status", message: "exited 2" } },
      attempt("bp.c", 1, 2_000, null),
    ]);
    const failed = describeBar(model, model.byRef.get("bp.b#1")!, T + 5_000);
    expect(failed[0]).toBe("b · attempt #1");
    expect(failed).toContain("failed (exit 2)");
    expect(failed).toContain("2.50 s");
    expect(failed[4]).toMatch(/^started \d\d:\d\d:\d\d\.500 \(\+1\.50 s\)$/);
    expect(failed).toContain("exited 2");
    expect(describeBar(model, model.byRef.get("bp.c#1")!, T + 62_000)).toContain("1m 00s so far");
  });
});

describe("the iterations of a scope", () => {
  // A while scope that runs three times, its middle run retrying `place`; a retry scope that runs once.
  const pick = (k: number, a: Attempt) => inLoops(a, ["pick", "placement loop", k]);
  const gate = (a: Attempt) => inLoops(a, ["gate", "gate", 1]);
  const attempts = [
    attempt("bp.start", 1, 0, 5),
    pick(1, attempt("bp.pick", 1, 10, 20)),
    pick(1, attempt("bp.place", 1, 20, 40)),
    pick(1, attempt("bp.check", 1, 40, 50)),
    pick(2, attempt("bp.pick", 2, 60, 70)),
    pick(2, attempt("bp.place", 2, 70, 80, "failed")),
    pick(2, attempt("bp.place", 3, 82, 95)),
    pick(2, attempt("bp.check", 2, 95, 100)),
    pick(3, attempt("bp.pick", 3, 110, 120)),
    pick(3, attempt("bp.place", 4, 120, 130)),
    pick(3, attempt("bp.check", 3, 130, 140)),
    gate(attempt("bp.gate", 1, 140, 145)),
    gate(attempt("bp.gate_end", 1, 145, 150)),
    attempt("bp.end", 1, 150, 152),
  ];
  const model = buildModel(attempts);
  const loop = (model.rows[0] as InstanceRow).loops[0]!;
  const ranges = (of: Loop, nowMs: number) => of.starts.map((_, k) => iterationRange(of, k + 1, nowMs));
  const at = (node: string, n: number) => iterationOf(model, { node, attempt: n });

  it("start with each attempt of the scope's start and end where the next starts, the last with its members' latest end", () => {
    expect((model.rows[0] as InstanceRow).loops).toHaveLength(1);
    expect(loop).toMatchObject({ instance: "bp", start: "pick", name: "placement loop" });
    expect(ranges(loop, T + 1_000)).toEqual([
      { start: T + 10, end: T + 60 },
      { start: T + 60, end: T + 110 },
      { start: T + 110, end: T + 140 },
    ]);
  });

  it("hold the attempts of the scope's tasks that started in them, a retried one included", () => {
    const iteration = (k: number) => ({ scope: "pick", name: "placement loop", iteration: k, of: 3 });
    expect([at("bp.pick", 1), at("bp.place", 1), at("bp.check", 1)]).toEqual([iteration(1), iteration(1), iteration(1)]);
    expect([at("bp.pick", 2), at("bp.place", 2), at("bp.place", 3), at("bp.check", 2)]).toEqual([
      iteration(2),
      iteration(2),
      iteration(2),
      iteration(2),
    ]);
    expect([at("bp.pick", 3), at("bp.place", 4), at("bp.check", 3)]).toEqual([iteration(3), iteration(3), iteration(3)]);
  });

  it("are none for a scope that ran once, for a task in no scope, or for an attempt that is not there", () => {
    expect(at("bp.gate", 1)).toBeNull();
    expect(at("bp.gate_end", 1)).toBeNull();
    expect(at("bp.start", 1)).toBeNull();
    expect(at("bp.end", 1)).toBeNull();
    expect(at("bp.place", 9)).toBeNull();
    const unrecorded = attempts.map((a) => ({ ...a, iterations: [] }));
    expect(buildModel(unrecorded).rows.every((row) => row.loops.length === 0)).toBe(true);
  });

  it("show on the rows of the scope's tasks and on their instance's header, as far as they are in view", () => {
    const rows = model.rows.map(rowLabel);
    expect(rows).toEqual(["bp", "start", "pick ×3", "place ×4", "check ×3", "gate", "gate_end", "end"]);
    const inView = (t0: number, width: number) =>
      visibleIterations(model, viewAt(1, T + t0, width), T + 1_000).map((span) => `${rows[span.row]} #${span.iteration}`);
    // From 50 to 105 ms: the end of the first iteration and the second; the header marks them too.
    expect(inView(50, 55)).toEqual([
      "bp #1",
      "bp #2",
      "pick ×3 #1",
      "pick ×3 #2",
      "place ×4 #1",
      "place ×4 #2",
      "check ×3 #1",
      "check ×3 #2",
    ]);
    expect(inView(141, 100)).toEqual([]);
  });

  it("name the iteration in a bar's tooltip", () => {
    expect(describeBar(model, model.byRef.get("bp.place#3")!, T + 1_000)).toContain("Scope placement loop: iteration 2 of 3");
    expect(describeBar(model, model.byRef.get("bp.end#1")!, T + 1_000).join("\n")).not.toContain("iteration");
  });

  it("reach the current time while an attempt of the last one runs", () => {
    const running = buildModel([
      pick(1, attempt("bp.pick", 1, 0, 10)),
      pick(1, attempt("bp.place", 1, 10, 20)),
      pick(2, attempt("bp.pick", 2, 30, 40)),
      pick(2, attempt("bp.place", 2, 40, null)),
    ]);
    const of = (running.rows[0] as InstanceRow).loops[0]!;
    expect(ranges(of, T + 500)).toEqual([
      { start: T, end: T + 30 },
      { start: T + 30, end: T + 500 },
    ]);
    expect(iterationOf(running, { node: "bp.place", attempt: 2 })).toMatchObject({ iteration: 2, of: 2 });
  });

  it("of nested scopes are the innermost's that ran more than once in its round, counted in that round", () => {
    // An outer retry scope around a while scope ("loop"), which holds a skip scope (gate, gated):
    // a skip scope is no loop, so the store names only the two loops around its tasks.
    const outer = (k: number) => ["outer", "outer", k] as [string, string, number];
    const inner = (k: number) => ["inner", "loop", k] as [string, string, number];
    const twice = buildModel([
      inLoops(attempt("bp.outer", 1, 0, 1), outer(1)),
      inLoops(attempt("bp.inner", 1, 1, 2), outer(1), inner(1)),
      inLoops(attempt("bp.gate", 1, 2, 3), outer(1), inner(1)),
      inLoops(attempt("bp.gated", 1, 3, 4), outer(1), inner(1)),
      inLoops(attempt("bp.body", 1, 4, 10), outer(1), inner(1)),
      inLoops(attempt("bp.inner_end", 1, 10, 11), outer(1), inner(1)),
      inLoops(attempt("bp.inner", 2, 12, 13), outer(1), inner(2)),
      inLoops(attempt("bp.gate", 2, 13, 13, "skipped"), outer(1), inner(2)),
      inLoops(attempt("bp.body", 2, 14, 20), outer(1), inner(2)),
      inLoops(attempt("bp.inner_end", 2, 20, 21), outer(1), inner(2)),
      inLoops(attempt("bp.outer_end", 1, 21, 22, "failed"), outer(1)),
      inLoops(attempt("bp.outer", 2, 30, 31), outer(2)),
      inLoops(attempt("bp.inner", 3, 31, 32), outer(2), inner(1)),
      inLoops(attempt("bp.body", 3, 32, 40), outer(2), inner(1)),
      inLoops(attempt("bp.inner_end", 3, 40, 41), outer(2), inner(1)),
      inLoops(attempt("bp.outer_end", 2, 41, 42), outer(2)),
    ]);
    const of = (node: string, n: number) => iterationOf(twice, { node, attempt: n });
    expect(of("bp.body", 2)).toEqual({ scope: "inner", name: "loop", iteration: 2, of: 2 });
    expect(of("bp.gated", 1)).toEqual({ scope: "inner", name: "loop", iteration: 1, of: 2 });
    expect(of("bp.gate", 2)).toEqual({ scope: "inner", name: "loop", iteration: 2, of: 2 });
    // In the second round the inner loop ran once: the outer one names the attempt.
    expect(of("bp.body", 3)).toEqual({ scope: "outer", name: "outer", iteration: 2, of: 2 });
    expect(of("bp.outer_end", 1)).toEqual({ scope: "outer", name: "outer", iteration: 1, of: 2 });
    expect(of("bp.outer", 2)).toEqual({ scope: "outer", name: "outer", iteration: 2, of: 2 });
    expect((twice.rows[0] as InstanceRow).loops.map((l) => l.name)).toEqual(["outer", "loop"]);
    // A task row shows the bands of its innermost loop only: its passes, the iteration each was.
    const body = twice.rows.findIndex((row) => row.kind === "task" && row.task === "body");
    const bands = visibleIterations(twice, viewAt(1, T, 100), T + 100).filter((span) => span.row === body);
    expect(bands.map((span) => `${span.loop.name} #${span.iteration} (pass ${span.pass})`)).toEqual([
      "loop #1 (pass 1)",
      "loop #2 (pass 2)",
      "loop #1 (pass 3)",
    ]);
  });

  describe("in a session of 10,000 attempts", () => {
    const many = generateLoopingSession(2_200, 5);
    const nowMs = sampleNow(many);
    const big = buildModel(many);

    it("are found for every attempt as its recorded passes say", () => {
      expect(many.length).toBeGreaterThan(9_000);
      const polls = many.filter((a) => a.task === "poll").length;
      // How many times the retry scope ran in each pass of the while loop.
      const retries = new Map<number, number>();
      for (const a of many) {
        const [poll, fetch] = a.iterations;
        if (poll && fetch) retries.set(poll.iteration, Math.max(retries.get(poll.iteration) ?? 0, fetch.iteration));
      }
      expect([...retries.values()].some((n) => n > 1)).toBe(true);
      const expected = many.map((a) => {
        const [poll, fetch] = a.iterations;
        if (!poll) return null;
        const of = fetch ? retries.get(poll.iteration)! : 0;
        if (fetch && of > 1) return { scope: "fetch", name: "fetch", iteration: fetch.iteration, of };
        return { scope: "poll", name: "poll loop", iteration: poll.iteration, of: polls };
      });
      expect(many.map((a) => iterationOf(big, a))).toEqual(expected);
      const last = (big.rows[0] as InstanceRow).loops[0]!;
      expect(iterationRange(last, polls, nowMs + 1_000).end).toBe(nowMs + 1_000);
    });

    it("in view are found reading only those, not the thousands", () => {
      const fitted = fitView(big, viewAt(1, T, 1200, 600), nowMs);
      const view = zoomAt(fitted, 600, 0.005);
      let read = 0;
      const counting = new Map<Loop, Loop>();
      for (const row of big.rows) {
        for (const loop of row.loops) {
          if (counting.has(loop)) continue;
          const starts = new Proxy(loop.starts, {
            get(target, key, receiver) {
              if (typeof key === "string" && /^\d+$/.test(key)) read += 1;
              return Reflect.get(target, key, receiver);
            },
          });
          counting.set(loop, { ...loop, starts });
        }
      }
      const counted = { ...big, rows: big.rows.map((row) => ({ ...row, loops: row.loops.map((loop) => counting.get(loop)!) })) };
      const found = visibleIterations(counted, view, nowMs);
      const { first, end } = visibleRows(big, view);
      const searched = big.rows.slice(first, end).reduce((sum, row) => sum + row.loops.length, 0);
      expect(found.length).toBeGreaterThan(0);
      expect(found.length).toBeLessThan(many.length / 50);
      // Three reads per iteration found, and a binary search and one read past the view per loop searched:
      // far fewer than the 2,200 starts of one loop.
      expect(read).toBeLessThanOrEqual(3 * found.length + searched * (Math.ceil(Math.log2(many.length)) + 2));
    });
  });
});
