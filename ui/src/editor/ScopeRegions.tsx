// The scopes of the blueprint drawn behind the tasks: a tinted, labelled rectangle around each
// scope's members, nested scopes inside the ones that hold them. A label is the scope's handle:
// clicking it selects the scope, to edit it in the inspector's place.
import { ViewportPortal } from "@xyflow/react";
import { useMemo } from "react";
import type { Blueprint } from "../blueprint";
import { useEditor } from "../store/context";
import type { Positions } from "../store/positions";
import type { RunMarks } from "./graph";
import { regionsOf, type Region } from "./scopes";

/**
 * The regions of the blueprint's scopes where its tasks are. The facade answers for the blueprint
 * of a moment ago: while it checks the newest one, a task removed since is not drawn, nor a scope
 * whose start is gone.
 */
export function useScopeRegions(blueprint: Blueprint | null, positions: Positions): Region[] {
  const answered = useEditor((s) => s.scopes);
  const scopes = useMemo(() => {
    if (!blueprint) return [];
    const ids = new Set(blueprint.tasks.map((t) => t.id));
    return answered
      .filter((s) => ids.has(s.start))
      .map((s) => (s.members.every((m) => ids.has(m)) ? s : { ...s, members: s.members.filter((m) => ids.has(m)) }));
  }, [answered, blueprint]);
  return useMemo(() => regionsOf(scopes, positions), [scopes, positions]);
}

/**
 * On a run's canvas (`marks`), a label also says which iteration its scope is in: how many
 * times its start task ran.
 */
export function ScopeRegions({ regions, marks }: { regions: Region[]; marks?: RunMarks }) {
  const selectedScope = useEditor((s) => s.selectedScope);
  const selectScope = useEditor((s) => s.selectScope);
  const selected = (start: string) => (start === selectedScope ? " selected" : "");
  return (
    <ViewportPortal>
      {regions.map((r) => (
        <div
          key={r.start}
          className={`scope-region policy-${r.policy}${selected(r.start)}`}
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
          className={`scope-label policy-${r.policy}${selected(r.start)}`}
          data-testid="scope-label"
          data-scope-start={r.start}
          title="Select the scope to edit it"
          style={{ transform: `translate(${r.x + 8}px, ${r.y + 3}px)` }}
          onClick={(e) => {
            // The pane under the label would take the click as one on the empty canvas, which
            // clears the selection.
            e.stopPropagation();
            selectScope(r.start);
          }}
        >
          {r.label}
          {(marks?.[r.start]?.attempts ?? 0) > 0 && <span className="scope-iteration"> · iteration {marks![r.start]!.attempts}</span>}
        </span>
      ))}
    </ViewportPortal>
  );
}
