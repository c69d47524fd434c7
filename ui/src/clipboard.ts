// Copy and paste as blueprint JSON text: what is copied is a blueprint of the copied tasks, so it
// can be pasted into another blueprint, into a text editor, or into another Orrery. Pasting
// accepts such a fragment, a whole blueprint file, one task or a list of tasks.
//
// A pasted task of a type each blueprint has exactly one of (the catalogue's `bound`: the start
// and the end) is left out when the blueprint already has one: the pasted tasks that depended on
// the left-out start depend on the blueprint's own start instead, so a whole blueprint pasted
// into another hangs from its start. Into a blueprint without them, they are pasted like any task.
import type { BlueprintBound, TaskTypeSummary } from "./backend/generated";
import { toText, type Blueprint, type Dependency, type Task } from "./blueprint";
import { NODE_HEIGHT, NODE_WIDTH, type Positions } from "./store/positions";

export type Pasted = {
  blueprint: Blueprint;
  /** The ids of the pasted tasks in the blueprint, in the order of the text. */
  ids: string[];
  /** The pasted tasks whose id was taken: their id in the text, and the id they were given. */
  renamed: Record<string, string>;
  /** The ids (in the text) of the start and end tasks left out. */
  skipped: string[];
};

/** The task types each blueprint has exactly one of, with the part each plays. */
export type Bounds = Readonly<Record<string, BlueprintBound>>;

/** The bounds among the task types the catalogue lists. */
export function boundsOf(types: readonly TaskTypeSummary[]): Bounds {
  const bounds: Record<string, BlueprintBound> = {};
  for (const t of types) if (t.bound) bounds[t.name] = t.bound;
  return bounds;
}

/**
 * The tasks `ids` of `blueprint` as blueprint text, in blueprint order. They keep only what points
 * among them: the dependencies on tasks not copied are dropped, and so is a `scope_end` whose
 * opening task is not copied (a copied `scope_start` is kept even without its end: the task is
 * copied as it is, and validation says what it lacks).
 */
export function copyFragment(blueprint: Blueprint, ids: Iterable<string>): string {
  const chosen = new Set(ids);
  const within = (id: string) => (chosen.has(id) ? id : undefined);
  const tasks = blueprint.tasks.filter((t) => chosen.has(t.id)).map((t) => retarget(t, t.id, within));
  return toText({ tasks });
}

/**
 * Adds the tasks of `text` to `blueprint`. Every pasted task whose id is taken gets a fresh one
 * (`work` becomes `work_copy`, then `work_copy_2`...), and the dependencies and `scope_end`
 * among the pasted tasks follow the new ids. A reference to a task that is neither pasted nor
 * in the blueprint is dropped; one to a task of the blueprint is kept.
 */
export function pasteFragment(blueprint: Blueprint, text: string, bounds: Bounds): Pasted | { error: string } {
  const read = readTasks(text);
  if ("error" in read) return read;
  const existing = new Set(blueprint.tasks.map((t) => t.id));
  const ownStart = blueprint.tasks.find((t) => bounds[t.type] === "start")?.id;
  const types = new Set(blueprint.tasks.map((t) => t.type));

  const skipped = read.tasks.filter((t) => bounds[t.type] !== undefined && types.has(t.type));
  const pasted = read.tasks.filter((t) => !skipped.includes(t));
  // What a left-out start stood for: the blueprint's own start.
  const instead = new Map<string, string>();
  for (const t of skipped) if (bounds[t.type] === "start" && ownStart !== undefined) instead.set(t.id, ownStart);

  // A pasted task keeps its id when it is free; the fresh ids avoid those kept ids too.
  const taken = new Set([...existing, ...pasted.map((t) => t.id)]);
  const renamed: Record<string, string> = {};
  for (const t of pasted) {
    if (!existing.has(t.id)) continue;
    const fresh = freshId(t.id, taken);
    taken.add(fresh);
    renamed[t.id] = fresh;
  }
  const pastedIds = new Set(pasted.map((t) => t.id));
  const target = (id: string): string | undefined => {
    if (pastedIds.has(id)) return renamed[id] ?? id;
    if (instead.has(id)) return instead.get(id);
    return existing.has(id) ? id : undefined;
  };

  const tasks = pasted.map((t) => retarget(t, renamed[t.id] ?? t.id, target));
  return {
    blueprint: { ...blueprint, tasks: [...blueprint.tasks, ...tasks] },
    ids: tasks.map((t) => t.id),
    renamed,
    skipped: skipped.map((t) => t.id),
  };
}

/** `id`, or when it is taken `id_copy`, `id_copy_2`...; a copy of a copy is not `_copy_copy`. */
export function freshId(id: string, taken: ReadonlySet<string>): string {
  const base = id.replace(/_copy(_\d+)?$/, "");
  if (!taken.has(id)) return id;
  if (!taken.has(`${base}_copy`)) return `${base}_copy`;
  let n = 2;
  while (taken.has(`${base}_copy_${n}`)) n += 1;
  return `${base}_copy_${n}`;
}

