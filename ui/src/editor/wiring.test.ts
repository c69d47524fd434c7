import { describe, expect, it } from "vitest";
import type { Blueprint, Task } from "../blueprint";
import { isWire, reusingWiringEdges, wiring, wiringCurve, wiringEdges, type Wire } from "./wiring";

/** A task depending (FS) on `after`, with its inputs and outputs given as in the file. */
function task(id: string, after: string[], io: Partial<Pick<Task, "inputs" | "outputs">> = {}): Task {
  return {
    id,
    type: "shell.run",
    ...(after.length > 0 ? { depends_on: after.map((a) => ({ id: a, type: "FS" as const })) } : {}),
    ...io,
  };
}

const pairs = (wires: Wire[]) => wires.map((w) => `${w.from}.${w.output} -> ${w.to}.${w.input}`);

describe("which output feeds which input", () => {
  it("wires an input's get_from to the output whose set_to writes that name", () => {
    const blueprint: Blueprint = {
      tasks: [
        task("start", []),
        task("plan", ["start"], { outputs: [{ name: "result", set_to: "total" }] }),
        task("use", ["plan"], { inputs: [{ name: "sum", get_from: "total" }] }),
      ],
    };
    expect(wiring(blueprint)).toEqual([{ from: "plan", to: "use", key: "total", output: "result", input: "sum" }]);
  });

  it("wires an input without get_from by its own name, as the orchestrator reads it", () => {
    const blueprint: Blueprint = {
      tasks: [task("a", [], { outputs: [{ name: "count" }] }), task("b", ["a"], { inputs: [{ name: "count" }] })],
    };
    expect(pairs(wiring(blueprint))).toEqual(["a.count -> b.count"]);
  });

  it("takes the nearest writer upstream: an earlier one is overwritten before the reader runs", () => {
    const blueprint: Blueprint = {
      tasks: [
        task("first", [], { outputs: [{ name: "x" }] }),
        task("second", ["first"], { outputs: [{ name: "y", set_to: "x" }] }),
        // Depends on both: `first` also reaches it directly, yet `second` writes after it.
        task("reader", ["second", "first"], { inputs: [{ name: "x" }] }),
      ],
    };
    expect(pairs(wiring(blueprint))).toEqual(["second.y -> reader.x"]);
  });

  it("draws every writer on parallel branches, since either may write last", () => {
    const blueprint: Blueprint = {
      tasks: [
        task("start", []),
        task("left", ["start"], { outputs: [{ name: "v" }] }),
        task("right", ["start"], { outputs: [{ name: "v" }] }),
        task("join", ["left", "right"], { inputs: [{ name: "in", get_from: "v" }] }),
      ],
    };
    expect(pairs(wiring(blueprint))).toEqual(["left.v -> join.in", "right.v -> join.in"]);
  });

  it("draws no writer that does not run before the reader, nor a name nothing writes", () => {
    const blueprint: Blueprint = {
      tasks: [
        task("start", []),
        task("reader", ["start"], { inputs: [{ name: "late" }, { name: "param", get_from: "from_session" }] }),
        task("writer", ["reader"], { outputs: [{ name: "late" }] }),
        task("aside", ["start"], { outputs: [{ name: "late" }] }),
      ],
    };
    expect(wiring(blueprint)).toEqual([]);
  });

  it("does not wire a task to itself and survives a cycle", () => {
    const blueprint: Blueprint = {
      tasks: [
        task("a", ["b"], { inputs: [{ name: "n" }], outputs: [{ name: "n" }] }),
        task("b", ["a"], { outputs: [{ name: "m" }] }),
      ],
    };
    expect(wiring(blueprint)).toEqual([]);
  });
});

describe("the wiring as canvas edges", () => {
  const wires: Wire[] = [
    { from: "a", to: "b", key: "x", output: "x", input: "x" },
    { from: "a", to: "b", key: "t", output: "result", input: "total" },
    { from: "a", to: "c", key: "x", output: "x", input: "y" },
  ];

  it("makes one edge per pair of tasks, labelled output → input when zoomed in", () => {
    const edges = wiringEdges(wires, true);
    expect(edges.map((e) => [e.id, e.source, e.target, e.label])).toEqual([
      ["wire:a->b", "a", "b", "x → x, result → total"],
      ["wire:a->c", "a", "c", "x → y"],
    ]);
    expect(wiringEdges(wires, false).every((e) => e.label === undefined)).toBe(true);
  });

  it("answers the same edge again for a pair whose wires did not change", () => {
    const toEdges = reusingWiringEdges();
    const [ab, ac] = toEdges(wires, true);
    const again = toEdges([...wires], true);
    expect(again[0]).toBe(ab);
    expect(again[1]).toBe(ac);
    const renamed = toEdges([wires[0]!, wires[1]!, { ...wires[2]!, input: "z" }], true);
    expect(renamed[0]).toBe(ab);
    expect(renamed[1]).not.toBe(ac);
    expect(renamed[1]?.label).toBe("x → z");
    expect(toEdges(wires, false)[0]).not.toBe(ab);
  });

  it("keeps the edges out of the user's way and apart from the dependencies", () => {
    const [edge] = wiringEdges(wires, true);
    expect(edge).toMatchObject({ className: "wiring", selectable: false, deletable: false, focusable: false });
    expect(isWire(edge!)).toBe(true);
    expect(isWire({ id: "a->b" })).toBe(false);
  });
});

describe("a wire's curve", () => {
  it("bows to the right of a wire going down, with its label at the middle of the curve", () => {
    const { path, labelX, labelY } = wiringCurve(0, 0, 0, 60);
    expect(labelY).toBe(30);
    expect(labelX).toBeCloseTo(48);
    expect(path.startsWith("M 0,0 C ")).toBe(true);
    expect(path.endsWith(" 0,60")).toBe(true);
  });

  it("puts a label beside a wire going down, not across it", () => {
    expect(wiringCurve(0, 0, 0, 60, 100).labelX).toBeCloseTo(48 + 50 + 4);
    expect(wiringCurve(0, 60, 0, 0, 100).labelX).toBeCloseTo(-(48 + 50 + 4));
  });

  it("goes round the tasks a longer wire may pass, up to a limit", () => {
    expect(wiringCurve(0, 0, 0, 150).labelX).toBeCloseTo(120);
    expect(wiringCurve(0, 0, 0, 600).labelX).toBeCloseTo(156);
    expect(wiringCurve(0, 0, 0, 4000).labelX).toBe(180);
  });
});

describe("the wiring of a large blueprint", () => {
  it("walks a long chain once, not once per reader", () => {
    // 20,000 tasks in a chain, each reading a name the first one writes: one search per reader
    // would walk 200 million steps; kept answers walk the chain once.
    const n = 20_000;
    const tasks = Array.from({ length: n }, (_, i) =>
      i === 0 ? task("t0", [], { outputs: [{ name: "x" }] }) : task(`t${i}`, [`t${i - 1}`], { inputs: [{ name: "x" }] }),
    );
    const started = performance.now();
    const wires = wiring({ tasks });
    expect(wires).toHaveLength(n - 1);
    expect(wires.every((w) => w.from === "t0")).toBe(true);
    expect(performance.now() - started).toBeLessThan(2_000);
  });
});
