import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { App } from "./App";
import { AppProviders, createApp } from "./copilot";
import "./styles.css";

function sessionStore(): Storage | undefined {
  try {
    return window.sessionStorage;
  } catch {
    return undefined;
  }
}

const app = createApp(sessionStore());
window.addEventListener("beforeunload", app.store.leave);
window.addEventListener("pagehide", app.store.leave);
// A page restored from the back/forward cache has lost its stream: start over
// from sessionStorage, which resumes the run if it is still active.
window.addEventListener("pageshow", (e) => {
  if (e.persisted) location.reload();
});

const root = document.getElementById("root");
if (!root) throw new Error("no #root element");
createRoot(root).render(
  <StrictMode>
    <AppProviders app={app}>
      <App />
    </AppProviders>
  </StrictMode>,
);

// A reload while a run was active picks the stream up where it left off.
void app.store.resume();
