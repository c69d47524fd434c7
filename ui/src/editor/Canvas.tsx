import {
  Background,
  Controls,
  ReactFlow,
  useReactFlow,
  useStore,
  type Connection,
  type EdgeChange,
  type NodeChange,
} from "@xyflow/react";
import { useCallback, useEffect, useMemo, useRef } from "react";
import { connect, cycleDependencyType, disconnect, removeTasks } from "../blueprint";
import { nodeTypes } from "../nodes/registry";
import type { TaskNode } from "../nodes/types";
import { useEditor } from "../store/context";
import { reusingEdges, reusingNodes, type DependencyEdge } from "./graph";
import { ScopeRegions } from "./ScopeRegions";
import { canvasRendered } from "../timing";
import { isWire, reusingWiringEdges, wiring, type WiringEdge } from "./wiring";
import { edgeTypes } from "./WiringPath";
import "./wiring.css";

const DELETE_KEYS = ["Delete", "Backspace"];
const FIT_VIEW = { padding: 0.1, maxZoom: 1.2 };
const NODE_ORIGIN: [number, number] = [0, 0];
const NO_ATTRIBUTION = { hideAttribution: true };
/**
 * Below this zoom the text of nodes and edges is too small to read: the canvas of a large
 * blueprint draws cards without text and edges without labels, which keeps it fast to pan.
 */
export const ZOOMED_OUT = 0.45;
/**
 * From this many tasks on, only the nodes and edges in view are drawn, and plainly when zoomed
 * out. A small blueprint is drawn whole and as it is at any zoom: it is cheap to draw, culling
 * costs a visibility pass on every frame of a pan, and a task out of view would not be in the
 * page at all.
 */
const LARGE_FROM = 500;

/** The canvas draws dependencies, and the data wiring when it is shown. */
type CanvasEdge = DependencyEdge | WiringEdge;

export function Canvas() {
  const blueprint = useEditor((s) => s.blueprint);
  const positions = useEditor((s) => s.positions);
  const report = useEditor((s) => s.report);
  const selected = useEditor((s) => s.selected);
  const selectedDependency = useEditor((s) => s.selectedDependency);
  const focus = useEditor((s) => s.focus);
  const edit = useEditor((s) => s.edit);
  const moveTask = useEditor((s) => s.moveTask);
  const select = useEditor((s) => s.select);
  const selectDependency = useEditor((s) => s.selectDependency);
  const flow = useReactFlow();
  // A re-render when the zoom crosses the threshold, not on every zoom or pan.
  const large = (blueprint?.tasks.length ?? 0) >= LARGE_FROM;
  const zoomedOut = useStore((s) => s.transform[2] < ZOOMED_OUT) && large;
  const showWiring = useEditor((s) => s.showWiring);
  // The wiring's labels are long: shown only when zoomed in, whatever the blueprint's size.
  const wiringLabelled = useStore((s) => s.transform[2] >= ZOOMED_OUT);

  const toNodes = useMemo(reusingNodes, []);
  const toEdges = useMemo(reusingEdges, []);
  const nodes = useMemo(
    () => (blueprint ? toNodes(blueprint, positions, report, selected) : []),
    [toNodes, blueprint, positions, report, selected],
  );
  const edges = useMemo(
    () => (blueprint ? toEdges(blueprint, selectedDependency, !zoomedOut) : []),
    [toEdges, blueprint, selectedDependency, zoomedOut],
  );

  // The wiring follows the blueprint only: moving a node does not compute it again.
  const toWiringEdges = useMemo(reusingWiringEdges, []);
  const wires = useMemo(() => (showWiring && blueprint ? wiring(blueprint) : null), [showWiring, blueprint]);
  const wireEdges = useMemo(
    () => (wires ? toWiringEdges(wires, wiringLabelled) : null),
    [toWiringEdges, wires, wiringLabelled],
  );
  const shownEdges = useMemo<CanvasEdge[]>(() => (wireEdges ? [...edges, ...wireEdges] : edges), [edges, wireEdges]);

  // After every commit: the timing marks of steps waiting for the canvas (none most of the time).
  useEffect(canvasRendered);

  useEffect(() => {
    if (focus) void flow.fitView({ nodes: [{ id: focus.task }], maxZoom: 1.2, duration: 300 });
  }, [focus, flow]);

  // The handlers keep their identity across renders: React Flow copies each changed prop into its
  // store, and every node listens to that store.
  const edgesNow = useRef(edges);
  useEffect(() => {
    edgesNow.current = edges;
  }, [edges]);

  const onNodesChange = useCallback(
    (changes: NodeChange<TaskNode>[]) => {
      const removed = new Set<string>();
      for (const change of changes) {
        if (change.type === "position" && change.position) moveTask(change.id, change.position);
        if (change.type === "select" && change.selected) select(change.id);
        if (change.type === "remove") removed.add(change.id);
      }
      if (removed.size > 0) edit((b) => removeTasks(b, removed));
    },
    [moveTask, select, edit],
  );

  const onEdgesChange = useCallback(
    (changes: EdgeChange<CanvasEdge>[]) => {
      for (const change of changes) {
        if (change.type === "select" && change.selected) selectDependency(change.id);
      }
      const edges = edgesNow.current;
      const removed = changes.flatMap((c) => (c.type === "remove" ? edges.filter((e) => e.id === c.id) : []));
      if (removed.length > 0) edit((b) => removed.reduce((acc, e) => disconnect(acc, e.source, e.target), b));
    },
    [selectDependency, edit],
  );

  const onConnect = useCallback(
    ({ source, target }: Connection) => {
      if (source !== target) edit((b) => connect(b, source, target));
    },
    [edit],
  );
  const onEdgeDoubleClick = useCallback(
    (_: unknown, e: CanvasEdge) => isWire(e) || edit((b) => cycleDependencyType(b, e.source, e.target)),
    [edit],
  );
  const onPaneClick = useCallback(() => select(null), [select]);

  return (
    <ReactFlow<TaskNode, CanvasEdge>
      nodes={nodes}
      edges={shownEdges}
      nodeTypes={nodeTypes}
      edgeTypes={edgeTypes}
      onNodesChange={onNodesChange}
      onEdgesChange={onEdgesChange}
      onConnect={onConnect}
      onEdgeDoubleClick={onEdgeDoubleClick}
      onPaneClick={onPaneClick}
      deleteKeyCode={DELETE_KEYS}
      className={zoomedOut ? "zoomed-out" : undefined}
      onlyRenderVisibleElements={large}
      fitView
      fitViewOptions={FIT_VIEW}
      colorMode="system"
      minZoom={0.1}
      nodeOrigin={NODE_ORIGIN}
      proOptions={NO_ATTRIBUTION}
    >
      {blueprint && <ScopeRegions blueprint={blueprint} positions={positions} />}
      <Background gap={24} />
      <Controls showInteractive={false} />
    </ReactFlow>
  );
}
