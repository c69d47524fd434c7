// Places tasks in layers, each task below (or to the right of) everything it depends on (a Sugiyama
// layout: layering by longest path, order within layers by barycenters, x by least squares
// under the order). elkjs's layered algorithm took 2 s for 200 tasks and 18 s for 2,000 here,
// most of it routing long dependencies through every layer they cross; this one does not route
// edges (React Flow draws them) and lays 2,000 tasks out in milliseconds.
import type { Direction } from "../backend/generated";
import type { Blueprint } from "../blueprint";
import { NODE_HEIGHT, NODE_WIDTH, type Positions } from "../store/positions";

/** Room between two layers, and between two tasks of a layer. */
const LAYER_GAP = 80;
const NODE_GAP = 40;
/** Passes of ordering and of placing: more change little past these. */
const ORDER_SWEEPS = 6;
const PLACE_SWEEPS = 4;

/** The tasks in layers down the page (`down`), or in columns across it (`right`). */
export function layered(blueprint: Blueprint, direction: Direction = "down"): Positions {
  const ids = [...new Set(blueprint.tasks.map((t) => t.id))];
  const index = new Map(ids.map((id, i) => [id, i]));
  const n = ids.length;
  const before: number[][] = ids.map(() => []);
  const after: number[][] = ids.map(() => []);
  const seen = new Set<string>();
  for (const task of blueprint.tasks) {
    const to = index.get(task.id)!;
    for (const d of task.depends_on ?? []) {
      const from = index.get(d.id);
      if (from === undefined || from === to || seen.has(`${from} ${to}`)) continue;
      seen.add(`${from} ${to}`);
      before[to]!.push(from);
      after[from]!.push(to);
    }
  }
  const order = topologicalOrder(n, before, after);
  const layer = layersOf(order, before, after);
  const layers = orderWithinLayers(order, layer, before, after);
  const right = direction === "right";
  // Across the layers, tasks stand side by side (down) or one above another (right).
  const across = placeInLayers(layers, before, after, right ? NODE_HEIGHT + NODE_GAP : NODE_WIDTH + NODE_GAP);
  const first = Math.min(...across);
  const positions: Positions = {};
  for (let v = 0; v < n; v++) {
    const a = across[v]! - first;
    positions[ids[v]!] = right
      ? { x: layer[v]! * (NODE_WIDTH + LAYER_GAP), y: a }
      : { x: a, y: layer[v]! * (NODE_HEIGHT + LAYER_GAP) };
  }
  return positions;
}

/**
 * The tasks, each after the tasks it depends on. A blueprint being edited may have a cycle: a
 * dependency that closes one is ignored (removed from `before` and `after`).
 */
function topologicalOrder(n: number, before: number[][], after: number[][]): number[] {
  const state = new Uint8Array(n); // 0 unvisited, 1 on the path, 2 done
  const order: number[] = [];
  for (let root = 0; root < n; root++) {
    if (state[root] !== 0) continue;
    // Depth first through the dependencies; a task is done once all of them are.
    const stack: [number, number][] = [[root, 0]];
    state[root] = 1;
    while (stack.length > 0) {
      const top = stack[stack.length - 1]!;
      const [v, next] = top;
      const deps = before[v]!;
      if (next < deps.length) {
        top[1] += 1;
        const u = deps[next]!;
        if (state[u] === 0) {
          state[u] = 1;
          stack.push([u, 0]);
        } else if (state[u] === 1) {
          // v depends on u which depends, through the path, on v: drop this dependency.
          deps.splice(next, 1);
          top[1] -= 1;
          after[u]!.splice(after[u]!.indexOf(v), 1);
        }
      } else {
        state[v] = 2;
        order.push(v);
        stack.pop();
      }
    }
  }
  return order;
}

/**
 * Each task one layer below the deepest task it depends on; a task nothing comes before sits
 * just above the first task that needs it, not at the top far from it.
 */
