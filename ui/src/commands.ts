// The commands of the menu, by id (temporary until the commands registry lands).
import type { EditorState } from "./store/editor";
import type { WorkspaceState } from "./store/workspace";

const COMMANDS: Record<string, (w: WorkspaceState, s: EditorState) => unknown> = {
  new: (w) => w.newBlueprint(),
  open: (w) => w.openFile(),
  save: (_, s) => s.save(),
  save_as: (_, s) => s.saveAs(),
  export: (_, s) => s.exportFile(),
  close_tab: (w) => w.closeTab(w.active),
  quit: (w) => w.closeWindow(),
  undo: (_, s) => s.undo(),
  redo: (_, s) => s.redo(),
  auto_layout: (_, s) => s.autoLayout(),
};

export function runCommand(id: string, workspace: WorkspaceState, editor: EditorState): void {
  void COMMANDS[id]?.(workspace, editor);
}
