import { describe, expect, it } from "vitest";
import { isWire, reusingWiringEdges, wiringCurve, wiringEdges, type Wire } from "./wiring";

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
