// @vitest-environment jsdom
import { act } from "react";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { BlueprintFile } from "../backend/generated";
import { ioOf } from "../blueprint";
import { settled } from "../settled";
import type { EditorStore } from "../store/editor";
import { change, mountInspector, type Mounted } from "./testing";

const beside: BlueprintFile[] = [
  { file: "/work/bp/place_element.json", blueprint_id: "place_element", name: "Place an element", version: "1.0", tasks: 4 },
  { file: "/work/bp/assembly.json", blueprint_id: "assembly", name: "Assembly", version: "1.0", tasks: 3 },
];

const text = JSON.stringify({
  id: "assembly",
  tasks: [
    { id: "start", type: "system.start" },
    {
      id: "place",
      type: "system.composite",
      depends_on: [{ id: "start", type: "FS" }],
      params: [{ name: "blueprint", value: { static: "place_element" } }],
    },
    { id: "end", type: "system.end", depends_on: [{ id: "place", type: "FS" }] },
  ],
});

let mounted: Mounted;
let container: HTMLDivElement;
let store: EditorStore;
let asked: string[];

beforeEach(async () => {
  asked = [];
  mounted = await mountInspector("/work/bp/assembly.json", text, "place", {
    list_blueprint_files: ({ folder }) => {
      asked.push(folder);
      return beside;
    },
  });
  ({ container, store } = mounted);
});

afterEach(() => mounted.unmount());

const get = <E extends Element>(testId: string) => container.querySelector<E>(`[data-testid=${testId}]`);
const blueprintParam = () =>
  ioOf(store.getState().blueprint!.tasks.find((t) => t.id === "place")!, "params").find((p) => p.name === "blueprint")?.value;

describe("a composite's inner blueprint in the inspector", () => {
  it("shows the static id found beside the open file, which the list offers without the file itself", () => {
    expect(asked).toEqual(["/work/bp"]);
    expect(get<HTMLInputElement>("composite-blueprint-id")?.value).toBe("place_element");
    expect(get<HTMLInputElement>("composite-static")?.checked).toBe(true);
    expect(get("composite-found")?.textContent).toBe("Place an element: place_element.json, 4 tasks");
    const offered = [...container.querySelectorAll("datalist option")].map((o) => o.getAttribute("value"));
    expect(offered).toEqual(["place_element"]);
    // The param is the field's, not a row of the table too.
    expect(container.querySelectorAll("[data-testid=params-row]")).toHaveLength(0);
  });

  it("turns dynamic with a sequencer, keeping the id", async () => {
    const dynamic = get<HTMLInputElement>("composite-dynamic")!;
    act(() => dynamic.click());
    await settled();
    expect(blueprintParam()).toEqual({ dynamic: { blueprint_id: "place_element", sequencer: "basic_sequencer" } });
    await change(get<HTMLSelectElement>("composite-sequencer")!, "basic_element_sequencer");
    expect(blueprintParam()).toEqual({ dynamic: { blueprint_id: "place_element", sequencer: "basic_element_sequencer" } });
  });

  it("warns of an id no blueprint beside it has, and removes the param when the id is cleared", async () => {
    const input = get<HTMLInputElement>("composite-blueprint-id")!;
    await change(input, "elsewhere");
    expect(blueprintParam()).toEqual({ static: "elsewhere" });
    expect(get("composite-missing")).not.toBeNull();
    await change(input, "");
    expect(blueprintParam()).toBeUndefined();
    expect(get<HTMLInputElement>("composite-static")?.checked).toBe(true);
  });
});
