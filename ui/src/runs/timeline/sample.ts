// A made-up session for the timeline's tests and benchmarks: a root blueprint and inner
// blueprint instances that open one after the other, tasks that fail and are retried, tasks that
// run again and again (a while scope's iterations), instant skips, and the latest attempts still
// running; and a session that loops, each attempt naming the iterations it ran in, as the store
// records them. The same seed gives the same session, so a benchmark compares like with like.
import type { Attempt, AttemptState, ScopeIteration } from "../../backend/generated";

/** 2026-01-01 09:00 UTC: a fixed start, so the session does not depend on the day it is made. */
const SESSION_START_MS = 1_767_258_000_000;

const ROOT = "release";
const INNER = ["build", "test", "deploy", "report", "migrate", "index"];
const COMPOSITES = ["compile", "verify", "ship", "summarise", "upgrade", "search"];
const TASKS = ["checkout", "fetch", "configure", "compile", "lint", "unit_tests", "package", "sign", "upload", "notify", "render", "verify"];

/** Marsaglia's xorshift: a few operations per number and fully determined by the seed. */
function randomSource(seed: number): () => number {
  let state = seed | 0 || 0x2545f491;
  return () => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return (state >>> 0) / 4_294_967_296;
  };
}

/** A duration spread evenly on a log scale between `low` and `high`, as task times are. */
function logUniform(random: () => number, low: number, high: number): number {
  return Math.round(Math.exp(Math.log(low) + random() * (Math.log(high) - Math.log(low))));
}

type Node = { id: string; instance: string; task: string; lastEnd: number; attempts: number };

export function generateAttempts(n: number, seed: number): Attempt[] {
  const random = randomSource(seed);
  const instanceCount = Math.min(12, Math.max(2, Math.round(n / 1500) + 2));
  const nodeCount = Math.min(400, Math.max(4, Math.ceil(n / 40)));
  const perInstance = Math.ceil(nodeCount / instanceCount);
  const nodes: Node[] = [];
  for (let i = 0; i < instanceCount; i++) {
    const round = Math.floor((i - 1) / INNER.length);
    const instance =
      i === 0 ? ROOT : `${INNER[(i - 1) % INNER.length]}_${COMPOSITES[(i - 1) % COMPOSITES.length]}${round > 0 ? round + 1 : ""}`;
    for (let t = 0; t < perInstance; t++) {
      const task = `${TASKS[t % TASKS.length]}${t >= TASKS.length ? Math.floor(t / TASKS.length) + 1 : ""}`;
      nodes.push({ id: `${instance}.${task}`, instance, task, lastEnd: -Infinity, attempts: 0 });
    }
  }

  // Each inner instance opens a little later than the one before, as composites are reached.
  const opensAt = (instance: number) => Math.floor((instance * n) / (instanceCount * 2));
  const retries: Node[] = [];
  const planned: { node: Node; start: number; duration: number; state: AttemptState }[] = [];
  let clock = SESSION_START_MS;
  let opened = 0;
  for (let k = 0; k < n; k++) {
    clock += Math.floor(random() * random() * 400);
    while (opened < instanceCount && opensAt(opened) <= k) opened += 1;
    const open = opened * perInstance;
    let node: Node | undefined = random() < 0.5 ? retries.shift() : undefined;
    for (let tries = 0; !node || (node.lastEnd > clock && tries < 4); tries++) {
      node = nodes[Math.floor(random() * open)]!;
    }
    // A node still busy starts its next attempt when the last one ends, as a retry would.
    clock = Math.max(clock, node.lastEnd);
    const roll = random();
    const duration = roll < 0.05 ? 0 : roll < 0.9 ? logUniform(random, 20, 3_000) : logUniform(random, 5_000, 180_000);
    const outcome = random();
    const state: AttemptState =
      duration === 0 ? "skipped" : outcome < 0.1 ? "failed" : outcome < 0.12 ? "cancelled" : "succeeded";
    if (state === "failed") retries.push(node);
    node.lastEnd = clock + duration;
    planned.push({ node, start: clock, duration, state });
  }

  // The session is looked at a moment after its latest start: what has not ended by then runs.
  const now = clock + 50;
  return planned.map(({ node, start, duration, state }, k): Attempt => {
    node.attempts += 1;
    const running = start + duration > now;
    const finalState = running ? "running" : state;
    return {
      run_id: `run-${k + 1}`,
      session_id: `sample-${seed}`,
      node: node.id,
      instance: node.instance,
      task: node.task,
      attempt: node.attempts,
      state: finalState,
      agent: "shell",
      started_ms: start,
      finished_ms: running ? null : start + duration,
      exit_code: finalState === "succeeded" ? 0 : finalState === "failed" ? 1 : null,
      error: finalState === "failed" ? { code: "exit-status", message: "the command exited with status 1" } : null,
      iterations: [],
    };
  });
}

/** The time the sample session is looked at: a moment after its latest start, as `generateAttempts` decides. */
export function sampleNow(attempts: readonly Attempt[]): number {
  return attempts.reduce((latest, a) => Math.max(latest, a.started_ms), SESSION_START_MS) + 50;
}

/**
 * A session of the root blueprint alone that loops: a checkout, then `iterations` runs of the while
 * scope "poll loop" (poll, fetch, verify, wait), whose retry scope (fetch, verify) runs fetch and
 * verify again when verify fails (at most twice in a row). Its last attempt still runs.
 */
export function generateLoopingSession(iterations: number, seed: number): Attempt[] {
  const random = randomSource(seed);
  const attempts: Attempt[] = [];
  const counts = new Map<string, number>();
  let clock = SESSION_START_MS;
  const pass = (scope: string, name: string, iteration: number): ScopeIteration => ({ instance: ROOT, scope, name, iteration });
  let around: ScopeIteration[] = [];
  const run = (task: string, low: number, high: number, state: AttemptState = "succeeded") => {
    const node = `${ROOT}.${task}`;
    const attempt = (counts.get(node) ?? 0) + 1;
    counts.set(node, attempt);
    const duration = logUniform(random, low, high);
    attempts.push({
      run_id: `run-${attempts.length + 1}`,
      session_id: `looping-${seed}`,
      node,
      instance: ROOT,
      task,
      attempt,
      state,
      agent: "shell",
      started_ms: clock,
      finished_ms: clock + duration,
      exit_code: state === "failed" ? 1 : 0,
      iterations: around,
    });
    // The next task starts a moment after this one ends, as the runner starts what it unblocked.
    clock += duration + 5;
  };
  run("checkout", 200, 2_000);
  for (let k = 0; k < iterations; k++) {
    const poll = pass("poll", "poll loop", k + 1);
    around = [poll];
    run("poll", 20, 200);
    for (let retries = 0; ; retries++) {
      around = [poll, pass("fetch", "fetch", retries + 1)];
      run("fetch", 50, 2_000);
      const failed = retries < 2 && random() < 0.2;
      run("verify", 20, 500, failed ? "failed" : "succeeded");
      if (!failed) break;
    }
    around = [poll];
    run("wait", 100, 1_000);
  }
  const last = attempts.pop()!;
  attempts.push({ ...last, state: "running", finished_ms: null, exit_code: null });
  return attempts;
}
