import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it, vi } from "vitest";
import { HostAgent } from "../src/agent/HostAgent";
import { parseFrames } from "../src/agent/sse";
import { load, loadResume, save, RESUME_KEY } from "../src/model/persist";
import { reduceAll } from "../src/model/reducer";
import type { Action, Frame } from "../src/model/types";

const here = dirname(fileURLToPath(import.meta.url));
const demo = readFileSync(resolve(here, "fixtures/host_demo.sse"), "utf8");

/** A streamed SSE response, cut into small chunks to exercise the parser. */
function sseResponse(body: string, chunk = 37): Response {
  const bytes = new TextEncoder().encode(body);
  return new Response(
    new ReadableStream<Uint8Array>({
      start(c) {
        for (let i = 0; i < bytes.length; i += chunk) c.enqueue(bytes.slice(i, i + chunk));
        c.close();
      },
    }),
    { status: 200, headers: { "Content-Type": "text/event-stream" } },
  );
}

afterEach(() => vi.unstubAllGlobals());

describe("HostAgent (an @ag-ui/client HttpAgent)", () => {
  it("POSTs the RunAgentInput to /agui and hands every frame, with its id, to onFrame", async () => {
    const agent = new HostAgent("/agui");
    const calls: Array<{ url: string; init: RequestInit }> = [];
    agent.fetch = async (url, init) => {
      calls.push({ url: String(url), init: init ?? {} });
      return sseResponse(demo);
    };
    const frames: Frame[] = [];
    agent.onFrame = (f) => frames.push(f);
    agent.addMessage({ id: "u1", role: "user", content: "hi" });
    await agent.runAgent({ runId: "r-curl-1" });

    expect(calls).toHaveLength(1);
    expect(calls[0]!.url).toBe("/agui");
    expect(calls[0]!.init.method).toBe("POST");
    const body = JSON.parse(String(calls[0]!.init.body)) as { messages: Array<{ content: string }>; runId: string };
    expect(body.messages.at(-1)!.content).toBe("hi");
    expect(frames[0]!.id).toBe("1");
    expect(frames.at(-1)!.event.type).toBe("RUN_FINISHED");
    expect(frames.every((f) => f.id !== undefined)).toBe(true);
    // The agent's own pipeline (verification, messages) accepted the stream.
    const roles = agent.messages.map((m) => m.role);
    expect(roles).toEqual(["user", "assistant", "assistant", "tool", "assistant"]);
  });

  it("re-attaches with GET /agui/runs/{runId}/events and Last-Event-ID", async () => {
    const agent = new HostAgent("/agui");
    const seen: Array<{ url: string; headers: Record<string, string> }> = [];
    vi.stubGlobal("fetch", async (url: string, init: RequestInit) => {
      seen.push({ url, headers: init.headers as Record<string, string> });
      // the host re-opens state with an id-less RUN_STARTED, then continues
      return sseResponse(
        'data: {"type":"RUN_STARTED","threadId":"t1","runId":"r-curl-1"}\n\nid: 41\ndata: {"type":"RUN_FINISHED","threadId":"t1","runId":"r-curl-1"}\n\n',
      );
    });
    const frames: Frame[] = [];
    agent.onFrame = (f) => frames.push(f);
    agent.resumeTarget = { runId: "r-curl-1", lastEventId: "40" };
    await agent.connectAgent({ runId: "r-curl-1" });
    expect(seen).toEqual([
      { url: "/agui/runs/r-curl-1/events", headers: { Accept: "text/event-stream", "Last-Event-ID": "40" } },
    ]);
    expect(frames.map((f) => f.id)).toEqual([undefined, "41"]);
  });

  it("treats 204 (run complete at the cursor) as an empty stream", async () => {
    const agent = new HostAgent("/agui");
    vi.stubGlobal("fetch", async () => new Response(null, { status: 204 }));
    const frames: Frame[] = [];
    agent.onFrame = (f) => frames.push(f);
    agent.resumeTarget = { runId: "r", lastEventId: "9" };
    await agent.connectAgent({ runId: "r" });
    expect(frames).toEqual([]);
  });
});

class MemoryStorage implements Storage {
  private m = new Map<string, string>();
  get length() {
    return this.m.size;
  }
  clear() {
    this.m.clear();
  }
  getItem(k: string) {
    return this.m.get(k) ?? null;
  }
  key(i: number) {
    return [...this.m.keys()][i] ?? null;
  }
  removeItem(k: string) {
    this.m.delete(k);
  }
  setItem(k: string, v: string) {
    this.m.set(k, v);
  }
}

describe("persistence", () => {
  it("stores the transcript with the cursor of the active run, and drops the cursor when it ends", () => {
    const storage = new MemoryStorage();
    const all = parseFrames(demo);
    const mid: Action[] = [{ kind: "user", id: "u1", text: "hi" }, ...all.slice(0, 20).map((frame) => ({ kind: "frame" as const, frame }))];
    const s = reduceAll(mid);
    expect(save(storage, { threadId: "t1", state: s })).toBe(true);
    expect(loadResume(storage)).toEqual({ runId: "r-curl-1", lastEventId: "20" });
    const back = load(storage)!;
    expect(back.threadId).toBe("t1");
    expect(back.state.runs).toEqual(s.runs);
    expect(back.state.streamRunId).toBeUndefined();

    const done = reduceAll(all.slice(20).map((frame) => ({ kind: "frame" as const, frame })), s);
    save(storage, { threadId: "t1", state: done });
    expect(storage.getItem(RESUME_KEY)).toBeNull();
  });

  it("keeps a cursor to replay from when the transcript does not fit", () => {
    const storage = new MemoryStorage();
    const s = reduceAll(parseFrames(demo).slice(0, 10).map((frame) => ({ kind: "frame" as const, frame })));
    const full = Object.assign(Object.create(storage) as Storage, {
      setItem(k: string, v: string) {
        if (k !== RESUME_KEY) throw new DOMException("quota", "QuotaExceededError");
        storage.setItem(k, v);
      },
      removeItem: (k: string) => storage.removeItem(k),
    });
    expect(save(full, { threadId: "t", state: s })).toBe(false);
    expect(loadResume(storage)).toEqual({ runId: "r-curl-1", lastEventId: "0" });
  });
});
