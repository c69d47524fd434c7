// The task types this Orrery can run; choosing one adds a task of that type.
import { useEditor } from "../store/context";

export function Palette() {
  const taskTypes = useEditor((s) => s.taskTypes);
  const canAdd = useEditor((s) => s.blueprint !== null && s.laidOut);
  const addTask = useEditor((s) => s.addTask);
  return (
    <nav className="palette" aria-label="Task types">
      <h2>Task types</h2>
      <ul>
        {taskTypes.map((t) => (
          <li key={t.name}>
            <button type="button" disabled={!canAdd} title={t.description} onClick={() => addTask(t.name)} data-testid="palette-item" data-task-type={t.name}>
              {t.name}
            </button>
          </li>
        ))}
      </ul>
    </nav>
  );
}
