// An in-memory backend for tests: jobs answered by the handlers a test gives, files in a map.
import type { SessionEvent, Jobs } from "./generated";
import { BackendError, type About, type Backend, type MenuAction, type OpenedFile } from "./types";
import { fileName } from "../paths";

export type JobHandlers = {
  [K in keyof Jobs]?: (args: Jobs[K]["arguments"]) => Jobs[K]["answer"] | Promise<Jobs[K]["answer"]>;
};

export class MemoryBackend implements Backend {
  /** Every file by path: what was opened, and what was saved. */
  readonly files = new Map<string, string>();
  /** What the next open or save-as dialog answers (null: the user cancels). */
  nextDialogPath: string | null = null;
  /** Files opened or saved, newest first. */
  readonly recent: string[] = [];
  /** The window's title and whether it holds unsaved work, as last set; whether it closed. */
  window = { title: "", unsaved: false, closed: false };
  private readonly listeners = new Set<(event: SessionEvent) => void>();
  private readonly menuListeners = new Set<(action: MenuAction) => void>();
  private readonly lagListeners = new Set<() => void>();
  private readonly closeListeners = new Set<() => void>();

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

  async saveFileAs(text: string, nameFromFile = false): Promise<OpenedFile | null> {
    const path = this.nextDialogPath;
    if (path === null) return null;
    // As the shell names it (commands.rs `names_from_file`), for the names tests use.
    if (nameFromFile) {
      const id = fileName(path).replace(/(\.blueprint)?\.json$/, "");
      const name = id.charAt(0).toUpperCase() + id.slice(1).replace(/[-_]+/g, " ");
      text = JSON.stringify({ ...JSON.parse(text), id, name });
    }
    this.files.set(path, text);
    this.remember(path);
    return { path, text };
  }

  async openLibraryFile(path: string): Promise<OpenedFile> {
    return this.read(path);
  }

  async recentFiles(): Promise<string[]> {
    return [...this.recent];
  }

  async about(): Promise<About> {
    return { version: "0.0.0-memory", store: ":memory:", logs: "/tmp/orrery-memory/runs", login_shell: null, path: null };
  }

  async openRecent(path: string): Promise<OpenedFile> {
    if (!this.recent.includes(path)) throw new BackendError("not_granted", `${path} is not among the recent files`);
    return this.read(path);
  }

  async exportFile(text: string, to: "antikythera" | "compas"): Promise<string | null> {
    const exported = await this.call("export_blueprint", { text, to });
    const path = this.nextDialogPath;
    if (path !== null) this.files.set(path, exported.text);
    return path;
  }

  async saveAttemptLog(sessionId: string, task: string, attempt: number): Promise<string | null> {
    const path = this.nextDialogPath;
    if (path !== null) this.files.set(path, `log of ${sessionId} ${task} #${attempt}`);
    return path;
  }

  async setWindowState(title: string, unsaved: boolean): Promise<void> {
    this.window = { ...this.window, title, unsaved };
  }

  async closeWindow(): Promise<void> {
    this.window = { ...this.window, closed: true };
  }

  onEvent(handler: (event: SessionEvent) => void): () => void {
    this.listeners.add(handler);
    return () => this.listeners.delete(handler);
  }

  onEventsLagged(handler: () => void): () => void {
    this.lagListeners.add(handler);
    return () => this.lagListeners.delete(handler);
  }

  /** As the shell does when the app fell behind the event stream. */
  lag(): void {
    for (const handler of this.lagListeners) handler();
  }

  onMenu(handler: (action: MenuAction) => void): () => void {
    this.menuListeners.add(handler);
    return () => this.menuListeners.delete(handler);
  }

  onCloseRequested(handler: () => void): () => void {
    this.closeListeners.add(handler);
    return () => this.closeListeners.delete(handler);
  }

  /** A choice in the native menu, as the shell would deliver it. */
  chooseMenu(action: MenuAction): void {
    for (const listener of this.menuListeners) listener(action);
  }

  /** The user closes the window while it holds unsaved work (the shell asks the UI). */
  requestClose(): void {
    if (!this.window.unsaved) {
      this.window = { ...this.window, closed: true };
      return;
    }
    for (const listener of this.closeListeners) listener();
  }

  /** Delivers an event as the facade would. */
  emit(event: SessionEvent): void {
    for (const listener of this.listeners) listener(event);
  }

  private read(path: string): OpenedFile {
    const text = this.files.get(path);
    if (text === undefined) throw new BackendError("io", `cannot read ${path}`);
    this.remember(path);
    return { path, text };
  }

  private remember(path: string): void {
    const at = this.recent.indexOf(path);
    if (at >= 0) this.recent.splice(at, 1);
    this.recent.unshift(path);
  }
}
