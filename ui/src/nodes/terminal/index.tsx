// `system.start` and `system.end`: where a blueprint opens and closes; nothing comes before
// the start or after the end.
import type { NodeProps } from "@xyflow/react";
import { memo } from "react";
import { TASK_TYPE } from "../../backend/generated";
import { TaskCard } from "../card";
import type { NodeKind, TaskNode } from "../types";

function TerminalNodeView({ data, selected }: NodeProps<TaskNode>) {
  const start = data.task.type === TASK_TYPE.START;
  return (
    <TaskCard data={data} selected={selected} kind="terminal" icon={start ? "●" : "■"} target={!start} source={start} />
  );
}

export const terminal: NodeKind = {
  kind: "terminal",
  matches: (taskType) => taskType === TASK_TYPE.START || taskType === TASK_TYPE.END,
  component: memo(TerminalNodeView),
};
