// Places tasks top to bottom with elkjs's layered algorithm, in elkjs's own web worker so that
// a large blueprint never blocks the editor.
import ELK from "elkjs/lib/elk-api.js";
import elkWorkerUrl from "elkjs/lib/elk-worker.min.js?url";
import type { Blueprint } from "../blueprint";
import type { Layout, Positions } from "../store/editor";
import { edgeId, NODE_HEIGHT, NODE_WIDTH } from "./graph";


const elk = new ELK({ workerFactory: () => new Worker(elkWorkerUrl) });

export const elkLayout: Layout = async (blueprint: Blueprint): Promise<Positions> => {
  const ids = new Set(blueprint.tasks.map((t) => t.id));
  const graph = await elk.layout({
    id: "blueprint",
    layoutOptions: {
      "elk.algorithm": "layered",
      "elk.direction": "DOWN",
      "elk.layered.spacing.nodeNodeBetweenLayers": "80",
      "elk.spacing.nodeNode": "40",
    },
    children: blueprint.tasks.map((t) => ({ id: t.id, width: NODE_WIDTH, height: NODE_HEIGHT })),
    edges: blueprint.tasks.flatMap((t) =>
      (t.depends_on ?? [])
        .filter((d) => ids.has(d.id))
        .map((d) => ({ id: edgeId(d.id, t.id), sources: [d.id], targets: [t.id] })),
    ),
  });
  return Object.fromEntries((graph.children ?? []).map((n) => [n.id, { x: n.x ?? 0, y: n.y ?? 0 }]));
};
