// Where tasks sit on the canvas. A saved layout may lag its blueprint (tasks added by hand, or
// renamed): the tasks it lacks go below a placed task they depend on, and only tasks without a
// placed upstream are left for the automatic layout.
import type { Direction } from "../backend/generated";
import type { Blueprint } from "../blueprint";

export type Position = { x: number; y: number };
export type Positions = Record<string, Position>;

/** The size of every node, for React Flow and for the layout alike. */
export const NODE_WIDTH = 200;
export const NODE_HEIGHT = 56;
/** The room between a task and the one placed under it. */
const GAP = 64;

/**
 * The saved positions of the blueprint's tasks (those of tasks it no longer has dropped), the
 * tasks the saved layout lacks placed under their upstream, and the ids nothing could place.
 */
export function mergeLayout(blueprint: Blueprint, saved: Positions, direction: Direction = "down"): { positions: Positions; unplaced: string[] } {
  const positions: Positions = {};
  for (const task of blueprint.tasks) {
    const at = saved[task.id];
    if (at) positions[task.id] = at;
  }
  let missing = blueprint.tasks.filter((t) => !positions[t.id]);
  // A chain of new tasks is placed one link per pass, upstream first.
  for (let progress = true; progress && missing.length > 0; ) {
    progress = false;
    for (const task of missing) {
      const upstream = (task.depends_on ?? []).map((d) => positions[d.id]).find((p) => p !== undefined);
      if (!upstream) continue;
      const next = direction === "right" ? { x: upstream.x + NODE_WIDTH + GAP, y: upstream.y } : { x: upstream.x, y: upstream.y + NODE_HEIGHT + GAP };
      positions[task.id] = freeSpot(positions, next, direction);
      progress = true;
    }
    missing = missing.filter((t) => !positions[t.id]);
  }
  return { positions, unplaced: missing.map((t) => t.id) };
}

/**
 * Adds the automatic layout's positions of `unplaced` to `positions`, moved as one block to the
 * right of everything already placed so that they overlap nothing.
 */
export function placeBeside(positions: Positions, unplaced: string[], computed: Positions): Positions {
  const block = unplaced.map((id) => computed[id] ?? { x: 0, y: 0 });
  if (block.length === 0) return positions;
  const placed = Object.values(positions);
  const right = placed.length > 0 ? Math.max(...placed.map((p) => p.x)) + NODE_WIDTH + GAP : 0;
  const top = placed.length > 0 ? Math.min(...placed.map((p) => p.y)) : 0;
  const dx = right - Math.min(...block.map((p) => p.x));
  const dy = top - Math.min(...block.map((p) => p.y));
  const added = Object.fromEntries(unplaced.map((id, i) => [id, { x: block[i]!.x + dx, y: block[i]!.y + dy }]));
  return { ...positions, ...added };
}

/** `wanted`, or the first spot beside it (right of it, or below it in a layout that flows right) that no node covers. */
function freeSpot(positions: Positions, wanted: Position, direction: Direction): Position {
  const taken = Object.values(positions);
  const overlaps = (at: Position) =>
    taken.some((p) => Math.abs(p.x - at.x) < NODE_WIDTH && Math.abs(p.y - at.y) < NODE_HEIGHT);
  let at = wanted;
  while (overlaps(at)) at = direction === "right" ? { x: at.x, y: at.y + NODE_HEIGHT + GAP / 2 } : { x: at.x + NODE_WIDTH + GAP / 2, y: at.y };
  return at;
}

/** The positions of the blueprint's tasks only, rounded as the layout file keeps them. */
export function layoutToSave(blueprint: Blueprint, positions: Positions): Positions {
  return Object.fromEntries(
    blueprint.tasks.flatMap((t) => {
      const at = positions[t.id];
      return at ? [[t.id, { x: Math.round(at.x), y: Math.round(at.y) }]] : [];
    }),
  );
}
