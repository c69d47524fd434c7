import { describe, expect, it } from "vitest";
import type { FileReport } from "../backend/generated";
import { completing, conditionProblems, suggestions } from "./names";

const names = {
  task_id: "t",
  produced: [
    { key: "late", producers: ["after"], upstream: false },
    { key: "count", producers: ["plan"], upstream: true },
  ],
  own: ["command", "count"],
};

describe("what the inspector offers", () => {
  it("offers upstream names first, then the other produced ones, then the task's own", () => {
    expect(suggestions(names).map((s) => [s.name, s.origin])).toEqual([
      ["count", "upstream"],
      ["late", "produced"],
      ["command", "own"],
    ]);
  });

  it("completes the word at the caret", () => {
    const all = suggestions(names);
    expect(completing(all, "co", 2).map((s) => s.name)).toEqual(["count", "command"]);
    expect(completing(all, "count", 5)).toEqual([]);
  });

  it("finds the problems of the task's own condition, not its while condition nor other tasks'", () => {
    const d = (task_id: string, path: string, code: FileReport["diagnostics"][number]["code"]) => ({
      code,
      severity: "error" as const,
      task_id,
      path,
      message: `${task_id} ${path}`,
      server_rejects: true,
    });
    const report: FileReport = {
      file: "f",
      valid: false,
      server_accepts: false,
      diagnostics: [
        d("t", "$.tasks[1].condition", "condition-syntax"),
        d("t", "$.tasks[1].scope_start.while_policy.condition", "condition-unknown-name"),
        d("u", "$.tasks[2].condition", "condition-syntax"),
        d("t", "$.tasks[1]", "orphan-task"),
      ],
    };
    expect(conditionProblems(report, "t").map((p) => p.path)).toEqual(["$.tasks[1].condition"]);
  });
});
