// What a terminal would show of one line of a task's log: its text in styled spans. A task writes
// for a terminal (colours, bold, progress bars redrawn with a carriage return), and the log file
// keeps those bytes as they were written; this module turns them into what a terminal shows.
//
// It works one line at a time, with the style the line starts in, because the log view holds
// raw lines and styles only the few it draws. Select Graphic Rendition sequences (`ESC [ … m`)
// change the style and the style carries to the next line, as in a terminal; every other escape
// sequence (cursor moves, erasing, window titles, hyperlinks) and every control character but the
// tab is left out. A line read before the rest of it was written may end in the middle of a
// sequence: that unfinished sequence shows nothing, and once the rest of the line arrives the
// joined line holds it whole.

/** A palette colour (0..255: the 16 named colours, the 6×6×6 cube, the greys) or `#rrggbb`. */
export type Color = number | string;

export type Style = {
  readonly fg: Color | null;
  readonly bg: Color | null;
  readonly bold: boolean;
  readonly dim: boolean;
  readonly italic: boolean;
  readonly underline: boolean;
  readonly strike: boolean;
  readonly inverse: boolean;
};

export type Span = { readonly text: string; readonly style: Style };

/** The style of a terminal after a reset. */
export const PLAIN: Style = Object.freeze({
  fg: null,
  bg: null,
  bold: false,
  dim: false,
  italic: false,
  underline: false,
  strike: false,
  inverse: false,
});

export function sameStyle(a: Style, b: Style): boolean {
  return (
    a === b ||
    (a.fg === b.fg &&
      a.bg === b.bg &&
      a.bold === b.bold &&
      a.dim === b.dim &&
      a.italic === b.italic &&
      a.underline === b.underline &&
      a.strike === b.strike &&
      a.inverse === b.inverse)
  );
}

const ESC = 0x1b;
const BEL = 0x07;

/**
 * Where the escape sequence that starts at `at` (an ESC) ends, just after its last character;
 * -1 when the line ends before it does (the rest of it is still to be written, or a string
 * sequence was never ended: a terminal would swallow what follows either way).
 */
function sequenceEnd(raw: string, at: number): number {
  const kind = raw.charCodeAt(at + 1);
  if (Number.isNaN(kind)) return -1;
  if (kind === 0x5b /* [ */) {
    // Parameters and intermediates (0x20..0x3f), then one final character (0x40..0x7e).
    for (let i = at + 2; i < raw.length; i++) {
      const c = raw.charCodeAt(i);
      if (c >= 0x40 && c <= 0x7e) return i + 1;
      if (c < 0x20 || c > 0x3f) return i; // malformed: the sequence stops before what cannot be in it
    }
    return -1;
  }
  if (kind === 0x5d /* ] OSC */ || kind === 0x50 /* P DCS */ || kind === 0x58 || kind === 0x5e || kind === 0x5f) {
    // A string, ended by BEL (OSC only, but programs send it for all) or by ESC \.
    for (let i = at + 2; i < raw.length; i++) {
      const c = raw.charCodeAt(i);
      if (c === BEL) return i + 1;
      if (c === ESC) {
        if (i + 1 >= raw.length) return -1;
        if (raw.charCodeAt(i + 1) === 0x5c) return i + 2;
      }
    }
    return -1;
  }
  // Any other escape: intermediates (0x20..0x2f) then one final character, as `ESC ( B` or `ESC 7`.
  for (let i = at + 1; i < raw.length; i++) {
    const c = raw.charCodeAt(i);
    if (c < 0x20 || c > 0x2f) return i + 1;
  }
  return -1;
}

/** Whether a character is a control character that a terminal does not print (the tab is printed). */
function isControl(c: number): boolean {
  return (c < 0x20 && c !== 0x09) || (c >= 0x7f && c <= 0x9f);
}

/**
 * The style after the Select Graphic Rendition parameters `params` (the text between `ESC [`
 * and `m`). Parameters are separated by `;`; the extended colours also come in the `:` form
 * (`38:2::r:g:b`, `38:5:n`) that some programs write.
 */
export function applySgr(style: Style, params: string): Style {
  let known = applied.get(style);
  if (!known) applied.set(style, (known = new Map()));
  let next = known.get(params);
  if (next) return next;
  next = sgr(style, params);
  if (known.size < MOST_REMEMBERED) known.set(params, next);
  return next;
}

