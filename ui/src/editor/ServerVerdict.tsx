// The status bar's verdict on the open blueprint: Orrery's and the server's, with a coloured dot
// and the reasons in the tooltip (editor/verdict.ts words it).
import { useEditor } from "../store/context";
import { verdict } from "./verdict";
import "./verdict.css";

export function ServerVerdict() {
  const open = useEditor((s) => s.blueprint !== null);
  const report = useEditor((s) => s.report);
  if (!open) return null;
  const { kind, text, detail } = verdict(report);
  return (
    <span className={`server-verdict ${kind}`} data-testid="server-verdict" data-verdict={kind} title={detail}>
      <span className="dot" aria-hidden="true" />
      {text}
    </span>
  );
}
