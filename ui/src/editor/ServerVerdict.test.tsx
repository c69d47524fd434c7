// @vitest-environment jsdom
import { act } from "react";
import { createRoot } from "react-dom/client";
import { describe, expect, it } from "vitest";
import { blueprintEncoding } from "../backend/editor-jobs";
import { MemoryBackend } from "../backend/memory";
import { EditorProvider } from "../store/context";
import { createEditorStore } from "../store/editor";
import { ServerVerdict } from "./ServerVerdict";

(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true;

describe("the verdict in the status bar", () => {
  it("shows nothing without a blueprint, then the facade's verdict with its reasons as the tooltip", async () => {
    const text = JSON.stringify({ id: "bp", tasks: [{ id: "start", type: "system.start" }] });
    const backend = new MemoryBackend({
      blueprint_encoding: blueprintEncoding,
      validate_blueprint: () => [
        {
          file: "bp.json",
          valid: true,
          server_accepts: false,
          diagnostics: [
            { code: "not-portable", severity: "warning", path: "$", message: "SF is not portable", server_rejects: true },
          ],
        },
      ],
      read_layout: ({ file }) => ({ layout_file: `${file}.layout`, found: false, positions: {}, direction: "down" }),
    });
    const store = createEditorStore(backend, async () => ({}));
    const container = document.createElement("div");
    const root = createRoot(container);
    act(() =>
      root.render(
        <EditorProvider store={store}>
          <ServerVerdict />
        </EditorProvider>,
      ),
    );
    expect(container.querySelector("[data-testid=server-verdict]")).toBeNull();
    await act(() => store.getState().open("/bp.json", text));
    await act(() => new Promise((resolve) => setTimeout(resolve, 0)));
    const shown = container.querySelector<HTMLElement>("[data-testid=server-verdict]")!;
    expect(shown.textContent).toBe("The server would refuse it");
    expect(shown.dataset.verdict).toBe("refused");
    expect(shown.title).toContain("• SF is not portable");
    act(() => root.unmount());
  });
});
