// `system.start` and `system.end`: where a blueprint opens and closes; nothing comes before
// the start or after the end.
import type { NodeProps } from "@xyflow/react";
import { memo } from "react";
import { TaskCard } from "../card";
import type { NodeKind, TaskNode } from "../types";

function TerminalNodeView({ data, selected }: NodeProps<TaskNode>) {
  const start = data.task.type === "system.start";
  return (
    <TaskCard data={data} selected={selected} kind="terminal" icon={start ? "●" : "■"} target={!start} source={start} />
  );
}

export const terminal: NodeKind = {
  kind: "terminal",
  matches: (taskType) => taskType === "system.start" || taskType === "system.end",
  component: memo(TerminalNodeView),
};
