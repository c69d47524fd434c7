// Before a retry, a restart or a run from a task of a run whose blueprint file changed since it
// started: what changed, in one line, and the choice between the file as saved now and the
// versions the run ran. A retry with the saved file is a new run that keeps what finished and did
// not change; a retry as it ran goes on in the same run. A saved file that cannot run says why.
import { Modal } from "../Modal";
import { useRuns } from "../store/context";
import { shortRunId } from "./ids";

export function RerunDialog() {
  const rerun = useRuns((s) => s.rerun);
  const act = useRuns((s) => s.act);
  const runFrom = useRuns((s) => s.runFrom);
  const cancel = useRuns((s) => s.cancelRerun);
  if (!rerun) return null;
  const { action, changes } = rerun;
  const retry = action === "resume";
  const verb = retry ? "Retry" : rerun.action === "from" ? `Run from ${rerun.node}` : "Restart";
  const runnable = changes.problem === null;
  const go = (with_: "ran" | "saved") => void (rerun.action === "from" ? runFrom(rerun.node, with_) : act(rerun.action, with_));
  const saved =
    rerun.action === "from"
      ? `With the saved blueprint, a new run keeps what finished before ${rerun.node} and did not change, and runs ${rerun.node} and what follows it.`
      : retry
        ? "With the saved blueprint, a new run keeps the tasks that finished and did not change, and runs the rest."
        : "With the saved blueprint, a new run runs every task of the file as it is now.";
  return (
    <Modal
      className="rerun"
      id="rerun"
      title={`The blueprint changed since run #${shortRunId(changes.session_id)} started`}
      testId="rerun-dialog"
      onClose={cancel}
      onSubmit={() => runnable && go("saved")}
    >
      <p data-testid="rerun-changes">
        <strong>Changed:</strong> {changes.summary}
      </p>
      <p className="muted">
        <code>{changes.file}</code>
      </p>
      {runnable ? (
        <p className="muted">
          {saved} As it ran, the {retry ? "run goes on" : "new run uses"} the versions this run started with.
        </p>
      ) : (
        <p className="error" data-testid="rerun-problem">
          The saved blueprint cannot run: {changes.problem}
        </p>
      )}
      <div className="choices">
        <button type="submit" className="primary" disabled={!runnable} data-testid="rerun-saved">
          {verb} with the saved blueprint
        </button>
        <button type="button" onClick={() => go("ran")} data-testid="rerun-as-ran">
          {verb} as it ran
        </button>
        <button type="button" onClick={cancel} data-testid="rerun-cancel">
          Cancel
        </button>
      </div>
    </Modal>
  );
}
