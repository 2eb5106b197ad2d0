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
  Entry,
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
    case "request-failed": {
      if (state.entries.some((e) => e.kind === "error" && e.id === action.id)) return state;
      const entry: Entry = { kind: "error", id: action.id, message: action.message };
      if (action.detail && action.detail !== action.message) entry.detail = action.detail;
      return { ...state, entries: [...state.entries, entry] };
    }
    case "stream-ended": {
      const runId = action.runId ?? state.streamRunId;
      const run = runId ? state.runs[runId] : undefined;
      if (!run || run.status !== "running") return state;
      const connection: NonNullable<RunView["connection"]> = { reason: action.reason };
      if (action.detail && action.detail !== action.reason) connection.detail = action.detail;
      if (action.gone) connection.gone = true;
      return withRun(state, { ...run, status: "interrupted", connection });
    }
    case "reconnect": {
      // Only the newest run can stream again (it is the one a reload resumes).
      const run = lastRun(state);
      if (!run || run.runId !== action.runId || run.status !== "interrupted" || run.connection?.gone) return state;
      const { connection: _lost, ...rest } = run;
      return withRun({ ...state, streamRunId: run.runId }, { ...rest, status: "running" });
    }
    case "answer":
      return applyAnswer(state, action);
    case "reset":
      return initialState;
    case "frame":
      return applyFrame(state, action.frame);
  }
}

/**
 * The user's answer joins the delegation's conversation right after the
 * question it answers; the delegation is working again (the host forwards
 * the answer to the remote task).
 */
function applyAnswer(state: ChatState, a: Extract<Action, { kind: "answer" }>): ChatState {
  const run = state.runs[a.runId];
  const prev = run?.delegations[a.delegationId];
  if (!run || !prev || prev.messages.some((m) => m.id === a.id)) return state;
  const d: DelegationView = { ...prev };
  let at = -1;
  d.messages.forEach((m, i) => {
    if (m.role === "question") at = i;
  });
  const answer = { id: a.id, text: a.text, open: false, role: "answer" as const };
  d.messages = at < 0 ? [...d.messages, answer] : [...d.messages.slice(0, at + 1), answer, ...d.messages.slice(at + 1)];
  if (!d.terminal && d.phase === "input_required") {
    d.phase = "working";
    d.status = "input_provided";
    d.statusText = "Answer sent; waiting for the agent.";
    delete d.inputPrompt;
  }
  const r: RunView = { ...run };
  setDelegation(r, d);
  return withRun(state, r);
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
        status: "starting",
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
        askQuestion(d, text);
        return;
      }
      if (d.phase === "input_required") delete d.inputPrompt;
      if (d.phase === "starting" || d.phase === "input_required") d.phase = "working";
      d.status = s;
      if (text) d.statusText = text;
      else delete d.statusText;
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
      askQuestion(d, str(v.text));
      return;
    case "finished":
      terminate(d, "completed");
      return;
    case "failed": {
      d.error = errorInfo(v.error) ?? { message: str(v.text) || "The remote agent failed." };
      terminate(d, "failed");
      return;
    }
    case "cancelled":
      terminate(d, "cancelled");
      return;
    default:
      return; // unknown subagent kinds are ignored
  }
}

/**
 * input_required: the question becomes part of the conversation. Remote
 * agents usually also send it as their last message (A2A: the status
 * message): that message is marked as the question instead of repeating it.
 */
function askQuestion(d: DelegationView, text: string): void {
  const q = text.trim() || d.inputPrompt || "The agent needs more input.";
  d.phase = "input_required";
  d.status = "input_required";
  delete d.statusText;
  d.inputPrompt = q;
  const i = d.messages.length - 1;
  const last = d.messages[i];
  if (last && last.role !== "answer" && last.text.trim() === q) {
    if (last.role !== "question") d.messages = [...d.messages.slice(0, i), { ...last, role: "question", open: false }];
    return;
  }
  d.messages = [...d.messages, { id: `${d.delegationId}#q${d.messages.length}`, text: q, open: false, role: "question" }];
}

