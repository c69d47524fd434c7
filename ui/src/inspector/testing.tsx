// For the inspector's component tests (jsdom): the inspector on a store over an in-memory backend,
// with the selected task, and fields changed as typing changes them.
import { act } from "react";
import { createRoot } from "react-dom/client";
import { blueprintEncoding } from "../backend/editor-jobs";
import { MemoryBackend, type JobHandlers } from "../backend/memory";
import { settled } from "../settled";
import { EditorProvider } from "../store/context";
import { createEditorStore, type EditorStore } from "../store/editor";
import { Inspector } from "./Inspector";

(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true;

export type Mounted = { container: HTMLDivElement; store: EditorStore; unmount: () => void };

/** Opens `text` as `path`, shows the inspector and selects `task`. Validation finds nothing unless a handler says otherwise. */
export async function mountInspector(path: string, text: string, task: string, jobs: JobHandlers): Promise<Mounted> {
  const backend = new MemoryBackend(
    {
      validate_blueprint: () => [{ file: path, valid: true, server_accepts: true, diagnostics: [] }],
      blueprint_encoding: blueprintEncoding,
      task_names: ({ task_id }) => ({ task_id, produced: [], own: [] }),
      read_layout: ({ file }) => ({ layout_file: `${file}.layout`, found: false, positions: {}, direction: "down" }),
      ...jobs,
    },
    { [path]: text },
  );
  const store = createEditorStore(backend, async () => ({}));
  await store.getState().open(path, text);
  const container = document.createElement("div");
  document.body.append(container);
  const root = createRoot(container);
  act(() =>
    root.render(
      <EditorProvider store={store}>
        <Inspector />
      </EditorProvider>,
    ),
  );
  act(() => store.getState().select(task));
  await settled();
  return {
    container,
    store,
    unmount: () => {
      act(() => root.unmount());
      container.remove();
    },
  };
}

/** Sets a field's value as typing does, so that React sees the change; the validation it starts answers. */
export async function change(element: HTMLInputElement | HTMLSelectElement, value: string) {
  const prototype = element instanceof HTMLSelectElement ? HTMLSelectElement.prototype : HTMLInputElement.prototype;
  act(() => {
    Object.getOwnPropertyDescriptor(prototype, "value")!.set!.call(element, value);
    element.dispatchEvent(new Event(element instanceof HTMLSelectElement ? "change" : "input", { bubbles: true }));
  });
  await settled();
}
