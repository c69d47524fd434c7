// The blueprint as React Flow nodes and edges: one node per task, one edge per dependency.
import { MarkerType, type Edge } from "@xyflow/react";
import type { FileReport } from "../backend/generated";
import type { Blueprint, DependencyType } from "../blueprint";
import { kindOf } from "../nodes/registry";
import type { TaskNode } from "../nodes/types";
import { NODE_HEIGHT, NODE_WIDTH, type Positions } from "../store/positions";

export { NODE_HEIGHT, NODE_WIDTH };

/** Each dependency type has its own line: the type is readable without its label. */
const DASHES: Record<DependencyType, string | undefined> = {
  FS: undefined,
  SS: "8 5",
  FF: "2 4",
  SF: "10 4 2 4",
};

export type DependencyEdge = Edge<{ type: DependencyType }>;

export function edgeId(from: string, to: string): string {
  return `${from}->${to}`;
}

export function toNodes(
  blueprint: Blueprint,
  positions: Positions,
  report: FileReport | null,
  selected: string | null,
): TaskNode[] {
  const found = new Map<string, { errors: number; warnings: number }>();
  for (const d of report?.diagnostics ?? []) {
    if (!d.task_id) continue;
    const counts = found.get(d.task_id) ?? { errors: 0, warnings: 0 };
    if (d.severity === "error") counts.errors += 1;
    if (d.severity === "warning") counts.warnings += 1;
    found.set(d.task_id, counts);
  }
  return blueprint.tasks.map((task) => ({
    id: task.id,
    type: kindOf(task.type),
    position: positions[task.id] ?? { x: 0, y: 0 },
    width: NODE_WIDTH,
    height: NODE_HEIGHT,
    selected: task.id === selected,
    data: { task, errors: found.get(task.id)?.errors ?? 0, warnings: found.get(task.id)?.warnings ?? 0 },
  }));
}

export function toEdges(blueprint: Blueprint, selected: string | null): DependencyEdge[] {
  const ids = new Set(blueprint.tasks.map((t) => t.id));
  return blueprint.tasks.flatMap((task) =>
    (task.depends_on ?? [])
      .filter((d) => ids.has(d.id))
      .map((d) => ({
        id: edgeId(d.id, task.id),
        selected: edgeId(d.id, task.id) === selected,
        source: d.id,
        target: task.id,
        label: d.type,
        className: `dependency dependency-${d.type}`,
        style: { strokeDasharray: DASHES[d.type] },
        markerEnd: { type: MarkerType.ArrowClosed },
        data: { type: d.type },
      })),
  );
}
