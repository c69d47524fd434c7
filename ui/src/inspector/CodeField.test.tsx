// @vitest-environment jsdom
import { diagnosticCount } from "@codemirror/lint";
import { EditorView, runScopeHandlers } from "@codemirror/view";
import { act } from "react";
import { createRoot, type Root } from "react-dom/client";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { Diagnostic } from "../backend/generated";
import { styleNonce } from "./code";
import { CodeField } from "./CodeField";

(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true;

let root: Root;
let container: HTMLDivElement;

beforeEach(() => {
  container = document.createElement("div");
  document.body.append(container);
  root = createRoot(container);
});

afterEach(() => {
  act(() => root.unmount());
  container.remove();
});

function render(props: Parameters<typeof CodeField>[0]) {
  act(() => root.render(<CodeField {...props} />));
  const content = container.querySelector<HTMLElement>("[data-testid=condition]");
  if (!content) throw new Error("the editable element carries the test id");
  const view = EditorView.findFromDOM(content);
  if (!view) throw new Error("the test id is on CodeMirror's content");
  return { content, view };
}

const unknown: Diagnostic = {
  code: "condition-unknown-name",
  severity: "error",
  task_id: "t",
  path: "$.tasks[1].condition",
  message: "task 't': condition 'missing > 1' reads 'missing', which no task in this blueprint declares as an output",
  server_rejects: true,
};

describe("the expression editor", () => {
  it("puts the test id on the editable element, whose text is the value", () => {
    const { content } = render({ value: "count > 1", onChange: () => {}, testId: "condition" });
    expect(content.getAttribute("contenteditable")).toBe("true");
    expect(content.textContent).toBe("count > 1");
  });

  it("reports what is typed, and not a value set from outside", () => {
    const onChange = vi.fn();
    const { view } = render({ value: "a", onChange, testId: "condition" });
    act(() => view.dispatch({ changes: { from: 1, insert: " or b" }, userEvent: "input.type" }));
    expect(onChange).toHaveBeenLastCalledWith("a or b");
    onChange.mockClear();
    render({ value: "undone", onChange, testId: "condition" });
    expect(view.state.doc.toString()).toBe("undone");
    expect(onChange).not.toHaveBeenCalled();
  });

  it("does not break the line on Enter", () => {
    const onChange = vi.fn();
    const { view } = render({ value: "a > 1", onChange, testId: "condition" });
    view.dispatch({ selection: { anchor: 5 } });
    const handled = runScopeHandlers(view, new KeyboardEvent("keydown", { key: "Enter" }), "editor");
    expect(handled).toBe(true);
    expect(view.state.doc.toString()).toBe("a > 1");
    expect(onChange).not.toHaveBeenCalled();
  });

  it("edits a shell script on many lines: Enter breaks the line", () => {
    const onChange = vi.fn();
    const { view, content } = render({ value: "echo hi", onChange, testId: "condition", language: "shell" });
    expect(content.getAttribute("aria-multiline")).toBe("true");
    view.dispatch({ selection: { anchor: 7 } });
    expect(runScopeHandlers(view, new KeyboardEvent("keydown", { key: "Enter" }), "editor")).toBe(true);
    expect(view.state.doc.toString()).toBe("echo hi\n");
    expect(onChange).toHaveBeenLastCalledWith("echo hi\n");
    act(() => view.dispatch({ changes: { from: 8, insert: 'if true; then echo "$HOME"; fi' }, userEvent: "input.type" }));
    expect(view.state.doc.lines).toBe(2);
    expect(view.state.doc.line(2).text).toBe('if true; then echo "$HOME"; fi');
    expect(container.querySelector(".code-field.script")).not.toBeNull();
  });

  it("marks the problems in the text, and clears the marks when they go", () => {
    const { view } = render({ value: "missing > 1", onChange: () => {}, testId: "condition", problems: [unknown] });
    expect(diagnosticCount(view.state)).toBe(1);
    expect(container.querySelector(".code-field.invalid")).not.toBeNull();
    render({ value: "missing > 1", onChange: () => {}, testId: "condition", problems: [] });
    expect(diagnosticCount(view.state)).toBe(0);
    expect(container.querySelector(".code-field.invalid")).toBeNull();
  });

  it("takes its style nonce from the page's own style element", () => {
    const carrier = document.createElement("style");
    carrier.id = "style-nonce";
    carrier.nonce = "abc123";
    document.head.append(carrier);
    try {
      expect(styleNonce()).toBe("abc123");
      render({ value: "", onChange: () => {}, testId: "condition" });
      expect(document.head.querySelector("style[nonce=abc123]:not(#style-nonce)")).not.toBeNull();
    } finally {
      carrier.remove();
    }
  });
});
