// Finding text in the held lines of a log, as shown (without escape sequences), ignoring case.
// Only what is held is searched: the viewer says so when the file holds more.
import { plainText } from "./ansi";
import type { Line } from "./lines";

/** One match: the index of its line in the held lines, and its range in the line's shown text. */
export type Match = { line: number; from: number; to: number };

/** Past this many matches the search stops: a word in every line of a large log says little more. */
export const MOST_MATCHES = 10_000;

// A line's text is worked out once: lines are shared between the values a growing log goes through.
const lowered = new WeakMap<Line, string>();

function loweredText(line: Line): string {
  let text = lowered.get(line);
  if (text === undefined) {
    text = plainText(line.raw).toLowerCase();
    lowered.set(line, text);
  }
  return text;
}

export function findMatches(lines: readonly Line[], query: string): { matches: Match[]; capped: boolean } {
  const matches: Match[] = [];
  const needle = query.toLowerCase();
  if (needle === "") return { matches, capped: false };
  for (let line = 0; line < lines.length; line++) {
    const text = loweredText(lines[line]!);
    for (let from = text.indexOf(needle); from !== -1; from = text.indexOf(needle, from + needle.length)) {
      if (matches.length === MOST_MATCHES) return { matches, capped: true };
      matches.push({ line, from, to: from + needle.length });
    }
  }
  return { matches, capped: false };
}

/** The index of the first match on line `line` or after it, `matches.length` when none is. */
export function firstMatchFrom(matches: readonly Match[], line: number): number {
  let low = 0;
  let high = matches.length;
  while (low < high) {
    const mid = (low + high) >> 1;
    if (matches[mid]!.line < line) low = mid + 1;
    else high = mid;
  }
  return low;
}
