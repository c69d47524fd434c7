// @vitest-environment jsdom
import { act, useState } from "react";
import { createRoot, type Root } from "react-dom/client";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { Attempt } from "../../backend/generated";
import { AXIS_HEIGHT, LABEL_WIDTH } from "./draw";
import { ROW_HEIGHT, buildModel, clampView, fitView, timeToX, type AttemptRef, type View } from "./model";
import { T, attempt, inLoops } from "./testing";
import { Timeline } from "./Timeline";
import type { TimelineTiming } from "../timeLeft";

(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true;

/** The canvas's size: jsdom lays nothing out, so the test gives it one. */
const WIDTH = 800;
const HEIGHT = 300;

// Rows: 0 the header of bp, 1 bp.a (a long attempt, then one of no width), 2 bp.b, 3 the header of sub_x, 4 sub_x.c (running).
const ATTEMPTS = [
  attempt("bp.a", 1, 0, 1000),
  attempt("bp.b", 1, 200, 800),
  attempt("sub_x.c", 1, 300, null),
  attempt("bp.a", 2, 1500, 1500, "skipped"),
];
const NOW = T + 2000;

/** The view the timeline opens with: the whole session fitted to the bar area. */
function openingView(attempts: Attempt[], nowMs: number): View {
  const model = buildModel(attempts);
  const area = { t0: 0, msPerPx: 1, scrollTop: 0, width: WIDTH - LABEL_WIDTH, height: HEIGHT - AXIS_HEIGHT };
  return clampView(model, fitView(model, area, nowMs), nowMs);
}

/** Where on the canvas a time (from the session's start) on a row is, in `view`. */
function pointAt(view: View, time: number, row: number) {
  return { clientX: LABEL_WIDTH + timeToX(view, T + time), clientY: AXIS_HEIGHT + row * ROW_HEIGHT + ROW_HEIGHT / 2 - view.scrollTop };
}

type Mounted = {
  root: HTMLElement;
  canvas: HTMLCanvasElement;
  onSelect: ReturnType<typeof vi.fn<(ref: AttemptRef | null) => void>>;
  select(ref: AttemptRef | null): void;
  setNow(nowMs: number): void;
  setRun(change: { attempts?: Attempt[]; live?: boolean; nowMs?: number }): void;
};

let reactRoot: Root | null = null;
let container: HTMLDivElement | null = null;

type Props = { nowMs?: number; live?: boolean; timing?: TimelineTiming };

/** Mounts the timeline with its selection kept by a parent, as the runs view keeps it. */
async function mount(attempts: Attempt[], props: Props = {}): Promise<Mounted> {
  const onSelect = vi.fn<(ref: AttemptRef | null) => void>();
  let selectFromOutside: (ref: AttemptRef | null) => void = () => {};
  let setNowFromOutside: (nowMs: number) => void = () => {};
  let setRunFromOutside: (run: { attempts: Attempt[]; live: boolean }) => void = () => {};
  function Parent() {
    const [selected, setSelected] = useState<AttemptRef | null>(null);
    const [nowMs, setNow] = useState(props.nowMs ?? NOW);
    const [run, setRun] = useState({ attempts, live: props.live ?? false });
    selectFromOutside = setSelected;
    setNowFromOutside = setNow;
    setRunFromOutside = setRun;
    return (
      <Timeline
        attempts={run.attempts}
        nowMs={nowMs}
        live={run.live}
        timing={props.timing}
        selected={selected}
        onSelect={(ref) => {
          onSelect(ref);
          setSelected(ref);
        }}
      />
    );
  }
  container = document.createElement("div");
  document.body.append(container);
  reactRoot = createRoot(container);
  act(() => reactRoot!.render(<Parent />));
  await nextFrame();
  const root = container.querySelector<HTMLElement>("[data-testid=timeline]")!;
  return {
    root,
    canvas: root.querySelector("canvas")!,
    onSelect,
    select: (ref) => act(() => selectFromOutside(ref)),
    setNow: (nowMs) => act(() => setNowFromOutside(nowMs)),
    setRun: ({ nowMs, ...change }) =>
      act(() => {
        if (nowMs !== undefined) setNowFromOutside(nowMs);
        setRunFromOutside({ attempts, live: props.live ?? false, ...change });
      }),
  };
}

/** Lets the timeline draw the frame it asked for. */
const nextFrame = () => act(() => new Promise<void>((resolve) => requestAnimationFrame(() => resolve())));

function click(canvas: HTMLCanvasElement, at: { clientX: number; clientY: number }) {
  act(() => {
    canvas.dispatchEvent(new PointerEvent("pointerdown", { bubbles: true, button: 0, pointerId: 1, ...at }));
    canvas.dispatchEvent(new PointerEvent("pointerup", { bubbles: true, button: 0, pointerId: 1, ...at }));
  });
}

function press(root: HTMLElement, key: string) {
  act(() => {
    root.dispatchEvent(new KeyboardEvent("keydown", { bubbles: true, key }));
  });
}

beforeEach(() => {
  // jsdom has no 2D context: the timeline then works out its frame without painting it.
  vi.spyOn(HTMLCanvasElement.prototype, "getContext").mockReturnValue(null);
  vi.spyOn(HTMLCanvasElement.prototype, "getBoundingClientRect").mockReturnValue(
    DOMRect.fromRect({ x: 0, y: 0, width: WIDTH, height: HEIGHT }),
  );
});

afterEach(() => {
  act(() => reactRoot?.unmount());
  container?.remove();
  reactRoot = null;
  vi.restoreAllMocks();
});

describe("the run timeline", () => {
  it("names the critical path and the slow tasks, each slow one a click from its latest attempt", async () => {
    const slow = { node: "bp.a", took_ms: 1000, usual_ms: 300, runs: 4, slow: true };
    const { root, onSelect } = await mount(ATTEMPTS, { timing: { critical: new Set(["bp.a", "bp.b"]), slow: new Map([["bp.a", slow]]) } });
    const critical = root.querySelector("[data-testid=critical-path]")!;
    expect(critical.textContent).toBe("critical path: 2 tasks");
    expect(critical.getAttribute("title")).toBe("bp.a → bp.b");
    const link = root.querySelector<HTMLButtonElement>("[data-testid=slow-tasks] button")!;
    expect(link.textContent).toBe("bp.a");
    expect(link.title).toBe("300 ms, the median of 4 past runs; took 1.00 s here, 3.3x");
    act(() => link.click());
    expect(onSelect).toHaveBeenLastCalledWith({ node: "bp.a", attempt: 2 });
  });

  it("names no critical path nor slow task without the run's time", async () => {
    const { root } = await mount(ATTEMPTS);
    expect(root.querySelector("[data-testid=critical-path]")).toBeNull();
    expect(root.querySelector("[data-testid=slow-tasks]")).toBeNull();
  });

  it("draws every bar of a session in view, and says what it shows", async () => {
    const { root, canvas } = await mount(ATTEMPTS);
    expect(root.dataset.bars).toBe("4");
    expect(root.dataset.selected).toBe("");
    expect(canvas.getAttribute("role")).toBe("img");
    expect(canvas.getAttribute("aria-label")).toBe("Timeline of 4 attempts of 3 tasks in 2 blueprint instances, 1 running");
    expect(root.tabIndex).toBe(0);
  });

  it("selects the bar under a click, one of no width included, and clears the selection on empty space", async () => {
    const { root, canvas, onSelect } = await mount(ATTEMPTS);
    const view = openingView(ATTEMPTS, NOW);
    click(canvas, pointAt(view, 500, 1));
    expect(onSelect).toHaveBeenLastCalledWith({ node: "bp.a", attempt: 1 });
    // Two pixels beside the attempt of no width still picks it.
    click(canvas, { ...pointAt(view, 1500, 1), clientX: pointAt(view, 1500, 1).clientX + 2 });
    expect(onSelect).toHaveBeenLastCalledWith({ node: "bp.a", attempt: 2 });
    expect(root.dataset.selected).toBe("bp.a#2");
    click(canvas, pointAt(view, 1900, 4));
    expect(onSelect).toHaveBeenLastCalledWith({ node: "sub_x.c", attempt: 1 });
    click(canvas, pointAt(view, 1200, 2));
    expect(onSelect).toHaveBeenLastCalledWith(null);
    expect(root.dataset.selected).toBe("");
  });

  it("selects a task's latest attempt from its label", async () => {
    const { canvas, onSelect } = await mount(ATTEMPTS);
    click(canvas, { clientX: 40, clientY: AXIS_HEIGHT + ROW_HEIGHT * 1.5 });
    expect(onSelect).toHaveBeenLastCalledWith({ node: "bp.a", attempt: 2 });
  });

  it("moves the selection with the arrow keys and clears it with Escape", async () => {
    const { root, onSelect } = await mount(ATTEMPTS);
    press(root, "ArrowRight");
    expect(root.dataset.selected).toBe("bp.a#1");
    press(root, "ArrowRight");
    expect(root.dataset.selected).toBe("bp.a#2");
    press(root, "ArrowDown");
    expect(root.dataset.selected).toBe("bp.b#1");
    press(root, "ArrowDown");
    expect(root.dataset.selected).toBe("sub_x.c#1");
    // At the last row, down stays and asks for nothing.
    const calls = onSelect.mock.calls.length;
    press(root, "ArrowDown");
    expect(onSelect.mock.calls.length).toBe(calls);
    press(root, "Escape");
    expect(root.dataset.selected).toBe("");
    expect(onSelect).toHaveBeenLastCalledWith(null);
  });

  it("scrolls a bar selected elsewhere into view", async () => {
    const many = Array.from({ length: 40 }, (_, i) => attempt(`bp.t${i}`, 1, i * 10, i * 10 + 5));
    const { root, canvas, onSelect, select } = await mount(many, { nowMs: T + 400 });
    const opening = openingView(many, T + 400);
    const rowsInView = Math.floor(opening.height / ROW_HEIGHT);
    expect(Number(root.dataset.bars)).toBeLessThanOrEqual(rowsInView);
    root.dataset.bars = "";
    const last = { node: "bp.t39", attempt: 1 };
    select(last);
    await nextFrame();
    expect(root.dataset.bars).not.toBe("");
    // The last row now ends at the bottom of the canvas: a click there picks it.
    click(canvas, { clientX: pointAt(opening, 392, 0).clientX, clientY: HEIGHT - ROW_HEIGHT / 2 });
    expect(onSelect).toHaveBeenLastCalledWith(last);
  });

  it("keeps a pan when the same selection comes again as a new object", async () => {
    const { canvas, onSelect, select } = await mount(ATTEMPTS);
    select({ node: "bp.b", attempt: 1 });
    await nextFrame();
    act(() => {
      canvas.dispatchEvent(new WheelEvent("wheel", { deltaY: 300, shiftKey: true, clientX: 400, clientY: 100, cancelable: true }));
    });
    const opening = openingView(ATTEMPTS, NOW);
    const panned = { ...opening, t0: opening.t0 + 300 * opening.msPerPx };
    select({ node: "bp.b", attempt: 1 });
    await nextFrame();
    click(canvas, pointAt(panned, 1500, 1));
    expect(onSelect).toHaveBeenLastCalledWith({ node: "bp.a", attempt: 2 });
  });

  it("shows a tooltip with the attempt under the pointer", async () => {
    const { root, canvas } = await mount(ATTEMPTS);
    const view = openingView(ATTEMPTS, NOW);
    act(() => {
      canvas.dispatchEvent(new PointerEvent("pointermove", { bubbles: true, ...pointAt(view, 500, 2) }));
    });
    const tooltip = root.querySelector("[role=tooltip]")!;
    expect(tooltip.textContent).toContain("b · attempt #1");
    expect(tooltip.textContent).toContain("600 ms");
    act(() => {
      canvas.dispatchEvent(new PointerEvent("pointermove", { bubbles: true, ...pointAt(view, 1200, 2) }));
    });
    expect(root.querySelector("[role=tooltip]")).toBeNull();
  });

  it("tells the iteration of an attempt of a looped scope, whose bands take no click", async () => {
    const pass = (k: number, a: Attempt) => inLoops(a, ["pick", "placement loop", k]);
    // Rows: 0 the header of bp, 1 bp.pick, 2 bp.place (retried in the second iteration, from 500 ms).
    const looping = [
      pass(1, attempt("bp.pick", 1, 0, 100)),
      pass(1, attempt("bp.place", 1, 100, 400)),
      pass(2, attempt("bp.pick", 2, 500, 600)),
      pass(2, attempt("bp.place", 2, 600, 700, "failed")),
      pass(2, attempt("bp.place", 3, 750, 900)),
    ];
    const { root, canvas, onSelect } = await mount(looping);
    const view = openingView(looping, NOW);
    act(() => {
      canvas.dispatchEvent(new PointerEvent("pointermove", { bubbles: true, ...pointAt(view, 800, 2) }));
    });
    expect(root.querySelector("[role=tooltip]")?.textContent).toContain("Scope placement loop: iteration 2 of 2");
    click(canvas, pointAt(view, 725, 2));
    expect(onSelect).toHaveBeenLastCalledWith(null);
    click(canvas, pointAt(view, 800, 2));
    expect(onSelect).toHaveBeenLastCalledWith({ node: "bp.place", attempt: 3 });
  });

  it("follows a live session until the user pans, and again when asked", async () => {
    const { root, canvas } = await mount(ATTEMPTS, { live: true });
    const follow = [...root.querySelectorAll("button")].find((b) => b.textContent === "Follow")!;
    expect(follow.getAttribute("aria-pressed")).toBe("true");
    const wheel = new WheelEvent("wheel", { deltaY: 120, shiftKey: true, clientX: 400, clientY: 100, cancelable: true });
    act(() => {
      canvas.dispatchEvent(wheel);
    });
    expect(wheel.defaultPrevented).toBe(true);
    expect(follow.getAttribute("aria-pressed")).toBe("false");
    act(() => follow.click());
    expect(follow.getAttribute("aria-pressed")).toBe("true");
  });

  it("opens a run that has just started with its start on the left, and keeps it there as it ends", async () => {
    const running = [attempt("bp.a", 1, 0, null)];
    const { canvas, onSelect, setRun } = await mount(running, { live: true, nowMs: T + 8 });
    // Row 1 (under bp's header) near the view's left edge: the bar of the session's first attempt.
    const left = { clientX: LABEL_WIDTH + 20, clientY: AXIS_HEIGHT + ROW_HEIGHT + ROW_HEIGHT / 2 };
    click(canvas, left);
    expect(onSelect).toHaveBeenLastCalledWith({ node: "bp.a", attempt: 1 });
    setRun({ attempts: [attempt("bp.a", 1, 0, 4)], live: false, nowMs: T + 17 });
    await nextFrame();
    click(canvas, { clientX: LABEL_WIDTH + 2000, clientY: 0 });
    click(canvas, left);
    expect(onSelect).toHaveBeenLastCalledWith({ node: "bp.a", attempt: 1 });
  });

  it("shows a followed run whole when it ends", async () => {
    const first = [attempt("bp.a", 1, 0, 1000)];
    const { root, setRun } = await mount(first, { live: true, nowMs: T + 1000 });
    // The run goes on for minutes: following its latest time, the first bar leaves the view.
    const later = [...first, attempt("bp.b", 1, 290_000, 299_000)];
    setRun({ attempts: later, live: true, nowMs: T + 300_000 });
    await nextFrame();
    expect(root.dataset.bars).toBe("1");
    setRun({ attempts: later, live: false, nowMs: T + 300_000 });
    await nextFrame();
    expect(root.dataset.bars).toBe("2");
  });

  it("grows a running attempt's bar with the current time", async () => {
    const attempts = [attempt("bp.a", 1, 0, 4000), attempt("bp.b", 1, 0, null)];
    const { canvas, onSelect, setNow } = await mount(attempts, { nowMs: T + 1000 });
    const view = openingView(attempts, T + 1000);
    const at3s = pointAt(view, 3000, 2);
    click(canvas, at3s);
    expect(onSelect).toHaveBeenLastCalledWith(null);
    setNow(T + 3500);
    await nextFrame();
    click(canvas, at3s);
    expect(onSelect).toHaveBeenLastCalledWith({ node: "bp.b", attempt: 1 });
  });
});
