// Scopes as the editor changes them: wrapping tasks in a new scope, removing one, and writing its
// `scope_start` exactly as docs/format.md §1 has it (`name`, `retry_policy {retries, backoff
// {constant_ms}}`, `while_policy {condition, max_iterations}`, no other keys). Which tasks a scope
// holds and whether a selection makes one are the facade's answers (`blueprint_scopes`,
// `check_scope`).
import { downstreamOf, mapTask, setTaskField, type Blueprint, type Task } from "./blueprint";

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
 * Opens a scope at `start` and closes it at `end`, as the facade's `check_scope` found them for
 * the tasks chosen (it also says why tasks make no scope): `scope_start` gets the name when one
 * is given, and `scope_end` names the start.
 */
export function openScope(blueprint: Blueprint, start: string, end: string, name?: string): Blueprint {
  const label = name?.trim() ?? "";
  const opened = mapTask(blueprint, start, (t) => ({ ...t, scope_start: label === "" ? {} : { name: label } }));
  return setTaskField(opened, end, "scope_end", start);
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

/**
 * After `removed` left the blueprint (`after` is `before` without them): a scope whose closing
 * task went and whose start stayed closes at the task the removed end waited for inside the
 * scope (the start itself when no other); with no such task free to close it, the scope goes.
 * Answers the blueprint and what happened to each scope, to tell the user.
 */
export function keepScopesClosed(
  before: Blueprint,
  after: Blueprint,
  removed: ReadonlySet<string>,
): { blueprint: Blueprint; moved: { start: string; from: string; to: string }[]; dropped: string[] } {
  let blueprint = after;
  const moved: { start: string; from: string; to: string }[] = [];
  const dropped: string[] = [];
  for (const end of before.tasks) {
    const start = end.scope_end;
    if (!removed.has(end.id) || typeof start !== "string" || removed.has(start)) continue;
    if (!blueprint.tasks.some((t) => t.id === start)) continue;
    const inside = new Set([start, ...downstreamOf(before, start)]);
    const free = (id: string) => {
      const t = blueprint.tasks.find((x) => x.id === id);
      return t !== undefined && (t.scope_end === undefined || t.scope_end === null);
    };
    const to = (end.depends_on ?? []).map((d) => d.id).find((id) => !removed.has(id) && inside.has(id) && free(id));
    if (to !== undefined) {
      blueprint = setTaskField(blueprint, to, "scope_end", start);
      moved.push({ start, from: end.id, to });
    } else {
      blueprint = unwrapScope(blueprint, start);
      dropped.push(start);
    }
  }
  return { blueprint, moved, dropped };
}
