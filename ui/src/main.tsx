import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import "@xyflow/react/dist/style.css";
import "./styles.css";
import { tauriBackend } from "./backend/tauri";
import { Editor } from "./editor/Editor";
import { layeredLayout } from "./editor/layout";
import { EditorProvider } from "./store/context";
import { createEditorStore } from "./store/editor";

const store = createEditorStore(tauriBackend, layeredLayout);
void store.getState().load();

createRoot(document.getElementById("root")!).render(
  <StrictMode>
    <EditorProvider store={store}>
      <Editor />
    </EditorProvider>
  </StrictMode>,
);
