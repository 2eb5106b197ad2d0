import { describe, expect, it } from "vitest";
import { SseParser, parseFrames, parseSse } from "../src/agent/sse";
import { artifactHref, isDelegationTool, parseToolResult } from "../src/model/links";

describe("SseParser", () => {
  it("keeps each frame's own id and leaves id-less frames without one", () => {
    const msgs = parseSse('id: 7\ndata: {"type":"A"}\n\ndata: {"type":"B"}\n\n: keep-alive\n\nid: 8\ndata: {"type":"C"}\n\n');
    expect(msgs).toEqual([
      { id: "7", data: '{"type":"A"}' },
      { data: '{"type":"B"}' },
      { id: "8", data: '{"type":"C"}' },
    ]);
  });

  it("handles CRLF, CR, multi-line data, event names and chunks split anywhere", () => {
    const body = 'id: 1\r\nevent: x\r\ndata: {"type":\r\ndata: "A"}\r\n\r\nid: 2\rdata: {"type":"B"}\r\r';
    for (let cut = 0; cut < body.length; cut++) {
      const p = new SseParser();
      const got = [...p.push(body.slice(0, cut)), ...p.push(body.slice(cut)), ...p.end()];
      expect(got).toEqual([
        { id: "1", event: "x", data: '{"type":\n"A"}' },
        { id: "2", data: '{"type":"B"}' },
      ]);
    }
  });

  it("dispatches a last frame that lacks its blank line", () => {
    expect(parseSse('id: 3\ndata: {"type":"Z"}')).toEqual([{ id: "3", data: '{"type":"Z"}' }]);
  });

  it("turns messages into frames and skips data that is not an event", () => {
    expect(parseFrames('id: 1\ndata: not json\n\nid: 2\ndata: [1]\n\nid: 3\ndata: {"type":"RUN_STARTED"}\n\n')).toEqual([
      { id: "3", event: { type: "RUN_STARTED" } },
    ]);
  });
});

describe("links", () => {
  it("recognizes delegation tools by name", () => {
    for (const n of [
      "delegate_to_agent",
      "delegate_to_research_agent",
      "mcp__a2a-delegation__delegate_to_agent",
      "mcp__a2a_delegation__delegate_to_agent",
    ]) {
      expect(isDelegationTool(n)).toBe(true);
    }
    for (const n of ["search", "my_delegate_to_agent", "delegate_to_", ""]) expect(isDelegationTool(n)).toBe(false);
  });

  it("derives same-origin artifact URLs from host:// references or ids", () => {
    expect(artifactHref("r 1", "d", "a", "host://delegations/del-1/artifacts/art%2F1")).toBe(
      "/agui/runs/r%201/delegations/del-1/artifacts/art%2F1",
    );
    expect(artifactHref("r", "d", "a", undefined)).toBe("/agui/runs/r/delegations/d/artifacts/a");
    expect(artifactHref("r", "d", "a", "/agui/runs/x/delegations/y/artifacts/z")).toBe("/agui/runs/x/delegations/y/artifacts/z");
    expect(artifactHref("r", undefined, undefined, "https://elsewhere.example/a")).toBeUndefined();
  });

  it("parses tool results that are JSON objects and keeps anything else raw", () => {
    expect(parseToolResult('{"status":"completed","summary":"ok"}').parsed).toEqual({ status: "completed", summary: "ok" });
    expect(parseToolResult("plain text")).toEqual({ raw: "plain text" });
    expect(parseToolResult("[1,2]")).toEqual({ raw: "[1,2]" });
  });
});