/**
 * `task` called `id`, its dependencies and `scope_end` pointing where `target` says (nowhere:
 * dropped), its fields in the order they were.
 */
function retarget(task: Task, id: string, target: (id: string) => string | undefined): Task {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(task)) {
    if (key === "id") out.id = id;
    else if (key === "depends_on") {
      const seen = new Set<string>();
      const deps: Dependency[] = [];
      for (const d of Array.isArray(value) ? (value as Dependency[]) : []) {
        const to = target(d.id);
        if (to === undefined || seen.has(to)) continue;
        seen.add(to);
        deps.push(to === d.id ? d : { ...d, id: to });
      }
      if (deps.length > 0) out.depends_on = deps;
    } else if (key === "scope_end") {
      const to = typeof value === "string" ? target(value) : undefined;
      if (to !== undefined) out.scope_end = to;
    } else out[key] = value;
  }
  return out as Task;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The tasks in pasted text, or what keeps the text from being blueprint tasks. */
function readTasks(text: string): { tasks: Task[] } | { error: string } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    return { error: `the text is not JSON (${(e as Error).message})` };
  }
  let list: unknown[];
  if (Array.isArray(value)) list = value;
  else if (isObject(value) && typeof value.dtype === "string") {
    return { error: "the text is a COMPAS envelope; open it as a file, or paste plain blueprint JSON" };
  } else if (isObject(value) && "tasks" in value) {
    if (!Array.isArray(value.tasks)) return { error: 'its "tasks" is not a list' };
    list = value.tasks;
  } else if (isObject(value) && ("id" in value || "type" in value)) list = [value];
  else return { error: 'the text is not a blueprint: it has no "tasks"' };
  if (list.length === 0) return { error: "the text has no tasks" };

  const first = new Map<string, number>();
  for (const [i, task] of list.entries()) {
    const which = `task ${i + 1}`;
    if (!isObject(task)) return { error: `${which} is not an object` };
    if (typeof task.id !== "string" || task.id.trim() === "") return { error: `${which} has no "id"` };
    if (typeof task.type !== "string" || task.type.trim() === "") return { error: `${which} has no "type"` };
    const earlier = first.get(task.id);
    if (earlier !== undefined) return { error: `tasks ${earlier} and ${i + 1} are both called ${task.id}` };
    first.set(task.id, i + 1);
    if ("depends_on" in task) {
      if (!Array.isArray(task.depends_on)) return { error: `${which} (${task.id}) has a "depends_on" that is not a list` };
      const bad = task.depends_on.findIndex((d) => !isObject(d) || typeof d.id !== "string");
      if (bad >= 0) return { error: `dependency ${bad + 1} of ${which} (${task.id}) has no "id"` };
    }
    if ("scope_end" in task && typeof task.scope_end !== "string") {
      return { error: `${which} (${task.id}) has a "scope_end" that is not a task id` };
    }
  }
  return { tasks: list as Task[] };
}

/** Room between pasted tasks placed below the others. */
const GAP_X = 40;
const GAP_Y = 64;

/**
 * Where tasks pasted without known positions go: below every placed task, in rows by how deep
 * they sit among each other (a task under the pasted tasks it depends on).
 */
export function placeBelow(tasks: Task[], positions: Positions): Positions {
  const placed = Object.values(positions);
  const left = placed.length > 0 ? Math.min(...placed.map((p) => p.x)) : 0;
  const top = placed.length > 0 ? Math.max(...placed.map((p) => p.y)) + NODE_HEIGHT + GAP_Y * 2 : 0;
  const ids = new Set(tasks.map((t) => t.id));
  const byId = new Map(tasks.map((t) => [t.id, t]));
  const depth = new Map<string, number>();
  // Depth-first with a guard: a cycle in pasted text must not loop (validation reports it).
  const depthOf = (id: string, path: Set<string>): number => {
    const known = depth.get(id);
    if (known !== undefined) return known;
    if (path.has(id)) return 0;
    path.add(id);
    const upstream = (byId.get(id)?.depends_on ?? []).filter((d) => ids.has(d.id));
    const d = upstream.length === 0 ? 0 : 1 + Math.max(...upstream.map((u) => depthOf(u.id, path)));
    path.delete(id);
    depth.set(id, d);
    return d;
  };
  const rows = new Map<number, number>();
  const out: Positions = {};
  for (const task of tasks) {
    const row = depthOf(task.id, new Set());
    const column = rows.get(row) ?? 0;
    rows.set(row, column + 1);
    out[task.id] = { x: left + column * (NODE_WIDTH + GAP_X), y: top + row * (NODE_HEIGHT + GAP_Y) };
  }
  return out;
}
