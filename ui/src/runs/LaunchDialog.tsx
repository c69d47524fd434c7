// Before a run starts: its session parameters (a JSON object) and, for each dynamic composite,
// the elements it fans out over (one per line), which become `params.elements`.
import { useEffect, useRef, useState } from "react";
import { useWorkspace } from "../store/context";
import type { Launching } from "../store/workspace";
import { useEscape } from "../useEscape";

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
  const [text, setText] = useState("{}");
  const [elements, setElements] = useState<Record<string, string>>({});
  const first = useRef<HTMLTextAreaElement>(null);
  const parsed = launchParams(text, elements);
  useEffect(() => first.current?.focus(), []);
  useEscape(cancel);
  return (
    <div className="modal-backdrop">
      <form
        className="modal launch"
        role="dialog"
        aria-modal="true"
        aria-labelledby="launch-title"
        data-testid="launch-dialog"
        onSubmit={(e) => {
          e.preventDefault();
          if ("params" in parsed) void launch(parsed.params);
        }}
      >
        <h3 id="launch-title">Run {launching.name}</h3>
        <p className="muted">{launching.file}</p>
        <label>
          Session parameters (JSON object)
          <textarea ref={first} value={text} onChange={(e) => setText(e.target.value)} rows={4} spellCheck={false} data-testid="launch-params" />
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
        <div className="choices">
          <button type="submit" className="primary" disabled={"error" in parsed} data-testid="launch-start">
            ▶ Start
          </button>
          <button type="button" className="plain" onClick={cancel}>
            Cancel
          </button>
        </div>
      </form>
    </div>
  );
}
