// Dependencies routed around the tasks between their ends: an edge drawn straight from a task to
// one far below it (start → end under a chain start → a → b → end) would run behind the cards in
// between and be lost. Such an edge goes out to the side, past those cards, and back in; the
// others stay React Flow's curves. Only for blueprints drawn whole (a large one is drawn plainly).
import type { Direction } from "../backend/generated";
import type { Blueprint } from "../blueprint";
import { NODE_HEIGHT, NODE_WIDTH, type Positions } from "../store/positions";
import { edgeId, handlePoints, type DependencyEdge } from "./graph";

type Box = { id: string; x0: number; y0: number; x1: number; y1: number };

/** The side of a cell of the grid the cards are found by. */
const CELL = 240;
/**
 * How far inside a card a line must go to count as behind it (a line that leaves a card's edge
 * beside its neighbours only grazes them), and how far out a detour passes the cards.
 */
const INSET = 4;
const DETOUR_MARGIN = 32;

/**
 * For each dependency whose straight line passes behind another task's card: where it runs
 * instead, the x of its vertical run (flowing down) or the y of its horizontal run (flowing right).
 */
export function detours(blueprint: Blueprint, positions: Positions, direction: Direction): Map<string, number> {
  const found = new Map<string, number>();
  const right = direction === "right";
  // The cards by the cells of a grid they touch: a line is tested only against the cards of
  // the cells its bounding box touches (a drag recomputes this every frame).
  const grid = new Map<string, Box[]>();
  const cell = (v: number) => Math.floor(v / CELL);
  for (const t of blueprint.tasks) {
    const at = positions[t.id];
    if (!at) continue;
    const box = { id: t.id, x0: at.x + INSET, y0: at.y + INSET, x1: at.x + NODE_WIDTH - INSET, y1: at.y + NODE_HEIGHT - INSET };
    for (let i = cell(box.x0); i <= cell(box.x1); i++) {
      for (let j = cell(box.y0); j <= cell(box.y1); j++) {
        const key = `${i},${j}`;
        const held = grid.get(key);
        if (held) held.push(box);
        else grid.set(key, [box]);
      }
    }
  }
  const near = (ax: number, ay: number, bx: number, by: number): Set<Box> => {
    const found = new Set<Box>();
    for (let i = cell(Math.min(ax, bx)); i <= cell(Math.max(ax, bx)); i++) {
      for (let j = cell(Math.min(ay, by)); j <= cell(Math.max(ay, by)); j++) grid.get(`${i},${j}`)?.forEach((b) => found.add(b));
    }
    return found;
  };
  for (const task of blueprint.tasks) {
    const to = positions[task.id];
    if (!to) continue;
    for (const d of task.depends_on ?? []) {
      const from = positions[d.id];
      if (!from || d.id === task.id) continue;
      const [{ x: ax, y: ay }, { x: bx, y: by }] = handlePoints(from, to, direction);
      const behind = [...near(ax, ay, bx, by)].filter((b) => b.id !== d.id && b.id !== task.id && crosses(ax, ay, bx, by, b));
      if (behind.length === 0) continue;
      if (right) {
        const above = Math.min(...behind.map((b) => b.y0)) - DETOUR_MARGIN;
        const below = Math.max(...behind.map((b) => b.y1)) + DETOUR_MARGIN;
        const middle = (ay + by) / 2;
        found.set(edgeId(d.id, task.id), middle - above <= below - middle ? above : below);
      } else {
        const left = Math.min(...behind.map((b) => b.x0)) - DETOUR_MARGIN;
        const rightOf = Math.max(...behind.map((b) => b.x1)) + DETOUR_MARGIN;
        const middle = (ax + bx) / 2;
        found.set(edgeId(d.id, task.id), rightOf - middle <= middle - left ? rightOf : left);
      }
    }
  }
  return found;
}

/** Whether the segment from (ax, ay) to (bx, by) passes through the box. */
function crosses(ax: number, ay: number, bx: number, by: number, box: Box): boolean {
  // Liang-Barsky clipping of the segment against the box.
  let t0 = 0;
  let t1 = 1;
  const dx = bx - ax;
  const dy = by - ay;
  for (const [p, q] of [
    [-dx, ax - box.x0],
    [dx, box.x1 - ax],
    [-dy, ay - box.y0],
    [dy, box.y1 - ay],
  ] as const) {
    if (p === 0) {
      if (q < 0) return false;
      continue;
    }
    const t = q / p;
    if (p < 0) t0 = Math.max(t0, t);
    else t1 = Math.min(t1, t);
    if (t0 > t1) return false;
  }
  return true;
}

/** A routed dependency: React Flow draws it with `DetourPath` (WiringPath.tsx). */
export type RoutedEdge = DependencyEdge & { type: "detour"; data: NonNullable<DependencyEdge["data"]> & { detour: number } };

/**
 * The edges with the routed ones made `detour` edges; an edge whose route did not change is the
 * object answered last time, so that React Flow draws again only what moved.
 */
export function reusingRoutes(): (edges: DependencyEdge[], routes: Map<string, number>) => DependencyEdge[] {
  let previous = new Map<string, { edge: DependencyEdge; routed: RoutedEdge }>();
  return (edges, routes) => {
    if (routes.size === 0) {
      previous = new Map();
      return edges;
    }
    const next = new Map<string, { edge: DependencyEdge; routed: RoutedEdge }>();
    const out = edges.map((edge) => {
      const detour = routes.get(edge.id);
      if (detour === undefined) return edge;
      const old = previous.get(edge.id);
      const routed =
        old && old.edge === edge && old.routed.data.detour === detour
          ? old.routed
          : ({ ...edge, type: "detour", data: { ...edge.data!, detour } } as RoutedEdge);
      next.set(edge.id, { edge, routed });
      return routed;
    });
    previous = next;
    return out;
  };
}

/** The path of a routed dependency: out of the source, along the detour, into the target. */
export function detourPath(sx: number, sy: number, tx: number, ty: number, detour: number, direction: Direction): { path: string; labelX: number; labelY: number } {
  if (direction === "right") {
    const path = `M ${sx} ${sy} C ${sx + 40} ${sy}, ${sx + 10} ${detour}, ${sx + 60} ${detour} L ${tx - 60} ${detour} C ${tx - 10} ${detour}, ${tx - 40} ${ty}, ${tx} ${ty}`;
    return { path, labelX: (sx + tx) / 2, labelY: detour };
  }
  const path = `M ${sx} ${sy} C ${sx} ${sy + 40}, ${detour} ${sy + 10}, ${detour} ${sy + 60} L ${detour} ${ty - 60} C ${detour} ${ty - 10}, ${tx} ${ty - 40}, ${tx} ${ty}`;
  return { path, labelX: detour, labelY: (sy + ty) / 2 };
}
