import { describe, expect, it } from "vitest";
import { PLAIN } from "./ansi";
import { append, dropFromEnd, dropFromStart, fromWindow, lineAt, prepend, utf8Length, utf8Prefix, type Lines } from "./lines";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** The bytes [from, to) of `text` as text, as a window of the backend gives them. */
function bytes(text: string, from: number, to?: number): string {
  return decoder.decode(encoder.encode(text).slice(from, to));
}

const raws = (lines: Lines) => lines.lines.map((l) => l.raw);

/** Every line's offset is where its text starts in `file`, and the range's ends are exact. */
function expectOffsetsIn(lines: Lines, file: string) {
  const all = encoder.encode(file);
  for (const line of lines.lines) {
    expect(decoder.decode(all.slice(line.at, line.at + utf8Length(line.raw))), `the line at ${line.at}`).toBe(line.raw);
  }
  const text = raws(lines).join("\n") + (lines.open || lines.lines.length === 0 ? "" : "\n");
  expect(decoder.decode(all.slice(lines.start, lines.end)), "the held range").toBe(text);
}

describe("the UTF-8 length of text", () => {
  it("counts one to four bytes per character as the encoder does", () => {
    for (const text of ["", "ascii", "é", "€uro", "🚀 launch", "mixed ü € 🚀 \u{10ffff}"]) {
      expect(utf8Length(text), text).toBe(encoder.encode(text).length);
    }
  });

  it("cuts text at a byte count without splitting a character", () => {
    const text = "a€b🚀c"; // 1, 3, 1, 4 and 1 bytes
    const cuts = [0, 1, 3, 4, 5, 8, 9, 10, 99].map((n) => utf8Prefix(text, n));
    expect(cuts).toEqual(["", "a", "a", "a€", "a€b", "a€b", "a€b🚀", "a€b🚀c", "a€b🚀c"]);
  });
});

describe("lines read from the tail and appended to", () => {
  it("splits a window into lines, the first a part of a line when bytes lie before it", () => {
    const file = "one\ntwo\nthree\n";
    const lines = fromWindow(bytes(file, 2), 2, true);
    expect(raws(lines)).toEqual(["e", "two", "three"]);
    expect(lines).toMatchObject({ start: 2, end: 14, open: false, before: true });
    expectOffsetsIn(lines, file);
  });

  it("keeps a last line without newline open, and completes it with what is appended", () => {
    const file = "step 1\nstep 2 running... done\nstep 3\n";
    let lines = fromWindow(bytes(file, 0, 21), 0, false);
    expect(raws(lines)).toEqual(["step 1", "step 2 running"]);
    expect(lines.open).toBe(true);
    lines = append(lines, bytes(file, 21));
    expect(raws(lines)).toEqual(["step 1", "step 2 running... done", "step 3"]);
    expect(lines.open).toBe(false);
    expect(lines.lines[1]!.at).toBe(7);
    expectOffsetsIn(lines, file);
  });

  it("counts multi-byte characters in bytes, so offsets stay exact after them", () => {
    const file = "größe: 42 €\n🚀 started\nok ✓\n";
    const split = encoder.encode("größe: 42 €\n🚀").length;
    const lines = append(fromWindow(bytes(file, 0, split), 0, false), bytes(file, split));
    expect(raws(lines)).toEqual(["größe: 42 €", "🚀 started", "ok ✓"]);
    expect(lines.end).toBe(encoder.encode(file).length);
    expectOffsetsIn(lines, file);
  });

  it("adds an empty line for an empty one in the file, and nothing for an empty append", () => {
    let lines = fromWindow("a\n", 0, false);
    lines = append(lines, "\n");
    expect(raws(lines)).toEqual(["a", ""]);
    expect(append(lines, "")).toBe(lines);
  });

  it("keeps an escape sequence split between two windows, styling the text after it", () => {
    let lines = fromWindow("plain \x1b[3", 0, false);
    lines = append(lines, "1mred\nstill red\n");
    expect(raws(lines)).toEqual(["plain \x1b[31mred", "still red"]);
    expect(lines.lines[1]!.entry.fg).toBe(1);
    expect(lines.exit.fg).toBe(1);
  });

  it("carries the style into the lines appended later", () => {
    let lines = fromWindow("\x1b[1mbold from here\n", 0, false);
    lines = append(lines, "still bold\n\x1b[0mplain\n");
    expect(lines.lines.map((l) => l.entry.bold)).toEqual([false, true, true]);
    expect(lines.exit).toBe(PLAIN);
  });
});

