// The blueprint as React Flow nodes and edges: one node per task, one edge per dependency.
import { MarkerType, type Edge } from "@xyflow/react";
import type { DependencyType, Direction, FileReport } from "../backend/generated";
import type { Blueprint, Dependency } from "../blueprint";
import { kindOf } from "../nodes/registry";
import type { RunMark, TaskNode } from "../nodes/types";
import { NODE_HEIGHT, NODE_WIDTH, type Positions } from "../store/positions";

export { NODE_HEIGHT, NODE_WIDTH };

/** Each dependency type has its own line: the type is readable without its label. */
const DASHES: Record<DependencyType, string | undefined> = {
  FS: undefined,
  SS: "8 5",
  FF: "2 4",
  SF: "10 4 2 4",
};

/** A dependency's edge; `implied` holds the chain that makes it redundant, when one does (implied.ts). */
export type DependencyEdge = Edge<{ type: DependencyType; implied?: string[] }>;

const NOTHING_IMPLIED: ReadonlyMap<string, string[]> = new Map();

export function edgeId(from: string, to: string): string {
  return `${from}->${to}`;
}

/** What the facade found, counted per task. */
type Counts = { errors: number; warnings: number };
const CLEAN: Counts = { errors: 0, warnings: 0 };

function countsByTask(report: FileReport | null): Map<string, Counts> {
  const found = new Map<string, Counts>();
  for (const d of report?.diagnostics ?? []) {
    if (!d.task_id) continue;
    const counts = found.get(d.task_id) ?? { errors: 0, warnings: 0 };
    if (d.severity === "error") counts.errors += 1;
    if (d.severity === "warning") counts.warnings += 1;
    found.set(d.task_id, counts);
  }
  return found;
}

const ORIGIN = { x: 0, y: 0 };

/** The selected task, or the selected tasks (a multiple selection). */
export type Selected = string | null | ReadonlySet<string>;

function isSelected(selected: Selected, id: string): boolean {
  return typeof selected === "string" ? selected === id : (selected?.has(id) ?? false);
}

/** How a run stands, per task id: what a run's canvas marks its cards with. */
export type RunMarks = Readonly<Record<string, RunMark>>;

export function toNodes(
  blueprint: Blueprint,
  positions: Positions,
  report: FileReport | null,
  selected: Selected,
  marks?: RunMarks,
): TaskNode[] {
  return reusingNodes()(blueprint, positions, report, selected, marks);
}

/**
 * `toNodes` that answers the node object it answered last time for every task whose node did
 * not change: React Flow then keeps its internal node, and only the nodes that changed draw
 * again (a drag moves one node of thousands).
 */
export function reusingNodes(): typeof toNodes {
  let previous = new Map<string, TaskNode>();
  let lastReport: FileReport | null | undefined;
  let counts = new Map<string, Counts>();
  return (blueprint, positions, report, selected, marks) => {
    if (report !== lastReport) {
      lastReport = report;
      counts = countsByTask(report);
    }
    const next = new Map<string, TaskNode>();
    const nodes = blueprint.tasks.map((task) => {
      const position = positions[task.id] ?? ORIGIN;
      const { errors, warnings } = counts.get(task.id) ?? CLEAN;
      const chosen = isSelected(selected, task.id);
      const run = marks?.[task.id];
      const old = previous.get(task.id);
      const same =
        old !== undefined &&
        old.data.task === task &&
        old.position === position &&
        old.selected === chosen &&
        old.data.errors === errors &&
        old.data.warnings === warnings &&
        old.data.run?.state === run?.state &&
        old.data.run?.attempts === run?.attempts &&
        old.data.run?.held === run?.held &&
        old.data.run?.breakpoint === run?.breakpoint;
      const node: TaskNode = same
        ? old
        : {
            id: task.id,
            type: kindOf(task.type),
            position,
            width: NODE_WIDTH,
            height: NODE_HEIGHT,
            selected: chosen,
            data: run ? { task, errors, warnings, run } : { task, errors, warnings },
          };
      next.set(task.id, node);
      return node;
    });
    previous = next;
    return nodes;
  };
}

export function toEdges(
  blueprint: Blueprint,
  selected: string | null,
  labelled = true,
  implied: ReadonlyMap<string, string[]> = NOTHING_IMPLIED,
): DependencyEdge[] {
  return reusingEdges()(blueprint, selected, labelled, implied);
}

