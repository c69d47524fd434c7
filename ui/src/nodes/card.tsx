// The look every task node shares: its id, its type, and badges for what the facade found.
import { Handle, useStore } from "@xyflow/react";
import { plural } from "../plural";
import { useEditor, useEditorStore } from "../store/context";
import { useContext, type ReactNode } from "react";
import type { TaskState } from "../backend/generated";
import { FlowDirection, handleSides } from "./direction";
import type { TaskNodeData } from "./types";

/** A state as a card's chip says it. */
const STATE_LABEL: Partial<Record<TaskState, string>> = {
  PENDING: "pending",
  READY: "ready",
  RUNNING: "running",
  SUCCEEDED: "done",
  FAILED: "failed",
  SKIPPED: "skipped",
  SKIP_REQUESTED: "to skip",
};

type Props = {
  data: TaskNodeData;
  selected: boolean;
  kind: string;
  icon: ReactNode;
  /** Whether other tasks may depend on it / it may depend on others. */
  source?: boolean;
  target?: boolean;
  /** Shown instead of the type (which the tooltip keeps). */
  subtitle?: ReactNode;
};

export function TaskCard({ data, selected, kind, icon, source = true, target = true, subtitle }: Props) {
  const { task, errors, warnings, run } = data;
  // On a run's canvas, the run's own breakpoints (set while it runs); else the editor's.
  const editorBreakpoint = useEditor((s) => s.breakpoints[task.id]);
  const breakpoint = run ? run.breakpoint : editorBreakpoint;
  // Only a canvas that is edited adds tasks (a run's is read-only).
  const editable = useStore((s) => s.nodesConnectable);
  const editor = useEditorStore();
  const direction = useContext(FlowDirection);
  const sides = handleSides(direction);
  const state = errors > 0 ? "has-errors" : warnings > 0 ? "has-warnings" : "";
  const runState = run ? `run-${run.state.toLowerCase()}` : "";
  return (
    <div
      className={`task-card kind-${kind} ${state} ${runState} ${selected ? "selected" : ""} flows-${direction}`}
      data-testid="task-node"
      data-task-id={task.id}
      data-state={run?.state}
    >
      {target && <Handle type="target" position={sides.target} />}
      <span className="task-icon" aria-hidden>
        {icon}
      </span>
      <span className="task-text">
        <span className="task-id">{task.id}</span>
        <span className="task-type" title={task.type}>
          {subtitle ?? task.type}
        </span>
      </span>
      {run && (
        <span className="run-chip" title={`${run.state}, ${plural(run.attempts, "attempt")}`}>
          {STATE_LABEL[run.state] ?? run.state.toLowerCase()}
          {run.attempts > 1 && <span className="run-attempts">×{run.attempts}</span>}
        </span>
      )}
      {run?.held ? (
        <span className="held-mark" data-testid="held-mark" title={run.held === "before" ? "Held before it starts" : "Held after it ended"}>
          held
        </span>
      ) : (
        breakpoint && (
          <span
            className={`breakpoint-mark at-${breakpoint}`}
            data-testid="breakpoint-mark"
            data-at={breakpoint}
            title={breakpoint === "before" ? "Breakpoint: a run holds before it starts" : "Breakpoint: a run holds after it ends"}
            aria-label={`breakpoint ${breakpoint}`}
          />
        )
      )}
      {errors > 0 && (
        <span className="badge error" data-testid="error-badge" title={plural(errors, "error")}>
          {errors}
        </span>
      )}
      {errors === 0 && warnings > 0 && (
        <span className="badge warning" title={plural(warnings, "warning")}>
          {warnings}
        </span>
      )}
      {source && <Handle type="source" position={sides.source} />}
      {source && editable && (
        <button
          type="button"
          className="add-after nodrag nopan"
          title="Add a task after this one"
          aria-label={`Add a task after ${task.id}`}
          data-testid="add-after"
          onClick={(e) => {
            e.stopPropagation();
            editor.getState().openAdd({ where: { after: task.id } });
          }}
        >
          +
        </button>
      )}
    </div>
  );
}
