// The blueprint as the editor changes it: the parsed JSON of the file, with every field the
// editor does not know kept as it was. Checking it is the facade's job (`validate_blueprint`).

import { TASK_TYPE, type DependencyType } from "./backend/generated";

export type Dependency = { id: string; type: DependencyType; [field: string]: unknown };
export type Task = { id: string; type: string; depends_on?: Dependency[]; [field: string]: unknown };
/** One input, output or param of a task (`get_from` for inputs, `set_to` for outputs). */
export type Io = { name: string; value?: unknown; [field: string]: unknown };
export const IO_FIELDS = ["inputs", "outputs", "params"] as const;
export type IoField = (typeof IO_FIELDS)[number];
export type Blueprint = { tasks: Task[]; [field: string]: unknown };

/** The blueprint in `text`, or why the editor cannot show it. */
export function parseBlueprint(text: string): { blueprint: Blueprint } | { error: string } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    return { error: `not JSON: ${(e as Error).message}` };
  }
  const tasks = (value as { tasks?: unknown } | null)?.tasks;
  if (!Array.isArray(tasks) || !tasks.every((t) => typeof t?.id === "string" && typeof t?.type === "string")) {
    return { error: "not a blueprint: it needs `tasks`, each with an `id` and a `type`" };
  }
  return { blueprint: value as Blueprint };
}

export function toText(blueprint: Blueprint): string {
  return JSON.stringify(blueprint, null, 4);
}

/** A new blueprint: a start and an end, the end after the start. `n` tells new ones apart. */
export function newBlueprint(n: number): Blueprint {
  return {
    id: n > 1 ? `untitled_${n}` : "untitled",
    name: n > 1 ? `Untitled ${n}` : "Untitled",
    version: "1.0",
    tasks: [
      { id: "start", type: TASK_TYPE.START },
      { id: "end", type: TASK_TYPE.END, depends_on: [{ id: "start", type: "FS" }] },
    ],
  };
}

/** Whether a blueprint still has the id and name `newBlueprint` gave it. */
export function isUntitled(blueprint: Blueprint): boolean {
  const { id, name } = blueprint;
  return typeof id === "string" && /^untitled(_\d+)?$/.test(id) && typeof name === "string" && /^Untitled( \d+)?$/.test(name);
}

/** Adds a task of `type` with an id not taken yet; answers the blueprint and the id. */
export function addTask(blueprint: Blueprint, type: string): { blueprint: Blueprint; id: string } {
  const base = (type.split(".").pop() ?? "task").replace(/[^A-Za-z0-9_]/g, "_");
  const taken = new Set(blueprint.tasks.map((t) => t.id));
  let n = 1;
  while (taken.has(`${base}_${n}`)) n += 1;
  const id = `${base}_${n}`;
  return { blueprint: { ...blueprint, tasks: [...blueprint.tasks, { id, type }] }, id };
}

/**
 * Where a new task goes in the graph: `after` a task (what depended on it depends on the new one
 * instead), `before` a task (the new one takes its dependencies), `into` a dependency (between its
 * two tasks, the dependency's type kept on the far side), or `from` a task (a new branch of it).
 */
export type Insertion = { after: string } | { before: string } | { into: { from: string; to: string } } | { from: string };

/** Adds a task of `type` wired in at `where`; answers the blueprint and the new task's id. */
export function insertTask(blueprint: Blueprint, type: string, where: Insertion): { blueprint: Blueprint; id: string } {
  const added = addTask(blueprint, type);
  const { id } = added;
  let b = added.blueprint;
  const dependOn = (from: string) => mapTask(b, id, (t) => ({ ...t, depends_on: [{ id: from, type: "FS" }] }));
  const rewire = (on: string, only?: string) =>
    b.tasks.map((t) =>
      t.id === id || (only !== undefined && t.id !== only)
        ? t
        : withDependencies(t, (deps) => (deps.some((d) => d.id === on) ? deps.map((d) => (d.id === on ? { ...d, id } : d)) : deps)),
    );
  if ("after" in where) {
    b = { ...b, tasks: rewire(where.after) };
    b = dependOn(where.after);
  } else if ("before" in where) {
    const before = b.tasks.find((t) => t.id === where.before);
    const taken = before?.depends_on ?? [];
    b = mapTask(b, id, (t) => (taken.length > 0 ? { ...t, depends_on: taken.map((d) => ({ ...d })) } : t));
    b = mapTask(b, where.before, (t) => ({ ...t, depends_on: [{ id, type: "FS" }] }));
  } else if ("into" in where) {
    b = { ...b, tasks: rewire(where.into.from, where.into.to) };
    b = dependOn(where.into.from);
  } else {
    b = dependOn(where.from);
  }
  return { blueprint: b, id };
}

