// An in-memory backend for tests: jobs answered by the handlers a test gives, files in a map.
import type { EventView, Jobs } from "./generated";
import { BackendError, type Backend, type OpenedFile } from "./types";

export type JobHandlers = {
  [K in keyof Jobs]?: (args: Jobs[K]["arguments"]) => Jobs[K]["answer"] | Promise<Jobs[K]["answer"]>;
};

export class MemoryBackend implements Backend {
  /** Every file by path: what was opened, and what was saved. */
  readonly files = new Map<string, string>();
  /** What the next open or save-as dialog answers (null: the user cancels). */
  nextDialogPath: string | null = null;
  private readonly listeners = new Set<(event: EventView) => void>();

  constructor(
    private readonly jobs: JobHandlers,
    files: Record<string, string> = {},
    private readonly startup: string | null = null,
  ) {
    for (const [path, text] of Object.entries(files)) this.files.set(path, text);
  }

  async call<K extends keyof Jobs>(name: K, args: Jobs[K]["arguments"]): Promise<Jobs[K]["answer"]> {
    const handler = this.jobs[name] as ((args: Jobs[K]["arguments"]) => Jobs[K]["answer"]) | undefined;
    if (!handler) throw new BackendError("unknown_job", `there is no job named ${name}`);
    return handler(args);
  }

  async startupFile(): Promise<OpenedFile | null> {
    return this.startup === null ? null : this.read(this.startup);
  }

  async openFile(): Promise<OpenedFile | null> {
    return this.nextDialogPath === null ? null : this.read(this.nextDialogPath);
  }

  async saveFile(path: string, text: string): Promise<void> {
    if (!this.files.has(path)) throw new BackendError("not_granted", `${path} was not opened or chosen`);
    this.files.set(path, text);
  }

  async saveFileAs(text: string): Promise<string | null> {
    const path = this.nextDialogPath;
    if (path !== null) this.files.set(path, text);
    return path;
  }

  onEvent(handler: (event: EventView) => void): () => void {
    this.listeners.add(handler);
    return () => this.listeners.delete(handler);
  }

  /** Delivers an event as the facade would. */
  emit(event: EventView): void {
    for (const listener of this.listeners) listener(event);
  }

  private read(path: string): OpenedFile {
    const text = this.files.get(path);
    if (text === undefined) throw new BackendError("io", `cannot read ${path}`);
    return { path, text };
  }
}
