// The shape of the editor's store. The slices that build parts of it (copy-paste.ts, view.ts)
// act on the whole state, and the store (editor.ts) puts the slices together: the types they
// share live here, below all of them, so that none of them imports another for its types.
import type { StoreApi } from "zustand/vanilla";
import type {
  BlueprintFile,
  FileReport,
  GetTaskDefinitionAnswer,
  Scope,
  TaskDefinitionSummary,
  TaskNamesAnswer,
  Wire,
} from "../backend/generated";
import type { Blueprint } from "../blueprint";
import type { Position, Positions } from "./positions";

/**
 * One step of the undo history: the blueprint as it was, and the positions too when the step
 * moved nodes (an automatic layout); moves by hand are not steps.
 */
export type Snapshot = { blueprint: Blueprint; positions?: Positions };

export type CopyPasteSlice = {
  /** The selected tasks as blueprint text (null: nothing selected). */
  copy(): string | null;
  /** `copy`, then the selected tasks removed as one undo step. */
  cut(): string | null;
  /** Adds the tasks of blueprint text (one undo step); they become the selection. */
  paste(text: string): void;
  /** Copies and pastes the selected tasks in one go, without the clipboard. */
  duplicate(): void;
  /** Tells the user that the web view keeps the clipboard from a command, and which key works. */
  clipboardRefused(key: string): void;
};

export type PaletteMode = "commands" | "tasks";

export type ViewSlice = {
  /** The command palette, open to run commands or to find a task; null when closed. */
  palette: PaletteMode | null;
  /** Whether the canvas shows its minimap; null until the user chooses (see `showsMinimap`). */
  minimap: boolean | null;
  /** Asks the canvas to fit every task in view; a new number is a new request. */
  fitRequest: number;
  openPalette(mode: PaletteMode | null): void;
  toggleMinimap(): void;
  zoomToFit(): void;
};

export type EditorState = {
  path: string | null;
  /** How the open file is written: a COMPAS envelope is edited as plain JSON, saved back as one. */
  encoding: "antikythera" | "compas";
  blueprint: Blueprint | null;
  /** The blueprint as its file holds it (opened or last saved): any other one is unsaved work. */
  saved: Blueprint | null;
  past: Snapshot[];
  future: Snapshot[];
  /** Beside the blueprint, never in its file. */
  positions: Positions;
  /** Whether the layout of the open blueprint arrived: until then there is nothing to show. */
  laidOut: boolean;
  /** The facade's verdict on the current blueprint; null until it answers. */
  report: FileReport | null;
  /**
   * The blueprint's scopes as the facade derives them; until it answers for an edit, those of
   * the blueprint before it (regions that vanish on every keystroke would flicker).
   */
  scopes: Scope[];
  /** The selected scope, by the task that opens it; a selected task or dependency clears it. */
  selectedScope: string | null;
  taskTypes: TaskDefinitionSummary[];
  /** The selected task, or the selected dependency (an edge id of editor/graph.ts). */
  selected: string | null;
  /**
   * Every selected task, in the order they were chosen; `selected` is the one of them that the
   * inspector shows (the last clicked). An edit that removes a task takes it out.
   */
  selection: string[];
  selectedDependency: string | null;
  /** Asks the canvas to bring a task into view; `serial` tells repeated requests apart. */
  focus: { task: string; serial: number } | null;
  /** The names the selected task may read (for its condition and inputs); null until known. */
  names: TaskNamesAnswer | null;
  /** Task definitions by type, as they arrive; null for a type the facade does not know. */
  definitions: Record<string, GetTaskDefinitionAnswer | null>;
  /** The last thing the user should know: saved, or why something failed. */
  notice: { text: string; error: boolean } | null;
  /** Whether the canvas draws which output feeds which input (editor/wiring.ts) beside the dependencies. */
  showWiring: boolean;
  /** Which output feeds which input, from the facade, while the wiring is shown (null otherwise or until it answers). */
  wires: Wire[] | null;
  /** The blueprints of a folder (what a composite may call), the open file's once asked for. */
  blueprintFiles: { folder: string; files: BlueprintFile[] } | null;

  open(path: string, text: string): Promise<void>;
  /** Shows a blueprint that has no file yet (a new one): saving it asks where. */
  create(blueprint: Blueprint): Promise<void>;
  /** Checks the blueprint again (the files beside it may have changed). */
  revalidate(): void;
  setTaskTypes(types: TaskDefinitionSummary[]): void;
  /** Tells the user something in the status bar. */
  notify(text: string, error: boolean): void;
  /** Exports the blueprint for a server to a file the user picks (refused with the reasons). */
  exportFile(): Promise<void>;
  /**
   * Changes the blueprint as one undo step; successive edits with the same `coalesce` key (the
   * keystrokes of one field) make one step together.
   */
  edit(change: (blueprint: Blueprint) => Blueprint, coalesce?: string): void;
  /** Renames a task and the references to it; answers why not when refused. */
  renameTask(from: string, to: string): string | null;
  /** Lays every task out again (one undo step). */
  autoLayout(): Promise<void>;
  undo(): void;
  redo(): void;
  save(): Promise<void>;
  saveAs(): Promise<void>;
  /** Adds a task of `type` below the others and brings it into view. */
  /** Adds a task of `type` at `at` (where it was dropped), else below the others, and selects it. */
  addTask(type: string, at?: Position): void;
  moveTask(id: string, position: Position): void;
  /** Selects this task alone (or nothing). */
  select(id: string | null): void;
  /** Applies the canvas's selection changes: a click, a Shift+click, a selection box. */
  changeSelection(changes: { id: string; selected: boolean }[]): void;
  selectAll(): void;
  /** Removes tasks and dependencies (of `to` on `from`) as one undo step. */
  deleteTasks(ids: string[], dependencies?: { from: string; to: string }[]): void;
  /** Removes the selected tasks, or else the selected dependency, as one undo step. */
  deleteSelection(): void;
  /** Moves several tasks at once (a dragged selection). */
  moveTasks(positions: Positions): void;
  selectDependency(id: string | null): void;
  focusTask(id: string): void;
  /** Shows or hides the data wiring on the canvas. */
  toggleWiring(): void;
  /** Lists the blueprints in the open file's folder into `blueprintFiles`. */
  loadBlueprintFiles(): Promise<void>;
  /** Selects a scope by the task that opens it, in place of a task or dependency. */
  selectScope(start: string | null): void;
  /**
   * Wraps tasks `ids` in a new scope (one undo step) and selects it; answers why not when
   * refused, which the notice says too.
   */
  createScope(ids: string[], name?: string): Promise<string | null>;
  /** Removes the scope opened by `start`, its tasks kept (one undo step). */
  removeScope(start: string): void;
} & CopyPasteSlice &
  ViewSlice;

export type EditorStore = StoreApi<EditorState>;
