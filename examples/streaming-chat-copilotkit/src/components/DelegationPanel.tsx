import { effectivePhase } from "../model/reducer";
import type { DelegationView, RunView } from "../model/types";
import { ArtifactList, fromViews } from "./ArtifactList";
import { InputAnswer } from "./InputAnswer";
import { StatusBadge } from "./StatusBadge";

/** The nested, live view of one remote subagent. */
export function DelegationPanel({ run, d, unclaimed = false }: { run: RunView; d: DelegationView; unclaimed?: boolean }) {
  const phase = effectivePhase(run, d);
  const name = d.agentName || d.agentKey || "Remote agent";
  const text = d.messages.map((m) => m.text).filter(Boolean).join("\n\n");
  const streaming = d.messages.some((m) => m.open) && !d.terminal;
  const statusLine = phase === d.phase ? d.statusLine : phase;
  return (
    <section
      className={`subagent subagent-${phase}`}
      data-testid="subagent-panel"
      data-delegation-id={d.delegationId}
      data-phase={phase}
      aria-label={`Remote subagent ${name}`}
    >
      <header className="subagent-head">
        <span className="subagent-kicker">{unclaimed ? "Remote subagent (not yet linked to a tool call)" : "Remote subagent"}</span>
        <span className="subagent-name" data-testid="subagent-name">
          {name}
        </span>
        {d.protocol && <span className="chip">{d.protocol.toUpperCase()}</span>}
        <StatusBadge status={phase} testId="subagent-badge" />
      </header>
      <p className="subagent-status" data-testid="subagent-status" aria-live="polite">
        {statusLine}
      </p>
      {text && (
        <div className="subagent-text" data-testid="subagent-text" aria-live="polite">
          {text}
          {streaming && <span className="caret" aria-hidden="true" />}
        </div>
      )}
      <ArtifactList items={fromViews(d.artifacts)} label={`Artifacts from ${name}`} />
      {phase === "input_required" && (
        <InputAnswer runId={run.runId} delegationId={d.delegationId} prompt={d.inputPrompt ?? "The agent needs more input."} />
      )}
      {d.error && (
        <p className="subagent-error" data-testid="subagent-error" role="status">
          {d.error.code && <code>{d.error.code}</code>} {d.error.message}
          {d.error.retryable ? " (retryable)" : ""}
        </p>
      )}
      {(d.remoteTaskId || d.remoteContextId) && (
        <p className="ids muted">
          {d.remoteTaskId && <span>task {d.remoteTaskId}</span>}
          {d.remoteContextId && <span>context {d.remoteContextId}</span>}
          <span>delegation {d.delegationId}</span>
        </p>
      )}
    </section>
  );
}
