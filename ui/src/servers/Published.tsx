// What a publication did to each blueprint sent (inner ones first): its outcome, the server's
// message when it did not go up, and the problems on its tasks; those of the blueprint shown in
// the editor are a click away (the dialog showing them is closed first).
import type { PublishBlueprintsAnswer, PublishedBlueprint } from "../backend/generated";
import { useWorkspaceStore } from "../store/context";
import { currentEditor } from "../store/workspace";
import "./servers.css";

const OUTCOMES: Record<PublishedBlueprint["outcome"], string> = {
  uploaded: "uploaded",
  invalid: "not valid",
  refused: "refused",
  failed: "failed",
  not_sent: "not sent",
};

export function Published({ result, close, testid }: { result: PublishBlueprintsAnswer; close: () => void; testid: string }) {
  const workspace = useWorkspaceStore();
  const shownId = currentEditor(workspace.getState()).getState().blueprint?.id;
  const goTo = (task: string) => {
    close();
    currentEditor(workspace.getState()).getState().focusTask(task);
  };
  return (
    <ol className="published" data-testid={testid}>
      {result.blueprints.map((b) => (
        <li key={b.file} data-testid="published-blueprint" data-outcome={b.outcome} data-blueprint-id={b.blueprint_id}>
          <span className={`outcome outcome-${b.outcome}`}>{OUTCOMES[b.outcome]}</span> <b>{b.blueprint_id || b.file}</b>
          {!b.given && <span className="muted"> (called by it)</span>}
          {b.outcome !== "uploaded" && b.message && <div className="muted">{b.message}</div>}
          {b.problems.length > 0 && (
            <ul>
              {b.problems.map((p, i) => (
                <li key={i}>
                  {p.task_id && b.blueprint_id === shownId ? (
                    <button type="button" className="link" onClick={() => goTo(p.task_id!)} data-testid="problem-task">
                      {p.task_id}
                    </button>
                  ) : (
                    p.task_id && <code>{p.task_id}</code>
                  )}{" "}
                  {p.message}
                </li>
              ))}
            </ul>
          )}
        </li>
      ))}
    </ol>
  );
}
