import { describe, expect, it } from "vitest";
import { boundsText, defaultText, paramFields, parseNumber } from "./schema";

// As the catalogue declares them (orrery-blueprint task_types.rs).
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

describe("numbers typed", () => {
  it("reads a number, nothing when empty, and says why not otherwise", () => {
    expect(parseNumber(" 2.5 ", false)).toEqual({ value: 2.5 });
    expect(parseNumber("", false)).toEqual({ value: undefined });
    expect(parseNumber("abc", false)).toEqual({ error: "not a number" });
    expect(parseNumber("1.5", true)).toEqual({ error: "expected a whole number" });
  });
});
