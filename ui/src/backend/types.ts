// The backend as the UI sees it: typed jobs of the facade, the files the user chooses, and the
// facade's events. `tauri.ts` implements it over IPC, `memory.ts` in memory for tests.
import type { AboutCommandAnswer, FailureCode, Jobs, MenuAction, OpenedFile, SessionEvent } from "./generated";

export type { MenuAction, OpenedFile };
export type About = AboutCommandAnswer;

export interface Backend {
  /** Calls a job of the facade; a refused call or a business failure throws a BackendError. */
  call<K extends keyof Jobs>(name: K, args: Jobs[K]["arguments"]): Promise<Jobs[K]["answer"]>;
  /** The blueprint the app was started with, if any. */
  startupFile(): Promise<OpenedFile | null>;
  /** Asks the user for a blueprint and reads it; null when cancelled. */
  openFile(): Promise<OpenedFile | null>;
  /** Writes a file the user opened or chose. */
  saveFile(path: string, text: string): Promise<void>;
  /**
   * Asks the user where to save and writes there; the file and the text written, or null when
   * cancelled. With `nameFromFile`, the blueprint takes its id and name from the file's name.
   */
  saveFileAs(text: string, nameFromFile?: boolean): Promise<OpenedFile | null>;
  /** Reads a blueprint beside one the user opened (an inner blueprint of a composite). */
  openLibraryFile(path: string): Promise<OpenedFile>;
  /** The files opened or saved lately, newest first; `openRecent` opens one of them. */
  recentFiles(): Promise<string[]>;
  openRecent(path: string): Promise<OpenedFile>;
  /** Exports for a server to a file the user picks; the path, or null when cancelled. */
  exportFile(text: string, to: "antikythera" | "compas"): Promise<string | null>;
  /** Saves an attempt's whole log to a file the user picks; the path, or null when cancelled. */
  saveAttemptLog(sessionId: string, task: string, attempt: number): Promise<string | null>;
  /** The app's version and where it keeps the store and the logs. */
  about(): Promise<About>;
  /** The window's title, and whether closing it must ask first. */
  setWindowState(title: string, unsaved: boolean): Promise<void>;
  /** Closes the window for good. */
  closeWindow(): Promise<void>;
  /** Follows the facade's session events; returns how to stop. */
  onEvent(handler: (event: SessionEvent) => void): () => void;
  /** Called when the app fell behind the event stream and missed some: what is shown must be read again. */
  onEventsLagged(handler: () => void): () => void;
  /** Follows the native menu's choices; returns how to stop. */
  onMenu(handler: (action: MenuAction) => void): () => void;
  /** Called when the user closes a window holding unsaved work (it stays open). */
  onCloseRequested(handler: () => void): () => void;
}

/**
 * A stable `code` to match on, generated from Rust: the shell's (`unknown_job`,
 * `invalid_argument`, `io`, `not_granted`) or a job's business failure (`invalid_blueprint`,
 * `not_found`, ...). A misspelt code does not compile.
 */
export class BackendError extends Error {
  constructor(
    readonly code: FailureCode,
    message: string,
  ) {
    super(message);
    this.name = "BackendError";
  }
}
