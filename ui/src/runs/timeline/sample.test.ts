import { describe, expect, it } from "vitest";
import { buildModel } from "./model";
import { generateAttempts, generateLoopingSession, sampleNow } from "./sample";

describe("the sample session", () => {
  it("has as many attempts as asked, in start order", () => {
    for (const n of [0, 1, 37, 5_000]) {
      const attempts = generateAttempts(n, 11);
      expect(attempts).toHaveLength(n);
      expect(attempts.every((a, i) => i === 0 || attempts[i - 1]!.started_ms <= a.started_ms)).toBe(true);
    }
  });

  it("is the same for the same seed and differs for another", () => {
    expect(generateAttempts(500, 4)).toEqual(generateAttempts(500, 4));
    expect(generateAttempts(500, 4)).not.toEqual(generateAttempts(500, 5));
  });

  it("has what a timeline must cope with: inner instances, retries, failures, skips and running attempts", () => {
    const attempts = generateAttempts(10_000, 1);
    const model = buildModel(attempts);
    expect(model.instances).toBeGreaterThan(3);
    expect(model.rows[0]).toMatchObject({ kind: "instance", instance: "release" });
    expect(model.running).toBeGreaterThan(0);
    const states = new Set(attempts.map((a) => a.state));
    for (const state of ["succeeded", "failed", "skipped", "running"]) expect(states).toContain(state);
    expect(attempts.some((a) => a.attempt > 1)).toBe(true);
    // A running attempt started before the time the session is looked at, and nothing after it runs.
    const now = sampleNow(attempts);
    expect(attempts.every((a) => a.started_ms <= now && (a.finished_ms == null || a.finished_ms <= now))).toBe(true);
  });

  it("keeps a task's attempts apart: each starts once the one before has ended", () => {
    const ends = new Map<string, number>();
    for (const a of generateAttempts(3_000, 2)) {
      expect(a.started_ms).toBeGreaterThanOrEqual(ends.get(a.node) ?? -Infinity);
      ends.set(a.node, a.finished_ms ?? Infinity);
    }
  });

  it("has a session that loops: its while scope runs as often as asked, its retry scope more, and its last attempt runs", () => {
    const attempts = generateLoopingSession(50, 3);
    const of = (task: string) => attempts.filter((a) => a.task === task);
    expect(of("poll")).toHaveLength(50);
    expect(of("fetch").length).toBeGreaterThan(50);
    expect(of("verify")).toHaveLength(of("fetch").length);
    expect(attempts.filter((a) => a.state === "running")).toEqual([attempts[attempts.length - 1]]);
    expect(attempts.every((a, i) => i === 0 || attempts[i - 1]!.finished_ms! < a.started_ms)).toBe(true);
    // Each attempt names its passes as the store records them: the while loop's, then the retry's.
    expect(of("poll").map((a) => a.iterations.map((i) => i.iteration))).toEqual(of("poll").map((_, k) => [k + 1]));
    expect(of("checkout")[0]!.iterations).toEqual([]);
    const retried = of("fetch").find((a) => a.iterations[1]!.iteration === 2)!;
    expect(retried.iterations.map((i) => i.scope)).toEqual(["poll", "fetch"]);
  });
});
