import { UseAgentUpdate, useAgent } from "@copilotkit/react-core/v2/headless";
import { AGENT_ID } from "./copilot";
import { Composer } from "./components/Composer";
import { Transcript } from "./components/Transcript";
import { useBusy, useChatState, useStore } from "./state/context";

export function App() {
  // The agent CopilotKit runs; re-renders when its run status changes.
  const { agent } = useAgent({ agentId: AGENT_ID, updates: [UseAgentUpdate.OnRunStatusChanged] });
  const store = useStore();
  const busy = useBusy();
  const hasHistory = useChatState().entries.length > 0;
  return (
    <div className="app">
      <header className="topbar">
        <div className="brand">
          <span className="logo" aria-hidden="true">
            ◆
          </span>
          <h1>Agent Adaptor</h1>
          <span className="muted">streaming chat with visual subagents</span>
        </div>
        <div className="topbar-right">
          <span className={`conn ${busy || agent.isRunning ? "conn-live" : ""}`} data-testid="agent-state">
            {busy || agent.isRunning ? "streaming" : "idle"}
          </span>
          <button type="button" className="btn-ghost" onClick={() => store.reset()} disabled={busy || !hasHistory}>
            New chat
          </button>
        </div>
      </header>
      <main className="main">
        <Transcript />
      </main>
      <footer className="footer">
        <Composer />
      </footer>
    </div>
  );
}
