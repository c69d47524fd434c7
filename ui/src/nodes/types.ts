import type { ComponentType } from "react";
import type { Node, NodeProps } from "@xyflow/react";
import type { TaskState } from "../backend/generated";
import type { Task } from "../blueprint";

/** How a task stands in a run: its state, how many attempts it took, where it holds at a breakpoint. */
export type RunMark = { state: TaskState; attempts: number; held?: string; breakpoint?: string };

export type TaskNodeData = {
  task: Task;
  /** What the facade found about this task. */
  errors: number;
  warnings: number;
  /** On a run's canvas. */
  run?: RunMark;
};

export type TaskNode = Node<TaskNodeData, string>;

/** A kind of node: which task types it draws, and how. */
export type NodeKind = {
  kind: string;
  matches(taskType: string): boolean;
  component: ComponentType<NodeProps<TaskNode>>;
};
