// The selected scope, in the inspector's place: its name, its policy with the policy's values, its
// members and its removal. Every change is an undoable edit of the `scope_start` of the task that
// opens it (for a skip scope's condition, of that task's own `condition`), written as docs/format.md §1
// has it; a number that cannot be written stays typed with the reason under it.
import { useState } from "react";
import type { Diagnostic } from "../backend/generated";
import type { Blueprint } from "../blueprint";
import { ExpressionField } from "../inspector/ConditionField";
import { conditionProblems, suggestions } from "../inspector/names";
import {
  parseCount,
  policyOf,
  scopeStartOf,
  setBackoff,
  setMaxIterations,
  setRetries,
  setScopeName,
  setScopePolicy,
  setSkipCondition,
  setWhileCondition,
  type ScopePolicyName,
} from "../scopeEdit";
import { useEditor } from "../store/context";

const POLICIES: { policy: ScopePolicyName; label: string; hint: string }[] = [
  { policy: "skip", label: "Skip", hint: "Runs once; when the start task's condition is false, the whole scope is skipped." },
  {
    policy: "retry",
    label: "Repeat",
    hint:
      "Runs the scope 1 + extra runs times in all, whether or not a run went well (the format's retry_policy: a repeat count, " +
      "not a retry on failure). To retry after a failure, use Retry from failure on the run: it goes on from the failed task.",
  },
  {
    policy: "while",
    label: "While",
    hint: "When its last task succeeds, runs the scope again while the condition holds on what its tasks wrote.",
  },
];

export function ScopeInspector() {
  const start = useEditor((s) => s.selectedScope);
  const task = useEditor((s) => s.blueprint?.tasks.find((t) => t.id === s.selectedScope));
  // Read from the blueprint, not the facade's answer, which lags an edit by a moment.
  const end = useEditor((s) => s.blueprint?.tasks.find((t) => t.scope_end === s.selectedScope)?.id ?? null);
  const scope = useEditor((s) => s.scopes.find((x) => x.start === s.selectedScope) ?? null);
  const report = useEditor((s) => s.report);
  const edit = useEditor((s) => s.edit);
  const removeScope = useEditor((s) => s.removeScope);
  const focusTask = useEditor((s) => s.focusTask);
  const names = useEditor((s) => (s.names !== null && s.names.task_id === s.selectedScope ? s.names : null));
  const json = scopeStartOf(task);

  if (start === null || !task || !json) {
    return (
      <aside className="inspector" aria-label="Scope" data-testid="scope-inspector">
        <h2>Scope</h2>
        <p className="hint">This scope no longer exists.</p>
      </aside>
    );
  }
  const policy = policyOf(json);
  const change = (f: (b: Blueprint) => Blueprint, field?: string) =>
    edit(f, field === undefined ? undefined : `${start}.scope_start.${field}`);
  const problems = scopeProblems(report?.diagnostics ?? [], start);
  const whileProblems = problems.filter((d) => d.path.endsWith("while_policy.condition"));
  const skipCondition = typeof task.condition === "string" ? task.condition : "";
  const skipProblems = conditionProblems(report, start);
  // The skip condition is the opening task's own and may read its params and inputs too; the
  // while condition reads only what tasks write.
  const offered = suggestions(names);
  const produced = offered.filter((n) => n.origin !== "own");
  const setWhile = (value: string) => change((b) => setWhileCondition(b, start, value), "condition");
  const setSkip = (value: string) => edit((b) => setSkipCondition(b, start, value), `${start}.condition`);

  return (
    <aside className="inspector scope-inspector" aria-label="Scope" data-testid="scope-inspector" data-scope-start={start}>
      <h2>Scope</h2>
      <p className="hint">
        Opened by <code>{start}</code>
        {end !== null ? (
          <>
            , closed by <code>{end}</code>
          </>
        ) : (
          ", closed by no task yet"
        )}
        .
      </p>
      {problems.length > 0 && (
        <ul className="task-problems">
          {problems.map((d, i) => (
            <li key={i} className={d.severity} data-testid="scope-problem" title={d.path}>
              <span className="severity">{d.severity}</span> {d.message}
            </li>
          ))}
        </ul>
      )}
      <div className="field">
        <label htmlFor="scope-name">Name</label>
        <input
          id="scope-name"
          value={typeof json.name === "string" ? json.name : ""}
          placeholder={start}
          spellCheck={false}
          data-testid="scope-name"
          onChange={(e) => change((b) => setScopeName(b, start, e.target.value), "name")}
        />
      </div>
      <fieldset className="field scope-policy">
        <legend className="label">Policy</legend>
        {POLICIES.map((p) => (
          <label key={p.policy} title={p.hint}>
            <input
              type="radio"
              name="scope-policy"
              value={p.policy}
              checked={policy === p.policy}
              data-testid={`scope-policy-${p.policy}`}
              onChange={() => change((b) => setScopePolicy(b, start, p.policy))}
            />
            {p.label}
          </label>
        ))}
        <p className="hint">{POLICIES.find((p) => p.policy === policy)?.hint}</p>
      </fieldset>
      {/* The number fields are keyed by the scope: what was typed for one is not shown for another. */}
      {policy === "retry" && (
        <>
          <CountField
            key={`${start}.retries`}
            id="scope-retries"
            label="Extra runs (retries)"
            value={json.retry_policy?.retries}
            min={0}
            optional={false}
            write={(n) => change((b) => setRetries(b, start, n ?? 0), "retries")}
          />
          <CountField
            key={`${start}.backoff`}
            id="scope-backoff"
            label="Wait between runs (ms)"
            placeholder="none"
            value={json.retry_policy?.backoff?.constant_ms}
            min={0}
            optional
            write={(n) => change((b) => setBackoff(b, start, n), "backoff")}
            hint="Orrery waits this long between runs; an antikythera server does not."
          />
        </>
      )}
      {policy === "while" && (
        <>
          <ExpressionField
            id="scope-while-condition"
            label="Runs again while"
            value={typeof json.while_policy?.condition === "string" ? json.while_policy.condition : ""}
            onChange={setWhile}
            names={produced}
            problems={whileProblems}
            placeholder="a condition on what the scope's tasks write"
            testId="scope-while-condition"
            problemTestId="scope-field-problem"
          />
          <CountField
            key={`${start}.max-iterations`}
            id="scope-max-iterations"
            label="At most (runs in all)"
            placeholder="no bound"
            value={json.while_policy?.max_iterations}
            min={1}
            optional
            write={(n) => change((b) => setMaxIterations(b, start, n), "max_iterations")}
          />
        </>
      )}
      {policy === "skip" && (
        <ExpressionField
          id="scope-skip-condition"
          label="Runs only if"
          value={skipCondition}
          onChange={setSkip}
          names={offered}
          problems={skipProblems}
          placeholder="always runs"
          testId="scope-skip-condition"
          hint={<>The condition of {start}, the task that opens the scope.</>}
          problemTestId="scope-field-problem"
        />
      )}
      <div className="field">
        <span className="label">Tasks</span>
        <ul className="scope-members">
          {(scope?.members ?? [start]).map((id) => (
            <li key={id}>
              <button type="button" className="link" data-testid="scope-member" onClick={() => focusTask(id)}>
                {id}
              </button>
            </li>
          ))}
        </ul>
      </div>
      <div className="field">
        <button type="button" data-testid="scope-remove" onClick={() => removeScope(start)}>
          Remove scope
        </button>
        <p className="hint">Its tasks stay; only the scope goes.</p>
      </div>
    </aside>
  );
}

