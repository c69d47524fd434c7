// Two runs of a blueprint side by side: per task its state, attempts, latest duration and
// outputs in each, the rows that differ marked (and alone by default); then the session data
// that differs.
import { useState } from "react";
import type { CompareSessionsAnswer, TaskRun } from "../backend/generated";
import { useRuns } from "../store/context";
import { StatePill, whenLabel } from "./RunList";
import { shortRunId } from "./ids";
import { durationLabel } from "./timeline/model";

export function CompareView({ comparison }: { comparison: CompareSessionsAnswer }) {
  const close = useRuns((s) => s.closeComparison);
  const [onlyDifferences, setOnlyDifferences] = useState(true);
  const { a, b, tasks, data } = comparison;
  const rows = onlyDifferences ? tasks.filter((t) => t.differs) : tasks;
  const differing = tasks.filter((t) => t.differs).length;
  return (
    <section className="compare" aria-label="Compare runs" data-testid="compare">
      <header className="compare-header">
        <h3>
          Comparing two runs of {a.name || a.blueprint_id}
          {!comparison.same_blueprint && <span className="compare-warning"> — different blueprint versions</span>}
        </h3>
        <label>
          <input type="checkbox" checked={onlyDifferences} onChange={(e) => setOnlyDifferences(e.target.checked)} data-testid="only-differences" />
          Only what differs ({differing} of {tasks.length} tasks)
        </label>
        <button type="button" onClick={close} data-testid="close-compare">
          Close
        </button>
      </header>
      <table className="compare-table">
        <thead>
          <tr>
            <th>Task</th>
            {[a, b].map((s) => (
              <th key={s.id} colSpan={3}>
                <StatePill state={s.state} /> {s.started_ms != null ? whenLabel(s.started_ms) : "not started"}{" "}
                <code title={s.id}>#{shortRunId(s.id)}</code>
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.length === 0 && (
            <tr>
              <td colSpan={7} className="muted">
                Every task ran alike.
              </td>
            </tr>
          )}
          {rows.map((t) => (
            <tr key={t.node} className={t.differs ? "differs" : undefined} data-testid="compare-row" data-node={t.node}>
              <td className="mono">{t.node}</td>
              <Side run={t.a} other={t.b} />
              <Side run={t.b} other={t.a} />
            </tr>
          ))}
        </tbody>
      </table>
      {data.length > 0 && (
        <>
          <h4>Session data that differs</h4>
          <table className="compare-table" data-testid="compare-data">
            <thead>
              <tr>
                <th>Key</th>
                <th>Older run</th>
                <th>Newer run</th>
              </tr>
            </thead>
            <tbody>
              {data.map((d) => (
                <tr key={`${d.instance}.${d.key}`} className="differs">
                  <td className="mono">
                    {d.instance}.{d.key}
                  </td>
                  <td className="mono">{preview(d.a)}</td>
                  <td className="mono">{preview(d.b)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
    </section>
  );
}

function Side({ run, other }: { run?: TaskRun | null; other?: TaskRun | null }) {
  if (!run) return <td colSpan={3} className="muted">not in this run</td>;
  const changed = (f: (r: TaskRun) => unknown) => other != null && JSON.stringify(f(run)) !== JSON.stringify(f(other));
  return (
    <>
      <td className={changed((r) => r.state) ? "changed" : undefined}>{run.state}</td>
      <td className={changed((r) => r.attempts) ? "changed" : undefined}>
        ×{run.attempts} {run.duration_ms != null && <span className="muted">{durationLabel(run.duration_ms)}</span>}
      </td>
      <td className={`mono ${changed((r) => r.outputs) ? "changed" : ""}`}>{preview(run.outputs)}</td>
    </>
  );
}

/** A value in one short line. */
export function preview(value: unknown): string {
  if (value === undefined || value === null) return "—";
  const text = typeof value === "string" ? value : JSON.stringify(value);
  return text.length > 80 ? `${text.slice(0, 79)}…` : text;
}
