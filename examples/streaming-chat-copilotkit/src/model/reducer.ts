// The pure event reducer: (state, action) -> state. It turns the host's AG-UI
// stream (parent events plus CUSTOM subagent.* events, docs/design.md#subagent-wire-shape)
// into the view model the UI renders. It never mutates its input, so React can
// compare references, and it is idempotent over replays:
//
//   - frames with an id at or below the run's cursor are ignored (a resumed
//     stream or a duplicated frame never doubles text);
//   - frames without an id (the host's re-opening of open messages, tool calls
//     and subagents on resume) only create what does not exist yet;
//   - each delegation accepts exactly one terminal event.
//
// Delegations are grouped by runId + parentToolCallId + delegationId. One whose
// parentToolCallId is empty (or names a tool call not seen yet) is "unclaimed"
// and shown under the run until an event carries its parentToolCallId.

import { artifactHref, isDelegationTool, parseToolResult } from "./links";
import type {
  Action,
  AguiEvent,
  ArtifactView,
  ChatState,
  DelegationView,
  ErrorInfo,
  Frame,
  RunView,
  ToolCallView,
} from "./types";

export const initialState: ChatState = { entries: [], runs: {} };

export function reduceAll(actions: readonly Action[], from: ChatState = initialState): ChatState {
  let s = from;
  for (const a of actions) s = reduce(s, a);
  return s;
}

export function reduce(state: ChatState, action: Action): ChatState {
  switch (action.kind) {
    case "user":
      if (state.entries.some((e) => e.kind === "user" && e.id === action.id)) return state;
      return { ...state, entries: [...state.entries, { kind: "user", id: action.id, text: action.text }] };
    case "request-failed":
      if (state.entries.some((e) => e.kind === "error" && e.id === action.id)) return state;
      return { ...state, entries: [...state.entries, { kind: "error", id: action.id, message: action.message }] };
    case "stream-ended": {
      const runId = action.runId ?? state.streamRunId;
      const run = runId ? state.runs[runId] : undefined;
      if (!run || run.status !== "running") return state;
      const r: RunView = { ...run, status: "interrupted" };
      pushNotice(r, "warning", action.reason);
      return withRun(state, r);
    }
    case "frame":
      return applyFrame(state, action.frame);
  }
}

function withRun(state: ChatState, run: RunView): ChatState {
  return { ...state, runs: { ...state.runs, [run.runId]: run } };
}

function newRun(runId: string, threadId: string | undefined): RunView {
  return {
    runId,
    ...(threadId ? { threadId } : {}),
    status: "running",
    blocks: [],
    messages: {},
    toolCalls: {},
    delegations: {},
    counter: 0,
  };
}

/** Whether a frame id is at or below the cursor (already applied). */
export function isSeen(cursor: string | undefined, id: string): boolean {
  if (cursor === undefined) return false;
  const a = Number(id);
  const b = Number(cursor);
  if (Number.isFinite(a) && Number.isFinite(b) && id.trim() !== "" && cursor.trim() !== "") return a <= b;
  return id === cursor;
}

function applyFrame(state: ChatState, frame: Frame): ChatState {
  const ev = frame.event;
  if (ev.type === "RUN_STARTED") {
    const runId = str(ev.runId) || state.streamRunId || "run";
    let s: ChatState = state.streamRunId === runId ? state : { ...state, streamRunId: runId };
    let run = s.runs[runId];
    if (!run) {
      run = newRun(runId, str(ev.threadId) || undefined);
      s = { ...s, entries: [...s.entries, { kind: "run", runId }] };
    } else if (frame.id !== undefined && isSeen(run.lastEventId, frame.id)) {
      return s;
    }
    if (frame.id !== undefined) run = { ...run, lastEventId: frame.id };
    return s.runs[runId] === run ? s : withRun(s, run);
  }
  const runId = state.streamRunId;
  const run = runId ? state.runs[runId] : undefined;
  if (!run) return state; // nothing before RUN_STARTED
  if (frame.id !== undefined && isSeen(run.lastEventId, frame.id)) return state;
  const r: RunView = { ...run };
  applyEvent(r, ev, frame.id === undefined);
  if (frame.id !== undefined) r.lastEventId = frame.id;
  return withRun(state, r);
}

// ---- parent events -------------------------------------------------------

