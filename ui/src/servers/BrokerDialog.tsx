// The broker settings: the MQTT broker whose antikythera agents run tasks of the sessions
// started here (checked with a click before saving), which task types go to it although Orrery
// runs them itself, and how long a task waits for an agent before it goes out again.
import { useStore } from "zustand";
import { useWorkspace } from "../store/context";
import type { BrokerForm, BrokerStore } from "../store/broker";
import { Modal } from "../Modal";
import "./servers.css";

export function BrokerDialog() {
  const store = useWorkspace((s) => s.broker);
  const shown = useStore(store, (s) => s.shown);
  return shown ? <BrokerSettings store={store} /> : null;
}

function BrokerSettings({ store }: { store: BrokerStore }) {
  const { settings, form, saved, saving, checking, checked, error } = useStore(store);
  const { close, edit, save, clear, check } = store.getState();

  const field = (key: keyof BrokerForm, testid: string, placeholder = "") => (
    <input
      value={form?.[key] ?? ""}
      onChange={(e) => edit({ [key]: e.target.value })}
      placeholder={placeholder}
      spellCheck={false}
      data-testid={testid}
    />
  );

  return (
    <Modal
      className="broker"
      id="broker"
      title="Agents on a broker"
      testId="broker-dialog"
      onClose={close}
      onSubmit={() => {
        void save();
      }}
    >
      <p className="muted">Shared with the CLI. Sessions started after saving use these settings.</p>
      {form ? (
        <>
          <label>
            MQTT broker
            <small className="muted">mqtt://host:port; empty: tasks run on Orrery's built-in agents only</small>
            {field("broker", "broker-address", "mqtt://127.0.0.1:1883")}
          </label>
          <div className="broker-check">
            <button type="button" disabled={checking || !form.broker.trim()} onClick={() => void check()} data-testid="broker-check">
              {checking ? "Checking…" : "Check connection"}
            </button>
            {checked && (
              <span className={checked.reachable ? "reachable" : "field-error"} data-testid="broker-check-result" data-reachable={checked.reachable}>
                {checked.reachable ? `${checked.broker} answers` : (checked.message ?? `${checked.broker} does not answer`)}
              </span>
            )}
          </div>
          <label>
            Task types sent to the broker
            <small className="muted">
              Task types sent to the broker's agents although Orrery runs them itself: names, or prefixes ending in * (system.sleep,
              user_interaction.*, *), separated by commas. Types Orrery has no agent for always go to the broker.
            </small>
            {field("via", "broker-via", "system.sleep, user_interaction.*")}
          </label>
          <label>
            Agent timeout (seconds)
            <small className="muted">
              Seconds a claiming agent may stay silent before the task is published again or fails with AGENT_TIMEOUT; empty: no limit
            </small>
            {field("timeout", "broker-timeout", "no limit")}
          </label>
          <label>
            Agent retries
            <small className="muted">Times a task whose agent went silent is published again</small>
            {field("retries", "broker-retries", "0")}
          </label>
          <label>
            Claim wait (seconds)
            <small className="muted">
              Seconds before an unclaimed task is published again (default 2, doubling, 5 times, then NO_AGENT_CLAIMED)
            </small>
            {field("claimWait", "broker-claim-wait", "2")}
          </label>
        </>
      ) : (
        !error && <p className="muted">Reading the settings…</p>
      )}
      {error && (
        <p className="field-error" role="alert" data-testid="broker-error">
          {error}
        </p>
      )}
      {saved && (
        <p className="broker-saved" data-testid="broker-saved">
          Saved: sessions started from now on use them.
        </p>
      )}
      <div className="choices">
        <button type="submit" className="primary" disabled={saving || !form} data-testid="broker-save">
          {saving ? "Saving…" : "Save"}
        </button>
        <button type="button" className="plain" onClick={close} data-testid="broker-cancel">
          {saved ? "Done" : "Cancel"}
        </button>
        <button
          type="button"
          className="danger"
          disabled={saving || !settings?.broker}
          onClick={() => void clear()}
          title="Tasks run on Orrery's built-in agents only"
          data-testid="broker-clear"
        >
          Clear broker
        </button>
      </div>
    </Modal>
  );
}
