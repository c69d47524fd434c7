// The open blueprints as tabs (a dot marks unsaved work), and under the active one the
// breadcrumb of the inner blueprints drilled into from its composites.
import { useCallback, useSyncExternalStore } from "react";
import { useStore } from "zustand";
import { isDirty, type EditorStore } from "../store/editor";
import { useWorkspace } from "../store/context";
import { titleOf, type Tab } from "../store/workspace";

export function Tabs() {
  const tabs = useWorkspace((s) => s.tabs);
  const active = useWorkspace((s) => s.active);
  const activate = useWorkspace((s) => s.activate);
  const closeTab = useWorkspace((s) => s.closeTab);
  const newBlueprint = useWorkspace((s) => s.newBlueprint);
  return (
    <nav className="tabs" aria-label="Open blueprints" role="tablist">
      {tabs.map((tab) => (
        <TabButton key={tab.key} tab={tab} active={tab.key === active} onActivate={activate} onClose={closeTab} />
      ))}
      <button type="button" className="tab-new" onClick={newBlueprint} title="New blueprint (Ctrl+N)" aria-label="New blueprint">
        +
      </button>
      <Breadcrumb />
    </nav>
  );
}

function TabButton({ tab, active, onActivate, onClose }: { tab: Tab; active: boolean; onActivate(key: number): void; onClose(key: number): void }) {
  const root = tab.levels[0]!.store;
  // Only what the tab shows: a tab that followed every change of its editor (each step of a
  // drag) would draw again for nothing.
  const path = useStore(root, (s) => s.path);
  const title = useStore(root, (s) => (s.blueprint === null ? "Start" : titleOf(s)));
  // Unsaved work anywhere in the tab, an inner blueprint drilled into too, marks it.
  const { levels } = tab;
  const subscribe = useCallback(
    (notify: () => void) => {
      const stops = levels.map((l) => l.store.subscribe(notify));
      return () => stops.forEach((stop) => stop());
    },
    [levels],
  );
  const dirty = useSyncExternalStore(subscribe, () => levels.some((l) => isDirty(l.store.getState())));
  return (
    <div className={`tab ${active ? "active" : ""}`} role="tab" aria-selected={active} data-testid="tab" data-dirty={dirty}>
      <button type="button" className="tab-title" onClick={() => onActivate(tab.key)} title={path ?? title}>
        {title}
        {dirty && (
          <span className="dirty" aria-label="unsaved changes">
            {" "}•
          </span>
        )}
      </button>
      <button type="button" className="tab-close" onClick={() => onClose(tab.key)} title="Close (Ctrl+W)" aria-label={`Close ${title}`} data-testid="tab-close">
        ×
      </button>
    </div>
  );
}

/** Where the shown blueprint sits: the tab's blueprint, then each composite drilled into. */
function Breadcrumb() {
  const levels = useWorkspace((s) => s.tabs.find((t) => t.key === s.active)?.levels ?? []);
  const backTo = useWorkspace((s) => s.backTo);
  if (levels.length < 2) return null;
  return (
    <nav className="breadcrumb" aria-label="Inner blueprints" data-testid="breadcrumb">
      {levels.map((level, depth) => (
        <span key={depth} className="crumb">
          {depth > 0 && <span className="via">› {level.via} ›</span>}
          <Crumb store={level.store} last={depth === levels.length - 1} onClick={() => backTo(depth)} depth={depth} />
        </span>
      ))}
    </nav>
  );
}

function Crumb({ store, last, onClick, depth }: { store: EditorStore; last: boolean; onClick(): void; depth: number }) {
  const title = useStore(store, (s) => `${titleOf(s)}${isDirty(s) ? " •" : ""}`);
  if (last) return <strong data-testid="breadcrumb-item" data-depth={depth}>{title}</strong>;
  return (
    <button type="button" className="link" onClick={onClick} data-testid="breadcrumb-item" data-depth={depth}>
      {title}
    </button>
  );
}
