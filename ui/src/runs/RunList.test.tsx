// @vitest-environment jsdom
import { act } from "react";
import { createRoot, type Root } from "react-dom/client";
import { afterEach, describe, expect, it } from "vitest";
import type { SessionListing } from "../backend/generated";
import { MemoryBackend } from "../backend/memory";
import { WorkspaceProvider } from "../store/context";
import type { RunsState } from "../store/runs";
import { createWorkspace } from "../store/workspace";
import { RunList } from "./RunList";

(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true;

function listing(id: string, change: Partial<SessionListing> = {}): SessionListing {
  return {
    id,
    blueprint_hash: "abcdef0123456789",
    blueprint_id: "bp",
    name: id,
    state: "running",
    params: {},
    created_ms: 0,
    started_ms: 0,
    waiting: [],
    interrupted: false,
    ...change,
  };
}

let root: Root | null = null;
afterEach(() => {
  act(() => root?.unmount());
  root = null;
});

/** The list drawn over these sessions. */
function shown(sessions: SessionListing[], timings: RunsState["timings"] = {}): HTMLElement {
  const workspace = createWorkspace(new MemoryBackend({}), async () => ({}));
  workspace.getState().runs.setState({ sessions, timings });
  const container = document.createElement("div");
  root = createRoot(container);
  act(() =>
    root!.render(
      <WorkspaceProvider store={workspace}>
        <RunList />
      </WorkspaceProvider>,
    ),
  );
  return container;
}

describe("the list of runs", () => {
  it("marks a run mirrored from a server with its address, and a local run with nothing", () => {
    const container = shown([listing("local"), listing("mirror", { remote: { url: "http://lab:8000", session_id: "nightly-7" } })]);
    const badge = (id: string) => container.querySelector(`[data-session-id=${id}] [data-testid=run-remote]`);
    expect(badge("local")).toBeNull();
    expect(badge("mirror")?.textContent).toBe("⇄ lab:8000");
    expect(badge("mirror")?.getAttribute("title")).toBe("Runs on http://lab:8000 as session nightly-7");
  });

  it("marks a simulated run, never a real one", () => {
    const container = shown([listing("real"), listing("sim", { simulation: { outputs: { a: { n: 1 } } } })]);
    const mark = (id: string) => container.querySelector(`[data-session-id=${id}] [data-testid=run-simulated]`);
    expect(mark("real")).toBeNull();
    expect(mark("sim")?.textContent).toBe("simulated");
  });

  it("says the time left of a running run with an estimate, and of no other", () => {
    const timing = { past_runs: 2, remaining_ms: 95_000, unknown: 0, critical_path: ["bp.a"], tasks: [] };
    const at = Date.now();
    const container = shown([listing("going"), listing("new"), listing("done", { state: "completed", finished_ms: 1000 })], {
      going: { timing, at },
      new: { timing: { ...timing, past_runs: 0, remaining_ms: null }, at },
      done: { timing, at },
    });
    const left = (id: string) => container.querySelector(`[data-session-id=${id}] [data-testid=time-left]`);
    expect(left("going")?.textContent).toBe(" · about 1m 35s left");
    expect(left("going")?.getAttribute("title")).toContain("2 past runs");
    expect(left("new")).toBeNull();
    expect(left("done")).toBeNull();
  });

  it("names each run by the short id the header and compare use", () => {
    const container = shown([listing("0190aaaa-bbbb-7ccc-8ddd-0123456789ab")]);
    expect(container.querySelector("[data-testid=run-item] .run-meta code")?.textContent).toBe("#456789ab");
  });
});
