// @vitest-environment jsdom
import { act } from "react";
import { createRoot, type Root } from "react-dom/client";
import { afterEach, describe, expect, it } from "vitest";
import type { RemoteSession, SessionListing } from "../backend/generated";
import { editorJobs } from "../backend/editor-jobs";
import { MemoryBackend, type JobHandlers } from "../backend/memory";
import type { Blueprint } from "../blueprint";
import { settled } from "../settled";
import { WorkspaceProvider } from "../store/context";
import type { Positions } from "../store/editor";
import { mirrorOf } from "../store/serverRuns";
import { createWorkspace, currentEditor, type WorkspaceStore } from "../store/workspace";
import { runCommand } from "../commands";
import { RunsView } from "../runs/RunsView";
import { ServerRunsDialog } from "./ServerRunsDialog";

(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true;

const flow = JSON.stringify({ id: "flow", tasks: [{ id: "start", type: "system.start" }] });

/** The server's sessions, in its own order. */
const onServer: RemoteSession[] = [
  { session_id: "r1", blueprint_id: "flow", state: "completed", started_at: "2025-03-01T10:00:00Z", ended_at: "2025-03-01T10:05:00Z" },
  { session_id: "r2", blueprint_id: "flow", state: "running", started_at: "2025-03-02T09:00:00Z" },
  { session_id: "r3", blueprint_id: "build", state: "pending" },
];

function listing(id: string, remote?: { url: string; session_id: string }): SessionListing {
  return { id, blueprint_hash: "abc", blueprint_id: "flow", name: id, state: "completed", params: {}, created_ms: 0, remote, waiting: [], interrupted: false };
}

let root: Root | null = null;
afterEach(() => {
  act(() => root?.unmount());
  root = null;
});

/** Two tasks later: the jobs' answers, then the run's view (made in a task of its own). */

/**
 * The dialog (in the Runs view with `view`) over a backend with one saved server and a mirror of
 * its session r1 (local m1), opened unless in the view; the jobs called.
 */
async function mounted(jobs: JobHandlers = {}, view = false) {
  const calls: [string, unknown][] = [];
  let local = [listing("s0"), listing("m1", { url: "http://lab:8000", session_id: "r1" })];
  const handlers: JobHandlers = {
    ...editorJobs(),
    list_servers: () => [{ name: "lab", url: "http://lab:8000", has_token: true }],
    list_sessions: () => local,
    remote_sessions: () => onServer,
    follow_remote_session: ({ session_id }) => {
      local = [...local, listing("m2", { url: "http://lab:8000", session_id })];
      return { session_id: "m2" };
    },
    get_session: ({ session_id }) => ({
      session: local.find((s) => s.id === session_id)!,
      tasks: [],
      attempts: [],
      driven: false,
      waiting: [],
      held: [],
      restarts: [],
      link: { reachable: true, following: false },
    }),
    get_session_blueprints: () => ({
      root: { blueprint_id: "flow", hash: "abc", text: flow },
      inner: [],
      instances: [{ id: "flow", blueprint_id: "flow", context: {} }],
    }),
    ...jobs,
  };
  const recording = new Proxy(handlers, {
    get: (target, name: string) => {
      const handler = target[name as keyof JobHandlers] as ((a: unknown) => unknown) | undefined;
      return handler && ((args: unknown) => (calls.push([name, args]), handler(args)));
    },
  });
  const backend = new MemoryBackend(recording);
  const layout = async (b: Blueprint): Promise<Positions> => Object.fromEntries(b.tasks.map((t, i) => [t.id, { x: 0, y: i * 100 }]));
  const workspace: WorkspaceStore = createWorkspace(backend, layout);
  await workspace.getState().runs.getState().refresh();
  const container = document.createElement("div");
  document.body.append(container);
  root = createRoot(container);
  act(() =>
    root!.render(
      <WorkspaceProvider store={workspace}>
        {view ? <RunsView /> : <ServerRunsDialog />}
      </WorkspaceProvider>,
    ),
  );
  if (!view) await act(async () => workspace.getState().serverRuns.getState().open());
  await settled(2);
  const rows = () => [...container.querySelectorAll("[data-testid=servers-runs-row]")];
  const row = (id: string) => rows().find((r) => r.getAttribute("data-session") === id)!;
  const type = (testid: string, value: string) =>
    act(() => {
      const field = container.querySelector<HTMLInputElement>(`[data-testid=${testid}]`)!;
      Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, "value")!.set!.call(field, value);
      field.dispatchEvent(new Event("input", { bubbles: true }));
    });
  return { workspace, container, calls, rows, row, type };
}

