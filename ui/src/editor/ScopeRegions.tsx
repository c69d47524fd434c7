// The scopes of the blueprint drawn behind the tasks: a tinted, labelled rectangle around each
// scope's members, nested scopes inside the ones that hold them.
import { ViewportPortal } from "@xyflow/react";
import { useMemo } from "react";
import type { Blueprint } from "../blueprint";
import type { Positions } from "../store/positions";
import { regionsOf, scopesOf } from "./scopes";

export function ScopeRegions({ blueprint, positions }: { blueprint: Blueprint; positions: Positions }) {
  const scopes = useMemo(() => scopesOf(blueprint), [blueprint]);
  const regions = useMemo(() => regionsOf(scopes, positions), [scopes, positions]);
  return (
    <ViewportPortal>
      {regions.map((r) => (
        <div
          key={r.start}
          className={`scope-region policy-${r.policy}`}
          data-testid="scope-region"
          data-scope-start={r.start}
          data-scope-members={r.members.join(" ")}
          style={{ transform: `translate(${r.x}px, ${r.y}px)`, width: r.width, height: r.height }}
        />
      ))}
      {/* Labels on a layer of their own, above the edges that cross into their regions. */}
      {regions.map((r) => (
        <span
          key={r.start}
          className={`scope-label policy-${r.policy}`}
          data-testid="scope-label"
          data-scope-start={r.start}
          style={{ transform: `translate(${r.x + 8}px, ${r.y + 3}px)` }}
        >
          {r.label}
        </span>
      ))}
    </ViewportPortal>
  );
}
