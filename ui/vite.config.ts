import { defineConfig } from "vite";
import react from "@vitejs/plugin-react";

// The app is served by Tauri from dist/ (tauri.conf.json `frontendDist`): no dev server here.
export default defineConfig({
  plugins: [react()],
  clearScreen: false,
  build: { target: "es2022", sourcemap: false },
  worker: { format: "es" },
});
