// The one module that talks to Tauri: every command goes through the generated `Commands`
// types, so a renamed command or argument fails the type check.
import { invoke } from "@tauri-apps/api/core";
import { listen } from "@tauri-apps/api/event";
import {
  CLOSE_REQUESTED,
  EVENT,
  EVENTS_LAGGED,
  MENU,
  type Commands,
  type FailureCode,
  type SessionEvent,
  type IpcError,
  type Jobs,
  type MenuAction,
} from "./generated";
import { BackendError, type Backend } from "./types";

async function command<K extends keyof Commands>(
  name: K,
  args: Commands[K]["arguments"],
): Promise<Commands[K]["answer"]> {
  try {
    return await invoke<Commands[K]["answer"]>(name, args);
  } catch (e) {
    // Tauri rejects with the command's IpcError, or with a string of its own (a fault of the app).
    const error = e as Partial<IpcError>;
    throw new BackendError(error.code ?? "internal", error.message ?? String(e));
  }
}

export const tauriBackend: Backend = {
  async call<K extends keyof Jobs>(name: K, args: Jobs[K]["arguments"]) {
    const envelope = await command("call_job", { name, arguments: args });
    if (!envelope.success) {
      const metadata = envelope.metadata as { error?: FailureCode };
      throw new BackendError(metadata.error ?? "internal", String(envelope.answer));
    }
    return envelope.answer as Jobs[K]["answer"];
  },
  startupFile: () => command("startup_blueprint_file", {}),
  openFile: () => command("open_blueprint_file", {}),
  async saveFile(path, text) {
    await command("save_blueprint_file", { path, text });
  },
  saveFileAs: (text, nameFromFile) => command("save_blueprint_file_as", { text, name_from_file: nameFromFile ?? false }),
  openLibraryFile: (path) => command("open_library_blueprint_file", { path }),
  recentFiles: () => command("recent_blueprint_files", {}),
  about: () => command("about", {}),
  openRecent: (path) => command("open_recent_blueprint_file", { path }),
  exportFile: (text, to) => command("export_blueprint_file", { text, to }),
  saveAttemptLog: (session_id, task, attempt) => command("save_attempt_log", { session_id, task, attempt }),
  async setWindowState(title, unsaved) {
    await command("set_window_state", { title, unsaved });
  },
  async closeWindow() {
    await command("close_window", {});
  },
  onEvent: (handler) => follow<SessionEvent>(EVENT, handler),
  onEventsLagged: (handler) => follow<number>(EVENTS_LAGGED, () => handler()),
  onMenu: (handler) => follow<MenuAction>(MENU, handler),
  onCloseRequested: (handler) => follow<null>(CLOSE_REQUESTED, () => handler()),
};

function follow<T>(name: string, handler: (payload: T) => void): () => void {
  const stop = listen<T>(name, (event) => handler(event.payload));
  return () => void stop.then((unlisten) => unlisten());
}
