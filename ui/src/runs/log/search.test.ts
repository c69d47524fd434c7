import { describe, expect, it } from "vitest";
import { fromWindow } from "./lines";
import { findMatches, firstMatchFrom, MOST_MATCHES } from "./search";

describe("searching the held lines", () => {
  const lines = fromWindow("Error: disk\n\x1b[31mERROR\x1b[0m again, error\nfine\n", 0, false).lines;

  it("finds every match in the shown text, ignoring case and escape sequences", () => {
    expect(findMatches(lines, "error").matches).toEqual([
      { line: 0, from: 0, to: 5 },
      { line: 1, from: 0, to: 5 },
      { line: 1, from: 13, to: 18 },
    ]);
  });

  it("finds nothing for an empty query, and nothing inside an escape sequence", () => {
    expect(findMatches(lines, "").matches).toEqual([]);
    expect(findMatches(lines, "31m").matches).toEqual([]);
  });

  it("stops at the most matches it counts, and says so", () => {
    const many = fromWindow("a\n".repeat(MOST_MATCHES + 5), 0, false).lines;
    const found = findMatches(many, "a");
    expect(found.matches.length).toBe(MOST_MATCHES);
    expect(found.capped).toBe(true);
  });

  it("finds the first match at or after a line", () => {
    const { matches } = findMatches(lines, "error");
    expect([0, 1, 2].map((line) => firstMatchFrom(matches, line))).toEqual([0, 1, 3]);
  });
});
