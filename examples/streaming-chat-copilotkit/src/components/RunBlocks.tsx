import { useRenderToolCall } from "@copilotkit/react-core/v2/headless";
import { isUnclaimed } from "../model/reducer";
import type { Block, RunView } from "../model/types";
import { RunIdContext, useRun } from "../state/context";
import { DelegationPanel } from "./DelegationPanel";
import { StatusBadge } from "./StatusBadge";

/** One parent run: its text, tool calls (rendered by CopilotKit), unclaimed subagents and notices. */
export function RunBlocks({ runId }: { runId: string }) {
  const run = useRun(runId);
  const renderToolCall = useRenderToolCall();
  if (!run) return null;
  return (
    <RunIdContext.Provider value={runId}>
      <div className="run" data-testid="run" data-run-id={runId} data-status={run.status}>
        {run.blocks.map((b) => (
          <BlockView key={`${b.kind}:${b.id}`} run={run} block={b} renderToolCall={renderToolCall} />
        ))}
        {run.status === "running" && run.blocks.length === 0 && <p className="muted thinking">Parent agent is working…</p>}
        <RunFooter run={run} />
      </div>
    </RunIdContext.Provider>
  );
}

type RenderToolCall = ReturnType<typeof useRenderToolCall>;

function BlockView({ run, block, renderToolCall }: { run: RunView; block: Block; renderToolCall: RenderToolCall }) {
  switch (block.kind) {
    case "text": {
      const m = run.messages[block.id];
      if (!m || (!m.text && !m.open)) return null;
      return (
        <div className="bubble bubble-assistant" data-testid="assistant-message" data-message-id={m.id}>
          {m.text}
          {m.open && run.status === "running" && <span className="caret" aria-hidden="true" />}
        </div>
      );
    }
    case "tool": {
      const t = run.toolCalls[block.id];
      if (!t) return null;
      return (
        <div className="tool-slot">
          {renderToolCall({
            toolCall: { id: t.id, type: "function", function: { name: t.name, arguments: t.args } },
            ...(t.result ? { toolMessage: { id: `${t.id}-result`, role: "tool", toolCallId: t.id, content: t.result.raw } } : {}),
          })}
        </div>
      );
    }
    case "delegation": {
      const d = run.delegations[block.id];
      if (!d || !isUnclaimed(run, d)) return null;
      return (
        <div className="unclaimed" data-testid="unclaimed-delegation">
          <DelegationPanel run={run} d={d} unclaimed />
        </div>
      );
    }
    case "notice":
      return (
        <p className={`notice notice-${block.level}`} role={block.level === "error" ? "alert" : "status"} data-testid="run-notice">
          {block.text}
        </p>
      );
  }
}

function RunFooter({ run }: { run: RunView }) {
  if (run.status === "running") return null;
  const label =
    run.status === "finished"
      ? "Run finished"
      : run.status === "cancelled"
        ? "Run cancelled"
        : run.status === "interrupted"
          ? "Run interrupted"
          : "Run failed";
  return (
    <div className="run-footer">
      <StatusBadge status={run.status} testId="run-status" />
      <span className="muted">{label}</span>
      {run.error?.message && run.status !== "cancelled" && <span className="run-error">{run.error.message}</span>}
    </div>
  );
}
