// The zoomed-out canvas of a large blueprint drawn on one <canvas>: WebKitGTK paints in
// software, and thousands of cards, SVG edges and scope regions painted again on every frame of a
// pan cost more than a frame, as does making them (a run of 10,000 tasks took seconds to show). The cards
// are not in the page then: a click selects the task under it (Canvas.tsx), a double click opens
// a composite; moving tasks wants a zoom at which they can be read.
import { useStore } from "@xyflow/react";
import { useEffect, useLayoutEffect, useRef, useState } from "react";
import { drawOverview, redrawChanged, type OverviewScene, type Palette } from "./overview";

export function Overview({ scene }: { scene: OverviewScene }) {
  const canvas = useRef<HTMLCanvasElement>(null);
  const transform = useStore((s) => s.transform);
  const width = useStore((s) => s.width);
  const height = useStore((s) => s.height);
  const palette = usePalette(canvas);
  // What the canvas shows: the scene and the view it was drawn for.
  const drawn = useRef<{ scene: OverviewScene; transform: unknown; width: number; height: number; palette: Palette } | null>(null);

  useLayoutEffect(() => {
    const element = canvas.current;
    const ctx = element?.getContext("2d");
    if (!element || !ctx || !palette || width === 0 || height === 0) return;
    const dpr = window.devicePixelRatio || 1;
    const backing = [Math.round(width * dpr), Math.round(height * dpr)] as const;
    const resized = element.width !== backing[0] || element.height !== backing[1];
    if (resized) [element.width, element.height] = backing;
    const last = drawn.current;
    drawn.current = { scene, transform, width, height, palette };
    // Only tasks' colours changed (a run's states, many times a second in time travel): those
    // cards are drawn again, not the thousands of others.
    const sameView = last !== null && !resized && last.transform === transform && last.palette === palette;
    if (sameView && redrawChanged(ctx, last.scene, scene, transform, { width, height, dpr }, palette) !== null) return;
    const shown = drawOverview(ctx, scene, transform, { width, height, dpr }, palette);
    element.dataset.tasks = String(shown.tasks);
    element.dataset.scopes = String(shown.scopes);
  }, [scene, transform, width, height, palette]);

  return <canvas ref={canvas} className="overview" style={{ width, height }} aria-hidden data-testid="overview" />;
}

/** The colours of the page's theme, read again when the system's theme changes. */
function usePalette(canvas: React.RefObject<HTMLCanvasElement | null>): Palette | null {
  const [palette, setPalette] = useState<Palette | null>(null);
  useEffect(() => {
    const read = () => {
      if (!canvas.current) return;
      const style = getComputedStyle(canvas.current);
      const v = (name: string, fallback: string) => style.getPropertyValue(name).trim() || fallback;
      setPalette({
        task: v("--task", "#ffffff"),
        terminal: v("--terminal", "#eef6f1"),
        composite: v("--composite", "#f1f0fb"),
        running: v("--state-running", "#2f6fd6"),
        succeeded: v("--state-succeeded", "#2f8f5b"),
        failed: v("--state-failed", "#c62f3b"),
        skipped: v("--state-skipped", "#8a8fa3"),
        border: v("--edge", "#7d849a"),
        error: v("--error", "#c62f3b"),
        warning: v("--warning", "#a86400"),
        edge: v("--edge", "#7d849a"),
        selected: v("--selected", "#4c5fd5"),
        while: v("--scope-while", "#2f8f6a"),
        retry: v("--scope-retry", "#b8742a"),
        skip: v("--scope-skip", "#6a5fd0"),
      });
    };
    read();
    const scheme = window.matchMedia("(prefers-color-scheme: dark)");
    scheme.addEventListener("change", read);
    return () => scheme.removeEventListener("change", read);
  }, [canvas]);
  return palette;
}
