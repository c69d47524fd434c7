// A code editor: a Python expression (a task's condition), one line that Enter never breaks, with
// the names the task may read offered as it is typed; or a shell script (a `shell.run` command),
// as many lines as it takes. Highlighting, and the facade's problems marked in the text. The
// value lives in the store; the view follows it.
import { acceptCompletion, autocompletion } from "@codemirror/autocomplete";
import { defaultKeymap } from "@codemirror/commands";
import { python } from "@codemirror/lang-python";
import { StreamLanguage, syntaxHighlighting } from "@codemirror/language";
import { shell } from "@codemirror/legacy-modes/mode/shell";
import { setDiagnostics } from "@codemirror/lint";
import { EditorState, Prec } from "@codemirror/state";
import { EditorView, keymap, placeholder } from "@codemirror/view";
import { classHighlighter } from "@lezer/highlight";
import { useEffect, useRef } from "react";
import type { Diagnostic } from "../backend/generated";
import { fromOutside, nameCompletion, problemMarks, singleLine, styleNonce } from "./code";
import type { Suggestion } from "./names";
import "./code-field.css";

type Props = {
  value: string;
  onChange: (value: string) => void;
  /** The names to complete with. */
  names?: Suggestion[];
  /** The problems the last validation found in this value: marked in the text. */
  problems?: Diagnostic[];
  placeholder?: string;
  /** The id of the element that names the field (its label). */
  labelledBy?: string;
  /** Put on the editable element itself, where a test types and reads. */
  testId?: string;
  /** A Python expression on one line (the default), or a shell script on many. */
  language?: "python" | "shell";
};

const NO_NAMES: Suggestion[] = [];
const NO_PROBLEMS: Diagnostic[] = [];

/** Enter (with or without modifiers) does nothing here: an open completion list takes it first. */
const noLineBreaks = keymap.of(["Enter", "Shift-Enter", "Mod-Enter"].map((key) => ({ key, run: () => true })));
const withoutLineBreaks = defaultKeymap.filter((b) => !b.key?.includes("Enter"));

export function CodeField({
  value,
  onChange,
  names = NO_NAMES,
  problems = NO_PROBLEMS,
  placeholder: empty = "",
  labelledBy,
  testId,
  language = "python",
}: Props) {
  const host = useRef<HTMLDivElement>(null);
  const view = useRef<EditorView | null>(null);
  // The view is made once; these keep what it calls up to date without making it again.
  const latest = useRef({ onChange, names });
  useEffect(() => {
    latest.current = { onChange, names };
  }, [onChange, names]);

  useEffect(() => {
    const script = language === "shell";
    const contentAttributes: Record<string, string> = { "aria-multiline": String(script), spellcheck: "false" };
    if (labelledBy) contentAttributes["aria-labelledby"] = labelledBy;
    if (testId) contentAttributes["data-testid"] = testId;
    const made = new EditorView({
      parent: host.current!,
      state: EditorState.create({
        doc: value,
        extensions: [
          EditorView.cspNonce.of(styleNonce()),
          syntaxHighlighting(classHighlighter),
          script
            ? [StreamLanguage.define(shell), keymap.of(defaultKeymap)]
            : [
                python(),
                autocompletion({ override: [nameCompletion(() => latest.current.names)], icons: false }),
                Prec.high(keymap.of([{ key: "Tab", run: acceptCompletion }])),
                noLineBreaks,
                keymap.of(withoutLineBreaks),
                singleLine,
              ],
          placeholder(empty),
          // A long condition wraps rather than scrolls: the inspector is narrow, and all of it should show.
          EditorView.lineWrapping,
          EditorView.contentAttributes.of(contentAttributes),
          EditorView.updateListener.of((update) => {
            const outside = update.transactions.some((tr) => tr.annotation(fromOutside));
            if (update.docChanged && !outside) latest.current.onChange(update.state.doc.toString());
          }),
        ],
      }),
    });
    view.current = made;
    return () => {
      made.destroy();
      view.current = null;
    };
    // The view is made once per mount; the value and the rest follow through the effects below.
  }, []);

  // A value changed elsewhere (an undo, a rename) replaces the text; the one typed here is already in.
  useEffect(() => {
    const v = view.current;
    if (!v) return;
    const now = v.state.doc.toString();
    if (now === value) return;
    v.dispatch({
      changes: { from: 0, to: now.length, insert: value },
      selection: { anchor: Math.min(v.state.selection.main.head, value.length) },
      annotations: fromOutside.of(true),
    });
  }, [value]);

  // Redrawn only when the problems say something else: a new list of the same problems is common.
  const problemsKey = problems.map((p) => `${p.severity} ${p.code} ${p.message}`).join("\n");
  useEffect(() => {
    const v = view.current;
    if (!v) return;
    v.dispatch(setDiagnostics(v.state, problemMarks(v.state.doc.toString(), problems)));
    // `problemsKey` stands for `problems`; the text is the value's, which the effect above set.
  }, [problemsKey, value]);

  const classes = ["code-field", language === "shell" ? "script" : "", problems.some((p) => p.severity === "error") ? "invalid" : ""];
  return <div ref={host} className={classes.filter(Boolean).join(" ")} />;
}
