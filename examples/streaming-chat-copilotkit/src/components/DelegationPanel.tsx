import { useId, useState } from "react";
import { conciseError, effectivePhase, statusNote } from "../model/reducer";
import type { DelegationView, RemoteMessage, RunView } from "../model/types";
import { ArtifactList, fromViews } from "./ArtifactList";
import { ErrorLine } from "./ErrorLine";
import { InputAnswer } from "./InputAnswer";
import { Markdown } from "./Markdown";
import { StatusBadge } from "./StatusBadge";

/**
 * The nested, live view of one remote subagent: its conversation (text,
 * questions, the user's answers), artifacts, answer box and failure. It
 * collapses to its header once it completed (the toggle opens it again);
 * remote ids are behind "Details".
 */
export function DelegationPanel({ run, d, unclaimed = false }: { run: RunView; d: DelegationView; unclaimed?: boolean }) {
  const phase = effectivePhase(run, d);
  const [userExpanded, setUserExpanded] = useState<boolean | undefined>(undefined);
  // Open while it works or waits for the user (a question is never hidden),
  // collapsed once completed; the toggle overrides that.
  const expanded = phase === "input_required" || (userExpanded ?? phase !== "completed");
  const bodyId = useId();
  const name = d.agentName || d.agentKey || "Remote agent";
  const note = statusNote(run, d);
  const live = run.status === "running" && !d.terminal;
  const lastOpen = live ? [...d.messages].reverse().find((m) => m.open)?.id : undefined;
  const shown = d.messages.filter((m) => m.text || m.id === lastOpen);
  const errorDetail = d.error ? conciseError(d.error).detail : undefined;
  return (
    <section
      className={`subagent subagent-${phase}`}
      data-testid="subagent-panel"
      data-delegation-id={d.delegationId}
      data-phase={phase}
      data-expanded={expanded ? "true" : "false"}
      aria-label={`Remote subagent ${name}`}
    >
      <header className="subagent-head">
        <button
          type="button"
          className="subagent-toggle"
          aria-expanded={expanded}
          aria-controls={bodyId}
          data-testid="subagent-toggle"
          onClick={() => setUserExpanded(!expanded)}
        >
          <span className="chevron" aria-hidden="true" />
          <span className="subagent-kicker">{unclaimed ? "Subagent (not yet linked)" : "Subagent"}</span>
          <span className="subagent-name" data-testid="subagent-name">
            {name}
          </span>
        </button>
        {d.protocol && <span className="chip">{d.protocol.toUpperCase()}</span>}
        <StatusBadge status={phase} testId="subagent-badge" />
      </header>
      {!expanded && <p className="subagent-collapsed muted">{collapsedSummary(d)}</p>}
      <div id={bodyId} className="subagent-body" hidden={!expanded}>
        {note && (
          <p className="subagent-status" data-testid="subagent-status" aria-live="polite">
            {note}
          </p>
        )}
        {shown.length > 0 && (
          <div className="subagent-text" data-testid="subagent-text">
            {shown.map((m) => (
              <ConversationItem key={m.id} m={m} streaming={m.id === lastOpen} />
            ))}
          </div>
        )}
        {phase === "input_required" && <InputAnswer runId={run.runId} delegationId={d.delegationId} agentName={name} />}
        <ArtifactList items={fromViews(d.artifacts)} label={`Artifacts from ${name}`} />
        {d.error && <ErrorLine error={d.error} testId="subagent-error" withDetails={false} />}
        <details className="ids" data-testid="subagent-details">
          <summary>Details</summary>
          <dl>
            {d.agentKey && <Row k="agent" v={d.agentKey} />}
            {d.protocol && <Row k="protocol" v={d.protocol} />}
            <Row k="delegation" v={d.delegationId} />
            {d.remoteTaskId && <Row k="remote task" v={d.remoteTaskId} />}
            {d.remoteContextId && <Row k="remote context" v={d.remoteContextId} />}
            {errorDetail && <Row k="error" v={errorDetail} />}
          </dl>
        </details>
      </div>
    </section>
  );
}

function ConversationItem({ m, streaming }: { m: RemoteMessage; streaming: boolean }) {
  switch (m.role) {
    case "question":
      return (
        <div className="sub-question" data-testid="subagent-question">
          <span className="sub-label">Question</span>
          <Markdown text={m.text} />
        </div>
      );
    case "answer":
      return (
        <div className="sub-answer" data-testid="subagent-answer">
          <span className="sub-label">Your answer</span>
          <p>{m.text}</p>
        </div>
      );
    default:
      return <Markdown text={m.text} streaming={streaming} className="sub-message" />;
  }
}

function Row({ k, v }: { k: string; v: string }) {
  return (
    <>
      <dt>{k}</dt>
      <dd>
        <code>{v}</code>
      </dd>
    </>
  );
}

function collapsedSummary(d: DelegationView): string {
  const n = d.messages.filter((m) => (m.role ?? "agent") === "agent" && m.text).length;
  const parts = [`${n} message${n === 1 ? "" : "s"}`];
  if (d.artifacts.length > 0) parts.push(`${d.artifacts.length} artifact${d.artifacts.length === 1 ? "" : "s"}`);
  const answers = d.messages.filter((m) => m.role === "answer").length;
  if (answers > 0) parts.push(`${answers} answer${answers === 1 ? "" : "s"} from you`);
  return parts.join(" · ");
}
