// For the log viewer's tests: a log file in memory that answers reads as the backend's
// `read_attempt_log` does, on UTF-8 bytes, and tells how it was read.
import type { Window } from "../../backend/generated";
import type { LogSource } from "./reader";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export class MemoryLog implements LogSource {
  private bytes: Uint8Array;
  running = true;
  /** Every read asked for, in order. */
  readonly reads: { offset: number; limit: number }[] = [];
  /** The most reads that were ever in flight at once. */
  mostInFlight = 0;
  private inFlight = 0;
  /** When set, reads answer only when `answer()` is called, in the order they were asked. */
  held = false;
  private waiting: (() => void)[] = [];

  constructor(text = "") {
    this.bytes = encoder.encode(text);
  }

  get size(): number {
    return this.bytes.length;
  }

  /** The task writes `text`; answers the file's new size, as a `log_grew` event says it. */
  write(text: string): number {
    const added = encoder.encode(text);
    const bytes = new Uint8Array(this.bytes.length + added.length);
    bytes.set(this.bytes);
    bytes.set(added, this.bytes.length);
    this.bytes = bytes;
    return bytes.length;
  }

  /** The file is replaced by one holding `text`. */
  replace(text: string): number {
    this.bytes = encoder.encode(text);
    return this.bytes.length;
  }

  read(offset: number, limit: number): Promise<{ window: Window; running: boolean }> {
    this.reads.push({ offset, limit });
    this.inFlight++;
    this.mostInFlight = Math.max(this.mostInFlight, this.inFlight);
    const clamped = Math.min(262_144, Math.max(1_024, limit));
    const size = this.bytes.length;
    const reset = offset > size;
    let start = offset < 0 || reset ? Math.max(0, size - clamped) : offset;
    // Whole characters only: a window starts after any continuation bytes and ends before an
    // incomplete character.
    while (start < size && (this.bytes[start]! & 0xc0) === 0x80) start++;
    let end = Math.min(size, start + clamped);
    if (end < size) while (end > start && (this.bytes[end]! & 0xc0) === 0x80) end--;
    const window: Window = {
      content: decoder.decode(this.bytes.slice(start, end)),
      start_offset: start,
      next_offset: end,
      file_size: size,
      has_more_before: start > 0,
      has_more_after: end < size,
      reset,
    };
    const answer = { window, running: this.running };
    return new Promise((resolve) => {
      const done = () => {
        this.inFlight--;
        resolve(answer);
      };
      if (this.held) this.waiting.push(done);
      else queueMicrotask(done);
    });
  }

  /** Answers the oldest held read; whether there was one. */
  answer(): boolean {
    const next = this.waiting.shift();
    next?.();
    return next !== undefined;
  }
}

/** A log of `count` numbered lines, `line 1` to `line {count}`, each ending with a newline. */
export function numberedLines(count: number, from = 1): string {
  return Array.from({ length: count }, (_, i) => `line ${from + i}\n`).join("");
}
