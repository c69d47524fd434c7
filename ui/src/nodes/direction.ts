// Which way the canvas's tasks flow (the layout's direction): the cards put their handles on
// the sides the dependencies come in and go out. One value for the canvas, given by Canvas.
import { Position } from "@xyflow/react";
import { createContext } from "react";
import type { Direction } from "../backend/generated";

export const FlowDirection = createContext<Direction>("down");

/** Where a card's dependencies come in and go out. */
export function handleSides(direction: Direction): { target: Position; source: Position } {
  return direction === "right" ? { target: Position.Left, source: Position.Right } : { target: Position.Top, source: Position.Bottom };
}
