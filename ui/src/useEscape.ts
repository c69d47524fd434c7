// A modal closes with Escape, wherever the focus is in the window.
import { useEffect } from "react";

/** Calls `close` when Escape is pressed, while the calling component is shown. */
export function useEscape(close: () => void): void {
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.key === "Escape") close();
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [close]);
}
