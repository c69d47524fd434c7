// The reference server's verdict on the open blueprint, in words for the status bar, beside
// Orrery's own count of problems (Problems.tsx): the dot's colour tells Orrery's (`valid`: no
// error) and the server's (`server_accepts`: its upload would take the file) apart. They
// differ both ways: the server refuses some blueprints Orrery can run (a problem in the data
// flow, say), and accepts some Orrery finds wrong (cycles and duplicate ids it never checks).
import type { Diagnostic, FileReport } from "../backend/generated";
import { plural } from "../plural";

export type Verdict = {
  /** What the dot's colour says. */
  kind: "checking" | "accepted" | "refused" | "errors";
  text: string;
  /** Why, in full: shown as the tooltip. */
  detail: string;
};

/** How many of the server's reasons the tooltip lists before it only counts the rest. */
const REASONS_SHOWN = 5;

/** The problems the server refuses the blueprint for, as lines of the tooltip. */
function reasons(diagnostics: Diagnostic[]): string {
  const refusing = diagnostics.filter((d) => d.server_rejects);
  if (refusing.length === 0) return "";
  const lines = refusing.slice(0, REASONS_SHOWN).map((d) => `• ${d.message}`);
  if (refusing.length > REASONS_SHOWN) lines.push(`• and ${refusing.length - REASONS_SHOWN} more (see Problems)`);
  return `\n\nThe server would refuse it for:\n${lines.join("\n")}`;
}

export function verdict(report: FileReport | null): Verdict {
  if (!report) {
    return { kind: "checking", text: "Checking…", detail: "Orrery is checking the blueprint as it is now." };
  }
  const errors = report.diagnostics.filter((d) => d.severity === "error").length;
  if (report.valid && report.server_accepts) {
    return {
      kind: "accepted",
      text: "The server accepts it",
      detail: "Orrery finds no error, and an antikythera server would accept this blueprint on upload.",
    };
  }
  if (report.valid) {
    return {
      kind: "refused",
      text: "The server would refuse it",
      detail:
        "Orrery can run this blueprint, but an antikythera server would refuse it on upload: export it only once these are fixed." +
        reasons(report.diagnostics),
    };
  }
  const counted = plural(Math.max(errors, 1), "error");
  if (report.server_accepts) {
    return {
      kind: "errors",
      text: "The server would still accept it",
      detail:
        `Orrery finds ${counted} the antikythera server does not check for: ` +
        "it would accept the blueprint, and then fail or misbehave when it runs.",
    };
  }
  return {
    kind: "errors",
    text: "The server would refuse it",
    detail: `Orrery finds ${counted}, and an antikythera server would refuse this blueprint on upload.` + reasons(report.diagnostics),
  };
}
