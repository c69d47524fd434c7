// @vitest-environment jsdom
import { act } from "react";
import { createRoot, type Root } from "react-dom/client";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { GetSessionNotesAnswer, Session, SessionListing } from "../backend/generated";
import { MemoryBackend } from "../backend/memory";
import { settled } from "../settled";
import { WorkspaceProvider } from "../store/context";
import { createWorkspace } from "../store/workspace";
import { AgentNotes, NOTES_EVERY_MS } from "./AgentNotes";
import { RunList } from "./RunList";

(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true;

const blueprint = { id: "bp", tasks: [{ id: "start", type: "system.start" }] };

function session(started_by: Session["started_by"]): Session {
  return { id: "s1", blueprint_hash: "abcdef0", blueprint_id: "bp", name: "bp", state: "completed", params: {}, created_ms: 0, started_by };
}

const counts = { in_progress: 0, failed: 0, unknown: 0, not_started: 0, completed: 0 };

function notes(payloads: string[]): GetSessionNotesAnswer {
  return {
    session_id: "s1",
    started_by: { project: "shop", agent: "claude" },
    from: "2026-12-02T10:00:00.000Z",
    until: null,
    memory_truncated: false,
    memory: [
      {
        view: {
          task_name: "deploy",
          goal: "ship 1.2 to staging",
          status: "open",
          last_event_seq: payloads.length,
          steps: {
            in_progress: [{ name: "run the blueprint", kind: "other", state: "in_progress", result_event_seq: null }],
            failed: [],
            unknown: [],
            not_started: [],
            completed: [{ name: "read the notes", kind: "read", state: "completed", result_event_seq: 1 }],
          },
          step_counts: { ...counts, in_progress: 1, completed: 3 },
          steps_truncated: true,
        },
        events: payloads.map((payload, i) => ({
          seq: i + 1,
          kind: i === 0 ? "tool_call" : "note",
          role: null,
          name: i === 0 ? "start_session" : null,
          payload,
          payload_sha256: "00",
          truncated: false,
          author: "claude",
          at: "2026-12-02T10:00:0" + i + ".000Z",
        })),
        events_in_window: payloads.length + 3,
      },
    ],
    checklists: [
      {
        thread: "main",
        tasks: [
          {
            task_id: 1,
            position: 0,
            title: "ship 1.2",
            description: null,
            status: "in_progress",
            subtasks: [
              { title: "validate", status: "done" },
              { title: "run", status: "pending" },
            ],
            conclusion: null,
            started_at: "2026-12-02T10:00:00.000Z",
            completed_at: null,
          },
        ],
      },
    ],
  };
}

let root: Root | null = null;

afterEach(() => {
  act(() => root?.unmount());
  root = null;
  vi.useRealTimers();
});

async function mount(started_by: Session["started_by"], answer: () => GetSessionNotesAnswer) {
  let asked = 0;
  const listing: SessionListing = { ...session(started_by), waiting: [], interrupted: false };
  const backend = new MemoryBackend({
    list_sessions: () => [listing],
    get_session: () => ({ session: session(started_by), tasks: [], attempts: [], driven: false, waiting: [], held: [], restarts: [] }),
    get_session_blueprints: () => ({ root: { blueprint_id: "bp", hash: "h", text: JSON.stringify(blueprint) }, inner: [], instances: [] }),
    get_session_notes: () => {
      asked += 1;
      return answer();
    },
  });
  const workspace = createWorkspace(backend, async () => ({}));
  const runs = workspace.getState().runs;
  await runs.getState().refresh();
  await runs.getState().open("s1");
  await settled();
  const container = document.createElement("div");
  root = createRoot(container);
  const render = () =>
    act(() =>
      root!.render(
        <WorkspaceProvider store={workspace}>
          <RunList />
          <AgentNotes run={runs.getState().run!} />
        </WorkspaceProvider>,
      ),
    );
  render();
  return { container, render, asked: () => asked };
}

describe("the agent beside its run", () => {
  it("shows who started the run, its checklist and the memory it wrote meanwhile", async () => {
    const { container } = await mount({ project: "shop", agent: "claude" }, () => notes(["start_session bp", "the run is green"]));
    const panel = container.querySelector("[data-testid=agent-notes]")!;
    expect(panel.querySelector("summary")!.textContent).toContain("Started by claude · project shop");
    expect(container.querySelector("[data-testid=run-agent]")!.textContent).toBe("◆ claude");

    const task = panel.querySelector("[data-testid=agent-checklist] .agent-task")!;
    expect(task.getAttribute("data-status")).toBe("in_progress");
    expect(task.textContent).toContain("ship 1.2");
    expect(task.querySelector(".agent-count")!.textContent).toBe("1/2");

    const memory = panel.querySelector("[data-testid=agent-memory]")!;
    expect(memory.querySelector(".agent-goal")!.textContent).toBe("ship 1.2 to staging");
    const steps = [...memory.querySelectorAll(".steps li")].map((li) => li.textContent);
    expect(steps).toEqual(["◐run the blueprint", "✓read the notesread", "and 2 more"]);
    const events = [...memory.querySelectorAll(".agent-event")];
    expect(events.map((e) => e.getAttribute("data-kind"))).toEqual(["tool_call", "note"]);
    expect(events[0]!.textContent).toContain("start_session");
    expect(events[1]!.querySelector(".agent-payload")!.textContent).toBe("the run is green");
    expect(memory.textContent).toContain("3 earlier events of this run");
  });

  it("opens a long event's text on demand and reads the notes again while shown", async () => {
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
    let payloads = ["x".repeat(500)];
    const { container, render, asked } = await mount({ project: "shop", agent: "claude" }, () => notes(payloads));
    const long = container.querySelector(".agent-event details")!;
    expect(long.querySelector("summary")!.textContent).toHaveLength(161);
    expect(long.querySelector("pre")!.textContent).toHaveLength(500);

    const before = asked();
    payloads = ["x", "a new note"];
    await act(async () => {
      vi.advanceTimersByTime(NOTES_EVERY_MS);
    });
    await settled();
    render();
    expect(asked()).toBe(before + 1);
    expect(container.querySelectorAll(".agent-event")).toHaveLength(2);
  });

  it("shows nothing for a run the app started without notes, nor the agent mark in the list", async () => {
    const empty = { ...notes([]), started_by: { project: "default", agent: "user" }, memory: [], checklists: [] };
    const { container } = await mount({ project: "default", agent: "user" }, () => empty);
    expect(container.querySelector("[data-testid=agent-notes]")).toBeNull();
    expect(container.querySelector("[data-testid=run-agent]")).toBeNull();
  });

  it("says so when the agent wrote nothing while the run was its latest", async () => {
    const empty = { ...notes([]), memory: [], checklists: [] };
    const { container } = await mount({ project: "shop", agent: "claude" }, () => empty);
    expect(container.querySelector("[data-testid=agent-notes-empty]")!.textContent).toContain("claude");
  });
});
