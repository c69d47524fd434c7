// The open run's header: what it runs and how it stands (live duration, who waits for an
// answer, which task holds at a breakpoint and the ways to let it go), and what can be done to
// it: pause and stop while a runner drives it; resume (retry from the point of failure) and
// restart when none does. A run mirrored from an antikythera server names it and says whether
// it answers: the actions go to it.
import { useEffect, useState } from "react";
import { useRuns } from "../store/context";
import { failedAttempt, latestAttempt, type OpenRun } from "../store/runs";
import { shortRunId } from "./ids";
import { StatePill, whenLabel } from "./RunList";
import { durationLabel } from "./timeline/model";
import type { Simulation } from "../backend/generated";
import { timeLeft } from "./timeLeft";

/** A task held at a breakpoint: where, and continue, step or skip it. */
function Held({ run, node, at }: { run: OpenRun; node: string; at: string }) {
  const select = useRuns((s) => s.select);
  const release = useRuns((s) => s.release);
  const before = at === "before";
  const failed = at === "failure";
  const label = failed ? `${node} failed: held` : `Held ${before ? "before" : "after"} ${node}`;
  const titles = failed
    ? { continue: "Let the run fail with its error", step: "Run it again (and hold after it if it succeeds)", skip: "Skip it: what follows runs" }
    : before
      ? { continue: "Run it, and go on", step: "Run just this task and hold again after it", skip: "Skip it: it does not run" }
      : { continue: "Let what follows it start", step: "Hold again before each task that follows it", skip: "" };
  return (
    <div className="run-held" data-testid="held" data-node={node} data-at={at}>
      <button type="button" className="run-waiting" onClick={() => select({ node, attempt: latestAttempt(run.attempts, node)?.attempt ?? 0 })}>
        {label}
      </button>
      <button type="button" className="primary" onClick={() => void release(node, "continue")} data-testid="held-continue" title={titles.continue}>
        Continue
      </button>
      <button type="button" onClick={() => void release(node, "step")} data-testid="held-step" title={titles.step}>
        Step
      </button>
      {(before || failed) && (
        <button type="button" onClick={() => void release(node, "skip")} data-testid="held-skip" title={titles.skip}>
          Skip
        </button>
      )}
    </div>
  );
}

/** What a simulated run took its outputs from, in words. */
function simulationTitle(simulation: Simulation): string {
  const set = Object.keys(simulation.outputs ?? {});
  const parts = [
    set.length > 0 ? `outputs set for ${set.join(", ")}` : null,
    simulation.outputs_from ? `outputs of run #${shortRunId(simulation.outputs_from)}${simulation.durations ? ", taking as long" : ""}` : null,
    "else the declared defaults",
    (simulation.fail ?? []).length > 0 ? `set to fail: ${simulation.fail!.map((f) => f.task).join(", ")}` : null,
  ];
  return `Each task succeeded at once with ${parts.filter(Boolean).join("; ")}`;
}

export function RunHeader({ run }: { run: OpenRun }) {
  const act = useRuns((s) => s.act);
  const select = useRuns((s) => s.select);
  const { session, driven } = run;
  const active = session.state === "running" || session.state === "pending";
  const now = useNow(active);
  const left = timeLeft(useRuns((s) => s.timings[session.id]), now);
  const { waiting } = run;
  return (
    <header className="run-header" data-testid="run-header" data-session-id={session.id} data-state={session.state}>
      <div className="run-title">
        <h2>{session.name || session.blueprint_id}</h2>
        <StatePill state={session.state} interrupted={active && !driven} />
        {session.simulation && (
          <span className="run-simulated" title={simulationTitle(session.simulation)} data-testid="run-simulated">
            Simulated: no process ran
          </span>
        )}
        <span className="run-meta">
          {session.started_ms != null && (
            <>
              started {whenLabel(session.started_ms)} ·{" "}
              {session.finished_ms == null && !active ? "duration unknown" : durationLabel((session.finished_ms ?? now) - session.started_ms)} ·{" "}
              {active && left && (
                <>
                  <span className="time-left" title={left.title} data-testid="time-left">
                    {left.label}
                  </span>{" "}
                  ·{" "}
                </>
              )}
            </>
          )}
          version <code title={session.blueprint_hash}>{session.blueprint_hash.slice(0, 12)}</code> · run{" "}
          <code title={session.id} data-testid="run-id">
            #{shortRunId(session.id)}
          </code>
        </span>
        {session.remote && (
          <span className="run-remote" data-testid="run-remote">
            Runs on <code>{session.remote.url}</code> · session <code>{session.remote.session_id}</code>
            {/* Followed and answering: said quietly. Not followed (over on the server): nothing to say. */}
            {run.link?.following && run.link.reachable && (
              <span data-testid="remote-link" data-reachable="true">
                {" "}
                · live from the server
              </span>
            )}
          </span>
        )}
        <RunLineage run={run} />
      </div>
      {waiting.length > 0 && (
        <button type="button" className="run-waiting" onClick={() => select({ node: waiting[0]!, attempt: latestAttempt(run.attempts, waiting[0]!)?.attempt ?? 0 })} data-testid="waiting">
          {waiting.length === 1 ? `${waiting[0]} waits for an answer` : `${waiting.length} tasks wait for an answer`}
        </button>
      )}
      {driven && active && run.held.map((h) => <Held key={`${h.node} ${h.at}`} run={run} node={h.node} at={h.at} />)}
      <div className="run-actions">
        {driven && active && (
          <>
            <button type="button" onClick={() => void act("pause")} title="Nothing new starts; what runs finishes" data-testid="pause">
              Pause
            </button>
            <button type="button" className="danger" onClick={() => void act("stop")} title="Stop the run: running tasks are stopped" data-testid="stop">
              Stop
            </button>
          </>
        )}
        {!driven && session.state !== "completed" && (
          <button
            type="button"
            className="primary"
            onClick={() => void act("resume")}
            title="Go on from where it ended: what succeeded is not run again"
            data-testid="resume"
          >
            {session.state === "failed" ? "Retry from failure" : "Resume"}
          </button>
        )}
        <ComparePicker run={run} />
        {!driven && (
          <button type="button" onClick={() => void act("restart")} title="Run the same blueprint versions and parameters again, as a new run" data-testid="restart">
            Restart
          </button>
        )}
      </div>
      {run.link?.following && !run.link.reachable && (
        <p className="run-unreachable" role="status" data-testid="remote-link" data-reachable="false">
          Server unreachable{run.link.message ? `: ${run.link.message}` : ""} — Orrery keeps what it has and picks the run up again when the
          server answers
        </p>
      )}
      {session.last_error && session.state === "failed" && <RunError run={run} message={session.last_error.message} />}
    </header>
  );
}

