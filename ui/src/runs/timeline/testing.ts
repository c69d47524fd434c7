// The attempts the timeline's tests are made of, as the store answers them.
import type { Attempt, AttemptState } from "../../backend/generated";

/** 2026-01-01 09:00 UTC: the tests' sessions start here. */
export const T = 1_767_258_000_000;

/** Attempt `n` at `node` (`{instance}.{task}`), from `start` to `finish` ms after `T` (null: it runs). */
export function attempt(node: string, n: number, start: number, finish: number | null, state?: AttemptState): Attempt {
  const dot = node.lastIndexOf(".");
  return {
    run_id: `${node}#${n}`,
    session_id: "s",
    node,
    instance: node.slice(0, dot),
    task: node.slice(dot + 1),
    attempt: n,
    state: state ?? (finish === null ? "running" : "succeeded"),
    agent: "shell",
    started_ms: T + start,
    finished_ms: finish === null ? null : T + finish,
    iterations: [],
  };
}

/** The attempt, run in the given passes of the loops around its task (of instance `bp`), the outermost first. */
export function inLoops(a: Attempt, ...passes: [scope: string, name: string, iteration: number][]): Attempt {
  return { ...a, iterations: passes.map(([scope, name, iteration]) => ({ instance: "bp", scope, name, iteration })) };
}
