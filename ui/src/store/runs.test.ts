import { describe, expect, it } from "vitest";
import type { Attempt, Diagnostic, HeldTask, LinkState, SessionEvent, SessionListing, TaskState } from "../backend/generated";
import { editorJobs } from "../backend/editor-jobs";
import { MemoryBackend, type JobHandlers } from "../backend/memory";
import { connect, type Blueprint } from "../blueprint";
import { launchParams } from "../runs/LaunchDialog";
import type { Positions } from "./editor";
import { failedAttempt, filterSessions, followed } from "./runs";
import { createWorkspace, currentEditor, type WorkspaceStore } from "./workspace";

const deploy = JSON.stringify({
  id: "deploy",
  tasks: [
    { id: "start", type: "system.start" },
    {
      id: "fan",
      type: "system.composite",
      params: [{ name: "blueprint", value: { dynamic: { blueprint_id: "inner", sequencer: "basic_element_sequencer" } } }],
      depends_on: [{ id: "start", type: "FS" }],
    },
    { id: "ask", type: "user_prompt.confirm", depends_on: [{ id: "fan", type: "FS" }] },
    { id: "end", type: "system.end", depends_on: [{ id: "ask", type: "FS" }] },
  ],
});

const session = {
  id: "s1",
  blueprint_hash: "abc123",
  blueprint_id: "deploy",
  name: "deploy",
  state: "running" as const,
  params: {},
  created_ms: 1000,
  started_ms: 1000,
};

/** A node key's instance and task, as the facade names them. */
function parts(node: string): { instance: string; task: string } {
  const [instance, task] = node.split(".") as [string, string];
  return { instance, task };
}

function attempt(node: string, n: number, state: Attempt["state"], agent = "shell.run"): Attempt {
  const row = { run_id: `${node}#${n}`, session_id: "s1", node, attempt: n, state, agent, started_ms: 1000 + n };
  return { ...row, ...parts(node), log_path: "/logs/x", iterations: [] };
}

function setup(diagnostics: Diagnostic[] = [], jobs: JobHandlers = {}) {
  const started: unknown[] = [];
  let tasks: { node: string; state: TaskState }[] = [{ node: "deploy.start", state: "SUCCEEDED" }];
  let attempts: Attempt[] = [attempt("deploy.start", 1, "succeeded")];
  let held: HeldTask[] = [];
  const backend = new MemoryBackend(
    {
      ...editorJobs(diagnostics),
      list_sessions: () => [{ ...session, waiting: [], interrupted: false }],
      start_session: (args) => (started.push(args), { session_id: "s1" }),
      get_session: () => ({
        session,
        tasks: tasks.map((t) => ({ ...t, ...parts(t.node), session_id: "s1", updated_ms: 0 })),
        attempts,
        driven: true,
        restarts: [],
        // As the facade answers: the prompts still running.
        waiting: attempts.filter((a) => a.state === "running" && a.agent.startsWith("user_")).map((a) => a.node),
        held,
      }),
      get_session_blueprints: () => ({
        root: { blueprint_id: "deploy", hash: "abc123", text: deploy },
        inner: [],
        instances: [{ id: "deploy", blueprint_id: "deploy", context: {} }],
      }),
      get_attempt: ({ task, attempt: n }) => ({
        attempt: attempts.find((a) => a.node === task && a.attempt === n)!,
        steps: [],
        duration_ms: 5,
        dispatch: [],
      }),
      ...jobs,
    },
    { "/w/deploy.json": deploy },
    "/w/deploy.json",
  );
  const layout = async (b: Blueprint): Promise<Positions> => Object.fromEntries(b.tasks.map((t, i) => [t.id, { x: 0, y: i * 100 }]));
  const workspace = createWorkspace(backend, layout, { layoutSaveDelayMs: 10 });
  const change = (next: { tasks?: typeof tasks; attempts?: Attempt[]; held?: HeldTask[] }) => {
    tasks = next.tasks ?? tasks;
    attempts = next.attempts ?? attempts;
    held = next.held ?? held;
  };
  return { backend, workspace, started, change };
}

const settled = (ms = 0) => new Promise((resolve) => setTimeout(resolve, ms));
const editor = (w: WorkspaceStore) => currentEditor(w.getState()).getState();
const run = (w: WorkspaceStore) => w.getState().runs.getState().run!;

