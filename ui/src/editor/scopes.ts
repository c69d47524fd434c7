// Scopes as regions of the canvas. A task with `scope_start` opens a scope, the (last) task whose
// `scope_end` names it closes it, and its members are the tasks reachable forward from the start
// and backward from the end, as the core derives them (orrery-blueprint's scope.rs).
import type { Blueprint, Task } from "../blueprint";
import { NODE_HEIGHT, NODE_WIDTH, type Positions } from "../store/positions";

export type Scope = {
  start: string;
  end: string;
  /** Start and end included, in blueprint order. */
  members: string[];
  /** The scope's name and its policy: skip, retry N, or while a condition holds. */
  label: string;
  policy: "skip" | "retry" | "while";
  /** How many scopes nest inside it, at most: the deeper, the more room around its members. */
  inner: number;
};

export type Region = Scope & { x: number; y: number; width: number; height: number };

const PAD = 16;
const PAD_PER_LEVEL = 14;
/** Room above the members for the label. */
const LABEL = 22;

type ScopeStart = {
  name?: unknown;
  retry_policy?: { retries?: unknown } | null;
  while_policy?: { condition?: unknown; max_iterations?: unknown } | null;
};

export function scopesOf(blueprint: Blueprint): Scope[] {
  const ends = new Map<string, string>();
  for (const t of blueprint.tasks) if (typeof t.scope_end === "string" && t.scope_end !== "") ends.set(t.scope_end, t.id);
  const after = new Map<string, string[]>();
  for (const t of blueprint.tasks) {
    for (const d of t.depends_on ?? []) {
      const next = after.get(d.id);
      if (next) next.push(t.id);
      else after.set(d.id, [t.id]);
    }
  }
  const byId = new Map<string, Task>();
  for (const t of blueprint.tasks) if (!byId.has(t.id)) byId.set(t.id, t);
  const ids = [...byId.keys()];

  const scopes: Omit<Scope, "inner">[] = [];
  const seen = new Set<string>();
  for (const t of blueprint.tasks) {
    if (!t.scope_start || typeof t.scope_start !== "object" || seen.has(t.id)) continue;
    seen.add(t.id);
    const end = ends.get(t.id);
    if (end === undefined) continue;
    const backward = reach(end, () => true, (id) => (byId.get(id)?.depends_on ?? []).map((d) => d.id));
    if (!backward.has(t.id)) continue; // the end is not downstream of the start: nothing to draw
    // Forward from the start through tasks that lead to the end: the tasks between the two.
    const between = reach(t.id, (id) => backward.has(id), (id) => after.get(id) ?? []);
    const members = ids.filter((id) => between.has(id));
    scopes.push({ start: t.id, end, members, ...describe(t) });
  }
  // A scope inside another has all its members in the other, and fewer.
  const memberSets = new Map(scopes.map((s) => [s, new Set(s.members)]));
  const inside = (a: Omit<Scope, "inner">, b: Omit<Scope, "inner">) =>
    a !== b && a.members.length < b.members.length && a.members.every((m) => memberSets.get(b)!.has(m));
  const depth = new Map<Omit<Scope, "inner">, number>();
  const inner = (s: Omit<Scope, "inner">): number => {
    let d = depth.get(s);
    if (d === undefined) {
      d = Math.max(0, ...scopes.filter((o) => inside(o, s)).map((o) => inner(o) + 1));
      depth.set(s, d);
    }
    return d;
  };
  return scopes.map((s) => ({ ...s, inner: inner(s) }));
}

function describe(task: Task): { label: string; policy: Scope["policy"] } {
  const start = task.scope_start as ScopeStart;
  const name = typeof start.name === "string" && start.name !== "" ? start.name : task.id;
  if (start.retry_policy) return { label: `${name} · retry ${String(start.retry_policy.retries ?? "?")}`, policy: "retry" };
  if (start.while_policy) {
    const max = start.while_policy.max_iterations;
    const bound = max === undefined || max === null ? "" : `, max ${String(max)}`;
    return { label: `${name} · while ${String(start.while_policy.condition ?? "")}${bound}`, policy: "while" };
  }
  const condition = typeof task.condition === "string" && task.condition !== "" ? ` unless ${task.condition}` : "";
  return { label: `${name} · skip${condition}`, policy: "skip" };
}

/** The tasks reachable from `from` by `next`, through tasks that `within` accepts. */
function reach(from: string, within: (id: string) => boolean, next: (id: string) => string[]): Set<string> {
  const seen = new Set([from]);
  const todo = [from];
  for (let id = todo.pop(); id !== undefined; id = todo.pop()) {
    for (const n of next(id)) {
      if (!seen.has(n) && within(n)) {
        seen.add(n);
        todo.push(n);
      }
    }
  }
  return seen;
}

/** Each scope's rectangle around its placed members; outer scopes leave room for inner ones. */
export function regionsOf(scopes: Scope[], positions: Positions): Region[] {
  return scopes.flatMap((s) => {
    const placed = s.members.flatMap((id) => (positions[id] ? [positions[id]] : []));
    if (placed.length === 0) return [];
    const pad = PAD + PAD_PER_LEVEL * s.inner;
    const left = Math.min(...placed.map((p) => p.x)) - pad;
    const top = Math.min(...placed.map((p) => p.y)) - pad - LABEL * (s.inner + 1);
    const right = Math.max(...placed.map((p) => p.x)) + NODE_WIDTH + pad;
    const bottom = Math.max(...placed.map((p) => p.y)) + NODE_HEIGHT + pad;
    return [{ ...s, x: left, y: top, width: right - left, height: bottom - top }];
  });
}
