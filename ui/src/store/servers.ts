// Antikythera servers, as the app shows them: the ones saved by name (shared with the CLI, kept
// in the task store) and publishing the open blueprint's file to one. The facade checks the
// file with its folder, sends the inner blueprints it calls first, and says per blueprint what
// happened (uploaded, invalid, refused by the server with its problems, not sent).
import { createStore, type StoreApi } from "zustand/vanilla";
import type { PublishBlueprintsAnswer, ServerInfo } from "../backend/generated";
import type { Backend } from "../backend/types";

export type ServersState = {
  servers: ServerInfo[];
  /** The blueprint file being published while the dialog is open, and its title. */
  publishing: { file: string; name: string } | null;
  /** What the last publication did. */
  result: PublishBlueprintsAnswer | null;
  busy: boolean;
  error: string | null;

  /** Opens the dialog for `file`, with the saved servers. */
  open(file: string, name: string): Promise<void>;
  close(): void;
  /** Saves a server; whether it was saved. */
  save(name: string, url: string, token: string): Promise<boolean>;
  remove(name: string): Promise<void>;
  /** Publishes the open file to `server` (a saved name or an address). */
  publish(server: string, force: boolean): Promise<void>;
};

export type ServersStore = StoreApi<ServersState>;

const message = (e: unknown) => (e instanceof Error ? e.message : String(e));

export function createServers(backend: Backend): ServersStore {
  return createStore<ServersState>()((set, get) => {
    async function load() {
      try {
        set({ servers: await backend.call("list_servers", {}) });
      } catch (e) {
        set({ error: message(e) });
      }
    }

    return {
      servers: [],
      publishing: null,
      result: null,
      busy: false,
      error: null,

      async open(file, name) {
        set({ publishing: { file, name }, result: null, error: null, busy: false });
        await load();
      },

      close() {
        set({ publishing: null, result: null, error: null });
      },

      async save(name, url, token) {
        try {
          await backend.call("save_server", { name, url, token: token || null });
          set({ error: null });
          await load();
          return true;
        } catch (e) {
          set({ error: message(e) });
          return false;
        }
      },

      async remove(name) {
        try {
          await backend.call("remove_server", { name });
          await load();
        } catch (e) {
          set({ error: message(e) });
        }
      },

      async publish(server, force) {
        const publishing = get().publishing;
        if (!publishing || get().busy) return;
        set({ busy: true, error: null, result: null });
        try {
          const result = await backend.call("publish_blueprints", { server, files: [publishing.file], force });
          if (get().publishing === publishing) set({ result });
        } catch (e) {
          if (get().publishing === publishing) set({ error: message(e) });
        } finally {
          set({ busy: false });
        }
      },
    };
  });
}