/** An event of kind `kind` with the parts of its data a test needs (the rest is not read). */
function event<K extends SessionEvent["kind"]>(kind: K, value: object, session_id = "s1"): Extract<SessionEvent, { kind: K }> {
  return { session_id, seq: 1, global_seq: 1, time_ms: 0, kind, payload: { form: "whole", value } } as Extract<SessionEvent, { kind: K }>;
}

async function loaded(diagnostics: Diagnostic[] = [], jobs: JobHandlers = {}) {
  const fixture = setup(diagnostics, jobs);
  await fixture.workspace.getState().load();
  await settled();
  return fixture;
}

describe("launching a run", () => {
  it("saves first, asks for the elements of dynamic composites, starts the file and shows the run", async () => {
    const { backend, workspace, started } = await loaded();
    editor(workspace).edit((b) => connect(b, "start", "ask"));
    // Breakpoints set in the editor go with the run; one of a task since deleted does not.
    editor(workspace).setBreakpoint("ask", "after");
    editor(workspace).setBreakpoint("gone", "before");
    workspace.getState().prepareRun();
    expect(workspace.getState().ask?.title).toBe("Save deploy.json before running it?");
    expect(workspace.getState().launching).toBeNull();
    await workspace.getState().ask!.choices.find((c) => c.label === "Save and Run")!.run();
    await settled();
    expect(backend.files.get("/w/deploy.json")).toContain('"id":"ask"');
    const breakpoints = [{ task: "ask", at: "after" }];
    expect(workspace.getState().launching).toEqual({ file: "/w/deploy.json", name: "deploy.json", id: "deploy", dynamic: ["fan"], breakpoints, simulate: false });

    await workspace.getState().launch({ elements: { fan: ["a", "b"] } });
    await settled();
    expect(started).toEqual([{ file: "/w/deploy.json", params: { elements: { fan: ["a", "b"] } }, breakpoints }]);
    expect(workspace.getState().mode).toBe("runs");
    expect(run(workspace).session.id).toBe("s1");
    expect(run(workspace).levels.map((l) => l.instance)).toEqual(["deploy"]);
  });

  it("is refused while the blueprint has errors, naming the first", async () => {
    const error: Diagnostic = { code: "cycle", severity: "error", task_id: "ask", path: "$", message: "a cycle", server_rejects: true };
    const { workspace } = await loaded([error]);
    workspace.getState().prepareRun();
    expect(workspace.getState().launching).toBeNull();
    expect(workspace.getState().ask).toBeNull();
    expect(editor(workspace).notice).toEqual({ text: "Fix the error before running: a cycle (ask)", error: true });
  });

  it("asks before running a blueprint with warnings", async () => {
    const warning: Diagnostic = { code: "orphan-task", severity: "warning", task_id: "ask", path: "$", message: "lonely", server_rejects: false };
    const { workspace } = await loaded([warning]);
    workspace.getState().prepareRun();
    expect(workspace.getState().ask?.title).toBe("Run with a warning?");
    expect(workspace.getState().ask?.message).toBe("ask: lonely");
    workspace.getState().ask!.choices.find((c) => c.label === "Cancel")!.run();
    expect(workspace.getState().launching).toBeNull();
    workspace.getState().prepareRun();
    workspace.getState().ask!.choices.find((c) => c.label === "Run Anyway")!.run();
    expect(workspace.getState().launching?.file).toBe("/w/deploy.json");
  });

  it("says why a run did not start", async () => {
    const { workspace } = await loaded([], {
      start_session: () => {
        throw new Error("deploy.json is not valid: inner is missing");
      },
    });
    workspace.getState().prepareRun();
    await workspace.getState().launch({});
    expect(workspace.getState().mode).toBe("edit");
    expect(editor(workspace).notice?.text).toBe("deploy.json is not valid: inner is missing");
  });
});

describe("the launch parameters", () => {
  it("are a JSON object, with the elements typed one per line", () => {
    expect(launchParams("", {})).toEqual({ params: {} });
    expect(launchParams('{"n": 2}', { fan: " a \n\nb\n", other: "" })).toEqual({ params: { n: 2, elements: { fan: ["a", "b"] } } });
    expect(launchParams('{"elements": {"x": ["1"]}}', { fan: "a" })).toEqual({ params: { elements: { x: ["1"], fan: ["a"] } } });
    expect(launchParams("[1]", {})).toEqual({ error: 'Parameters must be a JSON object, like {"name": "value"}' });
    expect("error" in launchParams("{oops", {})).toBe(true);
  });
});