function layersOf(order: number[], before: number[][], after: number[][]): number[] {
  const layer = new Array<number>(order.length).fill(0);
  for (const v of order) for (const u of before[v]!) layer[v] = Math.max(layer[v]!, layer[u]! + 1);
  for (let i = order.length - 1; i >= 0; i--) {
    const v = order[i]!;
    if (before[v]!.length > 0 || after[v]!.length === 0) continue;
    layer[v] = Math.min(...after[v]!.map((w) => layer[w]!)) - 1;
  }
  return layer;
}

/** The tasks of each layer, left to right, ordered to cross few dependencies. */
function orderWithinLayers(order: number[], layer: number[], before: number[][], after: number[][]): number[][] {
  const layers: number[][] = [];
  for (const v of order) (layers[layer[v]!] ??= []).push(v);
  for (let i = 0; i < layers.length; i++) layers[i] ??= [];
  // Where a task sits in its layer, centred, so that layers of different widths compare.
  const at = new Float64Array(order.length);
  const measure = (row: number[]) => row.forEach((v, i) => (at[v] = i - (row.length - 1) / 2));
  layers.forEach(measure);
  const sweep = (rows: number[][], neighbours: number[][]) => {
    for (const row of rows) {
      const key = new Map<number, number>();
      for (const v of row) {
        const near = neighbours[v]!;
        key.set(v, near.length === 0 ? at[v]! : near.reduce((sum, u) => sum + at[u]!, 0) / near.length);
      }
      row.sort((a, b) => key.get(a)! - key.get(b)!);
      measure(row);
    }
  };
  for (let pass = 0; pass < ORDER_SWEEPS; pass++) {
    if (pass % 2 === 0) sweep(layers.slice(1), before);
    else sweep(layers.slice(0, -1).reverse(), after);
  }
  return layers;
}

/**
 * The x of every task: as near the mean x of its neighbours as the order and the gaps between
 * tasks let it (least squares under the order, by pooling adjacent violators), sweeping down
 * towards what each task depends on and up towards what depends on it.
 */
function placeInLayers(layers: number[][], before: number[][], after: number[][], step: number): number[] {
  const x: number[] = [];
  for (const row of layers) row.forEach((v, i) => (x[v] = (i - (row.length - 1) / 2) * step));
  const sweep = (rows: number[][], neighbours: number[][]) => {
    for (const row of rows) {
      const wanted = row.map((v) => {
        const near = neighbours[v]!;
        return near.length === 0 ? x[v]! : near.reduce((sum, u) => sum + x[u]!, 0) / near.length;
      });
      fitInOrder(wanted, step).forEach((at, i) => (x[row[i]!] = at));
    }
  };
  for (let pass = 0; pass < PLACE_SWEEPS; pass++) {
    if (pass % 2 === 0) sweep(layers.slice(1), before);
    else sweep(layers.slice(0, -1).reverse(), after);
  }
  return x;
}

/**
 * The positions nearest `wanted` (least squares) that keep their order with at least `gap`
 * between neighbours: with y_i = x_i - i·gap the constraint is y non-decreasing, an isotonic
 * regression solved by pooling adjacent violators.
 */
export function fitInOrder(wanted: number[], gap: number): number[] {
  const blocks: { sum: number; count: number }[] = [];
  for (let i = 0; i < wanted.length; i++) {
    blocks.push({ sum: wanted[i]! - i * gap, count: 1 });
    while (blocks.length > 1) {
      const last = blocks[blocks.length - 1]!;
      const prev = blocks[blocks.length - 2]!;
      if (prev.sum / prev.count <= last.sum / last.count) break;
      prev.sum += last.sum;
      prev.count += last.count;
      blocks.pop();
    }
  }
  const out: number[] = [];
  for (const b of blocks) for (let k = 0; k < b.count; k++) out.push(b.sum / b.count + out.length * gap);
  return out;
}
