// Helpers shared by the reducer and the components: tool names, host URLs,
// tool result parsing.

import type { DelegationResult, ToolResultView } from "./types";

/**
 * Whether a tool call is a delegation: delegate_to_agent, a named shortcut
 * such as delegate_to_research_agent, or an MCP-namespaced name such as
 * mcp__a2a-delegation__delegate_to_agent (Claude) or
 * mcp__a2a_delegation__delegate_to_agent (Codex).
 */
export function isDelegationTool(name: string): boolean {
  return /(^|__|\.)delegate_to_[A-Za-z0-9_-]+$/.test(name);
}

const enc = encodeURIComponent;

export function runEventsUrl(runId: string): string {
  return `/agui/runs/${enc(runId)}/events`;
}

export function cancelUrl(runId: string): string {
  return `/agui/runs/${enc(runId)}/cancel`;
}

export function inputUrl(runId: string, delegationId: string): string {
  return `/agui/runs/${enc(runId)}/delegations/${enc(delegationId)}/input`;
}

export function artifactUrl(runId: string, delegationId: string, artifactId: string): string {
  return `/agui/runs/${enc(runId)}/delegations/${enc(delegationId)}/artifacts/${enc(artifactId)}`;
}

/**
 * The browser URL of an artifact. A same-origin /agui/ path is used as is; a
 * host://delegations/{d}/artifacts/{a} reference, or none, is turned into the
 * host's artifact endpoint for this run. Other schemes are never linked.
 */
export function artifactHref(
  runId: string,
  delegationId: string | undefined,
  artifactId: string | undefined,
  uri: string | undefined,
): string | undefined {
  if (uri && uri.startsWith("/agui/")) return uri;
  if (uri && uri.startsWith("host://delegations/")) {
    const rest = uri.slice("host://delegations/".length);
    const at = rest.indexOf("/artifacts/");
    if (at > 0) {
      const d = decodeSafe(rest.slice(0, at));
      const a = decodeSafe(rest.slice(at + "/artifacts/".length));
      if (d && a) return artifactUrl(runId, d, a);
    }
  }
  if (delegationId && artifactId) return artifactUrl(runId, delegationId, artifactId);
  return undefined;
}

function decodeSafe(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/** Parses TOOL_CALL_RESULT content: the structured result is a JSON string. */
export function parseToolResult(content: unknown): ToolResultView {
  const raw = typeof content === "string" ? content : JSON.stringify(content ?? null);
  try {
    const v: unknown = JSON.parse(raw);
    if (v && typeof v === "object" && !Array.isArray(v)) {
      return { raw, parsed: v as DelegationResult };
    }
  } catch {
    // not JSON: shown raw
  }
  return { raw };
}

export function formatBytes(n: number | undefined): string {
  if (n === undefined || !Number.isFinite(n) || n < 0) return "";
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / (1024 * 1024)).toFixed(1)} MB`;
}
