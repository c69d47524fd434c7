// The runs of the store, newest first: blueprint, version, state, start, duration, and who waits
// for an answer; filtered by text and state. A run mirrored from an antikythera server says
// which, a run an agent started says whose. Choosing one opens it.
import { useMemo } from "react";
import type { RemoteLink, SessionListing, SessionState } from "../backend/generated";
import { useRuns } from "../store/context";
import { filterSessions, type TimingRead } from "../store/runs";
import { startedByOther } from "./AgentNotes";
import { shortRunId } from "./ids";
import { durationLabel } from "./timeline/model";
import { timeLeft } from "./timeLeft";

const STATES: (SessionState | "all")[] = ["all", "running", "pending", "completed", "failed", "stopped"];

export function RunList() {
  const sessions = useRuns((s) => s.sessions);
  const filter = useRuns((s) => s.filter);
  const setFilter = useRuns((s) => s.setFilter);
  const open = useRuns((s) => s.open);
  // The open run is the freshest word on its own session: the list is read again less often.
  const openSession = useRuns((s) => s.run?.session ?? null);
  const openId = openSession?.id ?? null;
  const timings = useRuns((s) => s.timings);
  const shown = useMemo(
    () => filterSessions(sessions, filter).map((s) => (s.id === openId ? { ...s, ...openSession } : s)),
    [sessions, filter, openId, openSession],
  );
  return (
    <aside className="run-list" aria-label="Runs">
      <div className="run-filter">
        <input
          type="search"
          placeholder="Filter runs"
          value={filter.text}
          onChange={(e) => setFilter({ text: e.target.value })}
          data-testid="run-filter"
        />
        <select value={filter.state} onChange={(e) => setFilter({ state: e.target.value as SessionState | "all" })} aria-label="State">
          {STATES.map((s) => (
            <option key={s} value={s}>
              {s === "all" ? "All states" : s}
            </option>
          ))}
        </select>
      </div>
      {shown.length === 0 && <p className="empty">{sessions.length === 0 ? "No runs yet: run a blueprint (F5)." : "No run matches."}</p>}
      <ul>
        {shown.map((s) => (
          <li key={s.id}>
            <button
              type="button"
              className={s.id === openId ? "run-item open" : "run-item"}
              onClick={() => void open(s.id)}
              data-testid="run-item"
              data-session-id={s.id}
            >
              <span className="run-name">{s.name || s.blueprint_id}</span>
              <StatePill state={s.state} interrupted={s.interrupted} />
              <span className="run-meta">
                <code title={s.id}>#{shortRunId(s.id)}</code> · {whenLabel(s.started_ms ?? s.created_ms)} · {runDuration(s)}
                <TimeLeft running={s.state === "running" || s.state === "pending"} read={timings[s.id]} />
              </span>
              {s.simulation && (
                <span className="run-simulated" title="A simulation: no process ran" data-testid="run-simulated">
                  simulated
                </span>
              )}
              {s.remote && (
                <span className="run-remote" title={`Runs on ${s.remote.url} as session ${s.remote.session_id}`} data-testid="run-remote">
                  ⇄ {serverLabel(s.remote)}
                </span>
              )}
              {startedByOther(s.started_by) && (
                <span className="run-agent" title={`Started by ${s.started_by!.agent}, in project ${s.started_by!.project}`} data-testid="run-agent">
                  ◆ {s.started_by!.agent}
                </span>
              )}
              {s.waiting.length > 0 && (
                <span className="run-waiting" title={s.waiting.join(", ")}>
                  waiting for an answer ({s.waiting.length})
                </span>
              )}
            </button>
          </li>
        ))}
      </ul>
    </aside>
  );
}

/** A running run's time left, as its row says it. */
function TimeLeft({ running, read }: { running: boolean; read: TimingRead | undefined }) {
  const left = running ? timeLeft(read, Date.now()) : null;
  if (!left) return null;
  return (
    <span className="time-left" title={left.title} data-testid="time-left">
      {" "}
      · {left.label}
    </span>
  );
}

export function StatePill({ state, interrupted = false }: { state: SessionState; interrupted?: boolean }) {
  return (
    <span className={`state-pill state-${interrupted ? "interrupted" : state}`} data-testid="state-pill">
      {interrupted ? "interrupted" : state}
    </span>
  );
}

/** A server as a row has room for it: its address without the scheme. */
export function serverLabel(remote: RemoteLink): string {
  return remote.url.replace(/^[a-z]+:\/\//i, "");
}

function runDuration(s: Pick<SessionListing, "started_ms" | "finished_ms">): string {
  if (s.started_ms == null) return "not started";
  return durationLabel((s.finished_ms ?? Date.now()) - s.started_ms);
}

/** When a run started, as a list shows it: the day and the minute. */
export function whenLabel(ms: number): string {
  return new Date(ms).toLocaleString([], { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" });
}
