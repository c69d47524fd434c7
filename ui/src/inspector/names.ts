// What the inspector offers while a condition or an input is typed: the names the facade says a
// task may read, and the problems it found in one field.
import type { Diagnostic, FileReport, TaskNamesAnswer } from "../backend/generated";

/** A name a task may read: produced by an output (upstream: by a task that runs before it) or its own. */
export type Suggestion = { name: string; origin: "upstream" | "produced" | "own"; producers: string[] };

/** Produced names first, those produced upstream before the others, then the task's own names. */
export function suggestions(names: TaskNamesAnswer | null): Suggestion[] {
  if (!names) return [];
  const produced = [...names.produced].sort((a, b) => Number(b.upstream) - Number(a.upstream));
  const out: Suggestion[] = produced.map((p) => ({
    name: p.key,
    origin: p.upstream ? "upstream" : "produced",
    producers: p.producers,
  }));
  for (const own of names.own) if (!out.some((s) => s.name === own)) out.push({ name: own, origin: "own", producers: [] });
  return out;
}

/** The name being typed just before `caret` ("" when none). */
export function wordAt(text: string, caret: number): { start: number; word: string } {
  const match = /[A-Za-z_][A-Za-z0-9_.]*$/.exec(text.slice(0, caret));
  return match ? { start: match.index, word: match[0] } : { start: caret, word: "" };
}

/** The suggestions that complete the word at the caret (all of them when no word is typed). */
export function completing(all: Suggestion[], text: string, caret: number): Suggestion[] {
  const { word } = wordAt(text, caret);
  return all.filter((s) => s.name.startsWith(word) && s.name !== word);
}

/** The problems of one task's own `condition` (not its scope's while condition). */
export function conditionProblems(report: FileReport | null, taskId: string): Diagnostic[] {
  return (report?.diagnostics ?? []).filter(
    (d) =>
      d.task_id === taskId &&
      !d.path.includes("while_policy") &&
      (d.path.endsWith(".condition") || d.code === "condition-syntax" || d.code === "condition-unknown-name"),
  );
}

/** What the facade finds wrong with the value of one params row (row `index` of the task's params). */
export function paramProblems(report: FileReport | null, taskId: string, index: number): Diagnostic[] {
  const at = new RegExp(`^\\$\\.tasks\\[\\d+\\]\\.params\\[${index}\\]\\.value(?![A-Za-z0-9_])`);
  return (report?.diagnostics ?? []).filter((d) => d.task_id === taskId && d.code === "param-schema" && at.test(d.path));
}

/** Every problem of one task. */
export function taskProblems(report: FileReport | null, taskId: string): Diagnostic[] {
  return (report?.diagnostics ?? []).filter((d) => d.task_id === taskId);
}
