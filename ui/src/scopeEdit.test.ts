import { describe, expect, it } from "vitest";
import type { Blueprint, Task } from "./blueprint";
import {
  openScope,
  parseCount,
  setBackoff,
  setMaxIterations,
  setRetries,
  setScopeName,
  setScopePolicy,
  setSkipCondition,
  setWhileCondition,
  unwrapScope,
} from "./scopeEdit";

const fs = (...ids: string[]) => ids.map((id) => ({ id, type: "FS" as const }));
// start -> a -> b -> d -> end, and a -> c -> d beside b.
const diamond: Blueprint = {
  id: "bp",
  tasks: [
    { id: "start", type: "system.start" },
    { id: "a", type: "shell.run", depends_on: fs("start") },
    { id: "b", type: "shell.run", depends_on: fs("a") },
    { id: "c", type: "shell.run", depends_on: fs("a") },
    { id: "d", type: "shell.run", depends_on: fs("b", "c") },
    { id: "end", type: "system.end", depends_on: fs("d") },
  ],
};
const task = (b: Blueprint, id: string): Task | undefined => b.tasks.find((t) => t.id === id);
describe("opening a scope where the facade found it", () => {
  it("writes the start's scope_start with the trimmed name and the end's scope_end", () => {
    const blueprint = openScope(diamond, "a", "d", " fit ");
    expect(task(blueprint, "a")?.scope_start).toEqual({ name: "fit" });
    expect(task(blueprint, "d")?.scope_end).toBe("a");
    expect(blueprint.tasks.filter((t) => "scope_start" in t || "scope_end" in t).map((t) => t.id)).toEqual(["a", "d"]);
    expect(diamond.tasks[1]).not.toHaveProperty("scope_start"); // the blueprint given is left as it was
  });

  it("makes a one-task scope, which opens and closes at that task, with an empty scope_start", () => {
    const blueprint = openScope(diamond, "b", "b");
    expect(task(blueprint, "b")).toMatchObject({ scope_start: {}, scope_end: "b" });
  });

  it("unwraps a scope: its start and its end lose their keys, nothing else changes", () => {
    const blueprint = openScope(diamond, "a", "d");
    expect(unwrapScope(blueprint, "a")).toEqual(diamond);
    expect(unwrapScope(diamond, "a")).toBe(diamond); // nothing to remove: the same blueprint, no undo step
  });
});

describe("editing a scope's policy", () => {
  const scoped = openScope(diamond, "a", "d", "fit");
  const startOf = (b: Blueprint) => task(b, "a")?.scope_start;

  it("switching policy writes only the chosen policy's key, as docs/format.md §1 has scope_start", () => {
    const retry = setScopePolicy(scoped, "a", "retry");
    expect(startOf(retry)).toEqual({ name: "fit", retry_policy: { retries: 1 } });
    const loop = setScopePolicy(retry, "a", "while");
    expect(startOf(loop)).toEqual({ name: "fit", while_policy: { condition: "", max_iterations: 10 } });
    expect(startOf(setScopePolicy(loop, "a", "skip"))).toEqual({ name: "fit" });
    expect(setScopePolicy(scoped, "a", "skip")).toBe(scoped); // already skip: no change
  });

  it("a file that declares both policies keeps only the one that runs when its policy is chosen", () => {
    const both = { retry_policy: { retries: 3 }, while_policy: { condition: "x" } };
    const declared = { ...scoped, tasks: scoped.tasks.map((t) => (t.id === "a" ? { ...t, scope_start: both } : t)) };
    expect(startOf(setScopePolicy(declared, "a", "retry"))).toEqual({ retry_policy: { retries: 3 } });
    expect(startOf(setScopePolicy(declared, "a", "while"))).toEqual({ while_policy: { condition: "x" } });
  });

  it("writes the retry count and the backoff, and drops an emptied backoff", () => {
    let b = setRetries(setScopePolicy(scoped, "a", "retry"), "a", 4);
    b = setBackoff(b, "a", 250);
    expect(startOf(b)).toEqual({ name: "fit", retry_policy: { retries: 4, backoff: { constant_ms: 250 } } });
    expect(startOf(setBackoff(b, "a", undefined))).toEqual({ name: "fit", retry_policy: { retries: 4 } });
    expect(setRetries(scoped, "a", 2)).toBe(scoped); // a skip scope has no retries to set
  });

  it("writes the while condition and the bound, and a name that empties is removed", () => {
    let b = setWhileCondition(setScopePolicy(scoped, "a", "while"), "a", "n > 0");
    b = setMaxIterations(b, "a", undefined);
    b = setScopeName(b, "a", "");
    expect(startOf(b)).toEqual({ while_policy: { condition: "n > 0" } });
  });

  it("the skip condition is the start task's own condition", () => {
    const b = setSkipCondition(scoped, "a", "ready");
    expect(task(b, "a")).toMatchObject({ condition: "ready", scope_start: { name: "fit" } });
    expect(task(setSkipCondition(b, "a", ""), "a")).not.toHaveProperty("condition");
  });

  it("reads a typed count, or says why it cannot be written", () => {
    expect(parseCount("3", 0, false)).toEqual({ value: 3 });
    expect(parseCount(" ", 1, true)).toEqual({ value: undefined });
    expect(parseCount("", 0, false)).toEqual({ error: "Required." });
    expect(parseCount("0", 1, true)).toEqual({ error: "At least 1." });
    expect(parseCount("-1", 0, false)).toHaveProperty("error");
    expect(parseCount("2.5", 0, false)).toHaveProperty("error");
    expect(parseCount("1e3", 0, false)).toHaveProperty("error");
  });
});
