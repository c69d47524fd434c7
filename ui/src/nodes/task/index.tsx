// Tasks an agent runs: shell commands, prompts, notifications, sleeps...
import type { NodeProps } from "@xyflow/react";
import { memo } from "react";
import { TaskCard } from "../card";
import type { NodeKind, TaskNode } from "../types";

function TaskNodeView({ data, selected }: NodeProps<TaskNode>) {
  return <TaskCard data={data} selected={selected} kind="task" icon="▸" />;
}

export const task: NodeKind = { kind: "task", matches: () => true, component: memo(TaskNodeView) };
