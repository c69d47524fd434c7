import { describe, expect, it } from "vitest";
import { fileName, folderOf } from "../paths";
import { readTarget, targetValue } from "./composite";

describe("a composite's blueprint param", () => {
  it("reads the static and the dynamic form", () => {
    expect(readTarget({ static: "place_element" })).toEqual({ mode: "static", id: "place_element" });
    expect(readTarget({ dynamic: { blueprint_id: "place", sequencer: "basic_element_sequencer" } })).toEqual({
      mode: "dynamic",
      id: "place",
      sequencer: "basic_element_sequencer",
    });
    expect(readTarget({ dynamic: {} })).toEqual({ mode: "dynamic", id: "", sequencer: "" });
  });

  it("has nothing to read without a value, and cannot read other shapes", () => {
    expect(readTarget(undefined)).toBeNull();
    expect(readTarget("place_element")).toBe("unreadable");
    expect(readTarget({ static: "a", extra: 1 })).toBe("unreadable");
    expect(readTarget({ static: 3 })).toBe("unreadable");
  });

  it("writes each form as COMPAT gives it, and nothing while no id is given", () => {
    expect(targetValue({ mode: "static", id: "inner" })).toEqual({ static: "inner" });
    expect(targetValue({ mode: "dynamic", id: "inner", sequencer: "basic_sequencer" })).toEqual({
      dynamic: { blueprint_id: "inner", sequencer: "basic_sequencer" },
    });
    expect(targetValue({ mode: "static", id: "" })).toBeUndefined();
  });
});

describe("file paths", () => {
  it("finds the folder and the name of POSIX and Windows paths", () => {
    expect(folderOf("/work/examples/assembly.json")).toBe("/work/examples");
    expect(folderOf("/assembly.json")).toBe("/");
    expect(folderOf("C:\\bp\\assembly.json")).toBe("C:\\bp");
    expect(folderOf("C:\\assembly.json")).toBe("C:\\");
    expect(folderOf("assembly.json")).toBe(".");
    expect(fileName("C:\\bp\\assembly.json")).toBe("assembly.json");
    expect(fileName("/work/examples/assembly.json")).toBe("assembly.json");
  });
});
