// Where the nodes sit: moved by hand, laid out by the automatic layout (one undo step), and
// written beside the open file once they rest. The layout read back from beside a file is
// completed by positions.ts; a layout that arrives after another blueprint was opened is dropped.
import type { Direction } from "../backend/generated";
import type { Backend } from "../backend/types";
import type { Blueprint } from "../blueprint";
import { mark, markNextRender } from "../timing";
import type { Breakpoints, EditorInternals, GetEditor, Laid, Layout, LayoutKeeping, PlacementSlice, SetEditor } from "./editor-state";
import { withStep } from "./history";
import { layoutToSave, mergeLayout, placeBeside, type Positions } from "./positions";

export function layoutKeeping(backend: Backend, layout: Layout, saveDelayMs: number, get: GetEditor, fail: (e: unknown) => void): LayoutKeeping {
  let opened = 0;
  let layoutTimer: ReturnType<typeof setTimeout> | undefined;

  function scheduleLayoutSave() {
    clearTimeout(layoutTimer);
    if (get().path === null) return;
    layoutTimer = setTimeout(() => void saveLayout(), saveDelayMs);
  }

  async function saveLayout() {
    clearTimeout(layoutTimer);
    const { blueprint, path, positions, direction, breakpoints } = get();
    if (!blueprint || path === null) return;
    // A breakpoint of a task deleted since is not kept.
    const kept = Object.fromEntries(Object.entries(breakpoints).filter(([id]) => blueprint.tasks.some((t) => t.id === id)));
    try {
      await backend.call("save_layout", { file: path, positions: layoutToSave(blueprint, positions), direction, breakpoints: kept });
    } catch (e) {
      fail(e);
    }
  }

  async function positionsFor(path: string, blueprint: Blueprint): Promise<Laid> {
    let saved: Positions | null = null;
    let direction: Direction = "down";
    let breakpoints: Breakpoints = {};
    try {
      const found = await backend.call("read_layout", { file: path });
      if (found.found) saved = found.positions;
      direction = found.direction ?? "down";
      breakpoints = found.breakpoints ?? {};
    } catch (e) {
      fail(e); // an unreadable layout is replaced by a fresh one, and the user told why
    }
    if (saved === null) return { positions: await layout(blueprint, direction), direction, breakpoints };
    const merged = mergeLayout(blueprint, saved, direction);
    if (merged.unplaced.length === 0) return { positions: merged.positions, direction, breakpoints };
    return { positions: placeBeside(merged.positions, merged.unplaced, await layout(blueprint, direction)), direction, breakpoints };
  }

  return {
    scheduleLayoutSave,
    saveLayout,
    positionsFor,
    countOpening() {
      const mine = ++opened;
      clearTimeout(layoutTimer);
      return mine;
    },
    openings: () => opened,
  };
}

export function placementSlice(set: SetEditor, get: GetEditor, internals: EditorInternals): PlacementSlice {
  return {
    positions: {},
    laidOut: false,
    direction: "down",
    breakpoints: {},

    setBreakpoint(id, at) {
      const { [id]: _, ...others } = get().breakpoints;
      set({ breakpoints: at === null ? others : { ...others, [id]: at } });
      internals.scheduleLayoutSave();
    },

    async setDirection(direction) {
      if (direction === get().direction) return;
      set({ direction });
      await get().autoLayout();
      internals.scheduleLayoutSave();
    },

    async autoLayout() {
      const { blueprint, direction } = get();
      if (!blueprint) return;
      mark("auto-layout");
      const mine = internals.openings();
      let positions: Positions;
      try {
        positions = await internals.layout(blueprint, direction);
      } catch (e) {
        internals.fail(e);
        return;
      }
      const now = get();
      if (mine !== internals.openings() || now.blueprint === null) return;
      internals.newStep();
      const step = { blueprint: now.blueprint, positions: now.positions };
      mark("auto-laid-out");
      markNextRender("auto-layout");
      internals.replace(now.blueprint, withStep(now.past, step), [], { ...now.positions, ...positions });
    },

    moveTask(id, position) {
      set({ positions: { ...get().positions, [id]: position } });
      internals.scheduleLayoutSave();
    },

    moveTasks(moved) {
      set({ positions: { ...get().positions, ...moved } });
      internals.scheduleLayoutSave();
    },
  };
}
