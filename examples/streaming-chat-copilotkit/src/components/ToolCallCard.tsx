import { useContext, useLayoutEffect, useRef, useState } from "react";
import { artifactHref, parseToolResult } from "../model/links";
import { delegationsOf, toolCardStatus } from "../model/reducer";
import type { DelegationResult, RunView, ToolCallView } from "../model/types";
import { RunIdContext, useRun } from "../state/context";
import { ArtifactList, type ArtifactItem } from "./ArtifactList";
import { DelegationPanel } from "./DelegationPanel";
import { ErrorLine } from "./ErrorLine";
import { Markdown } from "./Markdown";
import { StatusBadge } from "./StatusBadge";

/** What CopilotKit passes to a tool-call renderer. */
export interface ToolRenderProps {
  name: string;
  toolCallId: string;
  args: unknown;
  status: string;
  result: string | undefined;
}

/**
 * The CopilotKit tool-call renderer ("*"): a delegate_to_* call becomes a card
 * with its live subagent panels and, once it arrives, the structured result;
 * any other tool gets a compact card.
 */
export function ToolCallCard(props: ToolRenderProps) {
  const runId = useContext(RunIdContext);
  const run = useRun(runId);
  const tool = run?.toolCalls[props.toolCallId];
  if (!run || !tool) return null;
  return tool.isDelegation ? <DelegationCard run={run} tool={tool} props={props} /> : <PlainToolCard run={run} tool={tool} props={props} />;
}

function DelegationCard({ run, tool, props }: { run: RunView; tool: ToolCallView; props: ToolRenderProps }) {
  const status = toolCardStatus(run, tool);
  const args = isObj(props.args) ? props.args : {};
  const agent = str(args.agent) || shortcutAgent(props.name);
  const objective = str(args.objective);
  const delegations = delegationsOf(run, tool.id);
  const result = props.result !== undefined ? parseToolResult(props.result) : tool.result;
  // A failure already shown by its subagent panel is not repeated in the result.
  const errorShown = delegations.some((d) => d.error !== undefined);
  return (
    <article className="tool-card" data-testid="tool-card" data-tool-name={props.name} data-status={status} aria-label={`Tool call ${props.name}`}>
      <header className="tool-head">
        <span className="tool-kicker">Tool</span>
        <code className="tool-name">{props.name}</code>
        {agent && <span className="chip">{agent}</span>}
        <StatusBadge status={status} testId="tool-badge" />
      </header>
      {objective && (
        <p className="tool-objective" title={objective}>
          <span className="tool-kicker">Task</span> {objective}
        </p>
      )}
      {delegations.length > 0 ? (
        <div className={`subagents ${delegations.length > 1 ? "subagents-many" : ""}`}>
          {delegations.map((d) => (
            <DelegationPanel key={d.delegationId} run={run} d={d} />
          ))}
        </div>
      ) : (
        status === "running" && <p className="muted waiting">Waiting for the remote agent…</p>
      )}
      {result && <ResultSection runId={run.runId} raw={result.raw} parsed={result.parsed} showError={!errorShown} />}
    </article>
  );
}

function ResultSection({ runId, raw, parsed, showError }: { runId: string; raw: string; parsed: DelegationResult | undefined; showError: boolean }) {
  const items: ArtifactItem[] = (parsed?.artifacts ?? []).map((a, i) => ({
    key: a.id ?? `${i}`,
    name: a.name ?? a.id ?? "artifact",
    mimeType: a.mime_type,
    href: artifactHref(runId, parsed?.delegation_id, a.id, a.uri),
  }));
  const error = parsed?.error;
  return (
    <section className="tool-result" data-testid="tool-result" data-status={parsed?.status ? String(parsed.status) : undefined} aria-label="Tool result">
      {parsed?.summary ? <ClampedSummary text={parsed.summary} /> : <span className="tool-kicker">Result returned to the parent</span>}
      {error && showError && (
        <ErrorLine
          error={{
            ...(error.code ? { code: error.code } : {}),
            ...(error.message ? { message: error.message } : {}),
            ...(error.retryable !== undefined ? { retryable: error.retryable } : {}),
            ...(error.remote_status ? { remoteStatus: error.remote_status } : {}),
          }}
        />
      )}
      <ArtifactList items={items} label="Artifacts in the result" />
      {!parsed && <pre className="raw">{raw}</pre>}
      {parsed && (
        <details className="raw-details">
          <summary>Structured result</summary>
          <pre className="raw">{JSON.stringify(parsed, null, 2)}</pre>
        </details>
      )}
    </section>
  );
}

/**
 * The result's summary, clamped to a few lines with "Show all": the parent's
 * own reply follows it, and the whole exchange (the user's message to the
 * run's end) should fit the screen.
 */
function ClampedSummary({ text }: { text: string }) {
  const box = useRef<HTMLDivElement>(null);
  const [open, setOpen] = useState(false);
  const [clipped, setClipped] = useState(false);
  useLayoutEffect(() => {
    const el = box.current;
    if (!el) return;
    const check = () => setClipped(el.scrollHeight > el.clientHeight + 1);
    check();
    const ro = new ResizeObserver(check);
    ro.observe(el);
    return () => ro.disconnect();
  }, [text, open]);
  return (
    <>
      <div className="summary-head">
        <span className="tool-kicker">Result returned to the parent</span>
        {(clipped || open) && (
          <button type="button" className="btn-inline" data-testid="summary-toggle" aria-expanded={open} onClick={() => setOpen(!open)}>
            {open ? "Show less" : "Show all"}
          </button>
        )}
      </div>
      <div ref={box} className={open ? "summary-box" : "summary-box clamped"} data-clamped={!open && clipped ? "true" : undefined}>
        <Markdown text={text} className="tool-result-summary" testId="tool-result-summary" />
      </div>
    </>
  );
}

function PlainToolCard({ run, tool, props }: { run: RunView; tool: ToolCallView; props: ToolRenderProps }) {
  const status = toolCardStatus(run, tool);
  return (
    <article className="tool-card tool-card-plain" data-testid="tool-card" data-tool-name={props.name} data-status={status} aria-label={`Tool call ${props.name}`}>
      <header className="tool-head">
        <span className="tool-kicker">Tool</span>
        <code className="tool-name">{props.name || "tool"}</code>
        <StatusBadge status={status} testId="tool-badge" />
      </header>
      {tool.args && <pre className="raw">{tool.args}</pre>}
      {props.result !== undefined && (
        <section className="tool-result" data-testid="tool-result" aria-label="Tool result">
          <pre className="raw">{props.result}</pre>
        </section>
      )}
    </article>
  );
}

function shortcutAgent(name: string): string {
  const m = /delegate_to_([A-Za-z0-9_-]+?)(?:_agent)?$/.exec(name);
  return m && m[1] !== "agent" ? (m[1] ?? "") : "";
}

function isObj(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function str(v: unknown): string {
  return typeof v === "string" ? v : "";
}
