// A value typed as JSON: applied only while it parses, otherwise the error is shown instead.
import { useEffect, useState } from "react";
import { jsonText, parseJsonValue } from "../blueprint";

type Props = { value: unknown; onApply: (value: unknown) => void; label: string };

export function JsonField({ value, onApply, label }: Props) {
  const [draft, setDraft] = useState(() => jsonText(value));
  const parsed = parseJsonValue(draft);
  // An undo (or any change from elsewhere) replaces the draft, unless it already says the same.
  useEffect(() => {
    setDraft((d) => {
      const p = parseJsonValue(d);
      return "value" in p && jsonText(p.value) === jsonText(value) ? d : jsonText(value);
    });
  }, [value]);
  return (
    <span className="json-field">
      <input
        aria-label={label}
        value={draft}
        spellCheck={false}
        className={"error" in parsed ? "invalid" : ""}
        data-testid="json-value"
        onChange={(e) => {
          setDraft(e.target.value);
          const next = parseJsonValue(e.target.value);
          if ("value" in next) onApply(next.value);
        }}
      />
      {"error" in parsed && (
        <span className="field-error" data-testid="json-error">
          {parsed.error}
        </span>
      )}
    </span>
  );
}
