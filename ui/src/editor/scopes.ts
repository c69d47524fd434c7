// Scopes as regions of the canvas. Which tasks a scope holds, and which scope holds it, is the
// facade's answer (`blueprint_scopes`, from orrery-blueprint's scope.rs); here the scopes only get
// their label and their rectangle.
import type { Scope } from "../backend/generated";
import { NODE_HEIGHT, NODE_WIDTH, type Positions } from "../store/positions";

export type { Scope };

export type Region = Scope & {
  /** The scope's name and its policy: skip, repeat (the format's retry policy), or while a condition holds. */
  label: string;
  /** How many scopes nest inside it, at most: the deeper, the more room around its members. */
  inner: number;
  x: number;
  y: number;
  width: number;
  height: number;
};

const PAD = 16;
const PAD_PER_LEVEL = 14;
/** Room above the members for the label. */
const LABEL = 22;

export function labelOf(scope: Scope): string {
  const name = scope.name ? scope.name : scope.start;
  // The format's retry policy runs the scope 1 + retries times whatever happens: a repeat.
  if (scope.policy === "retry") return `${name} · repeat ×${typeof scope.retries === "number" ? scope.retries + 1 : "?"}`;
  if (scope.policy === "while") {
    const bound = typeof scope.max_iterations === "number" ? `, max ${scope.max_iterations}` : "";
    return `${name} · while ${scope.condition ?? ""}${bound}`;
  }
  return `${name} · skip${scope.condition ? ` unless ${scope.condition}` : ""}`;
}

/** How many levels of scopes each scope holds, by its start: 0 for one that holds none. */
function innerLevels(scopes: Scope[]): Map<string, number> {
  const levels = new Map<string, number>(scopes.map((s) => [s.start, 0]));
  // From the deepest up, each scope lifts its parent above itself.
  for (const s of [...scopes].sort((a, b) => b.depth - a.depth)) {
    if (s.parent === undefined || s.parent === null || !levels.has(s.parent)) continue;
    levels.set(s.parent, Math.max(levels.get(s.parent)!, levels.get(s.start)! + 1));
  }
  return levels;
}

/** Each scope's rectangle around its placed members; outer scopes leave room for inner ones. */
export function regionsOf(scopes: Scope[], positions: Positions): Region[] {
  const levels = innerLevels(scopes);
  return scopes.flatMap((s) => {
    const placed = s.members.flatMap((id) => (positions[id] ? [positions[id]] : []));
    if (placed.length === 0) return [];
    const inner = levels.get(s.start) ?? 0;
    const pad = PAD + PAD_PER_LEVEL * inner;
    const left = Math.min(...placed.map((p) => p.x)) - pad;
    const top = Math.min(...placed.map((p) => p.y)) - pad - LABEL * (inner + 1);
    const right = Math.max(...placed.map((p) => p.x)) + NODE_WIDTH + pad;
    const bottom = Math.max(...placed.map((p) => p.y)) + NODE_HEIGHT + pad;
    return [{ ...s, label: labelOf(s), inner, x: left, y: top, width: right - left, height: bottom - top }];
  });
}
