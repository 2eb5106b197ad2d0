// CopilotKit wiring, headless. The HostAgent is registered as the "default"
// agent of a CopilotKitCoreReact through agents__unsafe_dev_only — the only
// registration CopilotKitCoreConfig has: <CopilotKitProvider
// selfManagedAgents> (1.74) passes its agents to the core the same way, but
// lives only in the full @copilotkit/react-core/v2 entry (chat UI, Streamdown,
// Shiki, Mermaid, KaTeX: 18 MB of dist) and warns that selfManagedAgents is an
// Enterprise-tier feature. README.md ("Why not <CopilotKitProvider
// selfManagedAgents>") has the details and CopilotKit's supported production
// path (a CopilotRuntime in front of the host). The delegate_to_* tool-call
// card is a CopilotKit tool-call renderer; the core is provided through
// CopilotKit's own context so that its headless hooks (useAgent,
// useRenderToolCall, useCopilotKit) work.

import { CopilotKitContext, CopilotKitCoreReact } from "@copilotkit/react-core/v2/context";
import { defineToolCallRenderer } from "@copilotkit/react-core/v2/headless";
import type { ReactNode } from "react";
import { HostAgent } from "./agent/HostAgent";
import { ToolCallCard } from "./components/ToolCallCard";
import { ChatStore } from "./state/store";
import { StoreContext } from "./state/context";

export const AGENT_ID = "default";

export interface App {
  agent: HostAgent;
  core: CopilotKitCoreReact;
  store: ChatStore;
}

const toolRenderers = [defineToolCallRenderer({ name: "*", render: ToolCallCard })];

export function createApp(storage: Storage | undefined): App {
  const agent = new HostAgent("/agui");
  const core = new CopilotKitCoreReact({
    agents__unsafe_dev_only: { [AGENT_ID]: agent },
    renderToolCalls: toolRenderers,
  });
  const store = new ChatStore(agent, core, storage);
  return { agent, core, store };
}

const NO_EXECUTING: ReadonlySet<string> = new Set();

export function AppProviders({ app, children }: { app: App; children: ReactNode }) {
  return (
    <CopilotKitContext.Provider value={{ copilotkit: app.core, executingToolCallIds: NO_EXECUTING }}>
      <StoreContext.Provider value={app.store}>{children}</StoreContext.Provider>
    </CopilotKitContext.Provider>
  );
}