// A log repeats the same few changes of style thousands of times: each is worked out once, and
// lines in the same style share one style object. A log that paints in ever new true colours
// would fill the memory, hence a bound per style.
const MOST_REMEMBERED = 256;
const applied = new WeakMap<Style, Map<string, Style>>();

function sgr(style: Style, params: string): Style {
  const next: { -readonly [K in keyof Style]: Style[K] } = { ...style };
  const parts = params === "" ? ["0"] : params.split(";");
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i]!;
    if (part.includes(":")) {
      const sub = part.split(":").map((s) => (s === "" ? NaN : Number(s)));
      const target = sub[0] === 38 ? "fg" : sub[0] === 48 ? "bg" : null;
      if (target === null) {
        if (sub[0] === 4) next.underline = sub[1] !== 0;
        continue;
      }
      // `38:2:r:g:b` or `38:2:colourspace:r:g:b`: the last three are the colour.
      if (sub[1] === 5) setColor(next, target, paletteColor(sub[2]));
      else if (sub[1] === 2) setColor(next, target, rgbColor(sub.at(-3), sub.at(-2), sub.at(-1)));
      continue;
    }
    const code = part === "" ? 0 : Number(part);
    if (code === 38 || code === 48) {
      const target = code === 38 ? "fg" : "bg";
      const mode = Number(parts[i + 1]);
      if (mode === 5) {
        setColor(next, target, paletteColor(Number(parts[i + 2])));
        i += 2;
      } else if (mode === 2) {
        setColor(next, target, rgbColor(Number(parts[i + 2]), Number(parts[i + 3]), Number(parts[i + 4])));
        i += 4;
      } else {
        // An unknown colour mode: what follows cannot be read, as a terminal gives up on it too.
        break;
      }
      continue;
    }
    if (code === 0) Object.assign(next, PLAIN);
    else if (code === 1) next.bold = true;
    else if (code === 2) next.dim = true;
    else if (code === 3) next.italic = true;
    else if (code === 4) next.underline = true;
    else if (code === 7) next.inverse = true;
    else if (code === 9) next.strike = true;
    else if (code === 22) next.bold = next.dim = false;
    else if (code === 23) next.italic = false;
    else if (code === 24) next.underline = false;
    else if (code === 27) next.inverse = false;
    else if (code === 29) next.strike = false;
    else if (code >= 30 && code <= 37) next.fg = code - 30;
    else if (code === 39) next.fg = null;
    else if (code >= 40 && code <= 47) next.bg = code - 40;
    else if (code === 49) next.bg = null;
    else if (code >= 90 && code <= 97) next.fg = code - 90 + 8;
    else if (code >= 100 && code <= 107) next.bg = code - 100 + 8;
    // Blinking, hidden text, fonts and the like are not shown differently.
  }
  return sameStyle(next, style) ? style : sameStyle(next, PLAIN) ? PLAIN : Object.freeze(next);
}

function setColor(style: { fg: Color | null; bg: Color | null }, target: "fg" | "bg", color: Color | null) {
  if (color !== null) style[target] = color;
}

function paletteColor(n: number | undefined): Color | null {
  return n !== undefined && Number.isInteger(n) && n >= 0 && n <= 255 ? n : null;
}

function rgbColor(r: number | undefined, g: number | undefined, b: number | undefined): Color | null {
  const channels = [r, g, b];
  if (!channels.every((c) => c !== undefined && Number.isInteger(c) && c >= 0 && c <= 255)) return null;
  return "#" + channels.map((c) => c!.toString(16).padStart(2, "0")).join("");
}

/**
 * One raw line (without its newline) as a terminal shows it, starting in style `entry`, and the
 * style it leaves for the next line. A carriage return sends the cursor back to the start of
 * the line, where a progress bar redraws itself: only what follows the last one is kept (a
 * carriage return that ends the line, as in `\r\n`, overwrites nothing).
 */
