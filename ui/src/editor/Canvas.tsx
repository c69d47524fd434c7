import {
  Background,
  Controls,
  ReactFlow,
  useReactFlow,
  type Connection,
  type EdgeChange,
  type NodeChange,
} from "@xyflow/react";
import { useEffect, useMemo } from "react";
import { connect, cycleDependencyType, disconnect, removeTasks } from "../blueprint";
import { nodeTypes } from "../nodes/registry";
import type { TaskNode } from "../nodes/types";
import { useEditor } from "../store/context";
import { toEdges, toNodes, type DependencyEdge } from "./graph";
import { ScopeRegions } from "./ScopeRegions";
import { canvasRendered } from "../timing";

const DELETE_KEYS = ["Delete", "Backspace"];

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

  const nodes = useMemo(
    () => (blueprint ? toNodes(blueprint, positions, report, selected) : []),
    [blueprint, positions, report, selected],
  );
  const edges = useMemo(
    () => (blueprint ? toEdges(blueprint, selectedDependency) : []),
    [blueprint, selectedDependency],
  );

  // After every commit: the timing marks of steps waiting for the canvas (none most of the time).
  useEffect(canvasRendered);

  useEffect(() => {
    if (focus) void flow.fitView({ nodes: [{ id: focus.task }], maxZoom: 1.2, duration: 300 });
  }, [focus, flow]);

  function onNodesChange(changes: NodeChange<TaskNode>[]) {
    const removed = new Set<string>();
    for (const change of changes) {
      if (change.type === "position" && change.position) moveTask(change.id, change.position);
      if (change.type === "select" && change.selected) select(change.id);
      if (change.type === "remove") removed.add(change.id);
    }
    if (removed.size > 0) edit((b) => removeTasks(b, removed));
  }

  function onEdgesChange(changes: EdgeChange<DependencyEdge>[]) {
    for (const change of changes) {
      if (change.type === "select" && change.selected) selectDependency(change.id);
    }
    const removed = changes.flatMap((c) => (c.type === "remove" ? edges.filter((e) => e.id === c.id) : []));
    if (removed.length > 0) edit((b) => removed.reduce((acc, e) => disconnect(acc, e.source, e.target), b));
  }

  function onConnect({ source, target }: Connection) {
    if (source !== target) edit((b) => connect(b, source, target));
  }

  return (
    <ReactFlow<TaskNode, DependencyEdge>
      nodes={nodes}
      edges={edges}
      nodeTypes={nodeTypes}
      onNodesChange={onNodesChange}
      onEdgesChange={onEdgesChange}
      onConnect={onConnect}
      onEdgeDoubleClick={(_, e) => edit((b) => cycleDependencyType(b, e.source, e.target))}
      onPaneClick={() => select(null)}
      deleteKeyCode={DELETE_KEYS}
      fitView
      fitViewOptions={{ padding: 0.1, maxZoom: 1.2 }}
      colorMode="system"
      minZoom={0.1}
      nodeOrigin={[0, 0]}
      proOptions={{ hideAttribution: true }}
    >
      {blueprint && <ScopeRegions blueprint={blueprint} positions={positions} />}
      <Background gap={24} />
      <Controls showInteractive={false} />
    </ReactFlow>
  );
}
