// @vitest-environment jsdom
import { act } from "react";
import { createRoot, type Root } from "react-dom/client";
import { afterEach, describe, expect, it } from "vitest";
import type { Attempt, BrokerDispatch, RemoteLinkChanged, Session, SessionEvent } from "../backend/generated";
import { MemoryBackend, type JobHandlers } from "../backend/memory";
import type { Blueprint } from "../blueprint";
import { settled } from "../settled";
import { WorkspaceProvider } from "../store/context";
import type { OpenRun } from "../store/runs";
import { createWorkspace, type WorkspaceStore } from "../store/workspace";
import { AttemptDetails, AttemptLog } from "./AttemptDetails";
import { RunHeader } from "./RunHeader";

(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true;

const session: Session = {
  id: "s1",
  blueprint_hash: "abcdef0123456789",
  blueprint_id: "bp",
  name: "bp",
  state: "running",
  params: {},
  created_ms: 0,
  started_ms: 0,
};

const blueprint: Blueprint = {
  id: "bp",
  tasks: [
    { id: "start", type: "system.start" },
    {
      id: "ask",
      type: "user_prompt.confirm",
      params: [
        { name: "message", value: "Ship it?" },
        { name: "options", value: ["Yes", "No"] },
      ],
    },
    { id: "name", type: "user_interaction.user_input", outputs: [{ name: "who" }] },
    { id: "work", type: "shell.run" },
  ],
};

function attempt(node: string, n: number, state: Attempt["state"], agent: string, extra: Partial<Attempt> = {}): Attempt {
  const [instance, task] = node.split(".") as [string, string];
  return { run_id: `${node}#${n}`, session_id: "s1", node, instance, task, attempt: n, state, agent, started_ms: 0, iterations: [], ...extra };
}

function openRun(change: Partial<OpenRun>): OpenRun {
  return {
    session,
    driven: true,
    waiting: [],
    held: [],
    breakpoints: [],
    restarts: [],
    nodes: {},
    attempts: [],
    blueprints: { bp: blueprint },
    instances: [{ id: "bp", blueprint_id: "bp", context: {} }],
    levels: [],
    selected: null,
    details: null,
    reads: null,
    lineage: null,
    link: null,
    notes: null,
    ...change,
  };
}

let root: Root | null = null;

/** The header, the details panel and the log of `run`, over a backend answering `jobs`; the calls it made. */
function mount(run: OpenRun, jobs: JobHandlers = {}) {
  const calls: [string, unknown][] = [];
  const recording = new Proxy(jobs, {
    get: (target, name: string) => (args: unknown) => {
      calls.push([name, args]);
      const handler = target[name as keyof JobHandlers] as ((a: unknown) => unknown) | undefined;
      return handler ? handler(args) : { outcome: "ok", session_id: "s1", tasks: [], cleared_data: [], cleared_counters: [] };
    },
  });
  const backend = new MemoryBackend(recording as JobHandlers);
  const workspace: WorkspaceStore = createWorkspace(backend, async () => ({}));
  workspace.getState().runs.setState({ run });
  const container = document.createElement("div");
  root = createRoot(container);
  const render = () =>
    act(() =>
      root!.render(
        <WorkspaceProvider store={workspace}>
          <RunHeader run={workspace.getState().runs.getState().run!} />
          <AttemptDetails run={workspace.getState().runs.getState().run!} />
          <AttemptLog run={workspace.getState().runs.getState().run!} />
        </WorkspaceProvider>,
      ),
    );
  render();
  const button = (label: string) => [...container.querySelectorAll("button")].find((b) => b.textContent === label);
  return { container, calls, button, workspace, render };
}

afterEach(() => {
  act(() => root?.unmount());
  root = null;
});

describe("a breakpoint set from the run view", () => {
  it("shows where the running session holds at the task, and sets or clears it there", async () => {
    const { container, calls } = mount(
      openRun({ breakpoints: [{ node: "bp.work", at: "after" }], selected: { node: "bp.work", attempt: 0 } }),
    );
    const select = () => container.querySelector("[data-testid=run-breakpoint]") as HTMLSelectElement;
    expect(select().value).toBe("after");
    const choose = (value: string) =>
      act(() => {
        select().value = value;
        select().dispatchEvent(new Event("change", { bubbles: true }));
      });
    choose("before");
    await settled(2);
    expect(calls).toContainEqual(["set_breakpoint", { session_id: "s1", task: "bp.work", at: "before" }]);
    choose("");
    await settled(2);
    expect(calls).toContainEqual(["set_breakpoint", { session_id: "s1", task: "bp.work" }]);
    act(() => root!.unmount());
    // A run no runner drives has no breakpoints to set.
    const idle = mount(openRun({ driven: false, selected: { node: "bp.work", attempt: 0 } }));
    expect(idle.container.querySelector("[data-testid=run-breakpoint]")).toBeNull();
  });
});

describe("the data a held task can read", () => {
  it("lists every value of its instance, each to change, not only those its inputs read", async () => {
    const reads = { node: "bp.work", instance: "bp", inputs: { n: 7 }, problem: null, keys: { n: "count" }, data: { count: 7, other: "x" } };
    const { container, calls } = mount(openRun({ held: [{ node: "bp.work", at: "before" }], reads, selected: { node: "bp.work", attempt: 0 } }));
    const other = container.querySelector("[data-testid=held-data][data-key=other]")!;
    expect(other.textContent).toContain("x");
    act(() => (other.querySelector("[data-testid=held-data-edit]") as HTMLButtonElement).click());
    const field = other.querySelector("[data-testid=held-data-value]") as HTMLInputElement;
    act(() => {
      const set = Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, "value")!.set!;
      set.call(field, '{"deep": [1]}');
      field.dispatchEvent(new Event("input", { bubbles: true }));
    });
    act(() => field.form!.dispatchEvent(new Event("submit", { bubbles: true, cancelable: true })));
    await settled(2);
    expect(calls).toContainEqual(["set_session_data", { session_id: "s1", instance: "bp", key: "other", value: { deep: [1] } }]);
  });
});

