// @vitest-environment jsdom
import { act } from "react";
import { createRoot } from "react-dom/client";
import { describe, expect, it } from "vitest";
import { blueprintEncoding } from "../backend/editor-jobs";
import type { Diagnostic } from "../backend/generated";
import { MemoryBackend } from "../backend/memory";
import { EditorProvider } from "../store/context";
import { createEditorStore } from "../store/editor";
import { Problems, ProblemsSummary } from "./Problems";

(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true;

describe("the problems", () => {
  it("take no room while there are none (the status bar says so), and list what the checks find", async () => {
    let diagnostics: Diagnostic[] = [];
    const backend = new MemoryBackend({
      blueprint_encoding: blueprintEncoding,
      validate_blueprint: () => [{ file: "bp.json", valid: diagnostics.length === 0, server_accepts: true, diagnostics }],
      read_layout: ({ file }) => ({ layout_file: `${file}.layout`, found: false, positions: {}, direction: "down" }),
    });
    const store = createEditorStore(backend, async () => ({}));
    const container = document.createElement("div");
    const root = createRoot(container);
    act(() =>
      root.render(
        <EditorProvider store={store}>
          <Problems />
          <ProblemsSummary />
        </EditorProvider>,
      ),
    );
    const text = JSON.stringify({ id: "bp", tasks: [{ id: "start", type: "system.start" }] });
    await act(() => store.getState().open("/bp.json", text));
    await act(() => new Promise((resolve) => setTimeout(resolve, 0)));
    expect(container.querySelector("[data-testid=problems-summary]")?.textContent).toBe("No problems");
    expect(container.querySelector(".problems")).toBeNull();

    diagnostics = [
      { code: "orphan-task", severity: "error", task_id: "lost", path: "$.tasks[1]", message: "lost is an orphan", server_rejects: true },
    ];
    await act(() => store.getState().open("/bp.json", text));
    await act(() => new Promise((resolve) => setTimeout(resolve, 0)));
    expect(container.querySelector("[data-testid=problems-summary]")?.textContent).toBe("1 error");
    expect([...container.querySelectorAll("[data-testid=problem]")].map((p) => p.getAttribute("data-task-id"))).toEqual(["lost"]);
    act(() => root.unmount());
  });
});
