// The task types this Orrery can run; choosing one adds a task of that type wired in after the
// selected task (else before the end), and dragging one onto the canvas adds it where it is
// dropped, into the dependency it falls on. The filter box narrows the list; Enter in it adds
// the first match.
import { useState } from "react";
import { useEditor } from "../store/context";
import { matchingTypes } from "./palette-filter";

/** The drag data of a task type dragged from the palette (Canvas reads it on drop). */
export const TASK_TYPE_DRAG = "application/x-orrery-task-type";

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
      <ul>
        {shown.map((t) => (
          <li key={t.name}>
            <button
              type="button"
              disabled={!canAdd}
              title={t.description}
              onClick={() => addTask(t.name)}
              draggable={canAdd}
              onDragStart={(e) => {
                e.dataTransfer.setData(TASK_TYPE_DRAG, t.name);
                e.dataTransfer.effectAllowed = "copy";
              }}
              data-testid="palette-item"
              data-task-type={t.name}
            >
              {t.name}
            </button>
          </li>
        ))}
      </ul>
      {shown.length === 0 && <p className="hint">No task type matches “{query}”.</p>}
    </nav>
  );
}
