// Before a run starts, when there is something to ask (Run with options…, Simulate…, a dynamic
// composite, a saved server, or the choice to always ask): where it runs (this machine, or a saved
// antikythera server), its session parameters (a JSON object) and, for each dynamic composite, the
// elements it fans out over (one per line), which become `params.elements`; whether a task that
// fails holds the run; and whether it is a simulation (no process starts), with the outputs set
// per task, the past run whose outputs it replays, and the tasks that fail. Enter in the
// parameters starts (Shift+Enter is a new line), Ctrl+Enter anywhere.
import { useEffect, useRef, useState } from "react";
import type { SimulatedFailure, Simulation } from "../backend/generated";
import { Published } from "../servers/Published";
import { useRuns, useWorkspace } from "../store/context";
import { runOnServer, type Launching } from "../store/workspace";
import { Modal } from "../Modal";
import { shortRunId } from "./ids";
import { whenLabel } from "./RunList";

/** The value of the "Run on" choice for this machine (a saved server is chosen by its name). */
const HERE = "";

export function LaunchDialog() {
  const launching = useWorkspace((s) => s.launching);
  if (!launching) return null;
  return <LaunchForm key={launching.file} launching={launching} />;
}

/** The session parameters typed, or why they cannot be used. */
export function launchParams(
  text: string,
  elements: Record<string, string>,
): { params: Record<string, unknown> } | { error: string } {
  let params: unknown;
  try {
    params = text.trim() === "" ? {} : JSON.parse(text);
  } catch (e) {
    return { error: `Parameters: ${e instanceof Error ? e.message : String(e)}` };
  }
  if (typeof params !== "object" || params === null || Array.isArray(params)) {
    return { error: "Parameters must be a JSON object, like {\"name\": \"value\"}" };
  }
  const given = Object.entries(elements)
    .map(([task, lines]) => [task, lines.split("\n").map((l) => l.trim()).filter(Boolean)] as const)
    .filter(([, list]) => list.length > 0);
  if (given.length === 0) return { params: params as Record<string, unknown> };
  const already = (params as { elements?: unknown }).elements;
  const merged = { ...(typeof already === "object" && already !== null ? already : {}), ...Object.fromEntries(given) };
  return { params: { ...(params as Record<string, unknown>), elements: merged } };
}

/** What a simulation typed in the dialog makes, or why it cannot be used. */
export function launchSimulation(typed: { outputs: string; fail: string; from: string; durations: boolean }): { simulation: Simulation } | { error: string } {
  let outputs: unknown;
  try {
    outputs = typed.outputs.trim() === "" ? {} : JSON.parse(typed.outputs);
  } catch (e) {
    return { error: `Outputs: ${e instanceof Error ? e.message : String(e)}` };
  }
  const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
  if (!isObject(outputs)) return { error: "Outputs must be a JSON object of tasks, like {\"fetch\": {\"count\": 3}}" };
  const notObject = Object.entries(outputs).find(([, v]) => !isObject(v));
  if (notObject) return { error: `Outputs of ${notObject[0]} must be a JSON object of output names, like {"count": 3}` };
  const fail: SimulatedFailure[] = [];
  for (const line of typed.fail.split("\n").map((l) => l.trim()).filter(Boolean)) {
    const match = /^(.+?)(?::(\d+))?$/.exec(line)!;
    const attempts = match[2] === undefined ? undefined : Number(match[2]);
    if (attempts === 0) return { error: `${line}: the number of attempts that fail is at least 1` };
    fail.push(attempts === undefined ? { task: match[1]! } : { task: match[1]!, attempts });
  }
  const simulation: Simulation = {
    ...(Object.keys(outputs).length > 0 ? { outputs: outputs as Simulation["outputs"] } : {}),
    ...(fail.length > 0 ? { fail } : {}),
    ...(typed.from ? { outputs_from: typed.from, ...(typed.durations ? { durations: true } : {}) } : {}),
  };
  return { simulation };
}

/** The simulation's choices: the past run it replays, the outputs set, the tasks that fail. */
function SimulationFields({
  blueprint,
  typed,
  change,
}: {
  blueprint: string;
  typed: { outputs: string; fail: string; from: string; durations: boolean };
  change: (typed: { outputs: string; fail: string; from: string; durations: boolean }) => void;
}) {
  const sessions = useRuns((s) => s.sessions);
  const refresh = useRuns((s) => s.refresh);
  useEffect(() => void refresh(), [refresh]);
  const past = sessions.filter((s) => s.blueprint_id === blueprint && s.state === "completed");
  return (
    <fieldset className="simulation" data-testid="launch-simulation">
      <legend>Simulation: no process starts</legend>
      <p className="muted">
        Each task succeeds at once with its outputs set below, else its outputs in the past run chosen, else its declared defaults. Conditions, loops,
        composites and fan-out run for real.
      </p>
      <label>
        Outputs of a past run
        <select value={typed.from} onChange={(e) => change({ ...typed, from: e.target.value })} data-testid="launch-outputs-from">
          <option value="">None</option>
          {past.map((s) => (
            <option key={s.id} value={s.id}>
              #{shortRunId(s.id)} · {whenLabel(s.started_ms ?? s.created_ms)}
              {s.simulation ? " (simulated)" : ""}
            </option>
          ))}
        </select>
      </label>
      <label className="inline">
        <input
          type="checkbox"
          checked={typed.durations}
          disabled={!typed.from}
          onChange={(e) => change({ ...typed, durations: e.target.checked })}
          data-testid="launch-durations"
        />
        Each task takes as long as it took then
      </label>
      <label>
        Outputs set (JSON: task, then output names)
        <textarea
          value={typed.outputs}
          onChange={(e) => change({ ...typed, outputs: e.target.value })}
          rows={3}
          spellCheck={false}
          placeholder={'{"fetch": {"count": 3}}'}
          data-testid="launch-outputs"
        />
      </label>
      <label>
        Tasks that fail (one per line; task:N fails its first N attempts)
        <textarea value={typed.fail} onChange={(e) => change({ ...typed, fail: e.target.value })} rows={2} spellCheck={false} data-testid="launch-fail" />
      </label>
    </fieldset>
  );
}

