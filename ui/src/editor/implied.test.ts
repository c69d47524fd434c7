import { describe, expect, it } from "vitest";
import type { Blueprint, Task } from "../blueprint";
import { impliedDependencies } from "./implied";

const task = (id: string, ...deps: string[]): Task => ({
  id,
  type: "shell.run",
  ...(deps.length > 0 ? { depends_on: deps.map((d) => ({ id: d.replace(/:.*/, ""), type: (d.split(":")[1] ?? "FS") as "FS" })) } : {}),
});

describe("implied dependencies", () => {
  it("finds a dependency another chain already waits for, with that chain", () => {
    // Rewired start -> a -> b -> end, and end still on start.
    const blueprint: Blueprint = { tasks: [task("start"), task("a", "start"), task("b", "a"), task("end", "b", "start")] };
    expect([...impliedDependencies(blueprint)]).toEqual([["start->end", ["start", "a", "b", "end"]]]);
  });

  it("counts only finish-to-start chains, and only a finish-to-start dependency as implied", () => {
    // b starts with a (SS): end's wait for a is not implied by b.
    const started: Blueprint = { tasks: [task("start"), task("a", "start"), task("b", "a:SS"), task("end", "b", "a")] };
    expect(impliedDependencies(started).size).toBe(0);
    // end's SS dependency on start says something of its own.
    const own: Blueprint = { tasks: [task("start"), task("a", "start"), task("end", "a", "start:SS")] };
    expect(impliedDependencies(own).size).toBe(0);
  });

  it("implies nothing in a diamond, and nothing while the tasks form a cycle", () => {
    const diamond: Blueprint = { tasks: [task("s"), task("l", "s"), task("r", "s"), task("e", "l", "r")] };
    expect(impliedDependencies(diamond).size).toBe(0);
    const cycle: Blueprint = { tasks: [task("a", "c"), task("b", "a"), task("c", "b", "a")] };
    expect(impliedDependencies(cycle).size).toBe(0);
  });

  it("answers quickly for layers of eight, fully connected (each task on the whole layer before)", () => {
    const tasks: Task[] = [task("t0_0")];
    for (let l = 1; l < 200; l++) {
      for (let i = 0; i < 8; i++) tasks.push(task(`t${l}_${i}`, ...(l === 1 ? ["t0_0"] : Array.from({ length: 8 }, (_, j) => `t${l - 1}_${j}`))));
    }
    // Plus one long dependency the layers already imply.
    tasks.push(task("late", "t199_0", "t0_0"));
    expect([...impliedDependencies({ tasks }).keys()]).toEqual(["t0_0->late"]);
  });
});
