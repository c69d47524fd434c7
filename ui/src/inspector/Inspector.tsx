// The selected task, to read and change: its id, type, description, condition, inputs, outputs
// and params. Every change goes through the store, so it is undoable and validated.
import { useEffect, useMemo, useState } from "react";
import { TASK_TYPE } from "../backend/generated";
import { ioOf, setTaskField, type Task } from "../blueprint";
import { useEditor, usePrepareTest } from "../store/context";
import { CompositeField } from "./CompositeField";
import { ConditionField } from "./ConditionField";
import { IoTable } from "./IoTable";
import { suggestions, taskProblems } from "./names";
import { ParamsForm } from "./ParamsForm";
import { paramFields } from "./schema";

export function Inspector() {
  const task = useEditor((s) => s.blueprint?.tasks.find((t) => t.id === s.selected) ?? null);
  return (
    <aside className="inspector" aria-label="Inspector" data-testid="inspector">
      <h2>Inspector</h2>
      {/* Keyed by task: what is half typed in one task's fields must not show in another's. */}
      {task ? <TaskInspector key={task.id} task={task} /> : <p className="hint">Select a task to see and change it.</p>}
    </aside>
  );
}

function TaskInspector({ task }: { task: Task }) {
  const edit = useEditor((s) => s.edit);
  const report = useEditor((s) => s.report);
  const names = useEditor((s) => (s.names?.task_id === task.id ? s.names : null));
  const definition = useEditor((s) => s.definitions[task.type] ?? null);
  const offered = suggestions(names);
  const problems = taskProblems(report, task.id);
  const description = typeof task.description === "string" ? task.description : "";
  const composite = task.type === TASK_TYPE.COMPOSITE;
  const declared = useMemo(() => paramFields(definition?.params_schema), [definition]);
  // A composite's `blueprint` param has a field of its own, whether its definition arrived or not.
  const fields = composite ? declared.filter((f) => f.name !== "blueprint") : declared;
  // The first row of each param with a field is that field's; any other row stays in the table.
  const params = ioOf(task, "params");
  const owned = [...fields.map((f) => f.name), ...(composite ? ["blueprint"] : [])];
  const inForm = new Set(owned.map((name) => params.findIndex((r) => r.name === name)).filter((i) => i >= 0));

  return (
    <div className="task-inspector" data-task-id={task.id}>
      <IdField id={task.id} />
      <div className="field">
        <span className="label">Type</span>
        <code className="type" data-testid="inspector-type">
          {task.type}
        </code>
        {definition?.description && <p className="hint">{definition.description}</p>}
      </div>
      <BreakpointField id={task.id} />
      <TestButton id={task.id} />
      {problems.length > 0 && (
        <ul className="task-problems">
          {problems.map((d, i) => (
            <li key={i} className={d.severity} data-testid="inspector-problem" title={d.path}>
              <span className="severity">{d.severity}</span> {d.message}
            </li>
          ))}
        </ul>
      )}
      <div className="field">
        <label htmlFor="inspector-description">Description</label>
        <textarea
          id="inspector-description"
          rows={2}
          value={description}
          onChange={(e) => edit((b) => setTaskField(b, task.id, "description", e.target.value), `${task.id}.description`)}
        />
      </div>
      <ConditionField task={task} names={offered} />
      <datalist id="inspector-produced-names">
        {offered
          .filter((s) => s.origin !== "own")
          .map((s) => (
            <option key={s.name} value={s.name} />
          ))}
      </datalist>
      <IoTable task={task} field="inputs" names={offered} />
      <IoTable task={task} field="outputs" names={offered} />
      {composite && <CompositeField task={task} />}
      {fields.length > 0 && <ParamsForm task={task} fields={fields} />}
      <IoTable
        task={task}
        field="params"
        names={offered}
        except={inForm}
        {...(owned.length > 0 ? { title: "Other params" } : {})}
      />
    </div>
  );
}

/** "Test this task": runs it alone, its inputs from the latest run or typed in. */
function TestButton({ id }: { id: string }) {
  const prepareTest = usePrepareTest();
  if (!prepareTest) return null;
  return (
    <div className="field">
      <button
        type="button"
        onClick={() => prepareTest(id)}
        title="Run this task alone, with its inputs from the latest run or typed in: nothing else runs"
        data-testid="test-task"
      >
        ▶ Test this task…
      </button>
    </div>
  );
}

/** Where a run started from the editor holds at this task: kept beside the file, not in it. */
function BreakpointField({ id }: { id: string }) {
  const at = useEditor((s) => s.breakpoints[id] ?? "");
  const setBreakpoint = useEditor((s) => s.setBreakpoint);
  return (
    <div className="field">
      <label htmlFor="inspector-breakpoint">Breakpoint</label>
      <select
        id="inspector-breakpoint"
        data-testid="inspector-breakpoint"
        value={at}
        onChange={(e) => setBreakpoint(id, e.target.value === "before" || e.target.value === "after" ? e.target.value : null)}
        title="A run started from the editor holds here until you continue, step or skip"
      >
        <option value="">None</option>
        <option value="before">Hold before it starts</option>
        <option value="after">Hold after it ends</option>
      </select>
    </div>
  );
}

/** The id, renamed on Enter or when the field is left; a refused id stays typed with the reason. */
function IdField({ id }: { id: string }) {
  const renameTask = useEditor((s) => s.renameTask);
  const [draft, setDraft] = useState(id);
  const [refused, setRefused] = useState<string | null>(null);
  useEffect(() => {
    setDraft(id);
    setRefused(null);
  }, [id]);
  const commit = () => {
    if (draft === id) return setRefused(null);
    setRefused(renameTask(id, draft));
  };
  return (
    <div className="field">
      <label htmlFor="inspector-id">Id</label>
      <input
        id="inspector-id"
        value={draft}
        spellCheck={false}
        className={refused ? "invalid" : ""}
        data-testid="inspector-id"
        onChange={(e) => setDraft(e.target.value)}
        onBlur={commit}
        onKeyDown={(e) => {
          if (e.key === "Enter") commit();
          if (e.key === "Escape") {
            setDraft(id);
            setRefused(null);
          }
        }}
      />
      {refused && (
        <p className="field-error" data-testid="id-error">
          {refused}
        </p>
      )}
    </div>
  );
}
