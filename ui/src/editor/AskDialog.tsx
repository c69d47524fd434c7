// The question asked before unsaved work would be lost: a modal with the choices the workspace
// gives (Save, Don't Save, Cancel). Escape cancels.
import { useEffect, useRef } from "react";
import { useWorkspace } from "../store/context";

export function AskDialog() {
  const ask = useWorkspace((s) => s.ask);
  const first = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    if (!ask) return;
    first.current?.focus();
    const cancel = ask.choices.find((c) => c.label === "Cancel");
    const onKey = (e: KeyboardEvent) => {
      if (e.key === "Escape" && cancel) void cancel.run();
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [ask]);
  if (!ask) return null;
  return (
    <div className="modal-backdrop">
      <div className="modal" role="alertdialog" aria-modal="true" aria-labelledby="ask-title" data-testid="ask-dialog">
        <h3 id="ask-title">{ask.title}</h3>
        <p>{ask.message}</p>
        <div className="choices">
          {ask.choices.map((choice, i) => (
            <button
              key={choice.label}
              ref={i === 0 ? first : undefined}
              type="button"
              className={choice.kind}
              onClick={() => void choice.run()}
              data-testid={`ask-${choice.label.toLowerCase().replace(/[^a-z]+/g, "-")}`}
            >
              {choice.label}
            </button>
          ))}
        </div>
      </div>
    </div>
  );
}
