// Where the view goes to show a blueprint: all of it when it can be read that way, else the
// part where it begins at a zoom that can still be read. A large blueprint fits whole, however
// small: zoomed out, its overview is meant to be seen at once.
import { getViewportForBounds, type Viewport } from "@xyflow/react";

type Bounds = { x: number; y: number; width: number; height: number };

/** The zoom below which a card's name (14 px) reads smaller than about 10 px. */
export const READABLE_ZOOM = 0.75;
/** A fitted view zooms in no further than this, however small the blueprint. */
export const FIT_MAX_ZOOM = 1;
const FIT_PADDING = 0.1;
/** The margin left around the blueprint's first cards when it does not fit. */
const EDGE_MARGIN = 24;

export function fitViewport(bounds: Bounds, width: number, height: number, minZoom: number, readable: boolean): Viewport {
  const whole = getViewportForBounds(bounds, width, height, minZoom, FIT_MAX_ZOOM, FIT_PADDING);
  if (!readable || whole.zoom >= READABLE_ZOOM) return whole;
  const zoom = READABLE_ZOOM;
  // Along each axis: centred where the blueprint fits, else from its start (top, left).
  const place = (start: number, size: number, room: number) =>
    size * zoom + 2 * EDGE_MARGIN <= room ? (room - size * zoom) / 2 - start * zoom : EDGE_MARGIN - start * zoom;
  return { x: place(bounds.x, bounds.width, width), y: place(bounds.y, bounds.height, height), zoom };
}

type Card = { x: number; y: number; width: number; height: number };

/** Whether the whole card is on the canvas with the view at `viewport`. */
export function inView(viewport: Viewport, card: Card, width: number, height: number): boolean {
  const left = card.x * viewport.zoom + viewport.x;
  const top = card.y * viewport.zoom + viewport.y;
  return left >= 0 && top >= 0 && left + card.width * viewport.zoom <= width && top + card.height * viewport.zoom <= height;
}

/** `viewport`, moved (at its zoom) to centre the card when the card is not wholly in it. */
export function revealing(viewport: Viewport, card: Card, width: number, height: number): Viewport {
  if (inView(viewport, card, width, height)) return viewport;
  const { zoom } = viewport;
  return { zoom, x: width / 2 - (card.x + card.width / 2) * zoom, y: height / 2 - (card.y + card.height / 2) * zoom };
}