describe("the runs on a server", () => {
  it("are a command away from anywhere (menu, palette): the Runs view shows, the dialog open", async () => {
    const { workspace } = await mounted({}, true);
    await act(async () => workspace.getState().load());
    act(() => workspace.getState().setMode("edit"));
    await act(async () => runCommand("run.servers", currentEditor(workspace.getState()).getState(), workspace.getState()));
    await settled(2);
    expect(workspace.getState().mode).toBe("runs");
    expect(workspace.getState().serverRuns.getState().shown).toBe(true);
  });

  it("are a click away in the Runs view's toolbar", async () => {
    const { container, rows } = await mounted({}, true);
    expect(container.querySelector("[data-testid=servers-runs-dialog]")).toBeNull();
    await act(async () => container.querySelector<HTMLButtonElement>("[data-testid=servers-runs-open]")!.click());
    await settled(2);
    expect(container.querySelector("[data-testid=servers-runs-dialog]")).not.toBeNull();
    expect(rows()).toHaveLength(3);
  });

  it("lists the first saved server's sessions newest first, each to follow, or to open when mirrored here already", async () => {
    const { container, calls, rows, row } = await mounted();
    expect(container.querySelector("[data-testid=servers-runs-dialog]")).not.toBeNull();
    expect(container.querySelector<HTMLSelectElement>("[data-testid=servers-runs-server]")!.value).toBe("lab");
    expect(calls.filter(([job]) => job === "remote_sessions")).toEqual([["remote_sessions", { server: "lab" }]]);
    expect(container.querySelector("[data-testid=servers-runs-list]")).not.toBeNull();
    expect(rows().map((r) => r.getAttribute("data-session"))).toEqual(["r3", "r2", "r1"]);
    expect(rows().map((r) => r.querySelector("[data-testid=servers-runs-follow]")!.textContent)).toEqual(["Follow", "Follow", "Open"]);
    expect(row("r2").textContent).toContain("running");
    expect(row("r3").textContent).toContain("not started");
  });

  it("follows a session into its local mirror, lists the mirror and opens it", async () => {
    const { workspace, container, calls, row } = await mounted();
    act(() => row("r2").querySelector<HTMLButtonElement>("[data-testid=servers-runs-follow]")!.click());
    await settled(2);
    expect(calls.filter(([job]) => job === "follow_remote_session")).toEqual([["follow_remote_session", { server: "lab", session_id: "r2" }]]);
    const runs = workspace.getState().runs.getState();
    expect(runs.sessions.map((s) => s.id)).toContain("m2");
    expect(runs.run?.session.id).toBe("m2");
    expect(runs.run?.session.remote).toEqual({ url: "http://lab:8000", session_id: "r2" });
    expect(container.querySelector("[data-testid=servers-runs-dialog]"), "the dialog closes on the run").toBeNull();
  });

  it("opens the mirror a session has already, without following it again", async () => {
    const { workspace, calls, row } = await mounted();
    act(() => row("r1").querySelector<HTMLButtonElement>("[data-testid=servers-runs-follow]")!.click());
    await settled(2);
    expect(calls.map(([job]) => job)).not.toContain("follow_remote_session");
    expect(workspace.getState().runs.getState().run?.session.id).toBe("m1");
  });

  it("shows why a server typed does not answer, and asks it with the token typed", async () => {
    const { container, calls, rows, type } = await mounted({
      remote_sessions: ({ server }) => {
        if (server === "lab") return onServer;
        throw new Error(`${server} is unreachable: connection refused`);
      },
    });
    expect(rows()).toHaveLength(3);
    await act(async () => {
      const select = container.querySelector<HTMLSelectElement>("[data-testid=servers-runs-server]")!;
      select.value = "";
      select.dispatchEvent(new Event("change", { bubbles: true }));
    });
    expect(container.querySelector("[data-testid=servers-runs-list]"), "the saved server's sessions go").toBeNull();
    type("servers-runs-address", "http://10.0.0.9:8000");
    type("servers-runs-token", "s3cret");
    act(() => container.querySelector<HTMLButtonElement>("[data-testid=servers-runs-list-sessions]")!.click());
    await settled(2);
    expect(calls.filter(([job]) => job === "remote_sessions").at(-1)).toEqual(["remote_sessions", { server: "http://10.0.0.9:8000", token: "s3cret" }]);
    expect(container.querySelector("[data-testid=servers-runs-error]")!.textContent).toBe("http://10.0.0.9:8000 is unreachable: connection refused");
    expect(container.querySelector("[data-testid=servers-runs-list]")).toBeNull();
  });
});

describe("the mirror of a server's session", () => {
  it("is found by the server's address however it was typed, and the session's id there", () => {
    const local = [listing("s0"), listing("m1", { url: "http://lab:8000", session_id: "r1" })];
    expect(mirrorOf(local, " http://lab:8000/ ", "r1")?.id).toBe("m1");
    expect(mirrorOf(local, "http://lab:8000", "r2")).toBeUndefined();
    expect(mirrorOf(local, "http://other:8000", "r1")).toBeUndefined();
  });
});
