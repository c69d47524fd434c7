// The sessions of an antikythera server, from the Runs view: pick a saved server (or type an
// address and its token), see its sessions newest first, and follow one here (or open the run
// that mirrors it already); the server's message when it does not answer.
import { useState } from "react";
import { useStore } from "zustand";
import { whenLabel } from "../runs/RunList";
import { useRuns, useWorkspace } from "../store/context";
import { mirrorOf, type ServerRunsStore, type ServerTarget } from "../store/serverRuns";
import { Modal } from "../Modal";
import "./servers.css";

/** What the select holds when "another address" is chosen instead of a saved server. */
const ADDRESS = "";

export function ServerRunsDialog() {
  const store = useWorkspace((s) => s.serverRuns);
  const shown = useStore(store, (s) => s.shown);
  return shown ? <ServerRuns store={store} /> : null;
}

function ServerRuns({ store }: { store: ServerRunsStore }) {
  const { servers, chosen, sessions, busy, error } = useStore(store);
  const { close, choose, list, follow, show } = store.getState();
  const local = useRuns((s) => s.sessions);
  const [address, setAddress] = useState("http://127.0.0.1:8000");
  const [token, setToken] = useState("");

  const typed = address.trim();
  const target: ServerTarget = chosen !== null ? { server: chosen } : token ? { server: typed, token } : { server: typed };
  // Mirrors are known by the server's address, whichever name it is saved under.
  const url = chosen !== null ? (servers.find((s) => s.name === chosen)?.url ?? "") : typed;

  return (
    <Modal
      className="server-runs"
      id="server-runs"
      title="Runs on a server"
      testId="servers-runs-dialog"
      onClose={close}
      onSubmit={() => {
        if (target.server) void list(target);
      }}
    >
      <p className="muted">A session followed shows here like a local run; what you do to it goes to the server.</p>
      <label>
        Server
        <select value={chosen ?? ADDRESS} onChange={(e) => void choose(e.target.value === ADDRESS ? null : e.target.value)} data-testid="servers-runs-server">
          {servers.map((s) => (
            <option key={s.name} value={s.name}>
              {s.name} — {s.url}
            </option>
          ))}
          <option value={ADDRESS}>Another address…</option>
        </select>
      </label>
      {chosen === null && (
        <div className="server-address">
          <label>
            Address
            <input value={address} onChange={(e) => setAddress(e.target.value)} spellCheck={false} data-testid="servers-runs-address" />
          </label>
          <label>
            Token
            <input type="password" placeholder="optional" value={token} onChange={(e) => setToken(e.target.value)} data-testid="servers-runs-token" />
          </label>
        </div>
      )}
      {error && (
        <p className="field-error" role="alert" data-testid="servers-runs-error">
          {error}
        </p>
      )}
      {sessions && sessions.length === 0 && <p className="muted">No sessions on this server.</p>}
      {sessions && sessions.length > 0 && (
        <ul className="server-sessions" data-testid="servers-runs-list">
          {sessions.map((s) => {
            const mirror = mirrorOf(local, url, s.session_id);
            return (
              <li key={s.session_id} data-testid="servers-runs-row" data-session={s.session_id}>
                <span className="server-session">
                  <b>{s.blueprint_id}</b> <code className="muted">{s.session_id}</code>
                </span>
                <span className={`state-pill state-${s.state}`}>{s.state}</span>
                <span className="muted">{s.started_at ? whenLabel(Date.parse(s.started_at)) : "not started"}</span>
                <button
                  type="button"
                  disabled={busy}
                  onClick={() => void (mirror ? show(mirror.id) : follow(target, s.session_id))}
                  title={mirror ? "Open the run that mirrors it here" : "Mirror it here and follow it from now on"}
                  data-testid="servers-runs-follow"
                >
                  {mirror ? "Open" : "Follow"}
                </button>
              </li>
            );
          })}
        </ul>
      )}
      <div className="choices">
        <button type="submit" className="primary" disabled={busy || !target.server} data-testid="servers-runs-list-sessions">
          {busy ? "Asking…" : sessions ? "Refresh" : "List sessions"}
        </button>
        <button type="button" className="plain" onClick={close}>
          Close
        </button>
      </div>
    </Modal>
  );
}
