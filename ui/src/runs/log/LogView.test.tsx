// @vitest-environment jsdom
import { act } from "react";
import { createRoot, type Root } from "react-dom/client";
import { afterEach, describe, expect, it, vi } from "vitest";
import { settled } from "../../settled";
import { LINE_HEIGHT, LogView, type LogSource } from "./LogView";
import { CHUNK, type Growth } from "./reader";
import { MemoryLog, numberedLines } from "./testing";

(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true;

/** Lets the reads answered at once answer, and React draw what they brought. */

type Shown = {
  view: HTMLElement;
  scroller: HTMLElement;
  render(props: { source?: LogSource; grew?: Growth | null; onSave?: () => void; ended?: boolean }): void;
  /** The text of every line row in the DOM. */
  rows(): string[];
};

let mounted: { root: Root; container: HTMLElement } | null = null;

afterEach(() => {
  if (!mounted) return;
  act(() => mounted!.root.unmount());
  mounted.container.remove();
  mounted = null;
});

async function show(log: LogSource, onSave?: () => void): Promise<Shown> {
  const container = document.createElement("div");
  document.body.append(container);
  const root = createRoot(container);
  mounted = { root, container };
  let props: { source: LogSource; grew: Growth | null; onSave?: () => void; ended?: boolean } = { source: log, grew: null, onSave };
  const render = (changes: Partial<typeof props>) => {
    props = { ...props, ...changes };
    act(() => root.render(<LogView {...props} />));
  };
  render({});
  await settled();
  const view = container.querySelector<HTMLElement>("[data-testid=log-view]")!;
  return {
    view,
    scroller: view.querySelector<HTMLElement>(".log-scroll")!,
    render,
    rows: () => [...view.querySelectorAll(".log-window .log-line")].map((row) => row.textContent ?? ""),
  };
}

function type(field: HTMLInputElement, value: string) {
  act(() => {
    Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, "value")!.set!.call(field, value);
    field.dispatchEvent(new Event("input", { bubbles: true }));
  });
}

function press(element: HTMLElement, key: string, options: KeyboardEventInit = {}) {
  act(() => void element.dispatchEvent(new KeyboardEvent("keydown", { key, bubbles: true, ...options })));
}

