// How the canvas draws a wire (editor/wiring.ts): a dashed curve beside the dependencies, with
// its label at the middle of the curve; and a dependency routed around cards (routing.ts).
import { BaseEdge, type EdgeProps, type EdgeTypes } from "@xyflow/react";
import { useContext } from "react";
import { FlowDirection } from "../nodes/direction";
import { detourPath, type RoutedEdge } from "./routing";
import { wiringCurve, type WiringEdge } from "./wiring";

const LABEL_PADDING: [number, number] = [4, 2];
/** The width of a character of a label (10px monospace, wiring.css), to place it without measuring. */
const CHAR_WIDTH = 6;

function WiringPath({ sourceX, sourceY, targetX, targetY, label, markerEnd }: EdgeProps<WiringEdge>) {
  const width = typeof label === "string" ? label.length * CHAR_WIDTH + 2 * LABEL_PADDING[0] : 0;
  const { path, labelX, labelY } = wiringCurve(sourceX, sourceY, targetX, targetY, width);
  return (
    <BaseEdge
      path={path}
      markerEnd={markerEnd}
      label={label}
      labelX={labelX}
      labelY={labelY}
      labelBgPadding={LABEL_PADDING}
      labelBgBorderRadius={3}
      interactionWidth={0}
    />
  );
}

/** A dependency routed around the cards between its ends (routing.ts). */
function DetourPath({ sourceX, sourceY, targetX, targetY, data, label, markerEnd, style }: EdgeProps<RoutedEdge>) {
  const direction = useContext(FlowDirection);
  const { path, labelX, labelY } = detourPath(sourceX, sourceY, targetX, targetY, data!.detour, direction);
  return (
    <BaseEdge
      path={path}
      markerEnd={markerEnd}
      style={style}
      label={label}
      labelX={labelX}
      labelY={labelY}
      labelBgPadding={LABEL_PADDING}
      labelBgBorderRadius={3}
    />
  );
}

/** The canvas's own edge types: dependencies keep React Flow's default unless routed. */
export const edgeTypes: EdgeTypes = { wiring: WiringPath, detour: DetourPath };