export function styleLine(raw: string, entry: Style): { spans: Span[]; exit: Style } {
  let spans: Span[] = [];
  let style = entry;
  let text = "";
  let i = 0;
  const flush = () => {
    if (text === "") return;
    const last = spans.at(-1);
    if (last && last.style === style) spans[spans.length - 1] = { text: last.text + text, style };
    else spans.push({ text, style });
    text = "";
  };
  const end = raw.endsWith("\r") ? raw.length - 1 : raw.length;
  while (i < end) {
    // The longest run of printable characters is taken at once.
    let run = i;
    while (run < end && !isControl(raw.charCodeAt(run))) run++;
    if (run > i) {
      text += raw.slice(i, run);
      i = run;
      continue;
    }
    const c = raw.charCodeAt(i);
    if (c === ESC) {
      const after = sequenceEnd(raw, i);
      if (after === -1) break;
      if (isSgr(raw, i, after)) {
        const next = applySgr(style, raw.slice(i + 2, after - 1));
        if (next !== style) {
          flush();
          style = next;
        }
      }
      i = after;
    } else {
      if (c === 0x0d) {
        text = "";
        spans = [];
      }
      i++;
    }
  }
  flush();
  return { spans, exit: style };
}

/** Whether the escape sequence [at, after) is a change of style, not a private sequence (`ESC [ ? … m`). */
function isSgr(raw: string, at: number, after: number): boolean {
  return (
    raw.charCodeAt(at + 1) === 0x5b /* [ */ &&
    raw.charCodeAt(after - 1) === 0x6d /* m */ &&
    SGR_PARAMS.test(raw.slice(at + 2, after - 1))
  );
}

const SGR_PARAMS = /^[0-9;:]*$/;

/**
 * The style a line leaves for the next one. Every held line needs it when read, so it only looks
 * at escape sequences and builds no spans.
 */
export function exitStyle(raw: string, entry: Style): Style {
  let style = entry;
  for (let at = raw.indexOf("\x1b"); at !== -1; at = raw.indexOf("\x1b", at + 1)) {
    const after = sequenceEnd(raw, at);
    if (after === -1) break;
    if (isSgr(raw, at, after)) style = applySgr(style, raw.slice(at + 2, after - 1));
    at = after - 1;
  }
  return style;
}

const NEEDS_STYLING = /[\x00-\x08\x0a-\x1f\x7f-\x9f]/;

/** The text a terminal shows of a raw line, without its styles: for search and copy. */
export function plainText(raw: string): string {
  if (!NEEDS_STYLING.test(raw)) return raw;
  let text = "";
  let i = 0;
  const end = raw.endsWith("\r") ? raw.length - 1 : raw.length;
  while (i < end) {
    let run = i;
    while (run < end && !isControl(raw.charCodeAt(run))) run++;
    text += raw.slice(i, run);
    if (run === end) break;
    if (raw.charCodeAt(run) === ESC) {
      const after = sequenceEnd(raw, run);
      if (after === -1) break;
      i = after;
    } else {
      if (raw.charCodeAt(run) === 0x0d) text = "";
      i = run + 1;
    }
  }
  return text;
}

/** The 16 named colours are the log view's CSS variables (log.css), so a theme can tune them. */
function cssColor(color: Color): string {
  if (typeof color === "string") return color;
  if (color < 16) return `var(--ansi-${color})`;
  if (color < 232) {
    const levels = [0, 95, 135, 175, 215, 255];
    const n = color - 16;
    return `rgb(${levels[Math.floor(n / 36)]}, ${levels[Math.floor(n / 6) % 6]}, ${levels[n % 6]})`;
  }
  const grey = 8 + (color - 232) * 10;
  return `rgb(${grey}, ${grey}, ${grey})`;
}

export type SpanCss = {
  color?: string;
  backgroundColor?: string;
  fontWeight?: "bold";
  fontStyle?: "italic";
  opacity?: number;
  textDecoration?: string;
};

/**
 * How a span of style `style` is drawn, as inline CSS; an empty object for the plain style.
 * Inverse swaps the colours, the defaults being the log's own (`--log-fg`, `--log-bg`).
 */
export function spanCss(style: Style): SpanCss {
  if (style === PLAIN) return {};
  const css: SpanCss = {};
  let fg = style.fg === null ? null : cssColor(style.fg);
  let bg = style.bg === null ? null : cssColor(style.bg);
  if (style.inverse) [fg, bg] = [bg ?? "var(--log-bg)", fg ?? "var(--log-fg)"];
  if (fg !== null) css.color = fg;
  if (bg !== null) css.backgroundColor = bg;
  if (style.bold) css.fontWeight = "bold";
  if (style.italic) css.fontStyle = "italic";
  if (style.dim) css.opacity = 0.6;
  const lines = [style.underline && "underline", style.strike && "line-through"].filter(Boolean);
  if (lines.length > 0) css.textDecoration = lines.join(" ");
  return css;
}
