// How long the editor takes to show a blueprint, as `performance.mark`s any page script can read
// (`performance.getEntriesByType("mark")`): `orrery:open` when a file is opened, `orrery:laid-out`
// when its positions are known, then `orrery:open-rendered` when the canvas has committed its
// nodes and `orrery:open-painted` at the next frame (its detail says how many nodes it drew); an automatic layout gives
// `orrery:auto-layout`, `orrery:auto-laid-out`, `orrery:auto-layout-rendered` and
// `orrery:auto-layout-painted`. Opening a run marks `orrery:run-open`, `orrery:run-fetched`
// (its session and blueprints read) and `orrery:run-shown`. A mark costs a timestamp; nothing is
// recorded otherwise.

const PREFIX = "orrery:";

/** The steps waiting for the canvas to commit what they changed. */
let awaitingRender: string[] = [];

export function mark(name: string, detail?: unknown): void {
  performance.mark(PREFIX + name, { detail });
}

/** Marks `<step>-rendered` at the canvas's next commit and `<step>-painted` at the frame after. */
export function markNextRender(step: string): void {
  awaitingRender.push(step);
}

/** Called by the canvas after each commit. */
export function canvasRendered(): void {
  if (awaitingRender.length === 0) return;
  const steps = awaitingRender;
  awaitingRender = [];
  for (const step of steps) mark(`${step}-rendered`);
  requestAnimationFrame(() => {
    // How many nodes that frame drew: a reader can tell a painted canvas from an empty one.
    const nodes = document.getElementsByClassName("react-flow__node").length;
    for (const step of steps) mark(`${step}-painted`, { nodes });
  });
}

/** Resolves in a task of its own once the next frame is painted (soon, where nothing paints). */
export function afterNextFrame(): Promise<void> {
  return new Promise((resolve) => {
    if (typeof requestAnimationFrame === "undefined") setTimeout(resolve);
    else requestAnimationFrame(() => setTimeout(resolve));
  });
}
