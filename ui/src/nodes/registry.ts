// Every node kind, by kind: the first whose `matches` accepts a task type draws it.
import type { NodeTypes } from "@xyflow/react";
import { composite } from "./composite";
import { task } from "./task";
import { terminal } from "./terminal";
import type { NodeKind } from "./types";

const kinds: NodeKind[] = [terminal, composite, task];

export function kindOf(taskType: string): string {
  return (kinds.find((k) => k.matches(taskType)) ?? task).kind;
}

export const nodeTypes: NodeTypes = Object.fromEntries(kinds.map((k) => [k.kind, k.component]));
