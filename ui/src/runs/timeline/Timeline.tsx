// The run timeline: every attempt of a session as a bar on a time axis, one row per task, grouped
// by blueprint instance, over bands that tell apart the iterations of the scopes that looped (the
// instance's header marks where each starts). It is one canvas, because a DOM of 10,000 bars
// cannot pan smoothly; the view (zoom, pan, scroll) lives in a ref and a change to it asks for one
// animation frame, so panning never re-renders React. The selection is the caller's, shared with
// the graph and the details panel: a click or an arrow key asks for a new one, and one chosen
// elsewhere is scrolled into view. What is where comes from model.ts; draw.ts paints it.
import {
  useCallback,
  useEffect,
  useLayoutEffect,
  useRef,
  useState,
  type JSX,
  type KeyboardEvent,
  type PointerEvent,
  type ReactNode,
} from "react";
import type { Attempt } from "../../backend/generated";
import { AXIS_HEIGHT, FALLBACK_PALETTE, LABEL_WIDTH, paint, readPalette, type Palette } from "./draw";
import {
  ROW_HEIGHT,
  clampView,
  describeBar,
  fitView,
  followView,
  hitTest,
  modelOf,
  navigate,
  refKey,
  revealBar,
  toRef,
  xToTime,
  zoomAt,
  type AttemptRef,
  type Bar,
  type TimelineModel,
  type View,
} from "./model";
import { againstUsual, type TimelineTiming } from "../timeLeft";
import "./timeline.css";

export type { AttemptRef } from "./model";

export type TimelineProps = {
  /** Every attempt of the session, in start order. */
  attempts: Attempt[];
  /** The current time: running attempts reach it. */
  nowMs: number;
  selected: AttemptRef | null;
  onSelect(ref: AttemptRef | null): void;
  /** Whether the session still runs: the view then follows its latest time until the user moves it. */
  live: boolean;
  /** Its critical path and its tasks slower than usual, marked on their rows. */
  timing?: TimelineTiming | null;
  /** Time travel's moment: the run is drawn as it stood then. */
  cursorMs?: number | null;
  /** Asks for another moment: a press or a drag on the axis while travelling. */
  onCursor?(at: number): void;
  /** More buttons for the toolbar. */
  toolbar?: ReactNode;
};

/** A pointer that moves less than this between press and release has clicked, not dragged. */
const DRAG_THRESHOLD_PX = 3;
/** A live session is shown at least this long, so that a young one grows into the view rather than filling it at once. */
const LIVE_MIN_SPAN_MS = 60_000;
/** How much one button press or key zooms. */
const ZOOM_STEP = 1.5;
/** How much a pixel of wheel zooms: a notch of a mouse wheel (about 100) is a step of about 1.2. */
const WHEEL_ZOOM_PER_PX = 0.0018;

type Drag = { x: number; y: number; t0: number; scrollTop: number; moved: boolean; cursor: boolean };
type Hover = { bar: Bar; x: number; y: number };

/** What the frame callback reads: the props of the latest render. */
type Latest = {
  model: TimelineModel;
  nowMs: number;
  selected: AttemptRef | null;
  live: boolean;
  timing: TimelineTiming | null;
  cursor: number | null;
};

function summary(model: TimelineModel): string {
  const running = model.running > 0 ? `, ${model.running} running` : "";
  const untimed = model.untimed > 0 ? `; ${model.untimed} more ran before Orrery followed, their times unknown` : "";
  return `Timeline of ${model.attempts} attempts of ${model.tasks} tasks in ${model.instances} blueprint instances${running}${untimed}`;
}

/** What a bar's tooltip adds about its task's time: on the critical path, slower than usual. */
function timingLines(timing: TimelineTiming | null, node: string): string[] {
  const slow = timing?.slow.get(node);
  const usual = slow ? againstUsual(slow) : null;
  return [timing?.critical.has(node) ? "on the critical path" : null, usual ? `slower than usual (${usual})` : null].filter(
    (line): line is string => line !== null,
  );
}

/** The latest attempt of a task's row. */
function latestRef(model: TimelineModel, node: string): AttemptRef | null {
  for (const row of model.rows) if (row.kind === "task" && row.node === node) return toRef(row.bars[row.bars.length - 1]!);
  return null;
}

