// The shape of the editor's store. Each slice module builds one part of it (files.ts, history.ts,
// placement.ts, facade.ts, selection.ts, task-edits.ts, copy-paste.ts, view.ts) and acts on the
// whole state; the store (editor.ts) puts the slices together. The types they share live here,
// below all of them, so that none of them imports another for its types.
import type { StoreApi } from "zustand/vanilla";
import type { Backend } from "../backend/types";
import type {
  BlueprintFile,
  BreakAtArgument,
  Direction,
  FileReport,
  GetTaskTypeAnswer,
  Scope,
  TaskTypeSummary,
  TaskNamesAnswer,
  Wire,
} from "../backend/generated";
import type { Blueprint, Insertion } from "../blueprint";
import type { Position, Positions } from "./positions";

/** Places the tasks of a blueprint (the app uses editor/layered.ts). */
export type Layout = (blueprint: Blueprint, direction?: Direction) => Promise<Positions>;
/** Breakpoints by task id (`before` the task starts, `after` it ended). */
export type Breakpoints = Record<string, BreakAtArgument>;
/** What the layout beside a file gives an opened blueprint. */
export type Laid = { positions: Positions; direction: Direction; breakpoints: Breakpoints };

/**
 * One step of the undo history: the blueprint as it was, and the positions too when the step
 * moved nodes (an automatic layout); moves by hand are not steps.
 */
export type Snapshot = { blueprint: Blueprint; positions?: Positions };

/** The open file (files.ts). */
export type FileSlice = {
  path: string | null;
  /** How the open file is written: a COMPAS envelope is edited as plain JSON, saved back as one. */
  encoding: "antikythera" | "compas";
  /** The blueprint as its file holds it (opened or last saved): any other one is unsaved work. */
  saved: Blueprint | null;
  /** The blueprints of a folder (what a composite may call), the open file's once asked for. */
  blueprintFiles: { folder: string; files: BlueprintFile[] } | null;
  open(path: string, text: string): Promise<void>;
  /**
   * Shows a blueprint that has no file yet (a new one): saving it asks where. A run's canvas
   * gives the file it ran from, whose layout (positions and direction) it then shows.
   */
  create(blueprint: Blueprint, layoutOf?: string): Promise<void>;
  /** Exports the blueprint for a server to a file the user picks (refused with the reasons). */
  exportFile(): Promise<void>;
  save(): Promise<void>;
  saveAs(): Promise<void>;
  /** Lists the blueprints in the open file's folder into `blueprintFiles`. */
  loadBlueprintFiles(): Promise<void>;
};

/** The blueprint and its undo history (history.ts). */
export type HistorySlice = {
  blueprint: Blueprint | null;
  past: Snapshot[];
  future: Snapshot[];
  /**
   * Changes the blueprint as one undo step; successive edits with the same `coalesce` key (the
   * keystrokes of one field) make one step together.
   */
  edit(change: (blueprint: Blueprint) => Blueprint, coalesce?: string): void;
  undo(): void;
  redo(): void;
};

/** Where the nodes sit (placement.ts). */
export type PlacementSlice = {
  /** Beside the blueprint, never in its file. */
  positions: Positions;
  /** Whether the layout of the open blueprint arrived: until then there is nothing to show. */
  laidOut: boolean;
  /** Which way the automatic layout lays tasks out; kept in the layout beside the file. */
  direction: Direction;
  /** Where a run started from the editor holds, by task id; kept in the layout beside the file. */
  breakpoints: Breakpoints;
  /** Sets (or, with null, clears) the breakpoint of a task. */
  setBreakpoint(id: string, at: BreakAtArgument | null): void;
  /** Lays every task out again (one undo step). */
  autoLayout(): Promise<void>;
  /** Lays every task out again the other way, and keeps that way for the file. */
  setDirection(direction: Direction): Promise<void>;
  moveTask(id: string, position: Position): void;
  /** Moves several tasks at once (a dragged selection). */
  moveTasks(positions: Positions): void;
};

