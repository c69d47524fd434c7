// A task's `condition`: an expression editor whose completion offers the names the task may read,
// with the problems of the last validation marked in it and listed under it.
import { lazy, Suspense, useCallback, type ComponentProps } from "react";
import { setTaskField, type Task } from "../blueprint";
import { useEditor } from "../store/context";
import { conditionProblems, type Suggestion } from "./names";

// CodeMirror is about as big as the rest of the app: it loads when a condition is first shown,
// not with the app.
const CodeField = lazy(() => import("./CodeField").then((m) => ({ default: m.CodeField })));

/** A condition's code editor, loaded on first use; a read-only field shows the text meanwhile. */
export function LazyCodeField(props: ComponentProps<typeof CodeField> & { value: string; labelledBy: string }) {
  return (
    <Suspense fallback={<input readOnly value={props.value} aria-labelledby={props.labelledBy} />}>
      <CodeField {...props} />
    </Suspense>
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
    <div className="field condition">
      <span className="label" id="inspector-condition-label">
        Condition
      </span>
      <LazyCodeField
        value={text}
        onChange={apply}
        names={names}
        problems={problems}
        placeholder="always runs"
        labelledBy="inspector-condition-label"
        testId="condition"
      />
      {problems.map((d, i) => (
        <p key={i} className={`field-error ${d.severity}`} data-testid="condition-problem">
          {d.message}
        </p>
      ))}
    </div>
  );
}