/** Removes tasks and the dependencies on them. */
export function removeTasks(blueprint: Blueprint, ids: ReadonlySet<string>): Blueprint {
  const tasks = blueprint.tasks.filter((t) => !ids.has(t.id));
  return { ...blueprint, tasks: tasks.map((t) => withDependencies(t, (deps) => deps.filter((d) => !ids.has(d.id)))) };
}

/** Whether a dependency waits for the end of what it names (finish-to-start, the default). */
export function isFinishToStart(d: Dependency): boolean {
  return (d.type ?? "FS") === "FS";
}

/**
 * Before `ids` are removed: each task that waits for one of them (finish-to-start) waits instead
 * for what that one waited for, so that taking b out of a → b → c leaves a → c, not c alone.
 */
export function bridgeOver(blueprint: Blueprint, ids: ReadonlySet<string>): Blueprint {
  const byId = new Map(blueprint.tasks.map((t) => [t.id, t]));
  /** What a removed task waited for, finish-to-start, through removed tasks. */
  const upstream = (id: string, seen = new Set<string>()): string[] => {
    if (seen.has(id)) return [];
    seen.add(id);
    return (byId.get(id)?.depends_on ?? [])
      .filter(isFinishToStart)
      .flatMap((d) => (ids.has(d.id) ? upstream(d.id, seen) : [d.id]));
  };
  const tasks = blueprint.tasks.map((t) => {
    if (ids.has(t.id) || !(t.depends_on ?? []).some((d) => ids.has(d.id) && isFinishToStart(d))) return t;
    return withDependencies(t, (deps) => {
      const kept = [...deps];
      for (const d of deps) {
        if (!ids.has(d.id) || !isFinishToStart(d)) continue;
        for (const from of upstream(d.id)) {
          if (from !== t.id && !kept.some((k) => k.id === from)) kept.push({ id: from, type: "FS" });
        }
      }
      return kept;
    });
  });
  return tasks.every((t, i) => t === blueprint.tasks[i]) ? blueprint : { ...blueprint, tasks };
}

/** The tasks that run after `id`, through any chain of dependencies. */
export function downstreamOf(blueprint: Blueprint, id: string): Set<string> {
  const found = new Set<string>();
  const queue = [id];
  while (queue.length > 0) {
    const from = queue.pop()!;
    for (const t of blueprint.tasks) {
      if (!found.has(t.id) && t.depends_on?.some((d) => d.id === from)) {
        found.add(t.id);
        queue.push(t.id);
      }
    }
  }
  return found;
}

/** `to` starts to depend on `from` (finish-to-start), unless it already does. */
export function connect(blueprint: Blueprint, from: string, to: string): Blueprint {
  return mapTask(blueprint, to, (t) =>
    withDependencies(t, (deps) => (deps.some((d) => d.id === from) ? deps : [...deps, { id: from, type: "FS" }])),
  );
}

export function disconnect(blueprint: Blueprint, from: string, to: string): Blueprint {
  return mapTask(blueprint, to, (t) => withDependencies(t, (deps) => deps.filter((d) => d.id !== from)));
}

/** The dependency of `to` on `from` takes `type`. */
export function setDependencyType(blueprint: Blueprint, from: string, to: string, type: DependencyType): Blueprint {
  return mapTask(blueprint, to, (t) => withDependencies(t, (deps) => deps.map((d) => (d.id === from ? { ...d, type } : d))));
}

/**
 * Renames a task and every reference to it: the dependencies on it and the `scope_end` that
 * closes its scope. A taken or malformed id is refused with the reason.
 */
export function renameTask(blueprint: Blueprint, from: string, to: string): { blueprint: Blueprint } | { error: string } {
  if (from === to) return { blueprint };
  if (!blueprint.tasks.some((t) => t.id === from)) return { error: `there is no task ${from}` };
  if (to.trim() === "") return { error: "a task needs an id" };
  if (to !== to.trim()) return { error: "a task id does not start or end with spaces" };
  if (blueprint.tasks.some((t) => t.id === to)) return { error: `another task is already called ${to}` };
  const tasks = blueprint.tasks.map((t) => {
    let task = t.id === from ? { ...t, id: to } : t;
    if (task.scope_end === from) task = { ...task, scope_end: to };
    return withDependencies(task, (deps) =>
      deps.some((d) => d.id === from) ? deps.map((d) => (d.id === from ? { ...d, id: to } : d)) : deps,
    );
  });
  return { blueprint: { ...blueprint, tasks } };
}

/**
 * Sets (or, with undefined or "", removes) one plain field of a task: `description`,
 * `condition`... A list field left empty is removed too, as the canonical form has it.
 */
