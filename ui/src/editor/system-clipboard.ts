// The editor's copy, cut and paste through the system clipboard. They listen to the DOM's
// clipboard events on the window rather than to Ctrl+C: the web view then writes and reads the
// clipboard itself, which needs no clipboard permission in WebKitGTK, and a menu's Copy or Paste
// item reaches the editor the same way. A text field keeps its own copy and paste.
import { copyFragment } from "../clipboard";
import type { EditorState, EditorStore } from "../store/editor";
import { isTyping } from "./typing";

/** Set while a command asks the web view to copy or cut: the event is the editor's then. */
let asked = false;
/** Whether the editor answered the last clipboard event. */
let answered = false;

/** Whether a clipboard event is for the text the user selected or types, not for the tasks. */
function forText(): boolean {
  if (asked) return false;
  if (isTyping(document.activeElement)) return true;
  const selection = window.getSelection();
  return selection !== null && !selection.isCollapsed;
}

/** Listens to copy, cut and paste on the window for `store`; answers how to stop. */
export function listenToClipboard(store: EditorStore): () => void {
  function onCopyOrCut(e: ClipboardEvent) {
    if (forText() || !e.clipboardData) return;
    const state = store.getState();
    const text = e.type === "cut" ? state.cut() : state.copy();
    if (text === null) return;
    e.clipboardData.setData("text/plain", text);
    e.preventDefault();
    answered = true;
  }
  function onPaste(e: ClipboardEvent) {
    if (forText() || !e.clipboardData) return;
    e.preventDefault();
    store.getState().paste(e.clipboardData.getData("text/plain"));
  }
  window.addEventListener("copy", onCopyOrCut);
  window.addEventListener("cut", onCopyOrCut);
  window.addEventListener("paste", onPaste);
  return () => {
    window.removeEventListener("copy", onCopyOrCut);
    window.removeEventListener("cut", onCopyOrCut);
    window.removeEventListener("paste", onPaste);
  };
}

/**
 * Copies or cuts the selected tasks to the system clipboard from a command (the palette, a
 * button), where no clipboard event comes by itself: the web view is asked for one, and when it
 * gives none the async clipboard API is tried.
 */
export function copyToSystem(state: EditorState, kind: "copy" | "cut"): void {
  asked = true;
  answered = false;
  try {
    document.execCommand(kind);
  } catch {
    // Not supported here: the async clipboard API is tried below.
  } finally {
    asked = false;
  }
  if (answered || !state.blueprint) return;
  if (state.selection.length === 0) {
    state.copy(); // says that nothing is selected
    return;
  }
  const text = copyFragment(state.blueprint, state.selection);
  const written = navigator.clipboard?.writeText(text);
  if (!written) return state.clipboardRefused(KEYS[kind]);
  // Cut only once the text is safe on the clipboard.
  written.then(
    () => void (kind === "cut" ? state.cut() : state.copy()),
    () => state.clipboardRefused(KEYS[kind]),
  );
}

/**
 * Pastes from the system clipboard from a command. A web view lets a page read the clipboard
 * freely only in a paste event, so this asks through the async clipboard API, and says which
 * key to press when the web view refuses.
 */
export function pasteFromSystem(state: EditorState): void {
  const read = navigator.clipboard?.readText();
  if (!read) return state.clipboardRefused(KEYS.paste);
  read.then(
    (text) => state.paste(text),
    () => state.clipboardRefused(KEYS.paste),
  );
}

const KEYS = { copy: "Ctrl+C", cut: "Ctrl+X", paste: "Ctrl+V" };
