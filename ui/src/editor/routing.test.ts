import { describe, expect, it } from "vitest";
import type { Blueprint, Task } from "../blueprint";
import { NODE_HEIGHT, NODE_WIDTH } from "../store/positions";
import { toEdges } from "./graph";
import { detours, reusingRoutes } from "./routing";

const task = (id: string, ...deps: string[]): Task => ({ id, type: "shell.run", ...(deps.length > 0 ? { depends_on: deps.map((d) => ({ id: d, type: "FS" as const })) } : {}) });

// start -> a -> b -> end in a column, and end on start too: that line runs behind a and b.
const blueprint: Blueprint = { tasks: [task("start"), task("a", "start"), task("b", "a"), task("end", "b", "start")] };
const column = { start: { x: 0, y: 0 }, a: { x: 0, y: 150 }, b: { x: 0, y: 300 }, end: { x: 0, y: 450 } };

describe("routing dependencies around cards", () => {
  it("sends a line that would run behind cards out past them, and leaves the others as they are", () => {
    const routes = detours(blueprint, column, "down");
    expect([...routes.keys()]).toEqual(["start->end"]);
    const x = routes.get("start->end")!;
    expect(x > NODE_WIDTH || x < 0, `the run at x=${x} passes beside the cards`).toBe(true);
  });

  it("routes nothing when the cards between stand aside", () => {
    const aside = { ...column, a: { x: 400, y: 150 }, b: { x: 400, y: 300 } };
    expect(detours(blueprint, aside, "down").size).toBe(0);
  });

  it("flowing right, detours above or below the cards in the row", () => {
    const row = { start: { x: 0, y: 0 }, a: { x: 280, y: 0 }, b: { x: 560, y: 0 }, end: { x: 840, y: 0 } };
    const y = detours(blueprint, row, "right").get("start->end")!;
    expect(y > NODE_HEIGHT || y < 0).toBe(true);
  });

  it("answers the same edge objects while the routes stay the same", () => {
    const edges = toEdges(blueprint, null);
    const route = reusingRoutes();
    const first = route(edges, detours(blueprint, column, "down"));
    const again = route(edges, detours(blueprint, column, "down"));
    expect(again).toEqual(first);
    expect(again.find((e) => e.id === "start->end")).toBe(first.find((e) => e.id === "start->end"));
    expect(first.find((e) => e.id === "start->end")?.type).toBe("detour");
    expect(first.find((e) => e.id === "a->b")).toBe(edges.find((e) => e.id === "a->b"));
  });
});

describe("routing a blueprint drawn whole", () => {
  it("routes no line between adjacent layers, however slanted: 499 tasks in layers of eight, fully connected", () => {
    const tasks: Task[] = [task("t0_0")];
    for (let l = 1; l < 63; l++) {
      for (let i = 0; i < 8 && tasks.length < 499; i++) tasks.push(task(`t${l}_${i}`, ...(l === 1 ? ["t0_0"] : Array.from({ length: 8 }, (_, j) => `t${l - 1}_${j}`))));
    }
    const positions = Object.fromEntries(tasks.map((t) => {
      const [l, i] = t.id.slice(1).split("_").map(Number);
      return [t.id, { x: i! * 240, y: l! * 136 }];
    }));
    // A line from a card's lower edge to the next layer grazes the neighbours it leaves beside:
    // none stands in its way.
    expect(detours({ tasks }, positions, "down").size).toBe(0);
  });
});