function applyEvent(r: RunView, ev: AguiEvent, reopen: boolean): void {
  switch (ev.type) {
    case "TEXT_MESSAGE_START": {
      const id = str(ev.messageId) || nextId(r, "m");
      if (!r.messages[id]) {
        r.messages = { ...r.messages, [id]: { id, role: str(ev.role) || "assistant", text: "", open: true } };
        r.blocks = [...r.blocks, { kind: "text", id }];
      }
      r.openMessageId = id;
      return;
    }
    case "TEXT_MESSAGE_CONTENT":
    case "TEXT_MESSAGE_CHUNK": {
      const id = str(ev.messageId) || r.openMessageId || nextId(r, "m");
      const m = r.messages[id];
      const delta = str(ev.delta);
      if (!m) {
        r.messages = { ...r.messages, [id]: { id, role: str(ev.role) || "assistant", text: delta, open: true } };
        r.blocks = [...r.blocks, { kind: "text", id }];
        r.openMessageId = id;
      } else if (delta) {
        r.messages = { ...r.messages, [id]: { ...m, text: m.text + delta } };
      }
      return;
    }
    case "TEXT_MESSAGE_END": {
      const id = str(ev.messageId) || r.openMessageId;
      const m = id ? r.messages[id] : undefined;
      if (m && m.open) r.messages = { ...r.messages, [m.id]: { ...m, open: false } };
      if (r.openMessageId === id) delete r.openMessageId;
      return;
    }
    case "TOOL_CALL_START":
    case "TOOL_CALL_CHUNK": {
      const id = str(ev.toolCallId);
      if (!id) return;
      const existing = r.toolCalls[id];
      if (!existing) {
        const name = str(ev.toolCallName);
        setTool(r, { id, name, args: str(ev.delta), ended: false, isDelegation: isDelegationTool(name) });
        r.blocks = [...r.blocks, { kind: "tool", id }];
      } else if (ev.type === "TOOL_CALL_CHUNK" && str(ev.delta)) {
        setTool(r, { ...existing, args: existing.args + str(ev.delta) });
      }
      return;
    }
    case "TOOL_CALL_ARGS": {
      const t = r.toolCalls[str(ev.toolCallId)];
      if (t && str(ev.delta)) setTool(r, { ...t, args: t.args + str(ev.delta) });
      return;
    }
    case "TOOL_CALL_END": {
      const t = r.toolCalls[str(ev.toolCallId)];
      if (t && !t.ended) setTool(r, { ...t, ended: true });
      return;
    }
    case "TOOL_CALL_RESULT": {
      const id = str(ev.toolCallId);
      if (!id) return;
      let t = r.toolCalls[id];
      if (!t) {
        t = { id, name: "", args: "", ended: true, isDelegation: false };
        r.blocks = [...r.blocks, { kind: "tool", id }];
      }
      const result = parseToolResult(ev.content);
      const did = result.parsed?.delegation_id;
      setTool(r, { ...t, ended: true, result, isDelegation: t.isDelegation || typeof did === "string" });
      // The result names its delegation: a still-unclaimed one belongs here.
      if (typeof did === "string" && r.delegations[did] && !r.delegations[did].parentToolCallId) {
        setDelegation(r, { ...r.delegations[did], parentToolCallId: id });
      }
      return;
    }
    case "RUN_FINISHED":
      if (r.status === "running") r.status = "finished";
      closeMessages(r);
      return;
    case "RUN_ERROR": {
      const code = str(ev.code);
      if (r.status === "running" || r.status === "interrupted") {
        r.status = code === "cancelled" ? "cancelled" : "error";
        r.error = { ...(code ? { code } : {}), message: str(ev.message) || code || "the run failed" };
      }
      closeMessages(r);
      return;
    }
    case "CUSTOM":
      applyCustom(r, str(ev.name), ev.value, reopen);
      return;
    case "SUBAGENT_STARTED":
      applySubagent(r, "started", {
        delegationId: ev.subagentRunId,
        agentName: ev.name,
        parentToolCallId: ev.parentToolCallId,
      });
      return;
    case "SUBAGENT_FINISHED":
      applySubagent(r, "finished", { delegationId: ev.subagentRunId, status: "completed" });
      return;
    case "SUBAGENT_ERROR":
      applySubagent(r, "failed", {
        delegationId: ev.subagentRunId,
        error: { code: ev.code, message: ev.message },
      });
      return;
    default:
      return; // state, steps, reasoning, raw: not rendered
  }
}

function applyCustom(r: RunView, name: string, value: unknown, _reopen: boolean): void {
  if (name.startsWith("subagent.")) {
    applySubagent(r, name.slice("subagent.".length), isObj(value) ? value : {});
    return;
  }
  const v = isObj(value) ? value : {};
  if (name === "stream.replay_gap") {
    const from = num(v.from);
    const to = num(v.to);
    const span = from !== undefined && to !== undefined ? ` (events ${from}–${to})` : "";
    pushNotice(r, "warning", `Some progress was lost while reconnecting${span}; the view continues from the live stream.`);
  } else if (name === "stream.dropped") {
    const n = num(v.dropped);
    pushNotice(r, "info", `${n ?? "Some"} subagent text updates were skipped to keep up.`);
  }
}

