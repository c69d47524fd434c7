import { describe, expect, it } from "vitest";
import type { Blueprint } from "../blueprint";
import { regionsOf, scopesOf } from "./scopes";

const fs = (id: string) => [{ id, type: "FS" as const }];
const nested: Blueprint = {
  tasks: [
    { id: "start", type: "system.start" },
    { id: "outer", type: "a.b", depends_on: fs("start"), scope_start: { retry_policy: { retries: 2 } } },
    { id: "inner", type: "a.b", depends_on: fs("outer"), scope_start: { name: "loop", while_policy: { condition: "n > 0", max_iterations: 5 } } },
    { id: "body", type: "a.b", depends_on: fs("inner") },
    { id: "inner_end", type: "a.b", depends_on: fs("body"), scope_end: "inner" },
    { id: "outer_end", type: "a.b", depends_on: fs("inner_end"), scope_end: "outer" },
    { id: "gate", type: "a.b", depends_on: fs("outer_end"), condition: "ok", scope_start: {} },
    { id: "gate_end", type: "a.b", depends_on: fs("gate"), scope_end: "gate" },
    { id: "open", type: "a.b", depends_on: fs("gate_end"), scope_start: {} },
    { id: "end", type: "system.end", depends_on: fs("open") },
  ],
};

describe("scopes as regions", () => {
  it("finds each closed scope with its members and its policy; an unclosed one is not drawn", () => {
    const scopes = scopesOf(nested);
    expect(scopes.map((s) => [s.start, s.end, s.label, s.inner])).toEqual([
      ["outer", "outer_end", "outer · retry 2", 1],
      ["inner", "inner_end", "loop · while n > 0, max 5", 0],
      ["gate", "gate_end", "gate · skip unless ok", 0],
    ]);
    expect(scopes[1]?.members).toEqual(["inner", "body", "inner_end"]);
    expect(scopes[0]?.members).toEqual(["outer", "inner", "body", "inner_end", "outer_end"]);
  });

  it("an outer region holds its inner region with room to spare", () => {
    const positions = Object.fromEntries(nested.tasks.map((t, i) => [t.id, { x: 0, y: i * 100 }]));
    const [outer, inner] = regionsOf(scopesOf(nested), positions);
    expect(outer!.x).toBeLessThan(inner!.x);
    expect(outer!.y).toBeLessThan(inner!.y);
    expect(outer!.x + outer!.width).toBeGreaterThan(inner!.x + inner!.width);
    expect(outer!.y + outer!.height).toBeGreaterThan(inner!.y + inner!.height);
    expect(inner!.y).toBeLessThan(200); // above its start task, which sits at y 200
  });
});