describe("an open run", () => {
  async function opened() {
    const fixture = await loaded();
    await fixture.workspace.getState().runs.getState().open("s1");
    return fixture;
  }

  it("follows task states and attempts from the events as they come, and only its own", async () => {
    const { workspace } = await opened();
    const runs = workspace.getState().runs.getState();
    runs.event(event("task_state_changed", { node: "deploy.fan", blueprint_id: "deploy", task_id: "fan", state: "RUNNING" }));
    expect(run(workspace).nodes["deploy.fan"]).toEqual({ instance: "deploy", task: "fan", state: "RUNNING" });
    // Each event carries the attempt's row, as the store keeps it.
    const begun: Attempt = { ...attempt("deploy.fan", 1, "running"), run_id: "r1", started_ms: 5 };
    const started = { ...event("attempt_started", begun), run_id: "r1", time_ms: 5 };
    runs.event(started);
    runs.event(started);
    runs.event({ ...started, session_id: "another session", run_id: "r2" });
    expect(run(workspace).attempts.slice(1)).toEqual([begun]);
    const error = { code: "TOOL_FAILURE", message: "exit 2" };
    const ended: Attempt = { ...begun, state: "failed", finished_ms: 9, exit_code: 2, error };
    runs.event({ ...event("attempt_settled", ended), run_id: "r1", time_ms: 9 });
    expect(run(workspace).attempts[1]).toEqual(ended);
  });

  it("moves a selection made before the task ran to its first attempt once that starts", async () => {
    const { workspace } = await opened();
    const runs = workspace.getState().runs.getState();
    runs.event(event("task_state_changed", { node: "deploy.fan", blueprint_id: "deploy", task_id: "fan", state: "PENDING" }));
    runs.selectTask("fan");
    expect(run(workspace).selected).toEqual({ node: "deploy.fan", attempt: 0 });
    const begun: Attempt = { ...attempt("deploy.fan", 1, "running"), run_id: "r1" };
    runs.event({ ...event("attempt_started", begun), run_id: "r1" });
    expect(run(workspace).selected).toEqual({ node: "deploy.fan", attempt: 1 });
  });

  it("opens on the task it holds at, and leads to the next task it holds at", async () => {
    const { workspace, change } = await loaded();
    const runs = workspace.getState().runs.getState();
    // Held before the run view first read it (a run launched with a breakpoint on its first task).
    change({ held: [{ node: "deploy.fan", at: "before" }] });
    await runs.open("s1");
    expect(run(workspace).selected).toEqual({ node: "deploy.fan", attempt: 0 });
    change({ attempts: [attempt("deploy.start", 1, "succeeded"), attempt("deploy.fan", 1, "succeeded")], held: [{ node: "deploy.fan", at: "after" }] });
    runs.selectTask("start");
    runs.event(event("breakpoints", { node: "deploy.fan", what: "step", held: [] }));
    await settled(100);
    expect(run(workspace).selected, "held again: after it").toEqual({ node: "deploy.fan", attempt: 1 });
  });

  it("reads the run again when its events came while it was being opened", async () => {
    const { workspace, change } = await loaded();
    const runs = workspace.getState().runs.getState();
    const opening = runs.open("s1");
    // The facade answered with what was before; then the run moved on (a run just followed).
    change({ tasks: [{ node: "deploy.start", state: "SUCCEEDED" }, { node: "deploy.end", state: "SUCCEEDED" }] });
    runs.event(event("session_state_changed", { state: "completed" }));
    await opening;
    expect(run(workspace).nodes["deploy.end"]).toBeUndefined();
    await settled(100);
    expect(run(workspace).nodes["deploy.end"]?.state).toBe("SUCCEEDED");
  });

  it("reads the run again when an attempt's event cannot be applied", async () => {
    const { workspace, change } = await opened();
    change({ attempts: [attempt("deploy.start", 1, "succeeded"), attempt("deploy.fan", 1, "succeeded")] });
    const runs = workspace.getState().runs.getState();
    runs.event({ ...event("attempt_settled", { ...attempt("deploy.fan", 1, "succeeded"), run_id: "never seen" }), run_id: "never seen" });
    expect(run(workspace).attempts).toHaveLength(1);
    await settled(100);
    expect(run(workspace).attempts).toHaveLength(2);
  });

  it("reads a busy run again during a steady stream of events, not only after it", async () => {
    const { workspace, change } = await opened();
    const runs = workspace.getState().runs.getState();
    change({ attempts: [attempt("deploy.start", 1, "succeeded"), attempt("deploy.fan", 1, "running")] });
    // An event every 20 ms for 300 ms: the reload comes during the stream.
    for (let i = 0; i < 15; i++) {
      runs.event(event("session_state_changed", { state: "running" }));
      await settled(20);
    }
    expect(run(workspace).attempts).toHaveLength(2);
  });

  it("selects a task's latest attempt, loads its details and hears its log grow", async () => {
    const { workspace, change } = await opened();
    change({ attempts: [attempt("deploy.ask", 1, "failed"), attempt("deploy.ask", 2, "running", "user_prompt.confirm")] });
    const runs = workspace.getState().runs;
    runs.getState().resync();
    await settled();
    runs.getState().selectTask("ask");
    expect(run(workspace).selected).toEqual({ node: "deploy.ask", attempt: 2 });
    await settled();
    expect(run(workspace).details?.attempt.attempt).toBe(2);
    runs.getState().event(event("log_grew", { node: "deploy.ask", attempt: 1, file_size: 10 }));
    expect(runs.getState().grew).toBe(null);
    runs.getState().event(event("log_grew", { node: "deploy.ask", attempt: 2, file_size: 42 }));
    expect(runs.getState().grew).toEqual({ fileSize: 42 });
    runs.getState().event(event("log_grew", { node: "deploy.ask", attempt: 2, file_size: 48, from: 42, text: "done.\n" }));
    expect(runs.getState().grew, "small growth comes with its text").toEqual({ fileSize: 48, carried: { from: 42, text: "done.\n" } });
    expect(run(workspace).waiting).toEqual(["deploy.ask"]);
  });

  it("reads the list and the run again when events were missed", async () => {
    const { backend, workspace, change } = await opened();
    change({ tasks: [{ node: "deploy.ask", state: "FAILED" }] });
    backend.lag();
    await settled();
    expect(run(workspace).nodes).toEqual({ "deploy.ask": { instance: "deploy", task: "ask", state: "FAILED" } });
  });

  it("tells what an action did, or why it was refused", async () => {
    const { workspace } = await loaded([], {
      pause_session: () => ({ outcome: "pausing" }),
      stop_session: () => {
        throw new Error("session s1 is not running");
      },
    });
    const runs = workspace.getState().runs;
    await runs.getState().open("s1");
    await runs.getState().act("pause");
    expect(runs.getState().notice).toEqual({ text: "Pausing: what runs finishes, nothing new starts", error: false });
    await runs.getState().act("stop");
    expect(runs.getState().notice).toEqual({ text: "session s1 is not running", error: true });
  });
});

