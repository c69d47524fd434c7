import { describe, expect, it } from "vitest";
import { labelOf, regionsOf, type Scope } from "./scopes";

// What `blueprint_scopes` answers for a retry scope around a while scope, a skip scope, and a
// scope that no task closes (the facade's own tests check the membership).
const scopes: Scope[] = [
  {
    start: "outer",
    end: "outer_end",
    policy: "retry",
    retries: 2,
    members: ["outer", "inner", "body", "inner_end", "outer_end"],
    depth: 0,
  },
  {
    start: "inner",
    end: "inner_end",
    name: "loop",
    policy: "while",
    condition: "n > 0",
    max_iterations: 5,
    members: ["inner", "body", "inner_end"],
    parent: "outer",
    depth: 1,
  },
  { start: "gate", end: "gate_end", policy: "skip", condition: "ok", members: ["gate", "gate_end"], depth: 0 },
  { start: "open", end: null, policy: "skip", members: ["open"], depth: 0 },
];
const order = ["start", "outer", "inner", "body", "inner_end", "outer_end", "gate", "gate_end", "open", "end"];
const positions = Object.fromEntries(order.map((id, i) => [id, { x: 0, y: i * 100 }]));

describe("scopes as regions", () => {
  it("labels each scope with its name (or start) and its policy", () => {
    expect(scopes.map(labelOf)).toEqual([
      "outer · repeat ×3",
      "loop · while n > 0, max 5",
      "gate · skip unless ok",
      "open · skip",
    ]);
    // The label the end-to-end test reads on the example.
    const pick: Scope = {
      start: "pick",
      end: "check",
      name: "placement loop",
      policy: "while",
      condition: "elements_remaining > 0",
      max_iterations: 10,
      members: ["pick", "place", "check"],
      depth: 0,
    };
    expect(labelOf(pick)).toBe("placement loop · while elements_remaining > 0, max 10");
  });

  it("an outer region holds its inner region with room to spare", () => {
    const [outer, inner] = regionsOf(scopes, positions);
    expect([outer!.inner, inner!.inner]).toEqual([1, 0]);
    expect(outer!.x).toBeLessThan(inner!.x);
    expect(outer!.y).toBeLessThan(inner!.y);
    expect(outer!.x + outer!.width).toBeGreaterThan(inner!.x + inner!.width);
    expect(outer!.y + outer!.height).toBeGreaterThan(inner!.y + inner!.height);
    expect(inner!.y).toBeLessThan(200); // above its start task, which sits at y 200
  });

  it("a scope that no task closes is drawn around its start; one with no placed task is not drawn", () => {
    const unplaced = Object.fromEntries(Object.entries(positions).filter(([id]) => !id.startsWith("gate")));
    const regions = regionsOf(scopes, unplaced);
    expect(regions.map((r) => r.start)).toEqual(["outer", "inner", "open"]);
    const open = regions[2]!;
    expect(open.y).toBeLessThan(800);
    expect(open.y + open.height).toBeGreaterThan(800);
  });
});
