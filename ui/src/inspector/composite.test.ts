import { describe, expect, it } from "vitest";
import { fileName, folderOf } from "../paths";
import { findInner, innerOf, readTarget, targetValue } from "./composite";

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

  it("writes each form as docs/format.md §1 gives it, and nothing while no id is given", () => {
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

describe("the inner blueprint of a composite task", () => {
  const task = (value: unknown) => ({ id: "c", type: "system.composite", params: [{ name: "blueprint", value }] });
  it("is named by its id, with the sequencer of a dynamic one; none when it has no id", () => {
    expect(innerOf(task({ static: "inner" }))).toEqual({ id: "inner", sequencer: null });
    expect(innerOf(task({ dynamic: { blueprint_id: "inner", sequencer: "basic_element_sequencer" } }))).toEqual({
      id: "inner",
      sequencer: "basic_element_sequencer",
    });
    expect(innerOf(task({ static: "" }))).toBeNull();
    expect(innerOf(task(["inner"]))).toBeNull();
    expect(innerOf({ id: "c", type: "system.composite" })).toBeNull();
  });

  it("is found among the files beside by its id, else by its file name", () => {
    const files = [
      { file: "/w/a.json", blueprint_id: "TP5-inner", name: "", version: "1.0", tasks: 3 },
      { file: "/w/TP5-inner", blueprint_id: "other", name: "", version: "1.0", tasks: 3 },
      { file: "/w/toy.json", blueprint_id: "toy", name: "", version: "1.0", tasks: 3 },
    ];
    expect(findInner(files, "TP5-inner")?.file).toBe("/w/a.json");
    expect(findInner(files, "toy.json")?.file).toBe("/w/toy.json");
    expect(findInner(files, "missing")).toBeUndefined();
  });
});
