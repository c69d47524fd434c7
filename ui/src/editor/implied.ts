// Dependencies that add nothing: `to` depends on `from` finish-to-start, and already waits for
// `from` through a chain of other finish-to-start dependencies (start → a → b, and b on start
// too). Such a dependency is drawn as implied, and the inspector offers to remove it. Only
// finish-to-start chains imply one: the other types do not wait for the end of what they name.
import { isFinishToStart, type Blueprint } from "../blueprint";
import { edgeId } from "./graph";

/** Past this many tasks the ancestor sets cost more than the hint is worth while editing. */
const MAX_TASKS = 3000;

/** The answers by blueprint: the canvas and the inspector ask of the same one. */
const answered = new WeakMap<Blueprint, Map<string, string[]>>();

/** Each implied dependency's edge id, with a chain that implies it: `[from, ..., to]`. */
export function impliedDependencies(blueprint: Blueprint): Map<string, string[]> {
  let found = answered.get(blueprint);
  if (!found) answered.set(blueprint, (found = findImplied(blueprint)));
  return found;
}

function findImplied(blueprint: Blueprint): Map<string, string[]> {
  const found = new Map<string, string[]>();
  const tasks = blueprint.tasks;
  if (tasks.length > MAX_TASKS) return found;
  const index = new Map(tasks.map((t, i) => [t.id, i]));
  // The finish-to-start dependencies of each task, by index.
  const fs: number[][] = tasks.map((t) =>
    (t.depends_on ?? []).filter((d) => isFinishToStart(d) && index.has(d.id) && d.id !== t.id).map((d) => index.get(d.id)!),
  );
  const order = topological(fs);
  if (order === null) return found; // a cycle: the checks say so; nothing is implied meanwhile
  // Every task's ancestors through finish-to-start dependencies, as bit sets.
  const words = Math.ceil(tasks.length / 32);
  const ancestors = tasks.map(() => new Uint32Array(words));
  for (const v of order) {
    for (const u of fs[v]!) {
      const into = ancestors[v]!;
      const from = ancestors[u]!;
      for (let w = 0; w < words; w++) into[w]! |= from[w]!;
      into[u >>> 5]! |= 1 << (u & 31);
    }
  }
  const has = (v: number, u: number) => (ancestors[v]![u >>> 5]! & (1 << (u & 31))) !== 0;
  for (let v = 0; v < tasks.length; v++) {
    for (const u of fs[v]!) {
      const via = fs[v]!.find((z) => z !== u && has(z, u));
      if (via === undefined) continue;
      found.set(edgeId(tasks[u]!.id, tasks[v]!.id), [...chain(fs, has, u, via).map((i) => tasks[i]!.id), tasks[v]!.id]);
    }
  }
  return found;
}

/** A chain of finish-to-start dependencies from `from` to `to` (`to` has `from` as an ancestor). */
function chain(fs: number[][], has: (v: number, u: number) => boolean, from: number, to: number): number[] {
  const path = [to];
  let at = to;
  while (at !== from) {
    at = fs[at]!.find((z) => z === from) ?? fs[at]!.find((z) => has(z, from))!;
    path.push(at);
  }
  return path.reverse();
}

/** The tasks, each after those it depends on; null when they form a cycle. */
function topological(before: number[][]): number[] | null {
  const n = before.length;
  const after: number[][] = before.map(() => []);
  const waiting = before.map((b) => new Set(b).size);
  before.forEach((b, v) => new Set(b).forEach((u) => after[u]!.push(v)));
  const ready = waiting.flatMap((w, v) => (w === 0 ? [v] : []));
  const order: number[] = [];
  while (ready.length > 0) {
    const v = ready.pop()!;
    order.push(v);
    for (const w of after[v]!) if (--waiting[w]! === 0) ready.push(w);
  }
  return order.length === n ? order : null;
}
