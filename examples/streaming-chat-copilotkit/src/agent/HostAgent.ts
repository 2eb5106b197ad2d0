// HostAgent is the AG-UI agent the UI registers with CopilotKit: an
// @ag-ui/client HttpAgent pointed at the host's same-origin POST /agui, whose
// transport keeps what HttpAgent's own parser drops — each frame's SSE `id:`,
// the host's resume cursor — and which can re-attach to a running run through
// AbstractAgent.connectAgent() (GET /agui/runs/{runId}/events with
// Last-Event-ID). Every decoded frame is handed to onFrame (the UI's store)
// before it enters the agent's own event pipeline (verification, messages).

import { HttpAgent, type BaseEvent, type RunAgentInput } from "@ag-ui/client";
import { EMPTY, Observable } from "rxjs";
import { runEventsUrl } from "../model/links";
import type { Frame } from "../model/types";
import { SseParser, toFrame } from "./sse";

export interface ResumeTarget {
  runId: string;
  lastEventId: string;
}

/** An HTTP failure of the host, with its JSON error body's message when it has one. */
export class HostHttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = "HostHttpError";
  }
}

export class HostAgent extends HttpAgent {
  /** Receives every frame of every stream, in order. */
  onFrame: ((frame: Frame) => void) | undefined;
  /** The run connectAgent() re-attaches to. */
  resumeTarget: ResumeTarget | undefined;
  private connectAbort: AbortController | undefined;

  constructor(url = "/agui") {
    super({ url, agentId: "default", description: "The Agent Adaptor host's parent agent" });
  }

  override run(input: RunAgentInput): Observable<BaseEvent> {
    return this.stream(() => this.fetch(this.url, this.requestInit(input)));
  }

  protected override connect(_input: RunAgentInput): Observable<BaseEvent> {
    const target = this.resumeTarget;
    if (!target) return EMPTY;
    this.connectAbort = new AbortController();
    const signal = this.connectAbort.signal;
    return this.stream(() =>
      fetch(runEventsUrl(target.runId), {
        method: "GET",
        headers: { Accept: "text/event-stream", "Last-Event-ID": target.lastEventId },
        cache: "no-store",
        signal,
      }),
    );
  }

  override abortRun(): void {
    this.connectAbort?.abort();
    super.abortRun();
  }

  private stream(request: () => Promise<Response>): Observable<BaseEvent> {
    return new Observable<BaseEvent>((subscriber) => {
      let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
      let closed = false;
      const emit = (frame: Frame | undefined) => {
        if (!frame || closed) return;
        this.onFrame?.(frame);
        subscriber.next(frame.event as BaseEvent);
      };
      (async () => {
        const res = await request();
        if (res.status === 204) {
          // The run is complete at the cursor: nothing more to replay.
          subscriber.complete();
          return;
        }
        if (!res.ok) throw new HostHttpError(res.status, await errorMessage(res));
        if (!res.body) throw new Error("the host's response has no body");
        reader = res.body.getReader();
        const decoder = new TextDecoder();
        const parser = new SseParser();
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          for (const m of parser.push(decoder.decode(value, { stream: true }))) emit(toFrame(m));
        }
        for (const m of [...parser.push(decoder.decode()), ...parser.end()]) emit(toFrame(m));
        subscriber.complete();
      })().catch((err: unknown) => {
        if (!closed) subscriber.error(err);
      });
      return () => {
        closed = true;
        reader?.cancel().catch(() => undefined);
      };
    });
  }
}

async function errorMessage(res: Response): Promise<string> {
  const text = await res.text().catch(() => "");
  try {
    const body = JSON.parse(text) as { error?: { message?: string; code?: string } };
    if (body.error?.message) return `${body.error.message} (HTTP ${res.status})`;
  } catch {
    // not JSON
  }
  return text.trim() ? `HTTP ${res.status}: ${text.trim().slice(0, 200)}` : `HTTP ${res.status}`;
}
