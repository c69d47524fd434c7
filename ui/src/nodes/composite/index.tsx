// `system.composite`: a task that runs an inner blueprint, named under its id (with the
// sequencer of a dynamic one); a double-click opens the inner blueprint.
import type { NodeProps } from "@xyflow/react";
import { memo } from "react";
import { TASK_TYPE } from "../../backend/generated";
import { innerOf } from "../../inspector/composite";
import { TaskCard } from "../card";
import type { NodeKind, TaskNode } from "../types";

/** `basic_element_sequencer` reads as `element`: the kind of elements the sequencer walks. */
function sequencerName(sequencer: string): string {
  return sequencer.replace(/^basic_/, "").replace(/_?sequencer$/, "") || "basic";
}

function CompositeNodeView({ data, selected }: NodeProps<TaskNode>) {
  const inner = innerOf(data.task);
  const subtitle =
    inner === null ? (
      <span className="missing">no inner blueprint</span>
    ) : (
      <>
        <span className="inner" data-testid="inner-blueprint">
          ↳ {inner.id}
        </span>
        {inner.sequencer !== null && (
          <span className="sequencer" data-testid="sequencer" title={`Dynamic: one run per element, by ${inner.sequencer}`}>
            ⟳ {sequencerName(inner.sequencer)}
          </span>
        )}
      </>
    );
  return <TaskCard data={data} selected={selected} kind="composite" icon="◫" subtitle={subtitle} />;
}

export const composite: NodeKind = {
  kind: "composite",
  matches: (taskType) => taskType === TASK_TYPE.COMPOSITE,
  component: memo(CompositeNodeView),
};