/** What the facade says about the open blueprint (facade.ts). */
export type FacadeSlice = {
  /**
   * The facade's verdict; null until it first answers for the open blueprint. After an edit it
   * is the verdict on the blueprint before until the facade answers (a panel and badges that
   * vanished on every keystroke would flicker): `checked` says which blueprint it is about.
   */
  report: FileReport | null;
  checked: Blueprint | null;
  /**
   * The blueprint's scopes as the facade derives them; until it answers for an edit, those of
   * the blueprint before it (regions that vanish on every keystroke would flicker).
   */
  scopes: Scope[];
  taskTypes: TaskTypeSummary[];
  /** The names the selected task may read (for its condition and inputs); null until known. */
  names: TaskNamesAnswer | null;
  /** Task definitions by type, as they arrive; null for a type the facade does not know. */
  definitions: Record<string, GetTaskTypeAnswer | null>;
  /** Whether the canvas draws which output feeds which input (editor/wiring.ts) beside the dependencies. */
  showWiring: boolean;
  /** Which output feeds which input, from the facade, while the wiring is shown (null otherwise or until it answers). */
  wires: Wire[] | null;
  /** Checks the blueprint again (the files beside it may have changed). */
  revalidate(): void;
  setTaskTypes(types: TaskTypeSummary[]): void;
  /** Shows or hides the data wiring on the canvas. */
  toggleWiring(): void;
};

/** What is selected, and the task the canvas is asked to show (selection.ts). */
export type SelectionSlice = {
  /** The selected scope, by the task that opens it; a selected task or dependency clears it. */
  selectedScope: string | null;
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
  /** Selects this task alone (or nothing). */
  select(id: string | null): void;
  /** Applies the canvas's selection changes: a click, a Shift+click, a selection box. */
  changeSelection(changes: { id: string; selected: boolean }[]): void;
  selectAll(): void;
  selectDependency(id: string | null): void;
  focusTask(id: string): void;
  /** Selects a scope by the task that opens it, in place of a task or dependency. */
  selectScope(start: string | null): void;
};

/** The edits of tasks, dependencies and scopes that the editor offers (task-edits.ts). */
export type TaskEditsSlice = {
  /** Renames a task and the references to it; answers why not when refused. */
  renameTask(from: string, to: string): string | null;
  /**
   * Adds a task of `type` wired in at `where` and selects it. Without `where` it goes after the
   * selected task, else before the end task; placed at `at` (where it was dropped), else under
   * the task it follows, what runs after it moved down to make room.
   */
  addTask(type: string, at?: Position, where?: Insertion | null): void;
  /** Removes tasks and dependencies (of `to` on `from`) as one undo step. */
  deleteTasks(ids: string[], dependencies?: { from: string; to: string }[]): void;
  /** Removes the selected tasks, or else the selected dependency, as one undo step. */
  deleteSelection(): void;
  /**
   * Wraps tasks `ids` in a new scope (one undo step) and selects it; answers why not when
   * refused, which the notice says too.
   */
  createScope(ids: string[], name?: string): Promise<string | null>;
  /** Removes the scope opened by `start`, its tasks kept (one undo step). */
  removeScope(start: string): void;
};

/** The copy, cut, paste and duplicate of tasks (copy-paste.ts). */
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

export type PaletteMode = "commands" | "tasks" | "add";

/**
 * A task about to be added from the palette's "add" mode: wired in at `where` (as `addTask`
 * takes it), placed at `at` in the flow; `screen` is where the palette opens (by the pointer).
 */
export type Adding = { where?: Insertion | null; at?: Position; screen?: { x: number; y: number } };