function LaunchForm({ launching }: { launching: Launching }) {
  const launch = useWorkspace((s) => s.launch);
  const cancel = useWorkspace((s) => s.cancelLaunch);
  const runOn = useWorkspace((s) => s.runOn);
  const choose = useWorkspace((s) => s.chooseRunOn);
  const alwaysAsk = useWorkspace((s) => s.alwaysAsk);
  const setAlwaysAsk = useWorkspace((s) => s.setAlwaysAsk);
  const server = runOnServer(runOn);
  const [text, setText] = useState("{}");
  const [elements, setElements] = useState<Record<string, string>>({});
  const [holdOnFailure, setHoldOnFailure] = useState(false);
  const [simulate, setSimulate] = useState(launching.simulate);
  const [typed, setTyped] = useState({ outputs: "", fail: "", from: "", durations: false });
  const first = useRef<HTMLTextAreaElement>(null);
  const params = launchParams(text, elements);
  const simulation = simulate ? launchSimulation(typed) : null;
  const parsed =
    "error" in params
      ? params
      : simulation && "error" in simulation
        ? simulation
        : server !== null && (simulate || holdOnFailure)
          ? { error: `${simulate ? "A simulation" : "Holding where a task fails"} runs on this machine: choose This machine` }
          : params;
  useEffect(() => first.current?.focus(), []);
  return (
    <Modal
      className="launch"
      id="launch"
      title={`Run ${launching.name}`}
      testId="launch-dialog"
      onClose={cancel}
      onSubmit={() => {
        if (!("params" in parsed)) return;
        void launch(parsed.params, {
          ...(simulation && "simulation" in simulation ? { simulate: simulation.simulation } : {}),
          ...(holdOnFailure ? { hold_on_failure: true } : {}),
        });
      }}
    >
      <p className="muted">{launching.file}</p>
      {runOn.servers.length > 0 && (
        <label>
          Run on
          <select value={server ?? HERE} onChange={(e) => choose(e.target.value === HERE ? null : e.target.value)} data-testid="launch-where">
            <option value={HERE}>This machine</option>
            {runOn.servers.map((s) => (
              <option key={s.name} value={s.name}>
                {s.name} — {s.url}
              </option>
            ))}
          </select>
          {server !== null && <span className="muted">It goes to the server first, with the inner blueprints it calls; the run there is followed here.</span>}
        </label>
      )}
      <label>
        Session parameters (JSON object)
        <textarea
          ref={first}
          value={text}
          onChange={(e) => setText(e.target.value)}
          onKeyDown={(e) => {
            if (e.key === "Enter" && !e.shiftKey && !e.ctrlKey && !e.metaKey) {
              e.preventDefault();
              e.currentTarget.form?.requestSubmit();
            }
          }}
          rows={4}
          spellCheck={false}
          title="Enter starts the run; Shift+Enter is a new line"
          data-testid="launch-params"
        />
      </label>
      {launching.dynamic.map((task) => (
        <label key={task}>
          Elements of {task} (one per line)
          <textarea
            value={elements[task] ?? ""}
            onChange={(e) => setElements({ ...elements, [task]: e.target.value })}
            rows={3}
            spellCheck={false}
            data-testid="launch-elements"
          />
        </label>
      ))}
      <label className="inline">
        <input type="checkbox" checked={holdOnFailure} onChange={(e) => setHoldOnFailure(e.target.checked)} data-testid="launch-hold-on-failure" />
        Hold where a task fails (then continue, run it again, or skip it)
      </label>
      <label className="inline">
        <input type="checkbox" checked={simulate} onChange={(e) => setSimulate(e.target.checked)} data-testid="launch-simulate" />
        Simulate: run no process, to see the path the blueprint takes
      </label>
      {simulate && <SimulationFields blueprint={launching.id} typed={typed} change={setTyped} />}
      {"error" in parsed && (
        <p className="field-error" role="alert">
          {parsed.error}
        </p>
      )}
      {runOn.error && (
        <p className="field-error" role="alert" data-testid="launch-error">
          {runOn.error}
        </p>
      )}
      {runOn.published && <Published result={runOn.published} close={cancel} testid="launch-publish-result" />}
      <label className="inline">
        <input type="checkbox" checked={alwaysAsk} onChange={(e) => setAlwaysAsk(e.target.checked)} data-testid="launch-always-ask" />
        Show this before every run (else only when there is something to choose; Shift+F5 shows it)
      </label>
      <div className="choices">
        <button type="submit" className="primary" disabled={"error" in parsed || runOn.step !== null} data-testid="launch-start">
          {runOn.step === "publishing" ? "Publishing…" : runOn.step === "starting" ? "Starting…" : simulate ? "▶ Simulate" : "▶ Start"}
        </button>
        <button type="button" className="plain" onClick={cancel}>
          Cancel
        </button>
      </div>
    </Modal>
  );
}
