// How long a run has left and what took its time, as the run views say it: the time left of a
// running run counts down from the facade's estimate (`session_timing`), read again every few
// seconds while it runs; a run that ended shows its critical path and the tasks slower than usual.
import { useEffect, useMemo } from "react";
import type { TaskTiming } from "../backend/generated";
import { useRuns } from "../store/context";
import type { TimingRead } from "../store/runs";
import { durationLabel } from "./timeline/model";

/** How often a running run's time left is read again. */
const TIMING_EVERY_MS = 5000;

/** A running run's time left, at `now`: what to show and what it comes from; null with no estimate. */
export function timeLeft(read: TimingRead | undefined, now: number): { label: string; title: string } | null {
  const timing = read?.timing;
  if (!read || !timing || timing.remaining_ms == null) return null;
  const left = timing.remaining_ms - Math.max(0, now - read.at);
  const past = `${timing.past_runs} past run${timing.past_runs === 1 ? "" : "s"}`;
  const unknown =
    timing.unknown > 0 ? `; ${timing.unknown} task${timing.unknown === 1 ? "" : "s"} still to run never ran before and count as instant` : "";
  const path = timing.critical_path.length > 0 ? ` (${timing.critical_path.join(" → ")})` : "";
  const title = `Estimated from the usual time of each task in ${past}, along the critical path${path}${unknown}`;
  // At the estimate's end: a task that runs past its usual time says so, else the end is near.
  const overdue = timing.overdue ?? [];
  if (left < 1000 && overdue.length > 0) return { label: "longer than usual", title: `${overdue.join(", ")} already took longer than usual. ${title}` };
  if (left < 1000) return { label: "about to end", title };
  const rounded = left < 60_000 ? Math.round(left / 1000) * 1000 : Math.round(left / 5000) * 5000;
  return { label: `${timing.unknown > 0 ? "at least " : ""}about ${durationLabel(rounded).replace(/\.0+ s$/, " s")} left`, title };
}

/** What the timeline marks of a run's time: its critical path (once it ended) and its slow tasks, by node key. */
export type TimelineTiming = { critical: Set<string>; slow: Map<string, TaskTiming> };

/** The marks of `read` for the timeline; the critical path only once the run ended (`ended`). */
export function timelineTiming(read: TimingRead | undefined, ended: boolean): TimelineTiming | null {
  if (!read) return null;
  const { critical_path, tasks } = read.timing;
  const slow = new Map(tasks.filter((t) => t.slow).map((t) => [t.node, t]));
  const critical = new Set(ended ? critical_path : []);
  return critical.size === 0 && slow.size === 0 ? null : { critical, slow };
}

/** A task's usual time, and how far off this run's is when slow: "1.00 s, the median of 5 past runs; took 3.20 s here, 3.2x". */
export function againstUsual(t: TaskTiming): string | null {
  if (t.usual_ms == null) return null;
  const usual = `${durationLabel(t.usual_ms)}, the median of ${t.runs} past run${t.runs === 1 ? "" : "s"}`;
  if (!t.slow || t.took_ms == null) return usual;
  return `${usual}; took ${durationLabel(t.took_ms)} here, ${(t.took_ms / Math.max(t.usual_ms, 1)).toFixed(1)}x`;
}

/**
 * Reads again, every TIMING_EVERY_MS, the time of each local run that goes on: the open one and
 * those of the list.
 */
export function useTimingPoll(): void {
  const sessions = useRuns((s) => s.sessions);
  const open = useRuns((s) => s.run?.session);
  const loadTiming = useRuns((s) => s.loadTiming);
  const live = (state: string) => state === "running" || state === "pending";
  const ids = useMemo(() => {
    const running = sessions.filter((s) => live(s.state) && !s.remote).map((s) => s.id);
    if (open && live(open.state) && !open.remote && !running.includes(open.id)) running.push(open.id);
    return running.sort().join(" ");
  }, [sessions, open]);
  useEffect(() => {
    if (ids === "") return;
    const each = () => ids.split(" ").forEach((id) => void loadTiming(id));
    each();
    const timer = setInterval(each, TIMING_EVERY_MS);
    return () => clearInterval(timer);
  }, [ids, loadTiming]);
}
