// The backend as the UI sees it: typed jobs of the facade, the files the user chooses, and the
// facade's events. `tauri.ts` implements it over IPC, `memory.ts` in memory for tests.
import type { EventView, Jobs, OpenedFile } from "./generated";

export type { OpenedFile };

export interface Backend {
  /** Calls a job of the facade; a refused call or a business failure throws a BackendError. */
  call<K extends keyof Jobs>(name: K, args: Jobs[K]["arguments"]): Promise<Jobs[K]["answer"]>;
  /** The blueprint the app was started with, if any. */
  startupFile(): Promise<OpenedFile | null>;
  /** Asks the user for a blueprint and reads it; null when cancelled. */
  openFile(): Promise<OpenedFile | null>;
  /** Writes a file the user opened or chose. */
  saveFile(path: string, text: string): Promise<void>;
  /** Asks the user where to save and writes there; the path, or null when cancelled. */
  saveFileAs(text: string): Promise<string | null>;
  /** Follows the facade's session events; returns how to stop. */
  onEvent(handler: (event: EventView) => void): () => void;
}

/**
 * A stable `code` to match on: the shell's (`unknown_job`, `invalid_arguments`, `io`,
 * `not_granted`) or a job's business failure (`invalid_blueprint`, `not_found`, ...).
 */
export class BackendError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = "BackendError";
  }
}
