// Which output feeds which input: the data flow of a blueprint, drawn on the canvas beside its
// dependencies when asked. An input reads session data at `get_from`, or at its own name when it
// has none (docs/format.md §4: `data[get_from or name]`); an output writes at `set_to`, or at its own
// name. Session data is one store per blueprint instance, so the value an input reads is the one
// written last before its task starts: the writer is the nearest task upstream through the
// dependencies that writes the name.
//
// - A writer is left out when another writer of the name runs after it and before the reader
//   (it is upstream of that other writer): its value is overwritten by then.
// - Writers on parallel branches (neither upstream of the other) are all drawn: which one wrote
//   last depends on the run.
// - A writer that does not run before the reader is not drawn (the value may not be there yet:
//   the facade warns of a `get_from` like that); nor is an input whose name nothing writes
//   (it reads session parameters, a calling composite, or its own literal value).
// - Every dependency type counts as "before", as in the facade's own check of `get_from`.
import { MarkerType, type Edge } from "@xyflow/react";
import { ioOf, type Blueprint, type Task } from "../blueprint";
import { NODE_HEIGHT, NODE_WIDTH } from "../store/positions";

/** One output feeding one input: `output` of `from` writes `key`, which `input` of `to` reads. */
export type Wire = { from: string; to: string; key: string; output: string; input: string };

export type WiringEdge = Edge<{ kind: "wiring"; wires: Wire[] }>;

/** The session data key an input reads (`get_from`, else its name). */
function readKey(io: { name: string; [key: string]: unknown }): string {
  return typeof io.get_from === "string" && io.get_from !== "" ? io.get_from : io.name;
}

/** The session data key an output writes (`set_to`, else its name). */
function writeKey(io: { name: string; [key: string]: unknown }): string {
  return typeof io.set_to === "string" && io.set_to !== "" ? io.set_to : io.name;
}

/** Every wire of a blueprint, in the order of its tasks and their inputs. */
export function wiring(blueprint: Blueprint): Wire[] {
  const tasks = new Map<string, Task>();
  for (const task of blueprint.tasks) if (!tasks.has(task.id)) tasks.set(task.id, task);
  // Who writes each key, and with which output (a task's first output of that key).
  const writers = new Map<string, Map<string, string>>();
  for (const task of tasks.values()) {
    for (const output of ioOf(task, "outputs")) {
      if (typeof output?.name !== "string") continue;
      const byTask = writers.get(writeKey(output)) ?? new Map<string, string>();
      if (!byTask.has(task.id)) byTask.set(task.id, output.name);
      writers.set(writeKey(output), byTask);
    }
  }
  const predecessors = (id: string): string[] =>
    (tasks.get(id)?.depends_on ?? []).map((d) => d.id).filter((p) => tasks.has(p));
  // One search per key read, shared by every input that reads it.
  const searches = new Map<string, (reader: string) => string[]>();

  const wires: Wire[] = [];
  for (const task of tasks.values()) {
    for (const input of ioOf(task, "inputs")) {
      if (typeof input?.name !== "string") continue;
      const key = readKey(input);
      const byTask = writers.get(key);
      if (!byTask) continue;
      let nearest = searches.get(key);
      if (!nearest) searches.set(key, (nearest = nearestWriters(new Set(byTask.keys()), predecessors)));
      for (const from of nearest(task.id)) {
        wires.push({ from, to: task.id, key, output: byTask.get(from)!, input: input.name });
      }
    }
  }
  return wires;
}

/**
 * For one key: the writers upstream of a task that no other writer upstream of it follows. A
 * task's answer is made of its predecessors': a predecessor that writes, or else the
 * predecessor's own answer; of those, a writer upstream of another is dropped. Answers are kept,
 * so a chain of thousands of readers costs one walk up it, not one per reader. Tasks on a cycle
 * (an error the facade reports) see no writer through it.
 */
function nearestWriters(writes: ReadonlySet<string>, predecessors: (id: string) => string[]): (reader: string) => string[] {
  const known = new Map<string, string[]>();
  const open = new Set<string>();
  return (reader) => {
    // Depth first without recursion: a long chain would overflow the call stack.
    const stack: { id: string; expanded: boolean }[] = [{ id: reader, expanded: false }];
    while (stack.length > 0) {
      const top = stack[stack.length - 1]!;
      if (known.has(top.id)) {
        stack.pop();
        continue;
      }
      const before = predecessors(top.id).filter((p) => p !== top.id);
      if (!top.expanded) {
        top.expanded = true;
        open.add(top.id);
        for (const p of before) if (!writes.has(p) && !known.has(p) && !open.has(p)) stack.push({ id: p, expanded: false });
        continue;
      }
      const candidates = new Set<string>();
      for (const p of before) {
        if (writes.has(p)) candidates.add(p);
        else for (const w of known.get(p) ?? []) candidates.add(w);
      }
      open.delete(top.id);
      known.set(top.id, latest([...candidates], predecessors));
      stack.pop();
    }
    // Through a cycle a task can come out upstream of itself; it never feeds itself.
    return (known.get(reader) ?? []).filter((w) => w !== reader);
  };
}

