// The automatic layout the app uses: layered.ts, which takes milliseconds even for thousands
// of tasks, so it runs on the page itself.
import type { Blueprint } from "../blueprint";
import type { Layout, Positions } from "../store/editor";
import { layered } from "./layered";

export const layeredLayout: Layout = async (blueprint: Blueprint, direction): Promise<Positions> => layered(blueprint, direction);
