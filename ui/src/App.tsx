// The window: the workspace's tabs around the editor of the shown blueprint, and the question
// asked before unsaved work is lost.
import { useStore } from "zustand";
import { Editor } from "./editor/Editor";
import { AskDialog } from "./editor/AskDialog";
import { ErrorBoundary } from "./ErrorBoundary";
import { EditorProvider, useWorkspaceStore } from "./store/context";
import { currentEditor } from "./store/workspace";

export function App() {
  const workspace = useWorkspaceStore();
  const editor = useStore(workspace, currentEditor);
  return (
    <>
      {/* A new editor is a new canvas: its viewport and selection start afresh. */}
      <EditorProvider key={editorKey(editor)} store={editor}>
        <ErrorBoundary area="editor">
          <Editor />
        </ErrorBoundary>
      </EditorProvider>
      <AskDialog />
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
