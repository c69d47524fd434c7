// Reading one attempt's log into the viewer, window by window: the tail when it opens, what the
// task writes next while it runs, and earlier windows as the user scrolls up. A store per log
// (zustand), so the view only draws what it holds.
//
// One read is in flight at a time, whatever asks for it: answers then arrive in the order they
// were asked, and appended text always continues where the held range ends. Announcements that
// the file grew only raise the size to read up to; however many arrive during a read, the next
// read starts from where the last one ended, in windows of at most `chunk` bytes, until the
// announced size is reached. Nothing ever reads the whole file: a 100 MB log opens with one
// window, and what is held stays within `limits`.
import { createStore, type StoreApi } from "zustand/vanilla";
import type { Window } from "../../backend/generated";
import { append, DEFAULT_LIMITS, dropFromEnd, dropFromStart, fromWindow, prepend, utf8Prefix, type Limits, type Lines } from "./lines";

/** Where a log viewer reads its log: the backend's `read_attempt_log` for one attempt, or a fake. */
export interface LogSource {
  /** The bytes from `offset` on (-1: the last ones), `limit` at most, whole characters only. */
  read(offset: number, limit: number): Promise<{ window: Window; running: boolean }>;
}

export type Reading = "tail" | "next" | "earlier";

/** What a `log_grew` event says: the file's size, and small growth's text from where it starts. */
export type Growth = { fileSize: number; carried?: { from: number; text: string } };

export type LogReaderState = {
  /** What is held; null until the tail was read. */
  lines: Lines | null;
  /** The file's size as last read or announced. */
  fileSize: number;
  /** Whether the attempt still runs, as of the last read. */
  running: boolean;
  /**
   * Whether the held range ends where the file ends, so what the task writes next is appended.
   * It stops when reading far above dropped the end, until the user goes back to the tail.
   */
  tailing: boolean;
  /** The read in flight. */
  reading: Reading | null;
  /** Why the last read failed; cleared by the next one that succeeds. */
  error: string | null;
  /** Reads the tail; until it is read, each announcement tries again. */
  open(): void;
  /**
   * Says that the file has grown to `fileSize` bytes: what is new is read when tailing, or taken
   * from `carried` when it continues the held range.
   */
  announce(fileSize: number, carried?: Growth["carried"]): void;
  /** Reads the window before the held range, when there is one. */
  loadEarlier(): void;
  /** Goes back to the tail: reads it afresh when the held range no longer reaches it. */
  toTail(): void;
};

export type LogReader = StoreApi<LogReaderState>;

/** The most a window can hold (the backend clamps its limit to 262,144 bytes). */
export const CHUNK = 256 * 1024;

export function createLogReader(source: LogSource, limits: Limits = DEFAULT_LIMITS, chunk = CHUNK): LogReader {
  let opened = false;
  let inFlight = false;
  let wantTail = false;
  let wantEarlier = false;
  /** Whether a read at the end should check that the file still holds what is held. */
  let check = false;
  /** The largest size announced since the read in flight was asked for. */
  let announcedDuringRead = 0;
  /** How far to read: the file's size as last read, raised by announcements. */
  let target = 0;

  const store = createStore<LogReaderState>()((set, get) => {
    /** Starts the next read that is wanted, unless one is in flight. */
    function pump() {
      if (inFlight) return;
      const { lines, tailing } = get();
      let kind: Reading;
      let offset: number;
      let limit = chunk;
      if (wantTail || lines === null) {
        if (!opened) return;
        kind = "tail";
        offset = -1;
      } else if (wantEarlier && lines.before) {
        kind = "earlier";
        offset = Math.max(0, lines.start - chunk);
        limit = lines.start - offset;
      } else if (tailing && (lines.end < target || check)) {
        kind = "next";
        offset = lines.end;
        check = false;
      } else {
        return;
      }
      if (kind === "tail") wantTail = false;
      if (kind === "earlier") wantEarlier = false;
      inFlight = true;
      announcedDuringRead = 0;
      set({ reading: kind });
      source.read(offset, limit).then(
        ({ window, running }) => {
          inFlight = false;
          target = Math.max(window.file_size, announcedDuringRead);
          set({ reading: null, error: null, running, ...take(kind, window) });
          set({ fileSize: Math.max(target, get().lines?.end ?? 0) });
          pump();
        },
        (error: unknown) => {
          inFlight = false;
          // No retry by itself: the next announcement or scroll asks again.
          set({ reading: null, error: error instanceof Error ? error.message : String(error) });
        },
      );
    }

    /** What a window answered for a read of `kind` changes in the state. */
    function take(kind: Reading, window: Window): Partial<LogReaderState> {
      const lines = get().lines;
      const tail = (): Partial<LogReaderState> => ({
        lines: dropFromStart(fromWindow(window.content, window.start_offset, window.has_more_before), limits),
        tailing: true,
      });
      // A window read past the end is the tail of a file truncated or replaced: start afresh.
      if (kind === "tail" || lines === null || window.reset) return tail();
      const again = () => {
        wantTail = true;
        return {};
      };
      // A file now smaller than what is held, or a window not where it was asked for, means the
      // file changed under the held range: its tail is read afresh.
      if (window.file_size < lines.end) return again();
      if (kind === "next") {
        if (window.start_offset !== lines.end) return again();
        if (window.next_offset === lines.end) {
          // Nothing new yet (a character still being written is held back): wait for the next announcement.
          target = lines.end;
          return {};
        }
        return { lines: dropFromStart(append(lines, window.content), limits) };
      }
      if (window.start_offset > lines.start || window.next_offset < lines.start) return again();
      // The backend reads 1,024 bytes at least: near the start of the file the window runs into
      // the held range, whose bytes are not taken twice.
      const content = utf8Prefix(window.content, lines.start - window.start_offset);
      const joined = prepend(lines, content, window.start_offset, window.has_more_before);
      const kept = dropFromEnd(joined, limits);
      return { lines: kept, tailing: get().tailing && kept.end === joined.end };
    }

    return {
      lines: null,
      fileSize: 0,
      running: false,
      tailing: true,
      reading: null,
      error: null,
      open() {
        // Opening twice (as React's strict mode runs effects twice) reads the tail once.
        opened = true;
        pump();
      },
      announce(fileSize, carried) {
        const held = get().lines;
        // Carried text that continues the held range needs no read. Not while one is in flight:
        // its answer continues from where the range ended when it was asked.
        if (carried && held && !inFlight && get().tailing && carried.from === held.end) {
          set({ lines: dropFromStart(append(held, carried.text), limits) });
        }
        announcedDuringRead = Math.max(announcedDuringRead, fileSize);
        target = Math.max(target, fileSize);
        const lines = get().lines;
        // A size below what is held is either an announcement older than the last read (whose
        // window saw the file later) or a file truncated or replaced: a read where the held
        // range ends tells which.
        if (lines !== null && fileSize < lines.end) check = true;
        set({ fileSize: Math.max(get().fileSize, fileSize) });
        pump();
      },
      loadEarlier() {
        if (!get().lines?.before) return;
        wantEarlier = true;
        pump();
      },
      toTail() {
        if (get().tailing) return;
        wantTail = true;
        pump();
      },
    };
  });
  return store;
}
