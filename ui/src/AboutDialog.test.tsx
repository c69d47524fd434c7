// @vitest-environment jsdom
import { act } from "react";
import { createRoot, type Root } from "react-dom/client";
import { afterEach, describe, expect, it } from "vitest";
import { editorJobs } from "./backend/editor-jobs";
import { MemoryBackend } from "./backend/memory";
import { BackendError, type About } from "./backend/types";
import { runCommand } from "./commands";
import { WorkspaceProvider } from "./store/context";
import { createWorkspace, currentEditor } from "./store/workspace";
import { AboutDialog } from "./AboutDialog";

(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true;

let root: Root | null = null;
afterEach(() => {
  act(() => root?.unmount());
  root = null;
});

/** The dialog opened by its command (Help → About Orrery), over a shell answering `about`. */
async function opened(about: () => Promise<About>) {
  const backend = new MemoryBackend(editorJobs());
  backend.about = about;
  const workspace = createWorkspace(backend, async () => ({}));
  await workspace.getState().load();
  const container = document.createElement("div");
  document.body.append(container);
  root = createRoot(container);
  act(() =>
    root!.render(
      <WorkspaceProvider store={workspace}>
        <AboutDialog />
      </WorkspaceProvider>,
    ),
  );
  act(() => runCommand("help.about", currentEditor(workspace.getState()).getState(), workspace.getState()));
  await act(() => new Promise<void>((resolve) => setTimeout(resolve, 0)));
  const text = (testid: string) => container.querySelector(`[data-testid=${testid}]`)?.textContent ?? null;
  return { container, text };
}

describe("About Orrery", () => {
  it("shows the version and the folders the app keeps its data in, and closes", async () => {
    const about: About = {
      version: "1.2.3",
      store: "/home/ada/.local/share/orrery/orrery.db",
      logs: "/home/ada/.local/share/orrery/runs",
      login_shell: "/bin/zsh",
      path: "/home/ada/.cargo/bin:/usr/bin",
    };
    const { container, text } = await opened(async () => about);
    expect(text("about-version")).toBe("1.2.3");
    expect(text("about-store")).toBe(about.store);
    expect(text("about-logs")).toBe(about.logs);
    expect(text("about-login-shell")).toBe("/bin/zsh");
    expect(text("about-path")).toBe("/home/ada/.cargo/bin:/usr/bin");
    act(() => container.querySelector<HTMLButtonElement>("[data-testid=about-close]")!.click());
    expect(text("about-dialog")).toBeNull();
  });

  it("says what went wrong when the shell cannot answer", async () => {
    const { text } = await opened(async () => {
      throw new BackendError("internal", "the shell is gone");
    });
    expect(text("about-dialog")).toContain("the shell is gone");
    expect(text("about-version")).toBeNull();
  });
});
