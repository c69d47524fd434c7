import { describe, expect, it } from "vitest";
import { applySgr, exitStyle, plainText, PLAIN, spanCss, styleLine, type Style } from "./ansi";

/** The spans of a line started plain, as [text, the style's fields that differ from plain]. */
function shown(raw: string, entry: Style = PLAIN): [string, Partial<Style>][] {
  return styleLine(raw, entry).spans.map((s) => [s.text, differences(s.style)]);
}

function differences(style: Style): Partial<Style> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(style)) if (value !== PLAIN[key as keyof Style]) out[key] = value;
  return out;
}

describe("styling a line", () => {
  it("keeps plain text as one plain span", () => {
    expect(shown("hello world")).toEqual([["hello world", {}]]);
  });

  it("reads bold, dim, italic, underline, strike and inverse, and a reset ends them", () => {
    expect(shown("\x1b[1ma\x1b[2mb\x1b[3mc\x1b[4md\x1b[9me\x1b[7mf\x1b[0mg")).toEqual([
      ["a", { bold: true }],
      ["b", { bold: true, dim: true }],
      ["c", { bold: true, dim: true, italic: true }],
      ["d", { bold: true, dim: true, italic: true, underline: true }],
      ["e", { bold: true, dim: true, italic: true, underline: true, strike: true }],
      ["f", { bold: true, dim: true, italic: true, underline: true, strike: true, inverse: true }],
      ["g", {}],
    ]);
  });

  it("turns single attributes off with their own codes, and an empty SGR is a reset", () => {
    expect(shown("\x1b[1;3;4;7ma\x1b[22;23mb\x1b[24;27mc\x1b[1md\x1b[me")).toEqual([
      ["a", { bold: true, italic: true, underline: true, inverse: true }],
      ["b", { underline: true, inverse: true }],
      ["c", {}],
      ["d", { bold: true }],
      ["e", {}],
    ]);
  });

  it("reads the 8 colours, their bright forms, and the defaults, for text and background", () => {
    expect(shown("\x1b[31;42ma\x1b[91;102mb\x1b[39mc\x1b[49md")).toEqual([
      ["a", { fg: 1, bg: 2 }],
      ["b", { fg: 9, bg: 10 }],
      ["c", { bg: 10 }],
      ["d", {}],
    ]);
  });

  it("reads 256 colours and true colours, in the ; and the : forms", () => {
    expect(shown("\x1b[38;5;208;48;5;17ma\x1b[38;2;255;0;128mb\x1b[48:2::1:2:3mc\x1b[38:5:42md")).toEqual([
      ["a", { fg: 208, bg: 17 }],
      ["b", { fg: "#ff0080", bg: 17 }],
      ["c", { fg: "#ff0080", bg: "#010203" }],
      ["d", { fg: 42, bg: "#010203" }],
    ]);
  });

  it("ignores a colour out of range without losing the codes before it", () => {
    expect(shown("\x1b[1;38;5;300mx")).toEqual([["x", { bold: true }]]);
  });

  it("leaves out cursor moves, erasing, private modes, window titles and hyperlinks", () => {
    const raw = "\x1b[2K\x1b[1Aa\x1b[?25lb\x1b]0;title\x07c\x1b]8;;https://x.org\x1b\\link\x1b]8;;\x1b\\\x1b(Bd\x1b7e";
    expect(shown(raw)).toEqual([["abclinkde", {}]]);
  });

  it("leaves out control characters but keeps tabs", () => {
    expect(shown("a\x00b\x07c\td\x08e\x7ff\u009bg")).toEqual([["abc\tdefg", {}]]);
  });

  it("keeps what follows the last carriage return, as a progress bar redrawn in place shows", () => {
    expect(shown(" 10%\r 50%\r\x1b[32m100%")).toEqual([["100%", { fg: 2 }]]);
  });

  it("takes a carriage return before the newline (\\r\\n) as the end of the line, not an overwrite", () => {
    expect(shown("done\r")).toEqual([["done", {}]]);
    expect(shown("50%\rdone\r")).toEqual([["done", {}]]);
  });

  it("carries the style to the next line, as a terminal does", () => {
    const first = styleLine("\x1b[1;31merror: ", PLAIN);
    expect(first.exit).toMatchObject({ bold: true, fg: 1 });
    expect(shown("still red\x1b[0m plain", first.exit)).toEqual([
      ["still red", { bold: true, fg: 1 }],
      [" plain", {}],
    ]);
  });

  it("shows nothing of a sequence the line ends in the middle of, and styles it once the rest arrives", () => {
    const early = "build \x1b[3";
    expect(shown(early)).toEqual([["build ", {}]]);
    expect(shown(early + "2mok")).toEqual([
      ["build ", {}],
      ["ok", { fg: 2 }],
    ]);
    expect(shown("x\x1b")).toEqual([["x", {}]]);
    expect(shown("x\x1b]0;unfinished title")).toEqual([["x", {}]]);
  });

  it("keeps the style object when nothing changes, so lines can share it", () => {
    const red = applySgr(PLAIN, "31");
    expect(applySgr(red, "31")).toBe(red);
    expect(applySgr(red, "0")).toBe(PLAIN);
    expect(exitStyle("no escapes here", red)).toBe(red);
  });
});

