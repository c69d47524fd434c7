// Help → About Orrery: the version (the command line's too) and the folders the app keeps its
// data in, each path selectable, so a user can find the store and the logs (or say them in a bug
// report).
import type { ReactNode } from "react";
import { useStore } from "zustand";
import { useWorkspace } from "./store/context";
import { folders } from "./folders";
import { Modal } from "./Modal";

export function AboutDialog() {
  const store = useWorkspace((s) => s.about);
  const { shown, about, error } = useStore(store);
  if (!shown) return null;
  const close = () => store.getState().close();
  const row = (label: string, value: ReactNode, testid: string) => (
    <>
      <dt>{label}</dt>
      <dd>
        <code data-testid={testid}>{value ?? "—"}</code>
      </dd>
    </>
  );
  return (
    <Modal className="about" id="about" title="About Orrery" testId="about-dialog" onClose={close} onSubmit={close}>
      <p className="muted">Design, check and run antikythera blueprints.</p>
      {error && <p className="field-error">{error}</p>}
      {about && (
        <dl className="about-facts">
          {row("Version", about.version, "about-version")}
          {row("Task store", about.store, "about-store")}
          {row("Logs", about.logs, "about-logs")}
          {row("Login shell", about.login_shell ?? "not asked: tasks get the app's own environment", "about-login-shell")}
          {row("Tasks' PATH", about.path && folders(about.path), "about-path")}
        </dl>
      )}
      <div className="choices">
        <button type="submit" className="primary" data-testid="about-close" autoFocus>
          Close
        </button>
      </div>
    </Modal>
  );
}
