// The window: the workspace's tabs around the editor of the shown blueprint, or the runs; the
// question asked before unsaved work is lost, and the dialog before a run starts.
import { useStore } from "zustand";
import { Editor } from "./editor/Editor";
import { AskDialog } from "./editor/AskDialog";
import { ErrorBoundary } from "./ErrorBoundary";
import { RunsView } from "./runs/RunsView";
import { LaunchDialog } from "./runs/LaunchDialog";
import { AloneDialog } from "./editor/AloneDialog";
import { BrokerDialog } from "./servers/BrokerDialog";
import { AboutDialog } from "./AboutDialog";
import { PublishDialog } from "./servers/PublishDialog";
import { EditorProvider, useWorkspaceStore } from "./store/context";
import { currentEditor } from "./store/workspace";

export function App() {
  const workspace = useWorkspaceStore();
  const editor = useStore(workspace, currentEditor);
  const mode = useStore(workspace, (s) => s.mode);
  return (
    <>
      {mode === "runs" ? (
        <ErrorBoundary area="runs">
          <RunsView />
        </ErrorBoundary>
      ) : (
        // A new editor is a new canvas: its viewport and selection start afresh.
        <EditorProvider key={editorKey(editor)} store={editor}>
          <ErrorBoundary area="editor">
            <Editor />
          </ErrorBoundary>
        </EditorProvider>
      )}
      <AskDialog />
      <LaunchDialog />
      <AloneDialog />
      <PublishDialog />
      <BrokerDialog />
      <AboutDialog />
    </>
  );
}

const keys = new WeakMap<object, number>();
let nextKey = 0;
function editorKey(editor: object): number {
  let key = keys.get(editor);
  if (key === undefined) keys.set(editor, (key = ++nextKey));
  return key;
}
