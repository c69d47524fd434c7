// @vitest-environment jsdom
import { act } from "react";
import { createRoot, type Root } from "react-dom/client";
import { afterEach, describe, expect, it } from "vitest";
import type { PublishBlueprintsAnswer, ServerInfo, Session } from "../backend/generated";
import { editorJobs } from "../backend/editor-jobs";
import { MemoryBackend, type JobHandlers } from "../backend/memory";
import type { Blueprint } from "../blueprint";
import { settled } from "../settled";
import { WorkspaceProvider } from "../store/context";
import type { Positions } from "../store/editor";
import { createWorkspace, type WorkspaceStore } from "../store/workspace";
import { LaunchDialog } from "./LaunchDialog";

(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true;

const deploy = JSON.stringify({
  id: "deploy",
  tasks: [
    { id: "start", type: "system.start" },
    { id: "b", type: "system.sleep", depends_on: [{ id: "start", type: "FS" }] },
    { id: "end", type: "system.end", depends_on: [{ id: "b", type: "FS" }] },
  ],
});

const lab: ServerInfo = { name: "lab", url: "http://lab:8000", has_token: true };

const uploaded: PublishBlueprintsAnswer = {
  server: "http://lab:8000",
  all_uploaded: true,
  blueprints: [
    { file: "/w/inner.json", blueprint_id: "inner", given: false, outcome: "uploaded", message: "Blueprint uploaded successfully.", problems: [] },
    { file: "/w/deploy.json", blueprint_id: "deploy", given: true, outcome: "uploaded", message: "Blueprint uploaded successfully.", problems: [] },
  ],
};

const refused: PublishBlueprintsAnswer = {
  ...uploaded,
  all_uploaded: false,
  blueprints: [
    uploaded.blueprints[0]!,
    {
      ...uploaded.blueprints[1]!,
      outcome: "refused",
      message: "Blueprint 'deploy' has 1 dataflow problem(s). (400)",
      problems: [{ task_id: "b", message: "Task 'b': condition 'x > 1' reads 'x', which no task produces." }],
    },
  ],
};

function session(id: string): Session {
  return { id, blueprint_hash: "abc", blueprint_id: "deploy", name: "deploy", state: "running", params: {}, created_ms: 0 };
}

let root: Root | null = null;
afterEach(() => {
  act(() => root?.unmount());
  root = null;
});

/** Two tasks later: the jobs' answers, then the run's view (made in a task of its own). */

/** A promise answered when the test says so: to look at the dialog while a job is under way. */
function deferred<T>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/** The launch dialog of deploy.json, open, over a backend with the saved `servers`; the jobs called, in order. */
async function mounted(jobs: JobHandlers = {}, servers: ServerInfo[] = [lab], idle = false) {
  const calls: [string, unknown][] = [];
  const handlers: JobHandlers = {
    ...editorJobs(),
    list_servers: () => servers,
    list_sessions: () => [],
    start_session: () => ({ session_id: "s1" }),
    publish_blueprints: () => uploaded,
    remote_run: () => ({ session_id: "deploy-1", message: "Session started.", mirror: "m1" }),
    get_session: ({ session_id }) => ({
      session: session(session_id),
      tasks: [],
      attempts: [],
      driven: false,
      waiting: [],
      held: [],
      restarts: [],
    }),
    get_session_blueprints: () => ({
      root: { blueprint_id: "deploy", hash: "abc", text: deploy },
      inner: [],
      instances: [{ id: "deploy", blueprint_id: "deploy", context: {} }],
    }),
    ...jobs,
  };
  const recording = new Proxy(handlers, {
    get: (target, name: string) => {
      const handler = target[name as keyof JobHandlers] as ((a: unknown) => unknown) | undefined;
      return handler && ((args: unknown) => (calls.push([name, args]), handler(args)));
    },
  });
  const backend = new MemoryBackend(recording, { "/w/deploy.json": deploy }, "/w/deploy.json");
  const layout = async (b: Blueprint): Promise<Positions> => Object.fromEntries(b.tasks.map((t, i) => [t.id, { x: 0, y: i * 100 }]));
  const workspace: WorkspaceStore = createWorkspace(backend, layout, { layoutSaveDelayMs: 10 });
  await workspace.getState().load();
  await settled(2);
  const container = document.createElement("div");
  document.body.append(container);
  root = createRoot(container);
  act(() =>
    root!.render(
      <WorkspaceProvider store={workspace}>
        <LaunchDialog />
      </WorkspaceProvider>,
    ),
  );
  const prepare = async () => {
    act(() => workspace.getState().prepareRun());
    await settled(2);
  };
  if (!idle) await prepare();
  const find = <T extends Element = HTMLElement>(testid: string) => container.querySelector<T>(`[data-testid=${testid}]`);
  const choose = (value: string) =>
    act(() => {
      const select = find<HTMLSelectElement>("launch-where")!;
      select.value = value;
      select.dispatchEvent(new Event("change", { bubbles: true }));
    });
  const params = (text: string) =>
    act(() => {
      const field = find<HTMLTextAreaElement>("launch-params")!;
      Object.getOwnPropertyDescriptor(HTMLTextAreaElement.prototype, "value")!.set!.call(field, text);
      field.dispatchEvent(new Event("input", { bubbles: true }));
    });
  const start = () => act(() => find<HTMLButtonElement>("launch-start")!.click());
  /** The jobs that start a run, in the order called. */
  const starts = () => calls.filter(([job]) => ["start_session", "publish_blueprints", "remote_run"].includes(job));
  return { workspace, container, find, choose, params, start, starts, prepare };
}

describe("a run without anything to ask", () => {
  afterEach(() => localStorage.clear());

  it("starts at once on F5 when no server is saved and no composite wants elements", async () => {
    const { find, starts, prepare, workspace } = await mounted({}, [], true);
    await prepare();
    expect(find("launch-dialog")).toBeNull();
    expect(starts()).toEqual([["start_session", { file: "/w/deploy.json", params: {} }]]);
    expect(workspace.getState().mode).toBe("runs");
  });

  it("asks with Run with options…, and always once the user chose so, kept across a restart", async () => {
    const { find, starts, workspace } = await mounted({}, [], true);
    act(() => workspace.getState().prepareRun(true));
    await settled(2);
    expect(find("launch-dialog")).not.toBeNull();
    act(() => find<HTMLInputElement>("launch-always-ask")!.click());
    expect(workspace.getState().alwaysAsk).toBe(true);
    act(() => workspace.getState().cancelLaunch());
    expect(starts()).toEqual([]);
    act(() => root!.unmount());

    const again = await mounted({}, [], true);
    expect(again.workspace.getState().alwaysAsk, "read back at start").toBe(true);
    await again.prepare();
    expect(again.find("launch-dialog")).not.toBeNull();
    expect(again.starts()).toEqual([]);
  });

  it("starts with Enter in the parameters (Shift+Enter is a new line) and with Ctrl+Enter", async () => {
    const { find, params, starts } = await mounted();
    params('{"n": 1}');
    const field = find<HTMLTextAreaElement>("launch-params")!;
    act(() => void field.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter", shiftKey: true, bubbles: true, cancelable: true })));
    expect(starts()).toEqual([]);
    act(() => void field.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter", bubbles: true, cancelable: true })));
    await settled(2);
    expect(starts()).toEqual([["start_session", { file: "/w/deploy.json", params: { n: 1 } }]]);
    act(() => root!.unmount());

    const other = await mounted();
    const where = other.find("launch-where")!;
    act(() => void where.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter", ctrlKey: true, bubbles: true, cancelable: true })));
    await settled(2);
    expect(other.starts().map(([job]) => job)).toEqual(["start_session"]);
  });
});

describe("the launch dialog's choice of where to run", () => {
  it("offers this machine first, then each saved server, and none when no server is saved", async () => {
    const { find } = await mounted({}, [lab, { name: "cell", url: "http://10.0.0.5:8000", has_token: false }]);
    const select = find<HTMLSelectElement>("launch-where")!;
    expect([...select.options].map((o) => o.textContent)).toEqual(["This machine", "lab — http://lab:8000", "cell — http://10.0.0.5:8000"]);
    expect(select.value, "this machine by default").toBe("");
    act(() => root!.unmount());

    const { find: findAlone, workspace } = await mounted({}, [], true);
    act(() => workspace.getState().prepareRun(true));
    await settled(2);
    expect(findAlone("launch-dialog")).not.toBeNull();
    expect(findAlone("launch-where")).toBeNull();
  });

  it("runs on this machine as before: start_session with the parameters, the run shown", async () => {
    const { workspace, find, params, start, starts } = await mounted();
    params('{"n": 2}');
    start();
    await settled(2);
    expect(starts()).toEqual([["start_session", { file: "/w/deploy.json", params: { n: 2 } }]]);
    expect(find("launch-dialog")).toBeNull();
    expect(workspace.getState().mode).toBe("runs");
    expect(workspace.getState().runs.getState().run?.session.id).toBe("s1");
  });

  it("on a server, publishes the file, runs its blueprint there followed here, and opens the mirror; the choice is kept", async () => {
    const publishing = deferred<PublishBlueprintsAnswer>();
    const running = deferred<{ session_id: string; message: string; mirror: string }>();
    const { workspace, find, choose, params, start, starts, prepare } = await mounted({
      publish_blueprints: () => publishing.promise,
      remote_run: () => running.promise,
    });
    choose("lab");
    params('{"n": 2}');
    start();
    expect(find("launch-start")!.textContent).toBe("Publishing…");
    expect(find<HTMLButtonElement>("launch-start")!.disabled).toBe(true);
    await act(async () => publishing.resolve(uploaded));
    expect(find("launch-start")!.textContent).toBe("Starting…");
    expect(find("launch-dialog"), "open until the run starts").not.toBeNull();
    await act(async () => running.resolve({ session_id: "deploy-1", message: "Session started.", mirror: "m1" }));
    await settled(2);
    expect(starts()).toEqual([
      ["publish_blueprints", { server: "lab", files: ["/w/deploy.json"] }],
      ["remote_run", { server: "lab", blueprint_id: "deploy", params: { n: 2 }, follow: true }],
    ]);
    expect(find("launch-dialog")).toBeNull();
    expect(workspace.getState().mode).toBe("runs");
    expect(workspace.getState().runs.getState().run?.session.id).toBe("m1");

    await prepare();
    expect(find<HTMLSelectElement>("launch-where")!.value, "the next launch runs on the same server").toBe("lab");
  });

  it("stops before running when a blueprint is refused, showing what happened to each and the first problem", async () => {
    const { workspace, find, choose, start, starts } = await mounted({ publish_blueprints: () => refused });
    choose("lab");
    start();
    await settled(2);
    expect(starts().map(([job]) => job)).toEqual(["publish_blueprints"]);
    const shown = [...find("launch-publish-result")!.querySelectorAll("[data-testid=published-blueprint]")].map((li) => li.getAttribute("data-outcome"));
    expect(shown).toEqual(["uploaded", "refused"]);
    expect(find("launch-error")!.textContent).toBe("deploy: Task 'b': condition 'x > 1' reads 'x', which no task produces.");
    expect(find("launch-dialog")).not.toBeNull();
    expect(find("launch-start")!.textContent).toBe("▶ Start");
    expect(workspace.getState().mode).toBe("edit");
  });

  it.each([
    ["publishing", { publish_blueprints: () => Promise.reject(new Error("http://lab:8000 does not answer: connection refused")) }],
    ["starting", { remote_run: () => Promise.reject(new Error("http://lab:8000 does not answer: connection refused")) }],
  ] as [string, JobHandlers][])("shows why the server did not answer while %s, and stays open", async (_, jobs) => {
    const { workspace, find, choose, start } = await mounted(jobs);
    choose("lab");
    start();
    await settled(2);
    expect(find("launch-error")!.textContent).toBe("http://lab:8000 does not answer: connection refused");
    expect(find("launch-dialog")).not.toBeNull();
    expect(find<HTMLButtonElement>("launch-start")!.disabled, "Start can be tried again").toBe(false);
    expect(workspace.getState().mode).toBe("edit");
    expect(workspace.getState().runs.getState().run).toBeNull();
  });
});

describe("the launch dialog's simulation", () => {
  const typeInto = (field: HTMLTextAreaElement, text: string) =>
    act(() => {
      Object.getOwnPropertyDescriptor(HTMLTextAreaElement.prototype, "value")!.set!.call(field, text);
      field.dispatchEvent(new Event("input", { bubbles: true }));
    });
  const past = { ...session("s0"), state: "completed" as const, started_ms: 5, waiting: [], interrupted: false };

  it("simulates with the outputs set, a past run's outputs and times, and the tasks that fail", async () => {
    const { find, starts, workspace } = await mounted({ list_sessions: () => [past, { ...past, id: "other", blueprint_id: "other" }] }, [lab], true);
    act(() => workspace.getState().prepareRun(true, true));
    await settled(2);
    expect(find<HTMLInputElement>("launch-simulate")!.checked, "Simulate… opens it chosen").toBe(true);
    expect(find("launch-start")!.textContent).toBe("▶ Simulate");
    const from = find<HTMLSelectElement>("launch-outputs-from")!;
    expect([...from.options].map((o) => o.value), "completed runs of this blueprint").toEqual(["", "s0"]);
    expect(find<HTMLInputElement>("launch-durations")!.disabled, "times come with a past run").toBe(true);

    typeInto(find<HTMLTextAreaElement>("launch-outputs")!, '{"b": 3}');
    expect(find("launch-dialog")!.textContent).toContain("Outputs of b must be a JSON object of output names");
    expect(find<HTMLButtonElement>("launch-start")!.disabled).toBe(true);
    typeInto(find<HTMLTextAreaElement>("launch-outputs")!, '{"b": {"n": 3}}');
    typeInto(find<HTMLTextAreaElement>("launch-fail")!, "b:0");
    expect(find("launch-dialog")!.textContent).toContain("at least 1");
    typeInto(find<HTMLTextAreaElement>("launch-fail")!, "b:2\nend");
    act(() => {
      from.value = "s0";
      from.dispatchEvent(new Event("change", { bubbles: true }));
    });
    act(() => find<HTMLInputElement>("launch-durations")!.click());
    // A simulation runs here, not on a server.
    const where = find<HTMLSelectElement>("launch-where")!;
    act(() => {
      where.value = "lab";
      where.dispatchEvent(new Event("change", { bubbles: true }));
    });
    expect(find("launch-dialog")!.textContent).toContain("A simulation runs on this machine");
    act(() => find<HTMLInputElement>("launch-simulate")!.click());
    act(() => find<HTMLInputElement>("launch-hold-on-failure")!.click());
    expect(find("launch-dialog")!.textContent).toContain("Holding where a task fails runs on this machine");
    act(() => find<HTMLInputElement>("launch-simulate")!.click());
    act(() => {
      where.value = "";
      where.dispatchEvent(new Event("change", { bubbles: true }));
    });
    act(() => find<HTMLButtonElement>("launch-start")!.click());
    await settled(2);
    const simulate = { outputs: { b: { n: 3 } }, fail: [{ task: "b", attempts: 2 }, { task: "end" }], outputs_from: "s0", durations: true };
    expect(starts()).toEqual([["start_session", { file: "/w/deploy.json", params: {}, simulate, hold_on_failure: true }]]);
  });

  it("starts a real run when its box is cleared", async () => {
    const { find, starts, workspace } = await mounted({}, [], true);
    act(() => workspace.getState().prepareRun(true, true));
    await settled(2);
    act(() => find<HTMLInputElement>("launch-simulate")!.click());
    expect(find("launch-simulation")).toBeNull();
    act(() => find<HTMLButtonElement>("launch-start")!.click());
    await settled(2);
    expect(starts()).toEqual([["start_session", { file: "/w/deploy.json", params: {} }]]);
  });
});
