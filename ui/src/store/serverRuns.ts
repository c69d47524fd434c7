// The sessions of an antikythera server, as the Runs view lists them to follow one here: a saved
// server (or an address typed) is asked for its sessions, newest first; following one makes (or
// finds) its local mirror, which the run views open like a local run (their actions go to the
// server). A session already mirrored is opened as it is.
import { createStore, type StoreApi } from "zustand/vanilla";
import type { RemoteSession, ServerInfo, SessionListing } from "../backend/generated";
import type { Backend } from "../backend/types";
import type { RunsStore } from "./runs";

/** A server to ask: a saved one by name (its token is kept), or an address with the token typed. */
export type ServerTarget = { server: string; token?: string };

export type ServerRunsState = {
  shown: boolean;
  servers: ServerInfo[];
  /** The saved server chosen, by name; null: an address typed. */
  chosen: string | null;
  /** What the server asked last answered, newest first; null until it answers. */
  sessions: RemoteSession[] | null;
  busy: boolean;
  error: string | null;

  /** Opens the dialog with the saved servers, listing the first one's sessions. */
  open(): Promise<void>;
  close(): void;
  /** Chooses a saved server (its sessions are listed), or null for an address to type. */
  choose(name: string | null): Promise<void>;
  list(target: ServerTarget): Promise<void>;
  /** Follows a session of the server into its local mirror and opens it. */
  follow(target: ServerTarget, sessionId: string): Promise<void>;
  /** Opens a local run (a mirror made before). */
  show(localId: string): Promise<void>;
};

export type ServerRunsStore = StoreApi<ServerRunsState>;

const message = (e: unknown) => (e instanceof Error ? e.message : String(e));

/** The local mirror of a server's session, if there is one: the facade keeps addresses without a trailing slash. */
export function mirrorOf(sessions: SessionListing[], url: string, remoteId: string): SessionListing | undefined {
  const address = url.trim().replace(/\/+$/, "");
  return sessions.find((s) => s.remote?.session_id === remoteId && s.remote.url === address);
}

/** Newest first; one not started yet is the newest of all. ISO 8601 times of one server sort as text. */
function newestFirst(sessions: RemoteSession[]): RemoteSession[] {
  const key = (s: RemoteSession) => s.started_at ?? "\uffff";
  return [...sessions].sort((a, b) => key(b).localeCompare(key(a)));
}

export function createServerRuns(backend: Backend, runs: RunsStore): ServerRunsStore {
  // Answers for a server no longer chosen are dropped.
  let asked = 0;

  return createStore<ServerRunsState>()((set, get) => ({
    shown: false,
    servers: [],
    chosen: null,
    sessions: null,
    busy: false,
    error: null,

    async open() {
      set({ shown: true, sessions: null, error: null, busy: false });
      try {
        const servers = await backend.call("list_servers", {});
        set({ servers });
        await get().choose(servers[0]?.name ?? null);
      } catch (e) {
        set({ error: message(e) });
      }
    },

    close() {
      asked++;
      set({ shown: false, sessions: null, error: null, busy: false });
    },

    async choose(name) {
      asked++;
      set({ chosen: name, sessions: null, error: null, busy: false });
      if (name !== null) await get().list({ server: name });
    },

    async list(target) {
      const mine = ++asked;
      set({ busy: true, error: null, sessions: null });
      try {
        const sessions = await backend.call("remote_sessions", target);
        if (mine === asked) set({ sessions: newestFirst(sessions) });
      } catch (e) {
        if (mine === asked) set({ error: message(e) });
      } finally {
        if (mine === asked) set({ busy: false });
      }
    },

    async follow(target, sessionId) {
      set({ busy: true, error: null });
      try {
        const { session_id } = await backend.call("follow_remote_session", { ...target, session_id: sessionId });
        // The list shows the new mirror before the run views open it.
        await runs.getState().refresh();
        await get().show(session_id);
      } catch (e) {
        set({ error: message(e) });
      } finally {
        set({ busy: false });
      }
    },

    async show(localId) {
      set({ shown: false });
      await runs.getState().open(localId);
    },
  }));
}
