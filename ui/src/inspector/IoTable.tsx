// A task's inputs, outputs or params as a table of rows to edit, add and remove.
import { addIo, ioOf, removeIo, updateIo, withIoKey, type Io, type IoField, type Task } from "../blueprint";
import { useEditor } from "../store/context";
import { JsonField } from "./JsonField";
import type { Suggestion } from "./names";

type Props = {
  task: Task;
  field: IoField;
  /** Names to pick from: `get_from` of inputs, `set_to` of outputs. */
  names: Suggestion[];
  /** The rows another part of the inspector shows (params with a form), by index. */
  except?: ReadonlySet<number>;
  /** Instead of the field's own title. */
  title?: string;
};

const TITLES: Record<IoField, string> = { inputs: "Inputs", outputs: "Outputs", params: "Params" };
/** The columns after the name, by field. */
const COLUMNS: Record<IoField, string[]> = {
  inputs: ["Gets from"],
  outputs: ["Sets", "Value (JSON)"],
  params: ["Value (JSON)"],
};

const NONE: ReadonlySet<number> = new Set();

export function IoTable({ task, field, names, except = NONE, title }: Props) {
  const edit = useEditor((s) => s.edit);
  const rows = ioOf(task, field);
  const change = (index: number, key: string, f: (io: Io) => Io) =>
    edit((b) => updateIo(b, task.id, field, index, f), `${task.id}.${field}.${index}.${key}`);
  // The index of each row stays its index in the task, so that edits reach the right row.
  const shown = rows.flatMap((io, i) => (except.has(i) ? [] : [{ io, i }]));

  return (
    <section className="io-table" data-testid={`io-${field}`}>
      <header>
        <h3>{title ?? TITLES[field]}</h3>
        <button type="button" onClick={() => edit((b) => addIo(b, task.id, field))} data-testid={`add-${field}`}>
          + Add
        </button>
      </header>
      {shown.length > 0 && (
        <table>
          <thead>
            <tr>
              <th>Name</th>
              {COLUMNS[field].map((c) => (
                <th key={c}>{c}</th>
              ))}
              <th className="remove" />
            </tr>
          </thead>
          <tbody>
            {shown.map(({ io, i }) => (
              <tr key={i} data-testid={`${field}-row`}>
                <td>
                  <input
                    aria-label={`${field} ${i + 1} name`}
                    value={io.name}
                    spellCheck={false}
                    onChange={(e) => change(i, "name", (r) => ({ ...r, name: e.target.value }))}
                  />
                </td>
                {field === "inputs" && (
                  <td>
                    <NamePicker
                      label={`input ${io.name} gets from`}
                      value={typeof io.get_from === "string" ? io.get_from : ""}
                      names={names}
                      placeholder="its own name"
                      onChange={(v) => change(i, "get_from", (r) => withIoKey(r, "get_from", v))}
                    />
                  </td>
                )}
                {field === "outputs" && (
                  <td>
                    <input
                      aria-label={`output ${io.name} sets`}
                      placeholder="its own name"
                      list="inspector-produced-names"
                      value={typeof io.set_to === "string" ? io.set_to : ""}
                      spellCheck={false}
                      onChange={(e) => change(i, "set_to", (r) => withIoKey(r, "set_to", e.target.value))}
                    />
                  </td>
                )}
                {field !== "inputs" && (
                  <td>
                    <JsonField
                      label={`${field} ${io.name} value`}
                      value={io.value}
                      onApply={(v) => change(i, "value", (r) => withIoKey(r, "value", v))}
                    />
                  </td>
                )}
                <td className="remove">
                  <button type="button" title="Remove" onClick={() => edit((b) => removeIo(b, task.id, field, i))}>
                    ×
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

/** A choice among the produced names, upstream ones first; a name not among them stays shown. */
function NamePicker(props: {
  label: string;
  value: string;
  names: Suggestion[];
  placeholder: string;
  onChange: (value: string) => void;
}) {
  const produced = props.names.filter((n) => n.origin !== "own");
  const known = produced.some((n) => n.name === props.value);
  return (
    <select aria-label={props.label} value={props.value} onChange={(e) => props.onChange(e.target.value)}>
      <option value="">({props.placeholder})</option>
      {!known && props.value !== "" && <option value={props.value}>{props.value} (not produced)</option>}
      <optgroup label="Upstream">
        {produced
          .filter((n) => n.origin === "upstream")
          .map((n) => (
            <option key={n.name} value={n.name}>
              {n.name} ← {n.producers.join(", ")}
            </option>
          ))}
      </optgroup>
      <optgroup label="Elsewhere">
        {produced
          .filter((n) => n.origin === "produced")
          .map((n) => (
            <option key={n.name} value={n.name}>
              {n.name} ← {n.producers.join(", ")}
            </option>
          ))}
      </optgroup>
    </select>
  );
}
