// How the canvas draws a wire (editor/wiring.ts): a dashed curve beside the dependencies, with
// its label at the middle of the curve.
import { BaseEdge, type EdgeProps, type EdgeTypes } from "@xyflow/react";
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

/** The canvas's own edge types: dependencies keep React Flow's default. */
export const edgeTypes: EdgeTypes = { wiring: WiringPath };
