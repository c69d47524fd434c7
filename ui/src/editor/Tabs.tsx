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
  const empty = useStore(root, (s) => s.blueprint === null);
  useStore(root, (s) => s.blueprint?.name); // the title of a blueprint not saved yet
  // Unsaved work in an inner blueprint drilled into marks the tab too.
  const { levels } = tab;
  const subscribe = useCallback(
    (notify: () => void) => {
      const stops = levels.slice(1).map((l) => l.store.subscribe(notify));
      return () => stops.forEach((stop) => stop());
    },
    [levels],
  );
  const innerDirty = useSyncExternalStore(subscribe, () => levels.slice(1).some((l) => isDirty(l.store.getState())));
  const dirty = useStore(root, isDirty) || innerDirty;
  const title = empty ? "Start" : titleOf(root);
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
  const dirty = useStore(store, isDirty);
  const title = `${titleOf(store)}${dirty ? " •" : ""}`;
  if (last) return <strong data-testid="breadcrumb-item" data-depth={depth}>{title}</strong>;
  return (
    <button type="button" className="link" onClick={onClick} data-testid="breadcrumb-item" data-depth={depth}>
      {title}
    </button>
  );
}
