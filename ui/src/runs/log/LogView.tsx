// One attempt's log as a terminal shows it: colours, the tail followed live, earlier output read
// as the user scrolls up, search, copy and save. It knows nothing of Tauri: it reads through a
// `LogSource`, and its reader (reader.ts) decides what to read and when.
//
// Rows have one fixed height, so the view places them by arithmetic and draws only those in view
// and a margin around them: a log of 50,000 held lines costs the DOM a hundred rows. Row 0 is the
// top of the log (its start, or the way to earlier output); row i + 1 is held line i. A line is
// styled when it is drawn, from its raw text and the style it enters in.
//
// While the view is scrolled to the bottom it stays there as lines arrive. Elsewhere it keeps the
// line at its top in place when lines come or go above it: it remembers that line's byte offset,
// which no prepending or dropping changes.
import {
  useEffect,
  useLayoutEffect,
  useMemo,
  useRef,
  useState,
  type JSX,
  type KeyboardEvent,
  type ReactNode,
} from "react";
import { useStore } from "zustand";
import { plainText, spanCss, styleLine, type Style } from "./ansi";
import { lineAt } from "./lines";
import { createLogReader, type Growth, type LogSource } from "./reader";
import { findMatches, firstMatchFrom, type Match } from "./search";
import "./log.css";

export type { LogSource } from "./reader";

export type LogViewProps = {
  /** Where the log is read; another source (another attempt) starts the view afresh. */
  source: LogSource;
  /** What the latest `log_grew` event announced (null before any): what is new is shown when following. */
  grew: Growth | null;
  /** Saves the whole file (through a native dialog); the Save button shows only with it. */
  onSave?: () => void;
  /** The attempt has ended: the log is not live any more, whatever the last read found. */
  ended?: boolean;
};

/** The height of every row in pixels; log.css gives rows the same. */
export const LINE_HEIGHT = 18;
/** Rows drawn beyond each edge of the viewport, so that a quick scroll shows no blank rows. */
const OVERSCAN = 30;
/** The viewport's height when it cannot be measured (before layout, or in a DOM without layout). */
const FALLBACK_HEIGHT = 600;
/** Scrolling this close to the top reads the earlier window, before the user reaches it. */
const EARLIER_WITHIN = 40 * LINE_HEIGHT;

