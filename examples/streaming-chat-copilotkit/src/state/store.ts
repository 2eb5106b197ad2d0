// ChatStore holds the view state (the pure reducer's output), persists it,
// and drives runs through CopilotKit: sending a message adds it to the
// registered HostAgent and asks CopilotKit's core to run that agent; stopping,
// answering a subagent and resuming after a reload talk to the host's routes.

import type { Message } from "@ag-ui/client";
import { HostAgent, HostHttpError } from "../agent/HostAgent";
import { cancelUrl, inputUrl } from "../model/links";
import { LOGOUT_URL } from "../model/session";
import { clear, load, loadResume, save } from "../model/persist";
import { activeRun, initialState, reduce } from "../model/reducer";
import type { Action, ChatState, RunView } from "../model/types";

type Listener = () => void;

/** What the store needs from CopilotKit's core: running the registered agent. */
export interface AgentRunner {
  runAgent(params: { agent: HostAgent }): Promise<unknown>;
}

export interface StoreOptions {
  /** Re-attach attempts after a dropped stream before the run counts as disconnected. */
  maxReattach?: number;
  /** Delay before re-attach attempt n is 'reattachDelayMs * n'. */
  reattachDelayMs?: number;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

export class ChatStore {
  private state: ChatState;
  private listeners = new Set<Listener>();
  private saveTimer: ReturnType<typeof setTimeout> | undefined;
  private busy = false;
  private reconnecting = false;
  private leaving = false;
  private signedOut = false;
  private lastError: unknown;
  private fatal = false;
  private readonly maxReattach: number;
  private readonly reattachDelayMs: number;
  private threadIdValue: string;

  constructor(
    readonly agent: HostAgent,
    private readonly core: AgentRunner,
    private readonly storage: Storage | undefined,
    opts: StoreOptions = {},
  ) {
    this.maxReattach = opts.maxReattach ?? 3;
    this.reattachDelayMs = opts.reattachDelayMs ?? 300;
    const saved = load(storage);
    this.state = saved?.state ?? initialState;
    this.threadIdValue = saved?.threadId ?? newId();
    agent.threadId = this.threadIdValue;
    agent.setMessages(toAguiMessages(this.state));
    agent.onFrame = (frame) => this.dispatch({ kind: "frame", frame });
  }

  /** The conversation's thread id: the host's session key. */
  get threadId(): string {
    return this.threadIdValue;
  }

  getState = (): ChatState => this.state;

  subscribe = (l: Listener): (() => void) => {
    this.listeners.add(l);
    return () => this.listeners.delete(l);
  };

  dispatch(action: Action): void {
    const next = reduce(this.state, action);
    if (next === this.state) return;
    const wasActive = activeRun(this.state) !== undefined;
    this.state = next;
    // Run boundaries are saved at once, streaming updates coalesced.
    if (wasActive !== (activeRun(next) !== undefined) || action.kind !== "frame") this.flush();
    else this.scheduleSave();
    this.emit();
  }

  /** Saves now (also called on pagehide). */
  flush = (): void => {
    if (this.saveTimer !== undefined) clearTimeout(this.saveTimer);
    this.saveTimer = undefined;
    if (this.signedOut) return;
    save(this.storage, { threadId: this.threadIdValue, state: this.state });
  };

  private scheduleSave(): void {
    if (this.saveTimer === undefined) this.saveTimer = setTimeout(this.flush, 100);
  }

  isBusy = (): boolean => this.busy || activeRun(this.state) !== undefined;

  /** Whether a dropped stream is being re-attached right now. */
  isReconnecting = (): boolean => this.reconnecting;

  /** Sends a user message and streams the parent's run. */
  async send(text: string): Promise<void> {
    const t = text.trim();
    if (!t || this.isBusy()) return;
    const id = newId();
    this.dispatch({ kind: "user", id, text: t });
    this.agent.addMessage({ id, role: "user", content: t });
    await this.drive(async () => {
      await this.core.runAgent({ agent: this.agent });
    });
  }

