import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it, vi } from "vitest";
import { HostAgent } from "../src/agent/HostAgent";
import { load, loadResume } from "../src/model/persist";
import { chatPhase } from "../src/model/reducer";
import type { RunView } from "../src/model/types";
import { ChatStore } from "../src/state/store";

const here = dirname(fileURLToPath(import.meta.url));
const demo = readFileSync(resolve(here, "fixtures/host_demo.sse"), "utf8");

/** A streamed SSE response, cut into small chunks to exercise the parser. */
function sseResponse(body: string, chunk = 61): Response {
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

/** The recorded demo stream as the host would send it for this request's runId, first n frames only if n is given. */
function demoFor(runId: string, n?: number): string {
  let frames = demo.replaceAll("r-curl-1", runId).split("\n\n");
  if (n !== undefined) frames = frames.filter((f) => f.includes("id: ")).slice(0, n);
  return frames.join("\n\n") + "\n\n";
}

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

interface Posted {
  threadId: string;
  runId: string;
  messages: Array<{ role: string; content?: string }>;
}

/** A store whose agent POSTs to a fake host; CopilotKit's core is reduced to what the store calls. */
function setup(answerPost: (runId: string) => string = (r) => demoFor(r)) {
  const storage = new MemoryStorage();
  const agent = new HostAgent("/agui");
  const posted: Posted[] = [];
  agent.fetch = async (_url, init) => {
    const body = JSON.parse(String(init?.body)) as Posted;
    posted.push(body);
    return sseResponse(answerPost(body.runId));
  };
  const store = new ChatStore(agent, { runAgent: ({ agent: a }) => a.runAgent() }, storage, { reattachDelayMs: 1 });
  return { storage, agent, store, posted };
}

function lastRun(store: ChatStore): RunView {
  const s = store.getState();
  const e = [...s.entries].reverse().find((x) => x.kind === "run");
  if (!e || e.kind !== "run") throw new Error("no run");
  return s.runs[e.runId]!;
}

afterEach(() => {
  vi.unstubAllGlobals();
  vi.restoreAllMocks();
});

/** @ag-ui/client logs "Agent execution failed" with console.error: expected here. */
function quietAgentErrors() {
  vi.spyOn(console, "error").mockImplementation(() => undefined);
}

describe("ChatStore", () => {
  it("sends a second message in the same thread, with the conversation so far", async () => {
    const { store, posted } = setup();
    await store.send("How do penguins sleep?");
    await store.send("And whales?");
    expect(posted).toHaveLength(2);
    expect(posted[1]!.threadId).toBe(posted[0]!.threadId);
    expect(posted[1]!.messages.filter((m) => m.role === "user").map((m) => m.content)).toEqual(["How do penguins sleep?", "And whales?"]);
    const s = store.getState();
    expect(s.entries.map((e) => e.kind)).toEqual(["user", "run", "user", "run"]);
    expect(Object.values(s.runs).map((r) => r.status)).toEqual(["finished", "finished"]);
  });

  it("New chat starts a new thread without history, and a page hide does not bring the old one back", async () => {
    const { store, storage, posted } = setup();
    await store.send("How do penguins sleep?");
    const oldThread = store.threadId;
    expect(load(storage)?.state.entries).toHaveLength(2);

    store.reset();
    expect(store.threadId).not.toBe(oldThread);
    expect(store.getState().entries).toEqual([]);
    store.leave(); // pagehide
    const saved = load(storage);
    expect(saved?.threadId).toBe(store.threadId);
    expect(saved?.state.entries).toEqual([]);

    await store.send("And whales?");
    const last = posted.at(-1)!;
    expect(last.threadId).toBe(store.threadId);
    expect(last.messages).toEqual([expect.objectContaining({ role: "user", content: "And whales?" })]);
    expect(store.getState().entries.map((e) => e.kind)).toEqual(["user", "run"]);
  });

  it("Sign out revokes the session at the host and forgets the conversation, even on pagehide", async () => {
    const { store, storage } = setup();
    await store.send("hi");
    const calls: Array<{ url: string; method?: string }> = [];
    vi.stubGlobal("fetch", async (url: string, init: RequestInit) => {
      calls.push({ url, method: init.method });
      return calls.length === 1 ? new Response(null, { status: 403 }) : new Response(null, { status: 204 });
    });
    expect(await store.signOut()).toBe("The host answered HTTP 403.");
    expect(load(storage)?.state.entries).toHaveLength(2); // refused: nothing forgotten
    expect(await store.signOut()).toBeUndefined();
    expect(calls).toEqual([
      { url: "/logout", method: "POST" },
      { url: "/logout", method: "POST" },
    ]);
    store.leave(); // pagehide while the browser goes to the sign-in page
    expect(load(storage)).toBeUndefined();
    expect(loadResume(storage)).toBeUndefined();
  });

  it("a reloaded page (a new store on the same storage) keeps the new thread", async () => {
    const { store, storage } = setup();
    await store.send("hi");
    store.reset();
    const again = new ChatStore(new HostAgent("/agui"), { runAgent: async () => undefined }, storage);
    expect(again.threadId).toBe(store.threadId);
    expect(again.getState().entries).toEqual([]);
    expect(again.agent.messages).toEqual([]);
  });

  it("reports a host that cannot be reached once, as a request that failed", async () => {
    quietAgentErrors();
    const { store, agent } = setup();
    agent.fetch = async () => {
      throw new TypeError("Failed to fetch");
    };
    await store.send("hi");
    const errors = store.getState().entries.filter((e) => e.kind === "error");
    expect(errors).toEqual([{ kind: "error", id: expect.any(String), message: "Could not reach the host.", detail: "Failed to fetch" }]);
    expect(store.isBusy()).toBe(false);
  });

  it("shows a stream cut for good as a lost connection (not a failure), once, and can reconnect", async () => {
    quietAgentErrors();
    const { store, storage } = setup((r) => demoFor(r, 20));
    let gets = 0;
    vi.stubGlobal("fetch", async () => {
      gets++;
      throw new TypeError("network error");
    });
    await store.send("hi");
    const r = lastRun(store);
    expect(gets).toBe(3); // re-attached three times
    expect(r.status).toBe("interrupted");
    expect(r.connection).toEqual({ reason: "Lost the connection to the host.", detail: "network error" });
    expect(store.getState().entries.filter((e) => e.kind === "error")).toEqual([]);
    expect(chatPhase(store.getState(), store.isBusy(), store.isReconnecting())).toBe("offline");
    expect(loadResume(storage)).toBeUndefined();

    // The host is back: Reconnect replays after the cursor and the run ends.
    const rest = demoFor(r.runId)
      .split("\n\n")
      .filter((f) => {
        const m = /^id: (\d+)/m.exec(f);
        return m && Number(m[1]) > 20;
      })
      .join("\n\n");
    const seen: string[] = [];
    vi.stubGlobal("fetch", async (_url: string, init: RequestInit) => {
      seen.push((init.headers as Record<string, string>)["Last-Event-ID"]!);
      return sseResponse(`data: {"type":"RUN_STARTED","threadId":"t1","runId":"${r.runId}"}\n\n${rest}\n\n`);
    });
    await store.reconnect(r.runId);
    expect(seen).toEqual(["20"]);
    expect(lastRun(store).status).toBe("finished");
    expect(lastRun(store).connection).toBeUndefined();
  });

  it("adds an accepted answer to the subagent's conversation; a refused one is an error in the form", async () => {
    const { store } = setup();
    await store.send("hi");
    const run = lastRun(store);
    const d = Object.values(run.delegations)[0]!;
    const calls: Array<{ url: string; body: string }> = [];
    vi.stubGlobal("fetch", async (url: string, init: RequestInit) => {
      calls.push({ url, body: String(init.body) });
      return calls.length === 1
        ? new Response(JSON.stringify({ error: { code: "not_waiting", message: "The delegation is not waiting for input." } }), { status: 409 })
        : new Response(JSON.stringify({ status: "accepted" }), { status: 202 });
    });
    expect(await store.answer(run.runId, d.delegationId, "  v2.4 ")).toBe("The delegation is not waiting for input.");
    expect(lastRun(store).delegations[d.delegationId]!.messages.some((m) => m.role === "answer")).toBe(false);
    expect(await store.answer(run.runId, d.delegationId, "v2.4")).toBeUndefined();
    expect(calls[1]).toEqual({ url: `/agui/runs/${run.runId}/delegations/${d.delegationId}/input`, body: '{"text":"v2.4"}' });
    expect(lastRun(store).delegations[d.delegationId]!.messages.at(-1)).toMatchObject({ role: "answer", text: "v2.4" });
  });
});
