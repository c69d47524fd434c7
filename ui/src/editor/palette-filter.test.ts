import { describe, expect, it } from "vitest";
import { matchingTypes } from "./palette-filter";

const types = [
  { name: "system.composite", description: "Runs an inner blueprint." },
  { name: "shell.run", description: "Runs a shell command." },
  { name: "system.sleep", description: "Waits." },
];

describe("the palette filter", () => {
  it("keeps every type for an empty query", () => {
    expect(matchingTypes(types, "  ")).toEqual(types);
  });

  it("matches names and descriptions, any case, names first", () => {
    expect(matchingTypes(types, "RUN").map((t) => t.name)).toEqual(["shell.run", "system.composite"]);
    expect(matchingTypes(types, "sys wait").map((t) => t.name)).toEqual(["system.sleep"]);
    expect(matchingTypes(types, "nothing")).toEqual([]);
  });
});
