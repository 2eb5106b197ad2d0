import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { parseFrames } from "../src/agent/sse";
import {
  activeRun,
  delegationsOf,
  effectivePhase,
  initialState,
  isUnclaimed,
  reduce,
  reduceAll,
  statusNote,
  chatPhase,
  conciseError,
  firstSentence,
  pendingQuestions,
  toolCardStatus,
} from "../src/model/reducer";
import type { Action, ChatState, Frame, RunView } from "../src/model/types";

const here = dirname(fileURLToPath(import.meta.url));
// The host's own golden stream (pkg/bridges/subagentstream), read in place so
// the UI is tested against what the mux really emits.
const GOLDEN = resolve(here, "../../../pkg/bridges/subagentstream/testdata/happy_path.sse");

function fixture(name: string): Frame[] {
  return parseFrames(readFileSync(resolve(here, "fixtures", name), "utf8"));
}

function frames(fs: Frame[]): Action[] {
  return fs.map((frame) => ({ kind: "frame", frame }));
}

function run(state: ChatState, id: string): RunView {
  const r = state.runs[id];
  if (!r) throw new Error(`no run ${id}`);
  return r;
}

function text(r: RunView): string[] {
  return r.blocks.filter((b) => b.kind === "text").map((b) => r.messages[b.id]?.text ?? "");
}

describe("golden happy path (pkg/bridges/subagentstream/testdata/happy_path.sse)", () => {
  const golden = parseFrames(readFileSync(GOLDEN, "utf8"));
  const state = reduceAll(frames(golden));
  const r = run(state, "run-golden");

  it("builds one run with the parent's text, one delegation tool card and its nested subagent", () => {
    expect(golden).toHaveLength(14);
    expect(state.entries).toEqual([{ kind: "run", runId: "run-golden" }]);
    expect(r.status).toBe("finished");
    expect(r.lastEventId).toBe("14");
    expect(r.blocks.map((b) => b.kind)).toEqual(["tool", "delegation", "text"]);
    expect(text(r)).toEqual(["The research agent found it."]);

    const tool = r.toolCalls["toolu_1"]!;
    expect(tool.isDelegation).toBe(true);
    expect(tool.result?.parsed?.status).toBe("completed");
    expect(toolCardStatus(r, tool)).toBe("completed");

    const ds = delegationsOf(r, "toolu_1");
    expect(ds).toHaveLength(1);
    const d = ds[0]!;
    expect(isUnclaimed(r, d)).toBe(false);
    expect(d).toMatchObject({
      delegationId: "del-1",
      agentKey: "research",
      agentName: "Research Agent",
      protocol: "a2a",
      remoteTaskId: "task-del-1",
      remoteContextId: "ctx-1",
      phase: "completed",
      terminal: true,
    });
    expect(d.messages).toEqual([{ id: "rm-1", text: "Searching official A2A SDK examples...", open: false }]);
    expect(d.artifacts).toEqual([
      {
        id: "art-1",
        name: "a2a-sdk-notes.md",
        mimeType: "text/markdown",
        sizeBytes: 42,
        href: "/agui/runs/run-golden/delegations/del-1/artifacts/art-1",
      },
    ]);
  });

  it("shows the subagent's text before the tool result arrives", () => {
    const before = reduceAll(frames(golden.slice(0, 9))); // up to TOOL_CALL_END
    const rb = run(before, "run-golden");
    expect(rb.toolCalls["toolu_1"]!.result).toBeUndefined();
    expect(delegationsOf(rb, "toolu_1")[0]!.messages[0]!.text).toBe("Searching official A2A SDK examples...");
    expect(activeRun(before)?.runId).toBe("run-golden");
    expect(activeRun(state)).toBeUndefined();
  });

  it("ignores every frame replayed a second time (same ids)", () => {
    const twice = reduceAll(frames([...golden, ...golden]));
    expect(twice.runs).toEqual(state.runs);
    expect(twice.entries).toEqual(state.entries);
  });

  it("merges a resumed stream (id-less re-open frames, overlap) into the same final view", () => {
    // The page saw frames 1..5, then reloaded and resumed after cursor 4 (it
    // persisted a lagging cursor): the host re-opens what was open at 4 with
    // id-less frames, then sends 5.. again.
    const seen = golden.slice(0, 5);
    const reopen: Frame[] = [
      { event: { type: "RUN_STARTED", threadId: "thread-1", runId: "run-golden" } },
      { event: { type: "TOOL_CALL_START", toolCallId: "toolu_1", toolCallName: "delegate_to_agent" } },
      {
        event: {
          type: "CUSTOM",
          name: "subagent.started",
          value: { runId: "run-golden", delegationId: "del-1", parentToolCallId: "toolu_1", agentKey: "research" },
        },
      },
    ];
    const resumed = reduceAll(frames([...seen, ...reopen, ...golden.slice(4)]));
    expect(resumed.runs).toEqual(state.runs);
    const d = delegationsOf(run(resumed, "run-golden"), "toolu_1");
    expect(d).toHaveLength(1);
    expect(d[0]!.messages[0]!.text).toBe("Searching official A2A SDK examples...");
  });

  it("rebuilds the whole view from re-open frames alone (a client with no transcript)", () => {
    const reopen: Frame[] = [
      { event: { type: "RUN_STARTED", threadId: "thread-1", runId: "run-golden" } },
      { event: { type: "TOOL_CALL_START", toolCallId: "toolu_1", toolCallName: "delegate_to_agent" } },
    ];
    const s = reduceAll(frames([...reopen, ...golden.slice(2)]));
    const r2 = run(s, "run-golden");
    expect(r2.status).toBe("finished");
    expect(delegationsOf(r2, "toolu_1")[0]!.phase).toBe("completed");
    expect(text(r2)).toEqual(["The research agent found it."]);
  });
});

