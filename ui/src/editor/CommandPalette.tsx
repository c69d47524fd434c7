// The command palette (Ctrl+K, Ctrl+Shift+P): a filter box over the commands of commands.ts and,
// below them, the tasks whose id or type matches; choosing a task brings it into view. Ctrl+F
// opens it to find a task only; Add a task (the "+" under a card, a connection dropped on the
// canvas) on the task types, choosing one adds it wired in. Arrow keys move, Enter chooses,
// Escape closes.
import { useEffect, useRef, useState, type KeyboardEvent } from "react";
import type { TaskTypeSummary } from "../backend/generated";
import type { Task } from "../blueprint";
import { canRun, COMMANDS, matchingCommands, shortcutText, type Command } from "../commands";
import { useEditor, useEditorStore, useWorkspaceStore } from "../store/context";
import type { PaletteMode } from "../store/view";
import { matchingTasks } from "./find-task";
import { matchingTypes } from "./palette-filter";

/** A blueprint of thousands of tasks lists this many: the filter finds the others. */
const TASKS_SHOWN = 50;

type Item =
  | { command: Command; task?: undefined; type?: undefined }
  | { task: Task; command?: undefined; type?: undefined }
  | { type: TaskTypeSummary; command?: undefined; task?: undefined };

const TITLES = { commands: "Commands", tasks: "Find a task", add: "Add a task" } as const;
const PLACEHOLDERS = {
  commands: "Run a command, or find a task…",
  tasks: "Find a task by id or type…",
  add: "Add a task of type…",
} as const;

export function CommandPalette() {
  const mode = useEditor((s) => s.palette);
  // Keyed by the mode: the filter starts empty each time the palette opens or changes mode.
  return mode ? <PaletteDialog key={mode} mode={mode} /> : null;
}

/** The palette's width and most of its height (styles.css: min(560px, 90vw), at most 60vh). */
const PALETTE_WIDTH = 560;

/** Opened at the pointer, kept inside the window. */
function byPointer({ x, y }: { x: number; y: number }) {
  const width = Math.min(PALETTE_WIDTH, window.innerWidth * 0.9);
  const left = Math.max(8, Math.min(x, window.innerWidth - width - 8));
  const top = Math.max(8, Math.min(y, window.innerHeight * 0.4 - 8));
  return { position: "fixed", left, top, margin: 0 } as const;
}

function PaletteDialog({ mode }: { mode: PaletteMode }) {
  const store = useEditorStore();
  const workspace = useWorkspaceStore();
  const tasks = useEditor((s) => s.blueprint?.tasks ?? null);
  const taskTypes = useEditor((s) => s.taskTypes);
  const adding = useEditor((s) => s.adding);
  // Which commands can run now is read once per render: the palette is open only briefly.
  const state = useEditor((s) => s);
  const [query, setQuery] = useState("");
  const [active, setActive] = useState(0);
  const list = useRef<HTMLUListElement>(null);

  const commands = mode === "commands" ? matchingCommands(query, COMMANDS) : [];
  const showTasks = tasks !== null && (mode === "tasks" || (mode === "commands" && query.trim() !== ""));
  const found = showTasks ? matchingTasks(tasks, query, TASKS_SHOWN) : [];
  // A blueprint has its one start and end: those are not added.
  const types = mode === "add" ? matchingTypes(taskTypes.filter((t) => !t.bound), query) : [];
  const items: Item[] = [
    ...commands.map((command) => ({ command })),
    ...found.map((task) => ({ task })),
    ...types.map((type) => ({ type })),
  ];
  const at = Math.min(active, Math.max(items.length - 1, 0));

  useEffect(() => {
    list.current?.querySelector(".active")?.scrollIntoView({ block: "nearest" });
  }, [at]);

  const close = () => store.getState().openPalette(null);
  const enabled = (c: Command) => canRun(c, state);

  function choose(item: Item | undefined) {
    if (!item) return;
    if (item.command && !enabled(item.command)) return;
    close();
    const now = store.getState();
    if (item.command) void item.command.run(now, workspace.getState());
    else if (item.task) now.focusTask(item.task.id);
    else now.addTask(item.type.name, adding?.at, adding?.where);
  }

  function onKeyDown(e: KeyboardEvent) {
    if (e.key === "ArrowDown" || e.key === "ArrowUp") {
      e.preventDefault();
      if (items.length > 0) setActive((at + (e.key === "ArrowDown" ? 1 : -1) + items.length) % items.length);
    } else if (e.key === "Enter") {
      e.preventDefault();
      choose(items[at]);
    } else if (e.key === "Escape") {
      e.preventDefault();
      close();
    }
  }

  return (
    <div className="command-palette-backdrop" onMouseDown={(e) => e.target === e.currentTarget && close()}>
      <div
        className="command-palette"
        role="dialog"
        aria-label={TITLES[mode]}
        data-testid="command-palette"
        data-mode={mode}
        // Opened by the pointer (a connection dropped on the canvas), it opens there.
        style={adding?.screen ? byPointer(adding.screen) : undefined}
      >
        <input
          autoFocus
          type="text"
          value={query}
          placeholder={PLACEHOLDERS[mode]}
          aria-label="Filter"
          data-testid="command-palette-filter"
          onChange={(e) => {
            setQuery(e.target.value);
            setActive(0);
          }}
          onKeyDown={onKeyDown}
        />
        {/* A click on an item leaves the focus in the filter, for the arrow keys and Escape. */}
        <ul ref={list} role="listbox" onMouseDown={(e) => e.preventDefault()}>
          {items.map((item, i) => {
            const className = i === at ? "active" : undefined;
            if (item.command) {
              const c = item.command;
              return (
                <li key={`command:${c.id}`} role="option" aria-selected={i === at} className={className}>
                  <button
                    type="button"
                    tabIndex={-1}
                    disabled={!enabled(c)}
                    data-testid="command-item"
                    data-command-id={c.id}
                    onMouseMove={() => setActive(i)}
                    onClick={() => choose(item)}
                  >
                    <span className="title">{c.title}</span>
                    {c.shortcut && <kbd>{shortcutText(c.shortcut)}</kbd>}
                  </button>
                </li>
              );
            }
            if (item.type) {
              const type = item.type;
              return (
                <li key={`type:${type.name}`} role="option" aria-selected={i === at} className={className}>
                  <button
                    type="button"
                    tabIndex={-1}
                    data-testid="add-item"
                    data-task-type={type.name}
                    onMouseMove={() => setActive(i)}
                    onClick={() => choose(item)}
                  >
                    <span className="title">{type.name}</span>
                    <span className="type">{type.description}</span>
                  </button>
                </li>
              );
            }
            const t = item.task;
            return (
              <li key={`task:${t.id}`} role="option" aria-selected={i === at} className={className}>
                <button
                  type="button"
                  tabIndex={-1}
                  data-testid="find-item"
                  data-task-id={t.id}
                  onMouseMove={() => setActive(i)}
                  onClick={() => choose(item)}
                >
                  <span className="title">{t.id}</span>
                  <span className="type">{t.type}</span>
                </button>
              </li>
            );
          })}
        </ul>
        {items.length === 0 && <p className="hint">Nothing matches “{query}”.</p>}
      </div>
    </div>
  );
}
