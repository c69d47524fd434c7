// The blueprint as the editor changes it: the parsed JSON of the file, with every field the
// editor does not know kept as it was. Checking it is the facade's job (`validate_blueprint`).

export const DEPENDENCY_TYPES = ["FS", "SS", "FF", "SF"] as const;
export type DependencyType = (typeof DEPENDENCY_TYPES)[number];

export type Dependency = { id: string; type: DependencyType; [field: string]: unknown };
export type Task = { id: string; type: string; depends_on?: Dependency[]; [field: string]: unknown };
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

/** Adds a task of `type` with an id not taken yet; answers the blueprint and the id. */
export function addTask(blueprint: Blueprint, type: string): { blueprint: Blueprint; id: string } {
  const base = (type.split(".").pop() ?? "task").replace(/[^A-Za-z0-9_]/g, "_");
  const taken = new Set(blueprint.tasks.map((t) => t.id));
  let n = 1;
  while (taken.has(`${base}_${n}`)) n += 1;
  const id = `${base}_${n}`;
  return { blueprint: { ...blueprint, tasks: [...blueprint.tasks, { id, type }] }, id };
}

/** Removes tasks and the dependencies on them. */
export function removeTasks(blueprint: Blueprint, ids: ReadonlySet<string>): Blueprint {
  const tasks = blueprint.tasks.filter((t) => !ids.has(t.id));
  return { ...blueprint, tasks: tasks.map((t) => withDependencies(t, (deps) => deps.filter((d) => !ids.has(d.id)))) };
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

/** The dependency of `to` on `from` takes the next type: FS, SS, FF, SF, FS... */
export function cycleDependencyType(blueprint: Blueprint, from: string, to: string): Blueprint {
  const next = (type: DependencyType) => DEPENDENCY_TYPES[(DEPENDENCY_TYPES.indexOf(type) + 1) % 4] ?? "FS";
  return mapTask(blueprint, to, (t) =>
    withDependencies(t, (deps) => deps.map((d) => (d.id === from ? { ...d, type: next(d.type) } : d))),
  );
}

/** Changes one task; an edit that changes nothing answers the same blueprint (no history entry). */
function mapTask(blueprint: Blueprint, id: string, change: (task: Task) => Task): Blueprint {
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
