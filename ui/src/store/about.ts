// The About dialog: the app's version, and where it keeps the task store and the attempts' logs,
// read from the shell each time the dialog opens.
import { createStore, type StoreApi } from "zustand/vanilla";
import type { About, Backend } from "../backend/types";

export type AboutState = {
  shown: boolean;
  about: About | null;
  error: string | null;
  open(): Promise<void>;
  close(): void;
};

export type AboutStore = StoreApi<AboutState>;

export function createAbout(backend: Backend): AboutStore {
  return createStore<AboutState>()((set) => ({
    shown: false,
    about: null,
    error: null,
    async open() {
      set({ shown: true, about: null, error: null });
      try {
        set({ about: await backend.about() });
      } catch (e) {
        set({ error: e instanceof Error ? e.message : String(e) });
      }
    },
    close() {
      set({ shown: false });
    },
  }));
}