export function LogView({ source, grew, onSave, ended = false }: LogViewProps): JSX.Element {
  const reader = useMemo(() => createLogReader(source), [source]);
  const lines = useStore(reader, (s) => s.lines);
  const fileSize = useStore(reader, (s) => s.fileSize);
  const running = useStore(reader, (s) => s.running);
  const tailing = useStore(reader, (s) => s.tailing);
  const reading = useStore(reader, (s) => s.reading);
  const error = useStore(reader, (s) => s.error);

  useEffect(() => reader.getState().open(), [reader]);
  // Before the frame is painted, not after: the read it may start is on its way a frame sooner.
  useLayoutEffect(() => {
    if (grew) reader.getState().announce(grew.fileSize, grew.carried);
  }, [reader, grew]);

  const scroller = useRef<HTMLDivElement>(null);
  const searchField = useRef<HTMLInputElement>(null);
  const [scrollTop, setScrollTop] = useState(0);
  const [height, setHeight] = useState(FALLBACK_HEIGHT);
  const [pinned, setPinned] = useState(true);
  /** The line at the top of the viewport (its byte offset) and how far the viewport is below its row. */
  const anchor = useRef<{ at: number; offset: number } | null>(null);

  const held = lines?.lines ?? [];
  const total = (held.length + 1) * LINE_HEIGHT;

  useLayoutEffect(() => {
    const element = scroller.current;
    if (!element) return;
    const measure = () => setHeight(element.clientHeight || FALLBACK_HEIGHT);
    measure();
    if (typeof ResizeObserver === "undefined") return;
    const observer = new ResizeObserver(measure);
    observer.observe(element);
    return () => observer.disconnect();
  }, []);

  // After lines came or went: back to the bottom when following, else the same line on top.
  useLayoutEffect(() => {
    const element = scroller.current;
    if (!element || !lines) return;
    if (pinned && tailing) element.scrollTop = Math.max(0, total - height);
    else if (anchor.current) {
      const line = Math.max(0, lineAt(lines, anchor.current.at));
      element.scrollTop = Math.max(0, (line + 1) * LINE_HEIGHT + anchor.current.offset);
    }
    setScrollTop(element.scrollTop);
    // Only a change of the held lines moves the view here; the other values are read as they are.
  }, [lines]);

  function onScroll() {
    const element = scroller.current;
    if (!element) return;
    const top = element.scrollTop;
    setScrollTop(top);
    setPinned(top + height >= total - LINE_HEIGHT);
    if (held.length > 0) {
      const line = Math.min(Math.max(0, Math.floor(top / LINE_HEIGHT) - 1), held.length - 1);
      anchor.current = { at: held[line]!.at, offset: top - (line + 1) * LINE_HEIGHT };
    }
    if (top < EARLIER_WITHIN && lines?.before && reading === null) reader.getState().loadEarlier();
  }

  function scrollTo(top: number) {
    const element = scroller.current;
    if (!element) return;
    element.scrollTop = Math.max(0, Math.min(top, total - height));
    onScroll();
  }

  function jumpToEnd() {
    setPinned(true);
    reader.getState().toTail();
    scrollTo(total);
  }

  // Search: the current match is known by its line's byte offset, so it stays the same match
  // when lines are put before it.
  const [query, setQuery] = useState("");
  const [current, setCurrent] = useState<{ at: number; from: number } | null>(null);
  const { matches, capped } = useMemo(() => findMatches(held, query), [held, query]);
  const currentIndex = current
    ? matches.findIndex((m) => held[m.line]!.at === current.at && m.from === current.from)
    : -1;

  function go(step: 1 | -1) {
    if (matches.length === 0) return;
    const firstInView = Math.max(0, Math.floor(scrollTop / LINE_HEIGHT) - 1);
    const next =
      currentIndex === -1
        ? firstMatchFrom(matches, firstInView) % matches.length
        : (currentIndex + step + matches.length) % matches.length;
    const match = matches[next]!;
    setCurrent({ at: held[match.line]!.at, from: match.from });
    setPinned(false);
    scrollTo((match.line + 1) * LINE_HEIGHT - height / 2);
  }

  function onKeyDown(event: KeyboardEvent<HTMLDivElement>) {
    const typing = event.target instanceof HTMLInputElement;
    if ((event.ctrlKey || event.metaKey) && event.key.toLowerCase() === "f") {
      event.preventDefault();
      searchField.current?.focus();
      searchField.current?.select();
    } else if (!typing && !event.ctrlKey && !event.metaKey && !event.altKey && (event.key === "n" || event.key === "N")) {
      event.preventDefault();
      go(event.key === "n" ? 1 : -1);
    }
  }

  function onSearchKeyDown(event: KeyboardEvent<HTMLInputElement>) {
    if (event.key === "Enter") {
      event.preventDefault();
      go(event.shiftKey ? -1 : 1);
    } else if (event.key === "Escape") {
      event.currentTarget.closest<HTMLElement>("[data-testid=log-view]")?.focus();
    }
  }

  const [notice, setNotice] = useState<string | null>(null);
  useEffect(() => {
    if (notice === null) return;
    const timer = setTimeout(() => setNotice(null), 3_000);
    return () => clearTimeout(timer);
  }, [notice]);

  function copyAll() {
    const text = held.map((line) => plainText(line.raw)).join("\n");
    const written = navigator.clipboard?.writeText(text);
    if (!written) return setNotice("The clipboard cannot be written here");
    written.then(
      () => setNotice(`Copied ${count(held.length, "line")}`),
      () => setNotice("The clipboard refused the text"),
    );
  }

  const firstRow = Math.max(0, Math.floor(scrollTop / LINE_HEIGHT) - OVERSCAN);
  const lastRow = Math.min(held.length + 1, Math.ceil((scrollTop + height) / LINE_HEIGHT) + OVERSCAN);
  const rows: ReactNode[] = [];
  let nextMatch = firstMatchFrom(matches, Math.max(0, firstRow - 1));
  for (let row = firstRow; row < lastRow; row++) {
    if (row === 0) {
      rows.push(<LogTop key="top" before={lines?.before ?? false} reading={reading} onLoad={() => reader.getState().loadEarlier()} />);
      continue;
    }
    const index = row - 1;
    const line = held[index]!;
    const ranges: Match[] = [];
    while (nextMatch < matches.length && matches[nextMatch]!.line === index) ranges.push(matches[nextMatch++]!);
    rows.push(
      <div className="log-line" key={line.at}>
        {drawLine(line.raw, line.entry, ranges, currentIndex === -1 ? null : matches[currentIndex]!)}
      </div>,
    );
  }

  const unsearched = [lines?.before && "earlier", !tailing && "later"].filter(Boolean).join(" and ");
  return (
    <div
      className="log-view"
      data-testid="log-view"
      data-lines={held.length}
      data-start={lines?.start ?? 0}
      data-end={lines?.end ?? 0}
      tabIndex={0}
      onKeyDown={onKeyDown}
    >
      <div className="log-toolbar">
        <input
          ref={searchField}
          className="log-search"
          data-testid="log-search"
          type="search"
          placeholder="Search (Ctrl+F)"
          value={query}
          onChange={(event) => {
            setQuery(event.target.value);
            setCurrent(null);
          }}
          onKeyDown={onSearchKeyDown}
        />
        {query !== "" && (
          <span className="log-count" data-testid="log-search-count">
            {matches.length === 0
              ? "no match"
              : `${currentIndex === -1 ? "" : `${currentIndex + 1}/`}${matches.length}${capped ? "+" : ""}`}
            {lines && unsearched !== "" && ` in the loaded part (${unsearched} bytes not searched)`}
          </span>
        )}
        <button type="button" title="Previous match (Shift+Enter, N)" disabled={matches.length === 0} onClick={() => go(-1)}>
          ↑
        </button>
        <button type="button" title="Next match (Enter, n)" disabled={matches.length === 0} onClick={() => go(1)}>
          ↓
        </button>
        <span className="log-toolbar-gap" />
        {(!pinned || !tailing) && (
          <button type="button" data-testid="log-follow" onClick={jumpToEnd}>
            Follow ⤓
          </button>
        )}
        <button type="button" data-testid="log-copy" title="Copy all loaded text" disabled={held.length === 0} onClick={copyAll}>
          Copy
        </button>
        {onSave && (
          <button type="button" data-testid="log-save" title="Save the whole log to a file" onClick={onSave}>
            Save…
          </button>
        )}
      </div>
      <div className="log-scroll" ref={scroller} onScroll={onScroll}>
        {lines === null ? (
          <div className="log-note">{error ?? "Reading the log…"}</div>
        ) : (
          <div className="log-rows" style={{ height: total }}>
            <div className="log-window" style={{ top: firstRow * LINE_HEIGHT }}>
              {rows}
            </div>
          </div>
        )}
      </div>
      <div className="log-status" data-testid="log-status">
        {lines && (
          <span>
            {formatBytes(lines.end - lines.start)} of {formatBytes(Math.max(fileSize, lines.end))} loaded
          </span>
        )}
        {running && !ended && <span className="log-live">live</span>}
        {lines && !tailing && <span>not following new output</span>}
        {lines && error && <span className="log-error">{error}</span>}
        {notice && <span>{notice}</span>}
      </div>
    </div>
  );
}

