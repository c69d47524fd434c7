// The part of a log file the viewer holds: one contiguous byte range [start, end) of the file, as
// raw lines. The backend reads the file in byte windows that begin and end anywhere in a line, so
// a window's first and last pieces are parts of lines: text appended at the end continues the
// last line until a newline completes it, and text read from earlier is joined to the first line.
//
// Lines stay raw (escape sequences and all) and are styled only when drawn (ansi.ts): a line's
// entry style, the style the lines before it left, is all that drawing it needs. Each line knows
// the byte offset it starts at, so dropping lines from either end keeps the range exact without
// measuring text again, and a view can find a line again after lines came or went above it.
//
// Values are never changed in place: every operation answers a new `Lines` that shares the
// untouched line objects with the old one.
import { exitStyle, PLAIN, sameStyle, type Style } from "./ansi";

export type Line = {
  /** The line's bytes as text, without its newline. */
  readonly raw: string;
  /** The byte offset in the file of its first byte. */
  readonly at: number;
  /** The style the lines before it leave it in. */
  readonly entry: Style;
};

export type Lines = {
  readonly start: number;
  readonly end: number;
  readonly lines: readonly Line[];
  /** Whether the last line has no newline yet: text appended next continues it. */
  readonly open: boolean;
  /** Whether the file has bytes before `start` that are not held. */
  readonly before: boolean;
  /** The style the last line leaves for what is appended next. */
  readonly exit: Style;
};

/** How much is held at most; a single line longer than that is still held whole. */
export type Limits = { bytes: number; lines: number };

export const DEFAULT_LIMITS: Limits = { bytes: 4 * 1024 * 1024, lines: 50_000 };

/** The number of bytes of `text` in UTF-8, without encoding it. */
export function utf8Length(text: string): number {
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      // A surrogate pair is one character of four bytes.
      const low = text.charCodeAt(i + 1);
      if (low >= 0xdc00 && low <= 0xdfff) {
        n += 4;
        i++;
      } else n += 3;
    } else n += 3;
  }
  return n;
}

/** The longest start of `text` that holds at most `bytes` bytes in UTF-8. */
export function utf8Prefix(text: string, bytes: number): string {
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    const pair = c >= 0xd800 && c <= 0xdbff && i + 1 < text.length;
    const size = c < 0x80 ? 1 : c < 0x800 ? 2 : pair ? 4 : 3;
    if (n + size > bytes) return text.slice(0, i);
    n += size;
    if (pair) i++;
  }
  return text;
}

/** The pieces of `content` between newlines, each with the byte offset it starts at. */
function pieces(content: string, at: number): { raw: string; at: number }[] {
  const found: { raw: string; at: number }[] = [];
  let from = 0;
  for (;;) {
    const nl = content.indexOf("\n", from);
    const raw = content.slice(from, nl === -1 ? content.length : nl);
    found.push({ raw, at });
    if (nl === -1) return found;
    at += utf8Length(raw) + 1;
    from = nl + 1;
  }
}

/** Lines built from `raws`, each entered in the style its predecessor leaves, from `entry` on. */
function styled(raws: { raw: string; at: number }[], entry: Style): { lines: Line[]; exit: Style } {
  const lines: Line[] = [];
  let style = entry;
  for (const { raw, at } of raws) {
    lines.push({ raw, at, entry: style });
    style = exitStyle(raw, style);
  }
  return { lines, exit: style };
}

/**
 * The lines of one window of the file, `content` from byte `start` on. When bytes lie before
 * it, its first line is a part of a line, in an unknown style taken as plain.
 */
export function fromWindow(content: string, start: number, before: boolean): Lines {
  const empty: Lines = { start, end: start, lines: [], open: false, before, exit: PLAIN };
  return append(empty, content);
}

