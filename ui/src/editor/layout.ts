// The automatic layout the app uses: layered.ts, which takes milliseconds even for thousands
// of tasks, so it runs on the page itself.
import type { Blueprint } from "../blueprint";
import type { Layout, Positions } from "../store/editor";
import { afterNextFrame } from "../timing";
import { layered } from "./layered";

/**
 * From this many tasks on, the layout is taken after a frame and answered after the next: laying
 * out 10,000 tasks takes the page about 70 ms, and what comes before it (the blueprint read) and
 * after it (the canvas drawn from the answer) each as much again; in one go they would hold the
 * page's frames for 200 ms.
 */
const APART_FROM = 1000;

export const layeredLayout: Layout = async (blueprint: Blueprint, direction): Promise<Positions> => {
  if (blueprint.tasks.length < APART_FROM) return layered(blueprint, direction);
  await afterNextFrame();
  const positions = layered(blueprint, direction);
  await afterNextFrame();
  return positions;
};
