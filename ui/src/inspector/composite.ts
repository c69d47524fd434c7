// The `blueprint` param of a `system.composite` task (docs/format.md §1): `{"static": id}`, or
// `{"dynamic": {"blueprint_id": id, "sequencer": ...}}` to run the inner blueprint once per
// element of a list given at session start.
import type { BlueprintFile } from "../backend/generated";
import { ioOf, type Task } from "../blueprint";
import { fileName } from "../paths";

export type CompositeTarget = { mode: "static"; id: string } | { mode: "dynamic"; id: string; sequencer: string };

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * The inner blueprint a param value names; null when there is none, "unreadable" when the value
 * has neither form (it is then shown as JSON, to be fixed by hand).
 */
export function readTarget(value: unknown): CompositeTarget | null | "unreadable" {
  if (value === undefined || value === null) return null;
  if (!isObject(value)) return "unreadable";
  const keys = Object.keys(value);
  if (keys.length === 1 && typeof value.static === "string") return { mode: "static", id: value.static };
  if (keys.length === 1 && isObject(value.dynamic)) {
    const { blueprint_id, sequencer } = value.dynamic;
    return {
      mode: "dynamic",
      id: typeof blueprint_id === "string" ? blueprint_id : "",
      sequencer: typeof sequencer === "string" ? sequencer : "",
    };
  }
  return "unreadable";
}

/** The inner blueprint a composite task names (with its sequencer when dynamic), if it names one. */
export function innerOf(task: Task): { id: string; sequencer: string | null } | null {
  const target = readTarget(ioOf(task, "params").find((p) => p.name === "blueprint")?.value);
  if (target === null || target === "unreadable" || target.id === "") return null;
  return { id: target.id, sequencer: target.mode === "dynamic" ? target.sequencer || null : null };
}

/** The param value for a target; none (the param removed) while no id is given. */
export function targetValue(target: CompositeTarget): unknown {
  if (target.id === "") return undefined;
  return target.mode === "static"
    ? { static: target.id }
    : { dynamic: { blueprint_id: target.id, sequencer: target.sequencer } };
}

/** The file of the inner blueprint `id`, found as the core finds it: by blueprint id, else by file name. */
export function findInner(files: BlueprintFile[], id: string): BlueprintFile | undefined {
  return files.find((f) => f.blueprint_id === id) ?? files.find((f) => fileName(f.file) === id);
}