/**
 * `toEdges` that answers the edge object it answered last time for every dependency whose edge
 * did not change (as `reusingNodes`). Without labels (a zoomed-out canvas), no edge measures
 * and draws its text.
 */
export function reusingEdges(): typeof toEdges {
  let previous = new Map<string, { dependency: Dependency; edge: DependencyEdge }>();
  return (blueprint, selected, labelled = true, implied = NOTHING_IMPLIED) => {
    const ids = new Set(blueprint.tasks.map((t) => t.id));
    const next = new Map<string, { dependency: Dependency; edge: DependencyEdge }>();
    const edges = blueprint.tasks.flatMap((task) =>
      (task.depends_on ?? [])
        .filter((d) => ids.has(d.id))
        .map((d) => {
          const id = edgeId(d.id, task.id);
          const isSelected = id === selected;
          // Finish-to-start is the default: only the other types are named on the edge (its dashes
          // tell them apart too). Fewer labels read better, and each costs the canvas a text
          // measurement whenever the edge is drawn again, as in every frame of a drag.
          const named = labelled && d.type !== "FS";
          const old = previous.get(id);
          const chain = implied.get(id);
          const same =
            old !== undefined &&
            old.dependency === d &&
            old.edge.selected === isSelected &&
            (old.edge.label !== undefined) === named &&
            old.edge.data?.implied?.join() === chain?.join();
          const edge: DependencyEdge = same
            ? old.edge
            : {
                id,
                selected: isSelected,
                source: d.id,
                target: task.id,
                ...(named ? { label: d.type } : {}),
                className: `dependency dependency-${d.type}${chain ? " dependency-implied" : ""}`,
                style: { strokeDasharray: DASHES[d.type] },
                markerEnd: { type: MarkerType.ArrowClosed },
                data: chain ? { type: d.type, implied: chain } : { type: d.type },
              };
          next.set(id, { dependency: d, edge });
          return edge;
        }),
    );
    previous = next;
    return edges;
  };
}

/**
 * The dependency a point of the flow lies on, within `tolerance`: the nearest line from a task's
 * lower handle to its dependent's upper one (each edge is drawn between those two points). A
 * point on a task's card is on no dependency.
 */
/**
 * Where a dependency's line leaves the card it starts from and enters the one it ends at: the
 * lower and upper middles, or, flowing right, the right and left ones.
 */
export function handlePoints(
  from: { x: number; y: number },
  to: { x: number; y: number },
  direction: Direction,
): [{ x: number; y: number }, { x: number; y: number }] {
  return direction === "right"
    ? [{ x: from.x + NODE_WIDTH, y: from.y + NODE_HEIGHT / 2 }, { x: to.x, y: to.y + NODE_HEIGHT / 2 }]
    : [{ x: from.x + NODE_WIDTH / 2, y: from.y + NODE_HEIGHT }, { x: to.x + NODE_WIDTH / 2, y: to.y }];
}

export function dependencyAt(
  blueprint: Blueprint,
  positions: Positions,
  point: { x: number; y: number },
  direction: Direction = "down",
  tolerance = 24,
): { from: string; to: string } | null {
  const onCard = Object.values(positions).some(
    (p) => point.x >= p.x && point.x <= p.x + NODE_WIDTH && point.y >= p.y && point.y <= p.y + NODE_HEIGHT,
  );
  if (onCard) return null;
  let best: { from: string; to: string; distance: number } | null = null;
  for (const task of blueprint.tasks) {
    const to = positions[task.id];
    if (!to) continue;
    for (const d of task.depends_on ?? []) {
      const from = positions[d.id];
      if (!from) continue;
      const distance = toSegment(point, ...handlePoints(from, to, direction));
      if (distance <= tolerance && (best === null || distance < best.distance)) best = { from: d.id, to: task.id, distance };
    }
  }
  return best && { from: best.from, to: best.to };
}

function toSegment(p: { x: number; y: number }, a: { x: number; y: number }, b: { x: number; y: number }): number {
  const dx = b.x - a.x;
  const dy = b.y - a.y;
  const length = dx * dx + dy * dy;
  const t = length === 0 ? 0 : Math.max(0, Math.min(1, ((p.x - a.x) * dx + (p.y - a.y) * dy) / length));
  return Math.hypot(p.x - (a.x + t * dx), p.y - (a.y + t * dy));
}