describe("lines read from earlier", () => {
  it("joins the last part of the earlier window with the first held line", () => {
    const file = "alpha\nbravo charlie\ndelta\n";
    let lines = fromWindow(bytes(file, 12), 12, true);
    expect(raws(lines)).toEqual(["charlie", "delta"]);
    lines = prepend(lines, bytes(file, 3, 12), 3, true);
    expect(raws(lines)).toEqual(["ha", "bravo charlie", "delta"]);
    lines = prepend(lines, bytes(file, 0, 3), 0, false);
    expect(raws(lines)).toEqual(["alpha", "bravo charlie", "delta"]);
    expect(lines).toMatchObject({ start: 0, end: 26, before: false, open: false });
    expectOffsetsIn(lines, file);
  });

  it("joins nothing when the earlier window ends with a newline", () => {
    const file = "first\nsecond\n";
    const lines = prepend(fromWindow(bytes(file, 6), 6, true), bytes(file, 0, 6), 0, false);
    expect(raws(lines)).toEqual(["first", "second"]);
    expectOffsetsIn(lines, file);
  });

  it("joins at a border inside a line of multi-byte characters", () => {
    const file = "αβγ\nδεζ 🚀 ηθ\n";
    const border = encoder.encode("αβγ\nδεζ 🚀").length;
    const lines = prepend(fromWindow(bytes(file, border), border, true), bytes(file, 0, border), 0, false);
    expect(raws(lines)).toEqual(["αβγ", "δεζ 🚀 ηθ"]);
    expectOffsetsIn(lines, file);
  });

  it("joins an escape sequence split at the border", () => {
    const file = "x\n\x1b[32mgreen\nafter\n";
    const lines = prepend(fromWindow(bytes(file, 5), 5, true), bytes(file, 0, 5), 0, false);
    expect(raws(lines)).toEqual(["x", "\x1b[32mgreen", "after"]);
    expect(lines.lines[2]!.entry.fg).toBe(2);
  });

  it("styles the held lines again with the style the earlier text leaves", () => {
    const file = "\x1b[31mred starts\nred\nred\x1b[0m\nplain\n";
    const border = file.indexOf("red\n", 5) + 4;
    let lines = fromWindow(bytes(file, border), border, true);
    expect(lines.lines.map((l) => l.entry.fg)).toEqual([null, null]);
    lines = prepend(lines, bytes(file, 0, border), 0, false);
    expect(raws(lines)).toEqual(["\x1b[31mred starts", "red", "red\x1b[0m", "plain"]);
    expect(lines.lines.map((l) => l.entry.fg)).toEqual([null, 1, 1, null]);
    expect(lines.exit).toBe(PLAIN);
  });

  it("keeps the open last line open when earlier text is put before it", () => {
    const lines = prepend(fromWindow("partial", 4, true), "abc\n", 0, false);
    expect(raws(lines)).toEqual(["abc", "partial"]);
    expect(lines.open).toBe(true);
    expect(append(lines, " done\n").lines.at(-1)!.raw).toBe("partial done");
  });

  it("joins into a single held line that has no newline on either side", () => {
    const lines = prepend(fromWindow("middle", 3, true), "sta", 0, false);
    expect(raws(lines)).toEqual(["stamiddle"]);
    expect(lines).toMatchObject({ open: true, start: 0, end: 9 });
  });
});

describe("the limits on what is held", () => {
  const file = Array.from({ length: 10 }, (_, i) => `line ${i}`).join("\n") + "\n";

  it("drops lines from the start while reading at the end, keeping the range exact", () => {
    const lines = dropFromStart(fromWindow(file, 0, false), { bytes: 1_000, lines: 4 });
    expect(raws(lines)).toEqual(["line 6", "line 7", "line 8", "line 9"]);
    expect(lines.before).toBe(true);
    expectOffsetsIn(lines, file);
  });

  it("drops lines from the end while reading far above, closing the range after a newline", () => {
    const lines = dropFromEnd(fromWindow(file, 0, false), { bytes: 20, lines: 100 });
    expect(raws(lines)).toEqual(["line 0", "line 1"]);
    expect(lines.open).toBe(false);
    expectOffsetsIn(lines, file);
  });

  it("ends a range cut at the end in the style the first dropped line began in", () => {
    const lines = dropFromEnd(fromWindow("\x1b[33ma\nb\nc\n", 0, false), { bytes: 100, lines: 1 });
    expect(raws(lines)).toEqual(["\x1b[33ma"]);
    expect(lines.exit.fg).toBe(3);
  });

  it("keeps a single line longer than the limit", () => {
    const long = "x".repeat(100);
    expect(raws(dropFromStart(fromWindow(`${long}\n`, 0, false), { bytes: 10, lines: 10 }))).toEqual([long]);
    expect(raws(dropFromEnd(fromWindow(`${long}\n`, 0, false), { bytes: 10, lines: 10 }))).toEqual([long]);
  });

  it("changes nothing within the limits", () => {
    const lines = fromWindow(file, 0, false);
    expect(dropFromStart(lines, { bytes: 1_000, lines: 100 })).toBe(lines);
    expect(dropFromEnd(lines, { bytes: 1_000, lines: 100 })).toBe(lines);
  });
});

describe("finding the line that holds a byte", () => {
  it("answers the line whose range holds the offset, or -1 before the first", () => {
    const lines = fromWindow("ab\ncd\nef\n", 10, true);
    expect([9, 10, 12, 13, 15, 16, 99].map((o) => lineAt(lines, o))).toEqual([-1, 0, 0, 1, 1, 2, 2]);
  });
});
