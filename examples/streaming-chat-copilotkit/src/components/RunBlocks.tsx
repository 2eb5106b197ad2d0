import { useRenderToolCall } from "@copilotkit/react-core/v2/headless";
import { isUnclaimed } from "../model/reducer";
import type { Block, RunView } from "../model/types";
import { RunIdContext, useBusy, useIsLastRun, useRun, useStore } from "../state/context";
import { DelegationPanel } from "./DelegationPanel";
import { ErrorLine } from "./ErrorLine";
import { Markdown } from "./Markdown";
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
          <Markdown text={m.text} streaming={m.open && run.status === "running"} />
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
  const store = useStore();
  const busy = useBusy();
  const isLast = useIsLastRun(run.runId);
  switch (run.status) {
    case "running":
      return null;
    case "finished":
      return (
        <div className="run-footer">
          <StatusBadge status="finished" testId="run-status" label="Run finished" />
        </div>
      );
    case "cancelled":
      return (
        <div className="run-footer">
          <StatusBadge status="cancelled" testId="run-status" label="Run cancelled" />
        </div>
      );
    case "error":
      return (
        <div className="run-footer run-footer-error">
          <StatusBadge status="error" testId="run-status" label="Run failed" />
          <ErrorLine error={run.error} testId="run-error" fallback="The run failed." />
        </div>
      );
    case "interrupted":
      if (run.connection?.gone) {
        // The host answered and no longer knows the run (it ended while
        // this page was away, or the host restarted): not a lost connection.
        return (
          <div className="run-footer" data-testid="run-gone">
            <StatusBadge status="disconnected" testId="run-status" label="Run ended on the host" />
            <div className="error-line" role="status">
              <span>
                {run.connection.reason} Its outcome is unknown; send a new message to go on.
              </span>
            </div>
          </div>
        );
      }
      return (
        <div className="run-footer run-footer-lost" data-testid="connection-lost">
          <StatusBadge status="interrupted" testId="run-status" label="Connection lost" />
          <div className="error-line" role="status">
            <span>
              {run.connection?.reason ?? "Lost the connection to the host."}
              {!run.connection?.gone && " The run may still be going on there."}
            </span>
            {run.connection?.detail && (
              <details className="error-details">
                <summary>Details</summary>
                <pre>{run.connection.detail}</pre>
              </details>
            )}
          </div>
          {!run.connection?.gone && isLast && (
            <button type="button" className="btn-ghost" data-testid="reconnect" disabled={busy} onClick={() => void store.reconnect(run.runId)}>
              Reconnect
            </button>
          )}
        </div>
      );
  }
}
