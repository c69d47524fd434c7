// The native menu (src-tauri/src/menu.rs) sends the UI a command id per item: each must be a
// command of ui/src/commands.ts, or the item would do nothing.
import { describe, expect, it } from "vitest";
import { COMMANDS } from "./commands";

const menu = Object.values(import.meta.glob("../../src-tauri/src/menu.rs", { query: "?raw", import: "default", eager: true }))[0] as string;

describe("the native menu", () => {
  it("names only commands the UI has", () => {
    const ids = [...menu.matchAll(/Some\(\("([a-z.-]+)", "/g)].map((m) => m[1]);
    expect(ids.length).toBeGreaterThan(20);
    const known = new Set(COMMANDS.map((c) => c.id));
    expect(ids.filter((id) => !known.has(id!))).toEqual([]);
  });
});
