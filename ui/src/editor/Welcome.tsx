// What an empty tab offers: a new blueprint, one to open, and the recent ones.
import { fileName, folderOf } from "../paths";
import { useWorkspace } from "../store/context";

export function Welcome() {
  const recent = useWorkspace((s) => s.recent);
  const newBlueprint = useWorkspace((s) => s.newBlueprint);
  const openFile = useWorkspace((s) => s.openFile);
  const openRecent = useWorkspace((s) => s.openRecent);
  return (
    <div className="welcome" data-testid="welcome">
      <h1>Orrery</h1>
      <p className="hint">Design blueprints: tasks, their dependencies, scopes and inner blueprints.</p>
      <div className="welcome-actions">
        <button type="button" className="primary" onClick={newBlueprint} data-testid="welcome-new">
          New blueprint
        </button>
        <button type="button" onClick={() => void openFile()}>
          Open…
        </button>
      </div>
      {recent.length > 0 && (
        <>
          <h2>Recent</h2>
          <ul className="recent">
            {recent.map((path) => (
              <li key={path}>
                <button type="button" className="link" onClick={() => void openRecent(path)} title={path} data-testid="recent-file">
                  <span className="name">{fileName(path)}</span>
                  <span className="folder">{folderOf(path)}</span>
                </button>
              </li>
            ))}
          </ul>
        </>
      )}
    </div>
  );
}
