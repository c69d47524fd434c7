// The task types this Orrery can run; choosing one adds a task of that type wired in after the
// selected task (else before the end), and dragging one onto the canvas adds it where it is
// dropped, into the dependency it falls on. The filter box narrows the list; Enter in it adds
// the first match. Each type shows what it does in a line, under its namespace.
import { useState } from "react";
import type { TaskTypeSummary } from "../backend/generated";
import { useEditor } from "../store/context";
import { matchingTypes } from "./palette-filter";

/** The drag data of a task type dragged from the palette (Canvas reads it on drop). */
export const TASK_TYPE_DRAG = "application/x-orrery-task-type";

/** The types by their namespace (`system`, `shell`, ...), in the order they come. */
function groups(types: TaskTypeSummary[]): [string, TaskTypeSummary[]][] {
  const byGroup = new Map<string, TaskTypeSummary[]>();
  for (const t of types) {
    const group = t.name.includes(".") ? t.name.slice(0, t.name.lastIndexOf(".")) : "";
    byGroup.set(group, [...(byGroup.get(group) ?? []), t]);
  }
  return [...byGroup];
}

/** What a type does in a line: its description's first sentence, without code quotes. */
function firstSentence(description: string): string {
  const cut = description.search(/\.(\s|$)/);
  return (cut < 0 ? description : description.slice(0, cut + 1)).replace(/`/g, "");
}

export function Palette() {
  const taskTypes = useEditor((s) => s.taskTypes);
  const canAdd = useEditor((s) => s.blueprint !== null && s.laidOut);
  const addTask = useEditor((s) => s.addTask);
  const [query, setQuery] = useState("");
  const shown = matchingTypes(taskTypes, query);
  return (
    <nav className="palette" aria-label="Task types">
      <h2>Task types</h2>
      <input
        type="search"
        placeholder="Filter… (Enter adds)"
        aria-label="Filter task types"
        value={query}
        data-testid="palette-filter"
        onChange={(e) => setQuery(e.target.value)}
        onKeyDown={(e) => {
          const first = shown[0];
          if (e.key === "Enter" && first && canAdd) addTask(first.name);
          if (e.key === "Escape") setQuery("");
        }}
      />
      {groups(shown).map(([group, types]) => (
        <section key={group} className="palette-group" aria-label={group}>
          <h3>{group}</h3>
          <ul>
            {types.map((t) => (
              <li key={t.name}>
                <button
                  type="button"
                  disabled={!canAdd}
                  onClick={() => addTask(t.name)}
                  draggable={canAdd}
                  onDragStart={(e) => {
                    e.dataTransfer.setData(TASK_TYPE_DRAG, t.name);
                    e.dataTransfer.effectAllowed = "copy";
                  }}
                  data-testid="palette-item"
                  data-task-type={t.name}
                  aria-label={t.name}
                  aria-description={t.description}
                >
                  <span className="type-name">{t.name.slice(group.length + 1)}</span>
                  <span className="type-summary">{firstSentence(t.description)}</span>
                </button>
              </li>
            ))}
          </ul>
        </section>
      ))}
      {shown.length === 0 && <p className="hint">No task type matches “{query}”.</p>}
    </nav>
  );
}
