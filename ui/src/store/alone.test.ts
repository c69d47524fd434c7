import { describe, expect, it } from "vitest";
import type { Attempt, RunTaskAloneArguments, SessionListing } from "../backend/generated";
import { MemoryBackend } from "../backend/memory";
import { createAlone } from "./alone";

const listing = (id: string, change: Partial<SessionListing> = {}): SessionListing => ({
  id,
  blueprint_hash: "h",
  blueprint_id: "bp",
  name: "bp",
  state: "completed",
  params: {},
  created_ms: 0,
  started_ms: 1000,
  waiting: [],
  interrupted: false,
  ...change,
});

const ran: Attempt = {
  run_id: "r",
  session_id: "alone",
  node: "bp.b",
  instance: "bp",
  task: "b",
  attempt: 1,
  state: "succeeded",
  agent: "shell.run",
  started_ms: 1,
  finished_ms: 2,
  exit_code: 0,
  outputs: { m: 3 },
  iterations: [],
};

function backend(sessions: SessionListing[]) {
  const started: RunTaskAloneArguments[] = [];
  let waits = 0;
  const memory = new MemoryBackend({
    list_sessions: () => sessions,
    read_session_data: ({ session_id }) => ({ bp: session_id === "real" ? { n: 7, k: "x" } : { n: 666 } }),
    run_task_alone: (args) => (started.push(args), { session_id: "alone" }),
    // Running at the first wait, ended at the second.
    wait_session: () => ({ session: { ...listing("alone"), state: waits++ === 0 ? "running" : "completed" }, ended: waits > 1 }),
    get_session: () => ({ session: listing("alone"), tasks: [], attempts: [ran], driven: false, restarts: [], waiting: [], held: [] }),
  });
  return { memory, started };
}

describe("a task run alone from the editor", () => {
  it("fills its inputs from the newest completed real run, sends only what was changed, and follows it to its end", async () => {
    const { memory, started } = backend([listing("sim", { simulation: {} }), listing("real")]);
    const alone = createAlone(memory);
    await alone.getState().open("/w/bp.json", "bp", "b", [{ name: "n", key: "n" }, { name: "q", key: "k" }, { name: "none", key: "none" }]);
    const task = alone.getState().task!;
    expect(task.latest?.session_id).toBe("real");
    expect(task.inputs.map((i) => i.latest)).toEqual([7, "x", undefined]);
    await alone.getState().run({ n: 9 });
    expect(started).toEqual([{ file: "/w/bp.json", task: "b", inputs: { n: 9 }, inputs_from: "real" }]);
    expect(alone.getState().outcome).toEqual({ state: "completed", attempt: ran });
    expect(alone.getState().running).toBe(false);
  });

  it("runs with what is typed when the blueprint has no completed run, and says why it did not start", async () => {
    const { memory, started } = backend([]);
    const alone = createAlone(memory);
    await alone.getState().open("/w/bp.json", "bp", "b", [{ name: "n", key: "n" }]);
    expect(alone.getState().task?.latest).toBeNull();
    await alone.getState().run({ n: 1 });
    expect(started[0]).toEqual({ file: "/w/bp.json", task: "b", inputs: { n: 1 } });
    const failing = createAlone(new MemoryBackend({ list_sessions: () => [] }));
    await failing.getState().open("/w/bp.json", "bp", "b", []);
    await failing.getState().run({});
    expect(failing.getState().error).toBe("there is no job named run_task_alone");
    failing.getState().close();
    expect(failing.getState().task).toBeNull();
  });
});
