// The agent beside the run it started: who started it (project and agent), its checklists' tasks
// that were open meanwhile, and the task memory it wrote to (each task's goal, its steps by state,
// its last events). Read again every few seconds while shown: an agent writes through its own
// connection, which raises no event of the session.
import { useEffect } from "react";
import type { AgentTask, GetSessionNotesAnswer, MemoryNotes, Starter } from "../backend/generated";
import { useRuns } from "../store/context";
import type { OpenRun } from "../store/runs";

/** How often the shown notes are read again. */
export const NOTES_EVERY_MS = 3000;

/** The caller the app itself starts sessions as: nobody to show. */
const APP_CALLER: Starter = { project: "default", agent: "user" };

/** How much of an event's text shows before it is opened. */
const PREVIEW_CHARS = 160;

/** Who started a run when it was not the app (nor an Orrery older than the record): an agent, a script. */
export function startedByOther(by: Starter | null | undefined): Starter | null {
  if (!by || (by.project === APP_CALLER.project && by.agent === APP_CALLER.agent)) return null;
  return by;
}

/** Whether the run has an agent's notes to show: started by someone else than the app, or with notes. */
function hasAgentNotes(run: OpenRun): boolean {
  return startedByOther(run.session.started_by) !== null || (run.session.started_by != null && notesCount(run.notes) > 0);
}

function notesCount(notes: GetSessionNotesAnswer | null): number {
  if (!notes) return 0;
  return notes.memory.length + notes.checklists.reduce((n, c) => n + c.tasks.length, 0);
}

export function AgentNotes({ run }: { run: OpenRun }) {
  const loadNotes = useRuns((s) => s.loadNotes);
  const id = run.session.id;
  useEffect(() => {
    const timer = setInterval(() => void loadNotes(), NOTES_EVERY_MS);
    return () => clearInterval(timer);
  }, [loadNotes, id]);
  const by = run.session.started_by;
  if (!by || !hasAgentNotes(run)) return null;
  const notes = run.notes;
  const empty = notes !== null && notesCount(notes) === 0;
  return (
    <details className="agent-notes" open data-testid="agent-notes" data-agent={by.agent}>
      <summary title={`Started through the facade by ${by.agent}, in project ${by.project}`}>
        <span className="agent-badge" aria-hidden>
          ◆
        </span>{" "}
        Started by <strong>{by.agent}</strong> <span className="muted">· project {by.project}</span>
      </summary>
      {notes === null && <p className="muted">Reading the agent's notes…</p>}
      {empty && (
        <p className="muted" data-testid="agent-notes-empty">
          No task memory or checklist written by {by.agent} while this was its latest run.
        </p>
      )}
      {notes?.checklists.map((c) => (
        <section key={c.thread} className="agent-checklist" data-testid="agent-checklist" data-thread={c.thread}>
          <h4>
            Checklist <span className="muted">{c.thread === "main" ? "" : `· ${c.thread}`}</span>
          </h4>
          <ol>
            {c.tasks.map((t) => (
              <ChecklistTask key={t.task_id} task={t} />
            ))}
          </ol>
        </section>
      ))}
      {notes?.memory.map((m) => <MemoryTask key={m.view.task_name} notes={m} />)}
      {notes?.memory_truncated && <p className="muted">Other tasks of its memory were written too; the most recent are shown.</p>}
    </details>
  );
}

const TASK_MARK: Record<AgentTask["status"], string> = { pending: "○", in_progress: "◐", completed: "✓" };

function ChecklistTask({ task }: { task: AgentTask }) {
  const done = task.subtasks.filter((s) => s.status === "done").length;
  return (
    <li className={`agent-task step-${task.status === "completed" ? "done" : task.status}`} data-status={task.status}>
      <div className="step">
        <span className="step-mark" aria-label={task.status.replace("_", " ")}>
          {TASK_MARK[task.status]}
        </span>
        <span className="step-name">{task.title}</span>
        {task.subtasks.length > 0 && (
          <span className="muted agent-count">
            {done}/{task.subtasks.length}
          </span>
        )}
      </div>
      {task.subtasks.length > 0 && (
        <ul className="agent-subtasks">
          {task.subtasks.map((s, i) => (
            <li key={i} className={s.status === "done" ? "step-done" : ""}>
              <span className="step-mark" aria-label={s.status}>
                {s.status === "done" ? "✓" : "○"}
              </span>{" "}
              {s.title}
            </li>
          ))}
        </ul>
      )}
      {task.conclusion && <p className="agent-conclusion">{task.conclusion}</p>}
    </li>
  );
}

/** The states a step can be in, in the order the resume view lists them. */
const STEP_ORDER = ["in_progress", "failed", "unknown", "not_started", "completed"] as const;
const STEP_MARK: Record<(typeof STEP_ORDER)[number], string> = {
  in_progress: "◐",
  failed: "✗",
  unknown: "?",
  not_started: "○",
  completed: "✓",
};

function MemoryTask({ notes }: { notes: MemoryNotes }) {
  const { view, events, events_in_window } = notes;
  const steps = STEP_ORDER.flatMap((state) => (view.steps[state] ?? []).map((s) => ({ ...s, state })));
  const hidden = Object.values(view.step_counts).reduce((a, b) => a + b, 0) - steps.length;
  return (
    <section className="agent-memory" data-testid="agent-memory" data-task={view.task_name}>
      <h4>
        {view.task_name} <span className="muted">· memory</span>
      </h4>
      <p className="agent-goal">{view.goal}</p>
      {steps.length > 0 && (
        <ol className="steps" aria-label="Its steps">
          {steps.map((s) => (
            <li key={s.name} className={`step memory-step-${s.state}`} data-state={s.state}>
              <span className="step-mark" aria-label={s.state.replace("_", " ")}>
                {STEP_MARK[s.state]}
              </span>
              <span className="step-name">{s.name}</span>
              {s.kind !== "other" && <span className="muted">{s.kind}</span>}
            </li>
          ))}
          {hidden > 0 && <li className="muted">and {hidden} more</li>}
        </ol>
      )}
      {events_in_window > events.length && (
        <p className="muted">{events_in_window - events.length} earlier events of this run are in its memory (list_events).</p>
      )}
      <ol className="agent-events" aria-label="Its events in this run">
        {events.map((e) => {
          const who = [e.role, e.name].filter(Boolean).join(" ");
          const long = e.payload.length > PREVIEW_CHARS;
          return (
            <li key={e.seq} className={`agent-event kind-${e.kind}`} data-kind={e.kind} value={e.seq}>
              <span className="agent-event-head">
                <span className="agent-kind">{e.kind.replace("_", " ")}</span>
                {who && <span className="muted"> {who}</span>}
                <time className="muted" dateTime={e.at} title={e.at}>
                  {" "}
                  {new Date(e.at).toLocaleTimeString()}
                </time>
              </span>
              {long ? (
                <details>
                  <summary className="agent-payload">{e.payload.slice(0, PREVIEW_CHARS)}…</summary>
                  <pre className="agent-payload">{e.payload}</pre>
                  {e.truncated && <p className="muted">Cut here; the task memory keeps the whole text (list_events).</p>}
                </details>
              ) : (
                <span className="agent-payload">{e.payload}</span>
              )}
            </li>
          );
        })}
      </ol>
    </section>
  );
}
