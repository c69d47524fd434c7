// The MQTT broker whose antikythera agents run tasks of the sessions started here, as the
// settings dialog edits it: the settings are kept in the task store (shared with the CLI), the
// facade checks them when saved (the address comes back as understood), and a check connects
// to the address typed. Sessions started after saving use them.
import { createStore, type StoreApi } from "zustand/vanilla";
import type { BrokerSettingsAnswer, CheckBrokerAnswer, SaveBrokerSettingsArguments } from "../backend/generated";
import type { Backend } from "../backend/types";

/** The dialog's fields, as typed. */
export type BrokerForm = { broker: string; via: string; timeout: string; retries: string; claimWait: string };

export type BrokerState = {
  shown: boolean;
  /** The settings as saved: read when the dialog opens, then as the last save answered. */
  settings: BrokerSettingsAnswer | null;
  /** The fields; null until the settings are read. */
  form: BrokerForm | null;
  /** Whether the fields are what was just saved. */
  saved: boolean;
  saving: boolean;
  checking: boolean;
  /** What the last check of an address found. */
  checked: CheckBrokerAnswer | null;
  error: string | null;

  /** Opens the dialog with the saved settings. */
  open(): Promise<void>;
  close(): void;
  edit(change: Partial<BrokerForm>): void;
  /** Saves the fields; whether they were saved. */
  save(): Promise<boolean>;
  /** Saves the settings without a broker: tasks run on Orrery's built-in agents only. */
  clear(): Promise<boolean>;
  /** Connects to the address typed. */
  check(): Promise<void>;
};

export type BrokerStore = StoreApi<BrokerState>;

const message = (e: unknown) => (e instanceof Error ? e.message : String(e));

const secondsText = (s: number | null | undefined) => (s == null ? "" : String(s));

function formOf(s: BrokerSettingsAnswer): BrokerForm {
  return {
    broker: s.broker ?? "",
    via: (s.via_broker ?? []).join(", "),
    timeout: secondsText(s.agent_timeout_s),
    retries: String(s.agent_retries ?? 0),
    claimWait: secondsText(s.claim_wait_s),
  };
}

/** The settings the fields say, or why they cannot be sent (naming the field). */
function settingsOf(form: BrokerForm): SaveBrokerSettingsArguments | string {
  const seconds = (text: string, field: string): number | null | string => {
    if (text.trim() === "") return null;
    const n = Number(text);
    return Number.isFinite(n) ? n : `${field}: '${text.trim()}' is not a number of seconds`;
  };
  const agent_timeout_s = seconds(form.timeout, "Agent timeout");
  if (typeof agent_timeout_s === "string") return agent_timeout_s;
  const claim_wait_s = seconds(form.claimWait, "Claim wait");
  if (typeof claim_wait_s === "string") return claim_wait_s;
  const retries = form.retries.trim() === "" ? 0 : Number(form.retries);
  if (!Number.isInteger(retries) || retries < 0) return `Agent retries: '${form.retries.trim()}' is not a whole number ≥ 0`;
  return {
    broker: form.broker.trim() || null,
    via_broker: form.via.split(",").map((t) => t.trim()).filter(Boolean),
    agent_timeout_s,
    agent_retries: retries,
    claim_wait_s,
  };
}

export function createBroker(backend: Backend): BrokerStore {
  // Which opening of the dialog an answer belongs to: one arriving after it closed is dropped.
  let opening = 0;

  return createStore<BrokerState>()((set, get) => {
    async function store(settings: SaveBrokerSettingsArguments): Promise<boolean> {
      const mine = opening;
      set({ saving: true, error: null });
      try {
        const answer = await backend.call("save_broker_settings", settings);
        if (mine === opening) set({ settings: answer, form: formOf(answer), saved: true });
        return true;
      } catch (e) {
        if (mine === opening) set({ error: message(e) });
        return false;
      } finally {
        if (mine === opening) set({ saving: false });
      }
    }

    return {
      shown: false,
      settings: null,
      form: null,
      saved: false,
      saving: false,
      checking: false,
      checked: null,
      error: null,

      async open() {
        const mine = ++opening;
        set({ shown: true, settings: null, form: null, saved: false, saving: false, checking: false, checked: null, error: null });
        try {
          const settings = await backend.call("broker_settings", {});
          if (mine === opening) set({ settings, form: formOf(settings) });
        } catch (e) {
          if (mine === opening) set({ error: message(e) });
        }
      },

      close() {
        opening++;
        set({ shown: false, settings: null, form: null });
      },

      edit(change) {
        const form = get().form;
        if (form) set({ form: { ...form, ...change }, saved: false });
      },

      async save() {
        const form = get().form;
        if (!form || get().saving) return false;
        const settings = settingsOf(form);
        if (typeof settings === "string") {
          set({ error: settings, saved: false });
          return false;
        }
        return store(settings);
      },

      async clear() {
        const settings = get().settings;
        if (!settings || get().saving) return false;
        return store({ ...settings, broker: null });
      },

      async check() {
        const broker = get().form?.broker.trim();
        if (!broker || get().checking) return;
        const mine = opening;
        set({ checking: true, checked: null });
        try {
          const checked = await backend.call("check_broker", { broker });
          if (mine === opening) set({ checked });
        } catch (e) {
          // An address the facade cannot read: the check says why.
          if (mine === opening) set({ checked: { broker, reachable: false, message: message(e) } });
        } finally {
          if (mine === opening) set({ checking: false });
        }
      },
    };
  });
}