/** The first row: the start of the log, or the way to what lies before the held lines. */
function LogTop({ before, reading, onLoad }: { before: boolean; reading: string | null; onLoad: () => void }) {
  if (!before) return <div className="log-line log-start">(start of log)</div>;
  return (
    <div className="log-line">
      <button type="button" className="log-earlier" data-testid="log-earlier" disabled={reading === "earlier"} onClick={onLoad}>
        {reading === "earlier" ? "Reading earlier output…" : "↑ Earlier output"}
      </button>
    </div>
  );
}

/** A line's styled spans, with the search matches `ranges` (in its shown text) marked. */
function drawLine(raw: string, entry: Style, ranges: Match[], current: Match | null): ReactNode[] {
  const drawn: ReactNode[] = [];
  let position = 0;
  let range = 0;
  for (const span of styleLine(raw, entry).spans) {
    const css = spanCss(span.style);
    const end = position + span.text.length;
    let at = position;
    while (at < end) {
      while (range < ranges.length && ranges[range]!.to <= at) range++;
      const next = ranges[range];
      const inside = next !== undefined && next.from <= at;
      const stop = Math.min(end, inside ? next.to : (next?.from ?? end));
      const text = span.text.slice(at - position, stop - position);
      drawn.push(
        inside ? (
          <mark key={drawn.length} className={next === current ? "log-match current" : "log-match"}>
            <span style={css}>{text}</span>
          </mark>
        ) : (
          <span key={drawn.length} style={css}>
            {text}
          </span>
        ),
      );
      at = stop;
    }
    position = end;
  }
  return drawn;
}

function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
}

function count(n: number, noun: string): string {
  return `${n.toLocaleString("en")} ${noun}${n === 1 ? "" : "s"}`;
}
