// @vitest-environment jsdom
import { act } from "react";
import { createRoot } from "react-dom/client";
import { describe, expect, it } from "vitest";
import { blueprintEncoding, editorJobs } from "../backend/editor-jobs";
import { MemoryBackend } from "../backend/memory";
import { EditorProvider } from "../store/context";
import { createEditorStore } from "../store/editor";
import { DependencyInspector } from "./DependencyInspector";

(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true;

const run = (id: string, on: string) => ({ id, type: "shell.run", depends_on: [{ id: on, type: "FS" }] });
const text = JSON.stringify({
  id: "bp",
  tasks: [{ id: "start", type: "system.start" }, run("a", "start"), run("b", "a"), { ...run("end", "b"), depends_on: [{ id: "b", type: "FS" }, { id: "start", type: "FS" }] }],
});

describe("the dependency inspector", () => {
  it("names what implies a dependency, changes its type, removes it, and says when it is gone", async () => {
    const backend = new MemoryBackend({ ...editorJobs(), blueprint_encoding: blueprintEncoding });
    const store = createEditorStore(backend, async () => ({}));
    await act(() => store.getState().open("/bp.json", text));
    const container = document.createElement("div");
    const root = createRoot(container);
    act(() => store.getState().selectDependency("start->end"));
    act(() =>
      root.render(
        <EditorProvider store={store}>
          <DependencyInspector />
        </EditorProvider>,
      ),
    );
    const q = (testid: string) => container.querySelector<HTMLElement>(`[data-testid=${testid}]`);
    expect(q("implied-note")?.textContent).toContain("start → a → b → end");
    act(() => q("dependency-type-FF")!.click());
    const end = () => store.getState().blueprint!.tasks.find((t) => t.id === "end")!;
    expect(end().depends_on).toEqual([{ id: "b", type: "FS" }, { id: "start", type: "FF" }]);
    expect(q("dependency-type-says")?.textContent).toBe("end finishes only after start has finished.");
    expect(q("implied-note"), "an FF dependency says something of its own").toBeNull();
    act(() => q("remove-dependency")!.click());
    expect(end().depends_on).toEqual([{ id: "b", type: "FS" }]);
    expect(store.getState().selectedDependency, "nothing is left selected").toBeNull();
    expect(container.textContent).toContain("This dependency no longer exists.");
    act(() => root.unmount());
  });
});
