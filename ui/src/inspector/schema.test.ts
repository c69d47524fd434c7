import { describe, expect, it } from "vitest";
import { boundsText, defaultText, paramFields, parseNumber, schemaError, type ValueSchema } from "./schema";

// As the catalogue declares them (orrery-engine agents: registry.rs, shell.rs, interaction.rs).
const executionMode = {
  enum: ["EXCLUSIVE", "COMPETITIVE"],
  default: "EXCLUSIVE",
  description: "EXCLUSIVE: the first agent to claim the task runs it; COMPETITIVE: every claiming agent does.",
};
const sleep = {
  type: "object",
  properties: {
    duration: { type: "number", minimum: 0, default: 1, description: "Seconds to wait." },
    execution_mode: executionMode,
  },
};
const shell = {
  type: "object",
  properties: {
    command: { type: "string", description: "A command line, run by /bin/sh -c." },
    argv: { type: "array", items: { type: "string" }, minItems: 1, description: "A program and its arguments." },
    cwd: { type: "string", description: "The working directory." },
    env: { type: "object", additionalProperties: { type: "string" }, description: "Environment variables." },
    timeout_s: { type: "number", exclusiveMinimum: 0 },
    execution_mode: executionMode,
  },
  oneOf: [{ required: ["command"] }, { required: ["argv"] }],
};
const notify = {
  type: "object",
  properties: {
    title: { type: "string", default: "Notification" },
    level: { enum: ["info", "success", "warning", "error"], default: "info" },
    flag: { type: "boolean" },
    count: { type: "integer", maximum: 10 },
  },
  required: ["title"],
};

describe("a params schema as a form", () => {
  it("gives each declared param the control its type calls for, in the schema's order", () => {
    expect(paramFields(shell).map((f) => [f.name, f.control])).toEqual([
      ["command", "string"],
      ["argv", "json"],
      ["cwd", "string"],
      ["env", "json"],
      ["timeout_s", "number"],
      ["execution_mode", "enum"],
    ]);
    expect(paramFields(notify).map((f) => f.control)).toEqual(["string", "enum", "boolean", "integer"]);
  });

  it("has no form for a schema without properties", () => {
    expect(paramFields({ type: "object" })).toEqual([]);
    expect(paramFields(null)).toEqual([]);
    expect(paramFields("nonsense")).toEqual([]);
  });

  it("marks required params, and alternatives where one of several is required", () => {
    const title = paramFields(notify).find((f) => f.name === "title");
    expect([title?.required, title?.alternatives]).toEqual([true, []]);
    const command = paramFields(shell).find((f) => f.name === "command");
    expect([command?.required, command?.alternatives]).toEqual([false, ["argv"]]);
    expect(paramFields(shell).find((f) => f.name === "cwd")?.alternatives).toEqual([]);
  });

  it("shows defaults and bounds as the task type declares them", () => {
    const [duration, mode] = paramFields(sleep);
    expect(defaultText(duration!.schema)).toBe("1");
    expect(boundsText(duration!.schema)).toBe("≥ 0");
    expect(defaultText(mode!.schema)).toBe("EXCLUSIVE");
    expect(boundsText({ exclusiveMinimum: 0, maximum: 10 })).toBe("> 0, ≤ 10");
  });
});

describe("values that do not fit the schema", () => {
  const field = (schema: object, name: string) => paramFields(schema).find((f) => f.name === name)!.schema;

  it("accepts what fits", () => {
    expect(schemaError(field(sleep, "duration"), 2.5)).toBeNull();
    expect(schemaError(field(shell, "argv"), ["ls", "-l"])).toBeNull();
    expect(schemaError(field(shell, "env"), { HOME: "/root" })).toBeNull();
    expect(schemaError(field(notify, "count"), 3)).toBeNull();
  });

  it("says what is wrong with the type, the enum, the bounds", () => {
    expect(schemaError(field(sleep, "duration"), -1)).toBe("must be at least 0");
    expect(schemaError(field(sleep, "duration"), "soon")).toBe("expected number, found string");
    expect(schemaError(field(shell, "timeout_s"), 0)).toBe("must be more than 0");
    expect(schemaError(field(notify, "count"), 1.5)).toBe("expected integer, found number");
    expect(schemaError(field(notify, "count"), 11)).toBe("must be at most 10");
    expect(schemaError(field(sleep, "execution_mode"), "SHARED")).toBe('expected one of "EXCLUSIVE", "COMPETITIVE"');
  });

  it("finds the wrong item deep in a list or an object and names where", () => {
    expect(schemaError(field(shell, "argv"), [])).toBe("needs at least 1 item(s)");
    expect(schemaError(field(shell, "argv"), ["ls", 3])).toBe("[1]: expected string, found integer");
    expect(schemaError(field(shell, "env"), { HOME: 1 })).toBe("HOME: expected string, found integer");
  });

  it("checks a value against the forms a oneOf allows", () => {
    const blueprint: ValueSchema = {
      oneOf: [
        { type: "object", properties: { static: { type: "string", minLength: 1 } }, required: ["static"], additionalProperties: false },
        { type: "object", properties: { dynamic: { type: "object" } }, required: ["dynamic"], additionalProperties: false },
      ],
    };
    expect(schemaError(blueprint, { static: "inner" })).toBeNull();
    expect(schemaError(blueprint, { static: "" })).toBe("fits none of the forms this param takes");
  });
});

describe("numbers typed", () => {
  it("reads a number, nothing when empty, and says why not otherwise", () => {
    expect(parseNumber(" 2.5 ", false)).toEqual({ value: 2.5 });
    expect(parseNumber("", false)).toEqual({ value: undefined });
    expect(parseNumber("abc", false)).toEqual({ error: "not a number" });
    expect(parseNumber("1.5", true)).toEqual({ error: "expected a whole number" });
  });
});