describe("time travel on an open run", () => {
  const history = {
    nodes: ["deploy.start", "deploy.fan"],
    changes: [
      { at: 1000, seq: 1, node: 0, state: "SUCCEEDED" as const },
      { at: 1000, seq: 2, node: 1, state: "PENDING" as const },
      { at: 1200, seq: 3, node: 1, state: "RUNNING" as const },
    ],
    session: [{ at: 1000, seq: 0, state: "running" as const }],
    data: [],
  };

  it("reads the history once, shows the end, then any moment within it; a new run leaves it", async () => {
    let reads = 0;
    const fixture = await loaded([], { session_history: () => (reads++, history) });
    const runs = () => fixture.workspace.getState().runs.getState();
    await runs().open("s1");
    await runs().startTravel();
    expect(runs().travel?.at).toBe(1200);
    expect(runs().travel?.replay.states.get("deploy.fan")).toBe("RUNNING");
    runs().travelTo(1100);
    expect(runs().travel?.at).toBe(1100);
    expect(runs().travel?.replay.states.get("deploy.fan")).toBe("PENDING");
    // Clamped to the history.
    runs().travelTo(0);
    expect(runs().travel?.at).toBe(1000);
    runs().travelTo(5000);
    expect(runs().travel?.at).toBe(1200);
    expect(reads).toBe(1);
    runs().stopTravel();
    expect(runs().travel).toBeNull();
    // Stopped while its history was being read: it stays stopped.
    const reading = runs().startTravel();
    runs().stopTravel();
    await reading;
    expect(runs().travel).toBeNull();
    await runs().startTravel(1100);
    expect(runs().travel?.at).toBe(1100);
    await runs().open("s1");
    expect(runs().travel).toBeNull();
  });

  it("keeps each run's time as last read, and a run shows without it when it cannot be read", async () => {
    const timing = { past_runs: 1, remaining_ms: 500, unknown: 0, critical_path: [], tasks: [] };
    let fails = false;
    const fixture = await loaded([], {
      session_timing: () => {
        if (fails) throw new Error("no store");
        return timing;
      },
    });
    const runs = () => fixture.workspace.getState().runs.getState();
    await runs().loadTiming("s1");
    expect(runs().timings.s1?.timing).toEqual(timing);
    fails = true;
    await runs().loadTiming("s1");
    expect(runs().timings.s1?.timing).toEqual(timing);
    expect(runs().notice).toBeNull();
  });
});

