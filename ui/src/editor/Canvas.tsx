import {
  Background,
  ControlButton,
  Controls,
  type OnMove,
  MiniMap,
  ReactFlow,
  useReactFlow,
  useStore,
  useStoreApi,
  type Connection,
  type EdgeChange,
  type FinalConnectionState,
  type NodeChange,
  type ReactFlowState,
} from "@xyflow/react";
import { useCallback, useEffect, useMemo, useRef, useState, type DragEvent, type MouseEvent } from "react";
import { TASK_TYPE } from "../backend/generated";
import { connect, disconnect, removeTasks } from "../blueprint";
import { FlowDirection } from "../nodes/direction";
import { nodeTypes } from "../nodes/registry";
import type { TaskNode } from "../nodes/types";
import { useEditor, useWorkspace } from "../store/context";
import type { Positions } from "../store/editor";
import { NODE_HEIGHT, NODE_WIDTH } from "../store/positions";
import { showsMinimap } from "../store/view";
import { READABLE_ZOOM, fitViewport, inView, revealing } from "./fit";
import { impliedDependencies } from "./implied";
import { detours, reusingRoutes } from "./routing";
import { dependencyAt, reusingEdges, reusingNodes, type DependencyEdge, type RunMarks } from "./graph";
import { Overview } from "./Overview";
import { around, cardIn, cardsBounds, covers, overviewLines, overviewScene, taskAt, viewRect, type ViewRect } from "./overview";
import { ScopeRegions, useScopeRegions } from "./ScopeRegions";
import { TASK_TYPE_DRAG } from "./Palette";
import { canvasRendered } from "../timing";
import { isWire, reusingWiringEdges, type WiringEdge } from "./wiring";
import { edgeTypes } from "./WiringPath";
import "./wiring.css";

const DELETE_KEYS = ["Delete", "Backspace"];
/** Shift+click adds a task to the selection (or takes it out), as Ctrl+click does. */
const MULTI_SELECT_KEYS = ["Shift", "Control", "Meta"];
const MIN_ZOOM = 0.1;
/** The zoom a task asked for is shown at when the view is zoomed out too far to read it. */
const FOCUS_ZOOM = 1;
const NODE_ORIGIN: [number, number] = [0, 0];
const NO_ATTRIBUTION = { hideAttribution: true };
/** A task's rectangle in the minimap takes its colour from its kind (styles.css), or its state. */
const minimapClass = (node: TaskNode) =>
  `${node.type ?? "task"}${node.data.errors > 0 ? " has-errors" : node.data.warnings > 0 ? " has-warnings" : ""}`;
/**
 * Below this zoom the text of nodes and edges is too small to read: the canvas of a large
 * blueprint is drawn as an overview on one <canvas> (Overview.tsx), which keeps it fast to pan.
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
const NO_EDGES: CanvasEdge[] = [];
const NO_NODES: TaskNode[] = [];
const NO_ROUTES = new Map<string, number>();

/**
 * A run's canvas: the blueprint read-only, each card marked with its task's state; a composite
 * opens the inner blueprint instance it runs.
 */
export type RunView = { marks: RunMarks; onOpen(taskId: string): void };