describe("the log view", () => {
  it("opens a large log with one read at its tail and shows its last lines", async () => {
    const log = new MemoryLog(numberedLines(200_000));
    const { view, rows } = await show(log);
    expect(log.reads).toEqual([{ offset: -1, limit: CHUNK }]);
    expect(view.dataset.end).toBe(String(log.size));
    expect(Number(view.dataset.lines)).toBeGreaterThan(10_000);
    expect(rows().at(-1)).toBe("line 200000");
    expect(view.querySelector("[data-testid=log-status]")!.textContent).toContain("256.0 KB of 2.2 MB loaded");
  });

  it("draws only the rows in view and a margin, however many lines it holds", async () => {
    const { view, rows } = await show(new MemoryLog(numberedLines(20_000)));
    expect(view.dataset.lines).toBe("20000");
    expect(rows().length).toBeLessThan(100);
  });

  it("shows the colours of a line and none of its escape sequences", async () => {
    const { view } = await show(new MemoryLog("\x1b[1;31mFAIL\x1b[0m test\n"));
    const red = [...view.querySelectorAll<HTMLElement>(".log-line span")].find((s) => s.textContent === "FAIL")!;
    expect(red.style.color).toBe("var(--ansi-1)");
    expect(red.style.fontWeight).toBe("bold");
    expect(view.querySelector(".log-window")!.textContent).toContain("FAIL test");
  });

  it("appends the lines a grown file holds, read from where it ended, and says it is live", async () => {
    const log = new MemoryLog("started\n");
    const shown = await show(log);
    shown.render({ grew: { fileSize: log.write("step 1\nstep 2\n") } });
    await settled();
    expect(shown.rows()).toEqual(["(start of log)", "started", "step 1", "step 2"]);
    expect(log.reads.map((r) => r.offset)).toEqual([-1, 8]);
    expect(shown.view.dataset.end).toBe(String(log.size));
    expect(shown.view.querySelector("[data-testid=log-status]")!.textContent).toContain("live");
    // The attempt ends: the marker goes at once, without waiting for another read.
    shown.render({ ended: true });
    expect(shown.view.querySelector("[data-testid=log-status]")!.textContent).not.toContain("live");
  });

  it("never reads twice at once for quick announcements", async () => {
    const log = new MemoryLog("a\n");
    const shown = await show(log);
    log.held = true;
    shown.render({ grew: { fileSize: log.write("b\n") } });
    shown.render({ grew: { fileSize: log.write("c\n") } });
    shown.render({ grew: { fileSize: log.write("d\n") } });
    while (log.answer()) await settled();
    expect(log.mostInFlight).toBe(1);
    expect(shown.rows().slice(1)).toEqual(["a", "b", "c", "d"]);
  });

  it("reads the earlier window when scrolled near the top, keeping the line on top in place", async () => {
    const log = new MemoryLog(numberedLines(100_000));
    const { view, scroller, rows } = await show(log);
    const before = Number(view.dataset.lines);
    act(() => {
      scroller.scrollTop = 0;
      scroller.dispatchEvent(new Event("scroll"));
    });
    await settled();
    expect(log.reads.length).toBe(2);
    expect(log.reads[1]!.limit).toBe(CHUNK);
    const after = Number(view.dataset.lines);
    expect(after).toBeGreaterThan(before);
    // The rows added above push the view down by as many rows, less the one the join merged.
    expect(scroller.scrollTop).toBe((after - before) * LINE_HEIGHT);
    // Around it, the line the tail began inside is whole again, among whole lines in order.
    const numbers = rows().map((row) => Number(/^line (\d+)$/.exec(row)?.[1]));
    expect(numbers.every((n, i) => i === 0 || n === numbers[i - 1]! + 1)).toBe(true);
  });

  it("offers earlier output above the held lines, and marks the start of the log once it is read", async () => {
    // One line longer than a window: the tail is a part of it, and nothing can be scrolled.
    const log = new MemoryLog("x".repeat(CHUNK + 100) + "\n");
    const { view, rows } = await show(log);
    expect(rows()).toEqual(["↑ Earlier output", "x".repeat(CHUNK - 1)]);
    act(() => view.querySelector<HTMLButtonElement>("[data-testid=log-earlier]")!.click());
    await settled();
    expect(log.reads[1]).toEqual({ offset: 0, limit: 101 });
    expect(rows()).toEqual(["(start of log)", "x".repeat(CHUNK + 100)]);
  });

  it("counts the matches in the loaded part and goes through them with Enter, Shift+Enter, n and N", async () => {
    const { view } = await show(new MemoryLog(numberedLines(30)));
    const search = view.querySelector<HTMLInputElement>("[data-testid=log-search]")!;
    press(view, "f", { ctrlKey: true });
    expect(document.activeElement).toBe(search);
    type(search, "LINE 2");
    const count = () => view.querySelector("[data-testid=log-search-count]")!.textContent;
    expect(count()).toBe("11"); // line 2, line 20..29
    press(search, "Enter");
    expect(count()).toBe("1/11");
    press(search, "Enter", { shiftKey: true });
    expect(count()).toBe("11/11");
    press(view, "n");
    expect(count()).toBe("1/11");
    press(view, "N");
    expect(count()).toBe("11/11");
    expect(view.querySelector(".log-match.current")!.textContent).toBe("line 2");
    expect(view.querySelector(".log-match.current")!.parentElement!.textContent).toBe("line 29");
  });

  it("says that earlier bytes are not searched when they are not loaded", async () => {
    const { view } = await show(new MemoryLog(numberedLines(100_000)));
    type(view.querySelector<HTMLInputElement>("[data-testid=log-search]")!, "line 99999");
    expect(view.querySelector("[data-testid=log-search-count]")!.textContent).toBe(
      "1 in the loaded part (earlier bytes not searched)",
    );
  });

  it("copies all loaded text without escape sequences", async () => {
    const writeText = vi.fn(() => Promise.resolve());
    Object.defineProperty(navigator, "clipboard", { value: { writeText }, configurable: true });
    const { view } = await show(new MemoryLog("\x1b[32mok\x1b[0m one\r\n50%\r100%\n"));
    act(() => view.querySelector<HTMLButtonElement>("[data-testid=log-copy]")!.click());
    await settled();
    expect(writeText).toHaveBeenCalledWith("ok one\n100%");
    expect(view.querySelector("[data-testid=log-status]")!.textContent).toContain("Copied 2 lines");
  });

  it("saves through the caller, and offers no Save without one", async () => {
    const onSave = vi.fn();
    const { view } = await show(new MemoryLog("x\n"), onSave);
    act(() => view.querySelector<HTMLButtonElement>("[data-testid=log-save]")!.click());
    expect(onSave).toHaveBeenCalledOnce();
    act(() => mounted!.root.unmount());
    mounted = null;
    expect((await show(new MemoryLog("x\n"))).view.querySelector("[data-testid=log-save]")).toBeNull();
  });

  it("starts afresh with another source", async () => {
    const first = new MemoryLog("first attempt\n");
    const shown = await show(first);
    const second = new MemoryLog("second attempt\n");
    shown.render({ source: second });
    await settled();
    expect(shown.rows()).toEqual(["(start of log)", "second attempt"]);
    expect(second.reads).toEqual([{ offset: -1, limit: CHUNK }]);
  });

  it("offers to follow again once scrolled up, and goes back to the end", async () => {
    const log = new MemoryLog(numberedLines(5_000));
    const shown = await show(log);
    expect(shown.view.querySelector("[data-testid=log-follow]")).toBeNull();
    act(() => {
      shown.scroller.scrollTop = 1_000;
      shown.scroller.dispatchEvent(new Event("scroll"));
    });
    const follow = shown.view.querySelector<HTMLButtonElement>("[data-testid=log-follow]")!;
    // Lines written while scrolled up are read, and the view stays where it is.
    shown.render({ grew: { fileSize: log.write("line 5001\n") } });
    await settled();
    expect(shown.scroller.scrollTop).toBe(1_000);
    act(() => follow.click());
    await settled();
    expect(shown.rows().at(-1)).toBe("line 5001");
    expect(shown.view.querySelector("[data-testid=log-follow]")).toBeNull();
  });
});
