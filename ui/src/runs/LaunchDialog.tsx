// Before a run starts, when there is something to ask (Run with options…, a dynamic composite, a
// saved server, or the choice to always ask): where it runs (this machine, or a saved antikythera
// server), its session parameters (a JSON object) and, for each dynamic composite, the elements it
// fans out over (one per line), which become `params.elements`. Enter in the parameters starts
// (Shift+Enter is a new line), Ctrl+Enter anywhere.
import { useEffect, useRef, useState } from "react";
import { Published } from "../servers/Published";
import { useWorkspace } from "../store/context";
import { runOnServer, type Launching } from "../store/workspace";
import { Modal } from "../Modal";

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
  const first = useRef<HTMLTextAreaElement>(null);
  const parsed = launchParams(text, elements);
  useEffect(() => first.current?.focus(), []);
  return (
    <Modal
      className="launch"
      id="launch"
      title={`Run ${launching.name}`}
      testId="launch-dialog"
      onClose={cancel}
      onSubmit={() => {
        if ("params" in parsed) void launch(parsed.params);
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
          {runOn.step === "publishing" ? "Publishing…" : runOn.step === "starting" ? "Starting…" : "▶ Start"}
        </button>
        <button type="button" className="plain" onClick={cancel}>
          Cancel
        </button>
      </div>
    </Modal>
  );
}