export function Canvas({ run }: { run?: RunView } = {}) {
  const blueprint = useEditor((s) => s.blueprint);
  const positions = useEditor((s) => s.positions);
  const report = useEditor((s) => s.report);
  const selection = useEditor((s) => s.selection);
  const selectedDependency = useEditor((s) => s.selectedDependency);
  const focus = useEditor((s) => s.focus);
  const fitRequest = useEditor((s) => s.fitRequest);
  const direction = useEditor((s) => s.direction);
  const minimap = useEditor(showsMinimap);
  const toggleMinimap = useEditor((s) => s.toggleMinimap);
  const edit = useEditor((s) => s.edit);
  const moveTasks = useEditor((s) => s.moveTasks);
  const select = useEditor((s) => s.select);
  const changeSelection = useEditor((s) => s.changeSelection);
  const deleteTasks = useEditor((s) => s.deleteTasks);
  const selectDependency = useEditor((s) => s.selectDependency);
  const flow = useReactFlow();
  const flowStore = useStoreApi();
  // A re-render when the zoom crosses the threshold, not on every zoom or pan.
  const large = (blueprint?.tasks.length ?? 0) >= LARGE_FROM;
  const viewZoomedOut = useStore((s) => s.transform[2] < ZOOMED_OUT);
  // Until the opening fit is applied the view is React Flow's first one (zoom 1): a blueprint
  // that opens zoomed out is drawn as its overview from the first render, instead of first
  // handing React Flow every card and dependency (at 16,000 dependencies, hundreds of ms).
  const [opening, setOpening] = useState(true);
  const [opensZoomedOut] = useState(
    () => large && blueprint !== null && opensBelow(ZOOMED_OUT, cardsBounds(blueprint, positions)),
  );
  const zoomedOut = (opening ? opensZoomedOut : viewZoomedOut) && large;
  const showWiring = useEditor((s) => s.showWiring);
  // The wiring's labels are long: shown only when zoomed in, whatever the blueprint's size.
  const wiringLabelled = useStore((s) => s.transform[2] >= ZOOMED_OUT);

  const toNodes = useMemo(reusingNodes, []);
  const toEdges = useMemo(reusingEdges, []);
  const chosen = useMemo(() => new Set(selection), [selection]);
  // The run of a large blueprint is read-only: React Flow, whose every change costs in proportion
  // to the nodes it holds (seconds for 10,000), holds only the tasks around the view, none when
  // zoomed out (then not even made: time travel changes the marks every frame). The editor keeps
  // every task as a node: a selection, a drag or a deletion may reach a task out of view.
  const sliced = run !== undefined && large;
  const drawn = useMemo(
    () => (blueprint && !(sliced && zoomedOut) ? toNodes(blueprint, positions, report, chosen, run?.marks) : NO_NODES),
    [toNodes, blueprint, positions, report, chosen, run?.marks, sliced, zoomedOut],
  );
  const cover = useCover(sliced);
  // Zoomed out over a large blueprint, the overview draws the tasks: React Flow keeps them hidden.
  // A hidden node is made once per node: a change that leaves a task's node as it was (the
  // facade's verdict arriving, another task moved) leaves React Flow's copy as it was too.
  const hiding = useMemo(() => new WeakMap<TaskNode, TaskNode>(), []);
  const nodes = useMemo(() => {
    if (!sliced) return zoomedOut ? drawn.map((n) => hidden(hiding, n)) : drawn;
    return zoomedOut || !cover ? NO_NODES : drawn.filter((n) => cardIn(n.position, cover));
  }, [drawn, zoomedOut, sliced, cover, hiding]);
  const regions = useScopeRegions(blueprint, positions);
  const selectedScope = useEditor((s) => s.selectedScope);
  // Zoomed out, the scopes are drawn by the overview too: as elements inside the scaled view,
  // WebKit painted their regions at full size (a 2,000-task blueprint's took the page's frames
  // for most of a second after it opened).
  const lines = useMemo(() => (zoomedOut && blueprint ? overviewLines(blueprint, positions) : null), [zoomedOut, blueprint, positions]);
  const scene = useMemo(
    () =>
      lines && blueprint ? overviewScene(blueprint, positions, report, chosen, run?.marks, regions, selectedScope, lines) : null,
    [lines, blueprint, positions, report, chosen, run?.marks, regions, selectedScope],
  );
  // Dependencies other chains already imply, pointed out on the canvas and in the inspector.
  const implied = useMemo(() => (blueprint ? impliedDependencies(blueprint) : undefined), [blueprint]);
  const unrouted = useMemo(
    () => (blueprint ? toEdges(blueprint, selectedDependency, !zoomedOut, implied) : []),
    [toEdges, blueprint, selectedDependency, zoomedOut, implied],
  );
  // Around the cards they would pass behind; a large blueprint's edges stay plain (and cheap).
  const toRouted = useMemo(reusingRoutes, []);
  const routes = useMemo(
    () => (blueprint && !large ? detours(blueprint, positions, direction) : NO_ROUTES),
    [blueprint, positions, direction, large],
  );
  const allEdges = useMemo(() => toRouted(unrouted, routes), [toRouted, unrouted, routes]);
  // A slice keeps the dependencies between its tasks.
  const edges = useMemo(() => {
    if (!sliced) return allEdges;
    const held = new Set(nodes.map((n) => n.id));
    return allEdges.filter((e) => held.has(e.source) && held.has(e.target));
  }, [allEdges, sliced, nodes]);

  // The wiring follows the blueprint only: moving a node does not compute it again.
  const toWiringEdges = useMemo(reusingWiringEdges, []);
  const wires = useEditor((s) => (showWiring ? s.wires : null));
  const wireEdges = useMemo(
    () => (wires ? toWiringEdges(wires, wiringLabelled) : null),
    [toWiringEdges, wires, wiringLabelled],
  );
  // The overview draws the dependencies of a zoomed-out large blueprint itself.
  const shownEdges = useMemo<CanvasEdge[]>(
    () => (zoomedOut ? NO_EDGES : wireEdges ? [...edges, ...wireEdges] : edges),
    [edges, wireEdges, zoomedOut],
  );

  // After every commit: the timing marks of steps waiting for the canvas (none most of the time).
  useEffect(canvasRendered);

  // Fitting and focusing go by the tasks' positions: a sliced canvas does not hold every task.
  const positionsNow = useRef(positions);
  useEffect(() => {
    positionsNow.current = positions;
  }, [positions]);
  const selected = useEditor((s) => s.selected);
  const selectedNow = useRef(selected);
  useEffect(() => {
    selectedNow.current = selected;
  }, [selected]);
  // How the view was last fitted, while the user has not moved it since: a resized canvas is
  // fitted again the same way. Opening fits at a readable zoom (a small blueprint that does not
  // fit shows where it begins); asking to fit shows the whole blueprint.
  const fitted = useRef<"readable" | "whole" | null>(null);
  const fitAll = useCallback(
    (how: "readable" | "whole", duration?: number) => {
      const { width, height } = flowStore.getState();
      if (!blueprint || width === 0 || height === 0) return;
      const bounds = cardsBounds(blueprint, positionsNow.current);
      // A large blueprint's overview is meant to be seen whole: the least zoom goes as low as that takes.
      const least = large ? Math.min(MIN_ZOOM, fitViewport(bounds, width, height, 0, false).zoom) : MIN_ZOOM;
      flowStore.getState().setMinZoom(least);
      const fit = fitViewport(bounds, width, height, least, how === "readable" && !large);
      // A readable view that cannot hold every card still shows the selected one (a failed
      // task in a run opened on its failure).
      const shown = how === "readable" ? selectedNow.current : null;
      const at = shown === null ? undefined : positionsNow.current[shown];
      const view = at ? revealing(fit, { ...at, width: NODE_WIDTH, height: NODE_HEIGHT }, width, height) : fit;
      void flow.setViewport(view, { duration });
      fitted.current = how;
    },
    [flow, flowStore, blueprint, large],
  );
  const onInit = useCallback(() => {
    fitAll("readable");
    setOpening(false);
  }, [fitAll]);
  const onFitView = useCallback(() => fitAll("whole", 300), [fitAll]);
  const onMoveStart = useCallback<OnMove>((event) => {
    if (event) fitted.current = null; // the user's pan or zoom, not a fit
  }, []);
  const canvasWidth = useStore((s) => s.width);
  const canvasHeight = useStore((s) => s.height);
  // Only a change of size fits again, not an edit of the blueprint (which makes a new fitAll).
  const fitAllNow = useRef(fitAll);
  useEffect(() => {
    fitAllNow.current = fitAll;
  }, [fitAll]);
  useEffect(() => {
    if (fitted.current) fitAllNow.current(fitted.current);
  }, [canvasWidth, canvasHeight]);

  // A task asked for (Ctrl+F, a problem, an attempt chosen on the timeline) is brought into view:
  // left where it is when it shows whole, else centred, zoomed in to read when the view is not.
  useEffect(() => {
    const at = focus && positionsNow.current[focus.task];
    const { width, height } = flowStore.getState();
    if (!at || width === 0 || height === 0) return;
    const viewport = flow.getViewport();
    const card = { ...at, width: NODE_WIDTH, height: NODE_HEIGHT };
    if (viewport.zoom >= READABLE_ZOOM && inView(viewport, card, width, height)) return;
    fitted.current = null;
    const zoom = viewport.zoom >= READABLE_ZOOM ? viewport.zoom : FOCUS_ZOOM;
    void flow.setCenter(at.x + NODE_WIDTH / 2, at.y + NODE_HEIGHT / 2, { zoom, duration: 300 });
  }, [focus, flow, flowStore]);

  useEffect(() => {
    if (fitRequest > 0) fitAll("whole", 300);
  }, [fitRequest, fitAll]);

  // The handlers keep their identity across renders: React Flow copies each changed prop into its
  // store, and every node listens to that store.
  const edgesNow = useRef(edges);
  useEffect(() => {
    edgesNow.current = edges;
  }, [edges]);

  const onNodesChange = useCallback(
    (changes: NodeChange<TaskNode>[]) => {
      const removed = new Set<string>();
      const moved: Positions = {};
      const selections: { id: string; selected: boolean }[] = [];
      for (const change of changes) {
        if (change.type === "position" && change.position) moved[change.id] = change.position;
        if (change.type === "select") selections.push({ id: change.id, selected: change.selected });
        if (change.type === "remove") removed.add(change.id);
      }
      if (Object.keys(moved).length > 0) moveTasks(moved);
      if (selections.length > 0) changeSelection(selections);
      if (removed.size > 0) edit((b) => removeTasks(b, removed));
    },
    [moveTasks, changeSelection, edit],
  );

  // React Flow removes the edges of a deletion and then its nodes, two changes and so two undo
  // steps; the store removes them together, and React Flow is told to remove nothing itself.
  const onBeforeDelete = useCallback(
    async ({ nodes, edges }: { nodes: TaskNode[]; edges: CanvasEdge[] }) => {
      const gone = new Set(nodes.map((n) => n.id));
      const cut = edges.filter((e) => !isWire(e) && !gone.has(e.source) && !gone.has(e.target));
      deleteTasks([...gone], cut.map((e) => ({ from: e.source, to: e.target })));
      return false;
    },
    [deleteTasks],
  );

  const onEdgesChange = useCallback(
    (changes: EdgeChange<CanvasEdge>[]) => {
      // A selection box selects the edges among the tasks it takes too; only an edge chosen by
      // itself (a click, the keyboard) is the selected dependency, else the box would lose its tasks.
      const boxing = flowStore.getState().userSelectionRect !== null;
      for (const change of changes) {
        if (change.type === "select" && change.selected && !boxing) selectDependency(change.id);
      }
      const edges = edgesNow.current;
      const removed = changes.flatMap((c) => (c.type === "remove" ? edges.filter((e) => e.id === c.id) : []));
      if (removed.length > 0) edit((b) => removed.reduce((acc, e) => disconnect(acc, e.source, e.target), b));
    },
    [selectDependency, edit, flowStore],
  );

  const onConnect = useCallback(
    ({ source, target }: Connection) => {
      if (source !== target) edit((b) => connect(b, source, target));
    },
    [edit],
  );
  // A connection dragged from a task's output onto empty canvas: a new task there, after it.
  const openAdd = useEditor((s) => s.openAdd);
  const onConnectEnd = useCallback(
    (e: globalThis.MouseEvent | TouchEvent, state: FinalConnectionState) => {
      if (state.isValid || state.toNode || !state.fromNode || state.fromHandle?.type !== "source") return;
      const point = "changedTouches" in e ? e.changedTouches[0] : e;
      if (!point) return;
      const at = flow.screenToFlowPosition({ x: point.clientX, y: point.clientY });
      openAdd({
        where: { from: state.fromNode.id },
        at: { x: Math.round(at.x - NODE_WIDTH / 2), y: Math.round(at.y) },
        screen: { x: point.clientX, y: point.clientY },
      });
    },
    [flow, openAdd],
  );
  const onEdgeDoubleClick = useCallback(
    (_: unknown, e: CanvasEdge) => isWire(e) || selectDependency(e.id),
    [selectDependency],
  );
  // Over the overview, a click on the pane may be one on a task it draws.
  const onPaneClick = useCallback(
    (e: MouseEvent) => select(scene ? taskAt(scene, flow.screenToFlowPosition({ x: e.clientX, y: e.clientY })) : null),
    [select, scene, flow],
  );
  const drillInto = useWorkspace((s) => s.drillInto);
  const addTask = useEditor((s) => s.addTask);
  // A task type is taken wherever it enters and moves over the canvas, an edge's line too: an
  // element whose dragenter is not taken passes the drop target on to the page's body.
  const onDragOver = useCallback((e: DragEvent) => {
    if (!e.dataTransfer.types.includes(TASK_TYPE_DRAG)) return;
    e.preventDefault();
    e.dataTransfer.dropEffect = "copy";
  }, []);
  const onDrop = useCallback(
    (e: DragEvent) => {
      const type = e.dataTransfer.getData(TASK_TYPE_DRAG);
      if (!type) return;
      e.preventDefault();
      // The card's middle where the pointer let go; dropped on a dependency, it goes into it.
      const at = flow.screenToFlowPosition({ x: e.clientX, y: e.clientY });
      const into = blueprint ? dependencyAt(blueprint, positionsNow.current, at, direction) : null;
      addTask(type, { x: Math.round(at.x - NODE_WIDTH / 2), y: Math.round(at.y - NODE_HEIGHT / 2) }, into && { into });
    },
    [flow, addTask, blueprint, direction],
  );
  const open = run?.onOpen ?? drillInto;
  const onNodeDoubleClick = useCallback(
    (_: unknown, node: TaskNode) => {
      if (node.data.task.type === TASK_TYPE.COMPOSITE) void open(node.id);
    },
    [open],
  );
  const editable = run === undefined;
  const onOverviewDoubleClick = useCallback(
    (e: MouseEvent) => {
      const id = scene && taskAt(scene, flow.screenToFlowPosition({ x: e.clientX, y: e.clientY }));
      if (id && blueprint?.tasks.find((t) => t.id === id)?.type === TASK_TYPE.COMPOSITE) void open(id);
    },
    [scene, flow, blueprint, open],
  );

  return (
    <FlowDirection.Provider value={direction}>
      <ReactFlow<TaskNode, CanvasEdge>
        nodes={nodes}
        edges={shownEdges}
        nodeTypes={nodeTypes}
        edgeTypes={edgeTypes}
        onNodesChange={onNodesChange}
        onEdgesChange={onEdgesChange}
        onConnect={editable ? onConnect : undefined}
        onConnectEnd={editable ? onConnectEnd : undefined}
        onEdgeDoubleClick={editable ? onEdgeDoubleClick : undefined}
        onNodeDoubleClick={onNodeDoubleClick}
        onDragOver={editable ? onDragOver : undefined}
        onDrop={editable ? onDrop : undefined}
        onDragEnter={editable ? onDragOver : undefined}
        zoomOnDoubleClick={false}
        onPaneClick={onPaneClick}
        onDoubleClick={scene ? onOverviewDoubleClick : undefined}
        onBeforeDelete={onBeforeDelete}
        nodesConnectable={editable}
        deleteKeyCode={editable ? DELETE_KEYS : null}
        multiSelectionKeyCode={MULTI_SELECT_KEYS}
        className={zoomedOut ? "zoomed-out" : undefined}
        onlyRenderVisibleElements={large}
        onInit={onInit}
        onMoveStart={onMoveStart}
        colorMode="system"
        minZoom={MIN_ZOOM}
        nodeOrigin={NODE_ORIGIN}
        proOptions={NO_ATTRIBUTION}
      >
        {scene && <Overview scene={scene} />}
        {!scene && <ScopeRegions regions={regions} marks={run?.marks} />}
        {!zoomedOut && <Background gap={24} />}
        <Controls showInteractive={false} showFitView={false}>
          <ControlButton onClick={onFitView} title="Fit the blueprint in view" className="react-flow__controls-fitview" data-testid="fit-view">
            <svg viewBox="0 0 16 16" width="12" height="12" aria-hidden fill="none" stroke="currentColor" strokeWidth="1.6">
              <path d="M1 5V1h4M11 1h4v4M15 11v4h-4M5 15H1v-4" />
            </svg>
          </ControlButton>
          <ControlButton onClick={toggleMinimap} title={minimap ? "Hide the minimap" : "Show the minimap"} data-testid="toggle-minimap">
            ▦
          </ControlButton>
        </Controls>
        {minimap && <MiniMap<TaskNode> pannable zoomable nodeClassName={minimapClass} nodeBorderRadius={4} ariaLabel="Minimap" />}
      </ReactFlow>
    </FlowDirection.Provider>
  );
}

