import { describe, expect, it } from "vitest";
import { FIT_MAX_ZOOM, READABLE_ZOOM, fitViewport, inView, revealing } from "./fit";

describe("fitting the view", () => {
  it("shows a blueprint whole when it can be read so, zoomed in no further than 1", () => {
    const tiny = fitViewport({ x: 0, y: 0, width: 200, height: 300 }, 1000, 800, 0.1, true);
    expect(tiny.zoom).toBe(FIT_MAX_ZOOM);
    expect(tiny.x).toBeCloseTo(400);
  });

  it("keeps a readable zoom for a tall blueprint in a wide, short canvas: centred across, from the top down", () => {
    // Seven layers of tasks, 980 px high, in a canvas 600 px high.
    const view = fitViewport({ x: 0, y: 0, width: 200, height: 980 }, 1000, 600, 0.1, true);
    expect(view.zoom).toBe(READABLE_ZOOM);
    expect(view.x).toBeCloseTo((1000 - 200 * READABLE_ZOOM) / 2);
    expect(view.y).toBe(24);
  });

  it("fits a large blueprint whole, however small it gets", () => {
    const view = fitViewport({ x: 0, y: 0, width: 20000, height: 9000 }, 1000, 600, 0.01, false);
    expect(view.zoom).toBeLessThan(0.1);
  });
});

describe("revealing a card", () => {
  const card = { x: 0, y: 900, width: 200, height: 56 };
  it("leaves a view that shows the card whole as it is", () => {
    const view = { x: 0, y: -800, zoom: 1 };
    expect(inView(view, card, 1000, 600)).toBe(true);
    expect(revealing(view, card, 1000, 600)).toBe(view);
  });

  it("centres a card out of view, at the same zoom", () => {
    const view = { x: 0, y: 24, zoom: READABLE_ZOOM };
    expect(inView(view, card, 1000, 600)).toBe(false);
    const moved = revealing(view, card, 1000, 600);
    expect(moved.zoom).toBe(READABLE_ZOOM);
    expect(inView(moved, card, 1000, 600)).toBe(true);
    expect(moved.y + (card.y + card.height / 2) * moved.zoom).toBeCloseTo(300);
  });
});
