// The session's data at time travel's moment: each key's value then, by blueprint instance, who
// wrote it (a task's attempt, a click away, or a person's edit), and what was written at that very
// moment marked.
import { useMemo } from "react";
import { useRuns } from "../../store/context";
import type { OpenRun } from "../../store/runs";
import { preview } from "../CompareView";

export function TravelData({ run }: { run: OpenRun }) {
  const travel = useRuns((s) => s.travel);
  const select = useRuns((s) => s.select);
  const data = useMemo(() => (travel ? travel.replay.dataAt(travel.at) : null), [travel]);
  const writers = useMemo(() => new Map(run.attempts.map((a) => [a.run_id, a])), [run.attempts]);
  if (!travel || !data) return null;
  const instances = [...data.entries()].sort(([a], [b]) => a.localeCompare(b));
  return (
    <section className="travel-data" aria-label="Session data at this moment" data-testid="travel-data">
      <h4>Session data at this moment</h4>
      {instances.length === 0 && <p className="muted">Nothing written yet.</p>}
      {instances.map(([instance, keys]) => (
        <dl key={instance} data-instance={instance}>
          {[...keys.entries()]
            .sort(([a], [b]) => a.localeCompare(b))
            .map(([key, write]) => {
              const writer = write.run_id ? writers.get(write.run_id) : undefined;
              const now = write.at === travel.at;
              return (
                <div key={key} className={now ? "written-now" : undefined} data-key={key} data-testid="travel-value">
                  <dt>
                    {instance}.{key}
                  </dt>
                  <dd>
                    <code>{preview(write.value)}</code>{" "}
                    {writer ? (
                      <button type="button" className="link" onClick={() => select({ node: writer.node, attempt: writer.attempt })}>
                        {writer.task} #{writer.attempt}
                      </button>
                    ) : write.edit_id != null ? (
                      <span className="muted">set by a person</span>
                    ) : null}
                  </dd>
                </div>
              );
            })}
        </dl>
      ))}
    </section>
  );
}