/** `node`, hidden: the same object for the same node. */
function hidden(made: WeakMap<TaskNode, TaskNode>, node: TaskNode): TaskNode {
  let copy = made.get(node);
  if (!copy) made.set(node, (copy = { ...node, hidden: true }));
  return copy;
}

/**
 * Whether the view fitted to `bounds` at opening is zoomed out below `zoom`, however the canvas
 * is sized: the window holds the canvas, and fitted into the whole window it would be.
 */
function opensBelow(zoom: number, bounds: ReturnType<typeof cardsBounds>): boolean {
  return fitViewport(bounds, window.innerWidth, window.innerHeight, MIN_ZOOM, false).zoom < zoom;
}

/**
 * The part of the flow a sliced canvas holds tasks for: around the view, taken again only when
 * the view leaves it, so that a pan changes React Flow's nodes a few times, not every frame.
 */
function useCover(sliced: boolean): ViewRect | null {
  const flowStore = useStoreApi();
  const [cover, setCover] = useState<ViewRect | null>(null);
  const held = useRef<ViewRect | null>(null);
  useEffect(() => {
    if (!sliced) return;
    const look = ({ transform, width, height }: ReactFlowState) => {
      if (width === 0 || height === 0) return;
      const view = viewRect(transform, width, height);
      if (held.current && covers(held.current, view)) return;
      held.current = around(view);
      setCover(held.current);
    };
    look(flowStore.getState());
    return flowStore.subscribe(look);
  }, [sliced, flowStore]);
  return sliced ? cover : null;
}
