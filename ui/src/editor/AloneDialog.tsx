// "Test this task": the selected task run alone from the editor. Each input shows the value the
// latest completed run of the blueprint gave it, to keep or to change (JSON, else text); Run
// alone starts it (what it waits for counts as done, nothing else runs) and the dialog shows how
// it ended: state, exit code, outputs, error, and its log; the run is one click from the Runs.
import { useMemo, useState } from "react";
import { useStore } from "zustand";
import { Modal } from "../Modal";
import { preview } from "../runs/CompareView";
import { shortRunId } from "../runs/ids";
import { LogView } from "../runs/log/LogView";
import { whenLabel } from "../runs/RunList";
import { useRuns, useWorkspace } from "../store/context";
import type { AloneInput, AloneState } from "../store/alone";

/** A typed value: JSON when it parses, else the text itself. */
export function typedValue(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** How the latest run's value shows in its field. */
function shown(input: AloneInput): string {
  if (input.latest === undefined) return "";
  return typeof input.latest === "string" ? input.latest : JSON.stringify(input.latest);
}

export function AloneDialog() {
  const store = useWorkspace((s) => s.alone);
  const task = useStore(store, (s) => s.task);
  if (!task) return null;
  // Keyed by the inputs' latest values: the fields start over once they arrive.
  return <AloneForm key={`${task.id} ${task.latest?.session_id ?? ""}`} />;
}

function AloneForm() {
  const store = useWorkspace((s) => s.alone);
  const state = useStore(store);
  const task = state.task!;
  const [typed, setTyped] = useState<Record<string, string>>(() => Object.fromEntries(task.inputs.map((i) => [i.name, shown(i)])));
  // An input sent as typed when it was changed, or when no run gave it a value.
  const given = () =>
    Object.fromEntries(
      task.inputs
        .filter((i) => typed[i.name] !== shown(i) || (i.latest === undefined && typed[i.name] !== ""))
        .map((i) => [i.name, typedValue(typed[i.name] ?? "")]),
    );
  return (
    <Modal
      className="launch alone-dialog"
      id="alone"
      title={`Test ${task.id} alone`}
      testId="alone-dialog"
      onClose={() => state.close()}
      onSubmit={() => void state.run(given())}
    >
      <p className="hint">What {task.id} waits for counts as done and nothing after it runs: only it runs, as a new run of the blueprint.</p>
      {task.inputs.length === 0 ? (
        <p className="hint">It has no inputs.</p>
      ) : (
        <fieldset className="alone-inputs">
          <legend>
            Inputs{" "}
            {task.latest ? (
              <span className="hint" data-testid="alone-latest" data-session-id={task.latest.session_id}>
                as run #{shortRunId(task.latest.session_id)} ({task.latest.started_ms != null ? whenLabel(task.latest.started_ms) : "not started"}) gave
                them; change any
              </span>
            ) : (
              <span className="hint">typed in (no completed run of the blueprint yet); JSON, else text</span>
            )}
          </legend>
          {task.inputs.map((input) => (
            <label key={input.name} className="field">
              <span>
                {input.name}
                {input.key !== input.name && <span className="hint"> (reads {input.key})</span>}
              </span>
              <input
                type="text"
                value={typed[input.name] ?? ""}
                onChange={(e) => setTyped({ ...typed, [input.name]: e.target.value })}
                data-testid="alone-input"
                data-input={input.name}
              />
            </label>
          ))}
        </fieldset>
      )}
      <Outcome state={state} />
      {state.error && (
        <p className="error" role="alert" data-testid="alone-error">
          {state.error}
        </p>
      )}
      <div className="choices">
        <button type="button" onClick={() => state.close()}>
          Close
        </button>
        <button type="submit" className="primary" disabled={state.running} data-testid="alone-run">
          {state.running ? "Running…" : state.outcome ? "▶ Run again" : "▶ Run alone"}
        </button>
      </div>
    </Modal>
  );
}

/** How the run went, once it ended: the attempt's state, exit code, outputs, error and log. */
function Outcome({ state }: { state: AloneState }) {
  const logSource = useRuns((s) => s.logSource);
  const open = useRuns((s) => s.open);
  const setMode = useWorkspace((s) => s.setMode);
  const { session_id, outcome } = state;
  const attempt = outcome?.attempt ?? null;
  const source = useMemo(
    () => (session_id && attempt?.log_path ? logSource(session_id, attempt.node, attempt.attempt) : null),
    [logSource, session_id, attempt],
  );
  if (!session_id) return null;
  const openRun = () => {
    void open(session_id, attempt?.node);
    setMode("runs");
    state.close();
  };
  return (
    <section className="alone-outcome" data-testid="alone-outcome" data-state={outcome?.state ?? "running"}>
      <p>
        {outcome ? (
          <>
            Run{" "}
            <button type="button" className="link" onClick={openRun} data-testid="alone-open-run">
              #{shortRunId(session_id)}
            </button>{" "}
            {outcome.state}
            {attempt ? (
              <>
                : {attempt.task} <span className={`attempt-state state-${attempt.state}`}>{attempt.state}</span>
                {attempt.exit_code != null && <span data-testid="alone-exit-code"> · exit {attempt.exit_code}</span>}
              </>
            ) : (
              <> without running it (its condition was false)</>
            )}
          </>
        ) : (
          <>Running #{shortRunId(session_id)}…</>
        )}
      </p>
      {attempt?.error && <p className="error">{attempt.error.code}: {attempt.error.message}</p>}
      {attempt?.outputs != null && Object.keys(attempt.outputs).length > 0 && (
        <dl className="alone-outputs" data-testid="alone-outputs">
          {Object.entries(attempt.outputs).map(([name, value]) => (
            <div key={name} data-output={name}>
              <dt>{name}</dt>
              <dd>
                <code>{preview(value)}</code>
              </dd>
            </div>
          ))}
        </dl>
      )}
      {source && (
        <div className="alone-log">
          <LogView source={source} grew={null} ended />
        </div>
      )}
    </section>
  );
}