  /** Re-attaches to the run that was active when the page was left, if any. */
  async resume(): Promise<void> {
    const rec = loadResume(this.storage);
    if (!rec) return;
    const known = this.state.runs[rec.runId];
    if (known && known.status !== "running") return;
    await this.drive(async () => {
      await this.reattach(rec.runId, known?.lastEventId ?? rec.lastEventId);
    }, rec.runId);
  }

  /** Re-attaches to a run whose connection was lost (the Reconnect button). */
  async reconnect(runId: string): Promise<void> {
    const run = this.state.runs[runId];
    if (this.busy || !run) return;
    const before = this.state;
    this.dispatch({ kind: "reconnect", runId });
    if (this.state === before) return; // not the newest run, or nothing to reconnect to
    await this.drive(async () => {
      await this.reattach(runId, run.lastEventId ?? "0");
    }, runId);
  }

  /** The page is being left (reload, navigation): save, and treat the stream's teardown as expected. */
  leave = (): void => {
    this.leaving = true;
    this.flush();
  };

  /** Asks the host to cancel the active run (cascades to its delegations). */
  async stop(): Promise<void> {
    const run = activeRun(this.state);
    if (!run) {
      this.agent.abortRun();
      return;
    }
    try {
      const res = await fetch(cancelUrl(run.runId), {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: "{}",
      });
      if (res.status === 404) {
        // The host no longer knows the run: stop listening.
        this.agent.abortRun();
        this.dispatch({ kind: "stream-ended", runId: run.runId, reason: "The host no longer knows this run.", gone: true });
      }
    } catch (err) {
      this.agent.abortRun();
      this.dispatch({ kind: "stream-ended", runId: run.runId, reason: "The host could not be reached to stop the run.", detail: errorText(err) });
    }
  }

