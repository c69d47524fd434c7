// A task type's params schema (from `get_task_definition`) read as a form: one field per
// declared param with the control its type calls for, and what is wrong with a value given.
// Only the part of JSON Schema the catalogue uses is understood; anything else is edited as JSON
// and left for the facade to judge.

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
};

export type Control = "string" | "number" | "integer" | "boolean" | "enum" | "json";

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

function controlFor(schema: ValueSchema): Control {
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return "enum";
  const type = typeOf(schema);
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

/** The names of a JSON value's type, as JSON Schema calls them. */
function jsonType(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  if (typeof value === "number") return Number.isInteger(value) ? "integer" : "number";
  return typeof value;
}

function fitsType(value: unknown, type: string): boolean {
  const actual = jsonType(value);
  return actual === type || (type === "number" && actual === "integer");
}

/** A value as the message shows it. */
function shown(value: unknown): string {
  return JSON.stringify(value) ?? String(value);
}

/**
 * Why `value` does not fit `schema`, or null when it does. The first reason found is given, with
 * the path inside the value when it lies deeper (`argv[1]`, `env.HOME`).
 */
export function schemaError(schema: ValueSchema, value: unknown, at = ""): string | null {
  const where = at === "" ? "" : `${at}: `;
  const types = schema.type === undefined ? [] : Array.isArray(schema.type) ? schema.type : [schema.type];
  if (types.length > 0 && !types.some((t) => fitsType(value, t))) {
    return `${where}expected ${types.join(" or ")}, found ${jsonType(value)}`;
  }
  if (Array.isArray(schema.enum) && !schema.enum.some((e) => shown(e) === shown(value))) {
    return `${where}expected one of ${schema.enum.map(shown).join(", ")}`;
  }
  if (typeof value === "number") {
    if (schema.minimum !== undefined && value < schema.minimum) return `${where}must be at least ${schema.minimum}`;
    if (schema.maximum !== undefined && value > schema.maximum) return `${where}must be at most ${schema.maximum}`;
    if (schema.exclusiveMinimum !== undefined && value <= schema.exclusiveMinimum) {
      return `${where}must be more than ${schema.exclusiveMinimum}`;
    }
    if (schema.exclusiveMaximum !== undefined && value >= schema.exclusiveMaximum) {
      return `${where}must be less than ${schema.exclusiveMaximum}`;
    }
  }
  if (typeof value === "string") {
    const length = [...value].length;
    if (schema.minLength !== undefined && length < schema.minLength) {
      return `${where}must have at least ${schema.minLength} character${schema.minLength === 1 ? "" : "s"}`;
    }
    if (schema.maxLength !== undefined && length > schema.maxLength) return `${where}must have at most ${schema.maxLength} characters`;
  }
  if (Array.isArray(value)) {
    if (schema.minItems !== undefined && value.length < schema.minItems) return `${where}needs at least ${schema.minItems} item(s)`;
    if (schema.maxItems !== undefined && value.length > schema.maxItems) return `${where}takes at most ${schema.maxItems} item(s)`;
    if (isObject(schema.items)) {
      for (const [i, item] of value.entries()) {
        const error = schemaError(schema.items, item, `${at}[${i}]`);
        if (error) return error;
      }
    }
  }
  if (isObject(value)) {
    for (const name of schema.required ?? []) if (!(name in value)) return `${where}needs ${name}`;
    for (const [name, item] of Object.entries(value)) {
      const path = at === "" ? name : `${at}.${name}`;
      const property = schema.properties?.[name];
      if (isObject(property)) {
        const error = schemaError(property, item, path);
        if (error) return error;
      } else if (schema.additionalProperties === false) {
        return `${where}${name} is not allowed here`;
      } else if (isObject(schema.additionalProperties)) {
        const error = schemaError(schema.additionalProperties, item, path);
        if (error) return error;
      }
    }
  }
  const branches = schema.oneOf ?? schema.anyOf;
  if (Array.isArray(branches) && branches.length > 0) {
    const fitting = branches.filter((b) => isObject(b) && schemaError(b, value, at) === null).length;
    if (fitting === 0) return `${where}fits none of the forms this param takes`;
    if (schema.oneOf && fitting > 1) return `${where}fits more than one of the forms this param takes`;
  }
  return null;
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