describe("a failed run", () => {
  const failed = { ...session, state: "failed" as const, file: "/w/deploy.json", last_error: { code: "TASK_FAILED" as const, message: "exit 3" } };
  const attempts = [attempt("deploy.start", 1, "succeeded"), attempt("deploy.fan", 1, "failed"), attempt("deploy.ask", 1, "succeeded")];

  /** A failed run with a file, its changes as `changes` answers, each job called recorded. */
  async function failedRun(changes: () => unknown) {
    const called: [string, unknown][] = [];
    const record = <A,>(job: string, answer: A) => (args: unknown) => (called.push([job, args]), answer);
    const fixture = await loaded([], {
      get_session: ({ session_id }) => ({
        session: { ...failed, id: session_id },
        tasks: [],
        attempts: session_id === "s1" ? attempts : [],
        driven: false,
        restarts: [],
        waiting: [],
        held: [],
      }),
      blueprint_changes: changes as JobHandlers["blueprint_changes"],
      resume_session: record("resume_session", { session_id: "s1" }),
      restart_session: record("restart_session", { session_id: "s2" }),
    });
    const runs = fixture.workspace.getState().runs;
    await runs.getState().open("s1");
    return { runs, called };
  }

  it("opens on its failed attempt, and leads a retry to the newest attempt of the task shown", async () => {
    const { runs } = await failedRun(() => ({}));
    expect(runs.getState().run!.selected).toEqual({ node: "deploy.fan", attempt: 1 });
    const retried = [...attempts, attempt("deploy.fan", 2, "running")];
    expect(followed({ node: "deploy.fan", attempt: 1 }, attempts, retried)).toEqual({ node: "deploy.fan", attempt: 2 });
    // An older attempt the user went back to stays shown.
    const three = [...retried, attempt("deploy.fan", 3, "running")];
    expect(followed({ node: "deploy.fan", attempt: 1 }, retried, three)).toEqual({ node: "deploy.fan", attempt: 1 });
    expect(failedAttempt([attempt("deploy.a", 1, "failed"), attempt("deploy.b", 1, "unknown")])).toEqual({ node: "deploy.b", attempt: 1 });
    expect(failedAttempt([attempt("deploy.a", 1, "succeeded")])).toBeNull();
  });

  it("asks, when its file changed, whether to retry with the saved blueprint or as it ran", async () => {
    const changes = { session_id: "s1", file: "/w/deploy.json", summary: "fan: command changed", problem: null };
    const { runs, called } = await failedRun(() => changes);
    await runs.getState().act("resume");
    expect(runs.getState().rerun).toEqual({ action: "resume", changes });
    expect(called).toEqual([]);
    await runs.getState().act("resume", "saved");
    expect(called).toEqual([["restart_session", { session_id: "s1", saved: true, keep_done: true }]]);
    expect(runs.getState().rerun).toBeNull();
    expect(runs.getState().run!.session.id).toBe("s2");
    await runs.getState().open("s1");
    await runs.getState().act("resume", "ran");
    await runs.getState().act("restart", "saved");
    expect(called.slice(1)).toEqual([
      ["resume_session", { session_id: "s1" }],
      ["restart_session", { session_id: "s1", saved: true }],
    ]);
  });

  it("runs from a task as a new run, asking first when the file changed since", async () => {
    const unchanged = await failedRun(() => ({ session_id: "s1", file: "/w/deploy.json", summary: "no change", problem: null }));
    await unchanged.runs.getState().runFrom("deploy.fan");
    expect(unchanged.called).toEqual([["restart_session", { session_id: "s1", from: "deploy.fan" }]]);
    expect(unchanged.runs.getState().run!.session.id).toBe("s2");
    expect(unchanged.runs.getState().notice?.text).toMatch(/from deploy\.fan/);

    const changes = { session_id: "s1", file: "/w/deploy.json", summary: "fan: command changed", problem: null };
    const { runs, called } = await failedRun(() => changes);
    await runs.getState().runFrom("deploy.fan");
    expect(runs.getState().rerun).toEqual({ action: "from", node: "deploy.fan", changes });
    expect(called).toEqual([]);
    await runs.getState().runFrom("deploy.fan", "saved");
    expect(runs.getState().rerun).toBeNull();
    await runs.getState().open("s1");
    await runs.getState().runFrom("deploy.fan", "ran");
    expect(called).toEqual([
      ["restart_session", { session_id: "s1", saved: true, from: "deploy.fan" }],
      ["restart_session", { session_id: "s1", from: "deploy.fan" }],
    ]);
  });

  it("retries and restarts as it ran, without asking, when the file did not change or cannot be read", async () => {
    const unchanged = await failedRun(() => ({ session_id: "s1", file: "/w/deploy.json", summary: "no change", problem: null }));
    await unchanged.runs.getState().act("restart");
    expect(unchanged.called).toEqual([["restart_session", { session_id: "s1" }]]);
    const gone = await failedRun(() => {
      throw new Error("cannot read /w/deploy.json");
    });
    await gone.runs.getState().act("resume");
    expect(gone.runs.getState().rerun).toBeNull();
    expect(gone.called).toEqual([["resume_session", { session_id: "s1" }]]);
  });
});

