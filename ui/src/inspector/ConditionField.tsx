// A task's `condition`: an expression editor whose completion offers the names the task may read,
// with the problems of the last validation marked in it and listed under it.
import { lazy, Suspense, useCallback, type ComponentProps, type ReactNode } from "react";
import { setTaskField, type Task } from "../blueprint";
import { useEditor } from "../store/context";
import { conditionProblems, type Suggestion } from "./names";

// CodeMirror is about as big as the rest of the app: it loads when a condition is first shown,
// not with the app.
const CodeField = lazy(() => import("./CodeField").then((m) => ({ default: m.CodeField })));

/**
 * A condition, labelled, in the code editor (loaded on first use; a read-only field shows the
 * text meanwhile), with the problems of the last validation under it.
 */
export function ExpressionField({
  id,
  label,
  hint,
  problemTestId,
  ...editor
}: ComponentProps<typeof CodeField> & { id: string; label: string; hint?: ReactNode; problemTestId: string }) {
  const labelId = `${id}-label`;
  return (
    <div className="field condition">
      <span className="label" id={labelId}>
        {label}
      </span>
      <Suspense fallback={<input readOnly value={editor.value} aria-labelledby={labelId} />}>
        <CodeField {...editor} labelledBy={labelId} />
      </Suspense>
      {hint && <p className="hint">{hint}</p>}
      {(editor.problems ?? []).map((d, i) => (
        <p key={i} className={`field-error ${d.severity}`} data-testid={problemTestId}>
          {d.message}
        </p>
      ))}
    </div>
  );
}

export function ConditionField({ task, names }: { task: Task; names: Suggestion[] }) {
  const edit = useEditor((s) => s.edit);
  const report = useEditor((s) => s.report);
  const text = typeof task.condition === "string" ? task.condition : "";
  const problems = conditionProblems(report, task.id);
  const apply = useCallback(
    (value: string) => edit((b) => setTaskField(b, task.id, "condition", value), `${task.id}.condition`),
    [edit, task.id],
  );

  return (
    <ExpressionField
      id="inspector-condition"
      label="Condition"
      value={text}
      onChange={apply}
      names={names}
      problems={problems}
      placeholder="always runs"
      testId="condition"
      problemTestId="condition-problem"
    />
  );
}
