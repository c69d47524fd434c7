// The editor's copy, cut and paste through the system clipboard. They answer the DOM's clipboard
// events on the window: the web view then writes and reads the clipboard itself, which needs no
// clipboard permission in WebKitGTK, and a menu's Copy or Paste item reaches the editor the same
// way. A text field, and text the user selected, keep their own copy and paste.
//
// WebKit fires no clipboard event for Ctrl+C, Ctrl+X or Ctrl+V when nothing editable or selected
// has the focus, as on the canvas. So for those keys a hidden text field takes the focus for the
// moment of the key, with something selected in it: the web view then fires the event there,
// and the editor answers it as any other.
import { copyFragment } from "../clipboard";
import type { EditorState, EditorStore } from "../store/editor";
import { isTyping } from "./typing";

/** Set while the editor itself asks the web view for a clipboard event: the event is the editor's. */
let asked = false;
/** Whether the editor answered a clipboard event since it asked for one. */
let answered = false;

/**
 * Whether a clipboard event is for the text the user types or (to copy) selected, not for the
 * tasks: text selected in the page is copied as text, but nothing can be pasted into it.
 */
function forText(kind: "copy" | "cut" | "paste"): boolean {
  if (asked) return false;
  if (isTyping(document.activeElement)) return true;
  const selection = window.getSelection();
  return kind !== "paste" && selection !== null && !selection.isCollapsed;
}

const CLIPBOARD_KEYS: Record<string, "copy" | "cut" | "paste"> = { c: "copy", x: "cut", v: "paste" };

/**
 * Gives the focus to the hidden text field, with text selected in it to copy or none to paste
 * into, and asks that the next clipboard event be the editor's; answers how to give it back.
 */
function takeFocus(kind: "copy" | "cut" | "paste"): () => void {
  const before = document.activeElement;
  const field = catcher();
  field.value = kind === "paste" ? "" : "tasks";
  field.focus({ preventScroll: true });
  field.select();
  asked = true;
  answered = false;
  return () => {
    asked = false;
    field.value = "";
    if (before instanceof HTMLElement) before.focus({ preventScroll: true });
    else field.blur();
  };
}

function catcher(): HTMLTextAreaElement {
  const found = document.getElementById("orrery-clipboard-catcher");
  if (found instanceof HTMLTextAreaElement) return found;
  const field = document.createElement("textarea");
  field.id = "orrery-clipboard-catcher";
  field.tabIndex = -1;
  field.setAttribute("aria-hidden", "true");
  Object.assign(field.style, { position: "fixed", left: "-10000px", top: "0", width: "1px", height: "1px", opacity: "0" });
  document.body.appendChild(field);
  return field;
}

/** Listens to copy, cut and paste on the window for `store`; answers how to stop. */
export function listenToClipboard(store: EditorStore): () => void {
  function onCopyOrCut(e: ClipboardEvent) {
    if (forText(e.type === "cut" ? "cut" : "copy") || !e.clipboardData) return;
    const state = store.getState();
    const text = e.type === "cut" ? state.cut() : state.copy();
    if (text === null) return;
    e.clipboardData.setData("text/plain", text);
    e.preventDefault();
    answered = true;
  }
  function onPaste(e: ClipboardEvent) {
    if (forText("paste") || !e.clipboardData) return;
    e.preventDefault();
    answered = true;
    store.getState().paste(e.clipboardData.getData("text/plain"));
  }
  function onKeyDown(e: KeyboardEvent) {
    if (!(e.ctrlKey || e.metaKey) || e.shiftKey || e.altKey) return;
    const kind = CLIPBOARD_KEYS[e.key.toLowerCase()];
    if (!kind || forText(kind)) return;
    const state = store.getState();
    if (!state.blueprint || (kind !== "paste" && state.selection.length === 0)) return;
    const giveBack = takeFocus(kind);
    // The web view fires the event while it handles the key, before any timer runs.
    setTimeout(() => {
      giveBack();
      if (answered) return;
      if (kind === "paste") pasteFromSystem(store.getState());
      else copyToSystem(store.getState(), kind);
    }, 0);
  }
  window.addEventListener("copy", onCopyOrCut);
  window.addEventListener("cut", onCopyOrCut);
  window.addEventListener("paste", onPaste);
  window.addEventListener("keydown", onKeyDown);
  return () => {
    window.removeEventListener("copy", onCopyOrCut);
    window.removeEventListener("cut", onCopyOrCut);
    window.removeEventListener("paste", onPaste);
    window.removeEventListener("keydown", onKeyDown);
  };
}

/**
 * Copies or cuts the selected tasks to the system clipboard from a command (the palette, a
 * button), where no clipboard event comes by itself: the web view is asked for one, and when it
 * gives none the async clipboard API is tried.
 */
export function copyToSystem(state: EditorState, kind: "copy" | "cut"): void {
  const giveBack = takeFocus(kind);
  try {
    document.execCommand(kind);
  } catch {
    // Not supported here: the async clipboard API is tried below.
  } finally {
    giveBack();
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
