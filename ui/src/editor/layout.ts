// The automatic layout the app uses: layered.ts, which takes milliseconds even for thousands
// of tasks, so it runs on the page itself.
import type { Blueprint } from "../blueprint";
import type { Layout, Positions } from "../store/editor";
import { layered } from "./layered";

/**
 * From this many tasks on, the positions are answered in a task of their own: laying out
 * 10,000 tasks takes the page about 70 ms, and drawing them (what the answer is awaited for) as
 * much again; together they would hold a frame twice as long.
 */
const ANSWERED_APART_FROM = 1000;

export const layeredLayout: Layout = async (blueprint: Blueprint, direction): Promise<Positions> => {
  const positions = layered(blueprint, direction);
  if (blueprint.tasks.length < ANSWERED_APART_FROM) return positions;
  return new Promise((resolve) => setTimeout(() => resolve(positions)));
};
