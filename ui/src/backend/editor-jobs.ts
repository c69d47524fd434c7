// For tests: what an editor asks the facade while a blueprint is open, answered as for a valid
// file with no saved layout (a test adds the jobs it is about).
import type { BlueprintEncodingAnswer, Diagnostic } from "./generated";
import type { JobHandlers } from "./memory";

/** `blueprint_encoding`, canned: a text holding an object with `dtype` and `data` is an envelope. */
export function blueprintEncoding({ text }: { text: string }): BlueprintEncodingAnswer {
  try {
    const value = JSON.parse(text) as Record<string, unknown> | null;
    return { encoding: value !== null && typeof value === "object" && "dtype" in value && "data" in value ? "compas" : "antikythera" };
  } catch {
    return { encoding: "antikythera" };
  }
}

export function editorJobs(diagnostics: Diagnostic[] = []): JobHandlers {
  return {
    validate_blueprint: ({ file }) => [{ file: file ?? "", valid: true, server_accepts: true, diagnostics }],
    blueprint_encoding: blueprintEncoding,
    format_blueprint: ({ text }) => ({ text: JSON.stringify(JSON.parse(text)) + "\n", changed: true }),
    list_task_types: () => [],
    read_layout: ({ file }) => ({ layout_file: `${file}.layout`, found: false, positions: {}, direction: "down" }),
    save_layout: ({ file, positions, direction }) => ({ layout_file: `${file}.layout`, found: true, positions, direction: direction ?? "down" }),
    task_names: ({ task_id }) => ({ task_id, produced: [], own: [] }),
    blueprint_scopes: () => [],
    blueprint_wiring: () => [],
  };
}