/** What the editor shows around the blueprint (view.ts). */
export type ViewSlice = {
  /** The last thing the user should know: saved, or why something failed. */
  notice: { text: string; error: boolean } | null;
  /** The command palette, open to run commands, to find a task or to add one; null when closed. */
  palette: PaletteMode | null;
  /** What the palette's "add" mode adds; null in its other modes. */
  adding: Adding | null;
  /** Whether the canvas shows its minimap; null until the user chooses (see `showsMinimap`). */
  minimap: boolean | null;
  /** Asks the canvas to fit every task in view; a new number is a new request. */
  fitRequest: number;
  /** Tells the user something in the status bar. */
  notify(text: string, error: boolean): void;
  openPalette(mode: PaletteMode | null): void;
  /** Opens the palette on the task types, to add one as `adding` says. */
  openAdd(adding?: Adding): void;
  toggleMinimap(): void;
  zoomToFit(): void;
};

export type EditorState = FileSlice &
  HistorySlice &
  PlacementSlice &
  FacadeSlice &
  SelectionSlice &
  TaskEditsSlice &
  CopyPasteSlice &
  ViewSlice;

export type EditorStore = StoreApi<EditorState>;

/**
 * The questions to the facade about the open blueprint (facade.ts). Each answer sets its part
 * of the state; the answer to an older question is dropped: only the newest blueprint's counts.
 */
export type FacadeQuestions = {
  /** The verdict on `blueprint`, then the names the selected task may read. */
  validate(blueprint: Blueprint): Promise<void>;
  /** The scopes of `blueprint`. */
  refreshScopes(blueprint: Blueprint): Promise<void>;
  /** The wiring of the newest blueprint, while it is shown. */
  refreshWiring(): Promise<void>;
  /** What the selected task (or the task opening the selected scope) may read. */
  refreshNames(): Promise<void>;
  /** The definition of a task type, asked once. */
  loadDefinition(type: string): Promise<void>;
};

/** The layouts of the open blueprint, asked for and written beside its file (placement.ts). */
export type LayoutKeeping = {
  /** Writes the layout beside the open file once the nodes rest; never for an unsaved blueprint. */
  scheduleLayoutSave(): void;
  /** Writes the layout beside the open file now. */
  saveLayout(): Promise<void>;
  /** The positions to show for a file: its saved layout, completed by the automatic one, and its direction. */
  positionsFor(path: string, blueprint: Blueprint): Promise<Laid>;
  /**
   * Counts one more blueprint opened (or created) and drops the layout save pending for the one
   * before; answers the count.
   */
  countOpening(): number;
  /** How many blueprints were opened: a layout that arrives after the count changed is dropped. */
  openings(): number;
};

/** What the other slices do to the blueprint's history (history.ts). */
export type HistoryKeeping = {
  /**
   * Shows `blueprint` with this history (and these positions, when given), keeps of the
   * selection what it still has, and asks the facade about it.
   */
  replace(blueprint: Blueprint, past: Snapshot[], future: Snapshot[], positions?: Positions): void;
  /** Makes the next edit an undo step of its own, whatever its `coalesce` key. */
  newStep(): void;
  /** Whether an edit with the key `coalesce` joins the step of the edit before; it is the last key from now on. */
  joins(coalesce: string | undefined): boolean;
};

/** How the other slices change the selection (selection.ts). */
export type SelectionKeeping = {
  /**
   * Makes `selection` the selected tasks and `primary` the one the inspector shows. A choice
   * of no task keeps the selected dependency unless asked: React Flow deselects the nodes
   * right after it selects an edge.
   */
  choose(primary: string | null, selection: string[], dropDependency: boolean): void;
};

/**
 * What the slices of one store share besides its state, made once per store by editor.ts: the
 * backend, the automatic layout, and the helpers that more than one slice calls.
 */
export type EditorInternals = {
  backend: Backend;
  layout: Layout;
  /** Says in the notice why something failed. */
  fail(e: unknown): void;
} & FacadeQuestions &
  LayoutKeeping &
  HistoryKeeping &
  SelectionKeeping;

/** How a slice changes, and reads, the state of the store it is part of. */
export type SetEditor = StoreApi<EditorState>["setState"];
export type GetEditor = StoreApi<EditorState>["getState"];