/** Why a run failed, naming the task that failed: one click shows its attempt and log. */
function RunError({ run, message }: { run: OpenRun; message: string }) {
  const select = useRuns((s) => s.select);
  const failed = failedAttempt(run.attempts);
  const task = failed ? (run.nodes[failed.node]?.task ?? failed.node) : null;
  return (
    <p className="run-error" data-testid="run-error">
      {failed && (
        <button type="button" className="link" onClick={() => select(failed)} data-testid="run-error-task" data-node={failed.node}>
          {task} failed
        </button>
      )}
      {failed && ": "}
      {message}
    </p>
  );
}

/** The runs this one restarts and is restarted as: the lineage between runs, each one click away. */
function RunLineage({ run }: { run: OpenRun }) {
  const open = useRuns((s) => s.open);
  const origin = run.session.restarted_from;
  if (!origin && run.restarts.length === 0) return null;
  const link = (id: string, label: string) => (
    <button type="button" className="link" onClick={() => void open(id)} title={id} data-testid="run-lineage-link" data-session-id={id}>
      {label} <code>#{shortRunId(id)}</code>
    </button>
  );
  return (
    <nav className="run-lineage" aria-label="Related runs" data-testid="run-lineage">
      {origin && <span>Restarts {link(origin, "run")}</span>}
      {run.restarts.length > 0 && (
        <span>
          Restarted as{" "}
          {run.restarts.map((r, i) => (
            <span key={r.id}>
              {i > 0 && ", "}
              {link(r.id, r.state)}
            </span>
          ))}
        </span>
      )}
    </nav>
  );
}

/** The time now, ticking every second while `live`. */
export function useNow(live: boolean, everyMs = 1000): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    setNow(Date.now());
    if (!live) return;
    const timer = setInterval(() => setNow(Date.now()), everyMs);
    return () => clearInterval(timer);
  }, [live, everyMs]);
  return now;
}

/** The other runs of the same blueprint, to compare this one with. */
function ComparePicker({ run }: { run: OpenRun }) {
  const sessions = useRuns((s) => s.sessions);
  const compareWith = useRuns((s) => s.compareWith);
  const others = sessions.filter((s) => s.blueprint_id === run.session.blueprint_id && s.id !== run.session.id);
  if (others.length === 0) return null;
  return (
    <details className="dropdown compare-picker" data-testid="compare-picker">
      <summary title="Compare with another run of this blueprint">Compare…</summary>
      <ul>
        {others.map((s) => (
          <li key={s.id}>
            <button
              type="button"
              onClick={(e) => {
                e.currentTarget.closest("details")?.removeAttribute("open");
                void compareWith(s.id);
              }}
              data-testid="compare-with"
              data-session-id={s.id}
            >
              {s.state} · {whenLabel(s.started_ms ?? s.created_ms)} <code>#{shortRunId(s.id)}</code>
            </button>
          </li>
        ))}
      </ul>
    </details>
  );
}
