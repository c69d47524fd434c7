// @vitest-environment jsdom
import { act } from "react";
import { createRoot, type Root } from "react-dom/client";
import { afterEach, describe, expect, it } from "vitest";
import type { PublishBlueprintsAnswer, PublishBlueprintsArguments, ServerInfo } from "../backend/generated";
import { editorJobs } from "../backend/editor-jobs";
import { MemoryBackend } from "../backend/memory";
import { connect, type Blueprint } from "../blueprint";
import { settled } from "../settled";
import { WorkspaceProvider } from "../store/context";
import type { Positions } from "../store/editor";
import { createWorkspace, currentEditor, type WorkspaceStore } from "../store/workspace";
import { PublishDialog } from "./PublishDialog";

(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true;

const flow = JSON.stringify({
  id: "flow",
  tasks: [
    { id: "start", type: "system.start" },
    { id: "b", type: "system.sleep", condition: "x > 1" },
    { id: "end", type: "system.end" },
  ],
});

const refused: PublishBlueprintsAnswer = {
  server: "http://lab:8000",
  all_uploaded: false,
  blueprints: [
    { file: "/w/inner.json", blueprint_id: "inner", given: false, outcome: "uploaded", message: "Blueprint uploaded successfully.", problems: [] },
    {
      file: "/w/flow.json",
      blueprint_id: "flow",
      given: true,
      outcome: "refused",
      message: "Blueprint 'flow' has 1 dataflow problem(s). (400)",
      problems: [{ task_id: "b", message: "Task 'b': condition 'x > 1' reads 'x', which no task produces." }],
    },
  ],
};

let root: Root | null = null;
afterEach(() => {
  act(() => root?.unmount());
  root = null;
});

async function mounted(answer: PublishBlueprintsAnswer = refused) {
  let servers: ServerInfo[] = [{ name: "lab", url: "http://lab:8000", has_token: true }];
  const published: PublishBlueprintsArguments[] = [];
  const backend = new MemoryBackend(
    {
      ...editorJobs(),
      list_servers: () => servers,
      save_server: ({ name, url, token }) => {
        // As the facade checks it.
        if (!url.startsWith("http://")) throw new Error(`${url} is not a server address: it must start with http://`);
        const saved = { name, url, has_token: Boolean(token) };
        servers = [...servers.filter((s) => s.name !== name), saved];
        return saved;
      },
      remove_server: ({ name }) => {
        const removed = servers.some((s) => s.name === name);
        servers = servers.filter((s) => s.name !== name);
        return { removed };
      },
      publish_blueprints: (args) => (published.push(args), answer),
    },
    { "/w/flow.json": flow },
    "/w/flow.json",
  );
  const layout = async (b: Blueprint): Promise<Positions> => Object.fromEntries(b.tasks.map((t, i) => [t.id, { x: 0, y: i * 100 }]));
  const workspace: WorkspaceStore = createWorkspace(backend, layout, { layoutSaveDelayMs: 10 });
  await workspace.getState().load();
  await settled();
  const container = document.createElement("div");
  document.body.append(container);
  root = createRoot(container);
  act(() =>
    root!.render(
      <WorkspaceProvider store={workspace}>
        <PublishDialog />
      </WorkspaceProvider>,
    ),
  );
  const button = (testid: string) => container.querySelector<HTMLButtonElement>(`[data-testid=${testid}]`)!;
  const type = (testid: string, value: string) =>
    act(() => {
      const field = container.querySelector<HTMLInputElement>(`[data-testid=${testid}]`)!;
      Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, "value")!.set!.call(field, value);
      field.dispatchEvent(new Event("input", { bubbles: true }));
    });
  return { workspace, container, published, button, type, backend, servers: () => servers };
}

