import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import "@xyflow/react/dist/style.css";
import "./styles.css";
import { App } from "./App";
import { tauriBackend } from "./backend/tauri";
import { layeredLayout } from "./editor/layout";
import { WorkspaceProvider } from "./store/context";
import { createWorkspace, currentEditor } from "./store/workspace";
import { runCommand } from "./commands";

const workspace = createWorkspace(tauriBackend, layeredLayout);
// The native menu's choices run the commands the shortcuts and the command palette run.
tauriBackend.onMenu((action) =>
  workspace.getState().menu(action, (id) => runCommand(id, currentEditor(workspace.getState()).getState(), workspace.getState())),
);
void workspace.getState().load();

createRoot(document.getElementById("root")!).render(
  <StrictMode>
    <WorkspaceProvider store={workspace}>
      <App />
    </WorkspaceProvider>
  </StrictMode>,
);