/** `lines` with `content`, the bytes that follow its end, appended. */
export function append(lines: Lines, content: string): Lines {
  if (content === "") return lines;
  const found = pieces(content, lines.end);
  const kept = lines.lines.slice();
  let entry = lines.exit;
  const last = kept.at(-1);
  if (lines.open && last) {
    // The first piece completes (or continues) the open line, which is styled again whole.
    const joined = { raw: last.raw + found[0]!.raw, at: last.at, entry: last.entry };
    kept[kept.length - 1] = joined;
    entry = exitStyle(joined.raw, joined.entry);
    found.shift();
  }
  const open = !content.endsWith("\n");
  // A newline that ends the content leaves an empty piece after it: no line yet.
  if (!open) found.pop();
  const added = styled(found, entry);
  return {
    start: lines.start,
    end: lines.end + utf8Length(content),
    lines: kept.concat(added.lines),
    open: open && kept.length + added.lines.length > 0,
    before: lines.before,
    exit: added.lines.length > 0 ? added.exit : entry,
  };
}

/**
 * `lines` with `content`, the bytes that end where it starts (from byte `start`), put before it.
 * The last piece of `content` is the beginning of the first held line. The styles after the
 * new text are worked out again, as far as they change.
 */
export function prepend(lines: Lines, content: string, start: number, before: boolean): Lines {
  if (content === "") return { ...lines, before };
  const found = pieces(content, start);
  const rest = lines.lines.slice();
  const first = rest[0];
  const tail = found.at(-1)!;
  if (first) {
    // `content` ends inside the first line or just before it (after a newline, with an empty piece).
    found[found.length - 1] = { raw: tail.raw + first.raw, at: tail.at };
    rest.shift();
  } else if (tail.raw === "") {
    found.pop();
  }
  const added = styled(found, PLAIN);
  // The held lines were styled from what was then the start; restyle them until the style
  // a line enters in is the one it had, after which nothing changes.
  let style = added.exit;
  let i = 0;
  for (; i < rest.length; i++) {
    const line = rest[i]!;
    if (sameStyle(line.entry, style)) break;
    rest[i] = { ...line, entry: style };
    style = exitStyle(line.raw, style);
  }
  const all = added.lines.concat(rest);
  return {
    start,
    end: lines.end,
    lines: all,
    open: first ? lines.open : all.length > 0 && !content.endsWith("\n"),
    before,
    // Restyling that ran to the end changed what the last line leaves too.
    exit: i === rest.length ? style : lines.exit,
  };
}

function overLimits(lines: readonly Line[], from: number, to: number, end: number, limits: Limits): boolean {
  if (to - from <= 1) return false;
  const bytes = (to < lines.length ? lines[to]!.at : end) - lines[from]!.at;
  return to - from > limits.lines || bytes > limits.bytes;
}

/** `lines` within `limits`, dropping lines at the start: what a reader at the end no longer sees. */
export function dropFromStart(lines: Lines, limits: Limits): Lines {
  const all = lines.lines;
  let from = 0;
  while (overLimits(all, from, all.length, lines.end, limits)) from++;
  if (from === 0) return lines;
  return { ...lines, start: all[from]!.at, lines: all.slice(from), before: true };
}

/**
 * `lines` within `limits`, dropping lines at the end: what a reader far above no longer sees.
 * The range then ends before the file does, so nothing may be appended until it is read again.
 */
export function dropFromEnd(lines: Lines, limits: Limits): Lines {
  const all = lines.lines;
  let to = all.length;
  while (overLimits(all, 0, to, lines.end, limits)) to--;
  if (to === all.length) return lines;
  const kept = all.slice(0, to);
  const next = all[to]!;
  // The kept lines are complete (a newline precedes the first dropped line), so the range
  // ends after that newline, in the style the first dropped line entered with.
  return { ...lines, end: next.at, lines: kept, open: false, exit: next.entry };
}

/** The index of the line that holds byte `offset`, -1 when `offset` is before the first line. */
export function lineAt(lines: Lines, offset: number): number {
  let low = 0;
  let high = lines.lines.length - 1;
  let found = -1;
  while (low <= high) {
    const mid = (low + high) >> 1;
    if (lines.lines[mid]!.at <= offset) {
      found = mid;
      low = mid + 1;
    } else high = mid - 1;
  }
  return found;
}