describe("the plain text of a line", () => {
  it("is the line itself when it has nothing to leave out", () => {
    const raw = "plain text with a\ttab and ünïcödé ✓";
    expect(plainText(raw)).toBe(raw);
  });

  it("has no escape sequence, control character or overwritten text", () => {
    expect(plainText("\x1b[1;32mPASS\x1b[0m test\r")).toBe("PASS test");
    expect(plainText("0%\r100% \x1b[2Kdone")).toBe("100% done");
  });
});

describe("the quick readings of a line", () => {
  const samples = [
    "plain",
    "\x1b[1;31merror\x1b[0m: \x1b[38;5;208mwarm\x1b[48;2;1;2;3m bg",
    " 10%\r\x1b[32m 50%\r100%\r",
    "a\x1b[?25lb\x1b]0;title\x07c\x1b[2Kd\x00e\tf",
    "cut \x1b[3",
    "cut \x1b]8;;http://x",
    "\x1b[7minverse\x1b[27m\x1b[4munder",
  ];

  it("agree with the styled spans on the text and the style left for the next line", () => {
    for (const raw of samples) {
      const { spans, exit } = styleLine(raw, PLAIN);
      expect(plainText(raw), JSON.stringify(raw)).toBe(spans.map((s) => s.text).join(""));
      expect(exitStyle(raw, PLAIN), JSON.stringify(raw)).toEqual(exit);
    }
  });
});

describe("the CSS of a span", () => {
  it("is empty for plain text", () => {
    expect(spanCss(PLAIN)).toEqual({});
  });

  it("draws the 16 named colours with the log's variables and others as rgb", () => {
    expect(spanCss(applySgr(PLAIN, "31;104"))).toEqual({ color: "var(--ansi-1)", backgroundColor: "var(--ansi-12)" });
    expect(spanCss(applySgr(PLAIN, "38;5;196")).color).toBe("rgb(255, 0, 0)");
    expect(spanCss(applySgr(PLAIN, "38;5;16")).color).toBe("rgb(0, 0, 0)");
    expect(spanCss(applySgr(PLAIN, "38;5;244")).color).toBe("rgb(128, 128, 128)");
    expect(spanCss(applySgr(PLAIN, "38;2;1;2;3")).color).toBe("#010203");
  });

  it("swaps the colours for inverse, with the log's defaults standing for none", () => {
    expect(spanCss(applySgr(PLAIN, "7"))).toEqual({ color: "var(--log-bg)", backgroundColor: "var(--log-fg)" });
    expect(spanCss(applySgr(PLAIN, "7;31"))).toEqual({ color: "var(--log-bg)", backgroundColor: "var(--ansi-1)" });
  });

  it("draws bold, italic, dim, underline and strike", () => {
    expect(spanCss(applySgr(PLAIN, "1;2;3;4;9"))).toEqual({
      fontWeight: "bold",
      fontStyle: "italic",
      opacity: 0.6,
      textDecoration: "underline line-through",
    });
  });
});
