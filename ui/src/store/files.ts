// The open file: opening one (a COMPAS envelope is edited as plain JSON), creating a blueprint
// that has none yet, saving and exporting it, and the blueprints beside it that a composite may
// call. Opening starts a new history (history.ts) and lays the blueprint out (placement.ts).
import type { BlueprintFile } from "../backend/generated";
import { isUntitled, parseBlueprint, toText } from "../blueprint";
import { folderOf } from "../paths";
import { mark, markNextRender } from "../timing";
import type { EditorInternals, EditorState, FileSlice, GetEditor, Laid, SetEditor } from "./editor-state";

export function filesSlice(set: SetEditor, get: GetEditor, internals: EditorInternals): FileSlice {
  const { backend, fail } = internals;

  /** Formats and writes the blueprint; the path written, or null when cancelled or failed. */
  async function write(text: string, to: (canonical: string) => Promise<string | null>): Promise<string | null> {
    const { blueprint } = get();
    if (!blueprint) return null;
    try {
      const formatted = await backend.call("format_blueprint", { text, to: get().encoding });
      const path = await to(formatted.text);
      if (path !== null) {
        set({ path, saved: blueprint, notice: { text: `Saved ${path}`, error: false } });
        await internals.saveLayout();
      }
      return path;
    } catch (e) {
      fail(e);
      return null;
    }
  }

  return {
    path: null,
    encoding: "antikythera",
    saved: null,
    blueprintFiles: null,

    async open(path, text) {
      mark("open");
      let encoding: EditorState["encoding"];
      try {
        // Whether it is an envelope is the facade's to say: loading decides it, not the editor.
        ({ encoding } = await backend.call("blueprint_encoding", { text }));
        if (encoding === "compas") text = (await backend.call("format_blueprint", { text, to: "antikythera" })).text;
      } catch (e) {
        set({ notice: { text: `Cannot open ${path}: ${e instanceof Error ? e.message : String(e)}`, error: true } });
        return;
      }
      const parsed = parseBlueprint(text);
      if ("error" in parsed) {
        set({ notice: { text: `Cannot open ${path}: ${parsed.error}`, error: true } });
        return;
      }
      const mine = internals.countOpening();
      internals.newStep();
      set({ path, encoding, positions: {}, laidOut: false, selected: null, selection: [], selectedDependency: null, names: null, notice: null });
      set({ report: null, checked: null });
      set({ saved: parsed.blueprint });
      set({ scopes: [], selectedScope: null });
      internals.replace(parsed.blueprint, [], []);
      let laid: Laid = { positions: {}, direction: "down", breakpoints: {} };
      try {
        laid = await internals.positionsFor(path, parsed.blueprint);
      } catch (e) {
        fail(e);
      }
      if (mine !== internals.openings()) return;
      mark("laid-out");
      markNextRender("open");
      set({ ...laid, laidOut: true });
    },

    async create(blueprint, layoutOf) {
      const mine = internals.countOpening();
      internals.newStep();
      set({ path: null, encoding: "antikythera", saved: blueprint, positions: {}, direction: "down", breakpoints: {}, laidOut: false, selected: null, selection: [] });
      set({ scopes: [], selectedScope: null });
      set({ selectedDependency: null, names: null, notice: null, report: null, checked: null });
      internals.replace(blueprint, [], []);
      let laid: Laid = { positions: {}, direction: "down", breakpoints: {} };
      try {
        laid = layoutOf ? await internals.positionsFor(layoutOf, blueprint) : { positions: await internals.layout(blueprint), direction: "down", breakpoints: {} };
      } catch (e) {
        fail(e);
      }
      if (mine === internals.openings()) set({ ...laid, laidOut: true });
    },

    async exportFile() {
      const { blueprint, encoding } = get();
      if (!blueprint) return;
      try {
        const path = await backend.exportFile(toText(blueprint), encoding);
        if (path !== null) set({ notice: { text: `Exported ${path}`, error: false } });
      } catch (e) {
        fail(e);
      }
    },

    async save() {
      const { blueprint, path } = get();
      if (!blueprint) return;
      if (path === null) return get().saveAs();
      await write(toText(blueprint), async (canonical) => {
        await backend.saveFile(path, canonical);
        return path;
      });
    },

    async saveAs() {
      const { blueprint, encoding } = get();
      if (!blueprint) return;
      // A new blueprint still called "Untitled" takes its id and name from the file it is saved
      // as (the shell names it, in the one write), so that its runs are not all "Untitled".
      const naming = encoding === "antikythera" && isUntitled(blueprint);
      let written: string | null = null;
      const path = await write(toText(blueprint), async (canonical) => {
        const saved = await backend.saveFileAs(canonical, naming);
        written = saved?.text ?? null;
        return saved?.path ?? null;
      });
      if (path === null || written === null || !naming || get().blueprint !== blueprint) return;
      const parsed = parseBlueprint(written);
      if (!("blueprint" in parsed)) return;
      const { id, name } = parsed.blueprint;
      if (id === blueprint.id && name === blueprint.name) return;
      get().edit((b) => ({ ...b, id, name }));
      set({ saved: get().blueprint });
    },

    async loadBlueprintFiles() {
      const { path } = get();
      if (path === null) return;
      const folder = folderOf(path);
      let files: BlueprintFile[] = [];
      try {
        files = await backend.call("list_blueprint_files", { folder });
      } catch (e) {
        fail(e); // then none are offered, and the folder is not asked again and again
      }
      const now = get().path;
      if (now !== null && folderOf(now) === folder) set({ blueprintFiles: { folder, files } });
    },
  };
}