// ---- subagent events -----------------------------------------------------

function applySubagent(r: RunView, kind: string, v: Record<string, unknown>): void {
  const id = str(v.delegationId);
  if (!id) return;
  const prev = r.delegations[id];
  const d: DelegationView = prev
    ? { ...prev }
    : {
        delegationId: id,
        runId: r.runId,
        parentToolCallId: "",
        phase: "starting",
        statusLine: "starting",
        messages: [],
        artifacts: [],
        terminal: false,
        order: Object.keys(r.delegations).length,
      };
  if (!prev) r.blocks = [...r.blocks, { kind: "delegation", id }];
  for (const k of ["agentKey", "agentName", "protocol", "remoteTaskId", "remoteContextId"] as const) {
    const s = str(v[k]);
    if (s) d[k] = s;
  }
  const parent = str(v.parentToolCallId);
  if (parent && !d.parentToolCallId) d.parentToolCallId = parent;

  if (!d.terminal) applyKind(r, d, kind, v);
  setDelegation(r, d);
}

function applyKind(r: RunView, d: DelegationView, kind: string, v: Record<string, unknown>): void {
  switch (kind) {
    case "started":
      return; // created above; a re-opened started changes nothing
    case "status": {
      const s = normStatus(str(v.status));
      const text = str(v.text);
      if (s === "correlated" || s === "") return;
      if (s === "input_required") {
        d.phase = "input_required";
        d.inputPrompt = text || d.inputPrompt || "The agent needs more input.";
        d.statusLine = "input required";
        return;
      }
      if (d.phase === "input_required") delete d.inputPrompt;
      if (d.phase === "starting" || d.phase === "input_required") d.phase = "working";
      d.statusLine = text ? `${human(s)}: ${text}` : human(s);
      return;
    }
    case "text.start": {
      const mid = str(v.messageId) || `${d.delegationId}#${d.messages.length}`;
      if (!d.messages.some((m) => m.id === mid)) d.messages = [...d.messages, { id: mid, text: "", open: true }];
      if (d.phase === "starting") d.phase = "working";
      return;
    }
    case "text.delta": {
      const delta = str(v.delta);
      let mid = str(v.messageId);
      if (!mid) mid = [...d.messages].reverse().find((m) => m.open)?.id ?? `${d.delegationId}#${d.messages.length}`;
      const i = d.messages.findIndex((m) => m.id === mid);
      if (i < 0) d.messages = [...d.messages, { id: mid, text: delta, open: true }];
      else if (delta) d.messages = d.messages.map((m, j) => (j === i ? { ...m, text: m.text + delta } : m));
      if (d.phase === "starting") d.phase = "working";
      return;
    }
    case "text.end": {
      // The host may send the message's full text with its end: it is
      // authoritative (deltas can be coalesced or dropped for slow clients).
      const mid = str(v.messageId);
      const full = typeof v.text === "string" ? v.text : undefined;
      if (mid && full !== undefined && !d.messages.some((m) => m.id === mid)) {
        d.messages = [...d.messages, { id: mid, text: full, open: false }];
        return;
      }
      d.messages = d.messages.map((m) =>
        !mid ? (m.open ? { ...m, open: false } : m) : m.id === mid ? { ...m, open: false, text: full ?? m.text } : m,
      );
      return;
    }
    case "artifact": {
      const a = isObj(v.artifact) ? v.artifact : {};
      const aid = str(a.id) || str(a.name);
      if (!aid) return;
      const view: ArtifactView = {
        id: aid,
        name: str(a.name) || aid,
        ...(str(a.mimeType) ? { mimeType: str(a.mimeType) } : {}),
        ...(num(a.sizeBytes) !== undefined ? { sizeBytes: num(a.sizeBytes) } : {}),
      };
      const err = errorInfo(a.error);
      if (err) view.error = err;
      else {
        const href = artifactHref(r.runId, d.delegationId, str(a.id) || undefined, str(a.uri) || undefined);
        if (href) view.href = href;
      }
      const i = d.artifacts.findIndex((x) => x.id === aid);
      d.artifacts = i < 0 ? [...d.artifacts, view] : d.artifacts.map((x, j) => (j === i ? view : x));
      return;
    }
    case "input_required":
      d.phase = "input_required";
      d.inputPrompt = str(v.text) || str(v.status) || d.inputPrompt || "The agent needs more input.";
      d.statusLine = "input required";
      return;
    case "finished":
      terminate(d, "completed", "completed");
      return;
    case "failed": {
      const e = errorInfo(v.error) ?? { message: str(v.text) || "the remote agent failed" };
      d.error = e;
      terminate(d, "failed", `failed: ${e.message ?? e.code ?? "error"}`);
      return;
    }
    case "cancelled":
      terminate(d, "cancelled", "cancelled");
      return;
    default:
      return; // unknown subagent kinds are ignored
  }
}

