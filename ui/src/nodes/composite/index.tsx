// `system.composite`: a task that runs an inner blueprint.
import type { NodeProps } from "@xyflow/react";
import { memo } from "react";
import { TaskCard } from "../card";
import type { NodeKind, TaskNode } from "../types";

function CompositeNodeView({ data, selected }: NodeProps<TaskNode>) {
  return <TaskCard data={data} selected={selected} kind="composite" icon="◫" />;
}

export const composite: NodeKind = {
  kind: "composite",
  matches: (taskType) => taskType === "system.composite",
  component: memo(CompositeNodeView),
};
