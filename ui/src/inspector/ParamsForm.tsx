// The params a task type declares, as a form built from its params schema: one field per param
// with the control its type calls for. A value is written as the param row `{name, value}` and
// the row removed when the field is cleared; a value that does not fit the schema is still
// written (the file says what the user typed) and the reason the facade's validation gives
// (`param-schema`) is shown under the field.
import { lazy, Suspense, useEffect, useId, useState } from "react";
import { ioOf, setParam, type Io, type Task } from "../blueprint";
import { useEditor } from "../store/context";
import { JsonField } from "./JsonField";
import { paramProblems } from "./names";
import { boundsText, defaultText, parseNumber, type Control, type ParamField } from "./schema";
import "./params.css";

const CodeField = lazy(() => import("./CodeField").then((m) => ({ default: m.CodeField })));

export function ParamsForm({ task, fields }: { task: Task; fields: ParamField[] }) {
  const edit = useEditor((s) => s.edit);
  const report = useEditor((s) => s.report);
  const rows = ioOf(task, "params");
  return (
    <section className="params-form" data-testid="params-form">
      <header>
        <h3>Params</h3>
      </header>
      {fields.map((field) => {
        const index = rows.findIndex((r) => r.name === field.name);
        const row = rows[index];
        // A row without a value has nothing to judge; a removed one leaves no stale reason behind.
        const problem = row?.value === undefined ? undefined : paramProblems(report, task.id, index)[0];
        return (
          <ParamRow
            key={field.name}
            field={field}
            row={row}
            error={problem?.message ?? null}
            onSet={(value) => edit((b) => setParam(b, task.id, field.name, value), `${task.id}.params.${field.name}`)}
          />
        );
      })}
    </section>
  );
}

/** Whether the control of a field can show `value`; otherwise it is shown as JSON, to be fixed. */
function fits(control: Control, value: unknown, field: ParamField): boolean {
  switch (control) {
    case "string":
    case "script":
      return typeof value === "string";
    case "number":
    case "integer":
      return typeof value === "number";
    case "boolean":
      return typeof value === "boolean";
    case "enum":
      return (field.schema.enum ?? []).some((e) => JSON.stringify(e) === JSON.stringify(value));
    case "json":
      return true;
  }
}

type SetValue = (value: unknown) => void;

type RowProps = { field: ParamField; row: Io | undefined; error: string | null; onSet: SetValue };

function ParamRow({ field, row, error, onSet }: RowProps) {
  const id = useId();
  const value = row?.value;
  const given = value !== undefined;
  const control = given && !fits(field.control, value, field) ? "json" : field.control;
  const description = field.schema.description;
  return (
    <div className="field param" data-testid="param-field" data-param={field.name}>
      <div className="param-head">
        <label htmlFor={id} id={`${id}-label`}>
          {field.name}
          {field.required && (
            <span className="required" title="required">
              {" "}*
            </span>
          )}
        </label>
        {row !== undefined && (
          <button type="button" className="clear" title={`Remove ${field.name}`} onClick={() => onSet(undefined)}>
            ×
          </button>
        )}
      </div>
      <ParamControl id={id} control={control} field={field} value={value} onSet={onSet} invalid={error !== null} />
      {description && <p className="hint">{description}</p>}
      {field.alternatives.length > 0 && (
        <p className="hint">Needed unless {field.alternatives.join(" or ")} is given.</p>
      )}
      {error && (
        <p className="field-error" data-testid="param-error">
          {error}
        </p>
      )}
    </div>
  );
}

type ControlProps = { id: string; control: Control; field: ParamField; value: unknown; onSet: SetValue; invalid: boolean };

function ParamControl({ id, control, field, value, onSet, invalid }: ControlProps) {
  const fallback = defaultText(field.schema);
  const className = invalid ? "invalid" : "";
  switch (control) {
    case "string":
      return (
        <input
          id={id}
          value={typeof value === "string" ? value : ""}
          placeholder={fallback}
          spellCheck={false}
          className={className}
          onChange={(e) => onSet(e.target.value === "" ? undefined : e.target.value)}
        />
      );
    case "script": {
      // Loaded on first use; a read-only text area shows the script meanwhile.
      const text = typeof value === "string" ? value : "";
      const labelId = `${id}-label`;
      return (
        <span className="param-script" id={id}>
          <Suspense fallback={<textarea readOnly value={text} rows={Math.min(8, text.split("\n").length)} />}>
            <CodeField
              value={text}
              onChange={(next) => onSet(next === "" ? undefined : next)}
              language="shell"
              placeholder={fallback}
              labelledBy={labelId}
              testId="param-script"
              problems={[]}
            />
          </Suspense>
        </span>
      );
    }
    case "number":
    case "integer":
      return <NumberInput id={id} field={field} value={value as number | undefined} onSet={onSet} invalid={invalid} />;
    case "boolean":
      return (
        <span className="param-boolean">
          <input id={id} type="checkbox" checked={value === true} onChange={(e) => onSet(e.target.checked)} />
          {value === undefined && <span className="hint">{fallback === "" ? "not set" : `default: ${fallback}`}</span>}
        </span>
      );
    case "enum": {
      const options = field.schema.enum ?? [];
      const index = options.findIndex((o) => JSON.stringify(o) === JSON.stringify(value));
      return (
        <select
          id={id}
          value={index < 0 ? "" : String(index)}
          className={className}
          onChange={(e) => onSet(e.target.value === "" ? undefined : options[Number(e.target.value)])}
        >
          <option value="">{fallback === "" ? "(not set)" : `(default: ${fallback})`}</option>
          {options.map((o, i) => (
            <option key={i} value={String(i)}>
              {typeof o === "string" ? o : JSON.stringify(o)}
            </option>
          ))}
        </select>
      );
    }
    case "json":
      return (
        <span className={invalid ? "param-json invalid" : "param-json"}>
          <JsonField label={field.name} value={value} onApply={onSet} />
        </span>
      );
  }
}

/**
 * A number typed as text: applied while it reads as one, otherwise kept as typed with the
 * reason. Its bounds are the schema's.
 */
function NumberInput({ id, field, value, onSet, invalid }: Omit<ControlProps, "control"> & { value: number | undefined }) {
  const integer = field.control === "integer";
  const [draft, setDraft] = useState(value === undefined ? "" : String(value));
  const parsed = parseNumber(draft, integer);
  // An undo (or any change from elsewhere) replaces the draft, unless it already says the same.
  useEffect(() => {
    setDraft((d) => {
      const p = parseNumber(d, integer);
      return "value" in p && p.value === value ? d : value === undefined ? "" : String(value);
    });
  }, [value, integer]);
  const { minimum, maximum, exclusiveMinimum, exclusiveMaximum } = field.schema;
  const bounds = boundsText(field.schema);
  const fallback = defaultText(field.schema);
  return (
    <>
      <input
        id={id}
        type="number"
        step={integer ? 1 : "any"}
        min={minimum ?? exclusiveMinimum}
        max={maximum ?? exclusiveMaximum}
        value={draft}
        placeholder={[fallback, bounds && `(${bounds})`].filter(Boolean).join(" ")}
        className={invalid || "error" in parsed ? "invalid" : ""}
        onChange={(e) => {
          setDraft(e.target.value);
          // A half-typed number ("-", "1e") reads as empty: it must not clear the param.
          if (e.target.validity?.badInput) return;
          const next = parseNumber(e.target.value, integer);
          if ("value" in next) onSet(next.value);
        }}
      />
      {"error" in parsed && (
        <p className="field-error" data-testid="param-error">
          {parsed.error}
        </p>
      )}
    </>
  );
}
