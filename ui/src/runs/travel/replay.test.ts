import { describe, expect, it } from "vitest";
import type { SessionHistoryAnswer, TaskState } from "../../backend/generated";
import { T, attempt } from "../timeline/testing";
import { Replay, attemptAt } from "./replay";

/** A history of `nodes`, each change [ms after T, node index, state]. */
function history(nodes: string[], changes: [number, number, TaskState][], data: [number, string, unknown][] = []): SessionHistoryAnswer {
  return {
    nodes,
    changes: changes.map(([at, node, state], i) => ({ at: T + at, seq: i + 1, node, state })),
    session: [
      { at: T, seq: 0, state: "running" },
      { at: T + 300, seq: 99, state: "completed" },
    ],
    data: data.map(([at, key, value]) => ({ at: T + at, instance: "bp", key, value })),
  };
}

const CHANGES: [number, number, TaskState][] = [
  [0, 0, "PENDING"],
  [0, 1, "PENDING"],
  [10, 0, "RUNNING"],
  [100, 0, "SUCCEEDED"],
  [100, 1, "RUNNING"],
  [200, 1, "FAILED"],
  [250, 1, "PENDING"],
  [260, 1, "RUNNING"],
  [300, 1, "SUCCEEDED"],
];

/** The states at `t` the slow way: every change up to it, from the start. */
function bruteForce(t: number): Map<string, TaskState> {
  const states = new Map<string, TaskState>();
  for (const [at, node, state] of CHANGES) if (T + at <= t) states.set(["bp.a", "bp.b"][node]!, state);
  return states;
}

describe("a run replayed from its history", () => {
  const attempts = [attempt("bp.a", 1, 10, 100), attempt("bp.b", 1, 100, 200, "failed"), attempt("bp.b", 2, 260, 300)];

  it("stands at any moment as its changes up to it say, moving forward and back in any order", () => {
    const replay = new Replay(history(["bp.a", "bp.b"], CHANGES), attempts);
    // A walk that goes forward, back to the start, past the end and into the middle.
    for (const ms of [150, 0, 300, 5, 250, 100, 99, -1, 400, 255, 10, 200]) {
      replay.seek(T + ms);
      expect(replay.states, `at ${ms}`).toEqual(bruteForce(T + ms));
    }
  });

  it("steps through every moment something happened, and says the session's state then", () => {
    const replay = new Replay(history(["bp.a", "bp.b"], CHANGES, [[100, "n", 1]]), attempts);
    expect(Array.from(replay.moments, (m) => m - T)).toEqual([0, 10, 100, 200, 250, 260, 300]);
    expect([replay.start - T, replay.end - T]).toEqual([0, 300]);
    expect(replay.step(T + 100, 1) - T).toBe(200);
    expect(replay.step(T + 150, 1) - T).toBe(200);
    expect(replay.step(T + 150, -1) - T).toBe(100);
    expect(replay.step(T + 100, -1) - T).toBe(10);
    expect(replay.step(T + 300, 1) - T).toBe(300);
    expect(replay.step(T, -1) - T).toBe(0);
    expect(replay.sessionStateAt(T - 1)).toBe("pending");
    expect(replay.sessionStateAt(T + 299)).toBe("running");
    expect(replay.sessionStateAt(T + 300)).toBe("completed");
  });

  it("gives the data as it was: each key's value then, and the write that set it", () => {
    const replay = new Replay(history(["bp.a"], [], [[100, "n", 1], [200, "n", 2], [200, "m", "x"]]), []);
    expect(replay.dataAt(T + 99).size).toBe(0);
    expect(replay.dataAt(T + 150).get("bp")?.get("n")?.value).toBe(1);
    const later = replay.dataAt(T + 200).get("bp")!;
    expect([later.get("n")?.value, later.get("m")?.value]).toEqual([2, "x"]);
  });

  it("says whether an attempt had begun, ran or had ended at a moment", () => {
    const a = attempt("bp.a", 1, 10, 100);
    expect([attemptAt(a, T + 5), attemptAt(a, T + 10), attemptAt(a, T + 99), attemptAt(a, T + 100)]).toEqual([
      "not started",
      "running",
      "running",
      "ended",
    ]);
    expect(attemptAt(attempt("bp.b", 1, 10, null), T + 1e9)).toBe("running");
  });
});
