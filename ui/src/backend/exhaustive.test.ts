// The UI's matches on the generated event union are exhaustive: an event kind added in Rust (and
// so in generated.ts) fails the type check (`npm run build`) until every one of them handles it.
// Checked by type-checking the consumers against generated.ts with one kind more.
import ts from "typescript";
import { describe, expect, it } from "vitest";

const ui = decodeURIComponent(new URL("../..", import.meta.url).pathname);
const generatedPath = `${ui}src/backend/generated.ts`;
/** What matches on `SessionEvent` by kind. */
const consumers = [`${ui}src/store/runs.ts`];

const NEW_KIND = `{
  session_id: string;
  seq: number;
  global_seq: number;
  time_ms: number;
  kind: "breakpoint_hit";
  payload: { form: "whole"; value: { node: string } };
} | `;

/**
 * The type errors in the consumers (and in `extra`, more files by path), with generated.ts as
 * `generated`; errors elsewhere are other tests' business.
 */
function typeErrors(generated: string, extra: Record<string, string> = {}): { file: string; line: string; message: string }[] {
  const config = ts.getParsedCommandLineOfConfigFile(`${ui}tsconfig.json`, {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {} });
  if (!config) throw new Error("tsconfig.json does not parse");
  const host = ts.createCompilerHost(config.options);
  const getSourceFile = host.getSourceFile;
  const files: Record<string, string> = { ...extra, [generatedPath]: generated };
  const fileExists = host.fileExists;
  host.fileExists = (name) => name in files || fileExists.call(host, name);
  host.getSourceFile = (name, language, ...rest) =>
    name in files ? ts.createSourceFile(name, files[name]!, language) : getSourceFile.call(host, name, language, ...rest);
  const program = ts.createProgram([...consumers, ...Object.keys(extra)], config.options, host);
  const checked = new Set([...consumers, ...Object.keys(extra)]);
  const diagnostics = ts.getPreEmitDiagnostics(program).filter((d) => d.file && checked.has(d.file.fileName));
  return diagnostics.map((d) => {
    const file = d.file?.fileName ?? "";
    const at = d.file && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start).line : -1;
    return {
      file: file.slice(ui.length),
      line: d.file?.text.split("\n")[at]?.trim() ?? "",
      message: ts.flattenDiagnosticMessageText(d.messageText, "\n"),
    };
  });
}

describe("the event union", () => {
  const generated = ts.sys.readFile(generatedPath) ?? "";

  it("is generated as a union discriminated by kind, with no untyped payload", () => {
    expect(generated).toContain("export type SessionEvent = ");
    expect(generated).toContain('kind: "session_state_changed";');
    expect(generated).not.toMatch(/payload: unknown/);
    expect(generated).not.toContain("EventView");
  });

  it("fails the type check of every match on it when a kind is added and not handled", () => {
    expect(typeErrors(generated), "the consumers type-check as they are").toEqual([]);
    const declaration = "export type SessionEvent = ";
    expect(generated.split(declaration)).toHaveLength(2);
    const errors = typeErrors(generated.replace(declaration, declaration + NEW_KIND));
    expect(errors.map((e) => [e.file, e.line])).toEqual([["src/store/runs.ts", "const unhandled: never = event;"]]);
    expect(errors[0]!.message).toContain('"breakpoint_hit"');
  }, 120_000);
});

describe("failure codes", () => {
  it("are the generated union: a code the UI spells wrong does not compile", () => {
    const generated = ts.sys.readFile(generatedPath) ?? "";
    expect(generated).toMatch(/export type FailureCode = [^;]*"invalid_argument"/);
    expect(generated).not.toContain('"invalid_arguments"');
    const caller = `${ui}src/backend/misspelt-code.ts`;
    const text = [
      'import { BackendError } from "./types";',
      'export const right = new BackendError("not_found", "no session s1");',
      'export const wrong = new BackendError("invalid_arguments", "one spelling only");',
    ].join("\n");
    const errors = typeErrors(generated, { [caller]: text });
    expect(errors.map((e) => [e.file, e.line])).toEqual([["src/backend/misspelt-code.ts", 'export const wrong = new BackendError("invalid_arguments", "one spelling only");']]);
  }, 120_000);
});