describe("publishing to a server", () => {
  it("publishes the saved file to the server chosen and shows what happened to each blueprint", async () => {
    const { workspace, container, published, button } = await mounted();
    await act(async () => workspace.getState().preparePublish());
    await settled();
    expect(container.querySelector("#publish-title")!.textContent).toBe("Publish flow.json");
    const options = [...container.querySelectorAll("[data-testid=publish-server] option")].map((o) => o.textContent);
    expect(options).toEqual(["lab — http://lab:8000", "Another address…"]);
    act(() => button("publish-start").click());
    await settled();
    expect(published).toEqual([{ server: "lab", files: ["/w/flow.json"], force: false }]);
    const shown = [...container.querySelectorAll("[data-testid=published-blueprint]")].map((li) => [li.getAttribute("data-outcome"), li.getAttribute("data-blueprint-id")]);
    expect(shown).toEqual([
      ["uploaded", "inner"],
      ["refused", "flow"],
    ]);
    expect(container.querySelector("[data-testid=published]")!.textContent).toContain("(called by it)");
    // The server's problem is on task b of the blueprint shown: a click goes there.
    act(() => button("problem-task").click());
    expect(workspace.getState().servers.getState().publishing).toBeNull();
    expect(currentEditor(workspace.getState()).getState().focus?.task).toBe("b");
  });

  it("asks to save an edited blueprint first, and publishes it once saved", async () => {
    const { workspace, published, button, backend } = await mounted();
    act(() => currentEditor(workspace.getState()).getState().edit((b) => connect(b, "start", "b")));
    act(() => workspace.getState().preparePublish());
    expect(workspace.getState().ask?.title).toBe("Save flow.json before publishing it?");
    expect(workspace.getState().servers.getState().publishing).toBeNull();
    await act(async () => workspace.getState().ask!.choices.find((c) => c.label === "Save and Publish")!.run());
    await settled();
    expect(backend.files.get("/w/flow.json")).toContain('"depends_on"');
    act(() => button("publish-start").click());
    await settled();
    expect(published.map((p) => p.files)).toEqual([["/w/flow.json"]]);
  });

  it("sends a blueprint Orrery finds wanting only when asked to, to an address typed", async () => {
    const invalid: PublishBlueprintsAnswer = {
      server: "http://10.0.0.9:8000",
      all_uploaded: false,
      blueprints: [{ ...refused.blueprints[1]!, outcome: "invalid", message: "it has errors, or the server would refuse it" }],
    };
    const { workspace, container, published, button, type } = await mounted(invalid);
    await act(async () => workspace.getState().preparePublish());
    await settled();
    act(() => {
      const select = container.querySelector<HTMLSelectElement>("[data-testid=publish-server]")!;
      select.value = "";
      select.dispatchEvent(new Event("change", { bubbles: true }));
    });
    type("publish-address", "http://10.0.0.9:8000");
    act(() => button("publish-start").click());
    await settled();
    act(() => button("publish-force").click());
    await settled();
    expect(published.map((p) => [p.server, p.force])).toEqual([
      ["http://10.0.0.9:8000", false],
      ["http://10.0.0.9:8000", true],
    ]);
  });

  it("saves and removes servers by name, and says why one cannot be saved", async () => {
    const { workspace, container, button, type, servers } = await mounted();
    await act(async () => workspace.getState().preparePublish());
    await settled();
    type("server-name", "cell");
    type("server-url", "http://127.0.0.1:8000");
    type("server-token", "s3cret");
    act(() => button("server-save").click());
    await settled();
    expect(servers().map((s) => [s.name, s.has_token])).toEqual([
      ["lab", true],
      ["cell", true],
    ]);
    expect(container.querySelector<HTMLSelectElement>("[data-testid=publish-server]")!.value, "the new server is chosen").toBe("cell");
    act(() => container.querySelector<HTMLButtonElement>("[data-testid=server-remove]")!.click());
    await settled();
    expect(servers().map((s) => s.name)).toEqual(["cell"]);

    type("server-name", "bad");
    type("server-url", "ftp://x");
    act(() => button("server-save").click());
    await settled();
    expect(container.querySelector("[data-testid=publish-error]")!.textContent).toContain("it must start with http://");
  });
});