  /**
   * Answers an input_required delegation. Once the host accepted it, the
   * answer joins the subagent's conversation; resolves to an error message
   * or undefined.
   */
  async answer(runId: string, delegationId: string, text: string): Promise<string | undefined> {
    const t = text.trim();
    if (!t) return "Type an answer first.";
    try {
      const res = await fetch(inputUrl(runId, delegationId), {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ text: t }),
      });
      if (!res.ok) {
        const body = (await res.json().catch(() => ({}))) as { error?: { message?: string } };
        return body.error?.message ?? `The host answered HTTP ${res.status}.`;
      }
    } catch {
      return "The host could not be reached.";
    }
    this.dispatch({ kind: "answer", runId, delegationId, id: newId(), text: t });
    return undefined;
  }

  /**
   * Starts a new conversation: a new thread id (so the host starts a new
   * session) and no history, in memory and in sessionStorage. No reload: a
   * pagehide flush could otherwise write the old conversation back.
   */
  reset(): void {
    if (this.isBusy()) return;
    if (this.saveTimer !== undefined) clearTimeout(this.saveTimer);
    this.saveTimer = undefined;
    clear(this.storage);
    this.threadIdValue = newId();
    this.agent.threadId = this.threadIdValue;
    this.agent.setMessages([]);
    this.lastError = undefined;
    this.dispatch({ kind: "reset" });
    this.flush();
  }

  /**
   * Signs out: the host revokes the session (POST /logout) and this tab
   * forgets the conversation, so the next person at this browser sees
   * neither. Resolves to an error message or undefined; the caller then
   * opens / (the sign-in page).
   */
  async signOut(): Promise<string | undefined> {
    try {
      const res = await fetch(LOGOUT_URL, { method: "POST" });
      if (!res.ok) return `The host answered HTTP ${res.status}.`;
    } catch {
      return "The host could not be reached.";
    }
    this.signedOut = true;
    this.leaving = true;
    this.agent.abortRun();
    clear(this.storage);
    return undefined;
  }

  /** Runs one stream to its end; a run left open is re-attached (bounded), then marked disconnected. */
  private async drive(work: () => Promise<void>, runId?: string): Promise<void> {
    this.busy = true;
    this.lastError = undefined;
    this.fatal = false;
    this.emit();
    const sub = this.agent.subscribe({
      onRunFailed: ({ error }) => this.report(error),
    });
    try {
      await this.guard(work);
      // The stream closed while its run was still open: the connection
      // dropped. Pick the run up again from its cursor.
      for (let attempt = 1; attempt <= this.maxReattach && !this.leaving && !this.fatal; attempt++) {
        const run = this.openRun(runId);
        if (!run) break;
        this.setReconnecting(true);
        await sleep(this.reattachDelayMs * attempt);
        if (this.leaving) break;
        await this.guard(() => this.reattach(run.runId, run.lastEventId ?? "0"));
      }
    } finally {
      sub.unsubscribe();
      this.busy = false;
      this.reconnecting = false;
      const run = this.openRun(runId);
      if (!this.leaving) {
        if (run) {
          const gone = this.lastError instanceof HostHttpError && this.lastError.status === 404;
          this.dispatch({
            kind: "stream-ended",
            runId: run.runId,
            reason: gone ? "The host no longer knows this run (it ended, or the host restarted)." : "Lost the connection to the host.",
            ...(this.lastError !== undefined ? { detail: errorText(this.lastError) } : {}),
            ...(gone ? { gone } : {}),
          });
        } else if (this.lastError !== undefined && !this.startedRun(runId)) {
          // Nothing started: the request itself failed (host down, refused).
          const err = this.lastError;
          this.dispatch({
            kind: "request-failed",
            id: newId(),
            message: err instanceof HostHttpError ? `The host refused the message (HTTP ${err.status}).` : "Could not reach the host.",
            detail: errorText(err),
          });
        }
      }
      this.emit();
    }
  }

  private async reattach(runId: string, lastEventId: string): Promise<void> {
    this.agent.resumeTarget = { runId, lastEventId };
    await this.agent.connectAgent({ runId });
  }

  private async guard(work: () => Promise<void>): Promise<void> {
    try {
      await work();
    } catch (err) {
      this.report(err);
    }
  }

  private openRun(runId?: string): RunView | undefined {
    const run = runId ? this.state.runs[runId] : activeRun(this.state);
    return run && run.status === "running" ? run : undefined;
  }

  /** Whether the stream being driven got as far as a RUN_STARTED. */
  private startedRun(runId?: string): boolean {
    if (runId) return true;
    const id = this.state.streamRunId;
    const last = this.state.entries.at(-1);
    return id !== undefined && last?.kind === "run" && last.runId === id;
  }

  /** Keeps the first error of a stream (CopilotKit reports one failure more than once). */
  private report(err: unknown): void {
    if (this.leaving) return;
    if (err instanceof HostHttpError && err.status >= 400 && err.status < 500) this.fatal = true;
    if (this.lastError === undefined) this.lastError = err;
  }

  private setReconnecting(v: boolean): void {
    if (this.reconnecting === v) return;
    this.reconnecting = v;
    this.emit();
  }

  private emit(): void {
    for (const l of this.listeners) l();
  }
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** The conversation as AG-UI messages (restores the agent's history after a reload). */
export function toAguiMessages(state: ChatState): Message[] {
  const out: Message[] = [];
  for (const e of state.entries) {
    if (e.kind === "user") out.push({ id: e.id, role: "user", content: e.text });
    if (e.kind !== "run") continue;
    const run = state.runs[e.runId];
    if (!run) continue;
    for (const b of run.blocks) {
      if (b.kind === "text") {
        const m = run.messages[b.id];
        if (m && m.text) out.push({ id: m.id, role: "assistant", content: m.text });
      } else if (b.kind === "tool") {
        const t = run.toolCalls[b.id];
        if (!t) continue;
        out.push({
          id: `${t.id}-call`,
          role: "assistant",
          toolCalls: [{ id: t.id, type: "function", function: { name: t.name, arguments: t.args } }],
        });
        if (t.result) out.push({ id: `${t.id}-result`, role: "tool", toolCallId: t.id, content: t.result.raw });
      }
    }
  }
  return out;
}

function newId(): string {
  return typeof crypto !== "undefined" && "randomUUID" in crypto
    ? crypto.randomUUID()
    : `id-${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`;
}
