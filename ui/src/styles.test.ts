// The style sheets stay well formed: a rule left unclosed (as a merge can leave it) swallows every
// rule after it without a word from the build, and the editor silently loses its look.
import { describe, expect, it } from "vitest";

/** Every style sheet of the UI, by path, as text. */
const sheets: Record<string, string> = import.meta.glob("./**/*.css", { query: "?raw", import: "default", eager: true });

/** Where a rule opens inside another rule (only at-rules such as @media hold rules), if anywhere. */
function nestedRule(css: string): string | null {
  const text = css.replace(/\/\*[\s\S]*?\*\//g, "");
  const open: string[] = [];
  let selector = "";
  for (const c of text) {
    if (c === "{") {
      const inside = open.at(-1);
      if (inside !== undefined && !inside.startsWith("@")) return `${selector.trim()} inside ${inside}`;
      open.push(selector.trim());
      selector = "";
    } else if (c === "}") {
      if (open.pop() === undefined) return "a } closes nothing";
      selector = "";
    } else if (c === ";") {
      selector = "";
    } else {
      selector += c;
    }
  }
  return open.length > 0 ? `${open.at(-1)} is never closed` : null;
}

describe("the style sheets", () => {
  it.each(Object.keys(sheets))("%s closes every rule it opens", (file) => {
    expect(nestedRule(sheets[file]!)).toBeNull();
  });

  it("are found, and an unclosed rule is caught", () => {
    expect(Object.keys(sheets)).toContain("./styles.css");
    expect(nestedRule(".a {\n  color: red;\n.b { color: blue; }")).toBe(".b inside .a");
  });
});