describe("unclaimed delegations", () => {
  const all = fixture("unclaimed.sse");

  it("shows a delegation without parentToolCallId under the run, then moves it into the tool card", () => {
    const early = run(reduceAll(frames(all.slice(0, 10))), "run-unclaimed");
    const d0 = early.delegations["del-u"]!;
    expect(d0.parentToolCallId).toBe("");
    expect(isUnclaimed(early, d0)).toBe(true);
    expect(delegationsOf(early, "call_9")).toEqual([]);
    expect(d0.messages[0]!.text).toBe("Looking");

    const r = run(reduceAll(frames(all)), "run-unclaimed");
    const d = r.delegations["del-u"]!;
    expect(d.parentToolCallId).toBe("call_9");
    expect(isUnclaimed(r, d)).toBe(false);
    expect(delegationsOf(r, "call_9").map((x) => x.delegationId)).toEqual(["del-u"]);
    expect(d.messages[0]!.text).toBe("Looking things up...");
    expect(d.phase).toBe("completed");
    expect(r.toolCalls["call_9"]!.name).toBe("mcp__a2a-delegation__delegate_to_agent");
    expect(r.toolCalls["call_9"]!.isDelegation).toBe(true);
    expect(r.toolCalls["call_9"]!.args).toBe('{"agent":"research","objective":"Find it"}');
    expect(r.toolCalls["call_9"]!.result?.parsed?.summary).toBe("Found it.");
  });

  it("claims an unclaimed delegation named by the tool result's delegation_id", () => {
    const noCorrelation = all.filter(
      (f) => !(f.event.type === "CUSTOM" && typeof f.event.value === "object" && (f.event.value as { parentToolCallId?: string }).parentToolCallId),
    );
    const r = run(reduceAll(frames(noCorrelation)), "run-unclaimed");
    expect(r.delegations["del-u"]!.parentToolCallId).toBe("call_9");
  });
});

