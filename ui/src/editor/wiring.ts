// The data flow of a blueprint drawn on the canvas beside its dependencies when asked: which
// output feeds which input is the facade's answer (`blueprint_wiring`: each input wired to the
// nearest writers upstream of the key it reads), drawn here as edges of their own kind.
import { MarkerType, type Edge } from "@xyflow/react";
import type { Wire } from "../backend/generated";
import { NODE_HEIGHT, NODE_WIDTH } from "../store/positions";

export type { Wire };

export type WiringEdge = Edge<{ kind: "wiring"; wires: Wire[] }>;

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