function terminate(d: DelegationView, phase: DelegationView["phase"], line: string): void {
  d.phase = phase;
  d.statusLine = line;
  d.terminal = true;
  delete d.inputPrompt;
  d.messages = d.messages.map((m) => (m.open ? { ...m, open: false } : m));
}

// ---- selectors ------------------------------------------------------------

/** The delegations shown inside a tool call's card, in order of appearance. */
export function delegationsOf(run: RunView, toolCallId: string): DelegationView[] {
  return Object.values(run.delegations)
    .filter((d) => d.parentToolCallId === toolCallId)
    .sort((a, b) => a.order - b.order);
}

/** Whether a delegation has no tool card to live in (yet). */
export function isUnclaimed(run: RunView, d: DelegationView): boolean {
  return !d.parentToolCallId || !run.toolCalls[d.parentToolCallId];
}

/** The state a delegation is shown in, given how its run ended. */
export function effectivePhase(run: RunView, d: DelegationView): DelegationView["phase"] {
  if (d.terminal || run.status === "running") return d.phase;
  return run.status === "cancelled" ? "cancelled" : "failed";
}

export type ToolCardStatus = "running" | "completed" | "failed" | "cancelled";

export function toolCardStatus(run: RunView, t: ToolCallView): ToolCardStatus {
  if (t.result) {
    const s = normStatus(String(t.result.parsed?.status ?? ""));
    // A cancelled delegation also carries an error (code cancelled or
    // cancel_pending): its status decides.
    if (s === "cancelled" || s === "canceled") return "cancelled";
    if (s === "failed" || s === "rejected" || t.result.parsed?.error) return "failed";
    if (s) return "completed";
    // No structured status (e.g. "tool call cancelled"): the run tells.
    if (run.status === "cancelled") return "cancelled";
    if (run.status === "error") return "failed";
    return "completed";
  }
  if (run.status === "running") return "running";
  return run.status === "cancelled" ? "cancelled" : "failed";
}

/** The run that is still streaming, if any (the last one). */
export function activeRun(state: ChatState): RunView | undefined {
  for (let i = state.entries.length - 1; i >= 0; i--) {
    const e = state.entries[i];
    if (e && e.kind === "run") {
      const run = state.runs[e.runId];
      return run && run.status === "running" ? run : undefined;
    }
  }
  return undefined;
}

// ---- helpers ----------------------------------------------------------------

function setTool(r: RunView, t: ToolCallView): void {
  r.toolCalls = { ...r.toolCalls, [t.id]: t };
}

function setDelegation(r: RunView, d: DelegationView): void {
  r.delegations = { ...r.delegations, [d.delegationId]: d };
}

function closeMessages(r: RunView): void {
  if (Object.values(r.messages).some((m) => m.open)) {
    const next: RunView["messages"] = {};
    for (const [k, m] of Object.entries(r.messages)) next[k] = m.open ? { ...m, open: false } : m;
    r.messages = next;
  }
  delete r.openMessageId;
}

function pushNotice(r: RunView, level: "info" | "warning" | "error", text: string): void {
  r.blocks = [...r.blocks, { kind: "notice", id: nextId(r, "n"), level, text }];
}

function nextId(r: RunView, prefix: string): string {
  r.counter += 1;
  return `${r.runId}#${prefix}${r.counter}`;
}

function normStatus(s: string): string {
  return s
    .trim()
    .toLowerCase()
    .replace(/^task_state_/, "")
    .replace(/-/g, "_");
}

function human(s: string): string {
  return s.replace(/_/g, " ");
}

function errorInfo(v: unknown): ErrorInfo | undefined {
  if (!isObj(v)) return undefined;
  const e: ErrorInfo = {};
  if (str(v.code)) e.code = str(v.code);
  if (str(v.message)) e.message = str(v.message);
  if (typeof v.retryable === "boolean") e.retryable = v.retryable;
  const rs = str(v.remoteStatus) || str(v.remote_status);
  if (rs) e.remoteStatus = rs;
  return Object.keys(e).length > 0 ? e : undefined;
}

function isObj(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function str(v: unknown): string {
  return typeof v === "string" ? v : "";
}

function num(v: unknown): number | undefined {
  return typeof v === "number" && Number.isFinite(v) ? v : undefined;
}