describe("concurrent delegations", () => {
  const r = run(reduceAll(frames(fixture("concurrent.sse"))), "run-concurrent");

  it("keeps one panel per delegation with its own text, artifacts and terminal state", () => {
    const a = delegationsOf(r, "call_a");
    const b = delegationsOf(r, "call_b");
    expect(a.map((d) => d.delegationId)).toEqual(["del-a"]);
    expect(b.map((d) => d.delegationId)).toEqual(["del-b"]);
    expect(a[0]!.messages.map((m) => m.text)).toEqual(["Alpha one."]);
    expect(a[0]!.status).toBe("completed");
    expect(statusNote(r, a[0]!)).toBeUndefined(); // the badge says it
    expect(a[0]!.artifacts[0]).toMatchObject({
      name: "notes.md",
      mimeType: "text/markdown",
      sizeBytes: 2048,
      href: "/agui/runs/run-concurrent/delegations/del-a/artifacts/art-a",
    });
    expect(r.toolCalls["call_b"]!.isDelegation).toBe(true); // named shortcut
  });

  it("accepts exactly one terminal event per delegation and ignores events after it", () => {
    const b = r.delegations["del-b"]!;
    expect(b.phase).toBe("failed");
    expect(b.messages.map((m) => m.text)).toEqual(["Beta "]);
    expect(b.error).toEqual({
      code: "remote_timeout",
      message: "Remote task did not finish before timeout.",
      retryable: true,
      remoteStatus: "working",
    });
    expect(b.artifacts[0]).toMatchObject({ id: "art-big", error: { code: "artifact_too_large" } });
    expect(b.artifacts[0]!.href).toBeUndefined();
  });

  it("parses structured tool results, failures included", () => {
    expect(toolCardStatus(r, r.toolCalls["call_a"]!)).toBe("completed");
    expect(toolCardStatus(r, r.toolCalls["call_b"]!)).toBe("failed");
    expect(r.toolCalls["call_b"]!.result?.parsed?.error?.code).toBe("remote_timeout");
    expect(r.toolCalls["call_a"]!.result?.parsed?.artifacts?.[0]?.uri).toBe("host://delegations/del-a/artifacts/art-a");
    expect(text(r)).toEqual(["One worked, one timed out."]);
    expect(r.status).toBe("finished");
  });

  it("normalizes A2A task states, and shows a status note only when it says more than the badge", () => {
    const early = run(reduceAll(frames(fixture("concurrent.sse").slice(0, 10))), "run-concurrent");
    const d = early.delegations["del-a"]!;
    expect(d.status).toBe("working");
    expect(d.phase).toBe("working");
    expect(statusNote(early, d)).toBe("reading sources");
    // "working" without text repeats the badge: no note.
    expect(statusNote(early, { ...d, statusText: undefined })).toBeUndefined();
    // A status the badge does not name is shown.
    expect(statusNote(early, { ...d, status: "polling", statusText: undefined })).toBe("polling");
  });
});

describe("input required", () => {
  const all = fixture("input_required.sse");

  it("exposes the question while input is required and clears it when work resumes", () => {
    const asking = reduceAll(frames(all.slice(0, 5)));
    const d = run(asking, "run-input").delegations["del-q"]!;
    expect(d.phase).toBe("input_required");
    expect(d.inputPrompt).toBe("Which SDK version should I compare?");
    // the question is part of the conversation, once
    expect(d.messages).toEqual([expect.objectContaining({ role: "question", text: "Which SDK version should I compare?" })]);
    expect(pendingQuestions(asking)).toEqual([
      { runId: "run-input", delegationId: "del-q", agentName: "Research Agent", question: "Which SDK version should I compare?" },
    ]);
    expect(chatPhase(asking, true, false)).toBe("waiting");
    const resumed = reduceAll(frames(all.slice(0, 6)));
    expect(run(resumed, "run-input").delegations["del-q"]!.phase).toBe("working");
    expect(run(resumed, "run-input").delegations["del-q"]!.inputPrompt).toBeUndefined();
    expect(pendingQuestions(resumed)).toEqual([]);
    expect(chatPhase(resumed, true, false)).toBe("working");
    const done = run(reduceAll(frames(all)), "run-input").delegations["del-q"]!;
    expect(done.phase).toBe("completed");
    expect(done.messages.map((m) => [m.role ?? "agent", m.text])).toEqual([
      ["question", "Which SDK version should I compare?"],
      ["agent", "Comparing v2.4.0."],
    ]);
  });
});

