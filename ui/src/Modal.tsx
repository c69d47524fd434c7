// A modal form: a backdrop, a dialog labelled by its title, Escape to close, Enter to submit
// (Ctrl+Enter too, from a multi-line field).
// The dialogs of the app (launch, publish, servers' runs, broker) are each one of these.
import { useEffect, type ReactNode } from "react";

export function Modal(props: {
  /** The dialog's own class, beside `modal`. */
  className: string;
  /** Unique in the window: the title's id is `${id}-title`. */
  id: string;
  title: ReactNode;
  testId: string;
  onClose: () => void;
  onSubmit: () => void;
  children: ReactNode;
}) {
  const { className, id, title, testId, onClose, onSubmit, children } = props;
  // Escape closes it wherever the focus is in the window.
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.key === "Escape") onClose();
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [onClose]);
  return (
    <div className="modal-backdrop">
      <form
        className={`modal ${className}`}
        role="dialog"
        aria-modal="true"
        aria-labelledby={`${id}-title`}
        data-testid={testId}
        onSubmit={(e) => {
          e.preventDefault();
          onSubmit();
        }}
        onKeyDown={(e) => {
          if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
            e.preventDefault();
            e.currentTarget.requestSubmit();
          }
        }}
      >
        <h3 id={`${id}-title`}>{title}</h3>
        {children}
      </form>
    </div>
  );
}
