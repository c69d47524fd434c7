// @vitest-environment jsdom
import { diagnosticCount } from "@codemirror/lint";
import { EditorView } from "@codemirror/view";
import { act } from "react";
import { afterEach, describe, expect, it } from "vitest";
import type { Diagnostic } from "../backend/generated";
import { parseBlueprint } from "../blueprint";
import { settled } from "../settled";
import { mountInspector, type Mounted } from "./testing";

const text = JSON.stringify({
  id: "bp",
  tasks: [
    { id: "start", type: "system.start" },
    { id: "inspect", type: "shell.run", condition: "ready", depends_on: [{ id: "start", type: "FS" }] },
    { id: "end", type: "system.end", depends_on: [{ id: "inspect", type: "FS" }] },
  ],
});

/** A facade that finds a syntax error in any condition ending with "(" (as "inspect and ("). */
function validate({ text }: { text?: string | null }) {
  const parsed = parseBlueprint(text ?? "");
  if ("error" in parsed) throw new Error(parsed.error);
  const condition = String(parsed.blueprint.tasks[1]?.condition ?? "");
  const diagnostics: Diagnostic[] = condition.endsWith("(")
    ? [
        {
          code: "condition-syntax",
          severity: "error",
          task_id: "inspect",
          path: "$.tasks[1].condition",
          message: `task 'inspect': condition '${condition}' is not a valid expression (unexpected end (line 1, column ${condition.length + 1}))`,
          server_rejects: true,
        },
      ]
    : [];
  return [{ file: "bp.json", valid: diagnostics.length === 0, server_accepts: diagnostics.length === 0, diagnostics }];
}

let mounted: Mounted | undefined;
afterEach(() => mounted?.unmount());

/** CodeMirror loads on its own (a lazy chunk, transformed on first use here): waits until the field is there. */
async function conditionField(container: HTMLElement): Promise<HTMLElement> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    const found = container.querySelector<HTMLElement>("[data-testid=condition]");
    if (found) return found;
    await act(() => new Promise<void>((resolve) => setTimeout(resolve, 20)));
  }
  throw new Error("the condition editor did not show within 10 s");
}

describe("a task's condition in the inspector", () => {
  it("is edited in CodeMirror, whose content carries the test id an end-to-end test reads", async () => {
    mounted = await mountInspector("/bp.json", text, "inspect", { validate_blueprint: validate });
    const content = await conditionField(mounted.container);
    expect(content.classList.contains("cm-content")).toBe(true);
    expect(content.textContent).toBe("ready");
  });

  it("writes what is typed to the task, and shows the syntax error under the field and in the text", async () => {
    mounted = await mountInspector("/bp.json", text, "inspect", { validate_blueprint: validate });
    const view = EditorView.findFromDOM(await conditionField(mounted.container))!;
    act(() => view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: "inspect and (" }, userEvent: "input" }));
    await settled();
    expect(mounted.store.getState().blueprint?.tasks[1]?.condition).toBe("inspect and (");
    const problems = [...mounted.container.querySelectorAll("[data-testid=condition-problem]")].map((p) => p.textContent);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain("not a valid expression");
    expect(diagnosticCount(view.state)).toBe(1);

    act(() => view.dispatch({ changes: { from: 12, to: 13, insert: "ready" }, userEvent: "input" }));
    await settled();
    expect(mounted.container.querySelector("[data-testid=condition-problem]")).toBeNull();
    expect(diagnosticCount(view.state)).toBe(0);
  });

  it("follows an undo from elsewhere", async () => {
    mounted = await mountInspector("/bp.json", text, "inspect", { validate_blueprint: validate });
    const content = await conditionField(mounted.container);
    const view = EditorView.findFromDOM(content)!;
    act(() => view.dispatch({ changes: { from: 5, insert: " and x" }, userEvent: "input" }));
    await settled();
    act(() => mounted!.store.getState().undo());
    await settled();
    expect(content.textContent).toBe("ready");
  });
});