describe("a task held at a breakpoint", () => {
  it("is named in the header with continue, step and skip, and shows what it is about to read", async () => {
    const reads = { node: "bp.work", instance: "bp", inputs: { n: 7 }, problem: null, keys: { n: "count" }, data: { count: 7, other: "x" } };
    const held = [{ node: "bp.work", at: "before" }];
    const { container, calls, button } = mount(
      openRun({ held, reads, selected: { node: "bp.work", attempt: 0 } }),
      { continue_session: () => ({ outcome: "stepping bp.work" }) },
    );
    expect(container.querySelector("[data-testid=held]")?.textContent).toContain("Held before bp.work");
    const shown = container.querySelector("[data-testid=held-reads]")!;
    expect(shown.querySelector("[data-input=n]")?.textContent).toContain("7");
    expect(shown.textContent).toContain("Data of bp");
    // An input changed: the data key it reads is set, as JSON when the text is JSON.
    act(() => (shown.querySelector("[data-testid=held-input-edit]") as HTMLButtonElement).click());
    const field = shown.querySelector("[data-testid=held-input-value]") as HTMLInputElement;
    act(() => {
      const set = Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, "value")!.set!;
      set.call(field, "8");
      field.dispatchEvent(new Event("input", { bubbles: true }));
    });
    act(() => field.form!.dispatchEvent(new Event("submit", { bubbles: true, cancelable: true })));
    await settled(2);
    expect(calls).toContainEqual(["set_session_data", { session_id: "s1", instance: "bp", key: "count", value: 8 }]);
    act(() => button("Step")!.click());
    await settled(2);
    expect(calls).toContainEqual(["continue_session", { session_id: "s1", task: "bp.work", how: "step" }]);
    act(() => root!.unmount());

    // Held after it ended: nothing to skip, nothing about to be read.
    const after = mount(openRun({ held: [{ node: "bp.work", at: "after" }], selected: { node: "bp.work", attempt: 0 } }));
    expect(after.container.querySelector("[data-testid=held]")?.textContent).toContain("Held after bp.work");
    expect(after.button("Skip")).toBeUndefined();
    expect(after.button("Continue")).toBeDefined();
    expect(after.container.querySelector("[data-testid=held-reads]")).toBeNull();
    act(() => root!.unmount());

    // Held where it failed: it may be skipped too.
    const failed = mount(openRun({ held: [{ node: "bp.work", at: "failure" }], selected: { node: "bp.work", attempt: 0 } }));
    expect(failed.container.querySelector("[data-testid=held]")?.textContent).toContain("bp.work failed: held");
    expect(failed.button("Skip")).toBeDefined();
  });
});

