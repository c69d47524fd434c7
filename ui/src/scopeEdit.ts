// Scopes as the editor changes them: wrapping tasks in a new scope, removing one, and writing its
// `scope_start` exactly as docs/format.md §1 has it (`name`, `retry_policy {retries, backoff
// {constant_ms}}`, `while_policy {condition, max_iterations}`, no other keys). Which tasks a scope
// holds is the facade's answer (`blueprint_scopes`); what is checked here is only what the user
// must fix in the selection before there is a scope to ask about.
import type { Scope } from "./backend/generated";
import { mapTask, setTaskField, type Blueprint, type Task } from "./blueprint";

export type ScopePolicyName = "skip" | "retry" | "while";

/** A `scope_start` as the file has it; keys the editor does not know are kept as they are. */
export type ScopeStartJson = {
  name?: string;
  retry_policy?: { retries?: unknown; backoff?: { constant_ms?: unknown; [key: string]: unknown }; [key: string]: unknown };
  while_policy?: { condition?: unknown; max_iterations?: unknown; [key: string]: unknown };
  [key: string]: unknown;
};

/** What a new retry or while policy starts with, until the user changes it. */
const NEW_RETRY = { retries: 1 };
/** A bound from the start: a while scope without one loops forever if its condition stays true. */
const NEW_WHILE = { condition: "", max_iterations: 10 };

/** The `scope_start` of a task, or null when it opens no scope. */
export function scopeStartOf(task: Task | undefined): ScopeStartJson | null {
  const start = task?.scope_start;
  return start !== null && typeof start === "object" && !Array.isArray(start) ? (start as ScopeStartJson) : null;
}

/**
 * Makes the tasks `ids` one scope: the one task among them that no other of them precedes (through
 * dependencies, directly or not) opens it, the one that precedes none of the others closes it. A
 * selection the scope would not hold exactly is refused with the reason and the tasks concerned,
 * and so is one that would interlace with a scope of `existing` (the facade's answer).
 */
export function wrapInScope(
  blueprint: Blueprint,
  ids: string[],
  name?: string,
  existing: Scope[] = [],
): { blueprint: Blueprint; start: string; end: string } | { error: string } {
  const chosen = [...new Set(ids)];
  if (chosen.length === 0) return { error: "Select the tasks the scope should hold first." };
  const byId = new Map<string, Task>();
  for (const t of blueprint.tasks) if (!byId.has(t.id)) byId.set(t.id, t);
  const missing = chosen.filter((id) => !byId.has(id));
  if (missing.length > 0) return { error: `There is no task ${list(missing)}.` };

  const before = (id: string) => (byId.get(id)?.depends_on ?? []).map((d) => d.id);
  const afterMap = new Map<string, string[]>();
  for (const t of blueprint.tasks) {
    for (const d of t.depends_on ?? []) {
      const next = afterMap.get(d.id);
      if (next) next.push(t.id);
      else afterMap.set(d.id, [t.id]);
    }
  }
  const after = (id: string) => afterMap.get(id) ?? [];
  const selected = new Set(chosen);
  // Entries: no other chosen task runs before them; exits: none runs after them.
  const entries = chosen.filter((id) => !someReached(id, before, selected));
  const exits = chosen.filter((id) => !someReached(id, after, selected));
  if (entries.length === 0 || exits.length === 0) {
    return { error: `The tasks ${list(chosen)} depend on each other in a cycle: a scope needs a first and a last task.` };
  }
  if (entries.length > 1) {
    return {
      error: `A scope has one first task, but ${list(entries)} each start the selection: select a task they all depend on too, or fewer tasks.`,
    };
  }
  if (exits.length > 1) {
    return {
      error: `A scope has one last task, but ${list(exits)} each end the selection: select a task that depends on them all too, or fewer tasks.`,
    };
  }
  const start = entries[0]!;
  const end = exits[0]!;
  if (scopeStartOf(byId.get(start))) return { error: `${start} already opens a scope: a task opens one scope at most.` };
  const closes = byId.get(end)?.scope_end;
  if (typeof closes === "string" && closes !== "") {
    return { error: `${end} already closes the scope of ${closes}: a task closes one scope at most.` };
  }
  // The scope holds what lies between its start and its end, selected or not: the selection must
  // be that whole stretch, or the scope would take in tasks the user did not choose.
  const between = reach(start, after);
  const toEnd = reach(end, before);
  const extra = blueprint.tasks.filter((t) => between.has(t.id) && toEnd.has(t.id) && !selected.has(t.id)).map((t) => t.id);
  if (extra.length > 0) {
    const left = unique(extra);
    return { error: `A scope from ${start} to ${end} would also hold ${list(left)}: select ${left.length > 1 ? "them" : "it"} too.` };
  }

  // Scopes nest or stay apart: one that shares tasks with the new one must hold it or lie in it.
  for (const other of existing) {
    const shared = other.members.filter((m) => selected.has(m));
    if (shared.length === 0 || shared.length === selected.size || shared.length === other.members.length) continue;
    return {
      error: `The scope opened by ${other.start} shares ${list(shared)} with the selection, but neither holds the other: scopes must nest or stay apart.`,
    };
  }

  const label = name?.trim() ?? "";
  let changed = mapTask(blueprint, start, (t) => ({ ...t, scope_start: label === "" ? {} : { name: label } }));
  changed = setTaskField(changed, end, "scope_end", start);
  return { blueprint: changed, start, end };
}

