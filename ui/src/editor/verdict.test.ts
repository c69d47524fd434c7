import { describe, expect, it } from "vitest";
import type { Diagnostic, FileReport } from "../backend/generated";
import { verdict } from "./verdict";

function diagnostic(severity: Diagnostic["severity"], server_rejects: boolean, message: string): Diagnostic {
  return { code: "condition-unknown-name", severity, task_id: "t", path: "$", message, server_rejects };
}

function report(valid: boolean, server_accepts: boolean, diagnostics: Diagnostic[] = []): FileReport {
  return { file: "bp.json", valid, server_accepts, diagnostics };
}

describe("the verdict in the status bar", () => {
  it("says it is checking until the facade answers", () => {
    expect(verdict(null)).toMatchObject({ kind: "checking", text: "Checking…" });
  });

  it("says the server accepts a valid blueprint it would take", () => {
    expect(verdict(report(true, true))).toMatchObject({ kind: "accepted", text: "The server accepts it" });
  });

  it("tells a blueprint valid for Orrery that the server would refuse, and why", () => {
    const found = verdict(report(true, false, [diagnostic("warning", true, "task 'x': reads 'n', which nothing writes")]));
    expect(found).toMatchObject({ kind: "refused", text: "The server would refuse it" });
    expect(found.detail).toContain("• task 'x': reads 'n', which nothing writes");
  });

  it("counts the errors, and lists only the problems the server refuses for", () => {
    const found = verdict(
      report(false, false, [diagnostic("error", true, "one"), diagnostic("error", false, "two"), diagnostic("warning", false, "three")]),
    );
    expect(found).toMatchObject({ kind: "errors", text: "The server would refuse it" });
    expect(found.detail).toContain("• one");
    expect(found.detail).not.toContain("• two");
    expect(verdict(report(false, false, [diagnostic("error", true, "one")])).text).toBe("The server would refuse it");
  });

  it("says so when the server would accept what Orrery finds wrong (a cycle it never checks)", () => {
    expect(verdict(report(false, true, [diagnostic("error", false, "cycle")])).text).toBe(
      "The server would still accept it",
    );
  });

  it("lists a few reasons and counts the rest", () => {
    const many = Array.from({ length: 8 }, (_, i) => diagnostic("error", true, `reason ${i}`));
    const { detail } = verdict(report(false, false, many));
    expect(detail).toContain("• reason 4");
    expect(detail).not.toContain("• reason 5");
    expect(detail).toContain("• and 3 more (see Problems)");
  });
});