describe("the details of an attempt", () => {
  it("asks a waiting confirmation with its options and sends the one chosen", async () => {
    const asking = attempt("bp.ask", 1, "running", "user_prompt.confirm");
    const { container, calls, button } = mount(openRun({ attempts: [asking], waiting: ["bp.ask"], selected: { node: "bp.ask", attempt: 1 } }));
    expect(container.querySelector(".prompt-message")?.textContent).toBe("Ship it?");
    expect(container.querySelector("[data-testid=waiting]")?.textContent).toBe("bp.ask waits for an answer");
    act(() => button("No")!.click());
    await settled(2);
    expect(calls).toContainEqual(["answer_prompt", { session_id: "s1", task: "bp.ask", value: "No" }]);
  });

  it("takes a typed answer as JSON when it reads as JSON, else as text", async () => {
    const asking = attempt("bp.name", 1, "running", "user_interaction.user_input");
    const { container, calls } = mount(openRun({ attempts: [asking], waiting: ["bp.name"], selected: { node: "bp.name", attempt: 1 } }));
    const input = container.querySelector<HTMLInputElement>("[data-testid=prompt-input]")!;
    expect(input.placeholder).toBe("who");
    const type = (text: string) => {
      act(() => {
        Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, "value")!.set!.call(input, text);
        input.dispatchEvent(new Event("input", { bubbles: true }));
      });
      act(() => input.form!.requestSubmit());
    };
    type("Ada");
    type("42");
    await settled(2);
    const answers = calls.filter(([job]) => job === "answer_prompt").map(([, args]) => (args as { value: unknown }).value);
    expect(answers).toEqual(["Ada", 42]);
  });

  it("offers cancel while a task runs, and reset and skip only when no runner drives the run", () => {
    const running = attempt("bp.work", 1, "running", "shell.run");
    const live = mount(openRun({ attempts: [running], selected: { node: "bp.work", attempt: 1 } }));
    expect(live.button("Cancel task")).toBeDefined();
    expect(live.button("Reset")).toBeUndefined();
    expect(live.button("Pause")).toBeDefined();
    expect(live.button("Retry from failure")).toBeUndefined();
    act(() => root!.unmount());

    const failed = attempt("bp.work", 1, "failed", "shell.run", {
      exit_code: 3,
      error: { code: "TOOL_FAILURE", message: "the process exited with code 3" },
    });
    const ended = mount(
      openRun({ session: { ...session, state: "failed" }, driven: false, attempts: [failed], selected: { node: "bp.work", attempt: 1 } }),
    );
    expect(ended.button("Cancel task")).toBeUndefined();
    expect(ended.button("Pause")).toBeUndefined();
    expect(ended.button("Reset")).toBeDefined();
    expect(ended.button("Skip")).toBeDefined();
    expect(ended.button("Retry from failure")).toBeDefined();
    expect(ended.container.querySelector("[data-testid=exit-code]")?.textContent).toBe("3");
    expect(ended.container.querySelector("[data-testid=attempt-error]")?.textContent).toBe("TOOL_FAILURE: the process exited with code 3");
  });

  it("says what the process was started with, and nothing for an attempt without one", () => {
    const environment = {
      program: "/home/ada/.local/bin/render",
      cwd: "/home/ada/work",
      variables: { HOME: "/home/ada", LANG: "fr_FR.UTF-8", PATH: "/home/ada/.local/bin:/usr/bin:/bin" },
    };
    const ran = attempt("bp.work", 1, "succeeded", "shell.run", { environment });
    const { container } = mount(openRun({ attempts: [ran], selected: { node: "bp.work", attempt: 1 } }));
    expect(container.querySelector("[data-testid=attempt-program]")?.textContent).toBe("/home/ada/.local/bin/render");
    const shown = container.querySelector("[data-testid=attempt-environment]")!;
    expect(shown.querySelector("summary")?.textContent).toBe("HOME, LANG, PATH");
    const path = shown.querySelector("[data-variable=PATH]")!;
    expect(path.textContent).toBe(environment.variables.PATH);
    expect(path.querySelectorAll("wbr")).toHaveLength(2);
    expect(shown.querySelector("[data-variable=LANG]")?.textContent).toBe("fr_FR.UTF-8");
    act(() => root!.unmount());

    const answered = attempt("bp.ask", 1, "succeeded", "user_prompt.confirm");
    const without = mount(openRun({ attempts: [answered], selected: { node: "bp.ask", attempt: 1 } }));
    expect(without.container.querySelector("[data-testid=attempt-program]")).toBeNull();
    expect(without.container.querySelector("[data-testid=attempt-environment]")).toBeNull();
  });

  it("resets a task with everything after it, and says so", async () => {
    const failed = attempt("bp.work", 1, "failed", "shell.run");
    const { calls, button, workspace } = mount(
      openRun({ session: { ...session, state: "failed" }, driven: false, attempts: [failed], selected: { node: "bp.work", attempt: 1 } }),
      { get_session: () => ({ session, tasks: [], attempts: [failed], driven: false, waiting: [], held: [], restarts: [] }) },
    );
    act(() => button("Reset with downstream")!.click());
    await settled(2);
    expect(calls).toContainEqual(["reset_task", { session_id: "s1", task: "bp.work", downstream: true }]);
    expect(workspace.getState().runs.getState().notice).toEqual({ text: "bp.work and everything after it reset", error: false });
  });

  it("says which iteration of a looped scope the attempt ran in", () => {
    const pass = (iteration: number) => ({ iterations: [{ instance: "bp", scope: "start", name: "build loop", iteration }] });
    const attempts = [
      attempt("bp.start", 1, "succeeded", "system.start", { started_ms: 0, finished_ms: 1, ...pass(1) }),
      attempt("bp.work", 1, "succeeded", "shell.run", { started_ms: 1, finished_ms: 5, ...pass(1) }),
      attempt("bp.start", 2, "succeeded", "system.start", { started_ms: 6, finished_ms: 7, ...pass(2) }),
      attempt("bp.work", 2, "failed", "shell.run", { started_ms: 7, finished_ms: 9, ...pass(2) }),
      attempt("bp.work", 3, "succeeded", "shell.run", { started_ms: 9, finished_ms: 12, ...pass(2) }),
      attempt("bp.ask", 1, "succeeded", "user_prompt.confirm", { started_ms: 12, finished_ms: 13 }),
    ];
    const retried = mount(openRun({ attempts, selected: { node: "bp.work", attempt: 3 } }));
    expect(retried.container.querySelector("[data-testid=scope-iteration]")?.textContent).toBe("Scope build loop: iteration 2 of 2");
    act(() => root!.unmount());

    const outside = mount(openRun({ attempts, selected: { node: "bp.ask", attempt: 1 } }));
    expect(outside.container.querySelector("[data-testid=scope-iteration]")).toBeNull();
  });

  it("shows the checklist of an attempt with each step's progress", () => {
    const running = attempt("bp.work", 1, "running", "shell.run");
    const steps = [
      { position: 0, name: "fetch", state: "done" as const, updated_ms: 0 },
      { position: 1, name: "build", state: "in_progress" as const, percentage: 40, updated_ms: 0 },
    ];
    const { container } = mount(
      openRun({ attempts: [running], selected: { node: "bp.work", attempt: 1 }, details: { attempt: running, steps, duration_ms: 1200, dispatch: [] } }),
    );
    const shown = [...container.querySelectorAll("[data-testid=steps] li")].map((li) => li.textContent);
    expect(shown).toEqual(["✓fetch", "◐build"]);
    expect(container.querySelector<HTMLElement>(".step-bar span")!.style.width).toBe("40%");
  });

  it("shows how a task went out to the agents on a broker, and nothing of it for a built-in agent", () => {
    const done = attempt("bp.work", 1, "succeeded", "shell.run");
    const dispatch: BrokerDispatch[] = [
      { node: "bp.work", step: "republished", assignment: "a1", n: 1 },
      { node: "bp.work", step: "allocated", assignment: "a1", agent: "agent-7" },
      { node: "bp.work", step: "silent", agents: ["agent-7", "agent-8"], assignment: "a2" },
    ];
    const details = (steps: BrokerDispatch[]) => ({ attempt: done, steps: [], duration_ms: 10, dispatch: steps });
    const brokered = mount(openRun({ attempts: [done], selected: { node: "bp.work", attempt: 1 }, details: details(dispatch) }));
    const lines = [...brokered.container.querySelectorAll("[data-testid=attempt-dispatch] li")].map((li) => li.textContent);
    expect(lines).toEqual([
      "unclaimed, published again (1)",
      "allocated to agent agent-7",
      "agents agent-7, agent-8 went silent: published again as a2",
    ]);
    act(() => root!.unmount());

    const local = mount(openRun({ attempts: [done], selected: { node: "bp.work", attempt: 1 }, details: details([]) }));
    expect(local.container.querySelector("[data-testid=attempt-details]")).not.toBeNull();
    expect(local.container.querySelector("[data-testid=attempt-dispatch]")).toBeNull();
    expect([...local.container.querySelectorAll("dt")].map((dt) => dt.textContent)).not.toContain("Broker");
  });

  it("links the runs it restarts and is restarted as, and opens the same task in them", async () => {
    const done = attempt("bp.work", 1, "succeeded", "shell.run");
    const origin: Session = { ...session, id: "s0", state: "failed" };
    const later: Session = { ...session, id: "s2", state: "completed", restarted_from: "s1" };
    const other = attempt("bp.work", 3, "succeeded", "shell.run", { session_id: "s0" });
    const { container, calls, workspace } = mount(
      openRun({
        session: { ...session, state: "completed", restarted_from: "s0" },
        driven: false,
        restarts: [later],
        attempts: [done],
        selected: { node: "bp.work", attempt: 1 },
        lineage: [],
      }),
      {
        get_session: ({ session_id }) => ({ session: origin, tasks: [], attempts: session_id === "s0" ? [other] : [], driven: false, waiting: [], held: [], restarts: [] }),
        get_session_blueprints: () => ({ root: { blueprint_id: "bp", hash: "h", text: JSON.stringify(blueprint) }, inner: [], instances: [] }),
      },
    );
    const header = [...container.querySelectorAll("[data-testid=run-lineage] button")].map((b) => [b.getAttribute("data-session-id"), b.textContent]);
    expect(header).toEqual([
      ["s0", "run #s0"],
      ["s2", "completed #s2"],
    ]);
    const related = [...container.querySelectorAll("[data-testid=lineage] li")].filter((li) => li.querySelector("[data-testid=lineage-run]"));
    expect(related.map((li) => li.textContent)).toEqual(["bp.work in the run it restarts #s0", "bp.work in its restart (completed) #s2"]);
    act(() => related[0]!.querySelector("button")!.click());
    await settled(2);
    expect(calls).toContainEqual(["get_session", { session_id: "s0" }]);
    const opened = workspace.getState().runs.getState().run!;
    expect(opened.session.id).toBe("s0");
    expect(opened.selected).toEqual({ node: "bp.work", attempt: 3 });
  });
});