/** Removes the scope opened by `start`: its `scope_start`, and the `scope_end` that closes it. */
export function unwrapScope(blueprint: Blueprint, start: string): Blueprint {
  const tasks = blueprint.tasks.map((t) => {
    let task = t;
    if (task.id === start && "scope_start" in task) {
      const { scope_start: _removed, ...rest } = task;
      task = rest as Task;
    }
    if (task.scope_end === start) {
      const { scope_end: _removed, ...rest } = task;
      task = rest as Task;
    }
    return task;
  });
  return tasks.every((t, i) => t === blueprint.tasks[i]) ? blueprint : { ...blueprint, tasks };
}

/** The policy a `scope_start` runs with: retry wins over while, and neither is skip. */
export function policyOf(start: ScopeStartJson): ScopePolicyName {
  if (start.retry_policy) return "retry";
  if (start.while_policy) return "while";
  return "skip";
}

/** Changes the `scope_start` of task `start` (nothing when it opens no scope). */
export function updateScopeStart(
  blueprint: Blueprint,
  start: string,
  change: (scope: ScopeStartJson) => ScopeStartJson,
): Blueprint {
  return mapTask(blueprint, start, (t) => {
    const scope = scopeStartOf(t);
    if (!scope) return t;
    const changed = change(scope);
    return changed === scope ? t : { ...t, scope_start: changed };
  });
}

/**
 * Gives the scope another policy. The other policy's key goes (a file declaring both runs the
 * retry and ignores the while policy, which would mislead a reader); the chosen policy keeps what
 * it had, or starts from a default the user then changes.
 */
export function setScopePolicy(blueprint: Blueprint, start: string, policy: ScopePolicyName): Blueprint {
  return updateScopeStart(blueprint, start, (scope) => {
    if (policyOf(scope) === policy && !(scope.retry_policy && scope.while_policy)) return scope;
    const { retry_policy, while_policy, ...rest } = scope;
    if (policy === "retry") return { ...rest, retry_policy: retry_policy ?? { ...NEW_RETRY } };
    if (policy === "while") return { ...rest, while_policy: while_policy ?? { ...NEW_WHILE } };
    return rest;
  });
}

/** Sets the scope's name; an empty one is removed. */
export function setScopeName(blueprint: Blueprint, start: string, name: string): Blueprint {
  return updateScopeStart(blueprint, start, (scope) => withKey(scope, "name", name === "" ? undefined : name));
}