describe("input required, as the host streams it (test/fixtures/host_input_required.sse)", () => {
  // The remote sends its question as a text message AND as the
  // input_required text; the answer "v2.4" was POSTed after frame 20.
  const all = fixture("host_input_required.sse");
  const at = all.findIndex((f) => f.event.type === "CUSTOM" && f.event.name === "subagent.input_required") + 1;
  const asking = reduceAll(frames(all.slice(0, at)));
  const delegationId = Object.keys(run(asking, "r2").delegations)[0]!;
  const answer: Action = { kind: "answer", runId: "r2", delegationId, id: "a1", text: "v2.4" };

  it("shows the question once: the remote's last message becomes the question", () => {
    const d = run(asking, "r2").delegations[delegationId]!;
    expect(d.phase).toBe("input_required");
    expect(d.messages.map((m) => [m.role ?? "agent", m.text])).toEqual([
      ["agent", "Starting research."],
      ["question", "Which release should I look at?"],
    ]);
    expect(statusNote(run(asking, "r2"), d)).toBeUndefined();
  });

  it("adds the user's answer after the question, and keeps it there while the remote goes on", () => {
    const answered = reduce(asking, answer);
    const d = run(answered, "r2").delegations[delegationId]!;
    expect(d.phase).toBe("working");
    expect(d.inputPrompt).toBeUndefined();
    expect(pendingQuestions(answered)).toEqual([]);
    expect(reduce(answered, answer)).toBe(answered); // idempotent
    const done = reduceAll(frames(all.slice(at)), answered);
    const final = run(done, "r2").delegations[delegationId]!;
    expect(final.phase).toBe("completed");
    expect(final.messages.map((m) => [m.role ?? "agent", m.text])).toEqual([
      ["agent", "Starting research."],
      ["question", "Which release should I look at?"],
      ["answer", "v2.4"],
      ["agent", "Thanks, looking at that release now."],
    ]);
    expect(run(done, "r2").status).toBe("finished");
  });

  it("places an answer that arrives after the remote's next message right after the question", () => {
    const later = reduceAll(frames(all.slice(at)), asking);
    const d = run(reduce(later, answer), "r2").delegations[delegationId]!;
    expect(d.messages.map((m) => m.role ?? "agent")).toEqual(["agent", "question", "answer", "agent"]);
    expect(d.phase).toBe("completed"); // the answer does not reopen a finished delegation
  });
});

describe("errors", () => {
  it("makes one short line of a failure and keeps the rest as detail", () => {
    expect(conciseError({ code: "agent_unavailable", message: 'Agent "research" could not be reached; the host log has the details.', retryable: true })).toEqual({
      headline: 'Agent "research" could not be reached; the host log has the details.',
      detail: "code: agent_unavailable\nretryable: yes",
    });
    const long = conciseError({
      code: "remote_failed",
      message: "The remote task failed. dial tcp 127.0.0.1:9001: connect: connection refused\nat a2a.Client",
    });
    expect(long.headline).toBe("The remote task failed.");
    expect(long.detail).toContain("dial tcp 127.0.0.1:9001");
    expect(conciseError({ code: "remote_timeout" }).headline).toBe("remote timeout.");
    expect(conciseError(undefined, "The run failed.")).toEqual({ headline: "The run failed." });
    expect(firstSentence("x".repeat(300))).toHaveLength(160);
  });

  it("shows a failed delegation's error in its panel only (the tool card does not repeat it)", () => {
    const r = run(reduceAll(frames(fixture("concurrent.sse"))), "run-concurrent");
    const b = r.delegations["del-b"]!;
    expect(b.phase).toBe("failed");
    expect(b.error?.code).toBe("remote_timeout");
    expect(statusNote(r, b)).toBeUndefined();
  });
});

describe("new chat", () => {
  it("forgets the whole conversation", () => {
    const s = reduceAll([{ kind: "user", id: "u1", text: "hi" }, ...frames(fixture("input_required.sse"))]);
    expect(reduce(s, { kind: "reset" })).toEqual(initialState);
  });
});

