// The live graph of a run: the blueprint version it runs, read-only, each card marked with its
// task's state as the event stream tells it; a composite opens the inner blueprint instance it
// runs (breadcrumb back). Selecting a card selects its task's latest attempt, shared with the
// timeline and the details panel; an attempt selected elsewhere selects its card.
import { ReactFlowProvider } from "@xyflow/react";
import { useEffect, useMemo, useState } from "react";
import { useStore } from "zustand";
import { Canvas, type RunView } from "../editor/Canvas";
import type { TaskState } from "../backend/generated";
import type { RunMarks } from "../editor/graph";
import { EditorProvider, useRuns, useWorkspaceStore } from "../store/context";
import type { OpenRun, RunLevel } from "../store/runs";

export function RunGraph({ run }: { run: OpenRun }) {
  const level = run.levels.at(-1);
  const backTo = useRuns((s) => s.backTo);
  if (!level) return <p className="empty">The blueprint this run ran cannot be read.</p>;
  return (
    <section className="run-graph" aria-label="Run graph">
      {run.levels.length > 1 && (
        <nav className="breadcrumb run-crumbs" aria-label="Blueprint instances">
          {run.levels.map((l, i) => (
            <button key={l.instance} type="button" disabled={i === run.levels.length - 1} onClick={() => backTo(i)} data-testid="run-crumb">
              {l.instance}
            </button>
          ))}
        </nav>
      )}
      <EditorProvider key={level.instance} store={level.editor}>
        <LevelCanvas run={run} level={level} />
      </EditorProvider>
    </section>
  );
}

function LevelCanvas({ run, level }: { run: OpenRun; level: RunLevel }) {
  const blueprint = useStore(level.editor, (s) => s.blueprint);
  const laidOut = useStore(level.editor, (s) => s.laidOut);
  const selectTask = useRuns((s) => s.selectTask);
  const drillInto = useRuns((s) => s.drillInto);
  // Time travelling: the states and attempts of the moment shown.
  const travel = useRuns((s) => s.travel);

  // The level's nodes and attempts, found once: time travel asks for the marks every frame.
  const own = useMemo(
    () => ({
      nodes: Object.entries(run.nodes).filter(([, n]) => n.instance === level.instance),
      attempts: run.attempts.filter((a) => a.instance === level.instance),
    }),
    [run.nodes, run.attempts, level.instance],
  );
  const marks = useMemo<RunMarks>(() => {
    const found: Record<string, { state: TaskState; attempts: number; held?: string; breakpoint?: string }> = {};
    for (const task of blueprint?.tasks ?? []) found[task.id] = { state: "PENDING", attempts: 0 };
    for (const [key, n] of own.nodes) {
      const mark = found[n.task];
      if (mark) mark.state = travel ? (travel.replay.states.get(key) ?? "PENDING") : n.state;
    }
    // In start order: travelling, those begun by the moment come first.
    for (const a of own.attempts) {
      if (travel && a.started_ms > travel.at) break;
      const mark = found[a.task];
      if (mark) mark.attempts += 1;
    }
    // Held only while a runner drives the run (the header says so on the same terms), and now.
    const now = run.driven && run.session.state === "running" && !travel;
    for (const h of now ? run.held : []) {
      const node = run.nodes[h.node];
      const mark = node?.instance === level.instance ? found[node.task] : undefined;
      if (mark) mark.held = h.at;
    }
    for (const b of now ? run.breakpoints : []) {
      const node = run.nodes[b.node];
      const mark = node?.instance === level.instance ? found[node.task] : undefined;
      if (mark) mark.breakpoint = b.at;
    }
    return found;
  }, [blueprint, own, run.nodes, run.held, run.breakpoints, run.driven, run.session.state, level.instance, travel]);
  const view = useMemo<RunView>(() => ({ marks, onOpen: drillInto }), [marks, drillInto]);

  // The graph of a large run takes seconds to make: it comes after the first frame of the
  // timeline, which shows the run at once.
  const painted = useAfterFirstPaint(level);

  // A card clicked selects its task's latest attempt, unless one of its attempts is selected.
  const runs = useWorkspaceStore().getState().runs;
  useEffect(
    () =>
      level.editor.subscribe((state, before) => {
        if (state.selected === before.selected || state.selected === null) return;
        const open = runs.getState().run;
        const shown = open?.selected ? open.nodes[open.selected.node] : undefined;
        if (shown?.instance !== level.instance || shown.task !== state.selected) selectTask(state.selected);
      }),
    [level, runs, selectTask],
  );

  // An attempt selected elsewhere (the timeline, a failure) selects its card when it is in this
  // instance, and brings it into view.
  useEffect(() => {
    const shown = run.selected ? run.nodes[run.selected.node] : undefined;
    if (!shown) return;
    const editor = level.editor.getState();
    if (shown.instance === level.instance && editor.selected !== shown.task) editor.focusTask(shown.task);
  }, [run.selected, run.nodes, level]);

  if (!blueprint || !laidOut || !painted) return <p className="empty">Laying out…</p>;
  return (
    <ReactFlowProvider>
      <Canvas run={view} />
    </ReactFlowProvider>
  );
}

/** Whether a frame was painted since `key` changed. */
function useAfterFirstPaint(key: unknown): boolean {
  const [painted, setPainted] = useState<unknown>(null);
  useEffect(() => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    // The frame after next: the next one may still be the one whose paint is waited for.
    let frame = requestAnimationFrame(() => {
      frame = requestAnimationFrame(() => (timer = setTimeout(() => setPainted(key))));
    });
    return () => {
      cancelAnimationFrame(frame);
      clearTimeout(timer);
    };
  }, [key]);
  return painted === key;
}