/** Sets how many times a retry scope runs again. */
export function setRetries(blueprint: Blueprint, start: string, retries: number): Blueprint {
  return updateScopeStart(blueprint, start, (scope) =>
    scope.retry_policy ? { ...scope, retry_policy: withKey(scope.retry_policy, "retries", retries) } : scope,
  );
}

/** Sets (or, with undefined, removes) a retry scope's constant wait between runs. */
export function setBackoff(blueprint: Blueprint, start: string, constantMs: number | undefined): Blueprint {
  return updateScopeStart(blueprint, start, (scope) => {
    const retry = scope.retry_policy;
    if (!retry) return scope;
    const backoff = withKey(retry.backoff ?? {}, "constant_ms", constantMs);
    // A backoff left without a wait says nothing: it goes with its last key.
    const changed = withKey(retry, "backoff", Object.keys(backoff).length > 0 ? backoff : undefined);
    return changed === retry ? scope : { ...scope, retry_policy: changed };
  });
}

/** Sets a while scope's condition (kept even when empty: the policy requires one). */
export function setWhileCondition(blueprint: Blueprint, start: string, condition: string): Blueprint {
  return updateScopeStart(blueprint, start, (scope) =>
    scope.while_policy ? { ...scope, while_policy: withKey(scope.while_policy, "condition", condition) } : scope,
  );
}

/** Sets (or, with undefined, removes) how many runs a while scope may make in all. */
export function setMaxIterations(blueprint: Blueprint, start: string, max: number | undefined): Blueprint {
  return updateScopeStart(blueprint, start, (scope) =>
    scope.while_policy ? { ...scope, while_policy: withKey(scope.while_policy, "max_iterations", max) } : scope,
  );
}

/** Sets the skip condition: the start task's own `condition` (an empty one is removed). */
export function setSkipCondition(blueprint: Blueprint, start: string, condition: string): Blueprint {
  return setTaskField(blueprint, start, "condition", condition);
}

/**
 * A whole number typed into a policy field: its value, nothing for an empty optional field, or
 * why it cannot be written.
 */
export function parseCount(
  text: string,
  min: number,
  optional: boolean,
): { value: number | undefined } | { error: string } {
  const trimmed = text.trim();
  if (trimmed === "") return optional ? { value: undefined } : { error: "Required." };
  if (!/^\d+$/.test(trimmed)) return { error: `A whole number of at least ${min}.` };
  const value = Number(trimmed);
  if (!Number.isSafeInteger(value)) return { error: "Too large." };
  if (value < min) return { error: `At least ${min}.` };
  return { value };
}

/** `object` with `key` set to `value`, or removed for undefined; the same object when unchanged. */
function withKey<T extends Record<string, unknown>>(object: T, key: string, value: unknown): T {
  if (value === undefined) {
    if (!(key in object)) return object;
    const { [key]: _removed, ...rest } = object;
    return rest as T;
  }
  return object[key] === value ? object : { ...object, [key]: value };
}

/** Whether a task of `targets` other than `from` is reached from `from` by `next`. */
function someReached(from: string, next: (id: string) => string[], targets: Set<string>): boolean {
  const seen = reach(from, next);
  // A cycle back to `from` itself says nothing about the other tasks.
  seen.delete(from);
  for (const id of seen) if (targets.has(id)) return true;
  return false;
}

/** The tasks reachable from `from` by `next`, `from` included. */
function reach(from: string, next: (id: string) => string[]): Set<string> {
  const seen = new Set<string>([from]);
  const todo = [from];
  for (let id = todo.pop(); id !== undefined; id = todo.pop()) {
    for (const n of next(id)) {
      if (!seen.has(n)) {
        seen.add(n);
        todo.push(n);
      }
    }
  }
  return seen;
}

function unique(ids: string[]): string[] {
  return [...new Set(ids)];
}

/** Task ids for a message: `a`, `a and b`, `a, b and c`. */
function list(ids: string[]): string {
  if (ids.length <= 1) return ids.join("");
  return `${ids.slice(0, -1).join(", ")} and ${ids.at(-1)}`;
}
