import { UseAgentUpdate, useAgent } from "@copilotkit/react-core/v2/headless";
import { AGENT_ID } from "./copilot";
import type { ChatPhase } from "./model/reducer";
import { Composer } from "./components/Composer";
import { Transcript } from "./components/Transcript";
import { fetchSession, type SessionInfo } from "./model/session";
import { useBusy, useChatPhase, useChatState, useStore } from "./state/context";
import { useEffect, useState } from "react";

// [wide, narrow (phones)] labels of the conversation's state.
const phaseLabel: Record<ChatPhase, [string, string]> = {
  idle: ["Ready", "Ready"],
  working: ["Working", "Working"],
  waiting: ["Waiting for your answer", "Your turn"],
  reconnecting: ["Reconnecting…", "Reconnecting"],
  offline: ["Connection lost", "Offline"],
};

export function App() {
  // The agent CopilotKit runs; re-renders when its run status changes.
  const { agent } = useAgent({ agentId: AGENT_ID, updates: [UseAgentUpdate.OnRunStatusChanged] });
  const store = useStore();
  const busy = useBusy() || agent.isRunning;
  const stored = useChatPhase();
  const phase: ChatPhase = stored === "idle" && busy ? "working" : stored;
  const hasHistory = useChatState().entries.length > 0;
  return (
    <div className="app">
      <header className="topbar">
        <div className="brand">
          <span className="logo" aria-hidden="true">
            ◆
          </span>
          <h1>Agent Adaptor</h1>
          <span className="tagline muted">streaming chat with visual subagents</span>
        </div>
        <div className="topbar-right">
          <span className={`conn conn-${phase}`} data-testid="agent-state" data-state={phase} role="status">
            <span className="label-wide">{phaseLabel[phase][0]}</span>
            <span className="label-narrow">{phaseLabel[phase][1]}</span>
          </span>
          <button type="button" className="btn-ghost" data-testid="new-chat" onClick={() => store.reset()} disabled={busy || !hasHistory}>
            New chat
          </button>
          <SignOut />
        </div>
      </header>
      <Transcript>
        <footer className="footer">
          <Composer />
        </footer>
      </Transcript>
    </div>
  );
}

/** "Sign out", shown only when the host requires a token (auth.tokens). */
function SignOut() {
  const store = useStore();
  const [info, setInfo] = useState<SessionInfo | undefined>();
  const [error, setError] = useState<string | undefined>();
  useEffect(() => {
    let live = true;
    void fetchSession().then((s) => live && setInfo(s));
    return () => {
      live = false;
    };
  }, []);
  if (!info?.authRequired) return null;
  const signOut = async () => {
    const err = await store.signOut();
    if (err) setError(err);
    else window.location.assign("/");
  };
  return (
    <button
      type="button"
      className="btn-ghost sign-out"
      data-testid="sign-out"
      aria-label="Sign out"
      title={error ?? (info.principal ? `Signed in as ${info.principal}` : undefined)}
      onClick={() => void signOut()}
    >
      <span className="label-wide">{error ? "Sign out failed" : "Sign out"}</span>
      <svg className="label-narrow icon" viewBox="0 0 20 20" width="16" height="16" aria-hidden="true">
        <path d="M8 3H4v14h4M13 6l4 4-4 4M17 10H8" fill="none" stroke="currentColor" strokeWidth="1.8" strokeLinecap="round" strokeLinejoin="round" />
      </svg>
    </button>
  );
}
