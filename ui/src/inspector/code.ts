// The pieces of the condition editor that need no page: keeping an expression on one line,
// offering the names a task may read, and placing the facade's problems in the text. CodeField.tsx
// puts them together in a CodeMirror view.
import type { Completion, CompletionSource } from "@codemirror/autocomplete";
import { syntaxTree } from "@codemirror/language";
import type { Diagnostic as Mark } from "@codemirror/lint";
import { Annotation, ChangeSet, EditorState, Transaction, type ChangeSpec } from "@codemirror/state";
import { CONDITION_BUILTINS, type Diagnostic } from "../backend/generated";
import { completing, type Suggestion } from "./names";

/**
 * Marks a change that brings the field in line with its value from outside (an undo, another
 * task selected): it is not an edit of the user's, so it is neither reported nor reshaped.
 */
export const fromOutside = Annotation.define<boolean>();

/**
 * A condition is one expression: a line break typed or pasted becomes a space. A value from
 * outside is left as the file has it, so that showing a condition never changes the blueprint.
 */
export const singleLine = EditorState.transactionFilter.of((tr) => {
  if (!tr.docChanged || tr.annotation(fromOutside) || tr.newDoc.lines === 1) return tr;
  const changes: ChangeSpec[] = [];
  tr.changes.iterChanges((from, to, _fromB, _toB, inserted) => {
    changes.push({ from, to, insert: inserted.toString().replace(/\s*[\r\n]+\s*/g, " ") });
  });
  const joined = ChangeSet.of(changes, tr.startState.doc.length);
  const userEvent = tr.annotation(Transaction.userEvent);
  return {
    changes: joined,
    // The caret lands after what was inserted, as it would have without the line breaks.
    selection: tr.startState.selection.map(joined, 1),
    ...(userEvent ? { userEvent } : {}),
  };
});

/**
 * What the condition language has besides the task's names: its keywords and constants, and the
 * builtins Orrery's evaluator implements (generated from its own list).
 */
const KEYWORDS = ["and", "or", "not", "in", "is", "if", "else", "for", "lambda"];
const CONSTANTS = ["True", "False", "None"];
const LANGUAGE: { label: string; type: string }[] = [
  ...KEYWORDS.map((label) => ({ label, type: "keyword" })),
  ...CONSTANTS.map((label) => ({ label, type: "constant" })),
  ...CONDITION_BUILTINS.map((label) => ({ label, type: "function" })),
];

/**
 * Completes the name at the caret with the names the task may read (upstream outputs first), in
 * the order `names.ts` gives them, then with the language's own words once one is begun; nothing
 * is offered inside a string literal.
 */
export function nameCompletion(names: () => Suggestion[]): CompletionSource {
  return (context) => {
    const word = context.matchBefore(/[A-Za-z_][A-Za-z0-9_.]*/);
    if (!word && !context.explicit) return null;
    if (syntaxTree(context.state).resolveInner(context.pos, -1).name === "String") return null;
    const offered = completing(names(), context.state.doc.toString(), context.pos);
    const options: Completion[] = offered.map((s, i) => ({
      label: s.name,
      type: s.origin === "own" ? "variable" : "property",
      detail: s.origin,
      info: s.producers.length > 0 ? `written by ${s.producers.join(", ")}` : "the task's own param or input",
      // The order of `suggestions` is the one to keep: upstream names are the likely ones.
      boost: -i,
    }));
    const typed = word?.text ?? "";
    if (typed !== "") {
      for (const [i, w] of LANGUAGE.entries()) {
        if (w.label.startsWith(typed) && w.label !== typed && !offered.some((s) => s.name === w.label)) {
          options.push({ ...w, boost: -offered.length - 1 - i });
        }
      }
    }
    return options.length > 0 ? { from: word?.from ?? context.pos, options, filter: false } : null;
  };
}

const IDENTIFIER = /[A-Za-z0-9_]/;

/**
 * Where in `text` each problem lies, as lint marks: a syntax error at the line and column the
 * facade names, an unknown name on every place it is read, anything else on the whole text.
 * The facade gives positions in the file, not in the expression, so these come from its
 * messages (`orrery-blueprint` dataflow.rs); a message worded otherwise still marks the whole text.
 */
export function problemMarks(text: string, problems: Diagnostic[]): Mark[] {
  const whole = { from: 0, to: text.length };
  return problems.flatMap((d) => {
    const severity = d.severity === "error" || d.severity === "warning" ? d.severity : "info";
    const at = (range: { from: number; to: number }): Mark => ({ ...range, severity, message: d.message });
    if (d.code === "condition-syntax") {
      const place = /\(line (\d+), column (\d+)\)\)?$/.exec(d.message);
      const offset = place ? offsetOf(text, Number(place[1]), Number(place[2])) : null;
      if (offset === null) return [at(whole)];
      return [at({ from: offset, to: Math.min(text.length, offset + 1) })];
    }
    if (d.code === "condition-unknown-name") {
      const name = /reads '([^']+)'/.exec(d.message)?.[1];
      const found = name ? occurrences(text, name) : [];
      return found.length > 0 ? found.map(at) : [at(whole)];
    }
    return [at(whole)];
  });
}

/** The offset (UTF-16, as CodeMirror counts) of a 1-based line and character column. */
function offsetOf(text: string, line: number, column: number): number | null {
  let start = 0;
  for (let l = 1; l < line; l += 1) {
    const next = text.indexOf("\n", start);
    if (next < 0) return null;
    start = next + 1;
  }
  let offset = start;
  for (let c = 1; c < column; c += 1) {
    const code = text.codePointAt(offset);
    if (code === undefined) return text.length;
    offset += code > 0xffff ? 2 : 1;
  }
  return Math.min(offset, text.length);
}

/** Where `name` is read: each place it stands as a whole name, not as part of another or after a dot. */
function occurrences(text: string, name: string): { from: number; to: number }[] {
  const found: { from: number; to: number }[] = [];
  for (let from = text.indexOf(name); from >= 0; from = text.indexOf(name, from + 1)) {
    const before = text[from - 1] ?? "";
    const after = text[from + name.length] ?? "";
    if (!IDENTIFIER.test(before) && before !== "." && !IDENTIFIER.test(after)) found.push({ from, to: from + name.length });
  }
  return found;
}

/**
 * The nonce the page's own styles carry. Tauri gives every `<style>` of index.html a fresh nonce
 * and allows it in `style-src`; CodeMirror puts its styles in a `<style>` of its own, which the
 * policy refuses unless it carries that nonce too. Empty outside Tauri, where no policy applies.
 */
export function styleNonce(doc: Document = document): string {
  const carrier = doc.getElementById("style-nonce");
  return carrier instanceof HTMLStyleElement ? carrier.nonce ?? "" : "";
}
