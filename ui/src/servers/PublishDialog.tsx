// Publishing the shown blueprint to an antikythera server: pick a saved server (or type an
// address), add or remove saved ones, publish; then what happened to each blueprint sent
// (inner ones first), the server's problems on their tasks, a click away from the task.
import { useState } from "react";
import { useStore } from "zustand";
import { useWorkspace } from "../store/context";
import type { ServersStore } from "../store/servers";
import { Modal } from "../Modal";
import { Published } from "./Published";
import "./servers.css";

/** What the address field holds when "another address" is chosen instead of a saved server. */
const ADDRESS = "";

export function PublishDialog() {
  const store = useWorkspace((s) => s.servers);
  const publishing = useStore(store, (s) => s.publishing);
  if (!publishing) return null;
  return <PublishForm key={publishing.file} store={store} />;
}

function PublishForm({ store }: { store: ServersStore }) {
  const { servers, publishing, result, busy, error } = useStore(store);
  const { close, publish, save, remove } = store.getState();
  // A saved server by name, or ADDRESS for the address typed.
  const [chosen, setChosen] = useState<string | null>(null);
  const [address, setAddress] = useState("http://127.0.0.1:8000");
  const [adding, setAdding] = useState({ name: "", url: "", token: "" });
  const target = chosen ?? servers[0]?.name ?? ADDRESS;
  const server = target === ADDRESS ? address.trim() : target;


  if (!publishing) return null;
  const invalid = result?.blueprints.some((b) => b.outcome === "invalid") ?? false;

  return (
    <Modal
      className="publish"
      id="publish"
      title={`Publish ${publishing.name}`}
      testId="publish-dialog"
      onClose={close}
      onSubmit={() => {
        if (server) void publish(server, false);
      }}
    >
      <p className="muted">{publishing.file} · the inner blueprints it calls go with it</p>
      <label>
        Server
        <select value={target} onChange={(e) => setChosen(e.target.value)} data-testid="publish-server">
          {servers.map((s) => (
            <option key={s.name} value={s.name}>
              {s.name} — {s.url}
            </option>
          ))}
          <option value={ADDRESS}>Another address…</option>
        </select>
      </label>
      {target === ADDRESS && (
        <label>
          Address
          <input value={address} onChange={(e) => setAddress(e.target.value)} spellCheck={false} data-testid="publish-address" />
        </label>
      )}
      <details className="server-list" open={servers.length === 0}>
        <summary>Saved servers ({servers.length})</summary>
        <ul>
          {servers.map((s) => (
            <li key={s.name}>
              <span>
                <b>{s.name}</b> {s.url}
                {s.has_token && <span className="muted"> · token</span>}
              </span>
              <button type="button" className="plain" onClick={() => void remove(s.name)} data-testid="server-remove">
                Remove
              </button>
            </li>
          ))}
        </ul>
        <div className="server-add">
          <input placeholder="name" value={adding.name} onChange={(e) => setAdding({ ...adding, name: e.target.value })} data-testid="server-name" />
          <input placeholder="http://host:8000" value={adding.url} onChange={(e) => setAdding({ ...adding, url: e.target.value })} data-testid="server-url" />
          <input
            placeholder="token (optional)"
            type="password"
            value={adding.token}
            onChange={(e) => setAdding({ ...adding, token: e.target.value })}
            data-testid="server-token"
          />
          <button
            type="button"
            disabled={!adding.name.trim() || !adding.url.trim()}
            onClick={async () => {
              if (await save(adding.name.trim(), adding.url.trim(), adding.token)) {
                setChosen(adding.name.trim());
                setAdding({ name: "", url: "", token: "" });
              }
            }}
            data-testid="server-save"
          >
            Save server
          </button>
        </div>
      </details>
      {error && (
        <p className="field-error" role="alert" data-testid="publish-error">
          {error}
        </p>
      )}
      {result && <Published result={result} close={close} testid="published" />}
      <div className="choices">
        <button type="submit" className="primary" disabled={busy || !server} autoFocus data-testid="publish-start">
          {busy ? "Publishing…" : "Publish"}
        </button>
        {invalid && (
          <button
            type="button"
            className="danger"
            disabled={busy || !server}
            onClick={() => void publish(server, true)}
            title="Send it anyway: the server decides"
            data-testid="publish-force"
          >
            Send anyway
          </button>
        )}
        <button type="button" className="plain" onClick={close}>
          {result?.all_uploaded ? "Done" : "Cancel"}
        </button>
      </div>
    </Modal>
  );
}
