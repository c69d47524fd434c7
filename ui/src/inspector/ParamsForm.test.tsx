// @vitest-environment jsdom
import { act } from "react";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Diagnostic } from "../backend/generated";
import { ioOf, type Blueprint } from "../blueprint";
import { settled } from "../settled";
import type { EditorStore } from "../store/editor";
import { change, mountInspector, type Mounted } from "./testing";

const executionMode = { enum: ["EXCLUSIVE", "COMPETITIVE"], default: "EXCLUSIVE" };
// As the catalogue declares system.sleep (orrery-blueprint task_types.rs).
const sleepSchema = {
  type: "object",
  properties: {
    duration: { type: "number", minimum: 0, default: 1, description: "Seconds to wait." },
    execution_mode: executionMode,
  },
};

const text = JSON.stringify({
  id: "bp",
  tasks: [
    { id: "start", type: "system.start" },
    {
      id: "nap",
      type: "system.sleep",
      depends_on: [{ id: "start", type: "FS" }],
      params: [{ name: "extra", value: 1 }],
    },
    { id: "end", type: "system.end", depends_on: [{ id: "nap", type: "FS" }] },
  ],
});

// What the facade's validation says of the values these tests give `duration` (orrery-blueprint
// params.rs judges them; here the answers are canned).
const durationProblems: Record<string, string> = {
  "-1": "task 'nap': param 'duration': must be at least 0, found -1",
  '"soon"': "task 'nap': param 'duration': expected number, found string",
};

function validate({ text }: { text?: string | null }) {
  const nap = (JSON.parse(text ?? "{}") as Blueprint).tasks[1]!;
  const diagnostics: Diagnostic[] = ioOf(nap, "params").flatMap((p, j) => {
    const message = p.name === "duration" ? durationProblems[JSON.stringify(p.value)] : undefined;
    if (!message) return [];
    return [{ code: "param-schema", severity: "error", task_id: "nap", path: `$.tasks[1].params[${j}].value`, message, server_rejects: false }];
  });
  return [{ file: "/bp.json", valid: diagnostics.length === 0, server_accepts: true, diagnostics }];
}

let mounted: Mounted;
let container: HTMLDivElement;
let store: EditorStore;

beforeEach(async () => {
  mounted = await mountInspector("/bp.json", text, "nap", {
    validate_blueprint: validate,
    get_task_type: ({ name }) => ({
      name,
      description: "Waits.",
      params_schema: sleepSchema,
      inputs_schema: {},
      outputs_schema: {},
    }),
  });
  ({ container, store } = mounted);
});

afterEach(() => mounted.unmount());

const field = (name: string) => container.querySelector<HTMLElement>(`[data-testid=param-field][data-param=${name}]`)!;
const params = () => ioOf(store.getState().blueprint!.tasks.find((t) => t.id === "nap")!, "params");
const blueprint = (): Blueprint => store.getState().blueprint!;

describe("the params form", () => {
  it("sits beside the condition without the two being taken for one another as the task changes", async () => {
    // Both were keyed by the task id among the same siblings: each change of the condition left
    // one more condition field behind in WebKit.
    for (const condition of ["a", "ab", "abc"]) {
      act(() => store.getState().edit((b) => ({ ...b, tasks: b.tasks.map((t) => (t.id === "nap" ? { ...t, condition } : t)) })));
      await settled();
    }
    expect(container.querySelectorAll(".field.condition")).toHaveLength(1);
    expect(container.querySelectorAll("[data-testid=params-form], .params-form")).toHaveLength(1);
  });

  it("shows one field per declared param with its hint and default, and the others in the table", () => {
    expect([...container.querySelectorAll<HTMLElement>("[data-testid=param-field]")].map((e) => e.dataset.param)).toEqual([
      "duration",
      "execution_mode",
    ]);
    expect(field("duration").querySelector(".hint")?.textContent).toBe("Seconds to wait.");
    expect(field("duration").querySelector("input")?.placeholder).toBe("1 (≥ 0)");
    const others = container.querySelectorAll<HTMLInputElement>("[data-testid=params-row] input");
    expect([...others].map((i) => i.value)).toContain("extra");
  });

  it("writes a number as a {name, value} row, flags one out of bounds, and removes it when cleared", async () => {
    const input = field("duration").querySelector("input")!;
    await change(input, "2.5");
    expect(params()).toEqual([
      { name: "extra", value: 1 },
      { name: "duration", value: 2.5 },
    ]);
    expect(container.querySelectorAll("[data-testid=params-row]")).toHaveLength(1);
    await change(input, "-1");
    expect(params()[1]).toEqual({ name: "duration", value: -1 });
    expect(field("duration").querySelector("[data-testid=param-error]")?.textContent).toBe("task 'nap': param 'duration': must be at least 0, found -1");
    await change(input, "");
    expect(params()).toEqual([{ name: "extra", value: 1 }]);
    expect(field("duration").querySelector("[data-testid=param-error]")).toBeNull();
  });

  it("picks an enum value and removes the param when set back to its default", async () => {
    const select = field("execution_mode").querySelector("select")!;
    expect(select.options[0]?.textContent).toBe("(default: EXCLUSIVE)");
    await change(select, "1");
    expect(params()).toContainEqual({ name: "execution_mode", value: "COMPETITIVE" });
    await change(select, "");
    expect(params().some((p) => p.name === "execution_mode")).toBe(false);
  });

  it("shows a value of the wrong type as JSON with the reason, so that it can be fixed", async () => {
    act(() =>
      store.getState().edit((b) => ({
        ...b,
        tasks: b.tasks.map((t) => (t.id === "nap" ? { ...t, params: [{ name: "duration", value: "soon" }] } : t)),
      })),
    );
    await settled();
    expect(field("duration").querySelector<HTMLInputElement>("[data-testid=json-value]")?.value).toBe('"soon"');
    expect(field("duration").querySelector("[data-testid=param-error]")?.textContent).toBe("task 'nap': param 'duration': expected number, found string");
    expect(blueprint().tasks[1]?.params).toEqual([{ name: "duration", value: "soon" }]);
  });
});
