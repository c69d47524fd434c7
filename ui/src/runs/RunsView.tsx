// The runs: the list of sessions beside the open one, whose graph sits over its timeline, with
// the selected attempt's details and log on the right; the sessions of a server to follow here.
import { useEffect, useMemo } from "react";
import { commandForKey, WINDOW_COMMANDS } from "../commands";
import { isTyping } from "../editor/typing";
import { currentEditor } from "../store/workspace";
import { ModeSwitch } from "../ModeSwitch";
import { ErrorBoundary } from "../ErrorBoundary";
import { ServerRunsDialog } from "../servers/ServerRunsDialog";
import { useRuns, useWorkspace, useWorkspaceStore } from "../store/context";
import type { OpenRun } from "../store/runs";
import { AgentNotes } from "./AgentNotes";
import { AttemptDetails, AttemptLog } from "./AttemptDetails";
import { CompareView } from "./CompareView";
import { RunGraph } from "./RunGraph";
import { RerunDialog } from "./RerunDialog";
import { RunHeader, useNow } from "./RunHeader";
import { RunList } from "./RunList";
import { timelineTiming, useTimingPoll } from "./timeLeft";
import { TravelBar, TravelSwitch } from "./travel/TravelBar";
import { TravelData } from "./travel/TravelData";
import { Timeline, type AttemptRef } from "./timeline/Timeline";
import "./runs.css";

export function RunsView() {
  const run = useRuns((s) => s.run);
  const notice = useRuns((s) => s.notice);
  const workspace = useWorkspaceStore();
  const serverRuns = useWorkspace((s) => s.serverRuns);
  useTimingPoll();

  // The window's shortcuts (new, open, quit, back to the blueprints) act here too.
  useEffect(() => {
    function onKey(e: KeyboardEvent) {
      const command = commandForKey(e, isTyping(document.activeElement));
      if (!command || !WINDOW_COMMANDS.has(command.id)) return;
      e.preventDefault();
      void command.run(currentEditor(workspace.getState()).getState(), workspace.getState());
    }
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [workspace]);
  return (
    <div className="runs-view" data-testid="runs-view">
      <header className="toolbar">
        <ModeSwitch />
        <span className="separator" />
        <button
          type="button"
          onClick={() => void serverRuns.getState().open()}
          title="The sessions of an antikythera server: follow one here"
          data-testid="servers-runs-open"
        >
          Servers…
        </button>
      </header>
      <RunList />
      {run ? (
        <OpenRunView run={run} />
      ) : (
        <main className="run-main">
          <p className="empty">Choose a run on the left, or run a blueprint from the editor (▶ Run, F5).</p>
        </main>
      )}
      <footer className="status">{notice && <span className={notice.error ? "notice error" : "notice"}>{notice.text}</span>}</footer>
      <ServerRunsDialog />
      <RerunDialog />
    </div>
  );
}

/** The timeline, its running bars growing with the clock: only it is drawn again as time passes. */
function LiveTimeline({ run, onSelect }: { run: OpenRun; onSelect(ref: AttemptRef | null): void }) {
  const live = run.driven && (run.session.state === "running" || run.session.state === "pending");
  // A few frames a second are enough for a bar to grow.
  const now = useNow(live, 250);
  const read = useRuns((s) => s.timings[run.session.id]);
  const ended = run.session.state === "completed" || run.session.state === "failed" || run.session.state === "stopped";
  const timing = useMemo(() => timelineTiming(read, ended), [read, ended]);
  const cursor = useRuns((s) => s.travel?.at ?? null);
  const travelTo = useRuns((s) => s.travelTo);
  // One per run: the view (zoom, pan, following) of the run shown before is not this one's.
  return (
    <Timeline
      key={run.session.id}
      attempts={run.attempts}
      nowMs={live ? now : (run.session.finished_ms ?? now)}
      selected={run.selected}
      onSelect={onSelect}
      live={live}
      timing={timing}
      cursorMs={cursor}
      onCursor={cursor === null ? undefined : travelTo}
      toolbar={<TravelSwitch />}
    />
  );
}

function OpenRunView({ run }: { run: OpenRun }) {
  const select = useRuns((s) => s.select);
  const comparison = useRuns((s) => s.comparison);
  const loadTiming = useRuns((s) => s.loadTiming);
  // Its time against its past runs: read when it opens and again when its state changes (ended).
  useEffect(() => void loadTiming(run.session.id), [run.session.id, run.session.state, loadTiming]);

  return (
    <>
      <RunHeader run={run} />
      {comparison ? (
        <main className="run-main compared">
          <ErrorBoundary area="comparison">
            <CompareView comparison={comparison} />
          </ErrorBoundary>
        </main>
      ) : (
        <main className="run-main">
          <ErrorBoundary area="run graph">
            <RunGraph run={run} />
          </ErrorBoundary>
          <section className="run-timeline" aria-label="Timeline">
            <ErrorBoundary area="timeline">
              <TravelBar />
              <LiveTimeline run={run} onSelect={select} />
            </ErrorBoundary>
          </section>
        </main>
      )}
      {!comparison && (
        <aside className="run-details" aria-label="Details">
          <ErrorBoundary area="details">
            <AgentNotes run={run} />
            <AttemptDetails run={run} />
            <TravelData run={run} />
            <AttemptLog run={run} />
          </ErrorBoundary>
        </aside>
      )}
    </>
  );
}