describe("cancellation and interrupted streams", () => {
  it("marks a cancelled run and its delegation", () => {
    const r = run(reduceAll(frames(fixture("cancelled.sse"))), "run-cancel");
    expect(r.status).toBe("cancelled");
    expect(r.error?.code).toBe("cancelled");
    expect(r.delegations["del-c"]!.phase).toBe("cancelled");
    expect(toolCardStatus(r, r.toolCalls["call_c"]!)).toBe("cancelled");
  });

  it("shows open delegations of a cancelled run as cancelled even without their terminal event", () => {
    const fs = fixture("cancelled.sse").filter((f) => f.event.name !== "subagent.cancelled");
    const r = run(reduceAll(frames(fs)), "run-cancel");
    const d = r.delegations["del-c"]!;
    expect(d.terminal).toBe(false);
    expect(effectivePhase(r, d)).toBe("cancelled");
  });

  it("shows a lost connection as its own state, not as a failure, once", () => {
    const fs = fixture("cancelled.sse").slice(0, 4);
    const before = reduceAll(frames(fs));
    const s = reduce(before, { kind: "stream-ended", reason: "Lost the connection to the host.", detail: "TypeError: network error" });
    const r = run(s, "run-cancel");
    expect(r.status).toBe("interrupted");
    expect(r.connection).toEqual({ reason: "Lost the connection to the host.", detail: "TypeError: network error" });
    // no notice block repeating it
    expect(r.blocks.length).toBe(run(before, "run-cancel").blocks.length);
    const d = r.delegations["del-c"]!;
    expect(effectivePhase(r, d)).toBe("disconnected");
    expect(statusNote(r, d)).toBeUndefined(); // the run's footer says it, once
    const t = Object.values(r.toolCalls)[0]!;
    expect(toolCardStatus(r, t)).toBe("disconnected");
    expect(chatPhase(s, false, false)).toBe("offline");
    expect(chatPhase(s, true, true)).toBe("reconnecting");
    // a second report changes nothing
    expect(reduce(s, { kind: "stream-ended", runId: "run-cancel", reason: "again" })).toBe(s);

    // Reconnect: the run streams again and its frames apply.
    const again = reduce(s, { kind: "reconnect", runId: "run-cancel" });
    expect(run(again, "run-cancel").status).toBe("running");
    expect(run(again, "run-cancel").connection).toBeUndefined();
    expect(chatPhase(again, true, false)).toBe("working");
    const done = reduceAll(frames(fixture("cancelled.sse").slice(4)), again);
    expect(run(done, "run-cancel").status).toBe("cancelled");

    // Only the newest run can be reconnected.
    const later = reduceAll(frames(parseFrames(readFileSync(GOLDEN, "utf8"))), s);
    expect(reduce(later, { kind: "reconnect", runId: "run-cancel" })).toBe(later);

    // A run the host no longer knows cannot be reconnected.
    const gone = reduce(before, { kind: "stream-ended", reason: "The host no longer knows this run.", gone: true });
    expect(run(gone, "run-cancel").connection?.gone).toBe(true);
    expect(reduce(gone, { kind: "reconnect", runId: "run-cancel" })).toBe(gone);
    // The host answered: it is there, ready for a message (not "offline").
    expect(chatPhase(gone, false, false)).toBe("idle");
  });
});

describe("transcript", () => {
  it("keeps user messages and several runs in order, and reports replay gaps", () => {
    const golden = parseFrames(readFileSync(GOLDEN, "utf8"));
    const actions: Action[] = [
      { kind: "user", id: "u1", text: "hello" },
      ...frames(fixture("input_required.sse")),
      { kind: "user", id: "u2", text: "again" },
      ...frames(golden.slice(0, 1)),
      { kind: "frame", frame: { event: { type: "CUSTOM", name: "stream.replay_gap", value: { from: 2, to: 7 } } } },
      ...frames(golden.slice(7)),
    ];
    const s = reduceAll(actions);
    expect(s.entries.map((e) => (e.kind === "run" ? e.runId : e.kind))).toEqual(["user", "run-input", "user", "run-golden"]);
    const r = run(s, "run-golden");
    expect(r.blocks.some((b) => b.kind === "notice" && b.text.includes("events 2–7"))).toBe(true);
    expect(r.status).toBe("finished");
    // a duplicated user action (persisted log replayed) is not shown twice
    expect(reduce(s, { kind: "user", id: "u1", text: "hello" })).toBe(s);
  });

  it("never mutates the state it is given", () => {
    const fs = fixture("concurrent.sse");
    let s = initialState;
    for (const f of fs) {
      const frozen = JSON.stringify(s);
      const next = reduce(s, { kind: "frame", frame: f });
      expect(JSON.stringify(s)).toBe(frozen);
      s = next;
    }
  });
});