export function setTaskField(blueprint: Blueprint, id: string, field: string, value: unknown): Blueprint {
  return mapTask(blueprint, id, (t) => {
    const empty = value === undefined || value === "" || (Array.isArray(value) && value.length === 0);
    if (empty) {
      if (!(field in t)) return t;
      const { [field]: _removed, ...rest } = t;
      return rest as Task;
    }
    return t[field] === value ? t : { ...t, [field]: value };
  });
}

/** A task's inputs, outputs or params (none when the field is absent or not a list). */
export function ioOf(task: Task, field: IoField): Io[] {
  const list = task[field];
  return Array.isArray(list) ? (list as Io[]) : [];
}

/** Changes one row of a task's inputs, outputs or params. */
export function updateIo(blueprint: Blueprint, id: string, field: IoField, index: number, change: (io: Io) => Io): Blueprint {
  const task = blueprint.tasks.find((t) => t.id === id);
  if (!task) return blueprint;
  const rows = ioOf(task, field);
  const row = rows[index];
  if (!row) return blueprint;
  const changed = change(row);
  if (changed === row) return blueprint;
  return setTaskField(blueprint, id, field, rows.map((r, i) => (i === index ? changed : r)));
}

/** Sets (or, with undefined or "", removes) one key of an io row. */
export function withIoKey(io: Io, key: string, value: unknown): Io {
  if (value === undefined || value === "") {
    if (!(key in io)) return io;
    const { [key]: _removed, ...rest } = io;
    return rest as Io;
  }
  return io[key] === value ? io : { ...io, [key]: value };
}

/** Adds a row named `name` (or a free `field_N` name) to a task's inputs, outputs or params. */
export function addIo(blueprint: Blueprint, id: string, field: IoField, name?: string): Blueprint {
  const task = blueprint.tasks.find((t) => t.id === id);
  if (!task) return blueprint;
  const rows = ioOf(task, field);
  const base = field.replace(/s$/, "");
  let fresh = name ?? "";
  for (let n = rows.length + 1; fresh === "" || rows.some((r) => r.name === fresh); n += 1) fresh = `${base}_${n}`;
  return setTaskField(blueprint, id, field, [...rows, { name: fresh }]);
}

export function removeIo(blueprint: Blueprint, id: string, field: IoField, index: number): Blueprint {
  const task = blueprint.tasks.find((t) => t.id === id);
  if (!task) return blueprint;
  const rows = ioOf(task, field);
  if (index < 0 || index >= rows.length) return blueprint;
  return setTaskField(blueprint, id, field, rows.filter((_, i) => i !== index));
}

/**
 * Gives the param `name` of a task a value: its first row named so is changed, or a row
 * `{name, value}` added (params are a list, never a map). No value removes that row.
 */
export function setParam(blueprint: Blueprint, id: string, name: string, value: unknown): Blueprint {
  const task = blueprint.tasks.find((t) => t.id === id);
  if (!task) return blueprint;
  const rows = ioOf(task, "params");
  const index = rows.findIndex((r) => r.name === name);
  if (value === undefined) return index < 0 ? blueprint : removeIo(blueprint, id, "params", index);
  if (index < 0) return setTaskField(blueprint, id, "params", [...rows, { name, value }]);
  return updateIo(blueprint, id, "params", index, (r) => (jsonText(r.value) === jsonText(value) ? r : { ...r, value }));
}

/** A value typed as JSON text: the value, or why it is not JSON (nothing typed: no value). */
export function parseJsonValue(text: string): { value: unknown } | { error: string } {
  if (text.trim() === "") return { value: undefined };
  try {
    return { value: JSON.parse(text) };
  } catch (e) {
    return { error: `not JSON: ${(e as Error).message}` };
  }
}

/** A value as the JSON text to edit it (nothing for no value). */
export function jsonText(value: unknown): string {
  return value === undefined ? "" : JSON.stringify(value);
}

/** Changes one task; an edit that changes nothing answers the same blueprint (no history entry). */
export function mapTask(blueprint: Blueprint, id: string, change: (task: Task) => Task): Blueprint {
  const tasks = blueprint.tasks.map((t) => (t.id === id ? change(t) : t));
  return tasks.every((t, i) => t === blueprint.tasks[i]) ? blueprint : { ...blueprint, tasks };
}

/** Changes a task's dependencies; a task left without any has no `depends_on` at all. */
function withDependencies(task: Task, change: (deps: Dependency[]) => Dependency[]): Task {
  const { depends_on = [], ...rest } = task;
  const changed = change(depends_on);
  if (changed.length === depends_on.length && changed.every((d, i) => d === depends_on[i])) return task;
  return changed.length > 0 ? { ...rest, depends_on: changed } : { ...rest };
}
