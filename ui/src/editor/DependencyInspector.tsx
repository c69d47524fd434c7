// The selected dependency, in the inspector's place: which task waits for which, its type as a
// choice with what each type means, and its removal. A dependency that other dependencies
// already imply (implied.ts) says through which chain, with an offer to remove it.
import type { DependencyType } from "../backend/generated";
import { setDependencyType } from "../blueprint";
import { useEditor } from "../store/context";
import { edgeId } from "./graph";
import { impliedDependencies } from "./implied";

/** What each type makes `to` wait for, said of `from` and `to`. */
const TYPES: { type: DependencyType; label: string; says: (from: string, to: string) => string }[] = [
  { type: "FS", label: "Finish to start", says: (from, to) => `${to} starts after ${from} finishes.` },
  { type: "SS", label: "Start to start", says: (from, to) => `${to} starts once ${from} has started.` },
  { type: "FF", label: "Finish to finish", says: (from, to) => `${to} finishes only after ${from} has finished.` },
  {
    type: "SF",
    label: "Start to finish",
    says: (from, to) =>
      `${to} finishes only after ${from} has started. Rare, and antikythera's next version drops it: ` +
      "a blueprint that uses it may not run on a newer server.",
  },
];

export function DependencyInspector() {
  const id = useEditor((s) => s.selectedDependency);
  const blueprint = useEditor((s) => s.blueprint);
  const edit = useEditor((s) => s.edit);
  const deleteTasks = useEditor((s) => s.deleteTasks);
  const focusTask = useEditor((s) => s.focusTask);
  const selectDependency = useEditor((s) => s.selectDependency);
  const found = blueprint?.tasks
    .flatMap((t) => (t.depends_on ?? []).map((d) => ({ from: d.id, to: t.id, type: d.type ?? "FS" })))
    .find((d) => edgeId(d.from, d.to) === id);
  if (!blueprint || !found) {
    return (
      <aside className="inspector" aria-label="Dependency" data-testid="dependency-inspector">
        <h2>Dependency</h2>
        <p className="hint">This dependency no longer exists.</p>
      </aside>
    );
  }
  const { from, to, type } = found;
  const chain = impliedDependencies(blueprint).get(edgeId(from, to));
  const remove = () => {
    deleteTasks([], [{ from, to }]);
    selectDependency(null);
  };
  return (
    <aside className="inspector dependency-inspector" aria-label="Dependency" data-testid="dependency-inspector" data-dependency={id}>
      <h2>Dependency</h2>
      <p className="hint">
        <button type="button" className="link" onClick={() => focusTask(to)}>
          <code>{to}</code>
        </button>{" "}
        waits for{" "}
        <button type="button" className="link" onClick={() => focusTask(from)}>
          <code>{from}</code>
        </button>
      </p>
      <fieldset className="field dependency-type">
        <legend className="label">Type</legend>
        {TYPES.map((t) => (
          <label key={t.type}>
            <input
              type="radio"
              name="dependency-type"
              value={t.type}
              checked={type === t.type}
              data-testid={`dependency-type-${t.type}`}
              onChange={() => edit((b) => setDependencyType(b, from, to, t.type))}
            />
            {t.label} <code>{t.type}</code>
          </label>
        ))}
        <p className="hint" data-testid="dependency-type-says">
          {TYPES.find((t) => t.type === type)?.says(from, to)}
        </p>
      </fieldset>
      {chain && (
        <div className="implied" data-testid="implied-note">
          <p>
            Implied: <code>{to}</code> already waits for <code>{from}</code> through {chain.join(" → ")}. This dependency adds
            nothing, and its line runs beside the others.
          </p>
          <button type="button" onClick={remove} data-testid="remove-implied">
            Remove this dependency
          </button>
        </div>
      )}
      {!chain && (
        <button type="button" onClick={remove} data-testid="remove-dependency">
          Remove dependency
        </button>
      )}
    </aside>
  );
}
