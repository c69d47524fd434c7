import type { ComponentType } from "react";
import type { Node, NodeProps } from "@xyflow/react";
import type { Task } from "../blueprint";

export type TaskNodeData = {
  task: Task;
  /** What the facade found about this task. */
  errors: number;
  warnings: number;
};

export type TaskNode = Node<TaskNodeData, string>;

/** A kind of node: which task types it draws, and how. */
export type NodeKind = {
  kind: string;
  matches(taskType: string): boolean;
  component: ComponentType<NodeProps<TaskNode>>;
};