describe("a run mirrored from a server", () => {
  const remote = { url: "http://lab:8000", session_id: "nightly-7" };
  const mirror: Session = { ...session, remote };
  const linkEvent = (value: RemoteLinkChanged): SessionEvent => ({
    session_id: "s1",
    seq: 2,
    global_seq: 2,
    time_ms: 0,
    kind: "remote_link",
    payload: { form: "whole", value },
  });
  const linkShown = (container: HTMLElement) => {
    const link = container.querySelector("[data-testid=remote-link]");
    return link && [link.getAttribute("data-reachable"), link.textContent];
  };

  it("names its server and session there, warns while the server does not answer, and follows the link live", () => {
    const { container, workspace, render } = mount(
      openRun({ session: mirror, link: { reachable: false, message: "connection refused", following: true } }),
    );
    expect(container.querySelector("[data-testid=run-remote]")?.textContent).toBe("Runs on http://lab:8000 · session nightly-7");
    expect(linkShown(container)).toEqual([
      "false",
      "Server unreachable: connection refused — Orrery keeps what it has and picks the run up again when the server answers",
    ]);

    act(() => workspace.getState().runs.getState().event(linkEvent({ reachable: true, url: remote.url })));
    render();
    expect(linkShown(container)).toEqual(["true", " · live from the server"]);

    act(() => workspace.getState().runs.getState().event(linkEvent({ reachable: false, message: "timed out", url: remote.url })));
    render();
    expect(linkShown(container)?.[1]).toMatch(/^Server unreachable: timed out — /);
  });

  it("says nothing of the link once it is not followed (over on the server), and nothing of servers for a local run", () => {
    const ended = mount(openRun({ session: { ...mirror, state: "completed" }, driven: false, link: { reachable: false, message: "gone", following: false } }));
    expect(ended.container.querySelector("[data-testid=run-remote]")).not.toBeNull();
    expect(ended.container.querySelector("[data-testid=remote-link]")).toBeNull();
    act(() => root!.unmount());

    const local = mount(openRun({}));
    expect(local.container.querySelector("[data-testid=run-remote]")).toBeNull();
    expect(local.container.querySelector("[data-testid=remote-link]")).toBeNull();
  });

  it("offers no cancel of one task, and reads no log of an attempt the server ran", async () => {
    // Even with a log path: the server's agent wrote it, on the server.
    const running = attempt("bp.work", 1, "running", "remote", { log_path: "/logs/work.log" });
    const { container, calls, button } = mount(
      openRun({ session: mirror, link: { reachable: true, following: true }, attempts: [running], selected: { node: "bp.work", attempt: 1 } }),
    );
    await settled(2);
    expect(button("Pause")).toBeDefined();
    expect(button("Cancel task")).toBeUndefined();
    expect(container.querySelector("[data-testid=remote-log]")?.textContent).toBe("Remote task: its output stays on the server's agent");
    expect(calls.map(([job]) => job)).not.toContain("read_attempt_log");
  });

  it("says when an attempt ran on the server before it was followed: no time, no duration", async () => {
    const early = attempt("bp.work", 1, "succeeded", "remote", { times_unknown: true, started_ms: 5_000, finished_ms: 5_000 });
    const ended = { ...mirror, state: "completed" as const, started_ms: 1_000, finished_ms: null };
    const { container } = mount(openRun({ session: ended, attempts: [early], selected: { node: "bp.work", attempt: 1 } }));
    await settled(2);
    expect(container.querySelector("[data-testid=times-unknown]")?.textContent).toBe("before Orrery followed · time unknown");
    const fields = [...container.querySelectorAll(".attempt-fields dt")].map((dt) => [dt.textContent, dt.nextElementSibling?.textContent]);
    expect(fields).toContainEqual(["Duration", "unknown"]);
    expect(container.querySelector(".run-meta")?.textContent).toMatch(/duration unknown/);
  });

  it("reads the log of a local attempt that wrote one (as the mirror's does not)", async () => {
    const running = attempt("bp.work", 1, "running", "shell.run", { log_path: "/logs/work.log" });
    const window = { content: "hello\n", start_offset: 0, next_offset: 6, file_size: 6, has_more_before: false, has_more_after: false, reset: false };
    const { container, calls } = mount(openRun({ attempts: [running], selected: { node: "bp.work", attempt: 1 } }), {
      read_attempt_log: () => ({ run_id: "bp.work#1", node: "bp.work", attempt: 1, running: true, window }),
    });
    await settled(2);
    expect(calls.map(([job]) => job)).toContain("read_attempt_log");
    expect(container.querySelector("[data-testid=remote-log]")).toBeNull();
  });
});
