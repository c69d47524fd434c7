// Every command of the editor, declared once: the keyboard shortcuts (editor/Editor.tsx) and the
// command palette (editor/CommandPalette.tsx) both read this list. A new command is one more
// entry in COMMANDS.
import { copyToSystem, pasteFromSystem } from "./editor/system-clipboard";
import type { EditorState } from "./store/editor";
import type { WorkspaceState } from "./store/workspace";

/** A key pressed with Ctrl (Cmd on macOS), or alone when `bare`. */
export type Shortcut = { key: string; shift?: boolean; bare?: boolean };

export type Command = {
  /** Stable: tests and menus find the command by it. */
  id: string;
  title: string;
  /** The keys shown for the command. */
  shortcut?: Shortcut;
  /** Other keys that run it too, not shown (Ctrl+Y for redo). */
  otherShortcuts?: Shortcut[];
  /**
   * The shortcut reaches the command by another way than the editor's key handler, which then
   * leaves it alone: a clipboard event (editor/system-clipboard.ts), or the canvas (Delete).
   */
  keyedElsewhere?: boolean;
  /** Whether the shortcut acts while the user types in a text field (Save does, Select all not). */
  whileTyping?: boolean;
  /** Whether the command can run now; a command without it always can. */
  enabled?(state: EditorState): boolean;
  /** Runs it on the shown blueprint's editor, in the window's workspace (tabs, files). */
  run(state: EditorState, workspace: WorkspaceState): unknown;
};

const hasBlueprint = (s: EditorState) => s.blueprint !== null;
const hasSelection = (s: EditorState) => s.blueprint !== null && s.selection.length > 0;

export const COMMANDS: Command[] = [
  {
    id: "palette.commands",
    title: "Show all commands",
    shortcut: { key: "k" },
    otherShortcuts: [{ key: "p", shift: true }],
    whileTyping: true,
    run: (s) => s.openPalette("commands"),
  },
  {
    id: "palette.find",
    title: "Find a task",
    shortcut: { key: "f" },
    whileTyping: true,
    enabled: hasBlueprint,
    run: (s) => s.openPalette("tasks"),
  },
  { id: "file.new", title: "New blueprint", shortcut: { key: "n" }, whileTyping: true, run: (_, w) => w.newBlueprint() },
  { id: "file.open", title: "Open…", shortcut: { key: "o" }, whileTyping: true, run: (_, w) => w.openFile() },
  { id: "file.save", title: "Save", shortcut: { key: "s" }, whileTyping: true, enabled: hasBlueprint, run: (s) => s.save() },
  {
    id: "file.save-as",
    title: "Save as…",
    shortcut: { key: "s", shift: true },
    whileTyping: true,
    enabled: hasBlueprint,
    run: (s) => s.saveAs(),
  },
  {
    id: "file.export",
    title: "Export for a server…",
    shortcut: { key: "e" },
    whileTyping: true,
    enabled: hasBlueprint,
    run: (s) => s.exportFile(),
  },
  {
    id: "file.publish",
    title: "Publish to a server…",
    whileTyping: true,
    enabled: hasBlueprint,
    run: (_, w) => w.preparePublish(),
  },
  { id: "file.close-tab", title: "Close tab", shortcut: { key: "w" }, whileTyping: true, run: (_, w) => w.closeTab(w.active) },
  { id: "file.quit", title: "Quit", shortcut: { key: "q" }, whileTyping: true, run: (_, w) => w.closeWindow() },
  {
    id: "edit.undo",
    title: "Undo",
    shortcut: { key: "z" },
    whileTyping: true,
    enabled: (s) => s.past.length > 0,
    run: (s) => s.undo(),
  },
  {
    id: "edit.redo",
    title: "Redo",
    shortcut: { key: "z", shift: true },
    otherShortcuts: [{ key: "y" }],
    whileTyping: true,
    enabled: (s) => s.future.length > 0,
    run: (s) => s.redo(),
  },
  {
    id: "edit.copy",
    title: "Copy",
    shortcut: { key: "c" },
    keyedElsewhere: true,
    enabled: hasSelection,
    run: (s) => copyToSystem(s, "copy"),
  },
  {
    id: "edit.cut",
    title: "Cut",
    shortcut: { key: "x" },
    keyedElsewhere: true,
    enabled: hasSelection,
    run: (s) => copyToSystem(s, "cut"),
  },
  {
    id: "edit.paste",
    title: "Paste",
    shortcut: { key: "v" },
    keyedElsewhere: true,
    enabled: hasBlueprint,
    run: (s) => pasteFromSystem(s),
  },
  {
    id: "edit.add-task",
    title: "Add a task…",
    shortcut: { key: "a", shift: true },
    enabled: (s) => s.blueprint !== null && s.laidOut,
    // Wired in after the selected task, else before the end (addTask's own choice).
    run: (s) => s.openAdd(),
  },
  { id: "edit.duplicate", title: "Duplicate", shortcut: { key: "d" }, enabled: hasSelection, run: (s) => s.duplicate() },
  { id: "edit.select-all", title: "Select all tasks", shortcut: { key: "a" }, enabled: hasBlueprint, run: (s) => s.selectAll() },
  {
    id: "edit.delete",
    title: "Delete",
    shortcut: { key: "Delete", bare: true },
    keyedElsewhere: true,
    enabled: (s) => hasSelection(s) || s.selectedDependency !== null,
    run: (s) => s.deleteSelection(),
  },
  {
    id: "scope.from-selection",
    title: "Scope from selection",
    shortcut: { key: "g" },
    enabled: hasSelection,
    run: (s) => s.createScope(s.selection),
  },
  {
    id: "layout.auto",
    title: "Auto-layout",
    shortcut: { key: "l" },
    whileTyping: true,
    enabled: hasBlueprint,
    run: (s) => s.autoLayout(),
  },
  { id: "view.fit", title: "Zoom to fit", shortcut: { key: "0" }, enabled: (s) => s.laidOut, run: (s) => s.zoomToFit() },
  { id: "view.minimap", title: "Toggle minimap", enabled: hasBlueprint, run: (s) => s.toggleMinimap() },
  { id: "view.wiring", title: "Toggle data wiring", enabled: hasBlueprint, run: (s) => s.toggleWiring() },
  { id: "run.start", title: "Run", shortcut: { key: "F5", bare: true }, whileTyping: true, enabled: hasBlueprint, run: (_, w) => w.prepareRun() },
  {
    id: "run.options",
    title: "Run with options…",
    shortcut: { key: "F5", bare: true, shift: true },
    whileTyping: true,
    enabled: hasBlueprint,
    run: (_, w) => w.prepareRun(true),
  },
  {
    id: "run.simulate",
    title: "Simulate…",
    whileTyping: true,
    enabled: hasBlueprint,
    run: (_, w) => w.prepareRun(true, true),
  },
  { id: "run.broker", title: "Agents on a broker…", run: (_, w) => w.broker.getState().open() },
  { id: "help.about", title: "About Orrery", run: (_, w) => void w.about.getState().open() },
  {
    id: "run.servers",
    title: "Runs on a server…",
    // The dialog lives in the run views: they show the run it follows.
    run: (_, w) => {
      w.setMode("runs");
      void w.serverRuns.getState().open();
    },
  },
  { id: "view.runs", title: "Show the runs", shortcut: { key: "r", shift: true }, whileTyping: true, run: (_, w) => w.setMode("runs") },
  {
    id: "view.blueprints",
    title: "Show the blueprints",
    shortcut: { key: "e", shift: true },
    whileTyping: true,
    run: (_, w) => w.setMode("edit"),
  },
];

