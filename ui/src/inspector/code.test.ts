import { CompletionContext, type CompletionResult } from "@codemirror/autocomplete";
import { python } from "@codemirror/lang-python";
import { EditorState } from "@codemirror/state";
import { describe, expect, it } from "vitest";
import type { Diagnostic } from "../backend/generated";
import { fromOutside, nameCompletion, problemMarks, singleLine } from "./code";
import { suggestions } from "./names";

const names = suggestions({
  task_id: "t",
  produced: [
    { key: "late", producers: ["after"], upstream: false },
    { key: "count", producers: ["plan"], upstream: true },
  ],
  own: ["command"],
});

function problem(code: Diagnostic["code"], message: string): Diagnostic {
  return { code, severity: "error", task_id: "t", path: "$.tasks[1].condition", message, server_rejects: true };
}

async function complete(doc: string, pos = doc.length, explicit = false): Promise<CompletionResult | null> {
  const state = EditorState.create({ doc, extensions: [python()] });
  return nameCompletion(() => names)(new CompletionContext(state, pos, explicit));
}

describe("the condition editor's pieces", () => {
  it("turns a pasted line break into a space and keeps the caret after the paste", () => {
    const state = EditorState.create({ doc: "a and ", selection: { anchor: 6 }, extensions: [singleLine] });
    const tr = state.update({ changes: { from: 6, insert: "b\n  or c" }, selection: { anchor: 14 } });
    expect(tr.state.doc.toString()).toBe("a and b or c");
    expect(tr.state.selection.main.head).toBe(12);
  });

  it("leaves a multi-line value from the file as it is, so that showing it changes nothing", () => {
    const state = EditorState.create({ doc: "", extensions: [singleLine] });
    const tr = state.update({ changes: { from: 0, insert: "a and\nb" }, annotations: fromOutside.of(true) });
    expect(tr.state.doc.toString()).toBe("a and\nb");
  });

  it("completes the word at the caret with upstream names first and says who writes them", async () => {
    const result = await complete("x and co");
    expect(result?.from).toBe(6);
    expect(result?.options.map((o) => o.label)).toEqual(["count", "command"]);
    expect(result?.options[0]?.info).toBe("written by plan");
  });

  it("offers the language's words and builtins after the names, once a word is begun", async () => {
    expect((await complete("x and la"))?.options.map((o) => o.label)).toEqual(["late", "lambda"]);
    expect((await complete("x and le"))?.options.map((o) => o.label)).toEqual(["len"]);
    expect((await complete("x is No"))?.options.map((o) => o.label)).toEqual(["None"]);
    expect(await complete("x and len")).toBeNull();
  });

  it("offers every name when asked with nothing typed, and nothing unasked or inside a string", async () => {
    expect((await complete("x == ", 5, true))?.options.map((o) => o.label)).toEqual(["count", "late", "command"]);
    expect(await complete("x == ", 5, false)).toBeNull();
    expect(await complete("x == 'co", 8, false)).toBeNull();
  });

  it("marks a syntax error at the column the facade names", () => {
    const message = "task 't': condition 'inspect and (' is not a valid expression (unexpected end (line 1, column 14))";
    expect(problemMarks("inspect and (", [problem("condition-syntax", message)])).toEqual([
      { from: 13, to: 13, severity: "error", message },
    ]);
    const inside = "task 't': condition 'a >> > 1' is not a valid expression (bad token (line 1, column 6))";
    expect(problemMarks("a >> > 1", [problem("condition-syntax", inside)]).map((m) => [m.from, m.to])).toEqual([[5, 6]]);
  });

  it("counts the facade's columns in characters, not in UTF-16 units", () => {
    const message = "task 't': condition '' is not a valid expression (x (line 1, column 4))";
    expect(problemMarks("'😀' (", [problem("condition-syntax", message)]).map((m) => m.from)).toEqual([4]);
  });

  it("marks every place an unknown name is read, not where it is part of another name or an attribute", () => {
    const message = "task 't': condition '...' reads 'n', which no task in this blueprint declares as an output";
    const marks = problemMarks("n > 1 and nn < n and x.n", [problem("condition-unknown-name", message)]);
    expect(marks.map((m) => [m.from, m.to])).toEqual([
      [0, 1],
      [15, 16],
    ]);
  });

  it("marks the whole text for a problem it cannot place", () => {
    const marks = problemMarks("a > 1", [{ ...problem("not-portable", "something else"), severity: "warning" }]);
    expect(marks).toEqual([{ from: 0, to: 5, severity: "warning", message: "something else" }]);
  });
});