/** What the rows' marks mean, and the tasks they mark, each a click from its attempt. */
function TimingLegend({ timing, onSelect }: { timing: TimelineTiming; onSelect(node: string): void }) {
  const slow = [...timing.slow.values()];
  return (
    <span className="timeline-timing">
      {timing.critical.size > 0 && (
        <span className="critical" data-testid="critical-path" data-nodes={[...timing.critical].join(" ")} title={[...timing.critical].join(" → ")}>
          critical path: {timing.critical.size} task{timing.critical.size === 1 ? "" : "s"}
        </span>
      )}
      {slow.length > 0 && (
        <span className="slow" data-testid="slow-tasks" data-nodes={slow.map((t) => t.node).join(" ")}>
          slower than usual:{" "}
          {slow.map((t, i) => (
            <span key={t.node}>
              {i > 0 && ", "}
              <button type="button" className="link" onClick={() => onSelect(t.node)} title={againstUsual(t) ?? undefined}>
                {t.node}
              </button>
            </span>
          ))}
        </span>
      )}
    </span>
  );
}

export function Timeline({
  attempts,
  nowMs,
  selected,
  onSelect,
  live,
  timing = null,
  cursorMs = null,
  onCursor,
  toolbar,
}: TimelineProps): JSX.Element {
  // Built once per list of attempts, and shared with the details panel.
  const model = modelOf(attempts);
  const rootRef = useRef<HTMLDivElement>(null);
  const canvasRef = useRef<HTMLCanvasElement>(null);
  const latest = useRef<Latest>({ model, nowMs, selected, live, timing, cursor: cursorMs });
  const view = useRef<View | null>(null);
  const size = useRef({ width: 0, height: 0 });
  const palette = useRef<Palette>(FALLBACK_PALETTE);
  const frame = useRef(0);
  const drag = useRef<Drag | null>(null);
  // In a ref for the frame callback, and in state for the button that shows it.
  const following = useRef(true);
  const [follow, setFollowState] = useState(true);
  const [hover, setHover] = useState<Hover | null>(null);

  const draw = useCallback(() => {
    const root = rootRef.current;
    const canvas = canvasRef.current;
    if (!root || !canvas) return;
    const { model, nowMs, selected, live, timing, cursor } = latest.current;
    const { width, height } = size.current;
    const area = { width: width - LABEL_WIDTH, height: height - AXIS_HEIGHT };
    if (area.width <= 0 || area.height <= 0) {
      root.dataset.bars = "0";
      return;
    }
    let next: View = view.current
      ? { ...view.current, ...area }
      : fitView(model, { t0: 0, msPerPx: 1, scrollTop: 0, ...area }, nowMs, live ? LIVE_MIN_SPAN_MS : 0);
    next = clampView(model, next, nowMs);
    // Followed at the zoom it is drawn at: placed at a live run's minimum span first, then zoomed
    // in, a young run's start landed at the right edge.
    if (live && following.current) next = clampView(model, followView(model, next, nowMs), nowMs);
    // A view made before any attempt has no time to keep: the first attempts get a fitted one.
    if (model.attempts > 0) view.current = next;

    const dpr = window.devicePixelRatio || 1;
    const backing = { width: Math.round(width * dpr), height: Math.round(height * dpr) };
    if (canvas.width !== backing.width || canvas.height !== backing.height) {
      canvas.width = backing.width;
      canvas.height = backing.height;
    }
    const bar = selected ? (model.byRef.get(refKey(selected)) ?? null) : null;
    const scene = { model, view: next, nowMs, selected: bar, palette: palette.current, live, marks: timing, cursor, width, height, dpr };
    root.dataset.bars = String(paint(canvas.getContext("2d"), scene));
    root.dataset.cursor = cursor === null ? "" : String(cursor);
  }, []);

  const requestDraw = useCallback(() => {
    if (frame.current) return;
    frame.current = requestAnimationFrame(() => {
      frame.current = 0;
      draw();
    });
  }, [draw]);

  const setFollow = useCallback(
    (on: boolean) => {
      following.current = on;
      setFollowState(on);
      requestDraw();
    },
    [requestDraw],
  );

  /** Changes the view (a pan, a zoom, a scroll), which stops following the latest time when it moves the time. */
  const moveView = useCallback(
    (change: (current: View) => View) => {
      const current = view.current;
      if (!current) return;
      const { model, nowMs } = latest.current;
      const next = clampView(model, change(current), nowMs);
      if (next.t0 !== current.t0 || next.msPerPx !== current.msPerPx) setFollow(false);
      view.current = next;
      requestDraw();
    },
    [requestDraw, setFollow],
  );

  useLayoutEffect(() => {
    const wasLive = latest.current.live;
    latest.current = { model, nowMs, selected, live, timing, cursor: cursorMs };
    // A run that ends while followed is shown whole; one that runs again is followed again.
    if (wasLive && !live && following.current && view.current) view.current = fitView(model, view.current, nowMs);
    if (!wasLive && live) setFollow(true);
    requestDraw();
  }, [model, nowMs, selected, live, timing, cursorMs, requestDraw, setFollow]);

  useEffect(() => () => cancelAnimationFrame(frame.current), []);

  // The canvas's size: measured on mount and whenever its box changes (the window, the panel's split).
  useEffect(() => {
    const canvas = canvasRef.current!;
    const measure = () => {
      const box = canvas.getBoundingClientRect();
      size.current = { width: box.width, height: box.height };
      requestDraw();
    };
    measure();
    if (typeof ResizeObserver === "undefined") return;
    const observer = new ResizeObserver(measure);
    observer.observe(canvas);
    return () => observer.disconnect();
  }, [requestDraw]);

  // The colours: read again when the system switches between light and dark.
  useEffect(() => {
    const root = rootRef.current!;
    const read = () => {
      palette.current = readPalette(root);
      requestDraw();
    };
    read();
    if (typeof window.matchMedia !== "function") return;
    const scheme = window.matchMedia("(prefers-color-scheme: dark)");
    scheme.addEventListener("change", read);
    return () => scheme.removeEventListener("change", read);
  }, [requestDraw]);

  // A selection made elsewhere (the graph, the details panel, the arrow keys) comes into view. Only
  // a new selection does: new attempts or a new object for the same one must not undo a pan.
  const selectedKey = selected ? refKey(selected) : null;
  useEffect(() => {
    const bar = selectedKey === null ? undefined : latest.current.model.byRef.get(selectedKey);
    if (bar) moveView((current) => revealBar(current, bar, latest.current.nowMs));
  }, [selectedKey, moveView]);

  /** A pointer's place on the canvas, in CSS pixels from its top left corner. */
  const local = (event: { clientX: number; clientY: number }) => {
    const box = canvasRef.current!.getBoundingClientRect();
    return { x: event.clientX - box.left, y: event.clientY - box.top };
  };

  const barAt = (x: number, y: number): Bar | null => {
    if (!view.current || x < LABEL_WIDTH || y < AXIS_HEIGHT) return null;
    const { model, nowMs } = latest.current;
    return hitTest(model, view.current, x - LABEL_WIDTH, y - AXIS_HEIGHT, nowMs);
  };

  // The wheel needs a listener that may cancel the page's scroll, which React's (passive) one may not.
  useEffect(() => {
    const canvas = canvasRef.current!;
    const onWheel = (event: WheelEvent) => {
      if (!view.current) return;
      event.preventDefault();
      const lines = event.deltaMode === WheelEvent.DOM_DELTA_LINE ? ROW_HEIGHT : 1;
      const dx = event.deltaX * lines;
      const dy = event.deltaY * lines;
      const { x, y } = local(event);
      if (event.ctrlKey || event.metaKey || y < AXIS_HEIGHT) {
        moveView((current) => zoomAt(current, Math.max(0, x - LABEL_WIDTH), Math.exp(dy * WHEEL_ZOOM_PER_PX)));
      } else if (event.shiftKey) {
        moveView((current) => ({ ...current, t0: current.t0 + (dx || dy) * current.msPerPx }));
      } else {
        moveView((current) => ({ ...current, t0: current.t0 + dx * current.msPerPx, scrollTop: current.scrollTop + dy }));
      }
      setHover(null);
    };
    canvas.addEventListener("wheel", onWheel, { passive: false });
    return () => canvas.removeEventListener("wheel", onWheel);
  }, [moveView]);

  const onPointerDown = (event: PointerEvent<HTMLCanvasElement>) => {
    if (event.button !== 0 || !view.current) return;
    rootRef.current!.focus({ preventScroll: true });
    const { x, y } = local(event);
    // Travelling, the axis is the scrubber: a press there moves the moment, a drag drags it.
    const cursor = onCursor !== undefined && y < AXIS_HEIGHT && x >= LABEL_WIDTH;
    drag.current = { x, y, t0: view.current.t0, scrollTop: view.current.scrollTop, moved: false, cursor };
    if (cursor) onCursor(xToTime(view.current, x - LABEL_WIDTH));
    event.currentTarget.setPointerCapture?.(event.pointerId);
  };

  const onPointerMove = (event: PointerEvent<HTMLCanvasElement>) => {
    const { x, y } = local(event);
    const pressed = drag.current;
    if (!pressed) {
      const bar = barAt(x, y);
      setHover(bar ? { bar, x, y } : null);
      return;
    }
    if (pressed.cursor) {
      pressed.moved = true;
      if (view.current) onCursor?.(xToTime(view.current, Math.max(0, x - LABEL_WIDTH)));
      return;
    }
    const dx = x - pressed.x;
    const dy = y - pressed.y;
    if (!pressed.moved && Math.abs(dx) + Math.abs(dy) < DRAG_THRESHOLD_PX) return;
    pressed.moved = true;
    setHover(null);
    moveView((current) => ({ ...current, t0: pressed.t0 - dx * current.msPerPx, scrollTop: pressed.scrollTop - dy }));
  };

  const onPointerUp = (event: PointerEvent<HTMLCanvasElement>) => {
    const pressed = drag.current;
    drag.current = null;
    if (!pressed || pressed.moved || pressed.cursor) return;
    const { x, y } = local(event);
    if (y < AXIS_HEIGHT) return;
    if (x >= LABEL_WIDTH) {
      const bar = barAt(x, y);
      onSelect(bar ? toRef(bar) : null);
      return;
    }
    // A task's label selects its latest attempt.
    const row = latest.current.model.rows[Math.floor((y - AXIS_HEIGHT + (view.current?.scrollTop ?? 0)) / ROW_HEIGHT)];
    if (row?.kind === "task") onSelect(toRef(row.bars[row.bars.length - 1]!));
  };

  const zoomBy = (factor: number) => moveView((current) => zoomAt(current, current.width / 2, factor));

  const fit = () => {
    const { model, nowMs, live } = latest.current;
    moveView((current) => fitView(model, current, nowMs, live ? LIVE_MIN_SPAN_MS : 0));
    // The whole session holds its latest time: a live one goes on following it.
    if (live) setFollow(true);
  };

  const onKeyDown = (event: KeyboardEvent<HTMLDivElement>) => {
    // Keys on the toolbar's buttons are theirs (Enter presses them).
    if (event.target !== event.currentTarget) return;
    const { model } = latest.current;
    switch (event.key) {
      case "ArrowLeft":
      case "ArrowRight":
      case "ArrowUp":
      case "ArrowDown": {
        const next = navigate(model, selected, event.key);
        if (next && (!selected || refKey(next) !== refKey(selected))) onSelect(next);
        break;
      }
      case "Enter": {
        // Enter shows the selected attempt (centred if it is out of view), or picks the first one.
        const bar = selected ? model.byRef.get(refKey(selected)) : undefined;
        if (bar) moveView((current) => revealBar(current, bar, latest.current.nowMs));
        else {
          const first = navigate(model, null, "ArrowRight");
          if (first) onSelect(first);
        }
        break;
      }
      case "Escape":
        if (!selected) return;
        onSelect(null);
        break;
      case "+":
      case "=":
        zoomBy(1 / ZOOM_STEP);
        break;
      case "-":
        zoomBy(ZOOM_STEP);
        break;
      default:
        return;
    }
    event.preventDefault();
  };

  const label = summary(model);
  return (
    <div
      ref={rootRef}
      className="timeline"
      data-testid="timeline"
      data-selected={selectedKey ?? ""}
      tabIndex={0}
      aria-label="Run timeline: the arrow keys move the selected attempt, Escape clears it, + and − zoom"
      onKeyDown={onKeyDown}
    >
      <div className="timeline-toolbar">
        <button type="button" onClick={() => zoomBy(ZOOM_STEP)} aria-label="Zoom out" title="Zoom out (−)">
          −
        </button>
        <button type="button" onClick={() => zoomBy(1 / ZOOM_STEP)} aria-label="Zoom in" title="Zoom in (+)">
          +
        </button>
        <button type="button" onClick={fit} title="Show the whole session">
          Fit
        </button>
        {live && (
          <button
            type="button"
            aria-pressed={follow}
            className={follow ? "on" : undefined}
            onClick={() => setFollow(!follow)}
            title="Keep the latest time in view"
          >
            Follow
          </button>
        )}
        <span className="timeline-summary">
          {model.attempts} attempts · {model.tasks} tasks
          {model.running > 0 ? ` · ${model.running} running` : ""}
          {model.untimed > 0 && (
            <span title="The server keeps no task times: these ran there before Orrery followed the session">
              {` · ${model.untimed} not drawn (times unknown)`}
            </span>
          )}
        </span>
        {toolbar}
        {timing && <TimingLegend timing={timing} onSelect={(node) => onSelect(latestRef(model, node))} />}
      </div>
      <div className="timeline-body">
        <canvas
          ref={canvasRef}
          role="img"
          aria-label={label}
          onPointerDown={onPointerDown}
          onPointerMove={onPointerMove}
          onPointerUp={onPointerUp}
          onPointerCancel={() => (drag.current = null)}
          onPointerLeave={() => setHover(null)}
        />
        {hover && (
          <div
            className="timeline-tooltip"
            role="tooltip"
            style={
              hover.x > size.current.width / 2
                ? { right: size.current.width - hover.x + 12, top: hover.y + 12 }
                : { left: hover.x + 12, top: hover.y + 12 }
            }
          >
            {[...describeBar(model, hover.bar, nowMs), ...timingLines(timing, hover.bar.attempt.node)].map((line, i) => (
              <div key={i} className={i === 0 ? "title" : undefined}>
                {line}
              </div>
            ))}
          </div>
        )}
      </div>
    </div>
  );
}
