// A task type's params schema (from `get_task_type`) read as a form: one field per
// declared param with the control its type calls for. Whether a value fits is the facade's to
// judge (`validate_blueprint`, code `param-schema`); anything the form has no control for is
// edited as JSON.

/** The JSON Schema of one value, as far as the form reads it. */
export type ValueSchema = {
  type?: string | string[];
  enum?: unknown[];
  description?: string;
  default?: unknown;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  items?: ValueSchema;
  properties?: Record<string, ValueSchema>;
  required?: string[];
  additionalProperties?: boolean | ValueSchema;
  oneOf?: ValueSchema[];
  anyOf?: ValueSchema[];
  /** `text/x-shellscript`: a string that is a shell script (a code editor edits it). */
  contentMediaType?: string;
};

export type Control = "string" | "script" | "number" | "integer" | "boolean" | "enum" | "json";

export type ParamField = {
  name: string;
  control: Control;
  schema: ValueSchema;
  /** Always needed (`required`), or needed unless another of `alternatives` is given (`oneOf`). */
  required: boolean;
  alternatives: string[];
};

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The declared type, the first that is not "null" when it is a list. */
function typeOf(schema: ValueSchema): string | undefined {
  return Array.isArray(schema.type) ? schema.type.find((t) => t !== "null") : schema.type;
}

/** The media type of a param that is a shell script (`shell.run`'s `command`). */
export const SHELL_SCRIPT = "text/x-shellscript";

function controlFor(schema: ValueSchema): Control {
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return "enum";
  const type = typeOf(schema);
  if (type === "string" && schema.contentMediaType === SHELL_SCRIPT) return "script";
  return type === "string" || type === "number" || type === "integer" || type === "boolean" ? type : "json";
}

/** The required names of each branch of a `oneOf`/`anyOf` at the top of the params schema. */
function alternativeGroups(schema: ValueSchema): string[][] {
  return [...(schema.oneOf ?? []), ...(schema.anyOf ?? [])]
    .map((branch) => (Array.isArray(branch?.required) ? branch.required : []))
    .filter((names) => names.length > 0);
}

/** One field per property of a params schema, in the schema's order; none without properties. */
export function paramFields(schema: unknown): ParamField[] {
  if (!isObject(schema) || !isObject(schema.properties)) return [];
  const params = schema as ValueSchema;
  const required = new Set(Array.isArray(params.required) ? params.required : []);
  const groups = alternativeGroups(params);
  return Object.entries(params.properties ?? {}).map(([name, raw]) => {
    const property: ValueSchema = isObject(raw) ? raw : {};
    const group = groups.filter((g) => g.includes(name)).flat();
    const others = groups.length > 1 && group.length > 0 ? groups.flat().filter((n) => n !== name) : [];
    return {
      name,
      control: controlFor(property),
      schema: property,
      required: required.has(name) || (groups.length === 1 && group.length > 0),
      alternatives: [...new Set(others)],
    };
  });
}

/** A value as the form shows it. */
function shown(value: unknown): string {
  return JSON.stringify(value) ?? String(value);
}

/** What the form says when a field is left empty: the default the task type uses then. */
export function defaultText(schema: ValueSchema): string {
  if (schema.default === undefined) return "";
  return typeof schema.default === "string" ? schema.default : shown(schema.default);
}

/** The bounds of a number, as the form shows them beside it ("≥ 0", "> 0, ≤ 10"). */
export function boundsText(schema: ValueSchema): string {
  const parts: string[] = [];
  if (schema.minimum !== undefined) parts.push(`≥ ${schema.minimum}`);
  if (schema.exclusiveMinimum !== undefined) parts.push(`> ${schema.exclusiveMinimum}`);
  if (schema.maximum !== undefined) parts.push(`≤ ${schema.maximum}`);
  if (schema.exclusiveMaximum !== undefined) parts.push(`< ${schema.exclusiveMaximum}`);
  return parts.join(", ");
}

/**
 * A number typed in a field: the number, nothing (empty: the param is removed), or why not. A
 * field declared `integer` takes whole numbers only.
 */
export function parseNumber(text: string, integer: boolean): { value: number | undefined } | { error: string } {
  const trimmed = text.trim();
  if (trimmed === "") return { value: undefined };
  const value = Number(trimmed);
  if (!Number.isFinite(value)) return { error: "not a number" };
  if (integer && !Number.isInteger(value)) return { error: "expected a whole number" };
  return { value };
}
