import { describe, expect, it } from "vitest";
import type { SessionTimingAnswer, TaskTiming } from "../backend/generated";
import { againstUsual, timeLeft, timelineTiming } from "./timeLeft";

function timing(change: Partial<SessionTimingAnswer> = {}): SessionTimingAnswer {
  return { past_runs: 3, remaining_ms: 90_000, unknown: 0, critical_path: ["bp.a", "bp.b"], tasks: [], ...change };
}

const task = (change: Partial<TaskTiming>): TaskTiming => ({ node: "bp.a", runs: 5, slow: false, ...change });

describe("the time left of a running run", () => {
  it("counts down from the estimate as time passes, and says what it comes from", () => {
    const read = { timing: timing(), at: 1_000 };
    expect(timeLeft(read, 1_000)?.label).toBe("about 1m 30s left");
    expect(timeLeft(read, 31_000)?.label).toBe("about 1m 00s left");
    expect(timeLeft(read, 81_000)?.label).toBe("about 10 s left");
    expect(timeLeft(read, 1_000)?.title).toBe(
      "Estimated from the usual time of each task in 3 past runs, along the critical path (bp.a → bp.b)",
    );
  });

  it("says when a running task takes longer than usual, else that the end is near", () => {
    const overdue = timeLeft({ timing: timing({ remaining_ms: 0, overdue: ["bp.b"] }), at: 0 }, 0);
    expect(overdue?.label).toBe("longer than usual");
    expect(overdue?.title).toMatch(/^bp.b already took longer than usual\. Estimated/);
    expect(timeLeft({ timing: timing({ remaining_ms: 5_000 }), at: 0 }, 4_500)?.label).toBe("about to end");
  });

  it("is a lower bound when tasks still to run never ran before", () => {
    const left = timeLeft({ timing: timing({ unknown: 2, remaining_ms: 12_000 }), at: 0 }, 0);
    expect(left?.label).toBe("at least about 12 s left");
    expect(left?.title).toContain("2 tasks still to run never ran before and count as instant");
  });

  it("is not said without an estimate (no past run, or a run that ended) or before it was read", () => {
    expect(timeLeft({ timing: timing({ remaining_ms: null }), at: 0 }, 0)).toBeNull();
    expect(timeLeft(undefined, 0)).toBeNull();
  });
});

describe("the marks of a run's time on its timeline", () => {
  const read = { timing: timing({ tasks: [task({ node: "bp.a" }), task({ node: "bp.c", slow: true, took_ms: 5000, usual_ms: 1000 })] }), at: 0 };

  it("draws the critical path only once the run ended, and the slow tasks always", () => {
    const ended = timelineTiming(read, true)!;
    expect([...ended.critical]).toEqual(["bp.a", "bp.b"]);
    expect([...ended.slow.keys()]).toEqual(["bp.c"]);
    const running = timelineTiming(read, false)!;
    expect(running.critical.size).toBe(0);
    expect([...running.slow.keys()]).toEqual(["bp.c"]);
    expect(timelineTiming({ timing: timing({ critical_path: [] }), at: 0 }, true)).toBeNull();
    expect(timelineTiming(undefined, true)).toBeNull();
  });

  it("sets a task's time against its usual, and how far off a slow one is", () => {
    expect(againstUsual(task({ took_ms: 900, usual_ms: 1000 }))).toBe("1.00 s, the median of 5 past runs");
    expect(againstUsual(task({ took_ms: 3200, usual_ms: 1000, slow: true, runs: 1 }))).toBe(
      "1.00 s, the median of 1 past run; took 3.20 s here, 3.2x",
    );
    expect(againstUsual(task({ took_ms: 900 }))).toBeNull();
  });
});