type Keys = { key: string; ctrlKey: boolean; metaKey: boolean; shiftKey: boolean };

function pressed(shortcut: Shortcut, e: Keys): boolean {
  const ctrl = e.ctrlKey || e.metaKey;
  return (
    e.key.toLowerCase() === shortcut.key.toLowerCase() &&
    (shortcut.shift ?? false) === e.shiftKey &&
    (shortcut.bare ? !ctrl : ctrl)
  );
}

/** The command that a key press runs, if any; `typing`: focus is in a text field. */
export function commandForKey(e: Keys, typing: boolean, commands: Command[] = COMMANDS): Command | undefined {
  return commands.find(
    (c) =>
      !c.keyedElsewhere &&
      (!typing || c.whileTyping) &&
      [c.shortcut, ...(c.otherShortcuts ?? [])].some((s) => s !== undefined && pressed(s, e)),
  );
}

/** How a shortcut is written for the user: `Ctrl+Shift+S`, `Delete`. */
export function shortcutText(shortcut: Shortcut): string {
  const key = shortcut.key.length === 1 ? shortcut.key.toUpperCase() : shortcut.key;
  return [shortcut.bare ? null : "Ctrl", shortcut.shift ? "Shift" : null, key].filter(Boolean).join("+");
}

/** The commands whose title holds every word of `query` (any case), those starting with it first. */
export function matchingCommands(query: string, commands: Command[] = COMMANDS): Command[] {
  const words = query.toLowerCase().split(/\s+/).filter(Boolean);
  const matches = commands.filter((c) => words.every((w) => c.title.toLowerCase().includes(w)));
  const q = query.trim().toLowerCase();
  const first = matches.filter((c) => c.title.toLowerCase().startsWith(q));
  return [...first, ...matches.filter((c) => !first.includes(c))];
}

/** The commands whose shortcuts act in the run views too: they concern the window, not a blueprint. */
export const WINDOW_COMMANDS = new Set(["file.new", "file.open", "file.quit", "view.blueprints"]);

/** Whether a command can run now (one without `enabled` always can). */
export function canRun(command: Command, editor: EditorState): boolean {
  return command.enabled?.(editor) ?? true;
}

/** Runs the command `id` (a choice of the native menu) when it can run now. */
export function runCommand(id: string, editor: EditorState, workspace: WorkspaceState): void {
  const command = COMMANDS.find((c) => c.id === id);
  if (command && canRun(command, editor)) void command.run(editor, workspace);
}