describe("a run mirrored from a server", () => {
  it("keeps whether the server answers: from the facade when read, from its own link events between", async () => {
    let link: LinkState = { reachable: false, message: "connection refused", following: true };
    const { workspace } = await loaded([], {
      get_session: () => ({
        session: { ...session, remote: { url: "http://lab:8000", session_id: "nightly-7" } },
        tasks: [],
        attempts: [],
        driven: true,
        waiting: [],
        held: [],
        restarts: [],
        link,
      }),
    });
    const runs = workspace.getState().runs;
    await runs.getState().open("s1");
    expect(run(workspace).link).toEqual({ reachable: false, message: "connection refused", following: true });

    runs.getState().event(event("remote_link", { reachable: true, url: "http://other:8000" }, "another session"));
    expect(run(workspace).link?.reachable).toBe(false);
    runs.getState().event(event("remote_link", { reachable: true, url: "http://lab:8000" }));
    expect(run(workspace).link).toEqual({ reachable: true, message: null, following: true });

    // Over on the server: the facade follows it no more.
    link = { reachable: true, following: false };
    runs.getState().resync();
    await settled();
    expect(run(workspace).link).toEqual({ reachable: true, following: false });
  });
});

describe("the list of runs", () => {
  const listed = (id: string, name: string, state: SessionListing["state"]): SessionListing => ({
    ...session,
    id,
    name,
    blueprint_id: name.toLowerCase().replace(/ /g, "-"),
    state,
    waiting: [],
    interrupted: false,
  });

  it("is filtered by state and by text in the name, blueprint or id", () => {
    const sessions = [listed("a1", "nightly", "completed"), listed("b2", "deploy", "failed"), listed("c3", "Deploy again", "running")];
    const ids = (text: string, state: "all" | SessionListing["state"] = "all") => filterSessions(sessions, { text, state }).map((s) => s.id);
    expect(ids("")).toEqual(["a1", "b2", "c3"]);
    expect(ids("DEPLOY")).toEqual(["b2", "c3"]);
    expect(ids("deploy", "failed")).toEqual(["b2"]);
    expect(ids("b2")).toEqual(["b2"]);
    expect(ids("", "stopped")).toEqual([]);
  });
});