function terminate(d: DelegationView, phase: DelegationView["phase"]): void {
  d.phase = phase;
  d.status = phase;
  delete d.statusText;
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

/**
 * The state a delegation is shown in, given how its run ended: a delegation
 * without a terminal event is cancelled with its run, failed with it, or
 * of unknown outcome ("disconnected") when the connection to the host was
 * lost (the run's footer says so; the badges say "unknown").
 */
export function effectivePhase(run: RunView, d: DelegationView): DelegationView["phase"] {
  if (d.terminal || run.status === "running") return d.phase;
  if (run.status === "interrupted") return "disconnected";
  return run.status === "cancelled" ? "cancelled" : "failed";
}

/**
 * The status line worth showing under a delegation's badge: the remote's own
 * status text, or a status the badge does not already say; nothing once the
 * delegation has ended.
 */
export function statusNote(run: RunView, d: DelegationView): string | undefined {
  const phase = effectivePhase(run, d);
  if (d.terminal || phase !== d.phase || phase === "input_required") return undefined;
  if (d.statusText) return d.statusText;
  return QUIET_STATUSES.has(d.status) ? undefined : human(d.status);
}

const QUIET_STATUSES = new Set(["starting", "submitted", "working", "input_required", "input_provided"]);

export type ToolCardStatus = "running" | "completed" | "failed" | "cancelled" | "disconnected";

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
  if (run.status === "interrupted") return "disconnected";
  return run.status === "cancelled" ? "cancelled" : "failed";
}

/** The conversation's newest run, whatever its status. */
export function lastRun(state: ChatState): RunView | undefined {
  for (let i = state.entries.length - 1; i >= 0; i--) {
    const e = state.entries[i];
    if (e && e.kind === "run") return state.runs[e.runId];
  }
  return undefined;
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

/** A delegation of the active run that waits for the user's answer. */
export interface PendingQuestion {
  runId: string;
  delegationId: string;
  agentName: string;
  question: string;
}

export function pendingQuestions(state: ChatState): PendingQuestion[] {
  const run = activeRun(state);
  if (!run) return [];
  return Object.values(run.delegations)
    .filter((d) => !d.terminal && d.phase === "input_required")
    .sort((a, b) => a.order - b.order)
    .map((d) => ({
      runId: run.runId,
      delegationId: d.delegationId,
      agentName: d.agentName || d.agentKey || "A remote agent",
      question: d.inputPrompt ?? "",
    }));
}

export type ChatPhase = "idle" | "working" | "waiting" | "reconnecting" | "offline";

/**
 * What the header says about the conversation: working while a run streams,
 * waiting when a subagent needs the user's answer, reconnecting while a
 * dropped stream is re-attached, offline when the connection to the last
 * run was lost (not when the host answered that it no longer knows the run).
 */
export function chatPhase(state: ChatState, busy: boolean, reconnecting: boolean): ChatPhase {
  if (reconnecting) return "reconnecting";
  if (pendingQuestions(state).length > 0) return "waiting";
  if (busy || activeRun(state)) return "working";
  // A run the host no longer knows (it answered 404: the run ended, or the
  // host restarted) is over: the host is there and ready for a message.
  const last = lastRun(state);
  return last?.status === "interrupted" && !last.connection?.gone ? "offline" : "idle";
}

/** An error as one short line, with the rest (full message, code, flags) as detail. */
export function conciseError(e: ErrorInfo | undefined, fallback = "Something went wrong."): { headline: string; detail?: string } {
  const message = (e?.message ?? "").trim();
  const headline = firstSentence(message) || (e?.code ? `${human(e.code)}.` : fallback);
  const extra: string[] = [];
  if (message && message !== headline) extra.push(message);
  if (e?.code) extra.push(`code: ${e.code}`);
  if (e?.remoteStatus) extra.push(`remote status: ${e.remoteStatus}`);
  if (e?.retryable) extra.push("retryable: yes");
  return extra.length > 0 ? { headline, detail: extra.join("\n") } : { headline };
}

/** The first sentence (or line) of a message, at most 160 characters. */
export function firstSentence(message: string): string {
  const line = message.trim().split("\n")[0] ?? "";
  const m = /^(.+?[.!?])(\s|$)/.exec(line);
  const s = (m?.[1] ?? line).trim();
  return s.length > 160 ? `${s.slice(0, 159).trimEnd()}…` : s;
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
