// @vitest-environment jsdom
import { act } from "react";
import { createRoot } from "react-dom/client";
import { describe, expect, it, vi } from "vitest";
import { ErrorBoundary } from "./ErrorBoundary";

(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true;

describe("a part of the window that fails to draw", () => {
  it("says so in its place, and draws again when asked", () => {
    let broken = true;
    function Part() {
      if (broken) throw new Error("no chunk");
      return <p data-testid="part">drawn</p>;
    }
    const container = document.createElement("div");
    const root = createRoot(container);
    const quiet = vi.spyOn(console, "error").mockImplementation(() => {});
    act(() =>
      root.render(
        <ErrorBoundary area="inspector">
          <Part />
        </ErrorBoundary>,
      ),
    );
    quiet.mockRestore();
    expect(container.querySelector("[data-testid=error-boundary]")?.textContent).toContain("The inspector failed to draw.no chunk");
    broken = false;
    act(() => container.querySelector("button")!.click());
    expect(container.querySelector("[data-testid=part]")?.textContent).toBe("drawn");
    act(() => root.unmount());
  });
});
