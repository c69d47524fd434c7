// The inner blueprint of a `system.composite` task: static (run once) or dynamic (once per
// element, with a sequencer), its id chosen among the blueprints beside the open file, which is
// where the composite finds it when the blueprint runs.
import { useEffect, useId, useState } from "react";
import { ioOf, setParam, type Task } from "../blueprint";
import { fileName, folderOf } from "../paths";
import { useDrillInto, useEditor } from "../store/context";
import { SEQUENCERS } from "../backend/generated";
import { findInner, readTarget, targetValue, type CompositeTarget } from "./composite";
import { JsonField } from "./JsonField";
import "./params.css";

export function CompositeField({ task }: { task: Task }) {
  const id = useId();
  const edit = useEditor((s) => s.edit);
  const path = useEditor((s) => s.path);
  const listing = useEditor((s) => s.blueprintFiles);
  const loadBlueprintFiles = useEditor((s) => s.loadBlueprintFiles);
  const drillInto = useDrillInto();
  const folder = path === null ? null : folderOf(path);
  // Asked again each time a composite is shown: blueprints come and go beside the file.
  useEffect(() => {
    if (folder !== null) void loadBlueprintFiles();
  }, [folder, loadBlueprintFiles]);
  // The open file itself is no inner blueprint: a composite calling it would recurse.
  const files = listing !== null && listing.folder === folder ? listing.files.filter((f) => f.file !== path) : null;

  const value = ioOf(task, "params").find((r) => r.name === "blueprint")?.value;
  const read = readTarget(value);
  // The form's choices while no id is given (no param is written then).
  const [draft, setDraft] = useState<CompositeTarget>({ mode: "static", id: "" });
  const target = read === null || read === "unreadable" ? draft : read;
  const apply = (next: CompositeTarget) => {
    setDraft({ ...next, id: "" });
    edit((b) => setParam(b, task.id, "blueprint", targetValue(next)), `${task.id}.params.blueprint`);
  };
  const sequencer = target.mode === "dynamic" ? target.sequencer : SEQUENCERS[0];
  const found = files ? findInner(files, target.id) : undefined;

  return (
    <section className="composite-field" data-testid="composite-field">
      <header>
        <h3>Inner blueprint</h3>
      </header>
      {read === "unreadable" && (
        <div className="field">
          <p className="field-error">This blueprint param has neither form (static or dynamic): fix it as JSON, or choose below.</p>
          <JsonField
            label="blueprint param"
            value={value}
            onApply={(v) => edit((b) => setParam(b, task.id, "blueprint", v), `${task.id}.params.blueprint`)}
          />
        </div>
      )}
      <div className="composite-mode" role="radiogroup" aria-label="How the inner blueprint runs">
        <label>
          <input
            type="radio"
            name={`${id}-mode`}
            checked={target.mode === "static"}
            data-testid="composite-static"
            onChange={() => apply({ mode: "static", id: target.id })}
          />
          Static: once
        </label>
        <label>
          <input
            type="radio"
            name={`${id}-mode`}
            checked={target.mode === "dynamic"}
            data-testid="composite-dynamic"
            onChange={() => apply({ mode: "dynamic", id: target.id, sequencer })}
          />
          Dynamic: once per element
        </label>
      </div>
      <div className="field">
        <label htmlFor={`${id}-blueprint`}>Blueprint id</label>
        <input
          id={`${id}-blueprint`}
          list={`${id}-blueprints`}
          value={target.id}
          spellCheck={false}
          placeholder={files && files.length > 0 ? "choose a blueprint beside this one" : "the inner blueprint's id"}
          data-testid="composite-blueprint-id"
          onChange={(e) => apply({ ...target, id: e.target.value })}
        />
        <datalist id={`${id}-blueprints`}>
          {(files ?? []).map((f) => (
            <option key={f.file} value={f.blueprint_id}>
              {f.name || f.blueprint_id} ({fileName(f.file)})
            </option>
          ))}
        </datalist>
        {found && (
          <p className="hint" data-testid="composite-found">
            {found.name || found.blueprint_id}: {fileName(found.file)}, {found.tasks} task{found.tasks === 1 ? "" : "s"}
            {drillInto && (
              <>
                {" "}
                <button type="button" className="link" onClick={() => void drillInto(task.id)} data-testid="open-inner" title="Open it here, with a way back (or double-click the task)">
                  Open
                </button>
              </>
            )}
          </p>
        )}
        {!found && target.id !== "" && files !== null && (
          <p className="field-error warning" data-testid="composite-missing">
            No blueprint with this id beside {path ? fileName(path) : "this file"}: the composite will not find it
            when it runs from here.
          </p>
        )}
        {path === null && <p className="hint">Save the blueprint to choose among the blueprints beside it.</p>}
      </div>
      {target.mode === "dynamic" && (
        <div className="field">
          <label htmlFor={`${id}-sequencer`}>Sequencer</label>
          <select
            id={`${id}-sequencer`}
            value={sequencer}
            data-testid="composite-sequencer"
            onChange={(e) => apply({ ...target, sequencer: e.target.value })}
          >
            {!(SEQUENCERS as readonly string[]).includes(sequencer) && <option value={sequencer}>{sequencer || "(none)"}</option>}
            {SEQUENCERS.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </div>
      )}
    </section>
  );
}
