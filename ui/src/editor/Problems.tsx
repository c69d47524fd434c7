// What the facade found in the blueprint: a few words in the status bar, and the list below the
// canvas while there is anything to list. A problem about a task brings that task into view, and
// one about the scope it opens selects that scope too, whose inspector edits what is wrong.
import { plural } from "../plural";
import { useEditor } from "../store/context";

/** What the checks found, in a few words: the status bar's, where it stays when all is well. */
export function ProblemsSummary() {
  const report = useEditor((s) => s.report);
  const hasBlueprint = useEditor((s) => s.blueprint !== null);
  if (!hasBlueprint) return null;
  const diagnostics = report?.diagnostics ?? [];
  const errors = diagnostics.filter((d) => d.severity === "error").length;
  const warnings = diagnostics.filter((d) => d.severity === "warning").length;
  const summary =
    report === null
      ? "Checking…"
      : diagnostics.length === 0
        ? "No problems"
        : [errors > 0 && plural(errors, "error"), warnings > 0 && plural(warnings, "warning")].filter(Boolean).join(", ") ||
          plural(diagnostics.length, "note");
  return (
    <span className={`problems-summary ${errors > 0 ? "error" : ""}`} data-testid="problems-summary">
      {summary}
    </span>
  );
}

/** Whether the problems panel has anything to list (it takes no room otherwise). */
export function useHasProblems(): boolean {
  return useEditor((s) => s.blueprint !== null && (s.report?.diagnostics.length ?? 0) > 0);
}

/** The list of what the checks found; shown only when they found something. */
export function Problems() {
  const diagnostics = useEditor((s) => s.report?.diagnostics ?? NONE);
  const focusTask = useEditor((s) => s.focusTask);
  const selectScope = useEditor((s) => s.selectScope);
  if (!useHasProblems()) return null;

  return (
    <section className="problems" aria-label="Problems">
      <header>
        <h2>Problems</h2>
      </header>
      <ul>
        {diagnostics.map((d, i) => (
          <li key={i} data-testid="problem" data-task-id={d.task_id ?? undefined}>
            <button
              type="button"
              className={`problem ${d.severity}`}
              disabled={!d.task_id}
              onClick={() => {
                if (!d.task_id) return;
                focusTask(d.task_id);
                if (d.path.includes(".scope_start")) selectScope(d.task_id);
              }}
              title={d.path}
            >
              <span className="severity">{d.severity}</span>
              {d.task_id && <span className="task">{d.task_id}</span>}
              <span className="message">{d.message}</span>
              <span className="code">{d.code}</span>
            </button>
          </li>
        ))}
      </ul>
    </section>
  );
}

const NONE: never[] = [];
