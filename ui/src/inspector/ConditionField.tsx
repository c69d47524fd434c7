// A task's `condition`: typed freely, its problems from the last validation shown under it, and
// the names it may read offered as the word at the caret is typed.
import { useRef, useState } from "react";
import { setTaskField, type Task } from "../blueprint";
import { useEditor } from "../store/context";
import { complete, completing, conditionProblems, type Suggestion } from "./names";

const SHOWN = 8;

export function ConditionField({ task, names }: { task: Task; names: Suggestion[] }) {
  const edit = useEditor((s) => s.edit);
  const report = useEditor((s) => s.report);
  const input = useRef<HTMLInputElement>(null);
  // The caret while the field has the focus; null when it does not (nothing is offered then).
  const [caret, setCaret] = useState<number | null>(null);
  const text = typeof task.condition === "string" ? task.condition : "";
  const problems = conditionProblems(report, task.id);
  const offered = caret === null ? [] : completing(names, text, caret).slice(0, SHOWN);

  const apply = (value: string) => edit((b) => setTaskField(b, task.id, "condition", value), `${task.id}.condition`);
  const choose = (name: string) => {
    const done = complete(text, caret ?? text.length, name);
    apply(done.text);
    setCaret(done.caret);
    requestAnimationFrame(() => {
      input.current?.focus();
      input.current?.setSelectionRange(done.caret, done.caret);
    });
  };

  return (
    <div className="field condition">
      <label htmlFor="inspector-condition">Condition</label>
      <input
        id="inspector-condition"
        ref={input}
        value={text}
        spellCheck={false}
        autoComplete="off"
        placeholder="always runs"
        className={problems.length > 0 ? "invalid" : ""}
        data-testid="condition"
        onChange={(e) => {
          apply(e.target.value);
          setCaret(e.target.selectionStart);
        }}
        onSelect={(e) => document.activeElement === e.currentTarget && setCaret(e.currentTarget.selectionStart)}
        onFocus={(e) => setCaret(e.currentTarget.selectionStart)}
        onBlur={() => setCaret(null)}
        onKeyDown={(e) => {
          const first = offered[0];
          if (e.key === "Tab" && first && text !== "") {
            e.preventDefault();
            choose(first.name);
          }
        }}
      />
      {offered.length > 0 && (
        <ul className="suggestions" data-testid="condition-suggestions">
          {offered.map((s) => (
            <li key={s.name}>
              <button
                type="button"
                className={`chip ${s.origin}`}
                title={s.producers.length > 0 ? `written by ${s.producers.join(", ")}` : "the task's own param or input"}
                onMouseDown={(e) => e.preventDefault()}
                onClick={() => choose(s.name)}
              >
                {s.name}
                <span className="origin">{s.origin}</span>
              </button>
            </li>
          ))}
        </ul>
      )}
      {problems.map((d, i) => (
        <p key={i} className={`field-error ${d.severity}`} data-testid="condition-problem">
          {d.message}
        </p>
      ))}
    </div>
  );
}
