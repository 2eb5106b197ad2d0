// ChatStore holds the view state (the pure reducer's output), persists it,
// and drives runs through CopilotKit: sending a message adds it to the
// registered HostAgent and asks CopilotKit's core to run that agent; stopping,
// answering a subagent and resuming after a reload talk to the host's routes.

import type { Message } from "@ag-ui/client";
import type { CopilotKitCoreReact } from "@copilotkit/react-core/v2/context";
import { HostAgent, HostHttpError } from "../agent/HostAgent";
import { cancelUrl, inputUrl } from "../model/links";
import { clear, load, loadResume, save } from "../model/persist";
import { activeRun, initialState, reduce } from "../model/reducer";
import type { Action, ChatState, RunView } from "../model/types";

type Listener = () => void;

const MAX_REATTACH = 3;

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

export class ChatStore {
  private state: ChatState;
  private listeners = new Set<Listener>();
  private saveTimer: ReturnType<typeof setTimeout> | undefined;
  private busy = false;
  private leaving = false;
  private lastError: string | undefined;
  private fatal = false;
  readonly threadId: string;

  constructor(
    readonly agent: HostAgent,
    private readonly core: CopilotKitCoreReact,
    private readonly storage: Storage | undefined,
  ) {
    const saved = load(storage);
    this.state = saved?.state ?? initialState;
    this.threadId = saved?.threadId ?? newId();
    agent.threadId = this.threadId;
    agent.setMessages(toAguiMessages(this.state));
    agent.onFrame = (frame) => this.dispatch({ kind: "frame", frame });
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
    for (const l of this.listeners) l();
  }

  /** Saves now (also called on pagehide). */
  flush = (): void => {
    if (this.saveTimer !== undefined) clearTimeout(this.saveTimer);
    this.saveTimer = undefined;
    save(this.storage, { threadId: this.threadId, state: this.state });
  };

  private scheduleSave(): void {
    if (this.saveTimer === undefined) this.saveTimer = setTimeout(this.flush, 100);
  }

  isBusy(): boolean {
    return this.busy || activeRun(this.state) !== undefined;
  }

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
      const res = await fetch(cancelUrl(run.runId), { method: "POST" });
      if (res.status === 404) {
        // The host no longer knows the run: stop listening.
        this.agent.abortRun();
        this.dispatch({ kind: "stream-ended", runId: run.runId, reason: "The run had already ended on the host." });
      }
    } catch {
      this.agent.abortRun();
      this.dispatch({ kind: "stream-ended", runId: run.runId, reason: "Stopped: the host could not be reached." });
    }
  }

  /** Answers an input_required delegation; resolves to an error message or undefined. */
  async answer(runId: string, delegationId: string, text: string): Promise<string | undefined> {
    try {
      const res = await fetch(inputUrl(runId, delegationId), {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ text }),
      });
      if (res.ok) return undefined;
      const body = (await res.json().catch(() => ({}))) as { error?: { message?: string } };
      return body.error?.message ?? `The host answered HTTP ${res.status}.`;
    } catch {
      return "The host could not be reached.";
    }
  }

  /** Starts a new conversation. */
  reset(): void {
    if (this.isBusy()) return;
    clear(this.storage);
    location.reload();
  }

  /** Runs one stream to its end; a run left open is re-attached (bounded), then marked interrupted. */
  private async drive(work: () => Promise<void>, runId?: string): Promise<void> {
    this.busy = true;
    this.lastError = undefined;
    this.fatal = false;
    this.emitOnly();
    const sub = this.agent.subscribe({
      onRunFailed: ({ error }) => this.report(error),
    });
    try {
      await this.guard(work);
      // The stream closed while its run was still open: the connection
      // dropped. Pick the run up again from its cursor.
      for (let attempt = 1; attempt <= MAX_REATTACH && !this.leaving && !this.fatal; attempt++) {
        const run = this.openRun(runId);
        if (!run) break;
        await sleep(300 * attempt);
        if (this.leaving) break;
        await this.guard(() => this.reattach(run.runId, run.lastEventId ?? "0"));
      }
    } finally {
      sub.unsubscribe();
      this.busy = false;
      const run = this.openRun(runId);
      if (run && !this.leaving) {
        this.dispatch({
          kind: "stream-ended",
          runId: run.runId,
          reason: this.lastError
            ? `The connection to the run was lost: ${this.lastError}`
            : "The connection to the run ended before it finished.",
        });
      }
      this.emitOnly();
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

  private report(err: unknown): void {
    if (this.leaving) return;
    const message = err instanceof Error ? err.message : String(err);
    if (err instanceof HostHttpError && err.status >= 400 && err.status < 500) this.fatal = true;
    if (this.openRun()) {
      this.lastError = message; // reported when re-attaching gives up
    } else if (!this.lastError) {
      this.lastError = message;
      this.dispatch({ kind: "request-failed", id: newId(), message });
    }
  }

  private emitOnly(): void {
    for (const l of this.listeners) l();
  }
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