/** The problems of a scope: those of its start task's `scope_start`. */
function scopeProblems(diagnostics: Diagnostic[], start: string): Diagnostic[] {
  return diagnostics.filter((d) => d.task_id === start && d.path.includes(".scope_start"));
}

/**
 * A whole number of a policy. What is typed is written once it is a valid number; until then it
 * stays typed, with the reason under it, and the blueprint keeps the last valid one.
 */
function CountField(props: {
  id: string;
  label: string;
  placeholder?: string;
  value: unknown;
  min: number;
  optional: boolean;
  write: (value: number | undefined) => void;
  hint?: string;
}) {
  const { id, label, placeholder, value, min, optional, write, hint } = props;
  const stored = value === undefined || value === null ? "" : typeof value === "number" ? String(value) : JSON.stringify(value);
  // The text typed, for the value it was typed over: an undo that changes the value shows it.
  const [draft, setDraft] = useState<{ text: string; over: string } | null>(null);
  const text = draft !== null && draft.over === stored ? draft.text : stored;
  const parsed = parseCount(text, min, optional);
  const error = "error" in parsed ? parsed.error : null;
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      <input
        id={id}
        inputMode="numeric"
        value={text}
        placeholder={placeholder}
        className={error ? "invalid" : ""}
        data-testid={id}
        onChange={(e) => {
          const typed = e.target.value;
          const next = parseCount(typed, min, optional);
          if ("error" in next) {
            setDraft({ text: typed, over: stored });
            return;
          }
          setDraft({ text: typed, over: next.value === undefined ? "" : String(next.value) });
          write(next.value);
        }}
      />
      {hint && <p className="hint">{hint}</p>}
      {error && (
        <p className="field-error" data-testid={`${id}-error`}>
          {error}
        </p>
      )}
    </div>
  );
}