/** The candidates that are not upstream of another one: one walk up from all of them at once. */
function latest(candidates: string[], predecessors: (id: string) => string[]): string[] {
  if (candidates.length < 2) return candidates;
  const upstream = new Set<string>();
  const queue = candidates.flatMap(predecessors);
  for (let next = 0; next < queue.length; next += 1) {
    const id = queue[next]!;
    if (upstream.has(id)) continue;
    upstream.add(id);
    queue.push(...predecessors(id));
  }
  return candidates.filter((c) => !upstream.has(c));
}

/** Whether a canvas edge is a wire (its id is made so), not a dependency. */
export function isWire(edge: { id: string }): boolean {
  return edge.id.startsWith("wire:");
}

/** How far a wire bows out at least, and at most (in canvas pixels). */
const BOW = 36;
const BOW_MAX = 180;
/** Far enough to pass beside a task that lies between the ends of a wire. */
const BESIDE_TASKS = NODE_WIDTH / 2 + 20;
/** Between a wire and the label beside it. */
const LABEL_GAP = 4;

/**
 * A wire's path: a curve bowed to the right of the straight line between its ends, so that it
 * stays apart from the dependency edge between the same tasks (drawn straight down in a layered
 * layout); longer wires bow further, to pass beside the tasks between their ends. The label sits
 * at the curve's middle (`labelWidth` wide, to put it beside the curve rather than across it).
 */
export function wiringCurve(
  sx: number,
  sy: number,
  tx: number,
  ty: number,
  labelWidth = 0,
): { path: string; labelX: number; labelY: number } {
  const dx = tx - sx;
  const dy = ty - sy;
  const length = Math.hypot(dx, dy) || 1;
  // A wire longer than a task is high may have tasks between its ends: it goes round them.
  const bow = Math.min(BOW_MAX, Math.max(length > NODE_HEIGHT * 1.5 ? BESIDE_TASKS : 0, BOW + length * 0.2));
  // The unit normal to the right of the way the wire goes (y grows downwards on screen).
  const nx = dy / length;
  const ny = -dx / length;
  // Control points a third and two thirds along, pushed out so that the middle lies `bow` away.
  const push = (bow * 4) / 3;
  const c1 = [sx + dx / 3 + nx * push, sy + dy / 3 + ny * push];
  const c2 = [sx + (2 * dx) / 3 + nx * push, sy + (2 * dy) / 3 + ny * push];
  return {
    path: `M ${sx},${sy} C ${c1[0]},${c1[1]} ${c2[0]},${c2[1]} ${tx},${ty}`,
    // Beside a wire that goes mostly up or down, the label starts at the curve instead of
    // straddling it, which would put half of it over the tasks.
    labelX: sx + dx / 2 + nx * bow + (labelWidth > 0 && Math.abs(nx) > 0.5 ? Math.sign(nx) * (labelWidth / 2 + LABEL_GAP) : 0),
    labelY: sy + dy / 2 + ny * bow,
  };
}

/** How a wire reads on the canvas: the output, then the input it feeds. */
export function wireLabel(wire: Wire): string {
  return `${wire.output} → ${wire.input}`;
}

/**
 * The wires as edges of their own kind: one per pair of tasks (several names between the same
 * two tasks share it), labelled when `labelled`, drawn dashed by CSS (`.wiring`), and out of the
 * way of the user: not selectable, deletable or focusable.
 */
export function wiringEdges(wires: Wire[], labelled: boolean): WiringEdge[] {
  return reusingWiringEdges()(wires, labelled);
}

/**
 * `wiringEdges` that answers the edge object it answered last time for every pair of tasks whose
 * wires did not change (as graph.ts `reusingEdges`): an edit elsewhere in a large blueprint
 * draws no wire again.
 */
export function reusingWiringEdges(): typeof wiringEdges {
  let previous = new Map<string, { signature: string; edge: WiringEdge }>();
  return (wires, labelled) => {
    const byPair = new Map<string, Wire[]>();
    for (const wire of wires) {
      const id = `wire:${wire.from}->${wire.to}`;
      const pair = byPair.get(id);
      if (pair) pair.push(wire);
      else byPair.set(id, [wire]);
    }
    const next = new Map<string, { signature: string; edge: WiringEdge }>();
    const edges = [...byPair].map(([id, pair]) => {
      const label = labelled ? pair.map(wireLabel).join(", ") : undefined;
      const signature = `${label ?? ""}\n${pair.map((w) => `${w.key} ${w.output} ${w.input}`).join("\n")}`;
      const old = previous.get(id);
      const edge: WiringEdge =
        old?.signature === signature
          ? old.edge
          : {
              id,
              type: "wiring",
              source: pair[0]!.from,
              target: pair[0]!.to,
              className: "wiring",
              selectable: false,
              deletable: false,
              focusable: false,
              interactionWidth: 0,
              markerEnd: { type: MarkerType.Arrow, color: "var(--wiring)" },
              ...(label !== undefined ? { label } : {}),
              data: { kind: "wiring", wires: pair },
            };
      next.set(id, { signature, edge });
      return edge;
    });
    previous = next;
    return edges;
  };
}