describe("a stream recorded from `agentadaptor serve` (embedded demo)", () => {
  const all = fixture("host_demo.sse");
  const s = reduceAll(frames(all));
  const r = run(s, "r-curl-1");

  it("renders parent text, the delegation card with its nested subagent, and the parent's final text", () => {
    expect(r.status).toBe("finished");
    const tools = Object.values(r.toolCalls);
    expect(tools).toHaveLength(1);
    const tool = tools[0]!;
    expect(tool.name).toBe("delegate_to_agent");
    expect(toolCardStatus(r, tool)).toBe("completed");
    const ds = delegationsOf(r, tool.id);
    expect(ds).toHaveLength(1);
    const d = ds[0]!;
    expect(d.agentName).toBe("Research Agent");
    expect(d.phase).toBe("completed");
    expect(d.messages).toHaveLength(2);
    expect(d.messages[0]!.text).toMatch(/^Searching official A2A SDK examples/);
    expect(d.artifacts[0]!.name).toBe("a2a-sdk-notes.md");
    expect(d.artifacts[0]!.href).toMatch(/^\/agui\/runs\/r-curl-1\/delegations\/del-[0-9a-f]+\/artifacts\/[0-9a-f-]+$/);
    expect(tool.result?.parsed?.summary).toMatch(/SendStreamingMessage/);
    const texts = text(r);
    expect(texts).toHaveLength(2);
    expect(texts[1]).toMatch(/^The research agent finished \(completed\)/);
  });

  it("has the subagent's text before the tool result in stream order", () => {
    const resultAt = all.findIndex((f) => f.event.type === "TOOL_CALL_RESULT");
    const firstDelta = all.findIndex((f) => f.event.name === "subagent.text.delta");
    expect(firstDelta).toBeGreaterThan(0);
    expect(firstDelta).toBeLessThan(resultAt);
    const before = run(reduceAll(frames(all.slice(0, resultAt))), "r-curl-1");
    const d = Object.values(before.delegations)[0]!;
    expect(d.messages[0]!.text.length).toBeGreaterThan(0);
    expect(Object.values(before.toolCalls)[0]!.result).toBeUndefined();
  });

  it("repairs a message whose deltas were dropped from the full text sent with text.end", () => {
    const lossy = all.filter((f, i) => !(f.event.name === "subagent.text.delta" && i % 2 === 0));
    const d = Object.values(run(reduceAll(frames(lossy)), "r-curl-1").delegations)[0]!;
    expect(d.messages.map((m) => m.text)).toEqual(
      Object.values(r.delegations)[0]!.messages.map((m) => m.text),
    );
  });

  it("survives a resume from every cursor without losing or doubling anything", () => {
    for (let cut = 1; cut < all.length; cut++) {
      const seen = all.slice(0, cut);
      const cursor = Number(seen.at(-1)!.id);
      const replay = all.filter((f) => Number(f.id) > cursor - 2); // overlap of one frame
      const resumed = reduceAll(frames([...seen, { event: { type: "RUN_STARTED", runId: "r-curl-1", threadId: "t1" } }, ...replay]));
      expect(resumed.runs).toEqual(s.runs);
    }
  });
});

describe("tool card status", () => {
  it("shows a call whose unstructured result came from a cancelled run as cancelled", () => {
    const fs = fixture("cancelled.sse");
    const withResult: Frame[] = [
      ...fs.slice(0, 6),
      { id: "6a", event: { type: "TOOL_CALL_RESULT", toolCallId: "call_c", role: "tool", content: "tool call cancelled" } },
      { id: "7", event: fs[6]!.event },
    ];
    const r = run(reduceAll(frames(withResult)), "run-cancel");
    expect(r.toolCalls["call_c"]!.result?.raw).toBe("tool call cancelled");
    expect(toolCardStatus(r, r.toolCalls["call_c"]!)).toBe("cancelled");
  });
});
